"""What a pod requests with PodLevelResources and InPlacePodLevelResourcesVerticalScaling off.

Ported from staging/src/k8s.io/component-helpers/resource/helpers_test.go
(TestPodRequestsAndLimitsVerticalScalingWrappers, TestAggregateContainerRequestsAndLimits: the
pod-level cases run with InPlacePodLevelResourcesVerticalScalingEnabled false and with
SkipPodLevelResources) and pkg/scheduler/framework/types.go (PodInfo.CalculateResource reads
both gates: pod-level requests skipped and every container defaulted when PodLevelResources is
off). Each case states both values: the gate on and the gate off.
"""

from __future__ import annotations

from typing import Any

import pytest

from apimachinery.quantity import parse_nanos
from scheduler.api.pod import PodView, requests_for_resize_hints
from scheduler.api.request_gates import RequestGates, gates_set, request_gates
from scheduler.api.requests import (
    pod_limits,
    pod_requests,
    scheduler_requests,
    status_matters,
)

MI = 1024 * 1024
INFEASIBLE = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]


def container(name: str, req: dict[str, str] | None = None, lim: dict[str, str] | None = None):
    resources: dict[str, Any] = {}
    if req is not None:
        resources["requests"] = req
    if lim is not None:
        resources["limits"] = lim
    return {"name": name, "image": "i", "resources": resources}


def cpu(amounts: dict[str, int]) -> str | None:
    """The cpu amount as upstream's tables write it ("3.5"), None when absent."""
    nanos = amounts.get("cpu")
    if nanos is None:
        return None
    whole, rest = divmod(nanos, 10**9)
    return str(whole) if not rest else f"{nanos / 10**9:g}"


# (name, spec, status, (requests, limits) with the pod-level status read, the same without)
STATUS_CASES = [
    (
        "pod level requests/limits with PLR vertical scaling and status populated",
        {
            "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}},
            "containers": [container("c1", {"cpu": "1"}, {"cpu": "2"})],
        },
        {
            "allocatedResources": {"cpu": "3"},
            "resources": {"requests": {"cpu": "3.5"}, "limits": {"cpu": "5"}},
        },
        ("3.5", "5"),
        ("2", "4"),  # the pod-level status is not read: spec.resources as written
    ),
    (
        "pod level requests/limits with PLR vertical scaling and infeasible resize",
        {
            "resources": {"requests": {"cpu": "10"}, "limits": {"cpu": "20"}},
            "containers": [container("c1", {"cpu": "1"}, {"cpu": "2"})],
        },
        {
            "conditions": INFEASIBLE,
            "allocatedResources": {"cpu": "3"},
            "resources": {"requests": {"cpu": "4"}, "limits": {"cpu": "8"}},
        },
        ("4", "8"),
        ("10", "20"),  # effectiveReqs stays nil: the desired pod-level amounts count
    ),
    (
        "aggregate container request/limit resolves directly from pod status",
        {"containers": [container("c1", {"cpu": "1"}, {"cpu": "2"})]},
        {
            "allocatedResources": {"cpu": "4"},
            "resources": {"requests": {"cpu": "3"}, "limits": {"cpu": "5"}},
        },
        ("4", "5"),
        ("1", "2"),  # the containers' totals, their statuses being empty
    ),
    (
        "container status aggregation when the pod-level status is absent",
        {
            "resources": {"requests": {"cpu": "3"}, "limits": {"cpu": "7"}},
            "containers": [container("c1", {"cpu": "1"}, {"cpu": "2"})],
        },
        {
            "containerStatuses": [
                {
                    "name": "c1",
                    "allocatedResources": {"cpu": "6"},
                    "resources": {"requests": {"cpu": "5"}, "limits": {"cpu": "7"}},
                }
            ]
        },
        ("3", "7"),
        ("3", "7"),  # pod-level spec wins over the containers either way
    ),
]


