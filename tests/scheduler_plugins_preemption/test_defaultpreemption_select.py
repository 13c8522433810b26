"""Choosing the node to preempt on, ported from upstream's
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go
(TestSelectBestCandidate) and pkg/scheduler/framework/preemption/preemption_test.go
(TestNodesWherePreemptionMightHelp, TestSelectCandidate with custom score functions), plus
pickOneNodeForPreemption's criteria one by one and the helpers of pkg/scheduler/util/utils.go
(MoreImportantPod, GetEarliestPodStartTime) and filterPodsWithPDBViolation.

Start times: upstream's epochTime1..6 are a nanosecond apart; metav1.Time carries seconds, so
the ported cases use epoch(1)..epoch(6) seconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from scheduler.api.objects import PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.framework.interface import CycleState, NodeToStatus
from scheduler.framework.status import Code, Status
from scheduler.plugins.defaultpreemption.evaluator import (
    Candidate,
    Evaluator,
    ScoreFunc,
    ShortcutFunc,
    Victims,
    nodes_for_status_code,
    pick_one_node_for_preemption,
)
from scheduler.plugins.defaultpreemption.util import (
    BudgetLookup,
    budgets_from,
    earliest_pod_start_time,
    filter_pods_with_pdb_violation,
    more_important_pod,
    pod_start_time,
    sort_by_importance,
)
from scheduler.testing import make_node, make_node_info, make_pod, make_snapshot
from scheduler.testing.preemption import (
    HIGH_PRIORITY,
    LARGE_RES,
    LOW_PRIORITY,
    MEDIUM_RES,
    MID_PRIORITY,
    NEG_PRIORITY,
    SMALL_RES,
    VERY_HIGH_PRIORITY,
    VERY_LARGE_RES,
    build,
    epoch,
    make_pdb,
)

E0 = epoch(0)


def p(name: str, node: str, priority: int, req: dict[str, str], start: str = E0) -> PodView:
    return make_pod(
        name, uid=name, node_name=node, priority=priority, requests=req, start_time=start
    )


SELECT_BEST_CASES = [
    pytest.param(
        2,
        HIGH_PRIORITY,
        [p("p1", "node1", MID_PRIORITY, LARGE_RES), p("p2", "node2", MID_PRIORITY, LARGE_RES)],
        ["node1", "node2"],
        id="a pod that fits on both nodes when lower priority pods are preempted",
    ),
    pytest.param(
        3,
        HIGH_PRIORITY,
        [
            p("p1.1", "node1", MID_PRIORITY, MEDIUM_RES),
            p("p1.2", "node1", MID_PRIORITY, LARGE_RES),
            p("p2.1", "node2", MID_PRIORITY, MEDIUM_RES),
            p("p2.2", "node2", LOW_PRIORITY, MEDIUM_RES),
            p("p3.1", "node3", LOW_PRIORITY, MEDIUM_RES),
            p("p3.2", "node3", LOW_PRIORITY, MEDIUM_RES),
        ],
        ["node3"],
        id="node with min highest priority pod is picked",
    ),
    pytest.param(
        3,
        HIGH_PRIORITY,
        [
            p("p1.1", "node1", MID_PRIORITY, MEDIUM_RES),
            p("p1.2", "node1", MID_PRIORITY, LARGE_RES),
            p("p2.1", "node2", MID_PRIORITY, LARGE_RES),
            p("p2.2", "node2", LOW_PRIORITY, MEDIUM_RES),
            p("p3.1", "node3", MID_PRIORITY, MEDIUM_RES),
            p("p3.2", "node3", MID_PRIORITY, MEDIUM_RES),
        ],
        ["node2"],
        id="when highest priorities are the same, minimum sum of priorities is picked",
    ),
    pytest.param(
        3,
        HIGH_PRIORITY,
        [
            p("p1.1", "node1", MID_PRIORITY, SMALL_RES),
            p("p1.2", "node1", NEG_PRIORITY, SMALL_RES),
            p("p1.3", "node1", MID_PRIORITY, SMALL_RES),
            p("p1.4", "node1", NEG_PRIORITY, SMALL_RES),
            p("p2.1", "node2", MID_PRIORITY, LARGE_RES),
            p("p2.2", "node2", NEG_PRIORITY, MEDIUM_RES),
            p("p3.1", "node3", MID_PRIORITY, MEDIUM_RES),
            p("p3.2", "node3", NEG_PRIORITY, SMALL_RES),
            p("p3.3", "node3", LOW_PRIORITY, SMALL_RES),
        ],
        ["node2"],
        id="when highest priority and sum are the same, minimum number of pods is picked",
    ),
    pytest.param(
        3,
        HIGH_PRIORITY,
        [
            p("p1.1", "node1", MID_PRIORITY, SMALL_RES),
            p("p1.2", "node1", NEG_PRIORITY, SMALL_RES),
            p("p1.3", "node1", NEG_PRIORITY, SMALL_RES),
            p("p2.1", "node2", MID_PRIORITY, LARGE_RES),
            p("p2.2", "node2", NEG_PRIORITY, MEDIUM_RES),
            p("p3.1", "node3", MID_PRIORITY, MEDIUM_RES),
            p("p3.2", "node3", NEG_PRIORITY, SMALL_RES),
            p("p3.3", "node3", LOW_PRIORITY, SMALL_RES),
        ],
        ["node2"],
        id="sum of adjusted priorities is considered",
    ),
    pytest.param(
        4,
        VERY_HIGH_PRIORITY,
        [
            p("p1.1", "node1", MID_PRIORITY, SMALL_RES),
            p("p1.2", "node1", LOW_PRIORITY, SMALL_RES),
            p("p1.3", "node1", LOW_PRIORITY, SMALL_RES),
            p("p2.1", "node2", HIGH_PRIORITY, LARGE_RES),
            p("p3.1", "node3", MID_PRIORITY, MEDIUM_RES),
            p("p3.2", "node3", LOW_PRIORITY, SMALL_RES),
            p("p3.3", "node3", LOW_PRIORITY, SMALL_RES),
            p("p3.4", "node3", LOW_PRIORITY, MEDIUM_RES),
            p("p4.1", "node4", MID_PRIORITY, MEDIUM_RES),
            p("p4.2", "node4", MID_PRIORITY, SMALL_RES),
            p("p4.3", "node4", MID_PRIORITY, SMALL_RES),
            p("p4.4", "node4", NEG_PRIORITY, SMALL_RES),
        ],
        ["node1"],
        id="non-overlapping lowest high priority, sum priorities, and number of pods",
    ),
    pytest.param(
        3,
        HIGH_PRIORITY,
        [
            p("p1.1", "node1", MID_PRIORITY, MEDIUM_RES, epoch(2)),
            p("p1.2", "node1", MID_PRIORITY, MEDIUM_RES, epoch(2)),
            p("p2.1", "node2", MID_PRIORITY, MEDIUM_RES, epoch(3)),
            p("p2.2", "node2", MID_PRIORITY, MEDIUM_RES, epoch(3)),
            p("p3.1", "node3", MID_PRIORITY, MEDIUM_RES, epoch(1)),
            p("p3.2", "node3", MID_PRIORITY, MEDIUM_RES, epoch(1)),
        ],
        ["node2"],
        id="same priority, same number of victims, different start time for each node's pod",
    ),
    pytest.param(
        3,
        HIGH_PRIORITY,
        [
            p("p1.1", "node1", MID_PRIORITY, MEDIUM_RES, epoch(4)),
            p("p1.2", "node1", MID_PRIORITY, MEDIUM_RES, epoch(2)),
            p("p2.1", "node2", MID_PRIORITY, MEDIUM_RES, epoch(5)),
            p("p2.2", "node2", MID_PRIORITY, MEDIUM_RES, epoch(1)),
            p("p3.1", "node3", MID_PRIORITY, MEDIUM_RES, epoch(3)),
            p("p3.2", "node3", MID_PRIORITY, MEDIUM_RES, epoch(6)),
        ],
        ["node3"],
        id="same priority, same number of victims, different start time for all pods",
    ),
    pytest.param(
        3,
        HIGH_PRIORITY,
        [
            p("p1.1", "node1", LOW_PRIORITY, MEDIUM_RES, epoch(4)),
            p("p1.2", "node1", MID_PRIORITY, MEDIUM_RES, epoch(2)),
            p("p2.1", "node2", MID_PRIORITY, MEDIUM_RES, epoch(6)),
            p("p2.2", "node2", LOW_PRIORITY, MEDIUM_RES, epoch(1)),
            p("p3.1", "node3", LOW_PRIORITY, MEDIUM_RES, epoch(3)),
            p("p3.2", "node3", MID_PRIORITY, MEDIUM_RES, epoch(5)),
        ],
        ["node2"],
        id="different priority, same number of victims, different start time for all pods",
    ),
]


@pytest.mark.parametrize(("node_count", "priority", "pods", "expected"), SELECT_BEST_CASES)
def test_select_best_candidate(
    node_count: int, priority: int, pods: list[PodView], expected: list[str]
) -> None:
    nodes = [make_node(f"node{i}", capacity=VERY_LARGE_RES) for i in range(1, node_count + 1)]
    h = build(nodes, pods)
    pod = make_pod("p", uid="p", priority=priority, requests=VERY_LARGE_RES)
    offset, num = h.plugin.get_offset_and_num_candidates(node_count)
    candidates, _, _ = h.plugin.evaluator.dry_run_preemption(
        h.pre_filtered_state(pod), pod, list(h.snapshot.list()), budgets_from([]), offset, num
    )
    selected = h.plugin.evaluator.select_candidate(candidates)
    assert selected is not None and selected.name in expected


# --- preemption_test.go TestSelectCandidate: a plugin's own score functions -------------------


class FewestContainersInterface:
    """Upstream's FakePreemptionScorePostFilterPlugin: each node's first pod is the victim,
    one PDB violation each; the node whose victims have the fewest containers wins."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return 0, num_nodes

    def candidates_to_victims_map(self, candidates: Sequence[Candidate]) -> dict[str, Victims]:
        return {cand.name: cand.victims for cand in candidates}

    def pod_eligible_to_preempt_others(
        self, pod: PodView, nominated_node_status: Status | None
    ) -> tuple[bool, str]:
        return True, ""

    def select_victims_on_node(
        self, state: CycleState, pod: PodView, node_info: NodeInfo, budgets_for: BudgetLookup
    ) -> tuple[list[PodView], int, Status]:
        return [node_info.pods[0]], 1, Status.OK

    def dry_run_shortcut(self, state: CycleState, pod: PodView) -> ShortcutFunc | None:
        return None

    def ordered_score_funcs(self, victims: dict[str, Victims]) -> list[ScoreFunc] | None:
        def fewest_containers(node: str) -> float:
            return -sum(len(pod.raw["spec"]["containers"]) for pod in victims[node].pods)

        return [fewest_containers]


