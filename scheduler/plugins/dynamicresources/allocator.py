"""The structured allocator: which devices of which ResourceSlices satisfy a pod's claims on one
node (upstream's k8s.io/dynamic-resource-allocation/structured, allocator.go).

The plugin builds one `Allocator` per scheduling cycle (PreFilter) and calls `allocate` per node
(Filter). The allocator never changes anything: it answers with the allocation results the
plugin reserves (in-flight) and later writes to each claim's status in PreBind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.node import NodeView
from scheduler.api.resource import (
    AllocatedDevice,
    DeviceClassView,
    ResourceClaimView,
    ResourceSliceView,
)

# (driver, pool, device): how upstream's DeviceID names one device.
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

    devices: frozenset[DeviceID] = frozenset()
    # devices that allow multiple allocations: (device, share id) pairs already handed out,
    # and the capacity consumed on each such device so far (nanos by qualified name)
    shared_device_ids: frozenset[tuple[DeviceID, str]] = frozenset()
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

    def to_dict(self) -> dict[str, Any]:
        """`status.allocation` as the API takes it."""
        raise NotImplementedError


class AllocationError(Exception):
    """A claim cannot be allocated on any node for a reason the user must fix (a class that
    does not exist, a selector that fails to compile or evaluate...). The message is
    upstream's and names the claim and request."""


class Allocator:
    """Upstream's structured.Allocator for one scheduling cycle."""

    def __init__(
        self,
        *,
        features: DRAFeatures,
        allocated: AllocatedState,
        classes: Mapping[str, DeviceClassView],
        slices: Sequence[ResourceSliceView],
        cel_cache: Any = None,
    ) -> None:
        raise NotImplementedError

    def allocate(
        self, node: NodeView, claims: Sequence[ResourceClaimView]
    ) -> list[AllocationResult] | None:
        """One result per claim, in order, when all fit on `node`; None when they do not (the
        plugin then says "cannot allocate all claims"). Raises AllocationError when a claim is
        unusable whatever the node."""
        raise NotImplementedError
