"""DefaultPreemption.post_filter end to end on a real Framework, ported from upstream's
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go: TestPostFilter
(the cases without extenders or pod groups), TestPreempt (same) and
TestPodEligibleToPreemptOthers; plus what the plugin hands the scheduler (victims, the
lower-priority nominations to clear).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.api.objects import PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.framework.interface import CycleState, NodeToStatus, PostFilterResult
from scheduler.framework.registry import PluginEntry
from scheduler.framework.status import Code, Status
from scheduler.listers.cluster_objects import DisruptionBudget
from scheduler.testing import exists, make_node, make_pod, spread
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
    make_pdb,
    topology_node,
)

ONE_POD = {"pods": "1"}
NODE_RES = {"cpu": "200m", "memory": "400"}
VIOLATING_KEY = "test.kubernetes.io/is-violating-pdb"
UNSCHED = Status.unschedulable()
UNRESOLVABLE = Status.unresolvable()


class ErroringExtensionsPlugin:
    """Upstream's TestPlugin: its AddPod / RemovePod fail on nodes labelled error=true."""

    name = "test-plugin"

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[None, Status]:
        return None, Status.OK

    def pre_filter_extensions(self) -> ErroringExtensionsPlugin:
        return self

    def add_pod(self, state: CycleState, pod: PodView, other: PodView, info: NodeInfo) -> Status:
        if info.node is not None and info.node.labels.get("error") == "true":
            return Status.error(f"failed to add pod: {pod.name}")
        return Status.OK

    def remove_pod(self, state: CycleState, pod: PodView, other: PodView, info: NodeInfo) -> Status:
        if info.node is not None and info.node.labels.get("error") == "true":
            return Status.error(f"failed to remove pod: {pod.name}")
        return Status.OK


TEST_PLUGIN = PluginEntry("test-plugin", ErroringExtensionsPlugin)


def statuses(absent: Status = UNRESOLVABLE, **by_node: Status) -> NodeToStatus:
    return NodeToStatus(dict(by_node), absent)