def test_select_candidate_with_custom_score_funcs() -> None:
    pods = [
        make_pod("p1.1", uid="p1.1", node_name="node1", priority=MID_PRIORITY, containers=[{}] * 2),
        make_pod("p2.1", uid="p2.1", node_name="node2", priority=MID_PRIORITY, containers=[{}] * 1),
        make_pod("p3.1", uid="p3.1", node_name="node3", priority=MID_PRIORITY, containers=[{}] * 3),
    ]
    nodes = [make_node(f"node{i}", capacity=VERY_LARGE_RES) for i in range(1, 4)]
    h = build(nodes, pods, plugins=())
    evaluator = Evaluator("FakePreemptionScorePostFilter", h.framework, FewestContainersInterface())
    for pod in pods:  # upstream runs one dry run per test pod
        candidates, _, _ = evaluator.dry_run_preemption(
            CycleState(), pod, list(h.snapshot.list()), budgets_from([]), 0, 3
        )
        selected = evaluator.select_candidate(candidates)
        assert selected is not None and selected.name == "node2"


def test_select_candidate_edge_cases() -> None:
    h = build([make_node("node1", capacity={})], plugins=())
    only = Candidate("node1", Victims((make_pod("v", uid="v"),)))
    assert h.plugin.evaluator.select_candidate([]) is None
    assert h.plugin.evaluator.select_candidate([only]) is only


