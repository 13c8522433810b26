"""Dry runs and victim selection, ported from upstream's
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go (TestDryRunPreemption
with its filter-call counts, TestCustomSelection, TestCustomOrdering) and
pkg/scheduler/framework/preemption/preemption_test.go (TestDryRunPreemption with a fake
preemption interface).

Upstream draws the dry run's offset from rand.New(rand.NewSource(4)).Int31n; the offsets that
produced (written in upstream's comments: 4, then 1, then 3 for five nodes) are passed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.api.objects import PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.framework.interface import CycleState
from scheduler.framework.registry import PluginEntry
from scheduler.framework.status import Code, Status
from scheduler.listers.cluster_objects import DisruptionBudget
from scheduler.plugins.defaultpreemption import DefaultPreemptionArgs
from scheduler.plugins.defaultpreemption.evaluator import (
    Candidate,
    Evaluator,
    ScoreFunc,
    ShortcutFunc,
    Victims,
)
from scheduler.plugins.defaultpreemption.util import (
    BudgetLookup,
    budgets_from,
    pod_start_time,
)
from scheduler.testing import exists, expr, make_node, make_pod, pod_affinity, spread, term
from scheduler.testing.preemption import (
    HIGH_PRIORITY,
    LARGE_RES,
    LOW_PRIORITY,
    MEDIUM_RES,
    MID_PRIORITY,
    SMALL_RES,
    VERY_HIGH_PRIORITY,
    VERY_LARGE_RES,
    build,
    epoch,
    make_pdb,
    topology_node,
)


class FakeFilter:
    """Upstream's tf.FakeFilterPlugin: counts Filter calls, fails nodes with the given code."""

    name = "FakeFilter"

    def __init__(self, args: dict[str, Any] | None, handle: Any) -> None:
        self.code = Code((args or {}).get("code", Code.SUCCESS))
        self.num_calls = 0

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        self.num_calls += 1
        return Status.OK if self.code == Code.SUCCESS else Status(self.code)


class TrueFilter:
    name = "TrueFilter"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        return Status.OK


class FalseFilter(TrueFilter):
    name = "FalseFilter"

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        return Status.unschedulable("injecting failure for pod test-filter")


class MatchFilter(TrueFilter):
    """Passes the node named like the pod."""

    name = "MatchFilter"

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        if node_info.node_name == pod.name:
            return Status.OK
        return Status.unschedulable("node name doesn't match the pod's name")


EXTRA = [
    PluginEntry("FakeFilter", FakeFilter, lambda raw: dict(raw or {})),
    PluginEntry("TrueFilter", TrueFilter),
    PluginEntry("FalseFilter", FalseFilter),
    PluginEntry("MatchFilter", MatchFilter),
]

FIT = "NodeResourcesFit"
P = HIGH_PRIORITY
AB = {"app": "foo"}


def c(node: str, *victims: str, violations: int = 0) -> tuple[str, list[str], int]:
    return node, list(victims), violations


