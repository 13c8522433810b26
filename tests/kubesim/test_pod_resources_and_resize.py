"""kubesim as a v1.37 API server: pod-level resources, pods/resize and the kubelet's answer.

Validation cases are ported from upstream's pkg/apis/core/validation/validation_test.go
(TestValidatePodResources / the pod-level cases of TestValidatePodSpec, and TestValidatePodResize);
the kubelet's conditions follow pkg/kubelet's allocation manager (PodResizePending with reason
Infeasible or Deferred, PodResizeInProgress while a resize is actuated).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubesim.discovery import version_info
from kubesim.validation import validate
from tests.kubesim.conftest import Kube

PODS = "/api/v1/namespaces/default/pods"
AGGREGATE = "must be greater than or equal to aggregate container requests of "
INVALID, FORBIDDEN, NOT_SUPPORTED = (
    "FieldValueInvalid",
    "FieldValueForbidden",
    "FieldValueNotSupported",
)


def container(
    name: str = "c",
    req: dict[str, str] | None = None,
    lim: dict[str, str] | None = None,
    restart: str = "",
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "image": "busybox"}
    resources: dict[str, Any] = {}
    if req:
        resources["requests"] = req
    if lim:
        resources["limits"] = lim
    if resources:
        out["resources"] = resources
    if restart:
        out["restartPolicy"] = restart
    return out


def pod(
    containers: list[dict[str, Any]], pod_level: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": containers, **spec}
    if pod_level is not None:
        body["resources"] = pod_level
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": body}


def causes(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c.field, c.reason, c.message) for c in validate("Pod", obj, None)]


@pytest.mark.parametrize(
    ("name", "obj", "expected"),
    [
        (
            "pod-level requests and limits of cpu and memory",
            pod(
                [container()],
                {
                    "requests": {"cpu": "8", "memory": "1Gi"},
                    "limits": {"cpu": "8", "memory": "1Gi"},
                },
            ),
            [],
        ),
        (
            "pod-level hugepages with memory",
            pod(
                [container()],
                {
                    "requests": {"memory": "1Gi", "hugepages-2Mi": "2Mi"},
                    "limits": {"memory": "1Gi", "hugepages-2Mi": "2Mi"},
                },
            ),
            [],
        ),
        (
            "unsupported pod-level resource",
            pod([container()], {"requests": {"ephemeral-storage": "1Gi"}}),
            [
                (
                    "spec.resources.requests[ephemeral-storage]",
                    NOT_SUPPORTED,
                    'Unsupported value: "ephemeral-storage": supported values: '
                    '"cpu", "hugepages-", "memory"',
                )
            ],
        ),
        (
            "pod-level request above its limit",
            pod([container()], {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
            [
                (
                    "spec.resources.requests",
                    INVALID,
                    'Invalid value: "2": must be less than or equal to cpu limit of 1',
                )
            ],
        ),
        (
            "pod-level requests below the aggregate container requests",
            pod(
                [
                    container("a", {"cpu": "1", "memory": "4Gi"}),
                    container("b", {"cpu": "500m", "memory": "2Gi"}),
                ],
                {"requests": {"cpu": "1", "memory": "576Mi"}},
            ),
            [
                (
                    "spec.resources.requests[cpu]",
                    INVALID,
                    f'Invalid value: "1": {AGGREGATE}1500m',
                ),
                (
                    "spec.resources.requests[memory]",
                    INVALID,
                    'Invalid value: "576Mi": must be greater than or equal to aggregate container '
                    "requests of 6Gi",
                ),
            ],
        ),
        (
            "sidecars count in the aggregate",
            pod(
                [container("a", {"cpu": "1"})],
                {"requests": {"cpu": "1"}},
                initContainers=[container("s", {"cpu": "1"}, restart="Always")],
            ),
            [
                (
                    "spec.resources.requests[cpu]",
                    INVALID,
                    f'Invalid value: "1": {AGGREGATE}2',
                )
            ],
        ),
        (
            "a container limit above the pod limit",
            pod([container("a", lim={"memory": "2Gi"})], {"limits": {"memory": "1Gi"}}),
            [
                (
                    "spec.resources.containers[0][memory].limits",
                    INVALID,
                    'Invalid value: "2Gi": must be less than or equal to pod limits of 1Gi',
                )
            ],
        ),
        (
            "windows pods may not set pod-level resources",
            pod([container()], {"requests": {"cpu": "1"}}, os={"name": "windows"}),
            [("spec.resources", FORBIDDEN, "Forbidden: may not be set for a windows pod")],
        ),
    ],
)
def test_pod_level_resources_validation(
    name: str, obj: dict[str, Any], expected: list[tuple[str, str, str]]
) -> None:
    assert causes(obj) == expected


def test_version_is_the_one_served() -> None:
    info = version_info()
    assert (info["major"], info["minor"]) == ("1", "37")
    assert info["gitVersion"] == "v1.37.0-aiosched"


async def test_pod_level_rejection_is_422_with_upstream_message(kube: Kube) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        **pod([container("a", {"cpu": "2"})], {"requests": {"cpu": "1"}}),
    }
    status, answer = await kube.call("POST", PODS, body)
    assert status == 422
    assert answer["message"] == (
        'Pod "p" is invalid: spec.resources.requests[cpu]: Invalid value: "1": must be greater '
        "than or equal to aggregate container requests of 2"
    )


async def _running(kube: Kube, name: str, node: str, cpu: str) -> dict[str, Any]:
    await kube.create_pod(
        name, containers=[container("c", {"cpu": cpu, "memory": "100Mi"})], nodeName=node
    )
    for _ in range(100):
        _, body = await kube.call("GET", f"{PODS}/{name}")
        if body["status"].get("phase") == "Running":
            return body  # type: ignore[no-any-return]
        await asyncio.sleep(0.02)
    raise AssertionError(f"{name} never ran")


def _resize(cpu: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}


async def _settled(kube: Kube, name: str, check: Any) -> dict[str, Any]:
    for _ in range(100):
        _, body = await kube.call("GET", f"{PODS}/{name}")
        if check(body):
            return body  # type: ignore[no-any-return]
        await asyncio.sleep(0.02)
    raise AssertionError(f"{name}: {body['status']}")


def _pending(body: dict[str, Any]) -> dict[str, Any] | None:
    for condition in body["status"].get("conditions") or []:
        if condition["type"] == "PodResizePending":
            return condition  # type: ignore[no-any-return]
    return None


SMP = "application/strategic-merge-patch+json"


async def test_resize_is_actuated_when_the_node_has_room(kube: Kube) -> None:
    running = await _running(kube, "r", "node-0", "1")
    statuses = running["status"]["containerStatuses"]
    assert statuses[0]["allocatedResources"] == {"cpu": "1", "memory": "100Mi"}
    assert statuses[0]["resources"] == {"requests": {"cpu": "1", "memory": "100Mi"}}
    status, body = await kube.call("PATCH", f"{PODS}/r/resize", _resize("2"), content_type=SMP)
    assert status == 200, body
    assert body["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "2"
    done = await _settled(
        kube,
        "r",
        lambda b: (
            b["status"]["containerStatuses"][0].get("resources", {}).get("requests", {}).get("cpu")
            == "2"
        ),
    )
    assert done["status"]["containerStatuses"][0]["allocatedResources"]["cpu"] == "2"
    types = [c["type"] for c in done["status"]["conditions"]]
    assert "PodResizePending" not in types and "PodResizeInProgress" not in types


async def test_resize_beyond_the_node_is_infeasible(kube: Kube) -> None:
    await _running(kube, "r", "node-0", "1")
    await kube.call("PATCH", f"{PODS}/r/resize", _resize("64"), content_type=SMP)
    body = await _settled(kube, "r", _pending)
    condition = _pending(body)
    assert condition is not None and condition["reason"] == "Infeasible"
    assert condition["message"] == (
        "Node didn't have enough capacity: cpu, requested: 64000, capacity: 4000"
    )
    assert body["status"]["containerStatuses"][0]["allocatedResources"]["cpu"] == "1"


async def test_resize_beside_other_pods_is_deferred_then_actuated(kube: Kube) -> None:
    await _running(kube, "big", "node-0", "2")
    await _running(kube, "r", "node-0", "1")
    await kube.call("PATCH", f"{PODS}/r/resize", _resize("3"), content_type=SMP)
    body = await _settled(kube, "r", _pending)
    condition = _pending(body)
    assert condition is not None and condition["reason"] == "Deferred"
    assert condition["message"] == (
        "Node didn't have enough resource: cpu, requested: 3000, used: 2000, capacity: 4000"
    )
    await kube.call("DELETE", f"{PODS}/big", gracePeriodSeconds="0")
    await _settled(
        kube,
        "r",
        lambda b: (
            _pending(b) is None
            and b["status"]["containerStatuses"][0]["allocatedResources"]["cpu"] == "3"
        ),
    )


@pytest.mark.parametrize(
    ("patch", "field", "message"),
    [
        (
            {
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "resources": {
                                "requests": {
                                    "cpu": "1",
                                    "memory": "100Mi",
                                    "ephemeral-storage": "1Gi",
                                }
                            },
                        }
                    ]
                }
            },
            "spec",
            "Forbidden: only cpu and memory resources are mutable",
        ),
        (
            {
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "resources": {
                                "requests": {"cpu": "1", "memory": "100Mi"},
                                "limits": {"cpu": "1", "memory": "100Mi"},
                            },
                        }
                    ]
                }
            },
            "spec",
            'Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing',
        ),
        (
            {"spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": None}}}]}},
            "spec.containers[0].resources.requests[memory]",
            "Forbidden: resource removal is not supported",
        ),
    ],
)
async def test_resize_validation(
    kube: Kube, patch: dict[str, Any], field: str, message: str
) -> None:
    await _running(kube, "r", "node-0", "1")
    status, body = await kube.call("PATCH", f"{PODS}/r/resize", patch, content_type=SMP)
    assert status == 422, body
    assert (field, message) in [(c["field"], c["message"]) for c in body["details"]["causes"]]


async def test_plain_update_may_not_change_resources(kube: Kube) -> None:
    await _running(kube, "r", "node-0", "1")
    status, _ = await kube.call("PATCH", f"{PODS}/r", _resize("2"), content_type=SMP)
    assert status == 422


# In-place resize of pod-level resources: InPlacePodLevelResourcesVerticalScaling, beta and on
# since v1.36 (pkg/registry/core/pod/strategy.go dropNonResizeUpdates keeps spec.resources).
async def _running_pod_level(kube: Kube, name: str, pod_cpu: str) -> dict[str, Any]:
    await kube.create_pod(
        name,
        containers=[container("c", {"cpu": "1", "memory": "100Mi"})],
        nodeName="node-0",
        resources={"requests": {"cpu": pod_cpu, "memory": "200Mi"}},
    )
    for _ in range(100):
        _, body = await kube.call("GET", f"{PODS}/{name}")
        if body["status"].get("phase") == "Running":
            return body  # type: ignore[no-any-return]
        await asyncio.sleep(0.02)
    raise AssertionError(f"{name} never ran")


async def test_pod_level_resize_is_served_and_counted_as_the_scheduler_counts_it(
    kube: Kube,
) -> None:
    from scheduler.api.requests import scheduler_requests

    before = await _running_pod_level(kube, "plr", "2")
    assert scheduler_requests(before["spec"], before["status"])[0].milli_cpu == 2000
    patch = {"spec": {"resources": {"requests": {"cpu": "3"}}}}
    status, body = await kube.call("PATCH", f"{PODS}/plr/resize", patch, content_type=SMP)
    assert status == 200, body
    assert body["spec"]["resources"]["requests"] == {"cpu": "3", "memory": "200Mi"}
    assert body["metadata"]["generation"] == before["metadata"].get("generation", 1) + 1
    assert scheduler_requests(body["spec"], body["status"])[0].milli_cpu == 3000


@pytest.mark.parametrize(
    ("patch", "field", "message"),
    [
        (
            {"spec": {"resources": {"requests": {"cpu": "500m"}}}},
            "spec.resources.requests[cpu]",
            'Invalid value: "500m": must be greater than or equal to aggregate container '
            "requests of 1",
        ),
        (
            {"spec": {"resources": {"requests": {"memory": None}}}},
            "spec.resources.requests[memory]",
            "Forbidden: resource removal is not supported",
        ),
        (
            {"spec": {"resources": {"requests": {"hugepages-2Mi": "2Mi"}}}},
            "spec",
            "Forbidden: only cpu and memory resources are mutable",
        ),
    ],
)
async def test_pod_level_resize_validation(
    kube: Kube, patch: dict[str, Any], field: str, message: str
) -> None:
    await _running_pod_level(kube, "plr", "2")
    status, body = await kube.call("PATCH", f"{PODS}/plr/resize", patch, content_type=SMP)
    assert status == 422, body
    assert (field, message) in [(c["field"], c["message"]) for c in body["details"]["causes"]]


# What the kubelet reports at the pod level (pkg/kubelet/kubelet_pods.go convertStatusToAPIStatus
# with InPlacePodLevelResourcesVerticalScaling on) and how it answers a pod-level resize
# (pkg/kubelet/allocation/allocation_manager.go handlePodResourcesResize).
def test_pod_level_status_is_pod_requests_and_the_pod_cgroup() -> None:
    from kubesim.resize import pod_level_status

    spec = pod(
        [container("a", {"cpu": "500m", "memory": "100Mi"}, {"cpu": "1"})],
        {"requests": {"cpu": "1", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
        initContainers=[
            container("s", {"cpu": "250m", "ephemeral-storage": "1Gi"}, restart="Always")
        ],
        overhead={"cpu": "100m", "memory": "10Mi"},
    )["spec"]
    assert pod_level_status(spec) == {
        # PodRequests: the pod level for cpu and memory, the containers' aggregate for the
        # rest, the overhead added
        "allocatedResources": {"cpu": "1100m", "memory": "266Mi", "ephemeral-storage": "1Gi"},
        # the pod cgroup: cpu shares and memory from the requests with overhead; a memory limit
        # (the pod level sets one), no cpu quota (the sidecar declares no cpu limit)
        "resources": {
            "requests": {"cpu": "1100m", "memory": "266Mi"},
            "limits": {"memory": "522Mi"},
        },
    }
    assert pod_level_status(pod([container("a", {"cpu": "1"})])["spec"]) == {}


async def test_pod_level_status_at_start(kube: Kube) -> None:
    from kubesim.resize import resize_wanted

    body = await _running_pod_level(kube, "plr", "2")
    assert body["status"]["allocatedResources"] == {"cpu": "2", "memory": "200Mi"}
    assert body["status"]["resources"] == {"requests": {"cpu": "2", "memory": "200Mi"}}
    assert not resize_wanted(body)


def _pod_level_cpu(body: dict[str, Any]) -> tuple[str | None, str | None]:
    status = body["status"]
    return (
        (status.get("allocatedResources") or {}).get("cpu"),
        ((status.get("resources") or {}).get("requests") or {}).get("cpu"),
    )


async def _pod_level_resize(kube: Kube, name: str, cpu: str) -> None:
    patch = {"spec": {"resources": {"requests": {"cpu": cpu}}}}
    status, body = await kube.call("PATCH", f"{PODS}/{name}/resize", patch, content_type=SMP)
    assert status == 200, body


async def test_pod_level_resize_is_allocated_then_actuated_and_settles(kube: Kube) -> None:
    from kubesim.resize import pod_level_status, resize_wanted
    from scheduler.api.requests import scheduler_requests

    await _running_pod_level(kube, "plr", "2")
    await _pod_level_resize(kube, "plr", "3")
    grown = await _settled(kube, "plr", lambda b: _pod_level_cpu(b) == ("3", "3"))
    assert [c["type"] for c in grown["status"]["conditions"]].count("PodResizeInProgress") == 0
    assert _pending(grown) is None
    assert scheduler_requests(grown["spec"], grown["status"])[0].milli_cpu == 3000
    # applied: nothing more to resize, and the kubelet leaves the pod alone
    assert not resize_wanted(grown)
    await asyncio.sleep(0.2)
    _, later = await kube.call("GET", f"{PODS}/plr")
    assert later["metadata"]["resourceVersion"] == grown["metadata"]["resourceVersion"]

    await _pod_level_resize(kube, "plr", "1500m")
    _, shrinking = await kube.call("GET", f"{PODS}/plr")
    # While the shrink is allocated but not yet in the pod cgroup (the kubelet's first write),
    # the scheduler counts the larger amount it still holds ...
    allocated_only = {
        **grown["status"],
        "allocatedResources": pod_level_status(shrinking["spec"])["allocatedResources"],
    }
    assert scheduler_requests(shrinking["spec"], allocated_only)[0].milli_cpu == 3000
    # ... and the smaller one once status.resources shows it.
    shrunk = await _settled(kube, "plr", lambda b: _pod_level_cpu(b) == ("1500m", "1500m"))
    assert scheduler_requests(shrunk["spec"], shrunk["status"])[0].milli_cpu == 1500
    assert not resize_wanted(shrunk)


async def test_pod_level_resize_beyond_the_node_is_infeasible(kube: Kube) -> None:
    from scheduler.api.requests import scheduler_requests

    await _running_pod_level(kube, "plr", "2")
    await _pod_level_resize(kube, "plr", "64")
    body = await _settled(kube, "plr", _pending)
    condition = _pending(body)
    assert condition is not None and condition["reason"] == "Infeasible"
    assert condition["message"] == (
        "Node didn't have enough capacity: cpu, requested: 64000, capacity: 4000"
    )
    assert _pod_level_cpu(body) == ("2", "2")
    # upstream leaves the desired amount out while the resize is Infeasible
    assert scheduler_requests(body["spec"], body["status"])[0].milli_cpu == 2000


async def test_pod_level_resize_beside_other_pods_is_deferred_then_actuated(kube: Kube) -> None:
    from scheduler.api.requests import scheduler_requests

    await _running(kube, "big", "node-0", "2")
    await _running_pod_level(kube, "plr", "1")
    await _pod_level_resize(kube, "plr", "3")
    body = await _settled(kube, "plr", _pending)
    condition = _pending(body)
    assert condition is not None and condition["reason"] == "Deferred"
    assert condition["message"] == (
        "Node didn't have enough resource: cpu, requested: 3000, used: 2000, capacity: 4000"
    )
    assert _pod_level_cpu(body) == ("1", "1")
    # a Deferred resize is counted at the desired amount (only Infeasible leaves it out)
    assert scheduler_requests(body["spec"], body["status"])[0].milli_cpu == 3000
    await kube.call("DELETE", f"{PODS}/big", gracePeriodSeconds="0")
    await _settled(kube, "plr", lambda b: _pending(b) is None and _pod_level_cpu(b) == ("3", "3"))
