"""Objects for the DynamicResources plugin tests (upstream's dynamicresources_test.go
builders: a pod with claims, claims, slices, classes), and the real allocator recording what
the plugin built it with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api.objects import PodView
from scheduler.api.resource import (
    DeviceClassView,
    ResourceClaimView,
    ResourceSliceView,
)
from scheduler.plugins.dynamicresources.allocator import Allocator

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


class RecordingAllocator(Allocator):
    """The real structured allocator, remembering each one the plugin builds (what it was
    given: the allocated state, the slices)."""

    built: list[RecordingAllocator] = []

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        RecordingAllocator.built.append(self)


def setup(
    *objects: Any,
    nodes: Sequence[str] = ("worker",),
    client: Any = None,
    gates: Any = None,
    activate: Any = None,
) -> tuple[Any, Any, Any]:
    """(framework with DynamicResources alone, its ResourceObjects, the RecordingClient);
    `activate`: the queue's activator the handle offers (None: none, selectors inline)."""
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
    deps.activate = activate
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
