"""Extended resources backed by DeviceClasses (DRAExtendedResource): a pod asking for
`example.com/gpu: 1` gets a device of the class whose `spec.extendedResourceName` is
`example.com/gpu` (or of class X for `deviceclass.resource.kubernetes.io/X`) on nodes whose
allocatable does not list the resource (no device plugin there).

Upstream: pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go. In
PreFilter the pod gets an in-memory claim named `<extended-resources>` (or the claim created
for it earlier, named in `status.extendedResourceClaimStatus`); Filter fills its requests for
each node (one request per container and resource, `container-<i>-request-<j>`); PreBind
creates it (generateName `<pod>-extended-resources-`, owned by the pod, annotated
`resource.kubernetes.io/extended-resource-claim: "true"`), writes its allocation and records
it with the request mappings in the pod's `status.extendedResourceClaimStatus`; Unreserve
deletes a claim created for an attempt that failed. NodeResourcesFit leaves such resources to
DynamicResources (`delegated_to_dra`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from apimachinery.quantity import parse_nanos
from scheduler.api.objects import PodView
from scheduler.api.resource import ResourceClaimView
from scheduler.listers.resource_objects import DEVICE_CLASS_RESOURCE_PREFIX, ResourceObjects

# resourceapi.ExtendedResourceClaimAnnotation
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
# specialClaimInMemName: the claim before PreBind creates it
SPECIAL_CLAIM_NAME = "<extended-resources>"
NANO = 10**9


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: namespaced, outside kubernetes.io, not "requests."."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def is_dra_extended_resource_name(name: str) -> bool:
    """schedutil.IsDRAExtendedResourceName."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_RESOURCE_PREFIX)


def delegated_to_dra(resources: ResourceObjects, name: str, allocatable: int) -> bool:
    """shouldDelegateResourceToDRA: NodeResourcesFit skips a resource the node does not
    publish when a DeviceClass backs it."""
    return allocatable <= 0 and resources.class_for_extended_resource(name) is not None


def backed_by_dra(pod: PodView, resources: ResourceObjects) -> bool:
    """hasDeviceClassMappedExtendedResource: the pod asks for a resource a class backs."""
    return any(
        amount
        and is_dra_extended_resource_name(name)
        and resources.class_for_extended_resource(name) is not None
        for name, amount in pod.requests.scalar.items()
    )


@dataclass(slots=True)
class NodeClaim:
    """The extended-resource claim as Filter filled it for one node, and which container's
    resource each of its requests serves (v1.ContainerExtendedResourceRequest)."""

    claim: ResourceClaimView
    mappings: list[dict[str, str]] = field(default_factory=list)


def find_claim(pod: PodView, resources: ResourceObjects) -> ResourceClaimView | None:
    """findExtendedResourceClaim, by the name the pod's status records (upstream lists every
    claim; the status names the one PreBind created)."""
    status = (pod.raw.get("status") or {}).get("extendedResourceClaimStatus") or {}
    name = status.get("resourceClaimName") if isinstance(status, Mapping) else None
    if not isinstance(name, str) or not name:
        return None
    claim = resources.claim(pod.namespace, name)
    if claim is None or claim.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
        return None
    if not any(ref.uid == pod.uid and ref.controller for ref in claim.owner_references):
        return None
    return claim


def special_claim(pod: PodView) -> ResourceClaimView:
    """The in-memory claim PreFilter starts with (no requests yet)."""
    return ResourceClaimView.from_dict(_claim_raw(pod, []))


def _claim_raw(pod: PodView, requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": pod.namespace,
            "name": SPECIAL_CLAIM_NAME,
            "uid": str(uuid.uuid4()),
            "generateName": f"{pod.name}-extended-resources-",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid,
                 "controller": True}
            ],
            "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
        },
        "spec": {"devices": {"requests": requests}} if requests else {},
    }  # fmt: skip


class CannotFit(Exception):
    """The node lacks a resource no class backs ("cannot fit resource")."""


def node_claim(
    pod: PodView,
    special: ResourceClaimView,
    resources: ResourceObjects,
    allocatable: Callable[[str], int | None],
) -> NodeClaim | None:
    """filterExtendedResources for one node: the claim with one request per container and
    resource the node leaves to DRA; None when it leaves none (the pod needs no devices for
    them there). `allocatable(name)` is the node's amount, None when it does not list it."""
    wanted: dict[str, int] = {}
    for name, amount in pod.requests.scalar.items():
        if not amount or not is_dra_extended_resource_name(name):
            continue
        on_node = allocatable(name)
        if resources.class_for_extended_resource(name) is not None and not on_node:
            wanted[name] = amount
        elif on_node is None:
            raise CannotFit("cannot fit resource")
    if not wanted:
        return None
    requests, mappings = requests_and_mappings(pod.raw.get("spec") or {}, wanted, resources)
    raw = dict(special.raw)
    raw["spec"] = {"devices": {"requests": requests}}
    return NodeClaim(ResourceClaimView.from_dict(raw), mappings)


