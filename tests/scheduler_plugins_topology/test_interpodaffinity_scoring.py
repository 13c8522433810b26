"""InterPodAffinity PreScore / Score / NormalizeScore, ported from upstream's
pkg/scheduler/framework/plugins/interpodaffinity/scoring_test.go (TestPreferredAffinity,
TestPreferredAffinityWithHardPodAffinitySymmetricWeight): inputs, args and normalized scores.

Every case runs on a real Snapshot (the NodeTable fast path, with score_rows and
normalize_rows checked against the per-node calls) and on a plain SnapshotLister (the
reference per-pod path).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.api.objects import NodeView, PodView
from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, NodeScore
from scheduler.framework.status import Code, Status
from scheduler.plugins.interpodaffinity import (
    PRE_SCORE_STATE_KEY,
    InterPodAffinity,
    InterPodAffinityArgs,
)
from scheduler.plugins.interpodaffinity.scoring import ScoreTally, normalize, normalize_array
from scheduler.testing import (
    FakeHandle,
    MakePod,
    cluster_with_namespaces,
    expr,
    make_list_snapshot,
    make_node,
    make_snapshot,
    pod_affinity,
    term,
    weighted,
)

MAX = MAX_NODE_SCORE
NAMESPACES = {
    "subteam1.team1": {"team": "team1"},
    "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"},
    "subteam2.team2": {"team": "team2"},
}
RG_CHINA = {"region": "China"}
RG_INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}
TEAM1 = {"matchExpressions": [expr("team", "In", "team1")]}
BAD_VALUE = "{{.bad-value.}}"


def _security(value: str) -> dict[str, Any]:
    return expr("security", "In", value)


STAY_WITH_S1_IN_REGION = pod_affinity(preferred=[weighted(5, term("region", _security("S1")))])
STAY_WITH_S2_IN_REGION = pod_affinity(preferred=[weighted(6, term("region", _security("S2")))])
AFFINITY3 = pod_affinity(
    preferred=[
        weighted(8, term("region", expr("security", "NotIn", "S1"), expr("security", "In", "S2"))),
        weighted(2, term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist"))),
    ]
)
HARD_AFFINITY = pod_affinity(
    required=[
        term("region", expr("security", "In", "S1", "value2")),
        term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist")),
    ]
)
AWAY_FROM_S1_IN_AZ = pod_affinity(anti_preferred=[weighted(5, term("az", _security("S1")))])
AWAY_FROM_S2_IN_AZ = pod_affinity(anti_preferred=[weighted(5, term("az", _security("S2")))])
STAY_WITH_S1_AWAY_FROM_S2 = pod_affinity(
    preferred=[weighted(8, term("region", _security("S1")))],
    anti_preferred=[weighted(5, term("az", _security("S2")))],
)
_NS_TERM = term("region", _security("S1"), namespaces=["subteam2.team2"], namespace_selector=TEAM1)
AFFINITY_NAMESPACE_SELECTOR = pod_affinity(preferred=[weighted(5, _NS_TERM)])
ANTI_AFFINITY_NAMESPACE_SELECTOR = pod_affinity(anti_preferred=[weighted(5, _NS_TERM)])
INVALID_AFFINITY = pod_affinity(preferred=[weighted(8, term("region", _security(BAD_VALUE)))])
INVALID_ANTI_AFFINITY = pod_affinity(anti_preferred=[weighted(5, term("az", _security(BAD_VALUE)))])


def pod(labels: dict[str, str] | None = None, spec_affinity: Any = None, ns: str = "") -> PodView:
    builder = MakePod().namespace(ns).labels(labels or {})
    if spec_affinity:
        builder.affinity(spec_affinity)
    return builder.obj()


def on(
    node: str, labels: dict[str, str] | None = None, spec_affinity: Any = None, ns: str = ""
) -> PodView:
    builder = MakePod().namespace(ns).labels(labels or {}).node(node)
    if spec_affinity:
        builder.affinity(spec_affinity)
    return builder.obj()


def nodes(*labels: dict[str, str]) -> list[NodeView]:
    return [make_node(f"node{i + 1}", labels=node_labels) for i, node_labels in enumerate(labels)]


def run_score(
    incoming: PodView,
    pods: list[PodView],
    node_list: list[NodeView],
    args: InterPodAffinityArgs,
    fast: bool,
) -> tuple[Status, list[int]]:
    """PreScore status and, when it succeeded, the normalized scores in node order."""
    snapshot = (make_snapshot if fast else make_list_snapshot)(node_list, pods)
    plugin = InterPodAffinity(args, FakeHandle(snapshot, cluster_with_namespaces(NAMESPACES)))
    state = CycleState()
    infos = snapshot.list()
    status = plugin.pre_score(state, incoming, list(infos))
    if not status.is_success:
        return status, []
    scores: list[NodeScore] = []
    for info in infos:
        value, score_status = plugin.score(state, incoming, info)
        assert score_status.is_success
        scores.append(NodeScore(info.node_name, value))
    raw = [s.score for s in scores]
    assert plugin.normalize_score(state, incoming, scores).is_success
    normalized = [s.score for s in scores]
    if fast:
        table = make_snapshot(node_list, pods).node_table()
        rows = np.arange(len(table), dtype=np.intp)
        by_rows = plugin.score_rows(state, incoming, table, rows)
        assert by_rows is not None and by_rows.tolist() == raw
        assert plugin.normalize_rows(state, incoming, by_rows).tolist() == normalized
    return status, normalized


# (name, pod, existing pods, nodes, ignorePreferredTermsOfExistingPods, want status, want scores)
PREFERRED: list[tuple[str, PodView, list[PodView], list[NodeView], bool, Status | None, list[int]]]
PREFERRED = [
    (
        "all nodes are same priority as Affinity is nil",
        pod(S1),
        [],
        nodes(RG_CHINA, RG_INDIA, AZ1),
        False,
        Status.skip(),
        [],
    ),
    (
        "Affinity: matching topology key and pods gets a high score",
        pod(S1, STAY_WITH_S1_IN_REGION),
        [on("node1", S1), on("node2", S2), on("node3", S1)],
        nodes(RG_CHINA, RG_INDIA, AZ1),
        False,
        None,
        [MAX, 0, 0],
    ),
    (
        "All the nodes sharing the topology value of a matching pod get the same score",
        pod(None, STAY_WITH_S1_IN_REGION),
        [on("node1", S1)],
        nodes(RG_CHINA, RG_CHINA_AZ1, RG_INDIA),
        False,
        None,
        [MAX, MAX, 0],
    ),
    (
        "Affinity: the region with more matching pods gets the high score",
        pod(S1, STAY_WITH_S2_IN_REGION),
        [
            on("node1", S2),
            on("node1", S2),
            on("node2", S2),
            on("node3", S2),
            on("node4", S2),
            on("node5", S2),
        ],
        nodes(RG_CHINA, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA),
        False,
        None,
        [MAX, 0, MAX, MAX, 0],
    ),
    (
        "Affinity: different label operators and values, including some match failures",
        pod(S1, AFFINITY3),
        [on("node1", S1), on("node2", S2), on("node3", S1)],
        nodes(RG_CHINA, RG_INDIA, AZ1),
        False,
        None,
        [20, MAX, 0],
    ),
    (
        "Affinity symmetry: existing pods' preferred affinity",
        pod(S2),
        [on("node1", S1, STAY_WITH_S1_IN_REGION), on("node2", S2, STAY_WITH_S2_IN_REGION)],
        nodes(RG_CHINA, RG_INDIA, AZ1),
        False,
        None,
        [0, MAX, 0],
    ),
    (
        "Affinity symmetry with namespace selector",
        pod(S1, ns="subteam1.team1"),
        [on("node1", S1, AFFINITY_NAMESPACE_SELECTOR), on("node2", S2, STAY_WITH_S2_IN_REGION)],
        nodes(RG_CHINA, RG_INDIA, AZ1),
        False,
        None,
        [MAX, 0, 0],
    ),
    (
        "AntiAffinity symmetry with namespace selector",
        pod(S1, ns="subteam1.team1"),
        [
            on("node1", S1, ANTI_AFFINITY_NAMESPACE_SELECTOR),
            on("node2", S2, STAY_WITH_S2_IN_REGION),
        ],
        nodes(RG_CHINA, RG_INDIA, AZ1),
        False,
        None,
        [0, MAX, MAX],
    ),
    (
        "Affinity symmetry: existing pods' required affinity",
        pod(S1),
        [on("node1", S1, HARD_AFFINITY), on("node2", S2, HARD_AFFINITY)],
        nodes(RG_CHINA, RG_INDIA, AZ1),
        False,
        None,
        [MAX, MAX, 0],
    ),
    (
        "Anti Affinity: pod that does not match existing pods in node will get high score",
        pod(S1, AWAY_FROM_S1_IN_AZ),
        [on("node1", S1), on("node2", S2)],
        nodes(AZ1, RG_CHINA),
        False,
        None,
        [0, MAX],
    ),
    (
        "Anti Affinity: node lacking the topology key gets the higher score",
        pod(S1, AWAY_FROM_S1_IN_AZ),
        [on("node1", S1), on("node2", S1)],
        nodes(AZ1, RG_CHINA),
        False,
        None,
        [0, MAX],
    ),
    (
        "Anti Affinity: the node with more matching pods gets the low score",
        pod(S1, AWAY_FROM_S1_IN_AZ),
        [on("node1", S1), on("node1", S1), on("node2", S2)],
        nodes(AZ1, RG_INDIA),
        False,
        None,
        [0, MAX],
    ),
    (
        "Anti Affinity symmetry: existing pods' preferred anti-affinity",
        pod(S2),
        [on("node1", S1, AWAY_FROM_S2_IN_AZ), on("node2", S2, AWAY_FROM_S1_IN_AZ)],
        nodes(AZ1, AZ2),
        False,
        None,
        [0, MAX],
    ),
    (
        "Affinity and Anti Affinity: preferred terms of both",
        pod(S1, STAY_WITH_S1_AWAY_FROM_S2),
        [on("node1", S1), on("node2", S1)],
        nodes(RG_CHINA, AZ1),
        False,
        None,
        [MAX, 0],
    ),
    (
        "Affinity and Anti Affinity: the pod and existing pods have the same labels",
        pod(S1, STAY_WITH_S1_AWAY_FROM_S2),
        [
            on("node1", S1),
            on("node1", S1),
            on("node2", S1),
            on("node3", S1),
            on("node3", S1),
            on("node4", S1),
            on("node5", S1),
        ],
        nodes(RG_CHINA_AZ1, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA),
        False,
        None,
        [MAX, 0, MAX, MAX, 0],
    ),
    (
        "Affinity, Anti Affinity and symmetry together",
        pod(S1, STAY_WITH_S1_AWAY_FROM_S2),
        [
            on("node1", S1),
            on("node2", S2),
            on("node3", None, STAY_WITH_S1_AWAY_FROM_S2),
            on("node4", None, AWAY_FROM_S1_IN_AZ),
        ],
        nodes(RG_CHINA, AZ1, RG_INDIA, AZ2),
        False,
        None,
        [MAX, 0, MAX, 0],
    ),
    (
        "Avoid panic when partial nodes in a topology don't have pods with affinity",
        pod(S1),
        [on("node1", S1), on("node2", None, STAY_WITH_S1_AWAY_FROM_S2)],
        nodes(RG_CHINA, RG_CHINA),
        False,
        None,
        [0, 0],
    ),
    (
        "Affinity with pods matching NamespaceSelector",
        pod(S1, AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        nodes(RG_CHINA, RG_INDIA),
        False,
        None,
        [MAX, 0],
    ),
    (
        "Affinity with pods matching both NamespaceSelector and Namespaces fields",
        pod(S1, AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam2.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        nodes(RG_CHINA, RG_INDIA),
        False,
        None,
        [MAX, 0],
    ),
    (
        "Anti-affinity with pods matching NamespaceSelector",
        pod(S1, ANTI_AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        nodes(RG_CHINA, RG_INDIA),
        False,
        None,
        [0, MAX],
    ),
    (
        "Anti-affinity with pods matching both NamespaceSelector and Namespaces fields",
        pod(S1, ANTI_AFFINITY_NAMESPACE_SELECTOR, ns="subteam1.team1"),
        [
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam1.team1"),
            on("node1", S1, ns="subteam2.team2"),
            on("node2", S1, ns="subteam2.team1"),
        ],
        nodes(RG_CHINA, RG_INDIA),
        False,
        None,
        [0, MAX],
    ),
    (
        "Ignore preferred terms of existing pods",
        pod(S2),
        [on("node1", S1, STAY_WITH_S1_AWAY_FROM_S2), on("node2", S2, STAY_WITH_S2_IN_REGION)],
        nodes(RG_CHINA, RG_INDIA),
        True,
        Status.skip(),
        [],
    ),
    (
        "Do not ignore preferred terms of existing pods",
        pod(S2),
        [on("node1", S1, STAY_WITH_S1_AWAY_FROM_S2), on("node2", S2, STAY_WITH_S2_IN_REGION)],
        nodes(RG_CHINA, RG_INDIA),
        False,
        None,
        [0, MAX],
    ),
    ("No nodes to score", pod(S2), [], [], False, Status.skip(), []),
]


@pytest.mark.parametrize("fast", [True, False], ids=["table", "reference"])
@pytest.mark.parametrize(
    ("name", "incoming", "pods", "node_list", "ignore", "want_status", "want_scores"),
    PREFERRED,
    ids=[case[0] for case in PREFERRED],
)
def test_preferred_affinity(
    name: str,
    incoming: PodView,
    pods: list[PodView],
    node_list: list[NodeView],
    ignore: bool,
    want_status: Status | None,
    want_scores: list[int],
    fast: bool,
) -> None:
    args = InterPodAffinityArgs(1, ignore)
    status, scores = run_score(incoming, pods, node_list, args, fast)
    assert status == (want_status or Status.OK)
    assert scores == want_scores


@pytest.mark.parametrize("fast", [True, False], ids=["table", "reference"])
@pytest.mark.parametrize(
    "spec_affinity", [INVALID_AFFINITY, INVALID_ANTI_AFFINITY], ids=["affinity", "anti-affinity"]
)
def test_invalid_terms_fail_pre_score(spec_affinity: Any, fast: bool) -> None:
    status, _ = run_score(
        pod(None, spec_affinity), [], nodes(RG_CHINA, RG_CHINA), InterPodAffinityArgs(), fast
    )
    assert status.code == Code.ERROR
    assert status.message.startswith("failed to parse pod: ")
    assert BAD_VALUE in status.message


HARD_POD_AFFINITY = pod_affinity(
    required=[
        term(
            "region",
            expr("service", "In", "S1"),
            namespaces=["", "subteam2.team2"],
            namespace_selector=TEAM1,
        )
    ]
)
SERVICE_S1 = {"service": "S1"}
HARD_PODS = [on("node1", None, HARD_POD_AFFINITY), on("node2", None, HARD_POD_AFFINITY)]

# (name, pod, hardPodAffinityWeight, want status, want scores)
HARD_WEIGHT: list[tuple[str, PodView, int, Status | None, list[int]]] = [
    ("with default weight", pod(SERVICE_S1), 1, None, [MAX, MAX, 0]),
    ("with zero weight", pod(SERVICE_S1), 0, Status.skip(), []),
    ("with no matching namespace", pod(SERVICE_S1, ns="subteam1.team2"), 1, Status.skip(), []),
    (
        "with matching NamespaceSelector",
        pod(SERVICE_S1, ns="subteam1.team1"),
        1,
        None,
        [MAX, MAX, 0],
    ),
    ("with matching Namespaces", pod(SERVICE_S1, ns="subteam2.team2"), 1, None, [MAX, MAX, 0]),
]


@pytest.mark.parametrize("fast", [True, False], ids=["table", "reference"])
@pytest.mark.parametrize(
    ("name", "incoming", "weight", "want_status", "want_scores"),
    HARD_WEIGHT,
    ids=[case[0] for case in HARD_WEIGHT],
)
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(
    name: str,
    incoming: PodView,
    weight: int,
    want_status: Status | None,
    want_scores: list[int],
    fast: bool,
) -> None:
    status, scores = run_score(
        incoming, HARD_PODS, nodes(RG_CHINA, RG_INDIA, AZ1), InterPodAffinityArgs(weight), fast
    )
    assert status == (want_status or Status.OK)
    assert scores == want_scores


def test_score_without_pre_score_state() -> None:
    snapshot = make_snapshot([make_node("node1", labels=RG_CHINA)])
    plugin = InterPodAffinity(InterPodAffinityArgs(), FakeHandle(snapshot))
    _, status = plugin.score(CycleState(), pod(S1), snapshot.node_info_list[0])
    assert status.code == Code.ERROR
    assert PRE_SCORE_STATE_KEY in status.message
    assert plugin.normalize_score(CycleState(), pod(S1), []).code == Code.ERROR


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ([], []),
        ([7, 7, 7], [0, 0, 0]),
        ([-5, 0, 5], [0, 50, 100]),
        ([-8, -3], [0, 100]),
        ([1, 2, 4], [0, 33, 100]),
        ([10, 3, 3, 9], [100, 0, 0, 85]),
    ],
)
def test_normalize_min_max(raw: list[int], want: list[int]) -> None:
    scores = [NodeScore(f"n{i}", value) for i, value in enumerate(raw)]
    normalize(scores)
    assert [s.score for s in scores] == want
    assert normalize_array(np.array(raw, dtype=np.int64)).tolist() == want


def test_score_tally_keeps_upstreams_map_entries_including_net_zero_ones() -> None:
    """ScoreTally (the fast path's score map as arrays) has an entry wherever a term added
    something, even when the weights cancel, as upstream's scoreMap does."""
    snapshot = make_snapshot([make_node(f"n{i}", labels={"zone": z}) for i, z in enumerate("aab")])
    table = snapshot.node_table()
    tally = ScoreTally(table)
    assert not tally.any() and tally.score_map() == {}
    tally.add("zone", np.array([1, 0, 0]), 5)  # a pod on n0 (zone a)
    tally.add("zone", np.array([0, 1, 1]), -5)  # pods on n1 (zone a) and n2 (zone b)
    assert tally.any()
    assert tally.score_map() == {"zone": {"a": 0, "b": -5}}
    rows = np.arange(len(table), dtype=np.intp)
    assert tally.score_rows(rows).tolist() == [0, 0, -5]
