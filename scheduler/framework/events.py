"""Cluster events and queueing hints (upstream's EventsToRegister / QueueingHint).

A plugin that rejects a pod registers the cluster events that could make that pod schedulable,
each with an optional hint function that looks at the concrete change and answers Queue or Skip.
The queue moves an unschedulable pod back only for events that one of its rejecting plugins
registered and whose hint says Queue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, IntFlag, StrEnum
from typing import Any


class ActionType(IntFlag):
    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256  # a pod's requests went down (in-place resize)
    UPDATE_POD_TOLERATIONS = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 2048
    # Any other update of the resource (e.g. a PVC's status).
    UPDATE_OTHER = 4096
    UPDATE_NODE_DECLARED_FEATURE = 8192  # status.declaredFeatures (NodeDeclaredFeatures)

    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATIONS
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
        | UPDATE_OTHER
        | UPDATE_NODE_DECLARED_FEATURE
    )
    ALL = ADD | DELETE | UPDATE


class EventResource(StrEnum):
    # An unscheduled pod (the pod itself or another pending pod).
    UNSCHEDULED_POD = "UnscheduledPod"
    # A pod bound to a node (or assumed onto one).
    ASSIGNED_POD = "AssignedPod"
    POD = "Pod"  # both of the above
    NODE = "Node"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "StorageClass"
    CSI_NODE = "CSINode"
    CSI_DRIVER = "CSIDriver"
    CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
    # resource.k8s.io (Dynamic Resource Allocation)
    RESOURCE_CLAIM = "ResourceClaim"
    RESOURCE_SLICE = "ResourceSlice"
    DEVICE_CLASS = "DeviceClass"
    # scheduling.k8s.io (workload-aware scheduling)
    POD_GROUP = "PodGroup"
    # scheduler-plugins' PodGroup CRD, under the GVK string upstream's Coscheduling registers.
    SCHEDULER_PLUGINS_POD_GROUP = "podgroups.v1alpha1.scheduling.x-k8s.io"
    WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: EventResource
    action: ActionType
    label: str = ""

    def matches(self, registered: ClusterEvent) -> bool:
        """Whether this concrete event is covered by a registered interest in `registered`."""
        if registered.resource == EventResource.WILDCARD:
            return bool(self.action & registered.action)
        if registered.resource == EventResource.POD:
            same_resource = self.resource in (
                EventResource.POD,
                EventResource.ASSIGNED_POD,
                EventResource.UNSCHEDULED_POD,
            )
        else:
            same_resource = self.resource == registered.resource
        return same_resource and bool(self.action & registered.action)

    @property
    def name(self) -> str:
        return self.label or f"{self.resource.value}{self.action!r}"


class QueueingHint(Enum):
    QUEUE = "Queue"
    SKIP = "QueueSkip"


# (pod being requeued, old object or None, new object or None) → Queue / Skip. The objects are
# the scheduler's views (PodView / NodeView) or raw dicts for other resources.
QueueingHintFn = Callable[[Any, Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None  # None: always Queue


# Events the scheduler itself emits (upstream's framework/types.go names).
NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeAdd")
ASSIGNED_POD_DELETE = ClusterEvent(
    EventResource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete"
)
# Anything: used when a pod fails with an error that no plugin claimed, and for the periodic
# flush of pods that stayed unschedulable for too long.
UNSCHEDULABLE_TIMEOUT = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "ForceActivate")