POST_FILTER_CASES = [
    pytest.param(
        make_pod("p", uid="p", priority=HIGH_PRIORITY),
        [make_pod("p1", uid="p1", node_name="node1")],
        [],
        [make_node("node1", capacity=ONE_POD)],
        statuses(node1=UNSCHED),
        PostFilterResult("node1"),
        Status.OK,
        id="pod with higher priority can be made schedulable",
    ),
    pytest.param(
        make_pod("p", uid="p"),
        [make_pod("p1", uid="p1", node_name="node1")],
        [],
        [make_node("node1", capacity=ONE_POD)],
        statuses(node1=UNSCHED),
        PostFilterResult(""),
        Status.unschedulable(
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
        ),
        id="pod with tied priority is still unschedulable",
    ),
    pytest.param(
        make_pod("p", uid="p", priority=HIGH_PRIORITY),
        [make_pod("p1", uid="p1", node_name="node1")],
        [],
        [make_node("node1", capacity=ONE_POD)],
        statuses(node1=UNRESOLVABLE),
        PostFilterResult(""),
        Status.unschedulable(
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        ),
        id="preemption should respect filteredNodesStatuses",
    ),
    pytest.param(
        make_pod("p", uid="p", priority=HIGH_PRIORITY),
        [make_pod("p1", uid="p1", node_name="node1")],
        [],
        [make_node("node1", capacity=ONE_POD)],
        statuses(),
        PostFilterResult(""),
        Status.unschedulable(
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        ),
        id="absent NodeToStatus entry means UnschedulableAndUnresolvable",
    ),
    pytest.param(
        make_pod("p", uid="p", priority=MID_PRIORITY),
        [
            make_pod("p1", uid="p1", node_name="node1", priority=HIGH_PRIORITY),
            make_pod("p2", uid="p2", node_name="node2", priority=LOW_PRIORITY),
        ],
        [],
        [make_node("node1", capacity=ONE_POD), make_node("node2", capacity=ONE_POD)],
        statuses(node1=UNSCHED, node2=UNSCHED),
        PostFilterResult("node2"),
        Status.OK,
        id="pod can be made schedulable on one node",
    ),
    pytest.param(
        make_pod("p", uid="p", priority=VERY_HIGH_PRIORITY),
        [
            make_pod(
                "p1",
                uid="p1",
                node_name="node1",
                priority=HIGH_PRIORITY,
                labels={VIOLATING_KEY: "non-violating"},
            ),
            make_pod(
                "p2",
                uid="p2",
                node_name="node1",
                priority=LOW_PRIORITY,
                labels={VIOLATING_KEY: "violating"},
            ),
            make_pod(
                "p3",
                uid="p3",
                node_name="node2",
                priority=MID_PRIORITY,
                labels={VIOLATING_KEY: "violating"},
            ),
        ],
        [
            make_pdb("violating-pdb", match_labels={VIOLATING_KEY: "violating"}),
            make_pdb(
                "non-violating-pdb",
                match_labels={VIOLATING_KEY: "non-violating"},
                disruptions_allowed=2**31 - 1,
            ),
        ],
        [make_node("node1", capacity=ONE_POD), make_node("node2", capacity=ONE_POD)],
        statuses(node1=UNSCHED, node2=UNSCHED),
        PostFilterResult("node2"),
        Status.OK,
        id="pod can be made schedulable on minHighestPriority node",
    ),
    pytest.param(
        make_pod("p", uid="p", priority=HIGH_PRIORITY, requests=LARGE_RES),
        [make_pod("p1", uid="p1", node_name="node1"), make_pod("p2", uid="p2", node_name="node2")],
        [],
        [make_node("node1", capacity=NODE_RES), make_node("node2", capacity=NODE_RES)],
        statuses(node1=UNSCHED, node2=UNSCHED),
        PostFilterResult(""),
        Status.unschedulable("preemption: 0/2 nodes are available: 2 Insufficient cpu."),
        id="no candidate nodes found, no enough resource after removing low priority pods",
    ),
    pytest.param(
        make_pod("p", uid="p", priority=HIGH_PRIORITY, requests=LARGE_RES),
        [
            make_pod("p1", uid="p1", node_name="node1", priority=HIGH_PRIORITY),
            make_pod("p2", uid="p2", node_name="node2"),
            make_pod("p3", uid="p3", node_name="node3", priority=HIGH_PRIORITY),
        ],
        [],
        [
            make_node("node1", capacity=ONE_POD),
            make_node("node2", capacity=NODE_RES),
            make_node("node3", capacity=ONE_POD),
        ],
        statuses(node1=UNSCHED, node2=UNSCHED, node3=UNSCHED),
        PostFilterResult(""),
        Status.unschedulable(
            "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
            "2 No preemption victims found for incoming pod."
        ),
        id="no candidate nodes found with mixed reasons",
    ),
    pytest.param(
        make_pod("p", uid="p", priority=HIGH_PRIORITY, requests=LARGE_RES),
        [make_pod("p1", uid="p1", node_name="node1"), make_pod("p2", uid="p2", node_name="node2")],
        [],
        [make_node(f"node{i}", capacity=NODE_RES) for i in range(1, 5)],
        statuses(node1=UNSCHED, node2=UNSCHED, node4=UNRESOLVABLE),
        PostFilterResult(""),
        Status.unschedulable(
            "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
            "2 Preemption is not helpful for scheduling."
        ),
        id="no candidate nodes found with mixed reason, 2 unresolvable, 2 short of cpu",
    ),
    pytest.param(
        make_pod("p", uid="p", priority=HIGH_PRIORITY, requests=LARGE_RES),
        [make_pod("p1", uid="p1", node_name="node1")],
        [],
        [make_node("node1", capacity=LARGE_RES, labels={"error": "true"})],
        statuses(node1=UNSCHED),
        None,
        Status.error(
            'preemption: running RemovePod on PreFilter plugin "test-plugin": '
            "failed to remove pod: p"
        ),
        id="only one node but failed with TestPlugin",
    ),
    pytest.param(
        make_pod("p", uid="p", priority=HIGH_PRIORITY, requests=LARGE_RES),
        [
            make_pod("p1", uid="p1", node_name="node1"),
            make_pod("p2", uid="p2", node_name="node2", requests=MEDIUM_RES),
        ],
        [],
        [
            make_node("node1", capacity=LARGE_RES, labels={"error": "true"}),
            make_node("node2", capacity=LARGE_RES),
        ],
        statuses(node1=UNSCHED, node2=UNSCHED),
        PostFilterResult("node2"),
        Status.OK,
        id="one failed with TestPlugin and the other pass",
    ),
]


