"""What `python -m bench.decisions` compares, pod by pod, between the reference scheduler and
aiosched: the node chosen (a different node of equal total score is a tie, not a difference),
the PodScheduled=False message, and preemption (the nominated node, the victims)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

AGREE, TIE, DIFFER = "agree", "tie", "differ"


@dataclass(slots=True)
class PodOutcome:
    """How one scheduler decided one pod, once the cluster settled after its creation."""

    pod: str
    node: str | None = None  # where it is bound once settled (None: pending, or gone)
    message: str | None = None  # the PodScheduled=False condition's message, when it had one
    nominated: str | None = None  # status.nominatedNodeName seen with that condition
    victims: list[str] = field(default_factory=list)  # pods deleted while it was decided
    others_bound: dict[str, str] = field(default_factory=dict)  # pending pods bound meanwhile
    # aiosched's total score per node for the attempt that bound it (explain's topNodes)
    totals: dict[str, float] | None = None
    pinned: bool = False  # a tie: created bound to the reference's node (totals say why)
    timed_out: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Row:
    pod: str
    verdict: str  # agree, tie or differ
    fields: dict[str, tuple[Any, Any]]  # field -> (reference, aiosched), for the ones not agreeing
    after_divergence: bool  # an earlier pod differed: the two clusters no longer match

    def to_json(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "verdict": self.verdict,
            "afterDivergence": self.after_divergence,
            "fields": {
                name: {"reference": r, "aiosched": o} for name, (r, o) in self.fields.items()
            },
        }


def is_tie(totals: Mapping[str, float], node: str) -> bool:
    """Whether, by these total scores of the best nodes (explain's or what-if's topNodes),
    `node` is one of several nodes of the best score. A node not listed is one only when every
    listed node has the same score (it could be one more of them)."""
    if len(totals) < 2:
        return False
    best = max(totals.values())
    if node in totals:
        return totals[node] == best and sum(1 for t in totals.values() if t == best) > 1
    return all(total == best for total in totals.values())


def is_score_tie(ours: PodOutcome, reference_node: str) -> bool:
    """Whether aiosched scored the reference's node as high as the node it chose."""
    totals = ours.totals
    if not totals or ours.node is None or ours.node not in totals:
        return False
    return totals[ours.node] == max(totals.values()) and is_tie(totals, reference_node)


def _victim_shape(victims: Sequence[str], priorities: Mapping[str, int]) -> list[int]:
    return sorted(priorities.get(name, 0) for name in victims)


def compare_pod(
    reference: PodOutcome, ours: PodOutcome, priorities: Mapping[str, int]
) -> tuple[str, dict[str, tuple[Any, Any]]]:
    """The verdict for one pod and the fields that were not equal."""
    fields: dict[str, tuple[Any, Any]] = {}
    verdict = AGREE
    # another node whose victims weigh the same (pickOneNodeForPreemption's criteria on
    # priorities and counts) comes of the reference's random start offset: a tie
    equivalent_preemption = (
        reference.nominated is not None
        and ours.nominated is not None
        and reference.nominated != ours.nominated
        and _victim_shape(reference.victims, priorities) == _victim_shape(ours.victims, priorities)
    )
    if ours.pinned:
        totals = ours.totals or {}
        best = max(totals.values(), default=0.0)
        fields["node"] = (reference.node, sorted(n for n, t in totals.items() if t == best))
        verdict = TIE
    elif reference.node != ours.node:
        tie = (
            reference.node is not None
            and ours.node is not None
            and (
                is_score_tie(ours, reference.node)
                or (equivalent_preemption and ours.node == ours.nominated)
            )
        )
        fields["node"] = (reference.node, ours.node)
        verdict = TIE if tie else DIFFER
    # The same victims, the preemptor bound on the same node, but one side bound it before the
    # harness's poll saw its PodScheduled=False condition: a state one side passed through too
    # fast to be seen, not a different decision.
    unseen = (
        reference.node is not None
        and reference.node == ours.node
        and bool(reference.victims)
        and sorted(reference.victims) == sorted(ours.victims)
        and (reference.message is None) != (ours.message is None)
    )
    if reference.message != ours.message and not unseen:
        fields["message"] = (reference.message, ours.message)
        verdict = DIFFER
    preemption_differs = reference.nominated != ours.nominated or sorted(
        reference.victims
    ) != sorted(ours.victims)
    if preemption_differs and not unseen:
        fields["preemption"] = (
            {"nominated": reference.nominated, "victims": sorted(reference.victims)},
            {"nominated": ours.nominated, "victims": sorted(ours.victims)},
        )
        if not equivalent_preemption:
            verdict = DIFFER
        elif verdict == AGREE:
            verdict = TIE
    if reference.others_bound != ours.others_bound:
        fields["othersBound"] = (reference.others_bound, ours.others_bound)
        verdict = DIFFER
    if reference.timed_out != ours.timed_out:
        fields["timedOut"] = (reference.timed_out, ours.timed_out)
        verdict = DIFFER
    return verdict, fields


def compare(
    reference: Sequence[PodOutcome], ours: Sequence[PodOutcome], priorities: Mapping[str, int]
) -> list[Row]:
    """One row per pod of the reference run, in creation order."""
    by_pod = {outcome.pod: outcome for outcome in ours}
    rows: list[Row] = []
    diverged = False
    for ref in reference:
        mine = by_pod.get(ref.pod)
        if mine is None:
            rows.append(Row(ref.pod, DIFFER, {"missing": (ref.pod, None)}, diverged))
            diverged = True
            continue
        verdict, fields = compare_pod(ref, mine, priorities)
        rows.append(Row(ref.pod, verdict, fields, diverged))
        # a tie pinned onto the reference's node keeps the clusters equal; anything else not
        if verdict == DIFFER or (verdict == TIE and not mine.pinned):
            diverged = True
    return rows


def summary(rows: Sequence[Row]) -> dict[str, int]:
    counts = {AGREE: 0, TIE: 0, DIFFER: 0}
    for row in rows:
        counts[row.verdict] += 1
    counts["pods"] = len(rows)
    counts["differBeforeDivergence"] = sum(
        1 for row in rows if row.verdict == DIFFER and not row.after_divergence
    )
    return counts


def table(seed: int, rows: Sequence[Row]) -> str:
    """The rows that did not agree, as text; the counts last."""
    lines = [f"seed {seed}"]
    for row in rows:
        if row.verdict == AGREE:
            continue
        mark = " (after divergence)" if row.after_divergence else ""
        lines.append(f"  {row.pod:<10} {row.verdict:<7}{mark}")
        for name, (ref, mine) in row.fields.items():
            lines.append(f"      {name}: kube-scheduler={ref!r}")
            lines.append(f"      {' ' * len(name)}  aiosched      ={mine!r}")
    counts = summary(rows)
    lines.append(
        f"  {counts['pods']} pods: {counts[AGREE]} agree, {counts[TIE]} ties, "
        f"{counts[DIFFER]} differ ({counts['differBeforeDivergence']} before any divergence)"
    )
    return "\n".join(lines)