DRY_RUN_CASES = [
    pytest.param(
        ("FalseFilter",),
        ["node1", "node2"],
        [make_pod("p", uid="p", priority=P)],
        [
            make_pod("p1", uid="p1", node_name="node1", priority=MID_PRIORITY),
            make_pod("p2", uid="p2", node_name="node2", priority=MID_PRIORITY),
        ],
        [],
        Code.SUCCESS,
        None,
        [0],
        [[]],
        [2],
        id="a pod that does not fit on any node",
    ),
    pytest.param(
        ("TrueFilter",),
        ["node1", "node2"],
        [make_pod("p", uid="p", priority=P)],
        [
            make_pod("p1", uid="p1", node_name="node1", priority=MID_PRIORITY),
            make_pod("p2", uid="p2", node_name="node2", priority=MID_PRIORITY),
        ],
        [],
        Code.UNSCHEDULABLE,
        None,
        [0],
        [[]],
        [2],
        id="a pod that fits with no preemption",
    ),
    pytest.param(
        ("MatchFilter",),
        ["node1", "node2"],
        [make_pod("node1", uid="node1", priority=P)],
        [
            make_pod("p1", uid="p1", node_name="node1", priority=MID_PRIORITY),
            make_pod("p2", uid="p2", node_name="node2", priority=MID_PRIORITY),
        ],
        [],
        Code.UNSCHEDULABLE,
        None,
        [0],
        [[]],
        [2],
        id="a pod that fits on one node with no preemption",
    ),
    pytest.param(
        (FIT,),
        ["node1", "node2"],
        [make_pod("p", uid="p", priority=P, requests=LARGE_RES)],
        [
            make_pod("p1", uid="p1", node_name="node1", priority=MID_PRIORITY, requests=LARGE_RES),
            make_pod("p2", uid="p2", node_name="node2", priority=MID_PRIORITY, requests=LARGE_RES),
        ],
        [],
        Code.SUCCESS,
        None,
        [0],
        [[c("node1", "p1"), c("node2", "p2")]],
        [4],
        id="a pod that fits on both nodes when lower priority pods are preempted",
    ),
    pytest.param(
        (FIT,),
        ["node1", "node2"],
        [make_pod("p", uid="p", priority=LOW_PRIORITY, requests=LARGE_RES)],
        [
            make_pod("p1", uid="p1", node_name="node1", priority=MID_PRIORITY, requests=LARGE_RES),
            make_pod("p2", uid="p2", node_name="node2", priority=MID_PRIORITY, requests=LARGE_RES),
        ],
        [],
        Code.SUCCESS,
        None,
        [0],
        [[]],
        [0],
        id="a pod that would fit on the nodes, but other pods running are higher priority",
    ),
    pytest.param(
        (FIT,),
        ["node1", "node2"],
        [make_pod("p", uid="p", priority=P, requests=LARGE_RES)],
        [
            make_pod(
                "p1.1", uid="p1.1", node_name="node1", priority=LOW_PRIORITY, requests=SMALL_RES
            ),
            make_pod(
                "p1.2", uid="p1.2", node_name="node1", priority=MID_PRIORITY, requests=LARGE_RES
            ),
            make_pod("p2", uid="p2", node_name="node2", priority=MID_PRIORITY, requests=LARGE_RES),
        ],
        [],
        Code.SUCCESS,
        None,
        [0],
        [[c("node1", "p1.2"), c("node2", "p2")]],
        [5],
        id="medium priority pod is preempted, but lower priority one stays as it is small",
    ),
    pytest.param(
        (FIT,),
        ["node1", "node2"],
        [make_pod("p", uid="p", priority=P, requests=LARGE_RES)],
        [
            make_pod(
                "p1.1", uid="p1.1", node_name="node1", priority=MID_PRIORITY, requests=SMALL_RES
            ),
            make_pod(
                "p1.2", uid="p1.2", node_name="node1", priority=LOW_PRIORITY, requests=SMALL_RES
            ),
            make_pod(
                "p1.3", uid="p1.3", node_name="node1", priority=MID_PRIORITY, requests=MEDIUM_RES
            ),
            make_pod(
                "p1.4", uid="p1.4", node_name="node1", priority=HIGH_PRIORITY, requests=SMALL_RES
            ),
            make_pod("p2", uid="p2", node_name="node2", priority=HIGH_PRIORITY, requests=LARGE_RES),
        ],
        [],
        Code.SUCCESS,
        None,
        [0],
        [[c("node1", "p1.2", "p1.3")]],
        [4],
        id="mixed priority pods are preempted",
    ),
    pytest.param(
        (FIT,),
        ["node1", "node2"],
        [make_pod("p", uid="p", priority=P, requests=LARGE_RES)],
        [
            make_pod(
                "p1.1",
                uid="p1.1",
                node_name="node1",
                priority=LOW_PRIORITY,
                requests=SMALL_RES,
                start_time=epoch(5),
            ),
            make_pod(
                "p1.2",
                uid="p1.2",
                node_name="node1",
                priority=LOW_PRIORITY,
                requests=SMALL_RES,
                start_time=epoch(4),
            ),
            make_pod(
                "p1.3",
                uid="p1.3",
                node_name="node1",
                priority=MID_PRIORITY,
                requests=MEDIUM_RES,
                start_time=epoch(3),
            ),
            make_pod(
                "p1.4",
                uid="p1.4",
                node_name="node1",
                priority=HIGH_PRIORITY,
                requests=SMALL_RES,
                start_time=epoch(2),
            ),
            make_pod(
                "p2",
                uid="p2",
                node_name="node2",
                priority=HIGH_PRIORITY,
                requests=LARGE_RES,
                start_time=epoch(1),
            ),
        ],
        [],
        Code.SUCCESS,
        None,
        [0],
        [[c("node1", "p1.1", "p1.3")]],
        [4],
        id="mixed priority pods are preempted, pick later StartTime one when priorities are equal",
    ),
    pytest.param(
        (FIT, "InterPodAffinity"),
        ["node1", "node2"],
        [make_pod("p", uid="p", priority=P, requests=SMALL_RES, labels={"foo": ""})],
        [
            make_pod(
                "p1.1",
                uid="p1.1",
                node_name="node1",
                priority=LOW_PRIORITY,
                requests=SMALL_RES,
                labels={"foo": ""},
                affinity=pod_affinity(anti_required=[term("hostname", expr("foo", "Exists"))]),
            ),
            make_pod(
                "p1.2", uid="p1.2", node_name="node1", priority=MID_PRIORITY, requests=SMALL_RES
            ),
            make_pod(
                "p1.3", uid="p1.3", node_name="node1", priority=HIGH_PRIORITY, requests=SMALL_RES
            ),
            make_pod("p2", uid="p2", node_name="node2", priority=HIGH_PRIORITY, requests=SMALL_RES),
        ],
        [],
        Code.SUCCESS,
        None,
        [0],
        [[c("node1", "p1.1")]],
        [3],
        id="pod with anti-affinity is preempted",
    ),
    pytest.param(
        ("PodTopologySpread",),
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        [
            make_pod(
                "p",
                uid="p",
                priority=P,
                labels={"foo": ""},
                spread_constraints=[
                    spread(1, "zone", selector=exists("foo")),
                    spread(1, "hostname", selector=exists("foo")),
                ],
            )
        ],
        [
            make_pod(
                "pod-a1",
                uid="pod-a1",
                node_name="node-a",
                labels={"foo": ""},
                priority=MID_PRIORITY,
            ),
            make_pod(
                "pod-a2",
                uid="pod-a2",
                node_name="node-a",
                labels={"foo": ""},
                priority=LOW_PRIORITY,
            ),
            make_pod(
                "pod-b1",
                uid="pod-b1",
                node_name="node-b",
                labels={"foo": ""},
                priority=LOW_PRIORITY,
            ),
            make_pod(
                "pod-x1",
                uid="pod-x1",
                node_name="node-x",
                labels={"foo": ""},
                priority=HIGH_PRIORITY,
            ),
            make_pod(
                "pod-x2",
                uid="pod-x2",
                node_name="node-x",
                labels={"foo": ""},
                priority=HIGH_PRIORITY,
            ),
        ],
        [],
        Code.SUCCESS,
        None,
        [0],
        [[c("node-a", "pod-a2"), c("node-b", "pod-b1")]],
        [5],
        id="preemption to resolve pod topology spread filter failure",
    ),
    pytest.param(
        (FIT,),
        ["node1", "node2"],
        [make_pod("p", uid="p", priority=P, requests=LARGE_RES)],
        [
            make_pod("p1", uid="p1", node_name="node1", priority=MID_PRIORITY, requests=LARGE_RES),
            make_pod("p2", uid="p2", node_name="node2", priority=MID_PRIORITY, requests=LARGE_RES),
        ],
        [],
        Code.UNSCHEDULABLE,
        None,
        [0],
        [[]],
        [2],
        id="get Unschedulable in the preemption phase when the filter plugins filtering the nodes",
    ),
    pytest.param(
        (FIT,),
        ["node1"],
        [make_pod("p", uid="p", priority=P, requests=VERY_LARGE_RES)],
        [
            make_pod(
                "p1.1",
                uid="p1.1",
                node_name="node1",
                labels=AB,
                priority=MID_PRIORITY,
                requests=MEDIUM_RES,
            ),
            make_pod(
                "p1.2",
                uid="p1.2",
                node_name="node1",
                labels=AB,
                priority=MID_PRIORITY,
                requests=MEDIUM_RES,
            ),
        ],
        [make_pdb("pdb", match_labels=AB, disruptions_allowed=1)],
        Code.SUCCESS,
        None,
        [0],
        [[c("node1", "p1.1", "p1.2", violations=1)]],
        [3],
        id="preemption with violation of same pdb",
    ),
    pytest.param(
        (FIT,),
        ["node1"],
        [make_pod("p", uid="p", priority=P, requests=VERY_LARGE_RES)],
        [
            make_pod(
                "p1.1",
                uid="p1.1",
                node_name="node1",
                labels=AB,
                priority=MID_PRIORITY,
                requests=MEDIUM_RES,
            ),
            make_pod(
                "p1.2",
                uid="p1.2",
                node_name="node1",
                labels=AB,
                priority=MID_PRIORITY,
                requests=MEDIUM_RES,
            ),
        ],
        [make_pdb("pdb", match_labels=AB, disruptions_allowed=1, disrupted_pods=["p2"])],
        Code.SUCCESS,
        None,
        [0],
        [[c("node1", "p1.1", "p1.2", violations=1)]],
        [3],
        id="pdb with processed eviction, the victim doesn't belong to DisruptedPods",
    ),
    pytest.param(
        (FIT,),
        ["node1"],
        [make_pod("p", uid="p", priority=P, requests=VERY_LARGE_RES)],
        [
            make_pod(
                "p1.1",
                uid="p1.1",
                node_name="node1",
                labels=AB,
                priority=MID_PRIORITY,
                requests=MEDIUM_RES,
            ),
            make_pod(
                "p1.2",
                uid="p1.2",
                node_name="node1",
                labels=AB,
                priority=MID_PRIORITY,
                requests=MEDIUM_RES,
            ),
        ],
        [make_pdb("pdb", match_labels=AB, disruptions_allowed=1, disrupted_pods=["p1.2"])],
        Code.SUCCESS,
        None,
        [0],
        [[c("node1", "p1.1", "p1.2", violations=0)]],
        [3],
        id="pdb with processed eviction, the victim belongs to DisruptedPods",
    ),
    pytest.param(
        (FIT,),
        ["node1"],
        [make_pod("p", uid="p", priority=P, requests=VERY_LARGE_RES)],
        [
            make_pod(
                "p1.1",
                uid="p1.1",
                node_name="node1",
                labels=AB,
                priority=MID_PRIORITY,
                requests=MEDIUM_RES,
            ),
            make_pod(
                "p1.2",
                uid="p1.2",
                node_name="node1",
                labels=AB,
                priority=MID_PRIORITY,
                requests=MEDIUM_RES,
            ),
            make_pod(
                "p1.3",
                uid="p1.3",
                node_name="node1",
                labels=AB,
                priority=MID_PRIORITY,
                requests=MEDIUM_RES,
            ),
        ],
        [make_pdb("pdb", match_labels=AB, disruptions_allowed=1, disrupted_pods=["p1.3"])],
        Code.SUCCESS,
        None,
        [0],
        [[c("node1", "p1.1", "p1.2", "p1.3", violations=1)]],
        [4],
        id="pdb with processed eviction, the DisruptedPods victim is treated as non-violating",
    ),
    pytest.param(
        (FIT,),
        ["node1", "node2", "node3", "node4", "node5"],
        [make_pod("p", uid="p", priority=P, requests=LARGE_RES)],
        [
            make_pod(
                f"p{i}",
                uid=f"p{i}",
                node_name=f"node{i}",
                priority=MID_PRIORITY,
                requests=LARGE_RES,
            )
            for i in range(1, 6)
        ],
        [],
        Code.SUCCESS,
        DefaultPreemptionArgs(40, 1),
        [4],
        [[c("node1", "p1"), c("node5", "p5")]],
        [4],
        id="all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
    ),
    pytest.param(
        (FIT,),
        ["node1", "node2", "node3", "node4", "node5"],
        [make_pod("p", uid="p", priority=P, requests=LARGE_RES)],
        [
            make_pod("p1", uid="p1", node_name="node1", priority=MID_PRIORITY, requests=LARGE_RES),
            make_pod(
                "p2", uid="p2", node_name="node2", priority=VERY_HIGH_PRIORITY, requests=LARGE_RES
            ),
            make_pod("p3", uid="p3", node_name="node3", priority=MID_PRIORITY, requests=LARGE_RES),
            make_pod("p4", uid="p4", node_name="node4", priority=MID_PRIORITY, requests=LARGE_RES),
            make_pod(
                "p5", uid="p5", node_name="node5", priority=VERY_HIGH_PRIORITY, requests=LARGE_RES
            ),
        ],
        [],
        Code.SUCCESS,
        DefaultPreemptionArgs(40, 1),
        [4],
        [[c("node1", "p1"), c("node3", "p3")]],
        [4],
        id="some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
    ),
    pytest.param(
        (FIT,),
        ["node1", "node2", "node3", "node4", "node5"],
        [make_pod(f"tp{i}", uid=f"tp{i}", priority=P, requests=LARGE_RES) for i in range(1, 4)],
        [
            make_pod(
                f"p{i}",
                uid=f"p{i}",
                node_name=f"node{i}",
                priority=MID_PRIORITY,
                requests=LARGE_RES,
            )
            for i in range(1, 6)
        ],
        [],
        Code.SUCCESS,
        DefaultPreemptionArgs(40, 1),
        [4, 1, 3],
        [
            [c("node1", "p1"), c("node5", "p5")],
            [c("node2", "p2"), c("node3", "p3")],
            [c("node4", "p4"), c("node5", "p5")],
        ],
        [4, 4, 4],
        id="preemption offset across multiple scheduling cycles and wrap around",
    ),
    pytest.param(
        (FIT,),
        ["node1", "node2", "node3", "node4", "node5"],
        [make_pod("p", uid="p", priority=P, requests=LARGE_RES)],
        [
            make_pod(
                "p1",
                uid="p1",
                node_name="node1",
                labels=AB,
                priority=MID_PRIORITY,
                requests=LARGE_RES,
            ),
            make_pod(
                "p2",
                uid="p2",
                node_name="node2",
                labels=AB,
                priority=MID_PRIORITY,
                requests=LARGE_RES,
            ),
            make_pod("p3", uid="p3", node_name="node3", priority=MID_PRIORITY, requests=LARGE_RES),
            make_pod("p4", uid="p4", node_name="node4", priority=MID_PRIORITY, requests=LARGE_RES),
            make_pod(
                "p5",
                uid="p5",
                node_name="node5",
                labels=AB,
                priority=MID_PRIORITY,
                requests=LARGE_RES,
            ),
        ],
        [make_pdb("pdb", match_labels=AB, disruptions_allowed=0)],
        Code.SUCCESS,
        DefaultPreemptionArgs(40, 2),
        [4],
        [[c("node1", "p1", violations=1), c("node3", "p3"), c("node5", "p5", violations=1)]],
        [8],
        id="preemption looks past numCandidates until a non-PDB violating node is found",
    ),
]


