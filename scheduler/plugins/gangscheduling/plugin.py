"""The GangScheduling plugin (upstream's gangscheduling.go at v1.36).

- PreEnqueue holds a member out of activeQ until its PodGroup exists and, for a gang, until
  minCount of its pods exist (UnschedulableAndUnresolvable with upstream's messages).
- Reserve / Unreserve record the member as assumed / no longer assumed in the group's state
  (upstream's PodGroupManager learns it from the cache's assume and forget).
- Permit makes a member wait (5 minutes, upstream's permitTimeoutDuration) until minCount of its
  group are assumed or bound; the member that completes the quorum allows the waiting ones. On
  timeout each waiting member is rejected ("rejected due to timeout after waiting 5m0s at plugin
  GangScheduling").
- Queueing hints: a pod of the same group added (pending or bound), the PodGroup added, its
  minCount lowered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scheduler.api.objects import PodView
from scheduler.api.workload import PodGroupView
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import CycleState, Handle
from scheduler.framework.registry import PluginEntry
from scheduler.framework.status import Status
from scheduler.listers.workload_objects import WorkloadObjects

NAME = "GangScheduling"
#: How long gang members wait at Permit for the quorum (upstream's permitTimeoutDuration).
PERMIT_TIMEOUT_SECONDS = 5 * 60.0

MSG_WAITING_FOR_MIN_COUNT_IN_QUEUE = (
    "waiting for minCount pods from a gang to appear in scheduling queue"
)
MSG_WAITING_FOR_MIN_COUNT_SCHEDULED = "waiting for minCount pods from a gang to be scheduled"


def msg_waiting_for_pod_group(name: str) -> str:
    # Upstream's wording, "pods's" included.
    return f'waiting for pods\'s pod group "{name}" to appear in scheduling queue'


class GangScheduling:
    name = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle
        self._workloads: WorkloadObjects = (
            handle.cluster_objects.workloads if handle is not None else WorkloadObjects()
        )

    # -- PreEnqueue ------------------------------------------------------------------------

    def pre_enqueue(self, pod: PodView) -> Status:
        group_name = pod.scheduling_group
        if group_name is None:
            return Status.OK
        group = self._workloads.pod_group(pod.namespace, group_name)
        if group is None:
            # The pod is unschedulable until its PodGroup object is created.
            return Status.unresolvable(msg_waiting_for_pod_group(group_name))
        if group.min_count is None:
            return Status.OK  # only gangs are held
        state = self._workloads.states.get(pod.namespace, group_name)
        if state.all_pods_count() < group.min_count:
            return Status.unresolvable(MSG_WAITING_FOR_MIN_COUNT_IN_QUEUE)
        return Status.OK

    # -- Reserve / Unreserve ---------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        if pod.scheduling_group is not None:
            self._workloads.states.assume(pod)
        return Status.OK

    def unreserve(self, state: CycleState, pod: PodView, node_name: str) -> None:
        if pod.scheduling_group is not None:
            self._workloads.states.forget(pod)

    # -- Permit ----------------------------------------------------------------------------

    def permit(self, state: CycleState, pod: PodView, node_name: str) -> tuple[Status, float]:
        group_name = pod.scheduling_group
        if group_name is None:
            return Status.OK, 0.0
        group = self._workloads.pod_group(pod.namespace, group_name)
        if group is None:
            # Likely deleted meanwhile: an error retries the pod when the group is added again.
            return (
                Status.error(
                    f"failed to get podGroup {pod.namespace}/{group_name}: "
                    f'podgroup.scheduling.k8s.io "{group_name}" not found'
                ),
                0.0,
            )
        if group.min_count is None:
            return Status.OK, 0.0
        group_state = self._workloads.states.get(pod.namespace, group_name)
        if group_state.scheduled_pods_count() < group.min_count:
            # The others may have waited for this one: let them try now.
            self._workloads.activate(group_state.unscheduled_pods())
            return Status.wait(MSG_WAITING_FOR_MIN_COUNT_SCHEDULED), PERMIT_TIMEOUT_SECONDS
        # The quorum is met: allow this pod and every member waiting on Permit.
        if self._handle is not None:
            for uid in group_state.assumed_pods():
                waiting = self._handle.get_waiting_pod(uid)
                if waiting is not None:
                    waiting.allow(NAME)
        return Status.OK, 0.0

    # -- queueing hints --------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            # A pod added (pending or bound) may complete the gang. spec.schedulingGroup is
            # immutable: pod updates need no subscription.
            ClusterEventWithHint(
                ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.ADD), self._after_pod_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD), self._after_pod_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD_GROUP, ActionType.ADD), self._after_group_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD_GROUP, ActionType.UPDATE),
                self._after_group_updated,
            ),
        )

    @staticmethod
    def _after_pod_added(pod: PodView, old: Any, new: Any) -> QueueingHint:
        if (
            isinstance(new, PodView)
            and pod.scheduling_group is not None
            and new.scheduling_group == pod.scheduling_group
            and new.namespace == pod.namespace
        ):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def _after_group_added(pod: PodView, old: Any, new: Any) -> QueueingHint:
        if isinstance(new, PodGroupView) and _names(pod, new):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def _after_group_updated(pod: PodView, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, PodGroupView) or not _names(pod, new):
            return QueueingHint.SKIP
        if not isinstance(old, PodGroupView) or old.min_count is None or new.min_count is None:
            # A policy is not expected to change: requeue to be safe, as upstream.
            return QueueingHint.QUEUE
        if new.min_count >= old.min_count:
            return QueueingHint.SKIP  # a minCount that did not decrease helps no one
        return QueueingHint.QUEUE


def _names(pod: PodView, group: PodGroupView) -> bool:
    return pod.scheduling_group == group.name and pod.namespace == group.namespace


PLUGIN_ENTRY = PluginEntry(NAME, GangScheduling)
