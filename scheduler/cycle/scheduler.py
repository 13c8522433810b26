"""The scheduler service: informers → cache + queue; one serial scheduling loop; binding tasks.

This is upstream's scheduler.go + schedule_one.go on asyncio. Every background task belongs to
the TaskGroup that `run()` owns, binding tasks included, so shutdown is structured: cancelling
`run()` stops informers, the queue's flushers, the event writers, the loop and in-flight
bindings together.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from observability.explain import ExplainStore
from observability.logs import pod_keys
from observability.metrics import SchedulerMetrics
from observability.tracing import NOOP_TRACING, Tracing
from profiles.config import Extender, ResolvedConfig
from scheduler.api.objects import NodeView, PodView
from scheduler.api.times import format_time
from scheduler.cache.cache import Cache, CacheError
from scheduler.cache.snapshot import Snapshot
from scheduler.client.informers import Informer, ResourceWatch
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
from scheduler.cycle.eventhandlers import NodeEventHandler, PodEventHandler
from scheduler.cycle.instrumentation import AttemptTrace, Instrumentation
from scheduler.cycle.pod_resources import PodResourcesSource
from scheduler.cycle.preemption_calls import PreemptionCalls
from scheduler.cycle.profile_set import ProfileSet, SchedulingProfile
from scheduler.cycle.unparsable_pods import UnparsablePodReporter
from scheduler.extenders import (
    EXTENDER_NAME,
    CallRecorder,
    ExtenderConfigError,
    ExtenderSet,
    HTTPExtender,
    TracedPreemptingExtender,
    extenders_binding,
)
from scheduler.framework.events import (
    ASSIGNED_POD_DELETE,
    ClusterEvent,
    QueueingHint,
)
from scheduler.framework.interface import CycleState, PostFilterResult, Preemption
from scheduler.framework.registry import Registry
from scheduler.framework.results import Diagnosis, SchedulingError
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.framework.status import Code, Status
from scheduler.listers.cluster_objects import ClusterObjects
from scheduler.queue.event_labels import event_label
from scheduler.queue.scheduling_queue import SchedulingQueue
from scheduler.queue.types import QueuedPodInfo

log = logging.getLogger(__name__)

# Upstream samples plugin execution metrics in 10% of cycles (pluginMetricsSamplePercent).
PLUGIN_METRICS_SAMPLE_PERCENT = 10
# Pods the scheduler still cares about: upstream's field selector for its pod informer.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
MAX_MESSAGE_LENGTH = 1024  # upstream truncates event notes to this


@dataclass(slots=True)
class SchedulerOptions:
    """What the configuration file does not say (backoffs come from the config)."""

    max_unschedulable_seconds: float = 300.0
    seed: int | None = None


@dataclass(slots=True)
class LoopStats:
    """Counters the CLI, tests and /readyz read; metrics proper live in observability."""

    attempts: int = 0
    scheduled: int = 0
    unschedulable: int = 0
    errors: int = 0
    bind_failures: int = 0


#: Tries of a PodScheduled=False patch that keeps meeting newer versions of an unbound pod.
STATUS_PATCH_ATTEMPTS = 3


class Scheduler:
    def __init__(
        self,
        client: KubeClient,
        config: ResolvedConfig,
        registry: Registry,
        options: SchedulerOptions | None = None,
        *,
        metrics: SchedulerMetrics | None = None,
        tracing: Tracing = NOOP_TRACING,
        explain: ExplainStore | None = None,
        explain_every_attempt: bool = False,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.client = client
        self.registry = registry
        self.options = options or SchedulerOptions()
        self.metrics = metrics or SchedulerMetrics()
        # Spans, explain entries and attempt logs; tracing off costs one flag test per attempt.
        self.instrumentation = Instrumentation(
            tracing, explain, clock, explain_every_attempt=explain_every_attempt
        )
        self.clock = clock
        self.wall_clock = wall_clock
        self.rng = random.Random(self.options.seed)
        self.cache = Cache()
        # Namespaces, Services and workload controllers the topology plugins read.
        self.cluster_objects = ClusterObjects()
        self.snapshot = Snapshot()
        self.start_index = StartIndex()
        self.queue = SchedulingQueue(
            less=self._less,
            pre_enqueue=self._pre_enqueue,
            hints=self._queueing_hint,
            clock=clock,
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
            max_unschedulable_duration=self.options.max_unschedulable_seconds,
            metrics=self.metrics,
        )
        self.metrics.set_pending_source(self.queue.counts)
        # Extenders per `extenders` section seen (a reload may change it), and the current one.
        self._extender_sets: dict[tuple[Extender, ...], ExtenderSet] = {}
        self.profiles = self.build_profiles(config)
        self.extenders = self._extender_sets[config.extenders]
        self._pending_profiles: ProfileSet | None = None
        # True from pop() returning until the next pop(): profiles must not change meanwhile.
        self._in_cycle = True
        # Frameworks replaced by a reload that still hold pods waiting on Permit.
        self._retired: list[Framework] = []
        self.recorder = EventRecorder(
            client.with_own_rate_limit(), clock, wall_clock, metrics=self.metrics
        )
        # Pending pods of ours that cannot be parsed get an event and a condition all the same.
        self.unparsable_pods = UnparsablePodReporter(
            self.recorder, client, lambda name: name in self.profiles, wall_clock
        )
        self._preemption_calls = PreemptionCalls(
            client,
            self.recorder,
            wall_clock,
            self._reject_waiting_pod,
            self.queue.delete_nominated_pod_if_exists,
        )
        self.stats = LoopStats()
        self._group: asyncio.TaskGroup | None = None
        self.pod_informer: Informer[PodView] = Informer(
            client,
            ResourceWatch("/api/v1/pods", field_selector=POD_FIELD_SELECTOR),
            PodView.from_dict,
            PodEventHandler(
                self.cache,
                self.queue,
                self._responsible,
                self._on_pod_gone,
                lambda pod, outcome: self.instrumentation.pod_left(pod.uid, outcome),
                metrics=self.metrics,
            ),
            name="pods",
            rng=self.rng,
            on_unparsable=self.unparsable_pods.report,
        )
        self.node_informer: Informer[NodeView] = Informer(
            client,
            ResourceWatch("/api/v1/nodes"),
            NodeView.from_dict,
            NodeEventHandler(self.cache, self.queue, self.metrics),
            name="nodes",
            rng=self.rng,
        )
        # /metrics/resources reports the informer's pods, computed at scrape time.
        self.metrics.pod_resources.set_source(
            PodResourcesSource(lambda: self.pod_informer.store.values())
        )
        storage = self.cluster_objects.storage
        storage.connect(self.queue.move_all_to_active_or_backoff)
        self.object_informers: list[Informer[Any]] = [
            Informer(client, ResourceWatch(path), parse, handler, name=name, rng=self.rng)
            for name, path, parse, handler in (
                *self.cluster_objects.informer_specs(),
                *storage.informer_specs(),
            )
        ]

    def _informed_pod(self, namespace: str, name: str) -> PodView | None:
        return self.pod_informer.store.get(f"{namespace}/{name}")

    def build_profiles(self, config: ResolvedConfig) -> ProfileSet:
        """Frameworks for `config`'s profiles, wired to this scheduler's snapshot and queue
        (and to its extenders: built here, so that bad extender settings refuse a reload)."""
        extenders = self._extender_sets.get(config.extenders)
        if extenders is None:
            extenders = ExtenderSet(config.extenders)
            self._extender_sets[config.extenders] = extenders
        config = with_ignored_resources(config, extenders.ignored_resources, self.registry)

        def deps_for(profile: str) -> HandleDeps:
            return HandleDeps(
                snapshot=lambda: self.snapshot,
                client=self.client,
                nominator=self.queue,
                parallelism=config.parallelism,
                observer=MetricsObserver(profile, self.metrics),
                trace_cycles=self.instrumentation.tracing_enabled,
                cluster_objects=self.cluster_objects,
                rng=self.rng,
                start_preemption=lambda preemption: self._start_preemption(profile, preemption),
                extenders=extenders.extenders,
                pod_lister=self._informed_pod,
                hint_observer=self._observe_queueing_hint,
            )

        return ProfileSet.build(config, self.registry, deps_for)

    # ----------------------------------------------------------------------------- lifecycle

    async def run(self, active: asyncio.Event | None = None) -> None:
        """Run until cancelled. With ``active``, informers (and the queue they fill) start at
        once but the scheduling loop waits until it is set: a leader election standby keeps
        warm caches (kube-scheduler with delayCacheUntilActive false)."""
        try:
            await self._run(active)
        finally:
            for extenders in self._extender_sets.values():
                await extenders.close()

    async def _run(self, active: asyncio.Event | None) -> None:
        async with asyncio.TaskGroup() as group:
            self._group = group
            group.create_task(self.node_informer.run(), name="informer-nodes")
            group.create_task(self.pod_informer.run(), name="informer-pods")
            for informer in self.object_informers:
                group.create_task(informer.run(), name=f"informer-{informer.name}")
            group.create_task(self.recorder.run(), name="event-recorder")
            group.create_task(self.unparsable_pods.run(), name="unparsable-pods")
            group.create_task(self.queue.run(), name="queue-flush")
            await self.wait_for_cache_sync()
            if active is not None and not active.is_set():
                log.info("caches synced; waiting for leadership to schedule")
                await active.wait()
            log.info(
                "caches synced; scheduling",
                extra={"nodes": len(self.node_informer.store), "profiles": self.profiles.names()},
            )
            group.create_task(self._scheduling_loop(), name="scheduling-loop")

    async def wait_for_cache_sync(self) -> None:
        for informer in self._informers():
            await informer.synced.wait()

    def synced(self) -> bool:
        return all(informer.synced.is_set() for informer in self._informers())

    def _informers(self) -> list[Informer[Any]]:
        return [self.node_informer, self.pod_informer, *self.object_informers]

    def swap_profiles(self, profiles: ProfileSet) -> None:
        """Install new profiles; they take effect between two scheduling cycles."""
        self._pending_profiles = profiles
        if not self._in_cycle and self._group is not None:
            # The loop waits in pop() (maybe for good: pods of a new schedulerName are not
            # queued yet), so no cycle runs now; apply at once rather than at the next pop.
            self._apply_profiles(profiles)

    # -------------------------------------------------------------------------- queue glue

    def _less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.profiles.queue_sort_less(a, b)

    def _responsible(self, pod: PodView) -> bool:
        return pod.scheduler_name in self.profiles

    def _pre_enqueue(self, pod: PodView) -> Status:
        profile = self.profiles.get(pod.scheduler_name)
        if profile is None:
            return Status.unresolvable(f"no profile for schedulerName {pod.scheduler_name!r}")
        return profile.framework.run_pre_enqueue_plugins(pod)

    def _queueing_hint(
        self, pinfo: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any
    ) -> QueueingHint:
        profile = self.profiles.get(pinfo.pod.scheduler_name)
        if profile is None:
            return QueueingHint.SKIP
        if EXTENDER_NAME in pinfo.unschedulable_plugins and self.extenders:
            # Extenders register no events: any event may make the pod schedulable.
            return QueueingHint.QUEUE
        return profile.queueing_hint(pinfo, event, old, new)

    def _observe_queueing_hint(
        self, plugin: str, event: ClusterEvent, hint: str, seconds: float
    ) -> None:
        self.metrics.queueing_hint_executed(plugin, event_label(event), hint, seconds)

    def _on_pod_gone(self, pod: PodView) -> None:
        self.instrumentation.pod_gone(pod.uid)
        for profile in self.profiles.values():
            profile.framework.reject_waiting_pod(pod.uid)
        # Pods parked on Permit by frameworks a reload replaced wait there, not in the new ones.
        self._prune_retired()
        for framework in self._retired:
            framework.reject_waiting_pod(pod.uid)

    # --------------------------------------------------------------------- scheduling cycle

    async def _scheduling_loop(self) -> None:
        while True:
            if self._pending_profiles is not None:
                self._apply_profiles(self._pending_profiles)
            self._in_cycle = False
            pinfo = await self.queue.pop()
            self._in_cycle = True
            if pinfo is None:
                return
            try:
                await self._schedule_one(pinfo, self._interested_extenders(pinfo.pod))
            except Exception:
                log.exception("scheduling cycle crashed", extra={"pod": pinfo.pod.key})
                self.queue.done(pinfo.uid)
            self._in_cycle = False
            # Let informers, binding tasks and event writers run between cycles.
            await asyncio.sleep(0)

    def _apply_profiles(self, profiles: ProfileSet) -> None:
        old_names = set(self.profiles.names())
        self._prune_retired()
        self._retired += [
            p.framework for p in self.profiles.values() if len(p.framework.waiting_pods)
        ]
        self.profiles = profiles
        self._pending_profiles = None
        config = profiles.config
        self.queue.set_backoff(config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds)
        extenders = self._extender_sets.get(profiles.config.extenders)
        if extenders is not None:  # always built by build_profiles
            self.extenders = extenders
        self.queue.set_less(self._less)
        dropped = self.queue.drop_if(lambda pod: pod.scheduler_name not in profiles)
        added = 0
        for pod in self.pod_informer.store.values():
            if (
                not pod.is_bound
                and pod.scheduler_name in profiles
                and pod.scheduler_name not in old_names
            ):
                self.queue.add(pod)
                added += 1
        log.info(
            "profiles swapped",
            extra={"profiles": profiles.names(), "dropped": len(dropped), "added": added},
        )

    def _prune_retired(self) -> None:
        """Forget replaced frameworks once no pod waits on Permit in them any more."""
        self._retired = [f for f in self._retired if len(f.waiting_pods)]

    def _skip_pod_schedule(self, pod: PodView) -> bool:
        if pod.deletion_timestamp:
            return True
        return self.cache.is_assumed_pod(pod)

    def _interested_extenders(self, pod: PodView) -> list[HTTPExtender]:
        """The extenders interested in `pod` (none configured: no work at all)."""
        if not self.extenders:
            return []
        return self.extenders.interested(pod)

    def _begin_attempt(self, pinfo: QueuedPodInfo) -> _Attempt | None:
        """The attempt's profile, state, trace and fresh snapshot; None when the pod is skipped."""
        pod = pinfo.pod
        profile = self.profiles.get(pod.scheduler_name)
        if profile is None or self._skip_pod_schedule(pod):
            self.queue.done(pod.uid)
            return None
        self.stats.attempts += 1
        start = self.clock()
        state = CycleState()
        state.record_plugin_metrics = self.rng.randrange(100) < PLUGIN_METRICS_SAMPLE_PERCENT
        fwk = profile.framework
        trace = self.instrumentation.begin_attempt(pinfo, profile.name, state, fwk.now)
        self.cache.update_snapshot(self.snapshot)
        return _Attempt(profile, state, trace, start, self.queue.scheduling_cycle, AttemptDetails())

    async def _schedule_one(
        self, pinfo: QueuedPodInfo, extenders: Sequence[HTTPExtender] = ()
    ) -> None:
        """One scheduling cycle for `pinfo`. With extenders interested in the pod the
        algorithm awaits their HTTP calls (the loop stays in the cycle meanwhile: profiles
        are not swapped); without, nothing in it suspends."""
        attempt = self._begin_attempt(pinfo)
        if attempt is None:
            return
        profile = attempt.profile
        recorder = CallRecorder(profile.framework, attempt.state) if extenders else None
        try:
            result = await schedule_pod(
                profile.framework,
                attempt.state,
                pinfo.pod,
                self.snapshot,
                percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
                next_start_index=self.start_index,
                rng=self.rng,
                details=attempt.details,
                extenders=extenders,
                recorder=recorder,
            )
            self.metrics.scheduling_algorithm(self.clock() - attempt.start)
        except FitError as fit:
            preempting = [e for e in extenders if e.supports_preemption()]
            if preempting:
                await self._post_filter_with_extenders_then_fail(attempt, pinfo, fit, preempting)
            else:
                self._algorithm_failed(attempt, pinfo, fit)
            return
        except Exception as exc:
            self._algorithm_failed(attempt, pinfo, exc)
            return
        self._assume_reserve_permit(attempt, pinfo, result)

    def _algorithm_failed(self, attempt: _Attempt, pinfo: QueuedPodInfo, exc: Exception) -> None:
        profile, cycle, start, trace = attempt.profile, attempt.cycle, attempt.start, attempt.trace
        if isinstance(exc, FitError):
            self._post_filter_then_fail(profile, attempt.state, pinfo, exc, cycle, start, trace)
        elif isinstance(exc, NoNodesAvailable):
            # Upstream counts this as unschedulable (a node add will bring the pod back).
            self._fail(profile, pinfo, Status.unresolvable(str(exc)), cycle, start, trace=trace)
        else:
            if isinstance(exc, SchedulingError):
                log.error(
                    "scheduling algorithm failed",
                    extra={"pod": pinfo.pod.key, "error": str(exc)},
                )
            else:
                log.exception("scheduling algorithm failed", extra={"pod": pinfo.pod.key})
            self._fail(profile, pinfo, Status.error(str(exc)), cycle, start, trace=trace)

    def _assume_reserve_permit(
        self, attempt: _Attempt, pinfo: QueuedPodInfo, result: ScheduleResult
    ) -> None:
        profile, state, cycle, start = attempt.profile, attempt.state, attempt.cycle, attempt.start
        trace = attempt.trace
        fwk = profile.framework
        host = result.suggested_host
        assumed = pinfo.pod.with_node(host)
        self.cache.assume_pod(assumed)
        status = fwk.run_reserve_plugins_reserve(state, assumed, host)
        if not status.is_success:
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            self._forget(assumed)
            self._fail(profile, pinfo, status, cycle, start, trace=trace)
            return
        status = fwk.run_permit_plugins(state, assumed, host)
        if not (status.is_success or status.is_wait):
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            self._forget(assumed)
            self._fail(profile, pinfo, status, cycle, start, trace=trace)
            return
        self.instrumentation.scheduled(trace, pinfo, profile.name, result, attempt.details)
        assert self._group is not None
        self._group.create_task(
            self._binding_cycle(profile, state, pinfo, assumed, result, cycle, start, trace),
            name=f"bind-{pinfo.pod.key}",
        )

    def _forget(self, assumed: PodView) -> None:
        """Drop an assumed pod after a failed cycle; the watch may already have replaced it."""
        try:
            self.cache.forget_pod(assumed)
        except CacheError as exc:
            # Upstream logs and carries on: the informer's view of the pod wins.
            log.info(
                "assumed pod already superseded", extra={"pod": assumed.key, "error": str(exc)}
            )

    def _post_filter_then_fail(
        self,
        profile: SchedulingProfile,
        state: CycleState,
        pinfo: QueuedPodInfo,
        fit: FitError,
        cycle: int,
        start: float,
        trace: AttemptTrace | None = None,
    ) -> None:
        """PostFilter (preemption) in the cycle, on its snapshot, as upstream; the API calls
        of a preemption it decides run afterwards (`_start_preemption`)."""
        fwk = profile.framework
        nominated: str | None = ""  # no PostFilter: the nomination is cleared
        if fwk.has_post_filter_plugins():
            self.metrics.preemption_attempted()
            try:
                outcome = fwk.run_post_filter_plugins(
                    state, pinfo.pod, fit.diagnosis.node_to_status
                )
            except Exception:
                log.exception("PostFilter failed", extra={"pod": pinfo.pod.key})
                outcome = None
            nominated = self._post_filter_outcome(pinfo, fit, outcome)
        self._fail_unschedulable(profile, pinfo, fit, nominated, cycle, start, trace)

    async def _post_filter_with_extenders_then_fail(
        self,
        attempt: _Attempt,
        pinfo: QueuedPodInfo,
        fit: FitError,
        extenders: Sequence[HTTPExtender],
    ) -> None:
        """_post_filter_then_fail when extenders supporting preemption are interested in the
        pod: preemption offers them its candidates before choosing (awaited in the cycle)."""
        fwk = attempt.profile.framework
        nominated: str | None = ""
        if fwk.has_post_filter_plugins():
            self.metrics.preemption_attempted()
            try:
                recorder = CallRecorder(fwk, attempt.state)
                traced = [TracedPreemptingExtender(e, recorder) for e in extenders]
                outcome = await fwk.run_post_filter_plugins_with_extenders(
                    attempt.state, pinfo.pod, fit.diagnosis.node_to_status, traced
                )
            except Exception:
                log.exception("PostFilter failed", extra={"pod": pinfo.pod.key})
                outcome = None
            nominated = self._post_filter_outcome(pinfo, fit, outcome)
        self._fail_unschedulable(
            attempt.profile, pinfo, fit, nominated, attempt.cycle, attempt.start, attempt.trace
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

    def _start_preemption(self, profile: str, preemption: Preemption) -> None:
        """A PostFilter plugin chose victims: carry out the API calls after the cycle."""
        self.metrics.preemption_victims(len(preemption.victims))
        if self._group is not None:
            self._group.create_task(
                self._preemption_calls.run(preemption, profile),
                name=f"preempt-for-{preemption.preemptor.key}",
            )

    def _reject_waiting_pod(self, uid: str) -> bool:
        rejected = False
        for profile in self.profiles.values():
            rejected |= profile.framework.reject_waiting_pod(uid)
        return rejected

    def _fail_unschedulable(
        self,
        profile: SchedulingProfile,
        pinfo: QueuedPodInfo,
        fit: FitError,
        nominated_node: str | None,
        cycle: int,
        start: float,
        trace: AttemptTrace | None = None,
    ) -> None:
        pinfo.unschedulable_plugins = set(fit.diagnosis.unschedulable_plugins)
        pinfo.pending_plugins = set(fit.diagnosis.pending_plugins)
        status = Status(Code.UNSCHEDULABLE, fit.message())
        self._fail(
            profile,
            pinfo,
            status,
            cycle,
            start,
            nominated_node=nominated_node,
            trace=trace,
            diagnosis=fit.diagnosis,
        )

    def _fail(
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
    ) -> None:
        """Upstream's handleSchedulingFailure: requeue, record an event, patch the condition.
        `nominated_node`: the node to nominate, "" to clear a nomination, None to keep it."""
        pod = pinfo.pod
        self.instrumentation.failed(
            trace, pinfo, profile.name, status, diagnosis, self._snapshot_node_names
        )
        rejected = status.is_rejected
        if rejected:
            self.metrics.pod_unschedulable(profile.name, self.clock() - start)
            self.stats.unschedulable += 1
            if status.plugin and not pinfo.unschedulable_plugins:
                pinfo.unschedulable_plugins = {status.plugin}
        else:
            self.metrics.pod_schedule_error(profile.name, self.clock() - start)
            self.stats.errors += 1
            pinfo.consecutive_errors += 1
        reason = "Unschedulable" if rejected else "SchedulerError"
        message = status.message or reason
        current = self.pod_informer.store.get(pod.key)
        if current is None or current.uid != pod.uid:
            log.info("pod is gone; not requeueing", extra=pod_keys(pod.key, profile.name))
            self.queue.done(pod.uid)
            self.instrumentation.pod_gone(pod.uid)
        elif current.is_bound:
            log.info("pod is already bound; not requeueing", extra=pod_keys(pod.key, profile.name))
            self.queue.done(pod.uid)
        else:
            pinfo.pod = current
            # Also ends the pod's in-flight state (the queue's Done).
            self.queue.add_unschedulable_if_not_present(pinfo, cycle)
            if nominated_node:
                self.queue.add_nominated_pod(current, nominated_node)
            elif nominated_node == "":
                self.queue.delete_nominated_pod_if_exists(current)
        self.recorder.record(
            pod,
            "Warning",
            "FailedScheduling",
            "Scheduling",
            message[:MAX_MESSAGE_LENGTH],
            profile.name,
        )
        if current is not None and not current.is_bound:
            self._spawn_status_update(current, reason, message, nominated_node)

    def _snapshot_node_names(self) -> list[str]:
        return [info.node_name for info in self.snapshot.list()]

    def _spawn_status_update(
        self, pod: PodView, reason: str, message: str, nominated_node: str | None
    ) -> None:
        if nominated_node is None:
            nominated_node = pod.nominated_node_name  # kept as it is
        condition = pod_scheduled_condition(pod)
        if (
            condition is not None
            and condition.get("status") == "False"
            and condition.get("reason") == reason
            and condition.get("message") == message
            and pod.nominated_node_name == nominated_node
        ):
            return  # nothing would change (upstream skips no-op updates too)
        now = format_time(self.wall_clock())
        new_condition = {
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
        status_patch: dict[str, Any] = {"conditions": [new_condition]}
        if nominated_node or pod.nominated_node_name:
            status_patch["nominatedNodeName"] = nominated_node or None
        if self._group is not None:
            self._group.create_task(self._patch_unscheduled_status(pod, status_patch))

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
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"
        uid, version = pod.uid, pod.resource_version
        for _ in range(STATUS_PATCH_ATTEMPTS):
            patch = {"metadata": {"resourceVersion": version}, "status": status_patch}
            try:
                status, body = await self.client.request(
                    "PATCH", f"{path}/status", body=patch, content_type=STRATEGIC_MERGE_PATCH
                )
                if status != 409:
                    break
                status, body = await self.client.request("GET", path)
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

    # ------------------------------------------------------------------------ binding cycle

    async def _binding_cycle(
        self,
        profile: SchedulingProfile,
        state: CycleState,
        pinfo: QueuedPodInfo,
        assumed: PodView,
        result: ScheduleResult,
        cycle: int,
        start: float,
        trace: AttemptTrace | None = None,
    ) -> None:
        """`cycle` is the scheduling cycle the pod was popped in: a failed binding requeues the
        pod against the moves that happened since then, as upstream's podSchedulingCycle."""
        fwk = profile.framework
        host = result.suggested_host
        try:
            wait_start = fwk.now()
            status = await fwk.wait_on_permit(assumed)
            if trace is not None:
                trace.on_extension_point("WaitOnPermit", status, wait_start, fwk.now())
            if status.is_success:
                status = await fwk.run_pre_bind_plugins(state, assumed, host)
            if status.is_success:
                status = await self._bind(fwk, state, assumed, host)
            if not status.is_success:
                self._binding_failed(
                    profile, state, pinfo, assumed, host, status, cycle, start, trace
                )
                return
            self.cache.finish_binding(assumed)
            self.stats.scheduled += 1
            now = self.clock()
            self.metrics.pod_scheduled(profile.name, now - start)
            first_seen = pinfo.initial_attempt_timestamp
            if first_seen is not None:
                self.metrics.pod_scheduling_sli(pinfo.attempts, now - first_seen)
            if pinfo.flushed_from_unschedulable:
                self.metrics.pod_scheduled_after_flush()
            self.recorder.record(
                assumed,
                "Normal",
                "Scheduled",
                "Binding",
                f"Successfully assigned {assumed.key} to {host}",
                profile.name,
            )
            await fwk.run_post_bind_plugins(state, assumed, host)
            self.queue.done(assumed.uid)
            self.instrumentation.bound(trace, pinfo, profile.name, host, result)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("binding cycle crashed", extra=pod_keys(assumed.key, profile.name))
            self._binding_failed(
                profile, state, pinfo, assumed, host, Status.error(str(exc)), cycle, start, trace
            )

    async def _bind(self, fwk: Framework, state: CycleState, assumed: PodView, host: str) -> Status:
        """Upstream's bind: an interested binder extender first, else the Bind plugins."""
        if self.extenders:
            recorder = CallRecorder(fwk, state)
            status = await extenders_binding(self.extenders.extenders, assumed, host, recorder)
            if status is not None:
                return status
        return await fwk.run_bind_plugins(state, assumed, host)

    def _binding_failed(
        self,
        profile: SchedulingProfile,
        state: CycleState,
        pinfo: QueuedPodInfo,
        assumed: PodView,
        host: str,
        status: Status,
        cycle: int,
        start: float,
        trace: AttemptTrace | None = None,
    ) -> None:
        """Upstream's handleBindingCycleError: unreserve, forget, wake others, requeue."""
        self.stats.bind_failures += 1
        profile.framework.run_reserve_plugins_unreserve(state, assumed, host)
        self._forget(assumed)
        # The resources the assumed pod held are free again: others may fit now.
        self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, assumed, None)
        self._fail(profile, pinfo, status, cycle, start, trace=trace)


@dataclass(slots=True)
class _Attempt:
    """What one scheduling attempt carries from its start to its hand-off to binding."""

    profile: SchedulingProfile
    state: CycleState
    trace: AttemptTrace | None
    start: float
    cycle: int
    details: AttemptDetails


def with_ignored_resources(
    config: ResolvedConfig, ignored: Sequence[str], registry: Registry
) -> ResolvedConfig:
    """`config` with NodeResourcesFit ignoring the extended resources extenders manage with
    ignoredByScheduler (upstream's buildExtenders sets its args' ignoredResources to them).
    The args' type and defaults come from `registry`'s entry for the plugin, so the cycle
    does not import the plugin."""
    entry = registry.get(NODE_RESOURCES_FIT)
    if not ignored or entry is None:
        return config  # without the plugin in the registry, no profile can enable it
    defaults = entry.decode(None)
    profiles = []
    for profile in config.profiles:
        if NODE_RESOURCES_FIT not in profile.plugin_names():
            profiles.append(profile)
            continue
        args = profile.args.get(NODE_RESOURCES_FIT)
        if args is None:
            args = defaults
        if not isinstance(args, type(defaults)):
            raise ExtenderConfigError(
                f"want args to be of type {type(defaults).__name__}, got {type(args).__name__}"
            )
        args = dataclasses.replace(args, ignored_resources=tuple(ignored))
        profiles.append(
            dataclasses.replace(profile, args={**profile.args, NODE_RESOURCES_FIT: args})
        )
    return dataclasses.replace(config, profiles=tuple(profiles))


NODE_RESOURCES_FIT = "NodeResourcesFit"


class MetricsObserver:
    """Framework timing hooks → upstream's extension point and plugin duration histograms."""

    __slots__ = ("_metrics", "_profile")

    def __init__(self, profile: str, metrics: SchedulerMetrics) -> None:
        self._profile = profile
        self._metrics = metrics

    def on_extension_point(self, point: str, status: Status, seconds: float) -> None:
        self._metrics.observe_extension_point(point, status.code_name, self._profile, seconds)

    def on_plugin(self, point: str, plugin: str, status: Status, seconds: float) -> None:
        self._metrics.observe_plugin(plugin, point, status.code_name, seconds)

    def on_plugin_evaluated(self, point: str, plugin: str, count: int) -> None:
        self._metrics.plugin_evaluated(plugin, point, self._profile, count)

    def on_permit_wait(self, result: str, seconds: float) -> None:
        self._metrics.permit_wait(result, seconds)


def pod_scheduled_condition(pod: PodView) -> dict[str, Any] | None:
    status = pod.raw.get("status") or {}
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "PodScheduled":
            return condition
    return None
