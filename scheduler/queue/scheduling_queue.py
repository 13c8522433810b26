"""The scheduling queue: upstream's PriorityQueue (backend/queue/scheduling_queue.go) on asyncio.

Every pending pod the queue knows is in exactly one place:
  - activeQ: ready to be scheduled, popped in QueueSort order;
  - backoffQ: failed recently and waits out its backoff before going back to activeQ;
  - unschedulable pods: wait for a cluster event that may help (or the leftover flush); pods kept
    out by a PreEnqueue plugin (gated) wait here too, flagged `gated`;
  - in flight: popped and being scheduled (or bound); it comes back through
    add_unschedulable_if_not_present or leaves with done().

All methods but pop() and run() are synchronous and meant to be called from the event loop's
thread; the queue itself never blocks.

Metrics are updated where upstream updates them: scheduler_queue_incoming_pods_total on every
move into activeQ, backoffQ or the unschedulable pods (labelled with the event that moved the
pod), scheduler_unschedulable_pods from a failed attempt (or a gating PreEnqueue plugin) until
the pod is popped again or deleted, scheduler_inflight_events while pods are in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any

from observability.metrics import SchedulerMetrics
from scheduler.api.objects import PodView
from scheduler.framework.events import (
    FORCE_ACTIVATE,
    UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    EventResource,
    QueueingHint,
)
from scheduler.framework.status import Status
from scheduler.queue.active import ActiveQueue, LessFn
from scheduler.queue.backoff import BackoffQueue, backoff_duration
from scheduler.queue.event_labels import (
    BACKOFF_COMPLETE,
    SCHEDULE_ATTEMPT_FAILURE,
    UNSCHEDULED_POD_ADD,
    UNSCHEDULED_POD_UPDATE,
    event_label,
)
from scheduler.queue.in_flight import InFlight
from scheduler.queue.nominator import Nominator
from scheduler.queue.pod_events import pod_update_events
from scheduler.queue.types import QueuedPodInfo, SortKey
from scheduler.queue.unschedulable import UnschedulablePods

log = logging.getLogger(__name__)

PreEnqueueFn = Callable[[PodView], Status]
# (unschedulable pod, event, old object, new object) → may the event make the pod schedulable?
HintFn = Callable[[QueuedPodInfo, ClusterEvent, Any, Any], QueueingHint]
# (gating plugin, event) → did that PreEnqueue plugin register an event the event matches?
GateEventsFn = Callable[[str, ClusterEvent], bool]

ASSIGNED_POD_ADD = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")

# framework.PopFromBackoffQ: the incoming-pods event of a pod popped from backoffQ.
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
# backoffQOrderingWindowDuration: backoff expiries are ordered in windows of a second.
BACKOFF_Q_ORDERING_WINDOW = 1.0


def _align_to_window(t: float) -> float:
    """alignToWindow: `t` truncated to its ordering window."""
    return math.floor(t / BACKOFF_Q_ORDERING_WINDOW) * BACKOFF_Q_ORDERING_WINDOW


ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"
IN_FLIGHT = "in_flight"

_PENDING_PODS_SUMMARY = "activeQ:{}; backoffQ:{}; unschedulablePods:{}"


class _Strategy(Enum):
    """Upstream's queueingStrategy: where a requeued pod goes."""

    SKIP = 0  # stays unschedulable
    AFTER_BACKOFF = 1  # backoffQ if still backing off, else activeQ
    IMMEDIATELY = 2  # activeQ (a Pending plugin said the wait is over)