@pytest.mark.parametrize(
    ("pod", "pods", "pdbs", "nodes", "filtered", "want_result", "want_status"),
    POST_FILTER_CASES,
)
def test_post_filter(
    pod: PodView,
    pods: list[PodView],
    pdbs: list[DisruptionBudget],
    nodes: list[Any],
    filtered: NodeToStatus,
    want_result: PostFilterResult | None,
    want_status: Status,
) -> None:
    h = build(
        nodes, pods, plugins=("NodeResourcesFit", "test-plugin"), extra=[TEST_PLUGIN], pdbs=pdbs
    )
    state = h.pre_filtered_state(pod)
    result, status = h.plugin.post_filter(state, pod, filtered)
    assert (status.code, status.message) == (want_status.code, want_status.message)
    assert result == want_result
    if want_status.is_success:
        assert len(h.preemptions) == 1
        assert h.preemptions[0].node_name == want_result.nominated_node_name  # type: ignore[union-attr]
        assert h.preemptions[0].preemptor is pod
    else:
        assert h.preemptions == []


async def test_post_filter_through_the_framework_attributes_the_plugin() -> None:
    pod = make_pod("p", uid="p")
    h = build([make_node("node1", capacity=ONE_POD)], [make_pod("p1", uid="p1", node_name="node1")])
    result, status = await h.framework.run_post_filter_plugins(
        h.pre_filtered_state(pod), pod, statuses(node1=UNSCHED)
    )
    assert result == PostFilterResult("")
    assert status.code == Code.UNSCHEDULABLE
    assert status.plugin == "DefaultPreemption"
    assert status.message.startswith("preemption: 0/1 nodes are available")


PREEMPT_CASES = [
    pytest.param(
        make_pod(
            "p",
            uid="p",
            priority=HIGH_PRIORITY,
            requests=VERY_LARGE_RES,
            preemption_policy="PreemptLowerPriority",
        ),
        [
            make_pod(
                "p1.1", uid="p1.1", node_name="node1", priority=LOW_PRIORITY, requests=SMALL_RES
            ),
            make_pod(
                "p1.2", uid="p1.2", node_name="node1", priority=LOW_PRIORITY, requests=SMALL_RES
            ),
            make_pod(
                "p2.1", uid="p2.1", node_name="node2", priority=HIGH_PRIORITY, requests=LARGE_RES
            ),
            make_pod(
                "p3.1", uid="p3.1", node_name="node3", priority=MID_PRIORITY, requests=MEDIUM_RES
            ),
        ],
        ["node1", "node2", "node3"],
        ("NodeResourcesFit",),
        "node1",
        ["p1.1", "p1.2"],
        id="basic preemption logic",
    ),
    pytest.param(
        make_pod(
            "p",
            uid="p",
            priority=HIGH_PRIORITY,
            labels={"foo": ""},
            spread_constraints=[
                spread(1, "zone", selector=exists("foo")),
                spread(1, "hostname", selector=exists("foo")),
            ],
        ),
        [
            make_pod(
                "p-a1", uid="p-a1", node_name="node-a", labels={"foo": ""}, priority=HIGH_PRIORITY
            ),
            make_pod(
                "p-a2", uid="p-a2", node_name="node-a", labels={"foo": ""}, priority=HIGH_PRIORITY
            ),
            make_pod(
                "p-b1", uid="p-b1", node_name="node-b", labels={"foo": ""}, priority=LOW_PRIORITY
            ),
            make_pod(
                "p-x1", uid="p-x1", node_name="node-x", labels={"foo": ""}, priority=HIGH_PRIORITY
            ),
            make_pod(
                "p-x2", uid="p-x2", node_name="node-x", labels={"foo": ""}, priority=HIGH_PRIORITY
            ),
        ],
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        ("PodTopologySpread",),
        "node-b",
        ["p-b1"],
        id="preemption for topology spread constraints",
    ),
    pytest.param(
        make_pod(
            "p", uid="p", priority=HIGH_PRIORITY, requests=VERY_LARGE_RES, preemption_policy="Never"
        ),
        [
            make_pod(
                "p1.1", uid="p1.1", node_name="node1", priority=LOW_PRIORITY, requests=SMALL_RES
            ),
            make_pod(
                "p1.2", uid="p1.2", node_name="node1", priority=LOW_PRIORITY, requests=SMALL_RES
            ),
            make_pod(
                "p2.1", uid="p2.1", node_name="node2", priority=HIGH_PRIORITY, requests=LARGE_RES
            ),
            make_pod(
                "p3.1", uid="p3.1", node_name="node3", priority=MID_PRIORITY, requests=MEDIUM_RES
            ),
        ],
        ["node1", "node2", "node3"],
        ("NodeResourcesFit",),
        None,
        [],
        id="no preempting in pod",
    ),
    pytest.param(
        make_pod("p", uid="p", priority=HIGH_PRIORITY, requests=VERY_LARGE_RES),
        [
            make_pod(
                "p1.1", uid="p1.1", node_name="node1", priority=LOW_PRIORITY, requests=SMALL_RES
            ),
            make_pod(
                "p1.2", uid="p1.2", node_name="node1", priority=LOW_PRIORITY, requests=SMALL_RES
            ),
            make_pod(
                "p2.1", uid="p2.1", node_name="node2", priority=HIGH_PRIORITY, requests=LARGE_RES
            ),
            make_pod(
                "p3.1", uid="p3.1", node_name="node3", priority=MID_PRIORITY, requests=MEDIUM_RES
            ),
        ],
        ["node1", "node2", "node3"],
        ("NodeResourcesFit",),
        "node1",
        ["p1.1", "p1.2"],
        id="PreemptionPolicy is nil",
    ),
]


