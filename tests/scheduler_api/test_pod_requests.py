"""scheduler.api.requests against upstream's cases.

Ported from staging/src/k8s.io/component-helpers/resource/helpers_test.go (TestPodRequestsAndLimits,
TestPodResourceRequests, TestPodRequestsAndLimitsVerticalScalingWrappers and the pod-level cases)
and pkg/scheduler/framework/types_test.go (the non-zero defaults with pod-level resources).
Amounts are compared as upstream's Quantities would be: exactly, in nano units.
"""

from __future__ import annotations

from typing import Any

import pytest

from apimachinery.quantity import parse_nanos
from scheduler.api.pod import PodView
from scheduler.api.requests import (
    fit_score_requests,
    is_pod_level_requests_set,
    is_pod_level_resources_set,
    is_pod_resize_infeasible,
    pod_limits,
    pod_requests,
    resize_pending_reason,
    scheduler_requests,
    status_matters,
)

ALWAYS = "Always"


def c(
    name: str = "",
    req: dict[str, str] | None = None,
    lim: dict[str, str] | None = None,
    restart: str | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": "i"}
    resources: dict[str, Any] = {}
    if req is not None:
        resources["requests"] = req
    if lim is not None:
        resources["limits"] = lim
    if resources:
        container["resources"] = resources
    if restart:
        container["restartPolicy"] = restart
    return container


def cs(
    name: str,
    allocated: dict[str, str] | None = None,
    actual: dict[str, str] | None = None,
    actual_limits: dict[str, str] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {"name": name}
    if allocated is not None:
        status["allocatedResources"] = allocated
    resources: dict[str, Any] = {}
    if actual is not None:
        resources["requests"] = actual
    if actual_limits is not None:
        resources["limits"] = actual_limits
    if resources:
        status["resources"] = resources
    return status


INFEASIBLE = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]


def q(amounts: dict[str, str]) -> dict[str, int]:
    return {name: parse_nanos(text) for name, text in amounts.items()}


PLR_SPEC: dict[str, Any] = {
    "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}},
    "containers": [c("c1", {"cpu": "1"}, {"cpu": "2"})],
}
PLR_STATUS: dict[str, Any] = {
    "allocatedResources": {"cpu": "3"},
    "resources": {"requests": {"cpu": "3.5"}, "limits": {"cpu": "5"}},
}
PLR_INFEASIBLE_SPEC: dict[str, Any] = {
    "resources": {"requests": {"cpu": "10"}, "limits": {"cpu": "20"}},
    "containers": [c("c1", {"cpu": "1"}, {"cpu": "2"})],
}
PLR_INFEASIBLE_STATUS: dict[str, Any] = {
    "conditions": INFEASIBLE,
    "allocatedResources": {"cpu": "3"},
    "resources": {"requests": {"cpu": "4"}, "limits": {"cpu": "8"}},
}
AGG_SPEC: dict[str, Any] = {"containers": [c("c1", {"cpu": "1"}, {"cpu": "2"})]}
AGG_POD_RESOURCES = {"requests": {"cpu": "3"}, "limits": {"cpu": "5"}}
AGG_POD_RESOURCES_7 = {"requests": {"cpu": "3"}, "limits": {"cpu": "7"}}
AGG_CS_7 = cs("c1", {"cpu": "6"}, {"cpu": "5"}, {"cpu": "7"})
AGG_CS_8 = cs("c1", {"cpu": "6"}, {"cpu": "5"}, {"cpu": "8"})

# (description, spec, status, options, expected requests)
REQUEST_CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, str]]] = [
    ("just-limit-no-overhead", {"containers": [c(lim={"cpu": "9"})]}, {}, {}, {}),
    (
        "just-overhead",
        {"containers": [c()], "overhead": {"cpu": "5", "memory": "5"}},
        {},
        {},
        {"cpu": "5", "memory": "5"},
    ),
    (
        "req-and-overhead",
        {
            "containers": [c(req={"cpu": "1", "memory": "10"})],
            "overhead": {"cpu": "5", "memory": "5"},
        },
        {},
        {},
        {"cpu": "6", "memory": "15"},
    ),
    (
        "nil options, larger init container",
        {"initContainers": [c(req={"cpu": "4"})], "containers": [c(req={"cpu": "1"})]},
        {},
        {},
        {"cpu": "4"},
    ),
    (
        "nil options, larger containers",
        {
            "initContainers": [c(req={"cpu": "2"})],
            "containers": [c(req={"cpu": "2"}), c(req={"cpu": "3"})],
        },
        {},
        {},
        {"cpu": "5"},
    ),
    (
        "pod overhead excluded",
        {
            "initContainers": [c(req={"cpu": "2"})],
            "overhead": {"cpu": "1"},
            "containers": [c(req={"cpu": "2"}), c(req={"cpu": "3"})],
        },
        {},
        {"exclude_overhead": True},
        {"cpu": "5"},
    ),
    (
        "pod overhead included",
        {
            "initContainers": [c(req={"cpu": "2"}, lim={"cpu": "2"})],
            "overhead": {"cpu": "1", "memory": "1Gi"},
            "containers": [c(req={"cpu": "2"}), c(req={"cpu": "3"})],
        },
        {},
        {},
        {"cpu": "6", "memory": "1Gi"},
    ),
    (
        "resized, infeasible",
        {"containers": [c("container-1", {"cpu": "4"})]},
        {"conditions": INFEASIBLE, "containerStatuses": [cs("container-1", actual={"cpu": "2"})]},
        {"use_status_resources": True},
        {"cpu": "2"},
    ),
    (
        "resized, infeasible & in-progress",
        {"containers": [c("container-1", {"cpu": "6"})]},
        {
            "conditions": INFEASIBLE,
            "containerStatuses": [cs("container-1", allocated={"cpu": "4"}, actual={"cpu": "2"})],
        },
        {"use_status_resources": True},
        {"cpu": "4"},
    ),
    (
        "resized, no resize status",
        {"containers": [c("container-1", {"cpu": "4"})]},
        {"containerStatuses": [cs("container-1", actual={"cpu": "2"})]},
        {"use_status_resources": True},
        {"cpu": "4"},
    ),
    (
        "resized: per-resource 3-way maximum",
        {
            "containers": [
                c("container-1", {"cpu": "30m", "memory": "20M", "ephemeral-storage": "10G"})
            ]
        },
        {
            "containerStatuses": [
                cs(
                    "container-1",
                    allocated={"cpu": "20m", "memory": "10M", "ephemeral-storage": "30G"},
                    actual={"cpu": "10m", "memory": "30M", "ephemeral-storage": "20G"},
                )
            ]
        },
        {"use_status_resources": True},
        {"cpu": "30m", "memory": "30M", "ephemeral-storage": "30G"},
    ),
    (
        "resized, infeasible, but don't use status",
        {"containers": [c("container-1", {"cpu": "4"})]},
        {"conditions": INFEASIBLE, "containerStatuses": [cs("container-1", actual={"cpu": "2"})]},
        {},
        {"cpu": "4"},
    ),
    (
        "resized, restartable init container, infeasible",
        {"initContainers": [c("restartable-init-1", {"cpu": "4"}, restart=ALWAYS)]},
        {
            "conditions": INFEASIBLE,
            "initContainerStatuses": [cs("restartable-init-1", actual={"cpu": "2"})],
        },
        {"use_status_resources": True},
        {"cpu": "2"},
    ),
    (
        "resized, restartable init container, no resize status",
        {"initContainers": [c("restartable-init-1", {"cpu": "4"}, restart=ALWAYS)]},
        {"initContainerStatuses": [cs("restartable-init-1", actual={"cpu": "2"})]},
        {"use_status_resources": True},
        {"cpu": "4"},
    ),
    (
        "restartable init container",
        {
            "initContainers": [c("r1", {"cpu": "1"}, restart=ALWAYS)],
            "containers": [c("container-1", {"cpu": "1"})],
        },
        {},
        {},
        {"cpu": "2"},
    ),
    (
        "multiple restartable init containers",
        {
            "initContainers": [
                c("init-1", {"cpu": "5"}),
                c("r1", {"cpu": "1"}, restart=ALWAYS),
                c("r2", {"cpu": "2"}, restart=ALWAYS),
                c("r3", {"cpu": "3"}, restart=ALWAYS),
            ],
            "containers": [c("container-1", {"cpu": "1"})],
        },
        {},
        {},
        {"cpu": "7"},
    ),
    (
        "multiple restartable and regular init containers",
        {
            "initContainers": [
                c("init-1", {"cpu": "5"}),
                c("r1", {"cpu": "1"}, restart=ALWAYS),
                c("r2", {"cpu": "2"}, restart=ALWAYS),
                c("init-2", {"cpu": "5"}),
                c("r3", {"cpu": "3"}, restart=ALWAYS),
            ],
            "containers": [c("container-1", {"cpu": "1"})],
        },
        {},
        {},
        {"cpu": "8"},
    ),
    (
        "restartable-init, init and regular",
        {
            "initContainers": [c("r1", {"cpu": "10"}, restart=ALWAYS), c("init-1", {"cpu": "200"})],
            "containers": [c("container-1", {"cpu": "100"})],
        },
        {},
        {},
        {"cpu": "210"},
    ),
    (
        "aggregate request resolves max of sums instead of sum of maxes",
        {"containers": [c("c1", {"cpu": "1"}), c("c2", {"cpu": "2"})]},
        {"containerStatuses": [cs("c1", allocated={"cpu": "2"}), cs("c2", allocated={"cpu": "1"})]},
        {"use_status_resources": True},
        {"cpu": "3"},
    ),
    (
        "non missing container requests applied to init container",
        {"initContainers": [c("i1", {"cpu": "1"})]},
        {},
        {"non_missing": q({"memory": "100Mi"})},
        {"cpu": "1", "memory": "100Mi"},
    ),
    (
        "non missing container requests applied to regular container",
        {"containers": [c("c1", {"cpu": "1"})]},
        {},
        {"non_missing": q({"memory": "100Mi"})},
        {"cpu": "1", "memory": "100Mi"},
    ),
    # Pod-level resources (TestPodLevelResourceRequests).
    (
        "pod level memory resource with SkipPodLevelResources true",
        {"resources": {"requests": {"memory": "2Mi"}}, "containers": [c(req={"memory": "1Mi"})]},
        {},
        {"skip_pod_level_resources": True},
        {"memory": "1Mi"},
    ),
    (
        "pod level memory resource with SkipPodLevelResources false",
        {"resources": {"requests": {"memory": "2Mi"}}, "containers": [c(req={"memory": "1Mi"})]},
        {},
        {},
        {"memory": "2Mi"},
    ),
    (
        "pod level memory and container level cpu resources",
        {"resources": {"requests": {"memory": "2Mi"}}, "containers": [c(req={"cpu": "2m"})]},
        {},
        {},
        {"memory": "2Mi", "cpu": "2m"},
    ),
    (
        "pod level unsupported resources set at both pod-level and container-level",
        {"resources": {"requests": {"storage": "2Mi"}}, "containers": [c(req={"storage": "3Mi"})]},
        {},
        {},
        {"storage": "3Mi"},
    ),
    (
        "pod level unsupported resources set at pod-level with container-level cpu",
        {"resources": {"requests": {"storage": "2Mi"}}, "containers": [c(req={"cpu": "1m"})]},
        {},
        {},
        {"cpu": "1m"},
    ),
    (
        "pod level hugepages",
        {
            "resources": {"requests": {"hugepages-2Mi": "4Mi"}},
            "containers": [c(req={"hugepages-2Mi": "2Mi"})],
        },
        {},
        {},
        {"hugepages-2Mi": "4Mi"},
    ),
    (
        "pod level requests with overhead",
        {
            "resources": {"requests": {"cpu": "8"}},
            "overhead": {"cpu": "1"},
            "containers": [c(req={"cpu": "1"})],
        },
        {},
        {},
        {"cpu": "9"},
    ),
    # InPlacePodLevelResourcesVerticalScaling is on since v1.36 (beta): pod-level status is read
    # (TestPodRequestsAndLimitsVerticalScalingWrappers, TestAggregateContainerRequestsAndLimits).
    (
        "pod level requests/limits with PLR vertical scaling enabled and status populated",
        PLR_SPEC,
        PLR_STATUS,
        {"use_status_resources": True},
        {"cpu": "3.5"},
    ),
    (
        "pod level requests/limits with PLR vertical scaling enabled and infeasible resize",
        PLR_INFEASIBLE_SPEC,
        PLR_INFEASIBLE_STATUS,
        {"use_status_resources": True},
        {"cpu": "4"},
    ),
    (
        "pod level status without use_status_resources is not read",
        PLR_SPEC,
        PLR_STATUS,
        {},
        {"cpu": "2"},
    ),
    (
        "pod level status less overhead, plus overhead",
        {
            "resources": {"requests": {"cpu": "2"}},
            "overhead": {"cpu": "1"},
            "containers": [c("c1", {"cpu": "1"})],
        },
        {"allocatedResources": {"cpu": "4"}, "resources": {"requests": {"cpu": "3"}}},
        {"use_status_resources": True},
        {"cpu": "4"},
    ),
    (
        "aggregate container request/limit resolves directly from pod status",
        AGG_SPEC,
        {"allocatedResources": {"cpu": "4"}, "resources": AGG_POD_RESOURCES},
        {"use_status_resources": True},
        {"cpu": "4"},
    ),
    (
        "falls back to container status aggregation when podAllocatedResources is nil",
        AGG_SPEC,
        {"containerStatuses": [AGG_CS_7], "resources": AGG_POD_RESOURCES_7},
        {"use_status_resources": True},
        {"cpu": "6"},
    ),
    (
        "falls back to container status aggregation when podResources is nil",
        AGG_SPEC,
        {"containerStatuses": [AGG_CS_8], "allocatedResources": {"cpu": "6"}},
        {"use_status_resources": True},
        {"cpu": "6"},
    ),
]


