"""Which scheduling-relevant properties a pod update changed, as cluster events.

Upstream: pkg/scheduler/framework/events.go PodSchedulingPropertiesChange and its extractors.
"""

from __future__ import annotations

from scheduler.api.objects import PodView, Resource
from scheduler.api.pod import requests_for_resize_hints
from scheduler.framework.events import ActionType, ClusterEvent, EventResource


def _scaled_down(old: Resource, new: Resource) -> bool:
    if (
        old.milli_cpu > new.milli_cpu
        or old.memory > new.memory
        or old.ephemeral_storage > new.ephemeral_storage
    ):
        return True
    return any(amount > new.scalar.get(name, 0) for name, amount in old.scalar.items())


def pod_update_actions(old: PodView, new: PodView) -> list[ActionType]:
    actions: list[ActionType] = []
    if dict(old.labels) != dict(new.labels):
        actions.append(ActionType.UPDATE_POD_LABEL)
    # extractPodScaleDown counts pod-level requests whatever PodLevelResources says
    if _scaled_down(requests_for_resize_hints(old), requests_for_resize_hints(new)):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if old.scheduling_gates and not new.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    # The API only lets tolerations be added, so any difference may help the pod.
    if old.tolerations != new.tolerations:
        actions.append(ActionType.UPDATE_POD_TOLERATIONS)
    # extractPodGeneratedResourceClaimChange: the resourceclaim controller recorded a claim.
    if dict(old.resource_claim_statuses) != dict(new.resource_claim_statuses):
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if not actions:
        actions.append(ActionType.UPDATE_OTHER)
    return actions


def pod_update_events(old: PodView, new: PodView) -> list[ClusterEvent]:
    """One event per changed property; UPDATE_OTHER when none of the known ones changed."""
    resource = EventResource.ASSIGNED_POD if new.node_name else EventResource.UNSCHEDULED_POD
    return [ClusterEvent(resource, action) for action in pod_update_actions(old, new)]