@pytest.mark.parametrize(
    (
        "plugins",
        "node_names",
        "test_pods",
        "init_pods",
        "pdbs",
        "fake_code",
        "args",
        "offsets",
        "expected",
        "expected_filter_calls",
    ),
    DRY_RUN_CASES,
)
def test_dry_run_preemption(
    plugins: tuple[str, ...],
    node_names: list[str],
    test_pods: list[PodView],
    init_pods: list[PodView],
    pdbs: list[DisruptionBudget],
    fake_code: Code,
    args: DefaultPreemptionArgs | None,
    offsets: list[int],
    expected: list[list[tuple[str, list[str], int]]],
    expected_filter_calls: list[int],
) -> None:
    nodes = sorted((topology_node(n) for n in node_names), key=lambda n: n.name)
    h = build(nodes, init_pods, plugins=("FakeFilter", *plugins), extra=EXTRA)
    fake = h.framework.plugins["FakeFilter"]
    assert isinstance(fake, FakeFilter)
    fake.code = fake_code
    if args is not None:
        h.plugin.args = args
    node_infos = list(h.snapshot.list())
    previous_calls = 0
    for cycle, pod in enumerate(test_pods):
        state = h.pre_filtered_state(pod)
        _, num_candidates = h.plugin.get_offset_and_num_candidates(len(node_infos))
        got, _, _ = h.plugin.evaluator.dry_run_preemption(
            state, pod, node_infos, budgets_from(pdbs), offsets[cycle], num_candidates
        )
        summary = sorted(
            (cand.name, sorted(v.name for v in cand.victims.pods), cand.victims.num_pdb_violations)
            for cand in got
        )
        assert summary == expected[cycle], f"cycle {cycle}"
        assert fake.num_calls - previous_calls == expected_filter_calls[cycle], f"cycle {cycle}"
        previous_calls = fake.num_calls


