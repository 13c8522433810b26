"""NodeResourcesFit with pod-level resources and in-place resize.

Ported from upstream's pkg/scheduler/framework/plugins/noderesources/fit_test.go: the
pod-level cases of TestEnoughRequests, Score's count of a pod with pod-level requests,
and Test_isSchedulableAfterPodEvent (isSchedulableAfterPodScaleDown), plus the cache counting a
resized pod at the larger of desired and actuated amounts (framework/types_test.go); then the
same plugins with PodLevelResources / InPlacePodLevelResourcesVerticalScaling off.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import PodView
from scheduler.api.request_gates import gates_set
from scheduler.framework.events import ActionType, QueueingHint
from scheduler.framework.interface import CycleState
from scheduler.plugins.balancedallocation import NodeResourcesBalancedAllocation
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.queue.pod_events import pod_update_actions
from scheduler.testing import make_node, make_node_info


def pod(
    name: str,
    containers: list[dict[str, str]],
    pod_level: dict[str, str] | None = None,
    node: str = "",
    statuses: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> PodView:
    spec: dict[str, Any] = {
        "containers": [
            {"name": f"c{i}", "image": "i", "resources": {"requests": req}}
            for i, req in enumerate(containers)
        ],
    }
    if pod_level is not None:
        spec["resources"] = {"requests": pod_level, "limits": pod_level}
    if node:
        spec["nodeName"] = node
    status: dict[str, Any] = {"phase": "Running" if node else "Pending"}
    if statuses is not None:
        status["containerStatuses"] = statuses
    if conditions is not None:
        status["conditions"] = conditions
    return PodView.from_dict(
        {
            "metadata": {"name": name, "namespace": "d", "uid": name, "resourceVersion": "1"},
            "spec": spec,
            "status": status,
        }
    )


def filter_reasons(incoming: PodView, existing: list[PodView], cpu: str = "2") -> tuple[str, ...]:
    node_info = make_node_info(
        make_node("n", {"cpu": cpu, "memory": "4Gi", "pods": "110"}), existing
    )
    plugin = NodeResourcesFit(None)
    state = CycleState()
    plugin.pre_filter(state, incoming, [node_info])
    return plugin.filter(state, incoming, node_info).reasons


@pytest.mark.parametrize(
    ("name", "incoming", "existing", "reasons"),
    [
        (
            "pod-level requests larger than the node: the issue's 8-CPU pod",
            pod("p", [{}], {"cpu": "8"}),
            [],
            ("Insufficient cpu",),
        ),
        (
            "pod-level requests override smaller container requests",
            pod("p", [{"cpu": "100m"}], {"cpu": "3"}),
            [],
            ("Insufficient cpu",),
        ),
        ("pod-level requests fit", pod("p", [{}], {"cpu": "1", "memory": "1Gi"}), [], ()),
        (
            "an existing pod-level pod is counted at its pod-level requests",
            pod("p", [{"cpu": "500m"}]),
            [pod("e", [{}], {"cpu": "1800m"}, node="n")],
            ("Insufficient cpu",),
        ),
        (
            "an existing pod mid-resize counts at the larger of desired and actuated",
            pod("p", [{"cpu": "500m"}]),
            [
                pod(
                    "e",
                    [{"cpu": "1"}],
                    node="n",
                    statuses=[
                        {
                            "name": "c0",
                            "allocatedResources": {"cpu": "1800m"},
                            "resources": {"requests": {"cpu": "1800m"}},
                        }
                    ],
                )
            ],
            ("Insufficient cpu",),
        ),
        (
            "an infeasible resize counts at what is actuated, not what is desired",
            pod("p", [{"cpu": "500m"}]),
            [
                pod(
                    "e",
                    [{"cpu": "8"}],
                    node="n",
                    statuses=[
                        {
                            "name": "c0",
                            "allocatedResources": {"cpu": "1"},
                            "resources": {"requests": {"cpu": "1"}},
                        }
                    ],
                    conditions=[
                        {"type": "PodResizePending", "status": "True", "reason": "Infeasible"}
                    ],
                )
            ],
            (),
        ),
    ],
)
def test_filter_pod_level_and_resize(
    name: str, incoming: PodView, existing: list[PodView], reasons: tuple[str, ...]
) -> None:
    assert filter_reasons(incoming, existing) == reasons


def test_score_counts_the_containers_alone_with_defaults() -> None:
    """kube-scheduler v1.36.2: NodeResourcesFit's scorer (fit.go NewFit → getScorer) has no
    feature fields set, so calculatePodResourceRequest (resource_allocation.go) skips the pod
    level; containers without a request count 100m / 200Mi each (checked against the v1.36.2
    binary)."""
    plugin = NodeResourcesFit(None)
    p = pod("p", [{}, {}], {"cpu": "1"})
    assert plugin._pod_requests(p) == (200, 2 * 200 * 1024 * 1024)


HINT = NodeResourcesFit._schedulable_after_pod_event
TARGET = pod("target", [{"cpu": "1"}])


@pytest.mark.parametrize(
    ("name", "old", "new", "expected"),
    [
        ("queue-on-deleted", pod("x", [{"cpu": "1"}], node="n"), None, QueueingHint.QUEUE),
        (
            "skip-queue-on-unscheduled-pod-deleted",
            pod("x", [{"cpu": "1"}]),
            None,
            QueueingHint.SKIP,
        ),
        (
            "skip-queue-on-other-unscheduled-pod",
            pod("x", [{"cpu": "2"}]),
            pod("x", [{"cpu": "1"}]),
            QueueingHint.SKIP,
        ),
        (
            "skip-queue-on-other-pod-non-resource-changes",
            pod("x", [{"cpu": "1"}], node="n"),
            pod("x", [{"cpu": "1"}], node="n"),
            QueueingHint.SKIP,
        ),
        (
            "skip-queue-on-other-pod-unrelated-resource-scaled-down",
            pod("x", [{"memory": "2Gi"}], node="n"),
            pod("x", [{"memory": "1Gi"}], node="n"),
            QueueingHint.SKIP,
        ),
        (
            "queue-on-other-pod-some-resource-scale-down",
            pod("x", [{"cpu": "2"}], node="n"),
            pod("x", [{"cpu": "1"}], node="n"),
            QueueingHint.QUEUE,
        ),
        (
            "queue-on-target-pod-some-resource-scale-down",
            pod("target", [{"cpu": "2"}]),
            pod("target", [{"cpu": "1"}]),
            QueueingHint.QUEUE,
        ),
        (
            "queue-on-other-pod-pod-level-scale-down",
            pod("x", [{}], {"cpu": "2"}, node="n"),
            pod("x", [{}], {"cpu": "1"}, node="n"),
            QueueingHint.QUEUE,
        ),
        (
            "queue-on-other-pod-actuated-scale-down (resize finished)",
            pod(
                "x",
                [{"cpu": "1"}],
                node="n",
                statuses=[
                    {
                        "name": "c0",
                        "allocatedResources": {"cpu": "2"},
                        "resources": {"requests": {"cpu": "2"}},
                    }
                ],
            ),
            pod(
                "x",
                [{"cpu": "1"}],
                node="n",
                statuses=[
                    {
                        "name": "c0",
                        "allocatedResources": {"cpu": "1"},
                        "resources": {"requests": {"cpu": "1"}},
                    }
                ],
            ),
            QueueingHint.QUEUE,
        ),
    ],
)
def test_is_schedulable_after_pod_event(
    name: str, old: PodView, new: PodView | None, expected: QueueingHint
) -> None:
    assert HINT(TARGET, old, new) == expected


# ---- PodLevelResources / InPlacePodLevelResourcesVerticalScaling off ------------------------
#
# fit.go computePodResourceRequest (SkipPodLevelResources: !enablePodLevelResources),
# types.go CalculateResource for the pods on the node, resource_allocation.go for the scores;
# the resize hints (isSchedulableAfterPodScaleDown, events.go extractPodScaleDown) count the
# pod level whatever the gate. Pods are built under the gate, as PodInfo caches its resources.

BOTH_OFF = {"pod_level_resources": False, "pod_level_status": False}
STATUS_OFF = {"pod_level_resources": True, "pod_level_status": False}
BOTH_ON = {"pod_level_resources": True, "pod_level_status": True}
POD_LEVEL_RESIZING = {
    # a pod-level resize from 1 to 1800m cpu the kubelet has allocated
    "allocatedResources": {"cpu": "1800m"},
    "resources": {"requests": {"cpu": "1800m"}},
}


def resizing_pod(name: str) -> PodView:
    view = pod(name, [{"cpu": "100m"}], {"cpu": "1"}, node="n")
    raw = {**view.raw, "status": {**view.raw["status"], **POD_LEVEL_RESIZING}}
    return PodView.from_dict(raw)


GATE_FILTER_CASES = [
    # (name, incoming, existing, {gates name: reasons})
    (
        "an incoming pod-level request larger than the node",
        lambda: pod("p", [{}], {"cpu": "8"}),
        list,
        {"BOTH_ON": ("Insufficient cpu",), "STATUS_OFF": ("Insufficient cpu",), "BOTH_OFF": ()},
    ),
    (
        "pod-level requests over smaller container requests",
        lambda: pod("p", [{"cpu": "100m"}], {"cpu": "3"}),
        list,
        {"BOTH_ON": ("Insufficient cpu",), "STATUS_OFF": ("Insufficient cpu",), "BOTH_OFF": ()},
    ),
    (
        "the containers' own requests still count with the gate off",
        lambda: pod("p", [{"cpu": "3"}], {"cpu": "3"}),
        list,
        {
            "BOTH_ON": ("Insufficient cpu",),
            "STATUS_OFF": ("Insufficient cpu",),
            "BOTH_OFF": ("Insufficient cpu",),
        },
    ),
    (
        "an existing pod-level pod is counted by its containers with the gate off",
        lambda: pod("p", [{"cpu": "500m"}]),
        lambda: [pod("e", [{}], {"cpu": "1800m"}, node="n")],
        {"BOTH_ON": ("Insufficient cpu",), "STATUS_OFF": ("Insufficient cpu",), "BOTH_OFF": ()},
    ),
    (
        "an existing pod mid pod-level resize: its pod-level status only with the resize gate",
        lambda: pod("p", [{"cpu": "500m"}]),
        lambda: [resizing_pod("e")],
        {"BOTH_ON": ("Insufficient cpu",), "STATUS_OFF": (), "BOTH_OFF": ()},
    ),
]
GATES_BY_NAME = {"BOTH_ON": BOTH_ON, "STATUS_OFF": STATUS_OFF, "BOTH_OFF": BOTH_OFF}


@pytest.mark.parametrize("gates", sorted(GATES_BY_NAME))
@pytest.mark.parametrize(
    ("incoming", "existing", "expected"),
    [case[1:] for case in GATE_FILTER_CASES],
    ids=[case[0] for case in GATE_FILTER_CASES],
)
def test_filter_with_the_gates(
    gates: str, incoming: Any, existing: Any, expected: dict[str, tuple[str, ...]]
) -> None:
    with gates_set(**GATES_BY_NAME[gates]):
        assert filter_reasons(incoming(), existing()) == expected[gates]


def test_cache_counts_pod_level_pods_by_their_containers_with_the_gate_off() -> None:
    """types.go CalculateResource: requested and the non-zero amounts without the pod level."""
    node = make_node("n", {"cpu": "4", "memory": "4Gi", "pods": "110"})
    with gates_set(**BOTH_OFF):
        info = make_node_info(node, [pod("e", [{"cpu": "100m"}, {}], {"cpu": "2"}, node="n")])
        assert (info.requested.milli_cpu, info.requested.memory) == (100, 0)
        assert (info.non_zero_requested.milli_cpu, info.non_zero_requested.memory) == (
            200,
            2 * 200 * 1024 * 1024,
        )
    with gates_set(**BOTH_ON):
        info = make_node_info(node, [pod("e", [{"cpu": "100m"}, {}], {"cpu": "2"}, node="n")])
        assert info.requested.milli_cpu == 2000


def test_score_skips_pod_level_requests_with_the_gate_off() -> None:
    plugin = NodeResourcesFit(None)
    with gates_set(**BOTH_OFF):
        assert plugin._pod_requests(pod("p", [{}, {}], {"cpu": "1"})) == (
            2 * 100,
            2 * 200 * 1024 * 1024,
        )


def test_balanced_allocation_takes_a_pod_level_only_pod_for_best_effort_with_the_gate_off() -> None:
    """balanced_allocation.go: requests without the pod level are all zero, so PreScore skips."""
    plugin = NodeResourcesBalancedAllocation()
    for gates, skipped in ((BOTH_ON, False), (BOTH_OFF, True)):
        with gates_set(**gates):
            status = plugin.pre_score(CycleState(), pod("p", [{}], {"cpu": "1"}), [])
            assert status.is_skip is skipped


@pytest.mark.parametrize("gates", sorted(GATES_BY_NAME))
def test_resize_hints_count_the_pod_level_whatever_the_gate(gates: str) -> None:
    """A target asking cpu at the pod level only, another bound pod's pod-level cpu shrinking:
    requeued under every gate, and the update is an UpdatePodScaleDown event."""
    with gates_set(**GATES_BY_NAME[gates]):
        target = pod("target", [{}], {"cpu": "1"})
        old = pod("x", [{}], {"cpu": "2"}, node="n")
        new = pod("x", [{}], {"cpu": "1"}, node="n")
        assert HINT(target, old, new) == QueueingHint.QUEUE
        assert ActionType.UPDATE_POD_SCALE_DOWN in pod_update_actions(old, new)
        grown = pod("x", [{}], {"cpu": "3"}, node="n")
        assert HINT(target, old, grown) == QueueingHint.SKIP
        assert ActionType.UPDATE_POD_SCALE_DOWN not in pod_update_actions(old, grown)
