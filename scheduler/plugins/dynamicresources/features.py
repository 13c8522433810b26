"""The Dynamic Resource Allocation feature gates (`--feature-gates`) and what aiosched does
under each.

Upstream: pkg/features/kube_features.go (the versioned defaults: v1.37's stages and locks, as
scheduler/app/feature_gate_table.py has them) and pkg/scheduler/framework/plugins/feature (what
the plugin reads). A gate is
either honoured, as upstream behaves with it on and off, or only one of its values is: the
other is refused at start-up with `unsupported_gate_value`'s message, so that aiosched never
silently decides differently from kube-scheduler with the same flags.
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
    """One gate: upstream's default and stage at v1.36, whether upstream locks it, and the
    values aiosched honours (the default aiosched starts with is `aiosched_default`)."""

    upstream_default: bool
    stage: str
    locked: bool
    honoured: frozenset[bool]
    aiosched_default: bool
    why_not: str = ""  # what is missing, for the refusal message


_BOTH = frozenset({True, False})

# kube_features.go at v1.37 (DynamicResourceAllocation GA and locked since v1.35; DRAAdminAccess
# GA and locked in v1.36; DRAPrioritizedList, DRAResourceClaimDeviceStatus and DRAExtendedResource
# GA and locked, DRADeviceTaints and DRADeviceTaintRules GA in v1.37; the others beta). aiosched
# starts with upstream's default wherever it honours it; where it honours only "off", it starts
# off and says so.
DRA_GATES: Mapping[str, GateSpec] = {
    DYNAMIC_RESOURCE_ALLOCATION: GateSpec(True, "GA", True, frozenset({True}), True),
    DRA_ADMIN_ACCESS: GateSpec(True, "GA", True, frozenset({True}), True),
    DRA_PRIORITIZED_LIST: GateSpec(True, "GA", True, frozenset({True}), True),
    DRA_SCHEDULER_FILTER_TIMEOUT: GateSpec(True, "beta", False, _BOTH, True),
    DRA_RESOURCE_CLAIM_DEVICE_STATUS: GateSpec(True, "GA", True, frozenset({True}), True),
    # Taints published in ResourceSlices and the claims' tolerations.
    DRA_DEVICE_TAINTS: GateSpec(True, "GA", False, _BOTH, True),
    # DeviceTaintRule objects (resource.k8s.io/v1beta2), read with the slices' own taints
    # (watched optionally: a server without the kind leaves them empty)
    DRA_DEVICE_TAINT_RULES: GateSpec(True, "GA", False, _BOTH, True),
    # Shared counters and per-device node selection, in the allocator.
    DRA_PARTITIONABLE_DEVICES: GateSpec(True, "beta", False, _BOTH, True),
    # Shareable devices, capacity requests and request policies, distinctAttribute.
    DRA_CONSUMABLE_CAPACITY: GateSpec(True, "beta", False, _BOTH, True),
    # PreBind waits for the devices' binding conditions (with DRAResourceClaimDeviceStatus).
    DRA_DEVICE_BINDING_CONDITIONS: GateSpec(True, "beta", False, _BOTH, True),
    # Extended resources backed by DeviceClasses (NodeResourcesFit leaves them to
    # DynamicResources, which creates the pod's extended-resource claim).
    DRA_EXTENDED_RESOURCE: GateSpec(True, "GA", True, frozenset({True}), True),
}

#: The gates' values aiosched starts with.
DRA_GATE_DEFAULTS: Mapping[str, bool] = {
    name: spec.aiosched_default for name, spec in DRA_GATES.items()
}


def unsupported_gate_value(name: str, value: bool) -> str | None:
    """Why `name=value` cannot be honoured (upstream's words for a locked gate), or None."""
    spec = DRA_GATES.get(name)
    if spec is None or value in spec.honoured:
        return None
    if spec.locked:
        return (
            f"cannot set feature gate {name} to {str(value).lower()}, feature is locked to "
            f"{str(spec.upstream_default).lower()}"
        )
    return (
        f"feature gate {name}={str(value).lower()} is not supported by aiosched: it does not "
        f"implement {spec.why_not} yet (kube-scheduler v1.36: {spec.stage}, "
        f"{'on' if spec.upstream_default else 'off'} by default)"
    )


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
