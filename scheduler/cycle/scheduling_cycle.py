"""The scheduling cycle: one attempt to place one pod, up to its hand-off to the binding cycle.

Upstream's schedule_one.go, its scheduling half (scheduleOne's start, schedulingCycle,
skipPodSchedule, assume, handleSchedulingFailure): the attempt's profile, CycleState, trace and
fresh snapshot; the algorithm (`schedule_pod`, algorithm.py); on failure PostFilter (preemption:
the nomination here, its API calls after the cycle in preemption_calls.py) and the failure
handler (requeue, a FailedScheduling event, the PodScheduled=False condition); on success assume →
Reserve → Permit. The Scheduler's loop runs one attempt at a time and starts the binding cycle
(binding_cycle.py) of a successful one as its own task. Nothing here suspends unless extenders
are interested in the pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Any, Protocol, TypeVarTuple, Unpack

from observability.explain import FilterDetails
from observability.logs import pod_keys
from observability.metrics import SchedulerMetrics
from scheduler.api.objects import PodView
from scheduler.api.times import format_time
from scheduler.apicalls.calls import CallSkipped, PodStatus, PodStatusPatchCall
from scheduler.apicalls.dispatcher import ApiDispatcher
from scheduler.apicalls.pods import pod_status, status_patch
from scheduler.apicalls.pods import scheduled_condition as pod_scheduled_condition
from scheduler.cache.cache import Cache, CacheError
from scheduler.cache.snapshot import Snapshot
from scheduler.client.informers import Informer
from scheduler.client.recorder import EventRecorder
from scheduler.client.rest import STRATEGIC_MERGE_PATCH, ApiError, KubeClient, status_message
from scheduler.cycle.algorithm import (
    AttemptDetails,
    FitError,
    NoNodesAvailable,
    ScheduleResult,
    StartIndex,
    schedule_pod,
)
from scheduler.cycle.fanout import FilterFanout
from scheduler.cycle.instrumentation import (
    AttemptTrace,
    Instrumentation,
    plugin_filter_details,
)
from scheduler.cycle.preemption_calls import PreemptionCalls
from scheduler.cycle.profile_set import ProfileSet, SchedulingProfile
from scheduler.extenders import CallRecorder, HTTPExtender, TracedPreemptingExtender
from scheduler.framework.interface import (
    PODS_TO_ACTIVATE_KEY,
    CycleState,
    PodsToActivate,
    PostFilterResult,
    Preemption,
)
from scheduler.framework.results import Diagnosis, SchedulingError
from scheduler.framework.status import Code, Status
from scheduler.queue.scheduling_queue import SchedulingQueue
from scheduler.queue.types import QueuedPodInfo

# The logger the scheduling loop has always logged under (log readers filter on it).
log = logging.getLogger("scheduler.cycle.scheduler")

# Upstream samples plugin execution metrics in 10% of cycles (pluginMetricsSamplePercent).
PLUGIN_METRICS_SAMPLE_PERCENT = 10
MAX_MESSAGE_LENGTH = 1024  # upstream truncates event notes to this
#: Tries of a PodScheduled=False patch that keeps meeting newer versions of an unbound pod.
STATUS_PATCH_ATTEMPTS = 3

PosArgs = TypeVarTuple("PosArgs")


class StartSoon(Protocol):
    """Starts `func(*args)` as a task of the Scheduler's task group (nothing before run(), nor
    when the cycles are driven by hand, as `aiosched replay` does); whether it started it."""

    def __call__(
        self,
        func: Callable[[Unpack[PosArgs]], Coroutine[Any, Any, Any]],
        /,
        *args: *PosArgs,
        name: str,
    ) -> bool: ...


@dataclass(slots=True)
class LoopStats:
    """Counters the CLI, tests and /readyz read; metrics proper live in observability."""

    attempts: int = 0
    scheduled: int = 0
    unschedulable: int = 0
    errors: int = 0
    bind_failures: int = 0


@dataclass(slots=True)
class Attempt:
    """What one scheduling attempt carries from its start to the end of its binding cycle."""

    profile: SchedulingProfile
    state: CycleState
    trace: AttemptTrace | None
    start: float
    #: The queue's scheduling cycle when the pod was popped: a failure requeues the pod
    #: against the moves since then (upstream's podSchedulingCycle).
    cycle: int
    details: AttemptDetails
    # Set once the pod is assumed (a successful attempt only): what the binding cycle binds.
    assumed: PodView = field(init=False)
    result: ScheduleResult = field(init=False)


def activate_pods(queue: SchedulingQueue, state: CycleState) -> None:
    """Move the pods plugins asked for (PodsToActivate) to activeQ and empty the request, as
    upstream's schedulingCycle after Permit and bindingCycle after binding."""
    try:
        request = state.read(PODS_TO_ACTIVATE_KEY)
    except KeyError:  # a state the cycle did not start (tests)
        return
    if request.pods:
        queue.activate(list(request.pods.values()))
        request.pods = {}


