"""Scheduling attempts kept for ``aiosched explain``: pending pods' last attempts, and recent
successes.

Two bounded parts:

- Per pod (``max_pods``, least recently recorded evicted first): failed attempts, and the success
  that follows a failure. The scheduler hands over what it already computed (per-node filter
  verdicts, per-plugin scores); :meth:`ExplainStore.record` compresses it at once (nodes grouped
  by identical verdict, a few names per group, only the top-K scored nodes).
- Per profile, the last ``recent_per_profile`` first-attempt successes, in a ring: recording one
  keeps references to what the attempt computed (:class:`LazyDetails`) and nothing is compressed
  until someone asks (:meth:`ExplainStore.get`). That is what makes explain work for a pod bound at
  its first attempt without making every successful cycle pay for an explanation nobody reads.

:func:`build_explanation` is the one builder of the JSON both explain and what-if answer with.
With ``max_pods=0`` and ``recent_per_profile=0`` nothing is recorded.
"""

from __future__ import annotations

import heapq
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

#: node name → (plugin that rejected it, reason it gave)
FilterVerdicts = Mapping[str, tuple[str, str]]
#: node name → what the rejecting plugin adds to its verdict (JSON-ready mappings of strings;
#: DynamicResources: {"claim", "request", "reason"} per claim request it could not satisfy)
FilterDetails = Mapping[str, Sequence[Mapping[str, str]]]
#: node name → plugin name → weighted score
NodeScores = Mapping[str, Mapping[str, int]]
#: What a lazily kept attempt yields on request: filter verdicts, top scores, their totals.
ResolvedDetails = tuple[FilterVerdicts | None, NodeScores | None, Mapping[str, int] | None]


class LazyDetails(Protocol):
    """References to what an attempt computed, turned into verdicts and top scores on request."""

    def resolve(self, top_k: int) -> ResolvedDetails: ...


@dataclass(frozen=True, slots=True)
class DetailGroup:
    """Nodes of one verdict group for which the plugin said the same more (``details``)."""

    details: tuple[Mapping[str, str], ...]
    count: int
    nodes: tuple[str, ...]  # at most max_names_per_group, sorted

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "nodes": list(self.nodes),
            "details": [dict(detail) for detail in self.details],
        }


@dataclass(frozen=True, slots=True)
class VerdictGroup:
    plugin: str
    reason: str
    count: int
    nodes: tuple[str, ...]  # at most max_names_per_group, sorted
    node_details: tuple[DetailGroup, ...] = ()  # largest first; only nodes with details

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "plugin": self.plugin,
            "reason": self.reason,
            "count": self.count,
            "nodes": list(self.nodes),
        }
        if self.node_details:
            data["nodeDetails"] = [group.to_dict() for group in self.node_details]
        return data


@dataclass(frozen=True, slots=True)
class ScoredNode:
    node: str
    total: int
    plugins: Mapping[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "total": self.total, "plugins": dict(self.plugins)}


@dataclass(frozen=True, slots=True)
class Explanation:
    uid: str
    namespace: str
    name: str
    profile: str
    attempt: int
    timestamp: float
    result: str  # scheduled / unschedulable / error
    message: str
    node: str | None
    evaluated_nodes: int | None
    feasible_nodes: int | None
    rejected_nodes: int
    verdicts: tuple[VerdictGroup, ...]
    top_nodes: tuple[ScoredNode, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": {"namespace": self.namespace, "name": self.name, "uid": self.uid},
            "profile": self.profile,
            "attempt": self.attempt,
            "timestamp": self.timestamp,
            "result": self.result,
            "message": self.message,
            "node": self.node,
            "evaluatedNodes": self.evaluated_nodes,
            "feasibleNodes": self.feasible_nodes,
            "rejectedNodes": self.rejected_nodes,
            "filterVerdicts": [group.to_dict() for group in self.verdicts],
            "topNodes": [scored.to_dict() for scored in self.top_nodes],
        }


