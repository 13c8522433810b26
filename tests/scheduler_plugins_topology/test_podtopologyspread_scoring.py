"""PodTopologySpread PreScore / Score / NormalizeScore, ported from upstream's
pkg/scheduler/framework/plugins/podtopologyspread/scoring_test.go (TestPodTopologySpreadScore,
TestPreScoreStateEmptyNodes): inputs and expected normalized scores.

Every case runs both ways: PreScore from the NodeTable (scored per node and through
score_rows / normalize_rows) and the reference per-pod path (a non-Snapshot lister).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.api.objects import NodeView, PodView
from scheduler.framework.interface import CycleState, NodeScore
from scheduler.plugins.podtopologyspread import PodTopologySpread
from scheduler.plugins.podtopologyspread.args import (
    LIST_DEFAULTING,
    SYSTEM_DEFAULTING,
    PodTopologySpreadArgs,
)
from scheduler.plugins.podtopologyspread.plugin import PRE_SCORE_STATE_KEY
from scheduler.plugins.podtopologyspread.state import PreScoreState
from scheduler.testing import (
    FakeHandle,
    ListSnapshot,
    cluster_objects,
    exists,
    make_node,
    make_pod,
    make_snapshot,
    service,
    spread,
)

SOFT = "ScheduleAnyway"
HOST = "kubernetes.io/hostname"
FOO = exists("foo")


def host(name: str, **extra: str) -> NodeView:
    return make_node(name, labels={HOST: name, **extra})


def zoned(name: str, zone: str) -> NodeView:
    return make_node(name, labels={"zone": zone, HOST: name})


def foo_pods(**per_node: int) -> list[PodView]:
    """`per_node` matching pods (label foo) on each node (node_a=2 -> node-a)."""
    return [
        make_pod(node_name=node.replace("_", "-"), labels={"foo": ""})
        for node, count in per_node.items()
        for _ in range(count)
    ]


def scores_both_ways(
    pod: PodView,
    pods: list[PodView],
    nodes: list[NodeView],
    failed: list[NodeView],
    system: bool = False,
    objs: tuple[dict[str, Any], ...] = (),
) -> list[list[int]]:
    snapshot = make_snapshot([*nodes, *failed], pods)
    table = snapshot.node_table()
    infos = snapshot.node_info_list
    filtered = infos[: len(nodes)]
    args = PodTopologySpreadArgs((), SYSTEM_DEFAULTING if system else LIST_DEFAULTING)
    results = []
    for lister in (snapshot, ListSnapshot(list(infos))):
        plugin = PodTopologySpread(args, FakeHandle(lister, cluster_objects(*objs)))
        state = CycleState()
        assert plugin.pre_score(state, pod, filtered).is_success
        scores = []
        for info in filtered:
            value, status = plugin.score(state, pod, info)
            assert status.is_success
            scores.append(NodeScore(info.node_name, value))
        assert plugin.normalize_score(state, pod, scores).is_success
        results.append([s.score for s in scores])
        rows = np.arange(len(nodes), dtype=np.intp)
        raw = plugin.score_rows(state, pod, table, rows)
        assert raw is not None
        results.append(plugin.normalize_rows(state, pod, raw).tolist())
    return results


def one(max_skew: int, key: str = HOST, selector: dict[str, Any] | None = FOO) -> PodView:
    return make_pod(
        "p", labels={"foo": ""}, spread_constraints=[spread(max_skew, key, SOFT, selector)]
    )


ABCD = [host("node-a"), host("node-b"), host("node-c"), host("node-d")]
SPREAD_4321 = foo_pods(node_a=4, node_b=3, node_c=2, node_d=1)
SPREAD_42_13 = foo_pods(node_a=4, node_b=2, node_x=1, node_y=3)

SCORE_CASES: list[tuple[str, PodView, list[PodView], list[NodeView], list[NodeView], list[int]]] = [
    (
        "one constraint on node, no existing pods",
        one(1),
        [],
        [host("node-a"), host("node-b")],
        [],
        [100, 100],
    ),
    (
        "one constraint on node, only one node is candidate",
        one(1),
        foo_pods(node_a=2, node_b=1),
        [host("node-a")],
        [host("node-b")],
        [100],
    ),
    (
        "one constraint on node, all nodes have the same number of matching pods",
        one(1),
        foo_pods(node_a=1, node_b=1),
        [host("node-a"), host("node-b")],
        [],
        [100, 100],
    ),
    (
        "one constraint on node, all 4 nodes are candidates",
        one(1),
        foo_pods(node_a=2, node_b=1, node_d=3),
        ABCD,
        [],
        [20, 60, 100, 0],
    ),
    (
        "one constraint on node, null selector",
        one(1, selector=None),
        foo_pods(node_a=2, node_b=1, node_d=3),
        ABCD,
        [],
        [100, 100, 100, 100],
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=2",
        one(2),
        foo_pods(node_a=2, node_b=1, node_d=3),
        ABCD,
        [],
        [33, 66, 100, 16],
    ),
    (
        "one constraint on node, all 4 nodes are candidates, maxSkew=3",
        one(3),
        SPREAD_4321,
        ABCD,
        [],
        [44, 66, 77, 100],
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates",
        one(1),
        SPREAD_42_13,
        [host("node-a"), host("node-b"), host("node-x")],
        [host("node-y")],
        [33, 83, 100],
    ),
    (
        "one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match key",
        one(1),
        SPREAD_42_13,
        [host("node-a"), make_node("node-b", labels={"n": "node-b"}), host("node-x")],
        [host("node-y")],
        [16, 0, 100],
    ),
    (
        "one constraint on zone, 3 out of 4 nodes are candidates",
        one(1, "zone"),
        SPREAD_42_13,
        [zoned("node-a", "zone1"), zoned("node-b", "zone1"), zoned("node-x", "zone2")],
        [zoned("node-y", "zone2")],
        [75, 75, 100],
    ),
]


@pytest.mark.parametrize(
    ("pod", "pods", "nodes", "failed", "want"),
    [pytest.param(*case[1:], id=case[0]) for case in SCORE_CASES],
)
def test_pod_topology_spread_score(
    pod: PodView,
    pods: list[PodView],
    nodes: list[NodeView],
    failed: list[NodeView],
    want: list[int],
) -> None:
    assert scores_both_ways(pod, pods, nodes, failed) == [want] * 4


def test_system_defaulting_nodes_without_zone_pods_match_service() -> None:
    pod = make_pod("p", labels={"foo": ""})
    got = scores_both_ways(pod, SPREAD_4321, ABCD, [], True, (service({"foo": ""}),))
    # Same scores as if we were using one spreading constraint.
    assert got == [[44, 66, 77, 100]] * 4


def test_pre_score_skips_without_soft_constraints() -> None:
    snapshot = make_snapshot([host("node-a")])
    plugin = PodTopologySpread(PodTopologySpreadArgs((), LIST_DEFAULTING), FakeHandle(snapshot))
    hard = make_pod("p", spread_constraints=[spread(1, "zone", "DoNotSchedule", FOO)])
    assert plugin.pre_score(CycleState(), hard, snapshot.node_info_list).is_skip
    # System defaulting, but nothing selects the pod: no default constraints.
    system = PodTopologySpread(PodTopologySpreadArgs(), FakeHandle(snapshot))
    assert system.pre_score(CycleState(), make_pod("q"), snapshot.node_info_list).is_skip


# -- TestPreScoreStateEmptyNodes -----------------------------------------------------------


def test_pre_score_state_two_constraints_zone_and_hostname() -> None:
    """'normal case' of TestPreScoreStateEmptyNodes: weights and per-zone counts."""
    pod = make_pod(
        "p",
        labels={"foo": ""},
        spread_constraints=[spread(1, "zone", SOFT, FOO), spread(1, HOST, SOFT, FOO)],
    )
    nodes = [
        make_node("node-a", labels={"zone": "zone1", HOST: "node-a"}),
        make_node("node-b", labels={"zone": "zone1", HOST: "node-b"}),
        make_node("node-x", labels={"zone": "zone2", HOST: "node-x"}),
    ]
    snapshot = make_snapshot(nodes)
    for lister in (snapshot, ListSnapshot(list(snapshot.node_info_list))):
        plugin = PodTopologySpread(PodTopologySpreadArgs((), LIST_DEFAULTING), FakeHandle(lister))
        state = CycleState()
        assert plugin.pre_score(state, pod, snapshot.node_info_list).is_success
        s: PreScoreState = state.read(PRE_SCORE_STATE_KEY)
        assert s.ignored_nodes == frozenset()
        assert s.topology_value_to_pod_counts == [{"zone1": 0, "zone2": 0}, {}]
        assert s.topology_normalizing_weight == [
            pytest.approx(np.log(4)),
            pytest.approx(np.log(5)),
        ]


def test_pre_score_state_ignores_nodes_missing_keys() -> None:
    """'node-x doesn't have label zone' of TestPreScoreStateEmptyNodes."""
    pod = make_pod(
        "p",
        labels={"foo": ""},
        spread_constraints=[spread(1, "zone", SOFT, FOO), spread(1, HOST, SOFT, FOO)],
    )
    nodes = [
        make_node("node-a", labels={"zone": "zone1", HOST: "node-a"}),
        make_node("node-b", labels={"zone": "zone1", HOST: "node-b"}),
        make_node("node-x", labels={HOST: "node-x"}),
    ]
    snapshot = make_snapshot(nodes)
    for lister in (snapshot, ListSnapshot(list(snapshot.node_info_list))):
        plugin = PodTopologySpread(PodTopologySpreadArgs((), LIST_DEFAULTING), FakeHandle(lister))
        state = CycleState()
        assert plugin.pre_score(state, pod, snapshot.node_info_list).is_success
        s: PreScoreState = state.read(PRE_SCORE_STATE_KEY)
        assert s.ignored_nodes == frozenset({"node-x"})
        assert s.topology_value_to_pod_counts == [{"zone1": 0}, {}]
        assert s.topology_normalizing_weight == [
            pytest.approx(np.log(3)),
            pytest.approx(np.log(4)),
        ]