def test_dry_run_statuses_and_errors() -> None:
    """Nodes that are not candidates keep why in the dry run's NodeToStatus."""
    pod = make_pod("p", uid="p", priority=P, requests=LARGE_RES)
    nodes = [
        make_node("node1", capacity={"cpu": "200m", "memory": "400"}),
        make_node("node2", capacity={}),
    ]
    h = build(nodes, [make_pod("p1", uid="p1", node_name="node1")])
    _, statuses, errors = h.plugin.evaluator.dry_run_preemption(
        h.pre_filtered_state(pod), pod, list(h.snapshot.list()), budgets_from([]), 0, 2
    )
    assert errors == []
    assert statuses.statuses["node1"].message == "Insufficient cpu"
    assert statuses.statuses["node2"] == Status.unresolvable(
        "No preemption victims found for incoming pod"
    )


# --- preemption_test.go TestDryRunPreemption: the Evaluator over a fake interface -----------


class FakePostFilterInterface:
    """Upstream's FakePostFilterPlugin: every node's first pod is the victim."""

    def __init__(self, num_violating: int = 0) -> None:
        self.num_violating = num_violating

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
        return [node_info.pods[0]], self.num_violating, Status.OK

    def dry_run_shortcut(self, state: CycleState, pod: PodView) -> ShortcutFunc | None:
        return None

    def ordered_score_funcs(self, victims: dict[str, Victims]) -> list[ScoreFunc] | None:
        return None