def group_verdicts(
    verdicts: FilterVerdicts, max_names: int, details: FilterDetails | None = None
) -> tuple[VerdictGroup, ...]:
    """Nodes grouped by identical (plugin, reason), largest group first; within a group, the
    nodes with ``details`` grouped again by identical details."""
    groups: dict[tuple[str, str], list[str]] = {}
    for node, verdict in verdicts.items():
        groups.setdefault(verdict, []).append(node)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return tuple(
        VerdictGroup(
            plugin,
            reason,
            len(nodes),
            tuple(heapq.nsmallest(max_names, nodes)),
            _group_details(nodes, details, max_names) if details else (),
        )
        for (plugin, reason), nodes in ordered
    )


def _group_details(
    nodes: Sequence[str], details: FilterDetails, max_names: int
) -> tuple[DetailGroup, ...]:
    groups: dict[tuple[tuple[tuple[str, str], ...], ...], list[str]] = {}
    for node in nodes:
        entries = details.get(node)
        if entries:
            key = tuple(tuple(entry.items()) for entry in entries)
            groups.setdefault(key, []).append(node)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return tuple(
        DetailGroup(
            tuple(dict(entry) for entry in key),
            len(names),
            tuple(heapq.nsmallest(max_names, names)),
        )
        for key, names in ordered
    )


def top_nodes(
    scores: NodeScores, k: int, totals: Mapping[str, int] | None = None
) -> tuple[ScoredNode, ...]:
    """The ``k`` best nodes by total score (ties by name), with their per-plugin scores."""

    def total(node: str) -> int:
        if totals is not None and node in totals:
            return totals[node]
        return sum(scores[node].values())

    best = heapq.nsmallest(k, scores, key=lambda node: (-total(node), node))
    return tuple(ScoredNode(node, total(node), dict(scores[node])) for node in best)


def build_explanation(
    uid: str,
    namespace: str,
    name: str,
    *,
    profile: str,
    attempt: int,
    timestamp: float,
    result: str,
    message: str = "",
    node: str | None = None,
    filter_verdicts: FilterVerdicts | None = None,
    scores: NodeScores | None = None,
    totals: Mapping[str, int] | None = None,
    evaluated_nodes: int | None = None,
    feasible_nodes: int | None = None,
    max_names_per_group: int = 10,
    top_k: int = 5,
    filter_details: FilterDetails | None = None,
) -> Explanation:
    """The compressed explanation of one attempt (explain's and what-if's JSON, via to_dict)."""
    verdicts = filter_verdicts or {}
    return Explanation(
        uid=uid,
        namespace=namespace,
        name=name,
        profile=profile,
        attempt=attempt,
        timestamp=timestamp,
        result=result,
        message=message,
        node=node,
        evaluated_nodes=evaluated_nodes,
        feasible_nodes=feasible_nodes,
        rejected_nodes=len(verdicts),
        verdicts=group_verdicts(verdicts, max_names_per_group, filter_details),
        top_nodes=top_nodes(scores, top_k, totals) if scores else (),
    )


class _RecentAttempt:
    """A successful attempt kept by reference in a profile's ring, explained on request."""

    __slots__ = (
        "attempt",
        "details",
        "evaluated_nodes",
        "feasible_nodes",
        "name",
        "namespace",
        "node",
        "profile",
        "timestamp",
        "uid",
    )

    def __init__(
        self,
        uid: str,
        namespace: str,
        name: str,
        profile: str,
        attempt: int,
        timestamp: float,
        node: str,
        evaluated_nodes: int | None,
        feasible_nodes: int | None,
        details: LazyDetails,
    ) -> None:
        self.uid = uid
        self.namespace = namespace
        self.name = name
        self.profile = profile
        self.attempt = attempt
        self.timestamp = timestamp
        self.node = node
        self.evaluated_nodes = evaluated_nodes
        self.feasible_nodes = feasible_nodes
        self.details = details