@pytest.mark.parametrize(
    ("pod", "pods", "node_names", "plugins", "want_node", "want_victims"), PREEMPT_CASES
)
def test_preempt(
    pod: PodView,
    pods: list[PodView],
    node_names: list[str],
    plugins: tuple[str, ...],
    want_node: str | None,
    want_victims: list[str],
) -> None:
    nodes = [topology_node(name) for name in node_names]
    h = build(nodes, pods, plugins=plugins)
    filtered = statuses(**{n.name: UNSCHED for n in nodes})
    result, status = h.plugin.evaluator.preempt(h.pre_filtered_state(pod), pod, filtered)
    assert status.is_success or status.is_rejected
    if want_node is None:
        assert result is None
        assert h.preemptions == []
        assert status.message == "not eligible due to preemptionPolicy=Never."
        return
    assert result == PostFilterResult(want_node)
    (preemption,) = h.preemptions
    assert preemption.node_name == want_node
    assert sorted(v.name for v in preemption.victims) == want_victims


def test_second_attempt_waits_for_terminating_victims() -> None:
    """After a preemption, the preemptor (now nominated) does not preempt again while its
    victims terminate on the nominated node (TestPreempt's second Preempt call)."""
    victim_condition = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
    }
    pods = [
        make_pod(
            "p1.1",
            uid="p1.1",
            node_name="node1",
            priority=LOW_PRIORITY,
            requests=SMALL_RES,
            terminating=True,
            conditions=[victim_condition],
        ),
        make_pod(
            "p1.2",
            uid="p1.2",
            node_name="node1",
            priority=LOW_PRIORITY,
            requests=SMALL_RES,
            terminating=True,
            conditions=[victim_condition],
        ),
        make_pod("p2.1", uid="p2.1", node_name="node2", priority=MID_PRIORITY, requests=LARGE_RES),
    ]
    pod = make_pod(
        "p", uid="p", priority=HIGH_PRIORITY, requests=VERY_LARGE_RES, nominated_node_name="node1"
    )
    h = build(
        [make_node("node1", capacity=VERY_LARGE_RES), make_node("node2", capacity=VERY_LARGE_RES)],
        pods,
    )
    result, status = h.plugin.post_filter(
        h.pre_filtered_state(pod), pod, statuses(node1=UNSCHED, node2=UNSCHED)
    )
    assert result is None
    assert status == Status.unschedulable(
        "preemption: not eligible due to a terminating pod on the nominated node."
    )
    assert h.preemptions == []