def _container_count(container: Mapping[str, Any], name: str) -> int:
    """A container's request for `name` as an integer (AsInt64), 0 when not one."""
    value = ((container.get("resources") or {}).get("requests") or {}).get(name)
    if value is None:
        return 0
    try:
        nanos = parse_nanos(str(value))
    except ValueError:
        return 0
    return nanos // NANO if nanos % NANO == 0 else 0


def _container_request(
    index: int,
    container: Mapping[str, Any],
    name: str,
    class_name: str,
    reusable: Sequence[dict[str, Any] | None],
) -> tuple[dict[str, Any] | None, list[dict[str, str]]]:
    """createResourceRequestAndMappings: a request for what the container asks beyond what
    the long-lived containers after it (for an init container) already get."""
    wanted = _container_count(container, name)
    if wanted == 0:
        return None, []
    mappings: list[dict[str, str]] = []
    container_name = str(container.get("name") or "")
    total = 0
    for request in reusable:
        if request is None:
            continue
        total += request["exactly"]["count"]
        mappings.append({"containerName": container_name, "resourceName": name,
                         "requestName": request["name"]})  # fmt: skip
        if total >= wanted:
            return None, mappings
    keys = sorted((container.get("resources") or {}).get("requests") or {})
    request_name = f"container-{index}-request-{keys.index(name) if name in keys else 0}"
    mappings.append({"containerName": container_name, "resourceName": name,
                     "requestName": request_name})  # fmt: skip
    request = {
        "name": request_name,
        "exactly": {
            "deviceClassName": class_name,
            "allocationMode": "ExactCount",
            "count": wanted - total,
        },
    }
    return request, mappings


def requests_and_mappings(
    spec: Mapping[str, Any], wanted: Mapping[str, int], resources: ResourceObjects
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """createRequestsAndMappings: per resource, one request per long-lived container (regular
    and sidecar), and the largest of the init containers' (which run one at a time)."""
    inits = list(spec.get("initContainers") or [])
    containers = inits + list(spec.get("containers") or [])
    long_lived = [
        i for i, c in enumerate(containers)
        if i >= len(inits) or (c.get("restartPolicy") == "Always")
    ]  # fmt: skip
    short_lived = [i for i in range(len(inits)) if i not in long_lived]
    requests: list[dict[str, Any]] = []
    mappings: list[dict[str, str]] = []
    for name in sorted(wanted):
        device_class = resources.class_for_extended_resource(name)
        if device_class is None:
            continue
        per_container: list[dict[str, Any] | None] = [None] * len(containers)
        long_mappings: list[dict[str, str]] = []
        for i in long_lived:
            request, found = _container_request(i, containers[i], name, device_class.name, ())
            per_container[i] = request
            long_mappings += found
        largest: dict[str, Any] | None = None
        short_names: set[str] = set()
        short_mappings: list[dict[str, str]] = []
        for i in short_lived:
            request, found = _container_request(
                i, containers[i], name, device_class.name, per_container[i:]
            )
            if request is not None:
                short_names.add(request["name"])
                if largest is None or largest["exactly"]["count"] < request["exactly"]["count"]:
                    largest = request
            short_mappings += found
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest["name"])
            for mapping in short_mappings:
                if mapping["requestName"] in short_names:
                    mapping["requestName"] = largest["name"]
        if largest is not None:
            requests.append(largest)
        requests += [r for r in per_container if r is not None]
        mappings += long_mappings + short_mappings
    requests.sort(key=lambda r: str(r["name"]))
    return requests, mappings


def claim_to_create(node: NodeClaim) -> dict[str, Any]:
    """The object PreBind creates: the node's claim without name, uid or status."""
    raw = {key: value for key, value in node.claim.raw.items() if key != "status"}
    meta = dict(raw.get("metadata") or {})
    meta.pop("name", None)
    meta.pop("uid", None)
    raw["metadata"] = meta
    return raw


def fit_delegation(handle: Any) -> Callable[[str, int], bool] | None:
    """For NodeResourcesFit: whether it leaves a resource (name, the node's allocatable) to
    DynamicResources; None when DRAExtendedResource is off or there are no listers."""
    from scheduler.plugins.dynamicresources.features import Features

    gates = getattr(handle, "feature_gates", None)
    objects = getattr(handle, "cluster_objects", None)
    if objects is None or not Features.from_gates(gates).extended_resource:
        return None
    resources: ResourceObjects = objects.resources
    return lambda name, allocatable: delegated_to_dra(resources, name, allocatable)
