"""The ``event`` label values of the queue and event-handling metrics, as upstream spells them.

Upstream's ClusterEvent.Label() is the custom label when one is set (``NodeAdd``,
``UnschedulableTimeout``, ``ForceActivate``), else the resource followed by the action type's
String() (``UnschedulablePodUpdatePodLabel``, ``storage.k8s.io/CSINodeAdd``). Facts from
staging/src/k8s.io/kube-scheduler/framework/events.go and pkg/scheduler/framework/events.go.
"""

from __future__ import annotations

from typing import Final

from scheduler.framework.events import ActionType, ClusterEvent, EventResource

# Queue moves that are not cluster events (upstream's framework/events.go constants).
SCHEDULE_ATTEMPT_FAILURE: Final = "ScheduleAttemptFailure"
BACKOFF_COMPLETE: Final = "BackoffComplete"
# The inflight_events series for pods being scheduled (upstream's PodPoppedInFlightEvent).
POD_POPPED: Final = "PodPopped"

# Labels of the informer event handlers (eventhandlers.go).
UNSCHEDULED_POD_ADD: Final = "UnschedulablePodAdd"
UNSCHEDULED_POD_UPDATE: Final = "UnschedulablePodUpdate"
UNSCHEDULED_POD_DELETE: Final = "UnschedulablePodDelete"
ASSIGNED_POD_ADD: Final = "AssignedPodAdd"
ASSIGNED_POD_UPDATE: Final = "AssignedPodUpdate"
ASSIGNED_POD_DELETE: Final = "AssignedPodDelete"
NODE_ADD: Final = "NodeAdd"
NODE_UPDATE: Final = "NodeUpdate"
NODE_DELETE: Final = "NodeDelete"

_RESOURCE_NAMES: Final = {
    # Upstream calls the pending-pod resource "UnschedulablePod".
    EventResource.UNSCHEDULED_POD: "UnschedulablePod",
    EventResource.CSI_NODE: "storage.k8s.io/CSINode",
    EventResource.CSI_DRIVER: "storage.k8s.io/CSIDriver",
    EventResource.CSI_STORAGE_CAPACITY: "storage.k8s.io/CSIStorageCapacity",
    EventResource.STORAGE_CLASS: "storage.k8s.io/StorageClass",
    EventResource.RESOURCE_CLAIM: "resource.k8s.io/ResourceClaim",
    EventResource.RESOURCE_SLICE: "resource.k8s.io/ResourceSlice",
    EventResource.DEVICE_CLASS: "resource.k8s.io/DeviceClass",
    EventResource.POD_GROUP: "scheduling.k8s.io/PodGroup",
}

_ACTION_NAMES: Final = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_NODE_DECLARED_FEATURE: "UpdateNodeDeclaredFeature",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATIONS: "UpdatePodTolerations",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.UPDATE_OTHER: "Update",  # upstream's updatePodOther prints as "Update"
    ActionType.UPDATE: "Update",
    ActionType.ALL: "All",
}

_cache: dict[ClusterEvent, str] = {}


def event_label(event: ClusterEvent) -> str:
    """Upstream's ClusterEvent.Label() for `event` (memoised: events are few and hashable)."""
    label = _cache.get(event)
    if label is None:
        label = _cache[event] = _compute(event)
    return label


def _compute(event: ClusterEvent) -> str:
    if event.label:
        return event.label
    resource = _RESOURCE_NAMES.get(event.resource, event.resource.value)
    # A combination of update flags is no single upstream action; it prints as "Update".
    action = _ACTION_NAMES.get(event.action)
    if action is None:
        action = "Update" if not event.action & (ActionType.ADD | ActionType.DELETE) else ""
    return f"{resource}{action}"
