"""The Dynamic Resource Allocation feature gates (`--feature-gates`) and what aiosched does
under each.

Upstream: pkg/scheduler/framework/plugins/feature (what the plugin reads). Each gate's stage,
default and lock are the gate table's (scheduler/app/feature_gate_table.py, kube-scheduler
v1.37), and the refusal of a value aiosched does not honour is worded once, by
scheduler/app/feature_gates.py; this module says only which values aiosched honours, what it
lacks for the others, and the value Features assumes for a gate a caller leaves out
(`DRA_GATE_DEFAULTS`, held to the table by tests/scheduler_startup/test_feature_gates.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduler.plugins.dynamicresources.allocation import DRAFeatures

DYNAMIC_RESOURCE_ALLOCATION = "DynamicResourceAllocation"
DRA_ADMIN_ACCESS = "DRAAdminAccess"
DRA_PRIORITIZED_LIST = "DRAPrioritizedList"
DRA_DEVICE_TAINTS = "DRADeviceTaints"
DRA_DEVICE_TAINT_RULES = "DRADeviceTaintRules"
DRA_PARTITIONABLE_DEVICES = "DRAPartitionableDevices"
DRA_CONSUMABLE_CAPACITY = "DRAConsumableCapacity"
DRA_DEVICE_BINDING_CONDITIONS = "DRADeviceBindingConditions"
DRA_RESOURCE_CLAIM_DEVICE_STATUS = "DRAResourceClaimDeviceStatus"
DRA_EXTENDED_RESOURCE = "DRAExtendedResource"
DRA_SCHEDULER_FILTER_TIMEOUT = "DRASchedulerFilterTimeout"


@dataclass(frozen=True, slots=True)
class GateSpec:
    """The values of one gate aiosched honours, and what it lacks for the others."""

    honoured: frozenset[bool]
    why_not: str = ""  # what is missing, for the refusal message


_BOTH = GateSpec(frozenset({True, False}))
# Locked to true upstream (GA): only that value exists.
_LOCKED_ON = GateSpec(frozenset({True}))

DRA_GATES: Mapping[str, GateSpec] = {
    DYNAMIC_RESOURCE_ALLOCATION: _LOCKED_ON,
    DRA_ADMIN_ACCESS: _LOCKED_ON,
    DRA_PRIORITIZED_LIST: _LOCKED_ON,
    DRA_SCHEDULER_FILTER_TIMEOUT: _BOTH,
    DRA_RESOURCE_CLAIM_DEVICE_STATUS: _LOCKED_ON,
    # Taints published in ResourceSlices and the claims' tolerations.
    DRA_DEVICE_TAINTS: _BOTH,
    # DeviceTaintRule objects (resource.k8s.io/v1beta2), read with the slices' own taints
    # (watched optionally: a server without the kind leaves them empty)
    DRA_DEVICE_TAINT_RULES: _BOTH,
    # Shared counters and per-device node selection, in the allocator.
    DRA_PARTITIONABLE_DEVICES: _BOTH,
    # Shareable devices, capacity requests and request policies, distinctAttribute.
    DRA_CONSUMABLE_CAPACITY: _BOTH,
    # PreBind waits for the devices' binding conditions (with DRAResourceClaimDeviceStatus).
    DRA_DEVICE_BINDING_CONDITIONS: _BOTH,
    # Extended resources backed by DeviceClasses (NodeResourcesFit leaves them to
    # DynamicResources, which creates the pod's extended-resource claim).
    DRA_EXTENDED_RESOURCE: _LOCKED_ON,
}

#: The value Features assumes for a gate the caller's map leaves out: v1.37's default, on for
#: every one of these gates (`aiosched run` always passes them all).
DRA_GATE_DEFAULTS: Mapping[str, bool] = dict.fromkeys(DRA_GATES, True)


def honours(name: str, value: bool) -> bool:
    """Whether aiosched honours DRA gate `name` at `value` (True for a gate not listed)."""
    spec = DRA_GATES.get(name)
    return spec is None or value in spec.honoured


@dataclass(frozen=True, slots=True)
class Features:
    """What DynamicResources reads of the gates (upstream's plugins/feature.Features)."""

    prioritized_list: bool = True
    admin_access: bool = True
    device_taints: bool = False
    device_taint_rules: bool = False
    partitionable_devices: bool = False
    consumable_capacity: bool = False
    device_binding_conditions: bool = False
    resource_claim_device_status: bool = True
    extended_resource: bool = False
    filter_timeout: bool = True

    @staticmethod
    def from_gates(gates: Mapping[str, bool] | None) -> Features:
        """The features under `gates` (missing gates at aiosched's defaults)."""
        values = dict(DRA_GATE_DEFAULTS)
        values.update({k: v for k, v in (gates or {}).items() if k in DRA_GATES})
        return Features(
            prioritized_list=values[DRA_PRIORITIZED_LIST],
            admin_access=values[DRA_ADMIN_ACCESS],
            device_taints=values[DRA_DEVICE_TAINTS],
            device_taint_rules=values[DRA_DEVICE_TAINT_RULES] and values[DRA_DEVICE_TAINTS],
            partitionable_devices=values[DRA_PARTITIONABLE_DEVICES],
            consumable_capacity=values[DRA_CONSUMABLE_CAPACITY],
            device_binding_conditions=values[DRA_DEVICE_BINDING_CONDITIONS],
            resource_claim_device_status=values[DRA_RESOURCE_CLAIM_DEVICE_STATUS],
            extended_resource=values[DRA_EXTENDED_RESOURCE],
            filter_timeout=values[DRA_SCHEDULER_FILTER_TIMEOUT],
        )

    @property
    def binding_conditions(self) -> bool:
        """Binding conditions need both gates (upstream's EnableDRADeviceBindingConditions &&
        EnableDRAResourceClaimDeviceStatus)."""
        return self.device_binding_conditions and self.resource_claim_device_status

    def allocator_features(self) -> DRAFeatures:
        """Upstream's AllocatorFeatures."""
        return DRAFeatures(
            prioritized_list=self.prioritized_list,
            admin_access=self.admin_access,
            device_taints=self.device_taints,
            partitionable_devices=self.partitionable_devices,
            consumable_capacity=self.consumable_capacity,
            device_binding_conditions=self.binding_conditions,
        )
