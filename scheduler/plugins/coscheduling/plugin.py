"""The Coscheduling plugin: QueueSort, PreFilter, PostFilter, Permit, Reserve/Unreserve.

Upstream: kubernetes-sigs/scheduler-plugins pkg/coscheduling/coscheduling.go. Its messages are
upstream's verbatim. The group logic is core.py's PodGroupManager.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from scheduler.api.objects import PodView
from scheduler.api.podgroup import pod_group_full_name, pod_group_label
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from scheduler.framework.interface import (
    CycleState,
    Handle,
    NodeToStatus,
    PostFilterResult,
    PreFilterExtensions,
    PreFilterResult,
)
from scheduler.framework.status import Code, Status
from scheduler.plugins.coscheduling.args import CoschedulingArgs
from scheduler.plugins.coscheduling.core import (
    PermitOutcome,
    PodGroupManager,
    PreFilterRejection,
    namespaced_name,
    wait_time_seconds,
)
from scheduler.queue.types import QueuedPodInfo

log = logging.getLogger(__name__)

NAME = "Coscheduling"


class Coscheduling:
    name = NAME

    def __init__(self, args: CoschedulingArgs | None, handle: Handle) -> None:
        args = args or CoschedulingArgs()
        self._handle = handle
        self.schedule_timeout = float(args.permit_waiting_time_seconds)
        # Upstream keeps no backoff when podGroupBackoffSeconds is 0.
        self.pg_backoff = float(args.pod_group_backoff_seconds)
        self.reject_percentage = args.pod_group_reject_percentage
        self.manager = PodGroupManager(
            handle.cluster_objects.pod_groups, handle.snapshot, self.schedule_timeout
        )
        # The queue's timestamps are monotonic seconds, a PodGroup's creation time is wall
        # time: Less compares on the wall scale, converting with one offset fixed here so the
        # order is stable (a changing offset could break the heap). Tests set it to 0.
        self.queue_clock_to_epoch = time.time() - time.monotonic()

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # Upstream: Pod/Add and the PodGroup GVK's Add|Update.
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.SCHEDULER_PLUGINS_POD_GROUP, ActionType.ADD | ActionType.UPDATE
                )
            ),
        ]

    # -- QueueSort -----------------------------------------------------------------------

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """Higher priority first; then the earlier creation time of the pods' PodGroups (a
        pod without one: its first attempt); then "namespace/name" of the pods."""
        p1, p2 = a.pod.priority, b.pod.priority
        if p1 != p2:
            return p1 > p2
        t1 = self.manager.creation_timestamp(a.pod, self._initial_attempt(a))
        t2 = self.manager.creation_timestamp(b.pod, self._initial_attempt(b))
        if t1 == t2:
            return namespaced_name(a.pod) < namespaced_name(b.pod)
        return t1 < t2

    def _initial_attempt(self, pinfo: QueuedPodInfo) -> float:
        stamp = pinfo.initial_attempt_timestamp
        return (pinfo.timestamp if stamp is None else stamp) + self.queue_clock_to_epoch

    # -- PreFilter -----------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[Any] = ()
    ) -> tuple[PreFilterResult | None, Status]:
        # UnschedulableAndUnresolvable: no preemption attempt for a group that cannot run.
        try:
            self.manager.pre_filter(pod)
        except PreFilterRejection as rejection:
            log.debug("PreFilter failed", extra={"pod": pod.key, "error": str(rejection)})
            return None, Status.unresolvable(str(rejection))
        return None, Status.OK

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    # -- PostFilter ----------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodView, filtered: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Reject the whole group when a pod cannot be placed, unless the group is (almost)
        at quorum already."""
        full_name, group = self.manager.get_pod_group(pod)
        if group is None:
            return PostFilterResult(), Status.unschedulable("can not find pod group")
        # Enough pods satisfy the group already: do not reject it.
        assigned = self.manager.assigned_pods(group.name, pod.namespace, exclude_uid=pod.uid)
        if assigned >= group.min_member:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        # A small gap to the quorum: let the following pods try.
        not_assigned_percentage = (group.min_member - assigned) * 100 / group.min_member
        if not_assigned_percentage <= self.reject_percentage:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        # If this pod failed, the group's others would very likely fail too.
        for waiting in self._handle.iterate_waiting_pods():
            other = waiting.pod
            if other.namespace == pod.namespace and pod_group_label(other.labels) == group.name:
                waiting.reject(self.name, "optimistic rejection in PostFilter")
        if self.pg_backoff and len(self.manager.sibling_pods(pod)) >= group.min_member:
            self.manager.backoff_pod_group(full_name, self.pg_backoff)
        self.manager.delete_permitted_pod_group(full_name)
        return PostFilterResult(), Status.unschedulable(
            f"PodGroup {full_name} gets rejected due to Pod {pod.name} "
            "is unschedulable even after PostFilter"
        )

    # -- Permit --------------------------------------------------------------------------

    def permit(self, state: CycleState, pod: PodView, node_name: str) -> tuple[Status, float]:
        outcome = self.manager.permit(state, pod)
        if outcome is PermitOutcome.POD_GROUP_NOT_SPECIFIED:
            return Status.OK, 0.0
        if outcome is PermitOutcome.POD_GROUP_NOT_FOUND:
            return Status.unschedulable("PodGroup not found"), 0.0
        if outcome is PermitOutcome.WAIT:
            log.info(
                "Pod is waiting to be scheduled to node",
                extra={"pod": pod.key, "nodeName": node_name},
            )
            _, group = self.manager.get_pod_group(pod)
            wait = wait_time_seconds(group, self.schedule_timeout)
            # Move the siblings back to activeQ so they reach Permit too.
            self.manager.activate_siblings(pod, state)
            return Status.wait(), wait
        full_name = pod_group_full_name(pod.namespace, pod.labels)
        for waiting in list(self._handle.iterate_waiting_pods()):
            other = waiting.pod
            if pod_group_full_name(other.namespace, other.labels) == full_name:
                waiting.allow(self.name)
        return Status.OK, 0.0

    # -- Reserve / Unreserve -------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        # Upstream's Reserve does nothing (it exists for Unreserve); here it also marks the
        # member assumed for the assigned count (core.py).
        group = pod_group_label(pod.labels)
        if group:
            self.manager.reserved[pod.uid] = (pod.namespace, group)
        return Status.OK

    def unreserve(self, state: CycleState, pod: PodView, node_name: str) -> None:
        """Reject the group's other waiting pods when one of them fails (a timeout, a
        rejection, a binding failure)."""
        self.manager.reserved.pop(pod.uid, None)
        full_name, group = self.manager.get_pod_group(pod)
        if group is None:
            return
        for waiting in list(self._handle.iterate_waiting_pods()):
            other = waiting.pod
            if other.namespace == pod.namespace and pod_group_label(other.labels) == group.name:
                waiting.reject(self.name, "rejection in Unreserve")
        self.manager.delete_permitted_pod_group(full_name)