class ExplainStore:
    """Last attempt per pod (``max_pods``) plus the last ``recent_per_profile`` first-attempt
    successes of each profile, kept lazily (see the module docstring)."""

    def __init__(
        self,
        max_pods: int = 1000,
        max_names_per_group: int = 10,
        top_k: int = 5,
        clock: Callable[[], float] = time.time,
        recent_per_profile: int = 100,
    ) -> None:
        self.max_pods = max_pods
        self.recent_per_profile = recent_per_profile
        self._recent: dict[str, deque[_RecentAttempt]] = {}
        self._recent_by_key: dict[tuple[str, str], _RecentAttempt] = {}
        self._recent_by_uid: dict[str, _RecentAttempt] = {}
        self.max_names_per_group = max_names_per_group
        self.top_k = top_k
        self._clock = clock
        self._by_uid: OrderedDict[str, Explanation] = OrderedDict()
        self._uid_by_key: dict[tuple[str, str], str] = {}
        # The last PodGroup cycle of each group ("namespace/name" → JSON-ready summary), and
        # the group of each member it tried: explain adds it to a member's answer (podGroup).
        self._groups: OrderedDict[str, Mapping[str, Any]] = OrderedDict()
        self._group_by_pod: dict[tuple[str, str], str] = {}

    @property
    def enabled(self) -> bool:
        return self.max_pods > 0

    @property
    def keeps_recent(self) -> bool:
        return self.recent_per_profile > 0

    def __len__(self) -> int:
        return len(self._by_uid)

    def recent_count(self) -> int:
        """Successes kept in the per-profile rings (evicted or forgotten ones not counted)."""
        return len(self._recent_by_uid)

    def record(
        self,
        uid: str,
        namespace: str,
        name: str,
        *,
        profile: str,
        attempt: int,
        result: str,
        message: str = "",
        node: str | None = None,
        filter_verdicts: FilterVerdicts | None = None,
        scores: NodeScores | None = None,
        totals: Mapping[str, int] | None = None,
        evaluated_nodes: int | None = None,
        feasible_nodes: int | None = None,
        filter_details: FilterDetails | None = None,
    ) -> None:
        """Keep this attempt as the pod's explanation, replacing the previous one."""
        if self.max_pods <= 0:
            return
        explanation = build_explanation(
            uid,
            namespace,
            name,
            profile=profile,
            attempt=attempt,
            timestamp=self._clock(),
            result=result,
            message=message,
            node=node,
            filter_verdicts=filter_verdicts,
            scores=scores,
            totals=totals,
            evaluated_nodes=evaluated_nodes,
            feasible_nodes=feasible_nodes,
            max_names_per_group=self.max_names_per_group,
            top_k=self.top_k,
            filter_details=filter_details,
        )
        self._drop_recent(uid)  # this attempt is newer than any success kept by reference
        self._by_uid[uid] = explanation
        self._by_uid.move_to_end(uid)
        self._uid_by_key[(namespace, name)] = uid
        while len(self._by_uid) > self.max_pods:
            _, evicted = self._by_uid.popitem(last=False)
            self._drop_key(evicted)

    def record_recent(
        self,
        uid: str,
        namespace: str,
        name: str,
        *,
        profile: str,
        attempt: int,
        node: str,
        evaluated_nodes: int | None,
        feasible_nodes: int | None,
        details: LazyDetails,
    ) -> None:
        """Keep a successful attempt by reference in its profile's ring (hot path: a few dict
        and deque operations, no compression); the oldest one of the profile drops out."""
        if self.recent_per_profile <= 0:
            return
        ring = self._recent.get(profile)
        if ring is None:
            ring = self._recent[profile] = deque()
        entry = _RecentAttempt(
            uid, namespace, name, profile, attempt, self._clock(), node,
            evaluated_nodes, feasible_nodes, details,
        )  # fmt: skip
        if len(ring) >= self.recent_per_profile:
            self._unindex(ring.popleft())
        ring.append(entry)
        self._recent_by_uid[uid] = entry
        self._recent_by_key[(namespace, name)] = entry

    def _unindex(self, entry: _RecentAttempt) -> None:
        if self._recent_by_uid.get(entry.uid) is entry:
            del self._recent_by_uid[entry.uid]
        key = (entry.namespace, entry.name)
        if self._recent_by_key.get(key) is entry:
            del self._recent_by_key[key]

    def _drop_recent(self, uid: str) -> None:
        entry = self._recent_by_uid.get(uid)
        if entry is not None:
            self._unindex(entry)  # the ring slot stays until it is reused: unreachable, small

    def forget(self, uid: str) -> None:
        """The pod was deleted (or left this scheduler): drop what is kept for it."""
        explanation = self._by_uid.pop(uid, None)
        if explanation is not None:
            self._drop_key(explanation)
        self._drop_recent(uid)

    def _drop_key(self, explanation: Explanation) -> None:
        key = (explanation.namespace, explanation.name)
        if self._uid_by_key.get(key) == explanation.uid:
            del self._uid_by_key[key]

    def record_group(
        self, namespace: str, group: str, members: Sequence[str], summary: Mapping[str, Any]
    ) -> None:
        """Keep `summary` as the last PodGroup cycle of `group` (JSON-ready; the scheduler
        builds it), answered with each of `members` (pod names in `namespace`)."""
        if self.max_pods <= 0:
            return
        key = f"{namespace}/{group}"
        self._groups[key] = summary
        self._groups.move_to_end(key)
        for member in members:
            self._group_by_pod[(namespace, member)] = key
        while len(self._groups) > self.max_pods:
            evicted, _ = self._groups.popitem(last=False)
            for pod in [p for p, g in self._group_by_pod.items() if g == evicted]:
                del self._group_by_pod[pod]

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod's last attempt as JSON-ready data, or None if nothing is kept for it; a
        gang member's answer carries its group's last cycle under ``podGroup``."""
        uid = self._uid_by_key.get((namespace, name))
        explanation = self._by_uid.get(uid) if uid is not None else None
        recent = self._recent_by_key.get((namespace, name))
        if recent is not None and (
            explanation is None or recent.timestamp >= explanation.timestamp
        ):
            explanation = self._explain_recent(recent)
        if explanation is None:
            return None
        data = explanation.to_dict()
        group_key = self._group_by_pod.get((namespace, name))
        group = self._groups.get(group_key) if group_key is not None else None
        if group is not None:
            data["podGroup"] = dict(group)
        return data

    def latest_failures(self, limit: int, keep: Callable[[str], bool]) -> list[Explanation]:
        """Up to `limit` pods' last attempts that failed, newest first, among those whose uid
        `keep` accepts (the web view: pods still pending). Walks from the newest entry and
        stops at `limit` accepted ones."""
        found: list[Explanation] = []
        for explanation in reversed(self._by_uid.values()):
            if len(found) >= limit:
                break
            if explanation.result != "scheduled" and keep(explanation.uid):
                found.append(explanation)
        return found

    def _explain_recent(self, entry: _RecentAttempt) -> Explanation:
        verdicts, scores, totals = entry.details.resolve(self.top_k)
        return build_explanation(
            entry.uid,
            entry.namespace,
            entry.name,
            profile=entry.profile,
            attempt=entry.attempt,
            timestamp=entry.timestamp,
            result="scheduled",
            node=entry.node,
            filter_verdicts=verdicts,
            scores=scores,
            totals=totals,
            evaluated_nodes=entry.evaluated_nodes,
            feasible_nodes=entry.feasible_nodes,
            max_names_per_group=self.max_names_per_group,
            top_k=self.top_k,
        )


def render_text(data: Mapping[str, Any]) -> str:
    """A human-readable explanation of what :meth:`ExplainStore.get` returned."""
    pod = data["pod"]
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(data["timestamp"]))
    what_if = data.get("whatIf")
    if what_if:  # a what-if answer: no attempt was made
        header = (
            f"What-if:  {when}, {what_if['configuration']} configuration, "
            f"{what_if['snapshotNodes']} node(s); nothing was bound"
        )
        pod_line = f"Pod:      {pod['namespace']}/{pod['name']}"
    else:
        header = f"Attempt:  {data['attempt']} at {when}"
        pod_line = f"Pod:      {pod['namespace']}/{pod['name']} (uid {pod['uid']})"
    lines = [
        pod_line,
        f"Profile:  {data['profile']}",
        header,
        f"Result:   {data['result']}" + (f" on node {data['node']}" if data.get("node") else ""),
    ]
    if data.get("message"):
        lines.append(f"Message:  {data['message']}")
    if what_if and what_if.get("note"):
        lines.append(f"Note:     {what_if['note']}")
    counts = []
    if data.get("evaluatedNodes") is not None:
        counts.append(f"{data['evaluatedNodes']} evaluated")
    if data.get("feasibleNodes") is not None:
        counts.append(f"{data['feasibleNodes']} feasible")
    if data.get("rejectedNodes"):
        counts.append(f"{data['rejectedNodes']} rejected")
    if counts:
        lines.append("Nodes:    " + ", ".join(counts))

    verdicts = data.get("filterVerdicts") or []
    if verdicts:
        lines += ["", "Filter verdicts (nodes grouped by the plugin that rejected them):"]
        rows = [
            (g["plugin"], g["reason"], str(g["count"]), _names(g["nodes"], g["count"]))
            for g in verdicts
        ]
        lines += _table(("PLUGIN", "REASON", "NODES", "EXAMPLES"), rows)
        detailed = [g for g in verdicts if g.get("nodeDetails")]
        if detailed:
            lines += ["", "Filter details (per node, from the plugin that rejected it):"]
            for g in detailed:
                lines.append(f"  {g['plugin']}: {g['reason']}")
                for d in g["nodeDetails"]:
                    lines.append(f"    {d['count']} node(s): {_names(d['nodes'], d['count'])}")
                    lines += [f"      - {_detail_text(detail)}" for detail in d["details"]]

    group = data.get("podGroup")
    if group:
        lines += ["", *_group_text(group)]

    top = data.get("topNodes") or []
    if top:
        plugins = sorted({plugin for scored in top for plugin in scored["plugins"]})
        lines += ["", "Top nodes by score:"]
        rows = [
            (s["node"], str(s["total"]), *(str(s["plugins"].get(p, "-")) for p in plugins))
            for s in top
        ]
        lines += _table(("NODE", "TOTAL", *plugins), rows)
    return "\n".join(lines) + "\n"


def _group_text(group: Mapping[str, Any]) -> list[str]:
    """The ``podGroup`` section: the group's last cycle (or, in a what-if answer, the cycle that
    was simulated), member by member."""
    verdict = group.get("placementFeasible") or {}
    if "quorumPlaceable" in group:
        outcome = "quorum placeable" if group["quorumPlaceable"] else "quorum not placeable"
        heading = f"what-if: {outcome}"
    else:
        heading = f"last cycle {group['result']}"
    lines = [
        f"Pod group: {group['namespace']}/{group['name']} (minCount {group.get('minCount')}), "
        f"{heading}",
    ]
    if group.get("message"):
        lines.append(f"  Message:  {group['message']}")
    if verdict:
        lines.append(f"  PlacementFeasible: {verdict['code']}: {verdict.get('message', '')}")
    if group.get("placement"):
        lines.append(f"  Placement: {group['placement']}")
    placements = group.get("placements") or []
    if placements:
        rows = [
            (p["name"] or "(all nodes)", str(p["nodes"]), "yes" if p["feasible"] else "no",
             str(p["placed"]), p.get("message", ""))
            for p in placements
        ]  # fmt: skip
        lines += ["  Placements tried:", *("  " + line for line in _table(
            ("PLACEMENT", "NODES", "FEASIBLE", "PLACED", "STATUS"), rows))]  # fmt: skip
    members = group.get("members") or []
    if members:
        member_rows = [
            (m["pod"], m["result"], m.get("node") or "-", m.get("message", "")) for m in members
        ]
        lines += ["  Members:", *("  " + line for line in _table(
            ("POD", "RESULT", "NODE", "MESSAGE"), member_rows))]  # fmt: skip
    blocking = group.get("blockingMember")
    if blocking:
        lines.append(f"  Blocking the quorum: {blocking['pod']}: {blocking['message']}")
        for g in blocking.get("filterVerdicts") or []:
            lines.append(
                f"    {g['plugin']}: {g['reason']} ({g['count']} node(s): "
                f"{_names(g['nodes'], g['count'])})"
            )
    return lines


def _detail_text(detail: Mapping[str, str]) -> str:
    """``claim ns/c, request gpu: why`` for DynamicResources' details; generic keys as k=v."""
    reason = detail.get("reason", "")
    rest = [f"{key} {value}" for key, value in detail.items() if key != "reason" and value]
    return ", ".join(rest) + (f": {reason}" if rest and reason else reason)


def _names(nodes: list[str], count: int) -> str:
    more = count - len(nodes)
    return ", ".join(nodes) + (f" (+{more} more)" if more > 0 else "")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    all_rows = (header, *rows)
    widths = [max(len(row[i]) for row in all_rows) for i in range(len(header))]
    return [
        "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in all_rows
    ]
