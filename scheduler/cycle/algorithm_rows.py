"""The scheduling algorithm's fast path: Filter and Score over the snapshot's NodeTable.

Same answers as the per-node path in algorithm.py (feasible nodes in the same rotation order,
the same stop point at numFeasibleNodesToFind, the same statuses for rejected nodes, the same
scores), computed with array operations by plugins that implement the row extension points
(scheduler/cache/rows.py); plugins that do not are asked per row by the framework's generic
per-node adapter. The algorithm uses it only when it applies to the whole cycle (see
`row_table_for`); otherwise, or when a plugin reports an internal error, the per-node path
runs, and since filters are pure it reaches the same result it always did.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from scheduler.cache.snapshot import Snapshot, node_table_for
from scheduler.framework.filter_tally import FilterTally, no_node_fits
from scheduler.framework.interface import CycleState, NominatedPodsVerdict, SnapshotLister
from scheduler.framework.results import Diagnosis, SchedulingError
from scheduler.framework.runtime import Framework, RowRejections, RowScores
from scheduler.framework.status import Code, Status

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.cache.node_table import IntArray, NodeTable
    from scheduler.cache.rows import Rows
    from scheduler.cycle.fanout import RowsFilter

# Rows filtered per round beyond what is still needed: few rounds when many nodes are
# rejected, little work past the stop point for plugins that check rows one by one.
MIN_ROW_CHUNK = 128


def row_table_for(fwk: Framework, state: CycleState, snapshot: SnapshotLister) -> NodeTable | None:
    """The table to filter this cycle on, or None when the per-node path must run: the
    snapshot has no table, a value is too large for exact array arithmetic, or pods are
    nominated somewhere and the nominator cannot say where. Filter plugins without a row
    method do not send the cycle per node: the row pass asks them per row (the framework's
    generic per-node adapter)."""
    if not isinstance(snapshot, Snapshot):
        return None
    if fwk.has_nominated_pods() and not fwk.can_list_nominated_nodes():
        return None
    table = node_table_for(snapshot)
    return table if table is not None and table.exact else None


def find_feasible_rows(
    fwk: Framework,
    state: CycleState,
    pod: PodView,
    table: NodeTable,
    diagnosis: Diagnosis,
    start: int,
    num_to_find: int,
    filter_rows: RowsFilter | None = None,
) -> tuple[Rows, int] | None:
    """(feasible rows in evaluation order, rows evaluated), scanning all rows from `start`.

    Rejected evaluated rows get their statuses in `diagnosis`. None (diagnosis untouched) when
    a plugin returned something other than a rejection: the per-node path then reports it.
    `filter_rows` filters each chunk (default: the framework's row pass, in process; a
    FilterFanout's splits the chunk across worker processes with the same answer).
    """
    if filter_rows is None:
        filter_rows = fwk.run_filter_plugins_rows
    count = len(table)
    begin = fwk.now()
    tally = fwk.filter_tally(state)
    found: list[Rows] = []
    found_count = 0
    rejected: list[tuple[Rows, RowRejections]] = []
    # Rows whose node has pods nominated to it that count for this pod are filtered one by
    # one, with and without those pods, as the per-node path does; their outcome replaces
    # the row pass's (row -> status of those rejected).
    nominated_rows = _nominated_rows(fwk, pod, table)
    one_step = fwk.nominated_pods_verdict(state, pod) if nominated_rows else None
    overrides: dict[int, Status] = {}
    offset = 0
    while offset < count and found_count < num_to_find:
        size = min(count - offset, max(num_to_find - found_count, MIN_ROW_CHUNK))
        rows = (np.arange(offset, offset + size, dtype=np.intp) + start) % count
        alive, rejections = filter_rows(state, pod, table, rows, tally)
        failed: dict[int, Status] = {}  # position -> status
        if nominated_rows:
            outcome = (
                _nominated_outcomes(fwk, state, pod, table, rows, nominated_rows, tally)
                if one_step is None
                else _nominated_one_step_outcomes(
                    fwk, state, pod, one_step, table, rows, nominated_rows, rejections
                )
            )
            if outcome is None:
                return None  # a plugin error: the per-node path reports it
            passed, failed = outcome
            alive, rejections = _settle(alive, rejections, passed, failed)
        needed = num_to_find - found_count
        if len(alive) >= needed:
            # Stop right after the last feasible row needed, as the per-node scan does.
            alive = alive[:needed]
            last = alive[-1]
            rejections = [_before(r, last) for r in rejections]
            failed = {p: status for p, status in failed.items() if p < last}
            size = int(last) + 1
        found.append(rows[alive])
        found_count += len(alive)
        rejected.extend((rows, r) for r in rejections)
        overrides.update((int(rows[p]), status) for p, status in failed.items())
        offset += size
    found_statuses = _statuses(table, rejected, tally)
    if found_statuses is None:
        return None  # the per-node path reruns Filter and records it
    statuses, distinct = found_statuses
    names = table.names
    statuses.update((names[row], status) for row, status in overrides.items())
    diagnosis.node_to_status.statuses.update(statuses)
    for status in [*distinct, *overrides.values()]:
        diagnosis.add_plugin_status(status)
    if tally is not None:
        tally.rejected_statuses(overrides.values())
    status = Status.OK if found_count else no_node_fits(count, diagnosis, tally is not None)
    fwk.record_filter_point(state, status, begin, tally, found_count)
    feasible = np.concatenate(found) if found else np.zeros(0, dtype=np.intp)
    return feasible, offset


def _nominated_rows(fwk: Framework, pod: PodView, table: NodeTable) -> frozenset[int]:
    if not fwk.has_nominated_pods():
        return frozenset()  # the usual case, answered without listing anything
    names = fwk.nodes_needing_nominated_pass(pod) or ()
    row_of = table.row_of
    return frozenset(row_of[name] for name in names if name in row_of)


def _nominated_outcomes(
    fwk: Framework,
    state: CycleState,
    pod: PodView,
    table: NodeTable,
    rows: Rows,
    nominated_rows: frozenset[int],
    tally: FilterTally | None,
) -> tuple[set[int], dict[int, Status]] | None:
    """(positions that pass, position -> status of those rejected) for the chunk's rows with
    nominated pods, filtered per node; None on a plugin error."""
    passed: set[int] = set()
    failed: dict[int, Status] = {}
    infos = table.infos
    for position, row in enumerate(rows.tolist()):
        if row not in nominated_rows:
            continue
        status = fwk.run_filter_plugins_with_nominated_pods(state, pod, infos[row], tally)
        if status.code == Code.ERROR:
            return None
        if status.is_success:
            passed.add(position)
        else:
            failed[position] = status
    return passed, failed


def _nominated_one_step_outcomes(
    fwk: Framework,
    state: CycleState,
    pod: PodView,
    verdict: NominatedPodsVerdict,
    table: NodeTable,
    rows: Rows,
    nominated_rows: frozenset[int],
    rejections: list[RowRejections],
) -> tuple[set[int], dict[int, Status]] | None:
    """`_nominated_outcomes` when one Filter plugin alone decides with nominated pods and
    offers a one-step verdict (Framework.nominated_pods_verdict): a row another filter
    rejected keeps that verdict (pods cannot change it); the others get the plugin's."""
    plugin = verdict.plugin
    rejected_elsewhere = {
        int(position) for r in rejections if r.plugin != plugin for position in r.positions.tolist()
    }
    passed: set[int] = set()
    failed: dict[int, Status] = {}
    infos = table.infos
    for position, row in enumerate(rows.tolist()):
        if row not in nominated_rows or position in rejected_elsewhere:
            continue
        info = infos[row]
        nominated = fwk.nominated_pods_that_count(pod, info.node_name)
        status = verdict(state, pod, info, nominated)
        if status.is_success:
            passed.add(position)
        elif status.is_rejected:
            failed[position] = status.with_plugin(plugin)
        else:
            return None  # an error: the per-node path reports it in its own words
    return passed, failed


def _settle(
    alive: npt.NDArray[np.intp],
    rejections: list[RowRejections],
    passed: set[int],
    failed: dict[int, Status],
) -> tuple[npt.NDArray[np.intp], list[RowRejections]]:
    """The row pass's outcome with the per-node outcomes of nominated rows put in its place."""
    settled = set(alive.tolist()) - failed.keys() | passed
    touched = np.fromiter(passed | failed.keys(), dtype=np.intp)
    kept = [
        RowRejections(r.plugin, r.positions[~np.isin(r.positions, touched)], r.verdict)
        for r in rejections
    ]
    return np.array(sorted(settled), dtype=np.intp), kept


def _before(rejections: RowRejections, last: int) -> RowRejections:
    kept = rejections.positions[rejections.positions < last]
    return RowRejections(rejections.plugin, kept, rejections.verdict)


def _statuses(
    table: NodeTable, rejected: list[tuple[Rows, RowRejections]], tally: FilterTally | None
) -> tuple[dict[str, Status], list[Status]] | None:
    """Node name → status of each rejected row, attributed to its plugin, and the distinct
    statuses among them; None on an error. Each plugin's rejections are counted into `tally`
    (per chunk, not per row).

    Plugins' verdicts return a few shared statuses for thousands of rows (statuses are never
    changed in place): each is checked and attributed once per chunk, and the rows share the
    copy, instead of a copy and a check per rejected node."""
    names = table.names
    statuses: dict[str, Status] = {}
    distinct: list[Status] = []
    for rows, rejections in rejected:
        verdict = rejections.verdict
        plugin = rejections.plugin
        status = Status.OK
        # id(plugin's status) -> (it, attributed copy): holding it keeps its id unique
        attributed: dict[int, tuple[Status, Status]] = {}
        targets = rows[rejections.positions]
        found = (
            verdict.reject_many(targets)
            if verdict.reject_many is not None
            else list(map(verdict.reject, targets.tolist()))
        )
        for status in found:
            if id(status) not in attributed:
                if not status.is_rejected:
                    return None
                known = attributed[id(status)] = (status, status.with_plugin(plugin))
                distinct.append(known[1])
        if len(attributed) == 1:  # the common case: one status for every row
            shared = next(iter(attributed.values()))[1]
            statuses.update(dict.fromkeys(map(names.__getitem__, targets.tolist()), shared))
        else:
            statuses.update(
                zip(
                    map(names.__getitem__, targets.tolist()),
                    [attributed[id(status)][1] for status in found],
                    strict=True,
                )
            )
        if tally is not None:
            tally.rejected(plugin, len(rejections.positions), status.code)
    return statuses, distinct


def prioritize_rows(
    fwk: Framework,
    state: CycleState,
    pod: PodView,
    table: NodeTable,
    rows: Rows,
    infos: Sequence[NodeInfo] | None = None,
    raw_out: list[IntArray] | None = None,
) -> RowScores:
    """prioritize_nodes over table rows (every row scores 1 without Score plugins);
    `infos` are the rows' NodeInfos when the caller has them; `raw_out` receives the plugins'
    scores before NormalizeScore."""
    if not fwk.has_score_plugins():
        ones: IntArray = np.ones(len(rows), dtype=np.int64)
        return RowScores([], [], ones)
    if infos is None:
        infos = [table.infos[row] for row in rows.tolist()]
    status = fwk.run_pre_score_plugins(state, pod, infos)
    if not status.is_success:
        raise SchedulingError(status)
    scores, status = fwk.run_score_plugins_rows(state, pod, table, rows, raw_out)
    if scores is None:
        raise SchedulingError(status)
    return scores


def select_row(total: IntArray, rng: random.Random) -> int:
    """Position of a highest total, chosen uniformly at random among the ties (as the
    reservoir sampling of select_host, with one draw)."""
    if not len(total):
        raise SchedulingError(Status.error("empty priorityList"))
    best = np.flatnonzero(total == total.max())
    if len(best) == 1:
        return int(best[0])
    return int(best[rng.randrange(len(best))])