@pytest.mark.parametrize(
    ("spec", "status", "with_status", "without"),
    [case[1:] for case in STATUS_CASES],
    ids=[case[0] for case in STATUS_CASES],
)
def test_pod_level_status_only_with_the_gate(
    spec: dict[str, Any],
    status: dict[str, Any],
    with_status: tuple[str, str],
    without: tuple[str, str],
) -> None:
    for pod_level_status, (requests, limits) in ((True, with_status), (False, without)):
        options = {"use_status_resources": True, "pod_level_status": pod_level_status}
        assert cpu(pod_requests(spec, status, **options)) == requests
        assert cpu(pod_limits(spec, status, **options)) == limits


SKIP_CASES = [
    (
        "pod-level requests replace the containers' totals unless skipped",
        {
            "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "4"}},
            "containers": [container("c1", {"cpu": "500m"}, {"cpu": "1"}), container("c2")],
        },
        ({"cpu": "2", "memory": "1Gi"}, {"cpu": "4"}),
        ({"cpu": "500m"}, {"cpu": "1"}),
    ),
    (
        "pod-level hugepages and overhead",
        {
            "resources": {"requests": {"hugepages-2Mi": "4Mi"}, "limits": {"hugepages-2Mi": "4Mi"}},
            "containers": [container("c1", {"cpu": "1"}, {"cpu": "1"})],
            "overhead": {"cpu": "100m"},
        },
        ({"cpu": "1100m", "hugepages-2Mi": "4Mi"}, {"cpu": "1100m", "hugepages-2Mi": "4Mi"}),
        ({"cpu": "1100m"}, {"cpu": "1100m"}),
    ),
    (
        "unsupported pod-level resources are ignored either way",
        {
            "resources": {"requests": {"ephemeral-storage": "1Gi"}},
            "containers": [container("c1", {"cpu": "1"})],
        },
        ({"cpu": "1"}, {}),
        ({"cpu": "1"}, {}),
    ),
]


def nanos(amounts: dict[str, str]) -> dict[str, int]:
    return {name: parse_nanos(text) for name, text in amounts.items()}


@pytest.mark.parametrize(
    ("spec", "counted", "skipped"),
    [case[1:] for case in SKIP_CASES],
    ids=[case[0] for case in SKIP_CASES],
)
def test_skip_pod_level_resources(
    spec: dict[str, Any],
    counted: tuple[dict[str, str], dict[str, str]],
    skipped: tuple[dict[str, str], dict[str, str]],
) -> None:
    for skip, (requests, limits) in ((False, counted), (True, skipped)):
        assert pod_requests(spec, skip_pod_level_resources=skip) == nanos(requests)
        assert pod_limits(spec, skip_pod_level_resources=skip) == nanos(limits)


# types.go CalculateResource: (name, spec, status, (cpu, memory, non-zero cpu, non-zero memory)
# with PodLevelResources on, the same with it off)
CALCULATE_CASES = [
    (
        "pod-level cpu only, containers without requests",
        {"resources": {"requests": {"cpu": "2"}}, "containers": [container("a"), container("b")]},
        {},
        (2000, 0, 2000, 2 * 200 * MI),  # memory defaults: neither level names it
        (0, 0, 2 * 100, 2 * 200 * MI),  # every container defaulted
    ),
    (
        "pod-level cpu and memory over smaller container requests",
        {
            "resources": {"requests": {"cpu": "3", "memory": "2Gi"}},
            "containers": [container("a", {"cpu": "1", "memory": "1Gi"})],
        },
        {},
        (3000, 2048 * MI, 3000, 2048 * MI),
        (1000, 1024 * MI, 1000, 1024 * MI),
    ),
    (
        "pod-level resize under way",
        {"resources": {"requests": {"cpu": "2"}}, "containers": [container("c1", {"cpu": "1"})]},
        {"allocatedResources": {"cpu": "3"}, "resources": {"requests": {"cpu": "2"}}},
        (3000, 0, 3000, 200 * MI),
        (1000, 0, 1000, 200 * MI),
    ),
    (
        "no pod-level resources: the gate changes nothing",
        {"containers": [container("a", {"cpu": "250m"}), container("b", {"memory": "1Gi"})]},
        {},
        (250, 1024 * MI, 350, 1024 * MI + 200 * MI),
        (250, 1024 * MI, 350, 1024 * MI + 200 * MI),
    ),
]