@pytest.mark.parametrize(
    ("spec", "status", "options", "expected"),
    [case[1:] for case in REQUEST_CASES],
    ids=[case[0] for case in REQUEST_CASES],
)
def test_pod_requests(
    spec: dict[str, Any], status: dict[str, Any], options: dict[str, Any], expected: dict[str, str]
) -> None:
    assert pod_requests(spec, status, **options) == q(expected)


LIMIT_CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, str]]] = [
    (
        "all-req-lim-and-overhead",
        {
            "containers": [c(req={"cpu": "1", "memory": "10"}, lim={"cpu": "2", "memory": "12"})],
            "overhead": {"cpu": "5", "memory": "5"},
        },
        {},
        {},
        {"cpu": "7", "memory": "17"},
    ),
    (
        "req-some-lim-and-overhead",
        {
            "containers": [c(req={"cpu": "1", "memory": "10"}, lim={"cpu": "2"})],
            "overhead": {"cpu": "5", "memory": "5"},
        },
        {},
        {},
        {"cpu": "7"},
    ),
    (
        "two containers, massive init, no overhead",
        {
            "overhead": {"cpu": "3", "memory": "8"},
            "containers": [
                c("a", lim={"cpu": "2", "memory": "10"}),
                c("b", lim={"cpu": "8", "memory": "24"}),
            ],
            "initContainers": [
                c("s", lim={"cpu": "1", "memory": "5"}),
                c("big", lim={"cpu": "80", "memory": "240"}),
            ],
        },
        {},
        {"exclude_overhead": True},
        {"cpu": "80", "memory": "240"},
    ),
    (
        "pod overhead included (only on non-zero limits)",
        {
            "overhead": {"cpu": "1", "memory": "1Gi"},
            "initContainers": [c(lim={"cpu": "2"})],
            "containers": [c(lim={"cpu": "2"}), c(lim={"cpu": "3"})],
        },
        {},
        {},
        {"cpu": "6"},
    ),
    (
        "no limited containers should result in no limits for the pod",
        {"containers": [c()]},
        {},
        {},
        {},
    ),
    (
        "container limits aggregation with infeasible resize",
        {"containers": [c("c1", lim={"cpu": "10"})]},
        {"conditions": INFEASIBLE, "containerStatuses": [cs("c1", actual_limits={"cpu": "6"})]},
        {"use_status_resources": True},
        {"cpu": "6"},
    ),
    (
        "pod level limits with PLR vertical scaling enabled and status populated",
        PLR_SPEC,
        PLR_STATUS,
        {"use_status_resources": True},
        {"cpu": "5"},
    ),
    (
        "pod level limits with PLR vertical scaling enabled and infeasible resize",
        PLR_INFEASIBLE_SPEC,
        PLR_INFEASIBLE_STATUS,
        {"use_status_resources": True},
        {"cpu": "8"},
    ),
    (
        "aggregate container limits resolve directly from pod status",
        AGG_SPEC,
        {"allocatedResources": {"cpu": "4"}, "resources": AGG_POD_RESOURCES},
        {"use_status_resources": True},
        {"cpu": "5"},
    ),
    (
        "limits: podAllocatedResources nil, pod status limits still read",
        AGG_SPEC,
        {"containerStatuses": [AGG_CS_7], "resources": AGG_POD_RESOURCES_7},
        {"use_status_resources": True},
        {"cpu": "7"},
    ),
    (
        "limits: podResources nil, container status aggregation",
        AGG_SPEC,
        {"containerStatuses": [AGG_CS_8], "allocatedResources": {"cpu": "6"}},
        {"use_status_resources": True},
        {"cpu": "8"},
    ),
    (
        "pod level limits replace container limits",
        {"resources": {"limits": {"cpu": "4"}}, "containers": [c("c1", lim={"cpu": "2"})]},
        {},
        {},
        {"cpu": "4"},
    ),
]