# --- pickOneNodeForPreemption, criterion by criterion ----------------------------------------


def victims(*pods: tuple[int, int], violations: int = 0) -> Victims:
    """Victims from (priority, start second) pairs, most important first."""
    built = [
        make_pod(
            f"v{i}-{prio}-{start}",
            uid=f"v{i}-{prio}-{start}",
            priority=prio,
            start_time=epoch(start),
        )
        for i, (prio, start) in enumerate(pods)
    ]
    return Victims(tuple(sort_by_importance(built)), violations)


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        pytest.param({}, "", id="no candidates"),
        pytest.param({"a": victims((100, 0))}, "a", id="single candidate"),
        pytest.param(
            {"a": victims((0, 0), violations=2), "b": victims((1000, 0), violations=1)},
            "b",
            id="fewest PDB violations first",
        ),
        pytest.param(
            {"a": victims((1000, 0)), "b": victims((100, 0), (100, 0), (100, 0))},
            "b",
            id="then lowest highest priority",
        ),
        pytest.param(
            {"a": victims((100, 0), (50, 0)), "b": victims((100, 0), (10, 0))},
            "b",
            id="then smallest sum of priorities",
        ),
        pytest.param(
            {"a": victims((-100, 0), (-100, 0)), "b": victims((-100, 0))},
            "b",
            id="negative priorities still count per victim (MaxInt32+1 shift)",
        ),
        pytest.param(
            {"a": victims((100, 0), (0, 0), (0, 0)), "b": victims((100, 0), (0, 0))},
            "b",
            id="sum shift makes fewer victims win over equal raw sums",
        ),
        pytest.param(
            {"a": victims((100, 1), (100, 5)), "b": victims((100, 3), (100, 4))},
            "b",
            id="then latest earliest start of the highest-priority victims",
        ),
        pytest.param(
            {"a": victims((100, 7), (0, 1)), "b": victims((100, 3), (0, 9))},
            "a",
            id="start time looks at the highest-priority victims only",
        ),
        pytest.param(
            {"a": victims((100, 2)), "b": victims((100, 2)), "c": victims((100, 2))},
            "a",
            id="full tie: the first candidate",
        ),
    ],
)
def test_pick_one_node_for_preemption(nodes: dict[str, Victims], expected: str) -> None:
    assert pick_one_node_for_preemption(nodes) == expected