@pytest.mark.parametrize(
    ("spec", "status", "on", "off"),
    [case[1:] for case in CALCULATE_CASES],
    ids=[case[0] for case in CALCULATE_CASES],
)
def test_calculate_resource_with_pod_level_resources_off(
    spec: dict[str, Any],
    status: dict[str, Any],
    on: tuple[int, int, int, int],
    off: tuple[int, int, int, int],
) -> None:
    for enabled, expected in ((True, on), (False, off)):
        with gates_set(pod_level_resources=enabled, pod_level_status=enabled):
            requests, non_zero_cpu, non_zero_memory = scheduler_requests(spec, status)
            got = (requests.milli_cpu, requests.memory, non_zero_cpu, non_zero_memory)
            assert got == expected, enabled
            # a PodView built under the gate counts the same
            view = PodView.from_dict(
                {
                    "metadata": {"name": "p", "namespace": "d", "uid": "u"},
                    "spec": spec,
                    "status": status,
                }
            )
            assert view.requests == requests
            assert (view.non_zero_milli_cpu, view.non_zero_memory) == (
                non_zero_cpu,
                non_zero_memory,
            )


def test_pod_level_status_off_keeps_pod_level_requests() -> None:
    """InPlacePodLevelResourcesVerticalScaling off alone: pod-level requests count at their
    desired amounts, a pod-level status is no reason to leave the spec-only path."""
    spec = {"resources": {"requests": {"cpu": "2"}}, "containers": [container("c1", {"cpu": "1"})]}
    resizing = {"allocatedResources": {"cpu": "3"}, "resources": {"requests": {"cpu": "2"}}}
    assert status_matters(spec, resizing)
    assert not status_matters(spec, resizing, pod_level_status=False)
    with gates_set(pod_level_status=False):
        assert scheduler_requests(spec, resizing)[0].milli_cpu == 2000


def test_resize_hints_count_pod_level_requests_whatever_the_gate() -> None:
    """events.go extractPodScaleDown and fit.go isSchedulableAfterPodScaleDown leave
    SkipPodLevelResources unset: pod-level requests count even with PodLevelResources off."""
    raw = {
        "metadata": {"name": "p", "namespace": "d", "uid": "u"},
        "spec": {"resources": {"requests": {"cpu": "2"}}, "containers": [container("c")]},
    }
    with gates_set(pod_level_resources=False, pod_level_status=False):
        view = PodView.from_dict(raw)
        assert view.requests.milli_cpu == 0
        assert requests_for_resize_hints(view).milli_cpu == 2000
    with gates_set():
        view = PodView.from_dict(raw)
        assert requests_for_resize_hints(view) is view.requests


def test_gates_set_restores_the_previous_values() -> None:
    before = request_gates()
    with gates_set(pod_level_resources=False, pod_level_status=False) as gates:
        assert request_gates() is gates
        with gates_set(pod_level_status=False):
            assert request_gates() == RequestGates(True, False)
        assert request_gates() is gates
    assert request_gates() is before


@pytest.mark.parametrize(
    "gates", [RequestGates(), RequestGates(False, False), RequestGates(True, False)]
)
def test_worker_argument_round_trip(gates: RequestGates) -> None:
    assert RequestGates.from_argument(gates.as_argument()) == gates


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("PodLevelResources", "unexpected item 'PodLevelResources'"),
        ("Other=true", "unexpected item 'Other=true'"),
        ("PodLevelResources=maybe", "PodLevelResources='maybe' is not true or false"),
    ],
)
def test_worker_argument_refuses_anything_else(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RequestGates.from_argument(text)
