"""Small builders for the structured allocator's facts, named after upstream's helpers in
structured/internal/allocatortesting/allocator_testing.go (driverA, pool1, node1, classA,
claim, request, slice, device...)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.api.node import node_view_from_dict
from scheduler.api.resource import DeviceClassView, ResourceClaimView, ResourceSliceView
from scheduler.plugins.dynamicresources.allocator import (
    AllocatedState,
    AllocationResult,
    Allocator,
    DRAFeatures,
)

DRIVER_A = "driver-a"
DRIVER_B = "driver-b"
POOL_1 = "pool-1"
POOL_2 = "pool-2"
NODE_1 = "node-1"
NODE_2 = "node-2"
CLASS_A = "class-a"
CLASS_B = "class-b"
CLAIM_0 = "claim-0"
CLAIM_1 = "claim-1"
REQ_0 = "req-0"
REQ_1 = "req-1"
SUB_REQ_0 = "subReq-0"
SUB_REQ_1 = "subReq-1"
DEVICE_1 = "device-1"
DEVICE_2 = "device-2"
DEVICE_3 = "device-3"
NAMESPACE = "default"
REGION_KEY = "region"
REGION_1 = "region-1"
REGION_2 = "region-2"


def node(name: str = NODE_1, labels: Mapping[str, str] | None = None) -> Any:
    return node_view_from_dict(
        {
            "metadata": {"name": name, "uid": name, "labels": dict(labels or {})},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
    )


def device_class(
    name: str = CLASS_A,
    selectors: tuple[str, ...] = (),
    config: list[dict[str, Any]] | None = None,
) -> DeviceClassView:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": e}} for e in selectors]}
    if config:
        spec["config"] = config
    return DeviceClassView.from_dict({"metadata": {"name": name, "uid": name}, "spec": spec})


def driver_class(name: str = CLASS_A, driver: str = DRIVER_A) -> DeviceClassView:
    """classWithDriver-like: a class that selects one driver."""
    return device_class(name, (f'device.driver == "{driver}"',))


def opaque(driver: str, parameters: Any, requests: list[str] | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"opaque": {"driver": driver, "parameters": parameters}}
    if requests:
        result["requests"] = requests
    return result


def exact(
    name: str = REQ_0,
    class_name: str = CLASS_A,
    count: int | None = None,
    *,
    mode: str | None = None,
    selectors: tuple[str, ...] = (),
    admin_access: bool = False,
    tolerations: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": class_name}
    if count is not None:
        exactly["count"] = count
    if mode is not None:
        exactly["allocationMode"] = mode
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if admin_access:
        exactly["adminAccess"] = True
    if tolerations:
        exactly["tolerations"] = tolerations
    return {"name": name, "exactly": exactly}


def sub_request(
    name: str, class_name: str = CLASS_A, count: int | None = None, *, mode: str | None = None,
    selectors: tuple[str, ...] = (),
) -> dict[str, Any]:  # fmt: skip
    result: dict[str, Any] = {"name": name, "deviceClassName": class_name}
    if count is not None:
        result["count"] = count
    if mode is not None:
        result["allocationMode"] = mode
    if selectors:
        result["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return result


def first_available(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def claim(
    name: str = CLAIM_0,
    *requests: dict[str, Any],
    constraints: list[dict[str, Any]] | None = None,
    config: list[dict[str, Any]] | None = None,
) -> ResourceClaimView:
    devices: dict[str, Any] = {"requests": list(requests or (exact(),))}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    return ResourceClaimView.from_dict(
        {
            "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}"},
            "spec": {"devices": devices},
        }
    )


def device(name: str, **fields: Any) -> dict[str, Any]:
    """A device; `attributes` given as plain values (int, bool, str; versions as
    {"version": ...}) and `capacity` as quantity strings."""
    result: dict[str, Any] = {"name": name}
    attributes = fields.pop("attributes", None)
    if attributes:
        result["attributes"] = {
            k: v if isinstance(v, dict) else {_kind(v): v} for k, v in attributes.items()
        }
    capacity = fields.pop("capacity", None)
    if capacity:
        result["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    result.update(fields)
    return result


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    return "string"


_slice_counter = [0]


def resource_slice(
    name: str,
    node_name: str | None = NODE_1,
    pool: str = POOL_1,
    driver: str = DRIVER_A,
    *devices: dict[str, Any],
    generation: int = 1,
    slice_count: int = 1,
    node_selector: dict[str, Any] | None = None,
    all_nodes: bool = False,
    per_device_node_selection: bool = False,
    shared_counters: list[dict[str, Any]] | None = None,
) -> ResourceSliceView:
    _slice_counter[0] += 1
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": slice_count},
        "devices": [d if isinstance(d, dict) else device(d) for d in devices],
    }
    if node_name:
        spec["nodeName"] = node_name
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if all_nodes:
        spec["allNodes"] = True
    if per_device_node_selection:
        spec["perDeviceNodeSelection"] = True
    if shared_counters:
        spec["sharedCounters"] = shared_counters
    return ResourceSliceView.from_dict(
        {
            "metadata": {
                "name": name,
                "uid": f"uid-{name}-{_slice_counter[0]}",
                "resourceVersion": "1",
            },
            "spec": spec,
        }
    )


def region_selector(region: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": REGION_KEY, "operator": "In", "values": [region]}]}
        ]
    }


def local_node_selector(node_name: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
        ]
    }


def allocate(
    claims: list[ResourceClaimView],
    slices: list[ResourceSliceView],
    classes: list[DeviceClassView] | None = None,
    *,
    on: Any = None,
    allocated: set[tuple[str, str, str]] | None = None,
    features: DRAFeatures | None = None,
) -> list[AllocationResult] | None:
    if classes is None:
        classes = [driver_class(CLASS_A, DRIVER_A), driver_class(CLASS_B, DRIVER_B)]
    allocator = Allocator(
        features=features or DRAFeatures(),
        allocated=AllocatedState(devices=frozenset(allocated or ())),
        classes={c.name: c for c in classes},
        slices=slices,
    )
    return allocator.allocate(on if on is not None else node(), claims)


def results(allocation: list[AllocationResult] | None) -> list[dict[str, Any]] | None:
    return None if allocation is None else [r.to_dict() for r in allocation]


def device_result(
    request: str, driver: str, pool: str, name: str, *, admin_access: bool = False
) -> dict[str, Any]:
    result: dict[str, Any] = {"request": request, "driver": driver, "pool": pool, "device": name}
    if admin_access:
        result["adminAccess"] = True
    return result


def allocation(
    node_selector: dict[str, Any] | None,
    *devices: dict[str, Any],
    config: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    result: dict[str, Any] = {"devices": {"results": list(devices)}}
    if config:
        result["devices"]["config"] = config
    if node_selector is not None:
        result["nodeSelector"] = node_selector
    return result