# --- TestNodesWherePreemptionMightHelp (NodeToStatus.NodesForStatusCode(Unschedulable)) ------

AFFINITY = "node(s) didn't match Pod's node affinity/selector"
NODE_NAME = "node(s) didn't match the requested node name"
TAINT = "node(s) had untolerated taint(s)"
AFFINITY_RULES = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_RULES = "node(s) didn't match pod anti-affinity rules"
UNSCHEDULABLE_NODE = "node(s) were unschedulable"
UNKNOWN_CONDITION = "node(s) had unknown conditions"
SPREAD = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"


def U(reason: str = "") -> Status:
    return Status.unschedulable(*([reason] if reason else []))


def UU(reason: str = "") -> Status:
    return Status.unresolvable(*([reason] if reason else []))


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        pytest.param(
            {
                "node1": UU(AFFINITY),
                "node2": UU(NODE_NAME),
                "node3": UU(TAINT),
                "node4": UU(AFFINITY_RULES),
            },
            set(),
            id="No node should be attempted",
        ),
        pytest.param(
            {
                "node1": U(ANTI_AFFINITY_RULES),
                "node2": UU(NODE_NAME),
                "node3": UU(UNSCHEDULABLE_NODE),
                "node4": U("Unschedulable"),
            },
            {"node1", "node4"},
            id="ErrReasonAntiAffinityRulesNotMatch should be tried",
        ),
        pytest.param(
            {
                "node1": UU(AFFINITY_RULES),
                "node2": U(ANTI_AFFINITY_RULES),
                "node3": U("Unschedulable"),
                "node4": U("Unschedulable"),
            },
            {"node2", "node3", "node4"},
            id="ErrReasonAffinityRulesNotMatch should not be tried",
        ),
        pytest.param(
            {
                "node1": UU("node(s) had no available disk"),
                "node2": U("Insufficient memory"),
                "node3": U("Unschedulable"),
                "node4": U("Unschedulable"),
            },
            {"node2", "node3", "node4"},
            id="Mix of failed predicates works fine",
        ),
        pytest.param(
            {
                "node1": UU(UNKNOWN_CONDITION),
                "node2": U("Unschedulable"),
                "node3": U("Unschedulable"),
                "node4": U("Unschedulable"),
            },
            {"node2", "node3", "node4"},
            id="Node condition errors should be considered unresolvable",
        ),
        pytest.param(
            {
                "node1": UU("node(s) had no available volume zone"),
                "node2": UU("node(s) didn't match PersistentVolume's node affinity"),
                "node3": UU("node(s) didn't find available persistent volumes to bind"),
                "node4": U("Unschedulable"),
            },
            {"node4"},
            id="ErrVolume... errors should not be tried",
        ),
        pytest.param(
            {
                "node1": U(SPREAD),
                "node2": UU(NODE_NAME),
                "node3": U(SPREAD),
                "node4": U("Unschedulable"),
            },
            {"node1", "node3", "node4"},
            id="ErrReasonConstraintsNotMatch should be tried",
        ),
        pytest.param(
            {"node1": U(), "node2": UU(), "node3": U(), "node4": UU()},
            {"node1", "node3"},
            id="UnschedulableAndUnresolvable status should be skipped but Unschedulable tried",
        ),
        pytest.param(
            {"node1": U(), "node2": UU(SPREAD_LABEL), "node3": U(), "node4": UU()},
            {"node1", "node3"},
            id="ErrReasonNodeLabelNotMatch should not be tried",
        ),
        pytest.param(
            {"node1": Status.pending("waiting"), "node2": U(), "node3": Status.error("boom")},
            {"node2"},
            id="Pending and Error statuses are not tried",
        ),
    ],
)
def test_nodes_where_preemption_might_help(statuses: dict[str, Status], expected: set[str]) -> None:
    snapshot = make_snapshot([make_node(f"node{i}", capacity={}) for i in range(1, 5)])
    nodes = nodes_for_status_code(NodeToStatus(statuses), snapshot, Code.UNSCHEDULABLE)
    assert {info.node_name for info in nodes} == expected


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        pytest.param({}, ["node1", "node2", "node3", "node4"], id="all absent"),
        pytest.param({"node2": UU(), "node4": U()}, ["node1", "node3", "node4"], id="mixed"),
        pytest.param({"node9": U()}, ["node1", "node2", "node3", "node4"], id="unknown node"),
    ],
)
def test_nodes_for_status_code_with_unschedulable_absent(
    statuses: dict[str, Status], expected: list[str]
) -> None:
    """Nodes absent from the map count with the absent status (upstream's NodesForStatusCode
    when absentNodesStatus matches the code): all nodes, in snapshot order, minus the others."""
    snapshot = make_snapshot([make_node(f"node{i}", capacity={}) for i in range(1, 5)])
    nodes = nodes_for_status_code(NodeToStatus(statuses, U()), snapshot, Code.UNSCHEDULABLE)
    assert [info.node_name for info in nodes] == expected