@pytest.mark.parametrize(
    ("num_violating", "expected"),
    [
        pytest.param(0, [("node1", ["p1"], 0), ("node2", ["p2"], 0)], id="no pdb violation"),
        pytest.param(
            1, [("node1", ["p1"], 1), ("node2", ["p2"], 1)], id="pdb violation on each node"
        ),
    ],
)
def test_evaluator_dry_run_with_fake_interface(
    num_violating: int, expected: list[tuple[str, list[str], int]]
) -> None:
    nodes = [
        make_node("node1", capacity=VERY_LARGE_RES),
        make_node("node2", capacity=VERY_LARGE_RES),
    ]
    init = [
        make_pod("p1", uid="p1", node_name="node1", priority=MID_PRIORITY),
        make_pod("p2", uid="p2", node_name="node2", priority=MID_PRIORITY),
    ]
    h = build(nodes, init, plugins=())
    evaluator = Evaluator("FakePostFilter", h.framework, FakePostFilterInterface(num_violating))
    pod = make_pod("p", uid="p", priority=HIGH_PRIORITY)
    got, _, _ = evaluator.dry_run_preemption(
        CycleState(), pod, list(h.snapshot.list()), budgets_from([]), 0, 2
    )
    summary = sorted(
        (cand.name, [v.name for v in cand.victims.pods], cand.victims.num_pdb_violations)
        for cand in got
    )
    assert summary == expected


