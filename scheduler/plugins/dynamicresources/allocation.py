"""What the structured allocator answers and works with, below both the allocator and its
diagnosis: the feature gates it reads, the state of allocated devices it starts from, its
results (one `status.allocation` per claim) and its errors.

Upstream: k8s.io/dynamic-resource-allocation/structured (allocator.go: Features,
AllocatedState; resourceapi.AllocationResult as the allocator fills it).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.resource import AllocatedDevice, DeviceToleration, ResourceClaimView

DeviceID = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class DRAFeatures:
    """The feature gates the allocator reads (upstream's structured.Features)."""

    prioritized_list: bool = True  # DRAPrioritizedList: `firstAvailable`
    admin_access: bool = True  # DRAAdminAccess
    device_taints: bool = False  # DRADeviceTaints
    partitionable_devices: bool = False  # DRAPartitionableDevices: shared counters
    consumable_capacity: bool = False  # DRAConsumableCapacity
    device_binding_conditions: bool = False  # DRADeviceBindingConditions


@dataclass(frozen=True, slots=True)
class AllocatedState:
    """What is allocated already, by claims in the cluster and by in-flight allocations of pods
    assumed but not bound yet (upstream's structured.AllocatedState)."""

    devices: AbstractSet[DeviceID] = frozenset()
    # devices that allow multiple allocations: (device, share id) pairs already handed out,
    # and the capacity consumed on each such device so far (nanos by capacity name)
    shared_device_ids: AbstractSet[tuple[DeviceID, str]] = frozenset()
    consumed_capacity: Mapping[DeviceID, Mapping[str, int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One `status.allocation.devices.config` entry (DeviceAllocationConfiguration)."""

    source: str  # "FromClass" | "FromClaim"
    requests: tuple[str, ...]
    driver: str
    parameters: Any


@dataclass(frozen=True, slots=True)
class AllocationResult:
    """What one claim gets on the node: its devices, the config passed through from its
    classes and itself, and the node selector that restricts pods using it."""

    devices: tuple[AllocatedDevice, ...]
    config: tuple[ConfigEntry, ...]
    node_selector: Mapping[str, Any] | None  # a core/v1 NodeSelector, as JSON
    # per device (same order as `devices`): the tolerations of the request that got it, which
    # upstream copies into the result with DRADeviceTaints; empty tuples otherwise
    tolerations: tuple[tuple[DeviceToleration, ...], ...] = ()
    # per device (same order): `consumedCapacity` as written (empty unless shared)
    consumed_text: tuple[Mapping[str, str], ...] = ()
    # per device: the device's (bindingConditions, bindingFailureConditions), copied with
    # DRADeviceBindingConditions; empty otherwise
    binding: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """`status.allocation` as the API takes it (resourceapi.AllocationResult)."""
        results: list[dict[str, Any]] = []
        for i, device in enumerate(self.devices):
            entry: dict[str, Any] = {
                "request": device.request,
                "driver": device.driver,
                "pool": device.pool,
                "device": device.device,
            }
            if device.admin_access:
                entry["adminAccess"] = True
            if device.share_id:
                entry["shareID"] = device.share_id
            consumed = self.consumed_text[i] if i < len(self.consumed_text) else {}
            if consumed:
                entry["consumedCapacity"] = dict(consumed)
            conditions, failures = self.binding[i] if i < len(self.binding) else ((), ())
            if conditions:
                entry["bindingConditions"] = list(conditions)
            if failures:
                entry["bindingFailureConditions"] = list(failures)
            tolerations = self.tolerations[i] if i < len(self.tolerations) else ()
            if tolerations:
                entry["tolerations"] = [_toleration_dict(t) for t in tolerations]
            results.append(entry)
        devices: dict[str, Any] = {"results": results}
        if self.config:
            devices["config"] = [
                {
                    "source": entry.source,
                    **({"requests": list(entry.requests)} if entry.requests else {}),
                    "opaque": {"driver": entry.driver, "parameters": entry.parameters},
                }
                for entry in self.config
            ]
        allocation: dict[str, Any] = {"devices": devices}
        if self.node_selector is not None:
            allocation["nodeSelector"] = self.node_selector
        return allocation


def _toleration_dict(toleration: DeviceToleration) -> dict[str, Any]:
    result: dict[str, Any] = {"operator": toleration.operator}
    if toleration.key:
        result["key"] = toleration.key
    if toleration.value:
        result["value"] = toleration.value
    if toleration.effect:
        result["effect"] = toleration.effect
    if toleration.toleration_seconds is not None:
        result["tolerationSeconds"] = toleration.toleration_seconds
    return result


class AllocationError(Exception):
    """A claim cannot be allocated on any node for a reason the user must fix (a class that
    does not exist, a selector that fails to compile or evaluate...). The message is
    upstream's and names the claim and request."""


class FailedAllocationOnNode(AllocationError):
    """Allocation failed on this node only, for a reason worth telling the user (upstream's
    ErrFailedAllocationOnNode: "invalid resource pools were encountered"). The plugin treats it
    as the node being unschedulable with this message, not as an error for the pod."""


# resourceapi.AllocationResultsMaxSize: at most this many devices per claim.
ALLOCATION_RESULTS_MAX_SIZE = 32


def klog(claim: ResourceClaimView) -> str:
    return f"{claim.namespace}/{claim.name}" if claim.namespace else claim.name
