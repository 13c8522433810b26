"""The workload-aware scheduling feature gates (`--feature-gates`) and what aiosched does under
each.

Upstream at v1.37, the newest release: GenericWorkload (the Workload and PodGroup API,
pod.spec.schedulingGroup) alpha since v1.35 and beta since v1.37, still off by default;
GangScheduling alpha since v1.35, TopologyAwareWorkloadScheduling and WorkloadAwarePreemption
alpha since v1.36, all off (scheduler/listers/workload_objects.py says where each default was
read). GangScheduling needs GenericWorkload, WorkloadAwarePreemption needs GangScheduling
(the gates' dependency table). aiosched honours all four both ways:
TopologyAwareWorkloadScheduling places a group within one topology domain
(scheduler/cycle/podgroup_placement.py), WorkloadAwarePreemption preempts on behalf of a whole
gang whose PodGroup cycle failed (scheduler/plugins/defaultpreemption/podgroup.py). No gate is
refused any more; `unsupported_gate_value` stays, the hook for a gate aiosched cannot honour, so
that it never silently decides differently from kube-scheduler with the same flags.
"""

from __future__ import annotations

# The gates and the check the cycle makes live beside the listers (the cycle imports no
# plugin); they are re-exported here, where the flags look for them.
from scheduler.listers.workload_objects import (
    GANG_SCHEDULING,
    GENERIC_WORKLOAD,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
    WORKLOAD_AWARE_PREEMPTION,
    WORKLOAD_GATE_DEFAULTS,
    gang_scheduling_enabled,
    workload_aware_preemption_enabled,
)

__all__ = [
    "GANG_SCHEDULING",
    "GENERIC_WORKLOAD",
    "TOPOLOGY_AWARE_WORKLOAD_SCHEDULING",
    "WORKLOAD_AWARE_PREEMPTION",
    "WORKLOAD_GATE_DEFAULTS",
    "gang_scheduling_enabled",
    "unsupported_gate_value",
    "workload_aware_preemption_enabled",
]

# Gate → what aiosched would not implement under it (none at present).
_NOT_IMPLEMENTED: dict[str, str] = {}


def unsupported_gate_value(name: str, value: bool) -> str | None:
    """Why `name=value` cannot be honoured, or None."""
    what = _NOT_IMPLEMENTED.get(name)
    if what is None or not value:
        return None
    return (
        f"feature gate {name}=true is not supported by aiosched: it does not implement {what} "
        f"yet (kube-scheduler v1.37: alpha, off by default)"
    )