@pytest.mark.parametrize(
    ("spec", "status", "options", "expected"),
    [case[1:] for case in LIMIT_CASES],
    ids=[case[0] for case in LIMIT_CASES],
)
def test_pod_limits(
    spec: dict[str, Any], status: dict[str, Any], options: dict[str, Any], expected: dict[str, str]
) -> None:
    assert pod_limits(spec, status, **options) == q(expected)


def test_pod_level_predicates() -> None:
    assert not is_pod_level_resources_set({"containers": []})
    assert not is_pod_level_requests_set({"resources": {"requests": {}}})
    assert not is_pod_level_requests_set({"resources": {"requests": {"storage": "1"}}})
    assert is_pod_level_requests_set({"resources": {"requests": {"hugepages-2Mi": "2Mi"}}})
    assert is_pod_level_resources_set({"resources": {"limits": {"memory": "1Gi"}}})
    assert not is_pod_level_requests_set({"resources": {"limits": {"memory": "1Gi"}}})


def test_resize_conditions() -> None:
    deferred = {
        "conditions": [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]
    }
    assert resize_pending_reason(deferred) == "Deferred"
    assert not is_pod_resize_infeasible(deferred)
    assert is_pod_resize_infeasible({"conditions": INFEASIBLE})


# types_test.go (TestCalculateResource / the pod-level non-zero rule): (spec, requests cpu
# milli, memory, non-zero milli-cpu, non-zero memory)
NON_ZERO_CASES: list[tuple[str, dict[str, Any], int, int, int, int]] = [
    (
        "no requests: 100m and 200Mi per container",
        {"containers": [c("a"), c("b")]},
        0,
        0,
        200,
        2 * 200 * 1024 * 1024,
    ),
    ("a request of 0 stays 0", {"containers": [c("a", {"cpu": "0", "memory": "0"})]}, 0, 0, 0, 0),
    (
        "pod-level cpu and memory: no defaults",
        {"resources": {"requests": {"cpu": "8", "memory": "1Gi"}}, "containers": [c("a")]},
        8000,
        1024**3,
        8000,
        1024**3,
    ),
    (
        "pod-level cpu only: memory defaults per container",
        {"resources": {"requests": {"cpu": "2"}}, "containers": [c("a"), c("b")]},
        2000,
        0,
        2000,
        2 * 200 * 1024 * 1024,
    ),
    (
        "pod-level cpu, a container names memory: no memory default",
        {
            "resources": {"requests": {"cpu": "2"}},
            "containers": [c("a", {"memory": "1Gi"}), c("b")],
        },
        2000,
        1024**3,
        2000,
        1024**3,
    ),
]