# --- util.go and filterPodsWithPDBViolation ---------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param((100, 5), (10, 1), True, id="higher priority wins"),
        pytest.param((10, 1), (100, 5), False, id="lower priority loses"),
        pytest.param((100, 1), (100, 5), True, id="equal priority: earlier start wins"),
        pytest.param((100, 5), (100, 1), False, id="equal priority: later start loses"),
        pytest.param((100, 5), (100, 5), False, id="tie"),
        pytest.param((100, 5), (100, None), True, id="started beats not started"),
        pytest.param((100, None), (100, None), False, id="neither started"),
    ],
)
def test_more_important_pod(
    a: tuple[int, int | None], b: tuple[int, int | None], expected: bool
) -> None:
    def build_pod(name: str, spec: tuple[int, int | None]) -> PodView:
        start = "" if spec[1] is None else epoch(spec[1])
        return make_pod(name, uid=name, priority=spec[0], start_time=start)

    assert more_important_pod(build_pod("a", a), build_pod("b", b)) is expected


def test_pod_start_time_parses_fractions_and_tolerates_garbage() -> None:
    assert pod_start_time(make_pod("a", uid="a", start_time="1970-01-01T00:00:01.5Z")) == 1.5
    assert pod_start_time(make_pod("b", uid="b", start_time="yesterday")) == math.inf
    assert pod_start_time(make_pod("c", uid="c")) == math.inf


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        pytest.param([], None, id="no pods"),
        pytest.param([(100, 3), (100, 1), (0, 0)], 1, id="earliest among the highest priority"),
        pytest.param([(0, 0), (100, 3), (100, 2)], 2, id="a later higher priority resets"),
        pytest.param([(100, 3), (200, 9), (100, 0)], 9, id="only the highest priority counts"),
    ],
)
def test_earliest_pod_start_time(pods: list[tuple[int, int]], expected: int | None) -> None:
    built = [
        make_pod(f"p{i}", uid=f"p{i}", priority=prio, start_time=epoch(start))
        for i, (prio, start) in enumerate(pods)
    ]
    assert earliest_pod_start_time(built) == expected


