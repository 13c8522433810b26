"""Route informer events to the cache and the scheduling queue (upstream's eventhandlers.go).

Bound pods belong to the cache; pending pods of a schedulerName we own belong to the queue. Node
changes and pod deletions are cluster events that may make unschedulable pods schedulable, so
they are forwarded to the queue classified by what changed, as upstream classifies them.

Each handler call is timed into scheduler_event_handling_duration_seconds under upstream's
event label (UnschedulablePodAdd, AssignedPodUpdate, NodeDelete, ...). A pending pod that gets
bound is, as upstream's two filtered handlers see it, an UnschedulablePodDelete followed by an
AssignedPodAdd.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from observability.metrics import SchedulerMetrics
from scheduler.api.objects import NodeView, PodView
from scheduler.apicalls.dispatcher import ApiDispatcher
from scheduler.apicalls.pods import pod_status
from scheduler.cache.cache import Cache
from scheduler.framework.events import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    ActionType,
    ClusterEvent,
    EventResource,
)
from scheduler.queue import event_labels as labels
from scheduler.queue.scheduling_queue import SchedulingQueue

log = logging.getLogger(__name__)


def node_update_action(old: NodeView, new: NodeView) -> ActionType:
    """Which scheduling-relevant properties changed (upstream's nodeSchedulingPropertiesChange)."""
    action = ActionType(0)
    if old.unschedulable != new.unschedulable or old.taints != new.taints:
        action |= ActionType.UPDATE_NODE_TAINT
    if old.allocatable != new.allocatable:
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if old.labels != new.labels:
        action |= ActionType.UPDATE_NODE_LABEL
    if old.conditions != new.conditions:
        action |= ActionType.UPDATE_NODE_CONDITION
    if old.annotations != new.annotations:
        action |= ActionType.UPDATE_NODE_ANNOTATION
    if old.declared_features != new.declared_features:
        action |= ActionType.UPDATE_NODE_DECLARED_FEATURE
    return action


class PodEventHandler:
    def __init__(
        self,
        cache: Cache,
        queue: SchedulingQueue,
        responsible: Callable[[PodView], bool],
        on_pod_gone: Callable[[PodView], None],
        on_pod_left: Callable[[PodView, str], None] = lambda pod, outcome: None,
        metrics: SchedulerMetrics | None = None,
        timer: Callable[[], float] = time.perf_counter,
        dispatcher: ApiDispatcher | None = None,
    ) -> None:
        self._metrics = metrics if metrics is not None else SchedulerMetrics()
        # SchedulerAsyncAPICalls: a pod's update refreshes its pending status patch, which is
        # dropped if it no longer changes anything (upstream's syncPodWithDispatcher, whose
        # result v1.36 discards: the handlers go on with the informer's pod).
        self._dispatcher = dispatcher
        self._timer = timer
        self._cache = cache
        self._queue = queue
        self._responsible = responsible
        self._on_pod_gone = on_pod_gone
        # A pending pod stops being ours without being deleted (bound elsewhere, renamed away).
        self._on_pod_left = on_pod_left

    def on_add(self, pod: PodView) -> None:
        start = self._timer()
        if pod.is_bound:
            self._cache.add_pod(pod)
            self._queue.assigned_pod_added(pod)
            self._metrics.event_handled(labels.ASSIGNED_POD_ADD, self._timer() - start)
        elif self._responsible(pod):
            self._queue.add(pod)
            self._metrics.event_handled(labels.UNSCHEDULED_POD_ADD, self._timer() - start)

    def on_update(self, old: PodView, new: PodView) -> None:
        start = self._timer()
        if self._dispatcher is not None:
            self._dispatcher.sync_object(new.uid, pod_status(new))
        if new.is_bound:
            if old.is_bound:
                self._cache.update_pod(old, new)
                self._queue.assigned_pod_updated(old, new)
                self._metrics.event_handled(labels.ASSIGNED_POD_UPDATE, self._timer() - start)
            else:
                # Bound since we last saw it: by us (confirming the assumed pod) or by someone
                # else. Either way it leaves the queue and joins the cache.
                self._queue.delete(old)
                if not self._cache.is_assumed_pod(new):
                    self._on_pod_left(new, "bound elsewhere")
                deleted = self._timer()
                self._cache.add_pod(new)
                self._queue.assigned_pod_added(new)
                self._metrics.event_handled(labels.UNSCHEDULED_POD_DELETE, deleted - start)
                self._metrics.event_handled(labels.ASSIGNED_POD_ADD, self._timer() - deleted)
            return
        if old.is_bound:
            # An unbinding is not something the API allows; treat it as delete + add.
            self.on_delete(old)
            self.on_add(new)
            return
        if not self._responsible(new):
            if self._responsible(old):
                self._queue.delete(old)  # its schedulerName changed away from us
                self._on_pod_left(new, "handed to another scheduler")
                self._metrics.event_handled(labels.UNSCHEDULED_POD_DELETE, self._timer() - start)
            return
        if not self._cache.is_assumed_pod(new):  # else we are binding it; the bound update follows
            self._queue.update(old, new)
        self._metrics.event_handled(labels.UNSCHEDULED_POD_UPDATE, self._timer() - start)

    def on_delete(self, pod: PodView) -> None:
        start = self._timer()
        self._on_pod_gone(pod)
        if pod.is_bound or self._cache.is_assumed_pod(pod):
            self._cache.remove_pod(pod)
            self._queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None)
            self._metrics.event_handled(labels.ASSIGNED_POD_DELETE, self._timer() - start)
        else:
            self._queue.delete(pod)
            self._metrics.event_handled(labels.UNSCHEDULED_POD_DELETE, self._timer() - start)


class NodeEventHandler:
    def __init__(
        self,
        cache: Cache,
        queue: SchedulingQueue,
        metrics: SchedulerMetrics | None = None,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._cache = cache
        self._queue = queue
        self._metrics = metrics if metrics is not None else SchedulerMetrics()
        self._timer = timer

    def on_add(self, node: NodeView) -> None:
        start = self._timer()
        self._cache.add_node(node)
        self._queue.move_all_to_active_or_backoff(NODE_ADD, None, node)
        self._metrics.event_handled(labels.NODE_ADD, self._timer() - start)

    def on_update(self, old: NodeView, new: NodeView) -> None:
        start = self._timer()
        self._cache.update_node(old, new)
        action = node_update_action(old, new)
        if action:
            # Labelled as upstream labels it: NodeUpdateNodeTaint etc., NodeUpdate for several.
            event = ClusterEvent(EventResource.NODE, action)
            self._queue.move_all_to_active_or_backoff(event, old, new)
        self._metrics.event_handled(labels.NODE_UPDATE, self._timer() - start)

    def on_delete(self, node: NodeView) -> None:
        start = self._timer()
        self._cache.remove_node(node)
        self._metrics.event_handled(labels.NODE_DELETE, self._timer() - start)
