"""Pick a node for one pod: PreFilter, sampled Filter, PreScore/Score, selectHost.

Upstream: pkg/scheduler/schedule_one.go (schedulePod, findNodesThatFitPod,
findNodesThatPassFilters, numFeasibleNodesToFind, prioritizeNodes, selectHost). Filtering is
serial, so "stop once enough feasible nodes are found" is exact: the nodes after the stop point
are neither evaluated nor reported.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from scheduler.cache.rows import RowNodes
from scheduler.cache.snapshot import nodes_named
from scheduler.cycle.algorithm_rows import (
    find_feasible_rows,
    prioritize_rows,
    row_table_for,
    select_row,
)
from scheduler.extenders.cycle import (
    CallRecorder,
    extender_scores,
    find_nodes_that_pass_extenders,
    mark_extender_rejection,
)
from scheduler.framework.filter_tally import no_node_fits
from scheduler.framework.interface import CycleState, PreFilterResult, SnapshotLister
from scheduler.framework.results import (
    Diagnosis,
    FitError,
    NodePluginScores,
    NoNodesAvailable,
    PluginScore,
    ScheduleResult,
    SchedulingError,
)
from scheduler.framework.runtime import (
    Framework,
    OpportunisticBatch,
    PodSignature,
    RowScores,
    SortedScoredNodes,
)
from scheduler.framework.status import Code, Status

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.cache.node_table import IntArray, NodeTable
    from scheduler.cache.rows import Rows
    from scheduler.cycle.fanout import FilterFanout
    from scheduler.extenders.http import HTTPExtender

__all__ = [
    "AttemptDetails",
    "FitError",
    "NoNodesAvailable",
    "ScheduleResult",
    "SchedulingError",
    "StartIndex",
    "find_nodes_that_fit_pod",
    "num_feasible_nodes_to_find",
    "prioritize_nodes",
    "schedule_pod",
    "select_host",
]

log = logging.getLogger(__name__)

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


@dataclass(slots=True)
class StartIndex:
    """Where the next cycle starts scanning nodes (upstream's nextStartNodeIndex).

    Owned by the scheduling loop and shared by its profiles, so every node gets the same chance
    of being examined across pods.
    """

    value: int = 0


@dataclass(slots=True)
class _BatchTicket:
    """One cycle's dealings with the profile's batch: the hint it was given and its signature
    (schedule_one.go passes them from findNodesThatFitPod to StoreScheduleResults)."""

    batch: OpportunisticBatch
    cycle: int
    hint: str = ""
    signature: PodSignature | None = None

    @property
    def wants_ranking(self) -> bool:
        """Whether the cycle's ranking can serve a batch: an unsigned pod's never can, so the
        cycle skips building it (most pods of profiles that cannot batch)."""
        return self.signature is not None

    def store(
        self, chosen: str, others: SortedScoredNodes | None, candidates_left: int = 0
    ) -> None:
        self.batch.store_schedule_results(
            self.signature, self.hint, chosen, others, self.cycle, candidates_left
        )


@dataclass(slots=True)
class AttemptDetails:
    """What an attempt computed anyway, handed out for explain: no extra work is done for it."""

    diagnosis: Diagnosis | None = None
    scores: list[NodePluginScores] | None = None
    # The row path's scores stay arrays (explain reads only the top rows); `scored_nodes` are
    # the nodes of those rows, in order.
    row_scores: RowScores | None = None
    scored_nodes: Sequence[NodeInfo] | None = None
    chosen_row: int | None = None


def num_feasible_nodes_to_find(percentage_of_nodes_to_score: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to look for before scoring (0 / None: adaptive percentage)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    percentage = percentage_of_nodes_to_score or 0
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num_nodes = num_all_nodes * percentage // 100
    return max(num_nodes, MIN_FEASIBLE_NODES_TO_FIND)


async def schedule_pod(
    fwk: Framework,
    state: CycleState,
    pod: PodView,
    snapshot: SnapshotLister,
    *,
    percentage_of_nodes_to_score: int | None,
    next_start_index: StartIndex,
    rng: random.Random,
    details: AttemptDetails | None = None,
    extenders: Sequence[HTTPExtender] = (),
    recorder: CallRecorder | None = None,
    cycle: int | None = None,
    fanout: FilterFanout | None = None,
) -> ScheduleResult:
    """The node to bind `pod` to; raises FitError (nothing fits), SchedulingError (a plugin or
    an extender failed) or NoNodesAvailable (the snapshot has no nodes). `details`, when
    given, receives the diagnosis and the per-node scores (when scoring ran).

    `extenders` are those interested in `pod`: the Filter plugins' feasible nodes then go
    through their filter, and their prioritize scores are added to the Score plugins' totals
    (upstream's findNodesThatFitPod / prioritizeNodes). Without extenders nothing here
    suspends, so a synchronous caller may drive the coroutine to its end in one step.

    `cycle` (the queue's scheduling cycle) lets the profile's opportunistic batch take part
    (feature gate OpportunisticBatching): a pod signed like the previous one tries the
    previous ranking's next node first (batch.py). Without it the batch is not consulted.

    `fanout` may filter the row pass's chunks in worker processes (`parallelism`, fanout.py);
    the decision is the same either way."""
    all_nodes = snapshot.list()
    if not all_nodes:
        raise NoNodesAvailable()
    diagnosis = Diagnosis()
    if details is not None:
        details.diagnosis = diagnosis
    batch = fwk.batch
    ticket = _BatchTicket(batch, cycle) if batch is not None and cycle is not None else None
    if extenders:
        feasible, rows = await _find_feasible_with_extenders(
            fwk, state, pod, snapshot, diagnosis, extenders, recorder,
            percentage_of_nodes_to_score, next_start_index, ticket, fanout,
        )  # fmt: skip
    else:
        feasible, rows = _find_feasible(
            fwk, state, pod, snapshot, diagnosis, percentage_of_nodes_to_score,
            next_start_index, ticket, fanout,
        )  # fmt: skip
    if not feasible:
        raise FitError(pod, len(all_nodes), diagnosis)
    rejected = len(diagnosis.node_to_status.statuses)
    if len(feasible) == 1:
        if ticket is not None:
            ticket.store(feasible[0].node_name, None)
        return ScheduleResult(feasible[0].node_name, 1 + rejected, 1)
    # Raw scores before NormalizeScore, kept with the ranking for the batch's re-scoring.
    ranking = ticket is not None and ticket.wants_ranking
    raw: list[IntArray] | None = [] if ranking else None
    if rows is not None:
        table, feasible_rows = rows
        row_scores = prioritize_rows(fwk, state, pod, table, feasible_rows, feasible, raw)
        if extenders:
            by_node = await extender_scores(extenders, pod, feasible, recorder)
            if by_node:
                row_scores = _with_extender_columns(row_scores, feasible, by_node)
        chosen = select_row(row_scores.total, rng)
        if details is not None:
            details.row_scores, details.scored_nodes = row_scores, feasible
            details.chosen_row = chosen
        host = feasible[chosen].node_name
        if ticket is not None:
            others = None
            if ranking:
                plugins = row_scores.plugins[: len(raw or ())]  # extender columns come after
                others = _ranked_rows(row_scores.total, feasible, chosen, plugins, raw)
            ticket.store(host, others, len(feasible) - 1)
        return ScheduleResult(host, len(feasible) + rejected, len(feasible))
    if extenders and not fwk.has_score_plugins():
        # Upstream runs the (empty) Score pass when extenders exist: every plugin total is 0
        # (without extenders every node scores 1, as prioritize_nodes says).
        scores = [NodePluginScores(info.node_name) for info in feasible]
    else:
        scores = prioritize_nodes(fwk, state, pod, feasible, raw)
    if extenders:
        by_node = await extender_scores(extenders, pod, feasible, recorder)
        for node_scores in scores:
            extra = by_node.get(node_scores.name)
            if extra:
                node_scores.scores.extend(extra)
                node_scores.total_score += sum(score.score for score in extra)
    if details is not None:
        details.scores = scores
    host = select_host(scores, rng)
    if ticket is not None:
        ticket.store(host, _ranked(scores, host, raw or []) if ranking else None, len(scores) - 1)
    return ScheduleResult(host, len(feasible) + rejected, len(feasible))


class _NodeNames:
    """The names of a cycle's nodes by position, read only when the ranking asks."""

    __slots__ = ("_nodes",)

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        self._nodes = nodes

    def __len__(self) -> int:
        return len(self._nodes)

    def __getitem__(self, index: int, /) -> str:
        return self._nodes[index].node_name


class _ScoredNames:
    """_NodeNames over the per-node path's scores."""

    __slots__ = ("_scores",)

    def __init__(self, scores: Sequence[NodePluginScores]) -> None:
        self._scores = scores

    def __len__(self) -> int:
        return len(self._scores)

    def __getitem__(self, index: int, /) -> str:
        return self._scores[index].name


def _ranked_rows(
    totals: IntArray,
    nodes: Sequence[NodeInfo],
    chosen: int,
    plugins: Sequence[str],
    raw: list[IntArray] | None,
) -> SortedScoredNodes:
    """The candidates but the chosen one, best total first, equal totals in scan order, with
    their raw scores.

    Upstream pops the chosen node off a heap whose ties are broken by a random number per
    node; here select_host picks the chosen node exactly as without batching (the same draws
    of the scheduler's rng), and the runners-up keep their scan order, which costs no draw.
    Sorted only if the next cycle reads it (the arrays are copies, not the cycle's)."""
    return SortedScoredNodes(
        _NodeNames(nodes), totals, plugins=plugins, raw=raw or (), chosen=chosen
    )


def _ranked(
    scores: Sequence[NodePluginScores], chosen: str, raw: list[IntArray]
) -> SortedScoredNodes:
    """_ranked_rows for the per-node path's scores."""
    totals = np.fromiter((s.total_score for s in scores), dtype=np.int64, count=len(scores))
    position = next(i for i, node in enumerate(scores) if node.name == chosen)
    plugins = [score.name for score in scores[0].scores][: len(raw)] if scores else []
    return SortedScoredNodes(
        _ScoredNames(scores), totals, plugins=plugins, raw=raw, chosen=position
    )


async def _find_feasible_with_extenders(
    fwk: Framework,
    state: CycleState,
    pod: PodView,
    snapshot: SnapshotLister,
    diagnosis: Diagnosis,
    extenders: Sequence[HTTPExtender],
    recorder: CallRecorder | None,
    percentage_of_nodes_to_score: int | None,
    next_start_index: StartIndex,
    ticket: _BatchTicket | None = None,
    fanout: FilterFanout | None = None,
) -> tuple[Sequence[NodeInfo], tuple[NodeTable, Rows] | None]:
    """_find_feasible, each set of feasible nodes then filtered by the extenders."""
    pre_filtered = _run_pre_filter(fwk, state, pod, snapshot.list(), diagnosis)
    if pre_filtered is None:
        return [], None
    hint = _node_hint(ticket, state, pod)
    feasible = _feasible_nominated_node(fwk, state, pod, snapshot, diagnosis, hint)
    if feasible:
        try:
            feasible = await find_nodes_that_pass_extenders(
                extenders, pod, feasible, diagnosis.node_to_status, recorder
            )
        except SchedulingError as exc:
            # Upstream logs a failed evaluation of the nominated node and scans them all.
            log.info(
                "evaluation failed on nominated node",
                extra={"pod": pod.key, "node": pod.nominated_node_name, "error": str(exc)},
            )
            feasible = []
        if feasible:
            return feasible, None
    scanned, rows = _scan_nodes(
        fwk, state, pod, snapshot, pre_filtered, diagnosis,
        percentage_of_nodes_to_score, next_start_index, fanout,
    )  # fmt: skip
    passed = await find_nodes_that_pass_extenders(
        extenders, pod, list(scanned), diagnosis.node_to_status, recorder
    )
    if len(passed) != len(scanned):
        mark_extender_rejection(diagnosis.unschedulable_plugins)
        if rows is not None:
            rows = rows[0], _rows_of(passed, scanned, rows[1])
    return passed, rows


def _rows_of(passed: Sequence[NodeInfo], feasible: Sequence[NodeInfo], rows: Rows) -> Rows:
    """The table rows of `passed` (a reordered subset of `feasible`, whose rows are `rows`)."""
    position = {id(info): i for i, info in enumerate(feasible)}
    picked = np.fromiter((position[id(info)] for info in passed), dtype=np.intp, count=len(passed))
    return rows[picked]


def _with_extender_columns(
    row_scores: RowScores, nodes: Sequence[NodeInfo], by_node: Mapping[str, list[PluginScore]]
) -> RowScores:
    """`row_scores` plus one weighted column per extender that scored some node."""
    columns: dict[str, IntArray] = {}
    for i, info in enumerate(nodes):
        for score in by_node.get(info.node_name, ()):
            column = columns.get(score.name)
            if column is None:
                column = columns[score.name] = np.zeros(len(nodes), dtype=np.int64)
            column[i] += score.score
    total = row_scores.total.astype(np.int64, copy=True)
    for column in columns.values():
        total += column
    return RowScores(
        [*row_scores.plugins, *columns], [*row_scores.weighted, *columns.values()], total
    )


def find_nodes_that_fit_pod(
    fwk: Framework,
    state: CycleState,
    pod: PodView,
    snapshot: SnapshotLister,
    percentage_of_nodes_to_score: int | None,
    next_start_index: StartIndex,
) -> tuple[list[NodeInfo], Diagnosis]:
    diagnosis = Diagnosis()
    feasible, _ = _find_feasible(
        fwk, state, pod, snapshot, diagnosis, percentage_of_nodes_to_score, next_start_index, None
    )
    return list(feasible), diagnosis


def _find_feasible(
    fwk: Framework,
    state: CycleState,
    pod: PodView,
    snapshot: SnapshotLister,
    diagnosis: Diagnosis,
    percentage_of_nodes_to_score: int | None,
    next_start_index: StartIndex,
    ticket: _BatchTicket | None,
    fanout: FilterFanout | None = None,
) -> tuple[Sequence[NodeInfo], tuple[NodeTable, Rows] | None]:
    """find_nodes_that_fit_pod (into `diagnosis`), plus the table rows of the feasible nodes
    when the row fast path found them (None: the per-node path ran)."""
    pre_result = _run_pre_filter(fwk, state, pod, snapshot.list(), diagnosis)
    if pre_result is None:
        return [], None
    hint = _node_hint(ticket, state, pod)
    # A node nominated by an earlier preemption is likely the only one that fits: try it first;
    # otherwise the batch's hint (a nominated pod gets none: flush reason pod_nominated).
    feasible_nominated = _feasible_nominated_node(fwk, state, pod, snapshot, diagnosis, hint)
    if feasible_nominated:
        return feasible_nominated, None
    return _scan_nodes(
        fwk, state, pod, snapshot, pre_result, diagnosis, percentage_of_nodes_to_score,
        next_start_index, fanout,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class _PreFiltered:
    result: PreFilterResult | None
    plugins: frozenset[str]  # the PreFilter plugins that rejected or narrowed the nodes


def _run_pre_filter(
    fwk: Framework,
    state: CycleState,
    pod: PodView,
    all_nodes: Sequence[NodeInfo],
    diagnosis: Diagnosis,
) -> _PreFiltered | None:
    """None when PreFilter rejected the pod (the diagnosis says why); raises SchedulingError
    when a PreFilter plugin failed."""
    pre_result, status, unschedulable_plugins = fwk.run_pre_filter_plugins(state, pod, all_nodes)
    diagnosis.unschedulable_plugins = set(unschedulable_plugins)
    if not status.is_success:
        if not status.is_rejected:
            raise SchedulingError(status)
        # Every node gets the same status, so preemption sees them all as rejected by it.
        diagnosis.node_to_status.absent = status
        diagnosis.pre_filter_msg = status.message
        diagnosis.add_plugin_status(status)
        return None
    return _PreFiltered(pre_result, frozenset(unschedulable_plugins))


def _node_hint(ticket: _BatchTicket | None, state: CycleState, pod: PodView) -> str:
    """The batch's hint for this cycle ("" for none), asked after PreFilter as upstream."""
    if ticket is None:
        return ""
    ticket.hint, ticket.signature = ticket.batch.get_node_hint(state, pod, ticket.cycle)
    return ticket.hint


def _feasible_nominated_node(
    fwk: Framework,
    state: CycleState,
    pod: PodView,
    snapshot: SnapshotLister,
    diagnosis: Diagnosis,
    hint: str = "",
) -> list[NodeInfo]:
    """[the pod's nominated node, else the batch's hint] when it passes the Filter plugins,
    else [] (upstream's evaluateNominatedNode)."""
    name = pod.nominated_node_name or hint
    if not name:
        return []
    nominated = snapshot.get(name)
    if nominated is None:
        return []
    feasible: list[NodeInfo] = []
    _find_nodes_that_pass_filters(fwk, state, pod, diagnosis, [nominated], 0, 1, feasible, 1)
    return feasible


def _scan_nodes(
    fwk: Framework,
    state: CycleState,
    pod: PodView,
    snapshot: SnapshotLister,
    pre_filtered: _PreFiltered,
    diagnosis: Diagnosis,
    percentage_of_nodes_to_score: int | None,
    next_start_index: StartIndex,
    fanout: FilterFanout | None = None,
) -> tuple[Sequence[NodeInfo], tuple[NodeTable, Rows] | None]:
    """The sampled Filter pass over the nodes PreFilter left (rows when the fast path ran)."""
    all_nodes = snapshot.list()
    nodes: Sequence[NodeInfo] = all_nodes
    pre_result = pre_filtered.result
    if pre_result is not None and pre_result.node_names is not None:
        nodes = nodes_named(snapshot, pre_result.node_names)
        names = " ".join(sorted(pre_filtered.plugins))
        diagnosis.node_to_status.absent = Status.unresolvable(
            f"node(s) didn't satisfy plugin(s) [{names}]"
        )
    if not nodes:
        return [], None
    num_to_find = num_feasible_nodes_to_find(percentage_of_nodes_to_score, len(nodes))
    start = next_start_index.value
    table = row_table_for(fwk, state, snapshot) if nodes is all_nodes else None
    if table is not None:
        filter_rows = None if fanout is None else fanout.rows_filter(fwk, state, pod, table)
        found = find_feasible_rows(
            fwk, state, pod, table, diagnosis, start, num_to_find, filter_rows
        )
        if found is not None:
            feasible_rows = found[0]
            feasible_infos = RowNodes(table.infos, feasible_rows)
            processed = len(diagnosis.node_to_status.statuses) + len(feasible_infos)
            next_start_index.value = (start + processed) % len(all_nodes)
            return feasible_infos, (table, feasible_rows)
    feasible: list[NodeInfo] = []
    try:
        _find_nodes_that_pass_filters(
            fwk, state, pod, diagnosis, nodes, start, num_to_find, feasible, len(all_nodes)
        )
    finally:
        # Always move on, errors included, so every node gets its turn.
        processed = len(diagnosis.node_to_status.statuses) + len(feasible)
        next_start_index.value = (start + processed) % len(all_nodes)
    return feasible, None


def _find_nodes_that_pass_filters(
    fwk: Framework,
    state: CycleState,
    pod: PodView,
    diagnosis: Diagnosis,
    nodes: Sequence[NodeInfo],
    start: int,
    num_to_find: int,
    feasible: list[NodeInfo],
    num_all_nodes: int,
) -> None:
    """Append up to `num_to_find` feasible nodes, scanning from `start`; record rejections.

    The Filter point's status is Success when a node passed, Error when a plugin failed, else
    Unschedulable with the FitError text over `num_all_nodes` (the nodes the failure message
    counts: all of them, or the one nominated node tried first)."""
    count = len(nodes)
    if not fwk.has_filter_plugins():
        feasible.extend(nodes[(start + i) % count] for i in range(num_to_find))
        return
    begin = fwk.now()
    tally = fwk.filter_tally(state)
    found_before = len(feasible)
    outcome = Status.OK
    failed: list[tuple[str, Status]] = []
    try:
        for offset in range(count):
            info = nodes[(start + offset) % count]
            if fwk.needs_nominated_pods_pass(pod, info.node_name):
                status = fwk.run_filter_plugins_with_nominated_pods(state, pod, info, tally)
            else:
                status = fwk.run_filter_plugins(state, pod, info, tally)
            if status.code == Code.ERROR:
                outcome = status
                raise SchedulingError(status)
            if status.is_success:
                feasible.append(info)
                if len(feasible) == num_to_find:
                    break
            else:
                failed.append((info.node_name, status))
    finally:
        for node_name, status in failed:
            diagnosis.node_to_status.statuses[node_name] = status
            diagnosis.add_plugin_status(status)
        passed = len(feasible) - found_before
        if tally is not None:
            tally.rejected_statuses(status for _, status in failed)
        if outcome.is_success and not passed:
            outcome = no_node_fits(num_all_nodes, diagnosis, tally is not None)
        fwk.record_filter_point(state, outcome, begin, tally, passed)


def prioritize_nodes(
    fwk: Framework,
    state: CycleState,
    pod: PodView,
    nodes: Sequence[NodeInfo],
    raw_out: list[IntArray] | None = None,
) -> list[NodePluginScores]:
    """Weighted scores per node; every node scores 1 when the profile has no Score plugin.
    `raw_out` receives the plugins' scores before NormalizeScore (run_score_plugins)."""
    if not fwk.has_score_plugins():
        return [NodePluginScores(info.node_name, total_score=1) for info in nodes]
    status = fwk.run_pre_score_plugins(state, pod, nodes)
    if not status.is_success:
        raise SchedulingError(status)
    scores, status = fwk.run_score_plugins(state, pod, nodes, raw_out)
    if not status.is_success:
        raise SchedulingError(status)
    return scores


def select_host(scores: Sequence[NodePluginScores], rng: random.Random) -> str:
    """A node with the highest total, ties broken uniformly at random (reservoir sampling)."""
    if not scores:
        raise SchedulingError(Status.error("empty priorityList"))
    selected = scores[0].name
    best = scores[0].total_score
    ties = 1
    for candidate in scores[1:]:
        if candidate.total_score > best:
            best, selected, ties = candidate.total_score, candidate.name, 1
        elif candidate.total_score == best:
            ties += 1
            if rng.randrange(ties) == 0:
                selected = candidate.name
    return selected
