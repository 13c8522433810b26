"""schedule_pod and its parts, after upstream's pkg/scheduler/schedule_one_test.go."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.objects import PodView
from scheduler.cache.cache import Cache
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.algorithm import (
    AttemptDetails,
    StartIndex,
    num_feasible_nodes_to_find,
    schedule_pod,
    select_host,
)
from scheduler.cycle.algorithm_rows import row_table_for
from scheduler.framework.interface import CycleState, SnapshotLister
from scheduler.framework.results import FitError, NodePluginScores, with_post_filter_message
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.framework.status import Status
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.testing import RecordingClient, make_node, make_node_info, make_pod, snapshot_of


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        # schedule_one_test.go TestNumFeasibleNodesToFind
        (None, 10, 10),
        (40, 10, 10),
        (None, 1000, 420),
        (40, 1000, 400),
        (70, 1000, 700),
        (None, 6000, 300),
        (40, 6000, 2400),
        (100, 5000, 5000),
        (0, 5000, 500),
        (1, 5000, 100),  # never fewer than 100 nodes
    ],
)
def test_num_feasible_nodes_to_find(percentage: int | None, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def build(fit: NodeResourcesFit, snapshot: SnapshotLister) -> Framework:
    plugins = {
        "preFilter": [(fit, 0)],
        "filter": [(NodeUnschedulable(), 0), (fit, 0)],
        "preScore": [(fit, 0)],
        "score": [(fit, 1)],
    }
    return Framework(
        "default-scheduler",
        plugins,
        HandleDeps(snapshot=lambda: snapshot, client=RecordingClient()),
    )  # type: ignore[arg-type]


def cluster(cpus: Sequence[str], unschedulable: Sequence[bool] = ()) -> SnapshotLister:
    flags = list(unschedulable) + [False] * (len(cpus) - len(unschedulable))
    return snapshot_of(
        make_node_info(
            make_node(f"node{i}", {"cpu": cpu, "memory": "1Gi", "pods": "10"}, unschedulable=flag)
        )
        for i, (cpu, flag) in enumerate(zip(cpus, flags, strict=True))
    )


async def test_fit_error_message_counts_and_sorts_reasons() -> None:
    snapshot = cluster(["1", "1", "4", "1"], [False, False, True, False])
    fwk = build(NodeResourcesFit(None), snapshot)
    pod = make_pod(containers=[{"cpu": "2"}])
    with pytest.raises(FitError) as caught:
        await schedule_pod(
            fwk,
            CycleState(),
            pod,
            snapshot,
            percentage_of_nodes_to_score=None,
            next_start_index=StartIndex(),
            rng=random.Random(1),
        )
    error = caught.value
    assert (
        str(error) == "0/4 nodes are available: 1 node(s) were unschedulable, 3 Insufficient cpu."
    )
    assert error.diagnosis.unschedulable_plugins == {"NodeResourcesFit", "NodeUnschedulable"}
    never = "preemption: not eligible due to preemptionPolicy=Never."
    assert with_post_filter_message(error, never) == (
        "0/4 nodes are available: 1 node(s) were unschedulable, 3 Insufficient cpu."
        " preemption: not eligible due to preemptionPolicy=Never."
    )


async def test_pre_filter_rejection_message() -> None:
    snapshot = cluster(["1", "1"])

    class Rejecting:
        name = "Rejecting"

        def pre_filter(
            self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
        ) -> tuple[None, Status]:
            return None, Status.unresolvable("pod is not welcome")

        def pre_filter_extensions(self) -> None:
            return None

    fwk = Framework(
        "p",
        {"preFilter": [(Rejecting(), 0)]},
        HandleDeps(snapshot=lambda: snapshot, client=RecordingClient()),
    )  # type: ignore[dict-item]
    with pytest.raises(FitError) as caught:
        await schedule_pod(
            fwk,
            CycleState(),
            make_pod(),
            snapshot,
            percentage_of_nodes_to_score=None,
            next_start_index=StartIndex(),
            rng=random.Random(1),
        )
    assert str(caught.value) == "0/2 nodes are available: pod is not welcome."
    assert caught.value.diagnosis.unschedulable_plugins == {"Rejecting"}


async def test_picks_least_allocated_and_single_feasible_short_circuit() -> None:
    snapshot = cluster(["2", "8", "4"])
    fwk = build(NodeResourcesFit(None), snapshot)
    pod = make_pod(containers=[{"cpu": "1"}])
    result = await schedule_pod(
        fwk,
        CycleState(),
        pod,
        snapshot,
        percentage_of_nodes_to_score=None,
        next_start_index=StartIndex(),
        rng=random.Random(0),
    )
    assert (result.suggested_host, result.evaluated_nodes, result.feasible_nodes) == ("node1", 3, 3)
    big = make_pod(containers=[{"cpu": "6"}])
    result = await schedule_pod(
        fwk,
        CycleState(),
        big,
        snapshot,
        percentage_of_nodes_to_score=None,
        next_start_index=StartIndex(),
        rng=random.Random(0),
    )
    assert (result.suggested_host, result.evaluated_nodes, result.feasible_nodes) == ("node1", 3, 1)


async def test_nominated_node_is_tried_first() -> None:
    snapshot = cluster(["8", "2", "8"])
    fwk = build(NodeResourcesFit(None), snapshot)
    pod = make_pod(containers=[{"cpu": "1"}], nominated_node_name="node1")
    result = await schedule_pod(
        fwk,
        CycleState(),
        pod,
        snapshot,
        percentage_of_nodes_to_score=None,
        next_start_index=StartIndex(),
        rng=random.Random(0),
    )
    assert (result.suggested_host, result.evaluated_nodes) == ("node1", 1)


async def test_start_index_rotates_over_sampled_nodes() -> None:
    snapshot = cluster(["4"] * 200)
    fwk = build(NodeResourcesFit(None), snapshot)
    start = StartIndex()
    result = await schedule_pod(
        fwk,
        CycleState(),
        make_pod(),
        snapshot,
        percentage_of_nodes_to_score=50,
        next_start_index=start,
        rng=random.Random(0),
    )
    assert result.evaluated_nodes == 100
    assert start.value == 100
    await schedule_pod(
        fwk,
        CycleState(),
        make_pod(),
        snapshot,
        percentage_of_nodes_to_score=50,
        next_start_index=start,
        rng=random.Random(0),
    )
    assert start.value == 0


def test_select_host_breaks_ties_uniformly() -> None:
    scores = [
        NodePluginScores("a", total_score=5),
        NodePluginScores("b", total_score=9),
        NodePluginScores("c", total_score=9),
        NodePluginScores("d", total_score=9),
    ]
    rng = random.Random(42)
    picks = Counter(select_host(scores, rng) for _ in range(3000))
    assert set(picks) == {"b", "c", "d"}
    assert all(800 < count < 1200 for count in picks.values())


@settings(max_examples=30, deadline=None)
@given(
    cpus=st.lists(st.sampled_from(["0", "1", "2", "4"]), min_size=1, max_size=150),
    request=st.sampled_from(["0", "500m", "1", "3"]),
    start=st.integers(min_value=0, max_value=149),
    percentage=st.sampled_from([None, 10, 100]),
)
async def test_row_path_gives_identical_results(
    cpus: list[str], request: str, start: int, percentage: int | None
) -> None:
    """The NodeTable row pass (a cache's Snapshot) decides as the per-node scan (a plain
    lister over the same nodes): the same host, start index, statuses and FitError."""
    per_node = cluster(cpus)
    cache = Cache()
    for info in per_node.list():
        assert info.node is not None
        cache.add_node(info.node)
    rows = cache.update_snapshot(Snapshot())
    pod = make_pod(containers=[{"cpu": request}])
    outcomes = []
    for snapshot in (per_node, rows):
        fwk = build(NodeResourcesFit(None), snapshot)
        assert (row_table_for(fwk, CycleState(), snapshot) is not None) == (snapshot is rows)
        index = StartIndex(start % len(cpus))
        details = AttemptDetails()
        try:
            result = await schedule_pod(
                fwk,
                CycleState(),
                pod,
                snapshot,
                percentage_of_nodes_to_score=percentage,
                next_start_index=index,
                rng=random.Random(7),
                details=details,
            )
        except FitError as error:
            outcomes.append(
                (str(error), dict(error.diagnosis.node_to_status.statuses), index.value)
            )
            continue
        scores = details.scores
        if details.row_scores is not None:
            assert details.scored_nodes is not None
            names = [info.node_name for info in details.scored_nodes]
            scores = details.row_scores.node_plugin_scores(names)
        if scores is not None:
            # Ties are broken at random, by each path in its own way: any best node will do.
            top = max(s.total_score for s in scores)
            assert result.suggested_host in {s.name for s in scores if s.total_score == top}
        host = result.suggested_host if scores is None else ""
        outcomes.append((host, result.evaluated_nodes, result.feasible_nodes, scores, index.value))
    assert outcomes[0] == outcomes[1]
