"""The generic per-node adapter: a Filter / Score plugin with only the per-node methods (an
out-of-tree plugin) runs in the NodeTable row pass and answers as the per-node path does (the
same feasible nodes, statuses, messages, attribution, errors and normalised scores), and is
counted, timed and attributed in the metrics as a plugin with row methods would be."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.objects import PodView
from scheduler.cache.cache import Cache
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.node_table import IntArray, NodeTable
from scheduler.cache.rows import Rows, RowVerdict, default_normalize_rows, verdict_per_node
from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.algorithm import AttemptDetails, StartIndex, schedule_pod
from scheduler.cycle.algorithm_rows import row_table_for
from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, NodeScore, SnapshotLister
from scheduler.framework.results import FitError, SchedulingError
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.framework.status import Status
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.normalize_score import default_normalize_score
from scheduler.testing import ListSnapshot, RecordingClient, make_node, make_pod


def number(info: NodeInfo) -> int:
    return int(info.node_name.removeprefix("node"))


class Picky:
    """Per-node methods only: rejects some nodes in its own words (both codes), may err on
    one node at Filter or at Score, and scores with a normalisation of its own."""

    name = "Picky"

    def __init__(self, filter_error_on: int = -1, score_error_on: int = -1) -> None:
        self.filter_error_on = filter_error_on
        self.score_error_on = score_error_on

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        n = number(node_info)
        if n == self.filter_error_on:
            return Status.error(f"cannot read node{n}")
        if n % 3 == 0:
            return Status.unschedulable(f"node{n} is a multiple of three")
        if n % 5 == 0:
            return Status.unresolvable("fives never fit", "nor will they")
        return Status.OK

    def score(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> tuple[int, Status]:
        n = number(node_info)
        if n == self.score_error_on:
            return 0, Status.error(f"no score for node{n}")
        return n * 37 % 41, Status.OK

    def score_extensions(self) -> Picky:
        return self

    def normalize_score(self, state: CycleState, pod: PodView, scores: list[NodeScore]) -> Status:
        return default_normalize_score(MAX_NODE_SCORE, True, scores)


class PickyWithRows(Picky):
    """Picky with row methods: what the adapter must be indistinguishable from."""

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict:
        return verdict_per_node(self.filter, state, pod, table, rows)

    def score_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> IntArray | None:
        values = [self.score(state, pod, table.infos[row]) for row in rows.tolist()]
        if any(not status.is_success for _, status in values):
            return None  # the runtime reports the error per node
        return np.array([value for value, _ in values], dtype=np.int64)

    def normalize_rows(self, state: CycleState, pod: PodView, scores: IntArray) -> IntArray:
        return default_normalize_rows(MAX_NODE_SCORE, True, scores)


class RecordingObserver:
    """Every metric the framework reports, as (kind, point, plugin, code or count)."""

    def __init__(self) -> None:
        self.records: list[tuple[str, str, str, Any]] = []

    def on_extension_point(self, point: str, status: Status, seconds: float) -> None:
        self.records.append(("point", point, "", status.code))

    def on_plugin(self, point: str, plugin: str, status: Status, seconds: float) -> None:
        self.records.append(("plugin", point, plugin, status.code))

    def on_plugin_evaluated(self, point: str, plugin: str, count: int) -> None:
        self.records.append(("evaluated", point, plugin, count))

    def on_permit_wait(self, result: str, seconds: float) -> None:
        pass


def snapshots(count: int) -> tuple[Snapshot, SnapshotLister]:
    """A cache's Snapshot (the row pass runs) and a plain lister over the same NodeInfos."""
    cache = Cache()
    for i in range(count):
        cache.add_node(
            make_node(f"node{i}", {"cpu": "4", "memory": "4Gi", "pods": "10"}, unschedulable=i == 7)
        )
    snapshot = cache.update_snapshot(Snapshot())
    return snapshot, ListSnapshot(list(snapshot.node_info_list))