# --- TestCustomSelection / TestCustomOrdering: the plugin's customisation points --------------


def label_is(key: str, value: str) -> Any:
    return lambda node_info, victim, preemptor: victim.labels.get(key) == value


def node_is(name: str) -> Any:
    return lambda node_info, victim, preemptor: node_info.node_name == name


def preemptor_at_least(priority: int) -> Any:
    return lambda node_info, victim, preemptor: preemptor.priority >= priority


def victim_at_most(priority: int) -> Any:
    return lambda node_info, victim, preemptor: victim.priority <= priority


def v(name: str, node: str, priority: int, req: dict[str, str], **labels: str) -> PodView:
    return make_pod(
        name,
        uid=name,
        node_name=node,
        priority=priority,
        requests=req,
        labels=labels,
        start_time=epoch(0),
    )


LABELLED = [
    v("v1", "node1", MID_PRIORITY, LARGE_RES, preemptible="no"),
    v("v2", "node2", MID_PRIORITY, LARGE_RES, preemptible="yes"),
    v("v3", "node3", LOW_PRIORITY, LARGE_RES, preemptible="yes"),
    v("v4", "node4", LOW_PRIORITY, LARGE_RES),
]


def on_node1(high: int, size: dict[str, str]) -> list[PodView]:
    return [
        v("v1", "node1", HIGH_PRIORITY, size),
        v("v2", "node1", MID_PRIORITY, SMALL_RES),
        v("v3", "node1", LOW_PRIORITY, SMALL_RES),
        v("v4", "node2", MID_PRIORITY, LARGE_RES),
        v("v5", "node3", LOW_PRIORITY, LARGE_RES),
    ]