@pytest.mark.parametrize(
    ("spec", "cpu", "memory", "non_zero_cpu", "non_zero_memory"),
    [case[1:] for case in NON_ZERO_CASES],
    ids=[case[0] for case in NON_ZERO_CASES],
)
def test_scheduler_requests(
    spec: dict[str, Any], cpu: int, memory: int, non_zero_cpu: int, non_zero_memory: int
) -> None:
    requests, nz_cpu, nz_memory = scheduler_requests(spec, {})
    assert (requests.milli_cpu, requests.memory, nz_cpu, nz_memory) == (
        cpu,
        memory,
        non_zero_cpu,
        non_zero_memory,
    )


def test_scheduler_counts_a_pod_level_resize_from_the_pod_level_status() -> None:
    """PodInfo.calculateResource with InPlacePodLevelResourcesVerticalScaling on (v1.36+): a
    pod-level status that matches the spec keeps the pod on the spec-only path; one that does
    not (a pod-level resize under way) is counted at the larger amounts."""
    spec = {"resources": {"requests": {"cpu": "2"}}, "containers": [c("c1", {"cpu": "1"})]}
    settled = {"allocatedResources": {"cpu": "2"}, "resources": {"requests": {"cpu": "2"}}}
    assert not status_matters(spec, settled)
    assert scheduler_requests(spec, settled)[0].milli_cpu == 2000
    resizing = {"allocatedResources": {"cpu": "3"}, "resources": {"requests": {"cpu": "2"}}}
    assert status_matters(spec, resizing)
    assert scheduler_requests(spec, resizing)[0].milli_cpu == 3000


