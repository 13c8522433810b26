"""Objects for the DynamicResources plugin tests (upstream's dynamicresources_test.go
builders: a pod with claims, claims, slices, classes) and a first-fit allocator double.

The double stands in for the structured allocator while its real body lands (branch
draalloc): it allocates `exactly` ExactCount requests from the devices of the slices published
for the node, first device first, and never a device allocated already. The plugin's tests
assert the plugin's part (statuses, messages, API writes, in-flight accounting), which does
not depend on how the allocator picks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api.node import NodeView
from scheduler.api.objects import PodView
from scheduler.api.resource import (
    AllocatedDevice,
    DeviceClassView,
    ResourceClaimView,
    ResourceSliceView,
)
from scheduler.plugins.dynamicresources.allocator import (
    AllocatedState,
    AllocationResult,
    DRAFeatures,
)

NAMESPACE = "default"
DRIVER = "gpu.example.com"
CLASS = "gpu"


def pod(
    name: str = "my-pod",
    *,
    uid: str = "pod-uid",
    claims: Sequence[Mapping[str, str]] = (),
    statuses: Sequence[Mapping[str, Any]] | None = None,
    node_name: str = "",
) -> PodView:
    raw: dict[str, Any] = {
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": uid, "resourceVersion": "1"},
        "spec": {"containers": [{"name": "c"}], "resourceClaims": list(claims)},
        "status": {},
    }
    if node_name:
        raw["spec"]["nodeName"] = node_name
    if statuses is not None:
        raw["status"]["resourceClaimStatuses"] = list(statuses)
    return PodView.from_dict(raw)


def claim_raw(
    name: str = "my-claim",
    *,
    uid: str = "claim-uid",
    count: int = 1,
    device_class: str = CLASS,
    owner_pod: tuple[str, str] | None = None,
    deleting: bool = False,
    allocation: Mapping[str, Any] | None = None,
    reserved_for: Sequence[tuple[str, str]] = (),
    resource_version: str = "1",
    first_available: Sequence[str] = (),
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NAMESPACE,
        "uid": uid,
        "resourceVersion": resource_version,
    }
    if owner_pod is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": owner_pod[0], "uid": owner_pod[1],
             "controller": True}
        ]  # fmt: skip
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if first_available:
        request: dict[str, Any] = {
            "name": "req-1",
            "firstAvailable": [
                {"name": f"sub-{i}", "deviceClassName": cls}
                for i, cls in enumerate(first_available)
            ],
        }
    else:
        request = {"name": "req-1", "exactly": {"deviceClassName": device_class, "count": count}}
    status: dict[str, Any] = {}
    if allocation is not None:
        status["allocation"] = dict(allocation)
    if reserved_for:
        status["reservedFor"] = [{"resource": "pods", "name": n, "uid": u} for n, u in reserved_for]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": {"devices": {"requests": [request]}},
        "status": status,
    }


def claim(name: str = "my-claim", **kw: Any) -> ResourceClaimView:
    return ResourceClaimView.from_dict(claim_raw(name, **kw))


def allocation_on(node: str, *devices: str, pool: str = "") -> dict[str, Any]:
    return {
        "devices": {
            "results": [
                {"request": "req-1", "driver": DRIVER, "pool": pool or node, "device": d}
                for d in devices
            ]
        },
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            ]
        },
    }


def device_class(name: str = CLASS) -> DeviceClassView:
    return DeviceClassView.from_dict(
        {
            "metadata": {"name": name, "uid": f"class-{name}", "resourceVersion": "1"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        }
    )


def node_slice(node: str, devices: int = 1) -> ResourceSliceView:
    return ResourceSliceView.from_dict(
        {
            "metadata": {"name": f"{node}-slice", "uid": f"{node}-slice", "resourceVersion": "1"},
            "spec": {
                "driver": DRIVER,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": f"gpu-{i}"} for i in range(devices)],
            },
        }
    )


class _Result(AllocationResult):
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "devices": {
                "results": [
                    {"request": d.request, "driver": d.driver, "pool": d.pool, "device": d.device}
                    for d in self.devices
                ]
            }
        }
        if self.node_selector is not None:
            out["nodeSelector"] = dict(self.node_selector)
        return out


class FirstFitAllocator:
    """The allocator double (see the module docstring); records what it was built with."""

    built: list[FirstFitAllocator] = []

    def __init__(
        self,
        *,
        features: DRAFeatures,
        allocated: AllocatedState,
        classes: Mapping[str, DeviceClassView],
        slices: Sequence[ResourceSliceView],
        cel_cache: Any = None,
    ) -> None:
        self.features = features
        self.allocated = allocated
        self.classes = classes
        self.slices = slices
        FirstFitAllocator.built.append(self)

    def allocate(
        self, node: NodeView, claims: Sequence[ResourceClaimView]
    ) -> list[AllocationResult] | None:
        free = [
            (s.driver, s.pool_name, d.name)
            for s in self.slices
            if s.node_name == node.name
            for d in s.devices
            if (s.driver, s.pool_name, d.name) not in self.allocated.devices
        ]
        results: list[AllocationResult] = []
        for c in claims:
            picked: list[AllocatedDevice] = []
            for request in c.requests:
                subs = [request.exactly] if request.exactly else list(request.first_available)
                for sub in subs:
                    if sub is None or sub.device_class_name not in self.classes:
                        continue
                    if len(free) < sub.count:
                        continue
                    name = request.name if request.exactly else f"{request.name}/{sub.name}"
                    for _ in range(sub.count):
                        driver, pool, device = free.pop(0)
                        picked.append(AllocatedDevice(name, driver, pool, device, False, "", {}))
                    break
                else:
                    return None
            selector = {
                "nodeSelectorTerms": [
                    {"matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": [node.name]}
                    ]}
                ]
            }  # fmt: skip
            results.append(_Result(tuple(picked), (), selector))
        return results


def setup(
    *objects: Any, nodes: Sequence[str] = ("worker",), client: Any = None, gates: Any = None
) -> tuple[Any, Any, Any]:
    """(framework with DynamicResources alone, its ResourceObjects, the RecordingClient)."""
    from scheduler.listers.cluster_objects import ClusterObjects
    from scheduler.testing import (
        RecordingClient,
        build_framework,
        handle_deps,
        make_list_snapshot,
        make_node,
    )

    objs = ClusterObjects()
    objs.resources.add(*objects)
    client = client if client is not None else RecordingClient()
    deps = handle_deps(
        make_list_snapshot([make_node(n, labels={"kubernetes.io/hostname": n}) for n in nodes]),
        client=client,
        cluster_objects=objs,
    )
    if gates is not None:
        deps.feature_gates = gates
    return build_framework(["DynamicResources"], deps), objs.resources, client


class EchoClient:
    """An API server for claims: PUT stores and returns the object with the next
    resourceVersion (409 when the body's version is stale), GET returns it, PATCH succeeds.
    Records every request as RecordingClient does."""

    def __init__(self, *claims: Mapping[str, Any]) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self.version = 100
        for c in claims:
            self.objects[c["metadata"]["name"]] = dict(c)

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        import copy

        self.requests.append((method, path, body))
        name = path.split("/resourceclaims/")[1].split("/")[0]
        stored = self.objects.get(name)
        if method == "GET":
            return (200, copy.deepcopy(stored)) if stored else (404, {"message": "not found"})
        if method == "PATCH":
            return 200, copy.deepcopy(stored)
        assert method == "PUT" and stored is not None
        if body["metadata"]["resourceVersion"] != stored["metadata"]["resourceVersion"]:
            return 409, {"message": "the object has been modified"}
        self.version += 1
        new = copy.deepcopy(body)
        new["metadata"]["resourceVersion"] = str(self.version)
        self.objects[name] = new
        return 200, copy.deepcopy(new)