def forget_assumed(cache: Cache, assumed: PodView) -> None:
    """Drop an assumed pod after a failed cycle; the watch may already have replaced it."""
    try:
        cache.forget_pod(assumed)
    except CacheError as exc:
        # Upstream logs and carries on: the informer's view of the pod wins.
        log.info("assumed pod already superseded", extra={"pod": assumed.key, "error": str(exc)})


class SchedulingCycle:
    """scheduleOne up to the binding cycle: see the module docstring."""

    __slots__ = (
        "_async_preemption",
        "_cache",
        "_clock",
        "_failures",
        "_instrumentation",
        "_metrics",
        "_preemption_calls",
        "_queue",
        "_rng",
        "_snapshot",
        "_start_index",
        "_start_soon",
        "_stats",
        "_sync_preemptions",
        "filter_fanout",
    )

    def __init__(
        self,
        *,
        cache: Cache,
        queue: SchedulingQueue,
        snapshot: Snapshot,
        start_index: StartIndex,
        rng: random.Random,
        clock: Callable[[], float],
        metrics: SchedulerMetrics,
        stats: LoopStats,
        instrumentation: Instrumentation,
        failures: FailureHandler,
        preemption_calls: PreemptionCalls,
        start_soon: StartSoon,
        async_preemption: bool = True,
    ) -> None:
        self._cache = cache
        self._queue = queue
        self._snapshot = snapshot
        self._start_index = start_index
        self._rng = rng
        self._clock = clock
        self._metrics = metrics
        self._stats = stats
        self._instrumentation = instrumentation
        self._failures = failures
        self._preemption_calls = preemption_calls
        self._start_soon = start_soon
        # SchedulerAsyncPreemption (beta, on by default upstream): off, a preemption's API
        # calls are made in the scheduling cycle, before the pod is requeued (prepareCandidate
        # rather than prepareCandidateAsync); collected here while PostFilter runs.
        self._async_preemption = async_preemption
        self._sync_preemptions: list[tuple[str, Preemption]] | None = None
        # Splits Filter's row pass across worker processes (`parallelism`); set by the app.
        self.filter_fanout: FilterFanout | None = None

    async def schedule_one(
        self, pinfo: QueuedPodInfo, profiles: ProfileSet, extenders: Sequence[HTTPExtender] = ()
    ) -> Attempt | None:
        """One scheduling cycle for `pinfo` with the profiles of this cycle; the attempt,
        its pod assumed on its node, when the binding cycle is to follow, else None. With
        extenders interested in the pod the algorithm awaits their HTTP calls (the loop stays
        in the cycle meanwhile: profiles are not swapped); without, nothing in it suspends."""
        attempt = self._begin_attempt(pinfo, profiles)
        if attempt is None:
            return None
        profile = attempt.profile
        recorder = CallRecorder(profile.framework, attempt.state) if extenders else None
        try:
            result = await schedule_pod(
                profile.framework,
                attempt.state,
                pinfo.pod,
                self._snapshot,
                percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
                next_start_index=self._start_index,
                rng=self._rng,
                details=attempt.details,
                extenders=extenders,
                recorder=recorder,
                cycle=attempt.cycle,
                fanout=self.filter_fanout,
            )
            self._metrics.scheduling_algorithm(self._clock() - attempt.start)
        except FitError as fit:
            preempting = [e for e in extenders if e.supports_preemption()]
            await self._post_filter_then_fail(attempt, pinfo, fit, preempting)
            return None
        except Exception as exc:
            self._algorithm_failed(attempt, pinfo, exc)
            return None
        return self._assume_reserve_permit(attempt, pinfo, result)

    def _begin_attempt(self, pinfo: QueuedPodInfo, profiles: ProfileSet) -> Attempt | None:
        """The attempt's profile, state, trace and fresh snapshot; None when the pod is skipped."""
        pod = pinfo.pod
        profile = profiles.get(pod.scheduler_name)
        if profile is None or self._skip_pod_schedule(pod):
            self._queue.done(pod.uid)
            return None
        self._stats.attempts += 1
        start = self._clock()
        state = CycleState()
        state.record_plugin_metrics = self._rng.randrange(100) < PLUGIN_METRICS_SAMPLE_PERCENT
        state.write(PODS_TO_ACTIVATE_KEY, PodsToActivate())
        fwk = profile.framework
        trace = self._instrumentation.begin_attempt(pinfo, profile.name, state, fwk.now)
        self._cache.update_snapshot(self._snapshot)
        return Attempt(profile, state, trace, start, self._queue.scheduling_cycle, AttemptDetails())

    def _skip_pod_schedule(self, pod: PodView) -> bool:
        if pod.deletion_timestamp:
            return True
        return self._cache.is_assumed_pod(pod)

    def _algorithm_failed(self, attempt: Attempt, pinfo: QueuedPodInfo, exc: Exception) -> None:
        """The algorithm failed otherwise than with a FitError (which goes to PostFilter)."""
        profile, cycle, start, trace = attempt.profile, attempt.cycle, attempt.start, attempt.trace
        fail = self._failures.fail
        if isinstance(exc, NoNodesAvailable):
            # Upstream counts this as unschedulable (a node add will bring the pod back).
            fail(profile, pinfo, Status.unresolvable(str(exc)), cycle, start, trace=trace)
        else:
            if isinstance(exc, SchedulingError):
                log.error(
                    "scheduling algorithm failed",
                    extra={"pod": pinfo.pod.key, "error": str(exc)},
                )
            else:
                log.exception("scheduling algorithm failed", extra={"pod": pinfo.pod.key})
            fail(profile, pinfo, Status.error(str(exc)), cycle, start, trace=trace)

    def _assume_reserve_permit(
        self, attempt: Attempt, pinfo: QueuedPodInfo, result: ScheduleResult
    ) -> Attempt | None:
        profile, state, cycle, start = attempt.profile, attempt.state, attempt.cycle, attempt.start
        trace = attempt.trace
        fwk = profile.framework
        host = result.suggested_host
        assumed = pinfo.pod.with_node(host)
        self._cache.assume_pod(assumed)
        status = fwk.run_reserve_plugins_reserve(state, assumed, host)
        if not status.is_success:
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            forget_assumed(self._cache, assumed)
            self._failures.fail(profile, pinfo, status, cycle, start, trace=trace)
            return None
        status = fwk.run_permit_plugins(state, assumed, host)
        if not (status.is_success or status.is_wait):
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            forget_assumed(self._cache, assumed)
            self._failures.fail(profile, pinfo, status, cycle, start, trace=trace)
            return None
        activate_pods(self._queue, state)
        self._instrumentation.scheduled(trace, pinfo, profile.name, result, attempt.details)
        attempt.assumed = assumed
        attempt.result = result
        return attempt

    # ------------------------------------------------------------------- PostFilter (preemption)

    async def _post_filter_then_fail(
        self,
        attempt: Attempt,
        pinfo: QueuedPodInfo,
        fit: FitError,
        extenders: Sequence[HTTPExtender] = (),
    ) -> None:
        """PostFilter (preemption) in the cycle, on its snapshot, as upstream; the API calls
        of a preemption it decides run afterwards (`start_preemption`). `extenders`: those
        supporting preemption that are interested in the pod, offered its candidates before
        preemption chooses (awaited in the cycle)."""
        fwk = attempt.profile.framework
        nominated: str | None = ""  # no PostFilter: the nomination is cleared
        if fwk.has_post_filter_plugins():
            self._metrics.preemption_attempted()
            try:
                traced: list[TracedPreemptingExtender] = []
                if extenders:
                    recorder = CallRecorder(fwk, attempt.state)
                    traced = [TracedPreemptingExtender(e, recorder) for e in extenders]
                if not self._async_preemption:
                    self._sync_preemptions = []
                try:
                    outcome = await fwk.run_post_filter_plugins(
                        attempt.state, pinfo.pod, fit.diagnosis.node_to_status, traced
                    )
                finally:
                    await self._run_sync_preemptions()
            except Exception:
                log.exception("PostFilter failed", extra={"pod": pinfo.pod.key})
                outcome = None
            nominated = self._post_filter_outcome(pinfo, fit, outcome)
        self._failures.fail_unschedulable(
            attempt.profile,
            pinfo,
            fit,
            nominated,
            attempt.cycle,
            attempt.start,
            attempt.trace,
            state=attempt.state,
        )

    @staticmethod
    def _post_filter_outcome(
        pinfo: QueuedPodInfo,
        fit: FitError,
        outcome: tuple[PostFilterResult | None, Status] | None,
    ) -> str | None:
        """Note PostFilter's message in the diagnosis (even an Error's, as upstream); the
        nomination to write: a node, "" to clear it, None to keep it (no result)."""
        if outcome is None:
            return None
        result, status = outcome
        if status.code == Code.ERROR:
            log.error("PostFilter failed", extra={"pod": pinfo.pod.key, "error": status.message})
        fit.diagnosis.post_filter_msg = status.message
        return None if result is None else result.nominated_node_name

    def start_preemption(self, profile: str, preemption: Preemption) -> None:
        """A PostFilter plugin chose victims: carry out the API calls after the cycle (or,
        with SchedulerAsyncPreemption off, at the end of PostFilter, in the cycle)."""
        self._metrics.preemption_victims(len(preemption.victims))
        if self._sync_preemptions is not None:
            self._sync_preemptions.append((profile, preemption))
            return
        self._start_soon(
            self._preemption_calls.run,
            preemption,
            profile,
            name=f"preempt-for-{preemption.preemptor.key}",
        )

    async def _run_sync_preemptions(self) -> None:
        """The preemptions PostFilter decided, their calls awaited in the cycle."""
        pending, self._sync_preemptions = self._sync_preemptions, None
        for profile, preemption in pending or ():
            await self._preemption_calls.run(preemption, profile)