class SchedulingQueue:
    def __init__(
        self,
        *,
        less: LessFn,
        pre_enqueue: PreEnqueueFn,
        hints: HintFn | None,
        clock: Callable[[], float],
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_unschedulable_duration: float = 300.0,
        metrics: SchedulerMetrics | None = None,
        gate_may_lift: GateEventsFn | None = None,
        pop_from_backoff_q: bool = False,
        namespace_labels: Callable[[str], Mapping[str, str] | None] | None = None,
    ) -> None:
        self._metrics = metrics if metrics is not None else SchedulerMetrics()
        # A namespace's labels (None when unknown), for the namespaceSelectors of the pod
        # affinity terms an assigned pod is matched against (GetNamespaceLabelsSnapshot).
        self._namespace_labels = namespace_labels
        self._pre_enqueue = pre_enqueue
        self._hints = hints
        # None: gated pods are asked like the others (no plugin's events are known)
        self._gate_may_lift = gate_may_lift
        self._clock = clock
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._max_unschedulable_duration = max_unschedulable_duration

        self._active = ActiveQueue(less)
        # The SchedulerPopFromBackoffQ gate (beta and on by default upstream since v1.33):
        # with activeQ empty, Pop takes the first pod of backoffQ rather than waiting out its
        # backoff; backoff expiries fall into one-second windows ordered as activeQ, and
        # PreEnqueue runs before a pod enters backoffQ.
        self._pop_from_backoff_q = pop_from_backoff_q
        self._backoff = BackoffQueue(less if pop_from_backoff_q else None)
        self._unschedulable = UnschedulablePods()
        self._in_flight = InFlight(self._metrics.inflight_event)
        # In-flight pods deleted (or dropped) meanwhile: they must not come back.
        self._deleted_in_flight: set[str] = set()
        # The newest view of an in-flight pod updated meanwhile; used when it is requeued.
        self._latest_in_flight: dict[str, PodView] = {}
        self._nominator = Nominator()

        self._scheduling_cycle = 0
        # Cycle of the last move request: a pod popped at or before it may have missed an event.
        self._move_request_cycle = -1
        self._closed = False
        # pop() waits on this while activeQ is empty. An asyncio.Condition would need its lock,
        # which synchronous mutators cannot take; an Event set on every wake-up is equivalent
        # because waiters re-check activeQ before sleeping again.
        self._wakeup = asyncio.Event()
        self._stop = asyncio.Event()

    def set_backoff(self, initial: float, maximum: float) -> None:
        """New podInitialBackoffSeconds / podMaxBackoffSeconds (a config reload): pods that
        enter backoffQ from now on wait by them; those already waiting keep their expiry."""
        self._initial_backoff = initial
        self._max_backoff = maximum

    @property
    def backoff(self) -> tuple[float, float]:
        """(initial, maximum) backoff in seconds."""
        return self._initial_backoff, self._max_backoff

    # ----------------------------------------------------------------- informer-driven changes

    def add(self, pod: PodView) -> None:
        """A new pending pod; PreEnqueue plugins may gate it."""
        existing = self._current_view(pod.uid)
        if existing is not None:
            self.update(existing, pod)
            return
        self._add_new(pod)

    def update(self, old: PodView | None, new: PodView) -> None:
        uid = new.uid
        if uid in self._in_flight:
            # Being scheduled: remember the change; it decides where the pod goes if it fails.
            # (A pod dropped meanwhile and seen again, e.g. after a profile reload, is back.)
            self._deleted_in_flight.discard(uid)
            for event in self._update_events(old, new):
                self._in_flight.record(event, old, new)
            self._latest_in_flight[uid] = new
            # nor the nominator (upstream's Update returns before UpdateNominatedPod): the
            # status patch of an earlier attempt's nomination, seen while the pod is being
            # bound, would nominate a pod that is about to be on its node
            return

        active = self._active.get(uid)
        if active is not None:
            # Re-inserted as a copy: the sort key (e.g. priority) may have changed.
            self._active.remove(uid)
            self._active.add(dataclasses.replace(active, pod=new))
            self._nominator.update(old, new)
            return

        backing_off = self._backoff.get(uid)
        if backing_off is not None:
            backing_off.pod = new  # the expiry depends on attempts and timestamp only
            self._nominator.update(old, new)
            return

        pinfo = self._unschedulable.get(uid)
        if pinfo is not None:
            self._update_unschedulable(pinfo, old, new)
            return

        self._add_new(new, UNSCHEDULED_POD_UPDATE)

    def delete(self, pod: PodView) -> None:
        uid = pod.uid
        self._nominator.delete(uid)
        queued = (
            self._active.remove(uid) or self._backoff.remove(uid) or self._unschedulable.pop(uid)
        )
        if queued is not None:
            self._forget_rejectors(queued)
        elif uid in self._in_flight:
            self._deleted_in_flight.add(uid)

    def assigned_pod_added(self, pod: PodView) -> None:
        """A pod was bound; it may satisfy pending pods' affinity or spreading constraints."""
        self._move_pods(self._cross_topology_candidates(pod), ASSIGNED_POD_ADD, None, pod)

    def assigned_pod_updated(self, old: PodView, new: PodView) -> None:
        for event in pod_update_events(old, new):
            if event.action & ActionType.UPDATE_POD_SCALE_DOWN:
                # Freed resources may help any pod, not only those with cross-topology terms.
                self.move_all_to_active_or_backoff(event, old, new)
            else:
                self._move_pods(self._cross_topology_candidates(new), event, old, new)

    # ------------------------------------------------------------------- the scheduling loop

    async def pop(self) -> QueuedPodInfo | None:
        """The head of activeQ, waiting while it is empty; None once the queue is closed."""
        while True:
            if self._closed:
                return None
            pinfo = self.try_pop()
            if pinfo is not None:
                return pinfo
            self._wakeup.clear()
            await self._wakeup.wait()

    def try_pop(self) -> QueuedPodInfo | None:
        """pop() without waiting: None when activeQ is empty or the queue is closed."""
        if self._closed:
            return None
        pinfo = self._active.pop()
        if pinfo is None:
            if not self._pop_from_backoff_q:
                return None
            # activeQ is empty: take backoffQ's first pod (popBackoff), not an errored one.
            pinfo = self._backoff.pop_head()
            if pinfo is None:
                return None
            self._metrics.incoming(ACTIVE, POP_FROM_BACKOFF_Q)
        pinfo.attempts += 1
        self._scheduling_cycle += 1
        # Rejections are recorded afresh by this attempt.
        self._forget_rejectors(pinfo)
        pinfo.unschedulable_plugins.clear()
        pinfo.pending_plugins.clear()
        self._in_flight.start(pinfo)
        return pinfo

    def pop_specific(self, uid: str) -> QueuedPodInfo | None:
        """Take the queued, ungated pod `uid` out of its sub-queue as if popped, in the current
        scheduling cycle (upstream's PopSpecificPod: the PodGroup cycle takes a popped pod's
        group members with it); None when it is not queued or a PreEnqueue plugin gates it."""
        pinfo = self._active.get(uid) or self._backoff.get(uid) or self._unschedulable.get(uid)
        if pinfo is None or pinfo.gated or self._closed:
            return None
        self._active.remove(uid) or self._backoff.remove(uid) or self._unschedulable.pop(uid)
        pinfo.attempts += 1
        self._forget_rejectors(pinfo)
        pinfo.unschedulable_plugins.clear()
        pinfo.pending_plugins.clear()
        self._in_flight.start(pinfo)
        return pinfo

    def done(self, uid: str) -> None:
        """The pod's attempt is over (bound, or requeued); forget it as in flight."""
        self._in_flight.finish(uid)
        self._deleted_in_flight.discard(uid)
        self._latest_in_flight.pop(uid, None)

    def add_unschedulable_if_not_present(self, pinfo: QueuedPodInfo, scheduling_cycle: int) -> None:
        """Requeue a pod after a failed attempt (its rejectors set in unschedulable_plugins /
        pending_plugins; both empty means an error). It goes to the unschedulable pods unless
        an event seen while it was in flight may help, or it failed with an error: then to
        backoffQ / activeQ. Ends the pod's in-flight state."""
        uid = pinfo.uid
        try:
            if uid in self._deleted_in_flight:
                return
            if uid in self._active or uid in self._backoff or uid in self._unschedulable:
                log.debug("pod %s is already queued; not re-adding it", pinfo.pod.key)
                return
            latest = self._latest_in_flight.get(uid)
            if latest is not None:
                pinfo.pod = latest
            pinfo.flushed_from_unschedulable = False  # this attempt's outcome is what counts
            errored = not pinfo.unschedulable_plugins and not pinfo.pending_plugins
            if not errored:
                self._metrics.unschedulable_added(
                    pinfo.unschedulable_plugins | pinfo.pending_plugins, pinfo.pod.scheduler_name
                )
            # Upstream's accounting (AddUnschedulableIfNotPresent): an error counts towards
            # ConsecutiveErrorsCount, a rejection towards UnschedulableCount and ends the run
            # of errors. The backoff doubles with these, never with pops: a pod popped early
            # from backoffQ, skipped or handed to a gang owes nothing for it.
            if errored:
                pinfo.consecutive_errors += 1
            else:
                pinfo.unschedulable_count += 1
                pinfo.consecutive_errors = 0
            pinfo.timestamp = self._clock()
            if uid in self._in_flight:
                strategy = self._strategy_for_in_flight(pinfo)
            elif errored or self._move_request_cycle >= scheduling_cycle:
                # Not popped from this queue: fall back on upstream's move-request cycle.
                strategy = _Strategy.AFTER_BACKOFF
            else:
                strategy = _Strategy.SKIP
            if self._requeue(pinfo, strategy, SCHEDULE_ATTEMPT_FAILURE) == ACTIVE:
                self._wakeup.set()
        finally:
            self.done(uid)

    def activate(self, pods: Iterable[PodView]) -> None:
        """Move the pods to activeQ now if they wait in backoffQ or the unschedulable pods."""
        activated = False
        for pod in pods:
            pinfo = self._unschedulable.get(pod.uid)
            from_backoff = pinfo is None
            if from_backoff:
                pinfo = self._backoff.remove(pod.uid)
            if pinfo is not None:
                activated |= self._move_to_active(pinfo, FORCE_ACTIVATE.label, from_backoff)
            elif pod.uid in self._in_flight:
                # It comes back later; make sure it is then requeued at once.
                self._in_flight.record(FORCE_ACTIVATE, None, pod)
                self._move_request_cycle = self._scheduling_cycle
        if activated:
            self._wakeup.set()

    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: Any,
        new: Any,
        pre_check: Callable[[PodView], bool] | None = None,
    ) -> None:
        """Requeue every unschedulable pod (passing `pre_check`) the event may help."""
        gate_may_lift = self._gate_may_lift
        if gate_may_lift is None:
            pods: Iterable[QueuedPodInfo] = self._unschedulable.values()
        else:
            # Gated pods whose gating plugin did not register the event are not even visited.
            pods = self._unschedulable.candidates(lambda plugin: gate_may_lift(plugin, event))
        candidates = [pinfo for pinfo in pods if pre_check is None or pre_check(pinfo.pod)]
        self._move_pods(candidates, event, old, new)

    # ---------------------------------------------------------------------- periodic flushes

    def flush_backoff_completed(self) -> None:
        activated = False
        now = self._clock()
        if self._pop_from_backoff_q:
            # isPodBackingoff: a pod whose window is the current one still backs off.
            expired = self._backoff.pop_expired(_align_to_window(now), inclusive=False)
        else:
            expired = self._backoff.pop_expired(now, inclusive=False)
        for pinfo in expired:
            activated |= self._move_to_active(pinfo, BACKOFF_COMPLETE, from_backoff=True)
        if activated:
            self._wakeup.set()

    def flush_unschedulable_left_over(self) -> None:
        """Requeue pods that stayed unschedulable longer than max_unschedulable_duration.

        Gated pods stay: only an update or event can lift their gate.
        """
        now = self._clock()
        stale = [
            pinfo
            for pinfo in self._unschedulable.values()
            if not pinfo.gated and now - pinfo.timestamp > self._max_unschedulable_duration
        ]
        for pinfo in stale:
            pinfo.flushed_from_unschedulable = True
        if stale:
            self._move_pods(stale, UNSCHEDULABLE_TIMEOUT, None, None)

    async def run(self, backoff_period: float = 1.0, leftover_period: float = 30.0) -> None:
        """Flush backoffQ every `backoff_period` and old unschedulable pods every
        `leftover_period` seconds, until close()."""
        ticks_per_leftover = max(1, round(leftover_period / backoff_period))
        ticks = 0
        while not self._closed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=backoff_period)
            if self._closed:
                return
            self.flush_backoff_completed()
            ticks += 1
            if ticks % ticks_per_leftover == 0:
                self.flush_unschedulable_left_over()

    def close(self) -> None:
        self._closed = True
        self._wakeup.set()
        self._stop.set()

    # ------------------------------------------------------------------ profiles and metrics

    def set_less(self, less: LessFn, sort_key: SortKey | None = None) -> None:
        """Reorder activeQ by a new QueueSort (profile reload; `sort_key`: its key, when it has
        one); no pod is lost."""
        self._active.set_less(less, sort_key)
        if self._pop_from_backoff_q:
            self._backoff.set_less(less)

    def drop_if(self, predicate: Callable[[PodView], bool]) -> list[PodView]:
        """Remove queued (and in-flight) pods matching `predicate`; returns them.

        In-flight pods are returned too and will not be requeued when their attempt ends.
        """
        dropped: list[PodView] = []
        for pinfo in [p for p in self._active if predicate(p.pod)]:
            self._active.remove(pinfo.uid)
            self._forget_rejectors(pinfo)
            dropped.append(pinfo.pod)
        for pinfo in [p for p in self._backoff if predicate(p.pod)]:
            self._backoff.remove(pinfo.uid)
            self._forget_rejectors(pinfo)
            dropped.append(pinfo.pod)
        for pinfo in [p for p in self._unschedulable.values() if predicate(p.pod)]:
            self._unschedulable.pop(pinfo.uid)
            self._forget_rejectors(pinfo)
            dropped.append(pinfo.pod)
        for pinfo in self._in_flight.pods():
            pod = self._latest_in_flight.get(pinfo.uid, pinfo.pod)
            if pinfo.uid not in self._deleted_in_flight and predicate(pod):
                self._deleted_in_flight.add(pinfo.uid)
                dropped.append(pod)
        for pod in dropped:
            self._nominator.delete(pod.uid)
        return dropped

    @property
    def scheduling_cycle(self) -> int:
        return self._scheduling_cycle

    @property
    def closed(self) -> bool:
        return self._closed

    def pending_pods(self) -> tuple[list[PodView], str]:
        """Queued pods (not in-flight ones) and upstream's one-line summary."""
        pods = [p.pod for p in self._active]
        pods.extend(p.pod for p in self._backoff)
        pods.extend(p.pod for p in self._unschedulable.values())
        summary = _PENDING_PODS_SUMMARY.format(
            len(self._active), len(self._backoff), len(self._unschedulable)
        )
        return pods, summary

    def counts(self) -> dict[str, int]:
        """Pods per queue as the scheduler_pending_pods{queue} metric reports them."""
        gated = self._unschedulable.gated_count  # counted as pods come and go: O(1) a scrape
        return {
            "active": len(self._active),
            "backoff": len(self._backoff),
            "unschedulable": len(self._unschedulable) - gated,
            "gated": gated,
        }

    def location(self, uid: str) -> str | None:
        """Where the pod is: active, backoff, unschedulable, gated, in_flight, or None."""
        if uid in self._active:
            return ACTIVE
        if uid in self._backoff:
            return BACKOFF
        pinfo = self._unschedulable.get(uid)
        if pinfo is not None:
            return GATED if pinfo.gated else UNSCHEDULABLE
        if uid in self._in_flight and uid not in self._deleted_in_flight:
            return IN_FLIGHT
        return None

    def get(self, uid: str) -> QueuedPodInfo | None:
        return (
            self._active.get(uid)
            or self._backoff.get(uid)
            or self._unschedulable.get(uid)
            or self._in_flight.get(uid)
        )

    # --------------------------------------------------------------------------- nominator

    def add_nominated_pod(self, pod: PodView, node_name: str | None = None) -> None:
        """Nominate `pod` to `node_name` (None: its status.nominatedNodeName; "": clear)."""
        self._nominator.add(pod, node_name)

    def delete_nominated_pod_if_exists(self, pod: PodView) -> None:
        self._nominator.delete(pod.uid)

    def nominated_pods_for_node(self, node_name: str) -> list[PodView]:
        return self._nominator.pods_for_node(node_name)

    def has_nominated_pods(self) -> bool:
        """Whether any pod is nominated (lets Filter skip the per-node nominated-pods check)."""
        return len(self._nominator) > 0

    def nominated_node_names(self) -> list[str]:
        """The nodes some pod is nominated to (the row path checks only those one by one)."""
        return self._nominator.node_names()

    def nominated_node_name(self, uid: str) -> str:
        return self._nominator.node_of(uid)

    # ----------------------------------------------------------------------------- internals

    def _current_view(self, uid: str) -> PodView | None:
        if uid in self._in_flight:
            latest = self._latest_in_flight.get(uid)
            if latest is not None:
                return latest
        pinfo = self.get(uid)
        return pinfo.pod if pinfo is not None else None

    def _add_new(self, pod: PodView, event: str = UNSCHEDULED_POD_ADD) -> None:
        pinfo = QueuedPodInfo(pod=pod, timestamp=self._clock())
        if self._move_to_active(pinfo, event):
            self._nominator.add(pod)
            self._wakeup.set()

    def _update_events(self, old: PodView | None, new: PodView) -> list[ClusterEvent]:
        if old is None:
            return [ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE_OTHER)]
        return pod_update_events(old, new)

    def _update_unschedulable(
        self, pinfo: QueuedPodInfo, old: PodView | None, new: PodView
    ) -> None:
        previous = pinfo.pod
        pinfo.pod = new
        self._nominator.update(old, new)
        for event in self._update_events(old or previous, new):
            strategy = self._worth_requeuing(pinfo, event, old or previous, new)
            if strategy is _Strategy.SKIP:
                continue
            if self._requeue(pinfo, strategy, event_label(event)) == ACTIVE:
                self._wakeup.set()
                return

    def _cross_topology_candidates(self, pod: PodView) -> list[QueuedPodInfo]:
        """getUnschedulablePodsWithCrossTopologyTerm: unschedulable pods rejected by
        PodTopologySpread in `pod`'s namespace, or with a required affinity term `pod` matches,
        from an index (not a walk of every unschedulable pod per bound pod)."""
        lookup = self._namespace_labels
        labels = lookup(pod.namespace) if lookup is not None else None
        return self._unschedulable.cross_topology_candidates(pod, labels)

    def _move_pods(
        self, pinfos: Iterable[QueuedPodInfo], event: ClusterEvent, old: Any, new: Any
    ) -> None:
        activated = False
        label = event_label(event)
        gate_may_lift = self._gate_may_lift
        for pinfo in pinfos:
            if (
                pinfo.gated
                and gate_may_lift is not None
                and not gate_may_lift(pinfo.gating_plugin, event)
            ):
                # Upstream: an event its gating plugin did not register never moves a gated pod.
                continue
            strategy = self._worth_requeuing(pinfo, event, old, new)
            if strategy is _Strategy.SKIP:
                continue
            self._unschedulable.pop(pinfo.uid)
            activated |= self._requeue(pinfo, strategy, label) == ACTIVE
        self._move_request_cycle = self._scheduling_cycle
        # A pod in flight may come back rejected by a plugin this event resolves.
        self._in_flight.record(event, old, new, label)
        if activated:
            self._wakeup.set()

    def _run_pre_enqueue(self, pinfo: QueuedPodInfo) -> None:
        status = self._pre_enqueue(pinfo.pod)
        if status.is_success:
            pinfo.gated = False
            pinfo.gating_plugin = ""
            return
        pinfo.gated = True
        pinfo.gating_plugin = status.plugin
        plugin = status.plugin
        if plugin and plugin not in pinfo.unschedulable_plugins:
            # So that the events the gating plugin registered can lift the gate.
            if plugin not in pinfo.pending_plugins:
                self._metrics.unschedulable_added((plugin,), pinfo.pod.scheduler_name)
            pinfo.unschedulable_plugins.add(plugin)

    def _move_to_active(self, pinfo: QueuedPodInfo, event: str, from_backoff: bool = False) -> bool:
        """activeQ if PreEnqueue lets the pod in, else the unschedulable pods (gated);
        ``event`` labels the move in scheduler_queue_incoming_pods_total. Under
        SchedulerPopFromBackoffQ a pod coming straight from backoffQ passed PreEnqueue on its
        way in and is not asked again (moveToActiveQ's movesFromBackoffQ)."""
        uid = pinfo.uid
        if not (from_backoff and self._pop_from_backoff_q):
            self._run_pre_enqueue(pinfo)
        if pinfo.gated:
            # A gated pod is never attempted: a later wake-up must not count as after a flush.
            pinfo.flushed_from_unschedulable = False
            self._backoff.remove(uid)
            self._park_unschedulable(pinfo, event)
            return False
        if pinfo.initial_attempt_timestamp is None:
            pinfo.initial_attempt_timestamp = self._clock()
        self._unschedulable.pop(uid)
        self._backoff.remove(uid)
        self._active.add(pinfo)
        self._metrics.incoming(ACTIVE, event)
        return True

    def _park_unschedulable(self, pinfo: QueuedPodInfo, event: str) -> None:
        """Into the unschedulable pods; counted as incoming only when it was not there yet."""
        if pinfo.uid not in self._unschedulable:
            self._metrics.incoming(UNSCHEDULABLE, event)
        self._unschedulable.put(pinfo)

    def _forget_rejectors(self, pinfo: QueuedPodInfo) -> None:
        """The pod no longer counts in scheduler_unschedulable_pods (popped or deleted)."""
        if pinfo.unschedulable_plugins or pinfo.pending_plugins:
            self._metrics.unschedulable_removed(
                pinfo.unschedulable_plugins | pinfo.pending_plugins, pinfo.pod.scheduler_name
            )

    def _backoff_expiry(self, pinfo: QueuedPodInfo) -> float | None:
        """When the pod's backoff ends (getBackoffTime): by ConsecutiveErrorsCount after an
        error, else by UnschedulableCount; None when it owes none (podMaxBackoff 0 turns
        backoff off)."""
        if self._max_backoff <= 0:
            return None
        count = pinfo.consecutive_errors or pinfo.unschedulable_count
        duration = backoff_duration(count, self._initial_backoff, self._max_backoff)
        if duration <= 0:
            return None
        if self._pop_from_backoff_q:
            return _align_to_window(pinfo.timestamp + duration)
        return pinfo.timestamp + duration

    def _backing_off(self, expiry: float | None) -> bool:
        """isPodBackingoff: not yet past its expiry (!boTime.Before(now)), in windows under
        SchedulerPopFromBackoffQ."""
        if expiry is None:
            return False
        if self._pop_from_backoff_q:
            return expiry >= _align_to_window(self._clock())
        return expiry >= self._clock()

    def _requeue(self, pinfo: QueuedPodInfo, strategy: _Strategy, event: str) -> str:
        """Put a pod that is in no queue (or in the unschedulable pods) where `strategy` says;
        ``event`` labels the move (upstream's requeuePodWithQueueingStrategy)."""
        uid = pinfo.uid
        if strategy is _Strategy.SKIP:
            self._park_unschedulable(pinfo, event)
            return GATED if pinfo.gated else UNSCHEDULABLE
        if strategy is _Strategy.AFTER_BACKOFF:
            expiry = self._backoff_expiry(pinfo)
            if expiry is not None and self._backing_off(expiry):
                if self._pop_from_backoff_q:
                    # Pods popped from backoffQ are not asked again (moveToBackoffQ).
                    self._run_pre_enqueue(pinfo)
                    if pinfo.gated:
                        pinfo.flushed_from_unschedulable = False
                        self._park_unschedulable(pinfo, event)
                        return GATED
                self._unschedulable.pop(uid)
                error = not pinfo.unschedulable_plugins and not pinfo.pending_plugins
                self._backoff.add(pinfo, expiry, error=error)
                self._metrics.incoming(BACKOFF, event)
                if self._pop_from_backoff_q and not error:
                    self._wakeup.set()  # a waiting Pop may take it
                return BACKOFF
        return ACTIVE if self._move_to_active(pinfo, event) else GATED

    def _strategy_for_in_flight(self, pinfo: QueuedPodInfo) -> _Strategy:
        """Upstream's determineSchedulingHintForInFlightPod."""
        if not pinfo.unschedulable_plugins and not pinfo.pending_plugins:
            return _Strategy.AFTER_BACKOFF
        strategy = _Strategy.SKIP
        for recorded in self._in_flight.events_since_popped(pinfo.uid):
            verdict = self._worth_requeuing(pinfo, recorded.event, recorded.old, recorded.new)
            if verdict is _Strategy.IMMEDIATELY:
                return verdict
            if verdict is _Strategy.AFTER_BACKOFF:
                strategy = verdict
                if not pinfo.pending_plugins:
                    return strategy
        return strategy

    def _worth_requeuing(
        self, pinfo: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any
    ) -> _Strategy:
        """Upstream's isPodWorthRequeuing: a Queue from a Pending plugin skips the backoff."""
        if not pinfo.unschedulable_plugins and not pinfo.pending_plugins:
            return _Strategy.AFTER_BACKOFF
        if event.resource == EventResource.WILDCARD:
            # A wildcard event carrying a pod (ForceActivate) is meant for that pod only.
            if new is not None and (not isinstance(new, PodView) or new.uid != pinfo.uid):
                return _Strategy.SKIP
            return _Strategy.AFTER_BACKOFF
        if self._hints is None:
            return _Strategy.IMMEDIATELY if pinfo.pending_plugins else _Strategy.AFTER_BACKOFF
        if not pinfo.pending_plugins:
            queue = self._hints(pinfo, event, old, new) is QueueingHint.QUEUE
            return _Strategy.AFTER_BACKOFF if queue else _Strategy.SKIP
        # The hint function answers for all rejectors at once; ask about the Pending plugins
        # alone first, since only their Queue skips the backoff.
        only_pending = dataclasses.replace(pinfo, unschedulable_plugins=set())
        if self._hints(only_pending, event, old, new) is QueueingHint.QUEUE:
            return _Strategy.IMMEDIATELY
        if not pinfo.unschedulable_plugins:
            return _Strategy.SKIP
        only_unschedulable = dataclasses.replace(pinfo, pending_plugins=set())
        if self._hints(only_unschedulable, event, old, new) is QueueingHint.QUEUE:
            return _Strategy.AFTER_BACKOFF
        return _Strategy.SKIP