def test_filter_pods_with_pdb_violation() -> None:
    app = {"app": "foo"}
    pods = [
        make_pod("a", uid="a", labels=app),
        make_pod("b", uid="b", labels=app),
        make_pod("c", uid="c", labels=app),
        make_pod("d", uid="d", labels={"app": "bar"}),
        make_pod("e", uid="e"),
        make_pod("f", uid="f", labels=app, namespace="other"),
    ]
    budgets = [
        make_pdb("one-left", match_labels=app, disruptions_allowed=2, disrupted_pods=["b"]),
        make_pdb("none-left", match_labels={"app": "bar"}),
        make_pdb("everything", match_labels={}),  # an empty selector selects nothing
        make_pdb("other-ns", namespace="other", match_labels=app, disruptions_allowed=1),
    ]
    violating, non_violating = filter_pods_with_pdb_violation(pods, budgets_from(budgets))
    # a takes one, b is already disrupted, c takes the second; d has a budget of 0.
    assert [pod.name for pod in violating] == ["d"]
    assert [pod.name for pod in non_violating] == ["a", "b", "c", "e", "f"]
    more = [*pods[:3], make_pod("g", uid="g", labels=app)]
    violating, _ = filter_pods_with_pdb_violation(more, budgets_from(budgets))
    assert [pod.name for pod in violating] == ["g"]


def test_sort_by_importance_is_stable_for_ties() -> None:
    pods = [
        make_pod("x", uid="x", priority=1),
        make_pod("y", uid="y", priority=5),
        make_pod("z", uid="z", priority=1),
        make_pod("w", uid="w", priority=5, start_time=epoch(1)),
    ]
    assert [pod.name for pod in sort_by_importance(pods)] == ["w", "y", "x", "z"]
    by_name = sort_by_importance(pods, lambda a, b: a.name < b.name)
    assert [pod.name for pod in by_name] == ["w", "x", "y", "z"]


def test_node_info_copies_are_untouched_by_dry_runs() -> None:
    """The dry run works on copies: the snapshot's NodeInfos keep their pods."""
    node = make_node("node1", capacity=VERY_LARGE_RES)
    victim = make_pod("v", uid="v", node_name="node1", priority=LOW_PRIORITY, requests=LARGE_RES)
    h = build([node], [victim])
    pod = make_pod("p", uid="p", priority=HIGH_PRIORITY, requests=LARGE_RES)
    before = [p.name for p in h.snapshot.list()[0].pods]
    h.plugin.evaluator.dry_run_preemption(
        h.pre_filtered_state(pod), pod, list(h.snapshot.list()), budgets_from([]), 0, 1
    )
    assert [p.name for p in h.snapshot.list()[0].pods] == before
    assert make_node_info(node, [victim]).requested == h.snapshot.list()[0].requested