class FailureHandler:
    """Upstream's handleSchedulingFailure, for the scheduling and the binding cycle alike:
    requeue the pod (or let it go), record a FailedScheduling event, patch PodScheduled=False."""

    __slots__ = (
        "_client",
        "_clock",
        "_dispatcher",
        "_instrumentation",
        "_metrics",
        "_pod_informer",
        "_queue",
        "_recorder",
        "_snapshot",
        "_start_soon",
        "_stats",
        "_status_sent",
        "_status_updates",
        "_wall_clock",
    )

    def __init__(
        self,
        *,
        client: KubeClient,
        queue: SchedulingQueue,
        pod_informer: Informer[PodView],
        recorder: EventRecorder,
        snapshot: Snapshot,
        clock: Callable[[], float],
        wall_clock: Callable[[], datetime],
        metrics: SchedulerMetrics,
        stats: LoopStats,
        instrumentation: Instrumentation,
        start_soon: StartSoon,
        dispatcher: ApiDispatcher | None = None,
    ) -> None:
        self._client = client
        self._queue = queue
        # SchedulerAsyncAPICalls on: status patches go through the API dispatcher.
        self._dispatcher = dispatcher
        # The informer, not its store: a relist replaces the store.
        self._pod_informer = pod_informer
        self._recorder = recorder
        self._snapshot = snapshot
        self._clock = clock
        self._wall_clock = wall_clock
        self._metrics = metrics
        self._stats = stats
        self._instrumentation = instrumentation
        self._start_soon = start_soon
        # Pod uid → the newest PodScheduled=False patch not sent yet (None: its sender is
        # sending one), for the pods that have a sender task. See _spawn_status_update.
        self._status_updates: dict[str, tuple[PodView, dict[str, Any]] | None] = {}
        # Pod uid → set once its sender has nothing left to send (`status_sent`).
        self._status_sent: dict[str, asyncio.Event] = {}

    def fail_unschedulable(
        self,
        profile: SchedulingProfile,
        pinfo: QueuedPodInfo,
        fit: FitError,
        nominated_node: str | None,
        cycle: int,
        start: float,
        trace: AttemptTrace | None = None,
        state: CycleState | None = None,
    ) -> None:
        pinfo.unschedulable_plugins = set(fit.diagnosis.unschedulable_plugins)
        pinfo.pending_plugins = set(fit.diagnosis.pending_plugins)
        status = Status(Code.UNSCHEDULABLE, fit.message())
        self.fail(
            profile,
            pinfo,
            status,
            cycle,
            start,
            nominated_node=nominated_node,
            trace=trace,
            diagnosis=fit.diagnosis,
            filter_details=(
                None
                if state is None
                else partial(plugin_filter_details, profile.framework.plugins, state, pinfo.pod)
            ),
        )

    def fail(
        self,
        profile: SchedulingProfile,
        pinfo: QueuedPodInfo,
        status: Status,
        cycle: int,
        start: float,
        nominated_node: str | None = "",
        *,
        trace: AttemptTrace | None = None,
        diagnosis: Diagnosis | None = None,
        filter_details: Callable[[Diagnosis], FilterDetails] | None = None,
        nominated_in_binding: bool = False,
    ) -> None:
        """Upstream's handleSchedulingFailure: requeue, record an event, patch the condition.
        `nominated_node`: the node to nominate, "" to clear a nomination, None to keep it;
        `nominated_in_binding`: the binding cycle wrote one (`nominate`) the informer's pod
        may not show yet, to be cleared all the same."""
        pod = pinfo.pod
        self._instrumentation.failed(
            trace,
            pinfo,
            profile.name,
            status,
            diagnosis,
            self._snapshot_node_names,
            filter_details=filter_details,
        )
        rejected = status.is_rejected
        if rejected:
            self._metrics.pod_unschedulable(profile.name, self._clock() - start)
            self._stats.unschedulable += 1
            if status.plugin and not pinfo.unschedulable_plugins:
                pinfo.unschedulable_plugins = {status.plugin}
        else:
            self._metrics.pod_schedule_error(profile.name, self._clock() - start)
            self._stats.errors += 1
        reason = "Unschedulable" if rejected else "SchedulerError"
        message = status.message or reason
        queue = self._queue
        current = self._pod_informer.store.get(pod.key)
        if current is None or current.uid != pod.uid:
            log.info("pod is gone; not requeueing", extra=pod_keys(pod.key, profile.name))
            queue.done(pod.uid)
            self._instrumentation.pod_gone(pod.uid)
        elif current.is_bound:
            log.info("pod is already bound; not requeueing", extra=pod_keys(pod.key, profile.name))
            queue.done(pod.uid)
        else:
            # Upstream patches the status before its next cycle, so the pod it retries carries
            # the nomination (its nominated node is then tried first, schedule_one.go's
            # findNodesThatFitPod). The patch goes out later here: the requeued copy carries
            # what it sets, until the informer brings the pod as patched.
            pinfo.pod = (
                current
                if nominated_node is None or nominated_node == current.nominated_node_name
                else replace(current, nominated_node_name=nominated_node)
            )
            # Also ends the pod's in-flight state (the queue's Done).
            queue.add_unschedulable_if_not_present(pinfo, cycle)
            if nominated_node:
                queue.add_nominated_pod(current, nominated_node)
            elif nominated_node == "":
                queue.delete_nominated_pod_if_exists(current)
            elif current.nominated_node_name:
                # upstream's ModeNoop: the nomination the pod's status carries (an update seen
                # while it was in flight does not reach the nominator)
                queue.add_nominated_pod(current)
        self._recorder.record(
            pod,
            "Warning",
            "FailedScheduling",
            "Scheduling",
            message[:MAX_MESSAGE_LENGTH],
            profile.name,
        )
        if current is not None and not current.is_bound:
            self._spawn_status_update(
                current, reason, message, nominated_node, nominated_in_binding
            )

    def _snapshot_node_names(self) -> list[str]:
        return [info.node_name for info in self._snapshot.list()]

    def nominate(self, pod: PodView, node: str) -> bool:
        """NominatedNodeNameForExpectation's updatePod: status.nominatedNodeName = node, sent
        by the pod's status sender, so that a failure's patch (which clears it) follows it
        rather than races it. False when the pod says so already (nothing to send)."""
        if pod.nominated_node_name == node:
            return False
        self._queue_status_patch(pod, {"nominatedNodeName": node})
        return True

    async def status_sent(self, uid: str) -> None:
        """Wait until the pod's status patches so far have been sent."""
        sent = self._status_sent.get(uid)
        if sent is not None:
            await sent.wait()

    def _spawn_status_update(
        self,
        pod: PodView,
        reason: str,
        message: str,
        nominated_node: str | None,
        nominated_in_binding: bool = False,
    ) -> None:
        condition = pod_scheduled_condition(pod)
        if self._dispatcher is not None:  # SchedulerAsyncAPICalls: the dispatcher decides
            new_condition = self._unscheduled_condition(condition, reason, message)
            send = partial(self._send_status_patch, pod.key, pod.uid)
            call = PodStatusPatchCall(pod.uid, pod_status(pod), new_condition, nominated_node, send)
            # Skipped: no effect, or a binding is pending (queue.PatchPodStatus ignores it too).
            with contextlib.suppress(CallSkipped):
                self._dispatcher.add(call)
            return
        if nominated_node is None:
            nominated_node = pod.nominated_node_name  # kept as it is
        if (
            not nominated_in_binding
            and condition is not None
            and condition.get("status") == "False"
            and condition.get("reason") == reason
            and condition.get("message") == message
            and pod.nominated_node_name == nominated_node
        ):
            return  # nothing would change (upstream skips no-op updates too)
        patch: dict[str, Any] = {
            "conditions": [self._unscheduled_condition(condition, reason, message)]
        }
        if nominated_node or pod.nominated_node_name or nominated_in_binding:
            patch["nominatedNodeName"] = nominated_node or None
        self._queue_status_patch(pod, patch)

    def _unscheduled_condition(
        self, condition: Mapping[str, Any] | None, reason: str, message: str
    ) -> dict[str, Any]:
        now = format_time(self._wall_clock())
        return {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": (
                condition.get("lastTransitionTime", now)
                if condition is not None and condition.get("status") == "False"
                else now
            ),
        }

    def _queue_status_patch(self, pod: PodView, status_patch: dict[str, Any]) -> None:
        """One sender per pod, sending the newest patch: a pod that fails faster than the
        client's qps lets its patches out (a gang retried from backoffQ, round after round)
        leaves one patch waiting, not one per failure. Upstream waits for the patch in the
        failing goroutine, which bounds its calls the same way; here the loop goes on."""
        uid = pod.uid
        sending = uid in self._status_updates
        self._status_updates[uid] = (pod, status_patch)
        if sending:
            return
        self._status_sent[uid] = asyncio.Event()
        if not self._start_soon(self._send_status_updates, uid, name=f"status-{pod.key}"):
            # No sender (no task group): nothing is sent, and nothing is left to wait for.
            del self._status_updates[uid]
            self._status_sent.pop(uid).set()

    async def _send_status_updates(self, uid: str) -> None:
        """Send the pod's newest status patch until none is left."""
        try:
            while (update := self._status_updates.get(uid)) is not None:
                self._status_updates[uid] = None
                await self._patch_unscheduled_status(*update)
        finally:
            self._status_updates.pop(uid, None)
            sent = self._status_sent.pop(uid, None)
            if sent is not None:
                sent.set()

    async def _send_status_patch(self, key: str, uid: str, old: PodStatus, new: PodStatus) -> None:
        """The dispatcher's sender: patch the difference onto the pod as the informer now has
        it, if it is still the same unbound pod."""
        current = self._pod_informer.store.get(key)
        if current is None or current.uid != uid or current.is_bound:
            return
        await self._patch_unscheduled_status(current, status_patch(old, new))

    async def _patch_unscheduled_status(
        self, pod: PodView, status_patch: Mapping[str, Any]
    ) -> None:
        """Patch PodScheduled=False onto a pod that is still unbound.

        The informer's copy can be behind: a binding whose response was lost (a timeout, the
        API server restarting) may have been stored. So the patch carries the version the
        scheduler saw as a precondition; on a conflict the pod is read again, and the patch is
        dropped if the pod is bound, gone or replaced, and retried on the new version otherwise.
        Upstream patches unconditionally and can mark a bound pod unschedulable this way.
        """
        client = self._client
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"
        uid, version = pod.uid, pod.resource_version
        for _ in range(STATUS_PATCH_ATTEMPTS):
            patch = {"metadata": {"resourceVersion": version}, "status": status_patch}
            try:
                status, body = await client.request(
                    "PATCH", f"{path}/status", body=patch, content_type=STRATEGIC_MERGE_PATCH
                )
                if status != 409:
                    break
                status, body = await client.request("GET", path)
            except ApiError as exc:
                log.warning("pod status update failed", extra={"pod": pod.key, "error": str(exc)})
                return
            if status != 200 or not isinstance(body, dict):
                break
            meta, spec = body.get("metadata") or {}, body.get("spec") or {}
            if meta.get("uid") != uid or spec.get("nodeName"):
                return  # replaced, or bound after all: nothing to report
            version = str(meta.get("resourceVersion", ""))
        if status >= 300 and status != 404:
            log.warning(
                "pod status update refused",
                extra={"pod": pod.key, "status": status, "error": status_message(body)},
            )