def test_fit_score_counts_the_containers_alone() -> None:
    """kube-scheduler v1.36.2's NodeResourcesFit Score (fit.go NewFit → getScorer: a
    resourceAllocationScorer without feature fields) skips pod-level requests and fills in
    defaults per container; the v1.36.2 binary scored a pod with pod-level requests of 3 CPUs
    and one container without requests at [100, 209715200]."""
    spec = {
        "resources": {"requests": {"cpu": "2"}},
        "containers": [c("a", {"memory": "1Gi"}), c("b")],
    }
    requests = fit_score_requests(spec)
    assert (requests.milli_cpu, requests.memory) == (200, 1024**3 + 200 * 1024 * 1024)
    alone = {"resources": {"requests": {"cpu": "3", "memory": "100Mi"}}, "containers": [c("c")]}
    requests = fit_score_requests(alone)
    assert (requests.milli_cpu, requests.memory) == (100, 209715200)


def _pod(spec: dict[str, Any], status: dict[str, Any], rv: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "d", "uid": "u", "resourceVersion": rv},
        "spec": {"nodeName": "n", **spec},
        "status": status,
    }


def test_pod_view_follows_a_resize_through_status_only_updates() -> None:
    """A status-only update that moves a resize recomputes the requests (the spec-reuse fast
    path must not keep the old ones)."""
    spec = {"containers": [c("app", {"cpu": "1"})]}
    first = PodView.from_dict(_pod(spec, {"phase": "Running"}, "1"))
    assert first.requests.milli_cpu == 1000
    grown = {
        "phase": "Running",
        "containerStatuses": [cs("app", allocated={"cpu": "3"}, actual={"cpu": "3"})],
    }
    second = PodView.from_dict(_pod(spec, grown, "2"), first)
    assert second.requests.milli_cpu == 3000
    assert second.non_zero_milli_cpu == 3000
    third = PodView.from_dict(_pod(spec, {"phase": "Running"}, "3"), second)
    assert third.requests.milli_cpu == 1000