ONE_EACH = [
    v("v1", "node1", HIGH_PRIORITY, LARGE_RES),
    v("v2", "node2", MID_PRIORITY, LARGE_RES),
    v("v3", "node3", LOW_PRIORITY, LARGE_RES),
]


@pytest.mark.parametrize(
    ("eligible", "node_count", "priority", "pods", "expected"),
    [
        pytest.param(
            label_is("preemptible", "yes"),
            4,
            HIGH_PRIORITY,
            LABELLED,
            {"node2": ["v2"], "node3": ["v3"]},
            id="filter for matching pod label: high priority",
        ),
        pytest.param(
            label_is("preemptible", "yes"),
            4,
            MID_PRIORITY,
            LABELLED,
            {"node3": ["v3"]},
            id="filter for matching pod label: mid priority",
        ),
        pytest.param(
            label_is("preemptible", "yes"),
            4,
            LOW_PRIORITY,
            LABELLED,
            {},
            id="filter for matching pod label: low priority",
        ),
        pytest.param(
            node_is("node1"),
            3,
            HIGH_PRIORITY,
            on_node1(HIGH_PRIORITY, MEDIUM_RES),
            {"node1": ["v2", "v3"]},
            id="filter for matching victim node: high priority",
        ),
        pytest.param(
            node_is("node1"),
            3,
            MID_PRIORITY,
            on_node1(HIGH_PRIORITY, SMALL_RES),
            {"node1": ["v3"]},
            id="filter for matching victim node: mid priority",
        ),
        pytest.param(
            node_is("node1"),
            3,
            LOW_PRIORITY,
            on_node1(HIGH_PRIORITY, SMALL_RES),
            {},
            id="filter for matching victim node: low priority",
        ),
        pytest.param(
            preemptor_at_least(HIGH_PRIORITY),
            3,
            HIGH_PRIORITY,
            ONE_EACH,
            {"node2": ["v2"], "node3": ["v3"]},
            id="only pods at or above specified priority can preempt: high priority",
        ),
        pytest.param(
            preemptor_at_least(HIGH_PRIORITY),
            3,
            MID_PRIORITY,
            ONE_EACH,
            {},
            id="only pods at or above specified priority can preempt: mid priority",
        ),
        pytest.param(
            victim_at_most(MID_PRIORITY),
            3,
            HIGH_PRIORITY,
            ONE_EACH,
            {"node2": ["v2"], "node3": ["v3"]},
            id="only pods at or below specified priority can be preempted",
        ),
    ],
)
def test_custom_selection(
    eligible: Any,
    node_count: int,
    priority: int,
    pods: list[PodView],
    expected: dict[str, list[str]],
) -> None:
    nodes = [make_node(f"node{i}", capacity=VERY_LARGE_RES) for i in range(1, node_count + 1)]
    h = build(nodes, pods)
    h.plugin.is_eligible_pod = eligible
    pod = make_pod("p", uid="p", priority=priority, requests=LARGE_RES)
    state = h.pre_filtered_state(pod)
    offset, num = h.plugin.get_offset_and_num_candidates(node_count)
    candidates, _, _ = h.plugin.evaluator.dry_run_preemption(
        state, pod, list(h.snapshot.list()), budgets_from([]), offset, num
    )
    assert sorted(cand.name for cand in candidates) == sorted(expected)
    while candidates:
        selected = h.plugin.evaluator.select_candidate(candidates)
        assert selected is not None
        assert [p.name for p in selected.victims.pods] == expected[selected.name]
        candidates = [cand for cand in candidates if cand.name != selected.name]