def test_preemption_carries_victims_and_lower_priority_nominations() -> None:
    low_nominated = make_pod("low", uid="low", priority=LOW_PRIORITY, nominated_node_name="node1")
    high_nominated = make_pod(
        "high", uid="high", priority=VERY_HIGH_PRIORITY, nominated_node_name="node1"
    )
    pod = make_pod("p", uid="p", priority=HIGH_PRIORITY, requests=LARGE_RES)
    pods = [
        make_pod(
            "v-mid", uid="v-mid", node_name="node1", priority=MID_PRIORITY, requests=MEDIUM_RES
        ),
        make_pod(
            "v-low", uid="v-low", node_name="node1", priority=LOW_PRIORITY, requests=MEDIUM_RES
        ),
    ]
    h = build(
        [make_node("node1", capacity=VERY_LARGE_RES)],
        pods,
        nominated={"node1": [low_nominated, high_nominated]},
    )
    result, status = h.plugin.post_filter(h.pre_filtered_state(pod), pod, statuses(node1=UNSCHED))
    assert (result, status) == (PostFilterResult("node1"), Status.OK)
    (preemption,) = h.preemptions
    # 500m: the preemptor (300m) fits with one 200m victim back; the more important one stays.
    assert [v.name for v in preemption.victims] == ["v-low"]
    assert [p.name for p in preemption.nominations_to_clear] == ["low"]


ELIGIBLE_CASES = [
    pytest.param(
        make_pod(
            "p_with_nominated_node", uid="p", priority=HIGH_PRIORITY, nominated_node_name="node1"
        ),
        [make_pod("p1", uid="p1", priority=LOW_PRIORITY, node_name="node1", terminating=True)],
        ["node1"],
        Status.unresolvable("node(s) had untolerated taint(s)"),
        True,
        id="Pod with nominated node",
    ),
    pytest.param(
        make_pod("p_without_nominated_node", uid="p", priority=HIGH_PRIORITY),
        [],
        [],
        None,
        True,
        id="Pod without nominated node",
    ),
    pytest.param(
        make_pod(
            "p_with_preempt_never_policy",
            uid="p",
            priority=HIGH_PRIORITY,
            preemption_policy="Never",
        ),
        [],
        [],
        None,
        False,
        id="Pod with 'PreemptNever' preemption policy",
    ),
    pytest.param(
        make_pod(
            "p_with_nominated_node", uid="p", priority=HIGH_PRIORITY, nominated_node_name="node1"
        ),
        [
            make_pod(
                "p1",
                uid="p1",
                priority=LOW_PRIORITY,
                node_name="node1",
                terminating=True,
                conditions=[
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "PreemptionByScheduler",
                    }
                ],
            )
        ],
        ["node1"],
        None,
        False,
        id="preemption victim pod terminating, as indicated by the DisruptionTarget condition",
    ),
    pytest.param(
        make_pod(
            "p_with_nominated_node", uid="p", priority=HIGH_PRIORITY, nominated_node_name="node1"
        ),
        [make_pod("p1", uid="p1", priority=LOW_PRIORITY, node_name="node1", terminating=True)],
        ["node1"],
        None,
        True,
        id="non-victim Pods terminating",
    ),
    pytest.param(
        make_pod(
            "p_with_nominated_node", uid="p", priority=HIGH_PRIORITY, nominated_node_name="node1"
        ),
        [
            make_pod(
                "p1",
                uid="p1",
                priority=HIGH_PRIORITY,
                node_name="node1",
                terminating=True,
                conditions=[
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "PreemptionByScheduler",
                    }
                ],
            )
        ],
        ["node1"],
        Status.unschedulable("Insufficient cpu"),
        True,
        id="terminating victim of equal priority is not the preemptor's victim",
    ),
    pytest.param(
        make_pod(
            "p_with_nominated_node", uid="p", priority=HIGH_PRIORITY, nominated_node_name="node1"
        ),
        [
            make_pod(
                "p1",
                uid="p1",
                priority=LOW_PRIORITY,
                node_name="node1",
                conditions=[
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "PreemptionByScheduler",
                    }
                ],
            )
        ],
        ["node1"],
        Status.unschedulable("Insufficient cpu"),
        True,
        id="DisruptionTarget without a deletion timestamp is not terminating",
    ),
]


@pytest.mark.parametrize(("pod", "pods", "nodes", "nominated_status", "expected"), ELIGIBLE_CASES)
def test_pod_eligible_to_preempt_others(
    pod: PodView,
    pods: list[PodView],
    nodes: list[str],
    nominated_status: Status | None,
    expected: bool,
) -> None:
    h = build([make_node(n, capacity={}) for n in nodes], pods, plugins=())
    eligible, message = h.plugin.pod_eligible_to_preempt_others(pod, nominated_status)
    assert eligible is expected
    assert (message == "") is expected