async def attempt(
    plugin: Picky, lister: SnapshotLister, start: int, percentage: int | None
) -> tuple[Any, list[tuple[str, str, str, Any]]]:
    """What schedule_pod decided (statuses, messages, scores) and the metrics it reported."""
    observer = RecordingObserver()
    fwk = Framework(
        "p",
        {
            "filter": [(NodeUnschedulable(), 0), (plugin, 0)],  # type: ignore[list-item]
            "score": [(plugin, 2)],  # type: ignore[list-item]
        },
        HandleDeps(snapshot=lambda: lister, client=RecordingClient(), observer=observer),
    )
    is_table = isinstance(lister, Snapshot)
    assert (row_table_for(fwk, CycleState(), lister) is not None) == is_table
    state = CycleState()
    state.record_plugin_metrics = True
    details = AttemptDetails()
    index = StartIndex(start)
    pod = make_pod(containers=[{"cpu": "1"}])
    try:
        result = await schedule_pod(
            fwk, state, pod, lister,
            percentage_of_nodes_to_score=percentage, next_start_index=index,
            rng=random.Random(0), details=details,
        )  # fmt: skip
    except FitError as error:
        return (
            "fit error",
            str(error),
            statuses_of(error.diagnosis),
            index.value,
        ), observer.records
    except SchedulingError as error:
        return ("error", str(error), index.value), observer.records
    assert details.diagnosis is not None
    scores = details.scores
    if details.row_scores is not None:
        assert details.scored_nodes is not None
        names = [info.node_name for info in details.scored_nodes]
        scores = details.row_scores.node_plugin_scores(names)
    flat = [(s.name, [(p.name, p.score) for p in s.scores], s.total_score) for s in scores or ()]
    decided = (result.evaluated_nodes, result.feasible_nodes, index.value)
    return ("scheduled", decided, statuses_of(details.diagnosis), flat), observer.records


def statuses_of(diagnosis: Any) -> tuple[Any, ...]:
    by_node = {
        name: (status.code, status.reasons, status.plugin)
        for name, status in diagnosis.node_to_status.statuses.items()
    }
    return by_node, sorted(diagnosis.unschedulable_plugins)


async def check(
    count: int, start: int, percentage: int | None, filter_error_on: int, score_error_on: int
) -> None:
    table, plain = snapshots(count)
    start %= count
    per_node, _ = await attempt(Picky(filter_error_on, score_error_on), plain, start, percentage)
    adapted, adapted_metrics = await attempt(
        Picky(filter_error_on, score_error_on), table, start, percentage
    )
    native, native_metrics = await attempt(
        PickyWithRows(filter_error_on, score_error_on), table, start, percentage
    )
    assert adapted == per_node
    assert adapted == native
    assert adapted_metrics == native_metrics


CASES: Sequence[tuple[str, int, int, int | None, int, int]] = [
    # (id, nodes, start, percentage, node Filter errs on, node Score errs on)
    ("some rejected, scored", 20, 0, None, -1, -1),
    ("rotated start", 20, 13, None, -1, -1),
    ("every node rejected", 1, 0, None, -1, -1),
    ("few nodes", 3, 0, None, -1, -1),
    ("filter error", 20, 4, None, 8, -1),
    ("filter error past the stop point", 400, 0, 10, 399, -1),
    ("score error", 20, 0, None, -1, 11),
    ("sampling stops early", 400, 50, 10, -1, -1),
]


@pytest.mark.parametrize(
    ("count", "start", "percentage", "filter_error_on", "score_error_on"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
async def test_adapter_answers_as_the_per_node_path(
    count: int, start: int, percentage: int | None, filter_error_on: int, score_error_on: int
) -> None:
    await check(count, start, percentage, filter_error_on, score_error_on)


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(min_value=1, max_value=250),
    start=st.integers(min_value=0, max_value=249),
    percentage=st.sampled_from([None, 10, 50, 100]),
    filter_error_on=st.integers(min_value=-1, max_value=249),
    score_error_on=st.integers(min_value=-1, max_value=249),
)
async def test_adapter_answers_as_the_per_node_path_on_random_clusters(
    count: int, start: int, percentage: int | None, filter_error_on: int, score_error_on: int
) -> None:
    await check(count, start, percentage, filter_error_on, score_error_on)