@pytest.mark.parametrize(
    ("order", "pods", "expected"),
    [
        pytest.param(
            lambda a, b: pod_start_time(a) < pod_start_time(b),
            [
                make_pod(
                    "v1",
                    uid="v1",
                    node_name="node1",
                    priority=LOW_PRIORITY,
                    requests=MEDIUM_RES,
                    start_time=epoch(2),
                ),
                make_pod(
                    "v2",
                    uid="v2",
                    node_name="node1",
                    priority=LOW_PRIORITY,
                    requests=MEDIUM_RES,
                    start_time=epoch(0),
                ),
                make_pod(
                    "v3",
                    uid="v3",
                    node_name="node1",
                    priority=MID_PRIORITY,
                    requests=MEDIUM_RES,
                    start_time=epoch(1),
                ),
            ],
            ["v3", "v1"],
            id="select newest pods",
        ),
        pytest.param(
            lambda a, b: a.name < b.name,
            [
                make_pod(
                    "foo", uid="v1", node_name="node1", priority=LOW_PRIORITY, requests=MEDIUM_RES
                ),
                make_pod(
                    "bar", uid="v2", node_name="node1", priority=LOW_PRIORITY, requests=MEDIUM_RES
                ),
                make_pod(
                    "baz", uid="v3", node_name="node1", priority=MID_PRIORITY, requests=MEDIUM_RES
                ),
            ],
            ["baz", "foo"],
            id="select alphabetically-last pods",
        ),
    ],
)
def test_custom_ordering(order: Any, pods: list[PodView], expected: list[str]) -> None:
    h = build([make_node("node1", capacity=VERY_LARGE_RES)], pods)
    h.plugin.more_important_pod = order
    pod = make_pod("p2", uid="p2", priority=HIGH_PRIORITY, requests=LARGE_RES)
    candidates, _, _ = h.plugin.evaluator.dry_run_preemption(
        h.pre_filtered_state(pod), pod, list(h.snapshot.list()), budgets_from([]), 0, 1
    )
    (candidate,) = candidates
    assert [p.name for p in candidate.victims.pods] == expected
