"""NodeResourcesFit with pod-level resources and in-place resize.

Ported from upstream's pkg/scheduler/framework/plugins/noderesources/fit_test.go: the
pod-level cases of TestEnoughRequests, TestFitScore's pod-level case (the non-zero defaults),
and Test_isSchedulableAfterPodEvent (isSchedulableAfterPodScaleDown), plus the cache counting a
resized pod at the larger of desired and actuated amounts (framework/types_test.go).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import PodView
from scheduler.framework.events import QueueingHint
from scheduler.framework.interface import CycleState
from scheduler.plugins.noderesources.fit import NodeResourcesFit
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


def test_score_uses_pod_level_requests_and_defaults_per_container() -> None:
    """resource_allocation.go: the incoming pod's non-zero request is the pod-level one when
    set; containers without a request of another resource count 100m / 200Mi each."""
    plugin = NodeResourcesFit(None)
    p = pod("p", [{}, {}], {"cpu": "1"})
    assert plugin._pod_requests(p) == (1000, 2 * 200 * 1024 * 1024)


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
