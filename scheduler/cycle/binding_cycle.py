"""The binding cycle: PreBindPreFlight → WaitOnPermit → PreBind → Bind → PostBind for one assumed
pod, in its own task.

Upstream's schedule_one.go, its binding half (bindingCycle, bind, extendersBinding,
finishBinding, handleBindingCycleError). With NominatedNodeNameForExpectation (beta, on by
default since v1.35) the cycle first asks the PreBind plugins whether they will do work; when
they will, or a Permit plugin holds the pod, it writes the chosen node into the pod's
status.nominatedNodeName, so that other components (the cluster autoscaler) see where the pod
is about to go while it waits. The Scheduler's loop starts one binding cycle per
successful scheduling attempt (scheduling_cycle.py) as a task of its task group and goes on to
the next pod, so a slow Permit wait, PreBind or API call never holds the loop. On failure the pod
is unreserved and forgotten, pods waiting for the resources it held are woken, and it goes back
to the queue through the same failure handler as a scheduling failure.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from observability.logs import pod_keys
from observability.metrics import SchedulerMetrics
from scheduler.api.objects import PodView
from scheduler.cache.cache import Cache
from scheduler.client.recorder import EventRecorder
from scheduler.cycle.instrumentation import Instrumentation
from scheduler.cycle.scheduling_cycle import (
    Attempt,
    FailureHandler,
    LoopStats,
    activate_pods,
    forget_assumed,
)
from scheduler.extenders import CallRecorder, ExtenderSet, extenders_binding
from scheduler.framework.events import ASSIGNED_POD_DELETE
from scheduler.framework.interface import CycleState
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status
from scheduler.queue.scheduling_queue import SchedulingQueue
from scheduler.queue.types import QueuedPodInfo

# The logger the scheduling loop has always logged under (log readers filter on it).
log = logging.getLogger("scheduler.cycle.scheduler")


class BindingCycle:
    """bindingCycle and its error handling: see the module docstring."""

    __slots__ = (
        "_cache",
        "_clock",
        "_failures",
        "_instrumentation",
        "_metrics",
        "_nominate_for_expectation",
        "_queue",
        "_recorder",
        "_stats",
        "extenders",
    )

    def __init__(
        self,
        *,
        cache: Cache,
        queue: SchedulingQueue,
        recorder: EventRecorder,
        clock: Callable[[], float],
        metrics: SchedulerMetrics,
        stats: LoopStats,
        instrumentation: Instrumentation,
        failures: FailureHandler,
        extenders: ExtenderSet,
        nominate_for_expectation: bool = False,
    ) -> None:
        self._cache = cache
        # NominatedNodeNameForExpectation: the nomination is written by the failure handler's
        # per-pod status sender.
        self._nominate_for_expectation = nominate_for_expectation
        self._queue = queue
        self._recorder = recorder
        self._clock = clock
        self._metrics = metrics
        self._stats = stats
        self._instrumentation = instrumentation
        self._failures = failures
        #: The Scheduler's current extenders (a reload replaces them): a binder extender
        #: interested in the pod binds it instead of the Bind plugins.
        self.extenders = extenders

    async def run(self, pinfo: QueuedPodInfo, attempt: Attempt) -> None:
        """Bind `attempt`'s assumed pod; a failure requeues it against the moves since the
        scheduling cycle it was popped in (`attempt.cycle`), as upstream's podSchedulingCycle."""
        profile, state, assumed = attempt.profile, attempt.state, attempt.assumed
        trace, result = attempt.trace, attempt.result
        fwk = profile.framework
        host = result.suggested_host
        nominated = False
        try:
            if self._nominate_for_expectation:
                status = fwk.run_pre_bind_pre_flights(state, assumed, host)
                if status.code is Code.ERROR or status.is_rejected:
                    self._binding_failed(pinfo, attempt, status)
                    return
                if status.is_success or fwk.will_wait_on_permit(assumed):
                    # Only when WaitOnPermit or PreBind will take time: else the pod is
                    # bound at once anyway. Sent while the pod waits on Permit (a rejection
                    # need not wait for the call), and through before PreBind, as upstream.
                    nominated = self._failures.nominate(assumed, host)
            wait_start = fwk.now()
            status = await fwk.wait_on_permit(assumed)
            if trace is not None:
                trace.on_extension_point("WaitOnPermit", status, wait_start, fwk.now())
            if status.is_success:
                if nominated:
                    await self._failures.status_sent(assumed.uid)
                status = await fwk.run_pre_bind_plugins(state, assumed, host)
            if status.is_success:
                status = await self._bind(fwk, state, assumed, host)
            if not status.is_success:
                self._binding_failed(pinfo, attempt, status, nominated)
                return
            self._cache.finish_binding(assumed)
            self._stats.scheduled += 1
            now = self._clock()
            metrics = self._metrics
            metrics.pod_scheduled(profile.name, now - attempt.start)
            first_seen = pinfo.initial_attempt_timestamp
            if first_seen is not None:
                metrics.pod_scheduling_sli(pinfo.attempts, now - first_seen)
            if pinfo.flushed_from_unschedulable:
                metrics.pod_scheduled_after_flush()
            self._recorder.record(
                assumed,
                "Normal",
                "Scheduled",
                "Binding",
                f"Successfully assigned {assumed.key} to {host}",
                profile.name,
            )
            await fwk.run_post_bind_plugins(state, assumed, host)
            activate_pods(self._queue, state)
            self._queue.done(assumed.uid)
            self._instrumentation.bound(trace, pinfo, profile.name, host, result)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("binding cycle crashed", extra=pod_keys(assumed.key, profile.name))
            self._binding_failed(pinfo, attempt, Status.error(str(exc)), nominated)

    async def _bind(self, fwk: Framework, state: CycleState, assumed: PodView, host: str) -> Status:
        """Upstream's bind: an interested binder extender first, else the Bind plugins."""
        extenders = self.extenders
        if extenders:
            recorder = CallRecorder(fwk, state)
            status = await extenders_binding(extenders.extenders, assumed, host, recorder)
            if status is not None:
                return status
        return await fwk.run_bind_plugins(state, assumed, host)

    def _binding_failed(
        self, pinfo: QueuedPodInfo, attempt: Attempt, status: Status, nominated: bool = False
    ) -> None:
        """Upstream's handleBindingCycleError: unreserve, forget, wake others, requeue (and
        clear the nomination, `nominated` when this cycle wrote one)."""
        assumed, host = attempt.assumed, attempt.result.suggested_host
        self._stats.bind_failures += 1
        attempt.profile.framework.run_reserve_plugins_unreserve(attempt.state, assumed, host)
        forget_assumed(self._cache, assumed)
        # The resources the assumed pod held are free again: others may fit now. A rejected
        # pod is requeued first and left out, as upstream defers this move after its failure
        # handler: recorded while the pod is in flight, its own AssignedPodDelete would send
        # it to backoffQ whatever its rejector's hints say.
        rejected = status.is_rejected
        if not rejected:
            self._queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, assumed, None)
        self._failures.fail(
            attempt.profile,
            pinfo,
            status,
            attempt.cycle,
            attempt.start,
            trace=attempt.trace,
            nominated_in_binding=nominated,
        )
        if rejected:
            uid = assumed.uid
            self._queue.move_all_to_active_or_backoff(
                ASSIGNED_POD_DELETE, assumed, None, pre_check=lambda pod: pod.uid != uid
            )
