"""The Scheduler: informers → cache + queue, one serial scheduling loop, binding tasks.

This is upstream's scheduler.go (the wiring, Run) and scheduleOne on asyncio: the loop pops one
pod at a time and runs its scheduling cycle (scheduling_cycle.py), then starts its binding cycle
(binding_cycle.py) as a task and goes on to the next pod. Every background task belongs to the
anyio task group that `run()` owns, binding tasks, status patches and preemption calls
included, so shutdown is structured: cancelling `run()` stops informers, the queue's flushers,
the event writers, the loop and in-flight bindings together. A reload swaps the profiles here,
between two scheduling cycles.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVarTuple, Unpack

import anyio
from anyio.abc import TaskGroup, TaskStatus

from observability.explain import ExplainStore
from observability.metrics import SchedulerMetrics
from observability.tracing import NOOP_TRACING, Tracing
from profiles.config import Extender, ResolvedConfig
from scheduler.api.objects import NodeView, PodView
from scheduler.api.pod import PodParser
from scheduler.api.request_gates import RequestGates, set_request_gates
from scheduler.apicalls.dispatcher import ApiDispatcher
from scheduler.apicalls.metrics import dispatcher_with_metrics
from scheduler.cache.cache import Cache
from scheduler.cache.snapshot import Snapshot
from scheduler.client.informers import Informer, ResourceWatch
from scheduler.client.recorder import EventRecorder
from scheduler.client.rest import KubeClient
from scheduler.cycle.algorithm import StartIndex
from scheduler.cycle.binding_cycle import BindingCycle
from scheduler.cycle.eventhandlers import NodeEventHandler, PodEventHandler
from scheduler.cycle.instrumentation import Instrumentation
from scheduler.cycle.pod_resources import PodResourcesSource
from scheduler.cycle.podgroup_cycle import GroupAwarePodEvents, PodGroupCycle
from scheduler.cycle.podgroup_status import PodGroupStatusWriter
from scheduler.cycle.preemption_calls import PreemptionCalls
from scheduler.cycle.profile_set import ProfileSet
from scheduler.cycle.scheduling_cycle import FailureHandler, LoopStats, SchedulingCycle
from scheduler.cycle.unparsable_pods import UnparsablePodReporter
from scheduler.extenders import EXTENDER_NAME, ExtenderConfigError, ExtenderSet, HTTPExtender
from scheduler.framework.events import ClusterEvent, QueueingHint
from scheduler.framework.registry import Registry
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.framework.status import Status
from scheduler.listers.cluster_objects import ClusterObjects
from scheduler.listers.pod_groups import PodGroupStatusController
from scheduler.listers.workload_objects import gang_scheduling_enabled
from scheduler.queue.event_labels import event_label
from scheduler.queue.scheduling_queue import SchedulingQueue
from scheduler.queue.types import QueuedPodInfo

log = logging.getLogger(__name__)

# Pods the scheduler still cares about: upstream's field selector for its pod informer.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"

PosArgs = TypeVarTuple("PosArgs")


@dataclass(slots=True)
class SchedulerOptions:
    """What the configuration file does not say (backoffs come from the config)."""

    max_unschedulable_seconds: float = 300.0
    seed: int | None = None
    # The OpportunisticBatching feature gate (--feature-gates; upstream's default since v1.35).
    opportunistic_batching: bool = True
    # Every --feature-gates value, for the plugins that read gates (DynamicResources);
    # empty: each gate at its default.
    feature_gates: Mapping[str, bool] = dataclasses.field(default_factory=dict)
    # Expensive DRA selectors on a worker thread while their pod waits; off for replays in
    # virtual time, which must not depend on a thread's timing.
    selectors_off_loop: bool = True


def _enables(config: ResolvedConfig, plugin: str) -> bool:
    """Whether any profile of `config` enables `plugin` at some extension point."""
    return any(
        ref.name == plugin
        for profile in config.profiles
        for refs in profile.plugins.values()
        for ref in refs
    )


class Scheduler:
    """One scheduler process's scheduling: the informers that fill the cache and the queue,
    the profiles (swapped by a reload between cycles), the loop, and the task group that owns
    every task it starts. The cycles themselves are SchedulingCycle and BindingCycle."""

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
        cache: Cache | None = None,
    ) -> None:
        self.client = client
        self.registry = registry
        self.options = options or SchedulerOptions()
        # PodLevelResources / InPlacePodLevelResourcesVerticalScaling are process-wide, as
        # upstream's DefaultFeatureGate: set before the informers read the first pod.
        set_request_gates(RequestGates.from_feature_gates(self.options.feature_gates))
        self.metrics = metrics or SchedulerMetrics()
        # Spans, explain entries and attempt logs; tracing off costs one flag test per attempt.
        self.instrumentation = Instrumentation(
            tracing, explain, clock, explain_every_attempt=explain_every_attempt
        )
        self.clock = clock
        self.wall_clock = wall_clock
        self.rng = random.Random(self.options.seed)
        # `cache`: a Cache subclass that also feeds filter workers' replicas (scheduler/parallel/).
        self.cache = cache if cache is not None else Cache()
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
            gate_may_lift=self._gate_may_lift,
            # SchedulerPopFromBackoffQ (beta and on by default upstream since v1.33; `aiosched
            # run` passes every gate, so the False here only serves embedders' partial maps).
            pop_from_backoff_q=self.options.feature_gates.get("SchedulerPopFromBackoffQ", False),
            namespace_labels=self.cluster_objects.namespace_labels,
        )
        # SchedulerAsyncAPICalls: status patches and bindings go through the API dispatcher,
        # sent off the cycles, merged or skipped per pod (scheduler/apicalls/).
        self.api_dispatcher: ApiDispatcher | None = None
        if self.options.feature_gates.get("SchedulerAsyncAPICalls", False):
            self.api_dispatcher = dispatcher_with_metrics(config.parallelism, self.metrics.registry)
        # (gating plugin, event) → answer, for the profiles named (a reload starts afresh)
        self._gate_answers: dict[tuple[str, ClusterEvent], bool] = {}
        self._gate_answers_for: ProfileSet | None = None
        self.metrics.set_pending_source(self.queue.counts)
        # Extenders per `extenders` section seen (a reload may change it), and the current one.
        self._extender_sets: dict[tuple[Extender, ...], ExtenderSet] = {}
        self.profiles = self.build_profiles(config)
        self.queue.set_less(self._less, self.profiles.queue_sort_key())
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
        self.stats = LoopStats()
        # run()'s task group (the long-lived tasks), from the moment run() opens it.
        self._group: TaskGroup | None = None
        # The tasks started per pod (binding cycles, status patches, preemption calls): an
        # asyncio.TaskGroup held open by a task of run()'s group, so they stop with it. Not
        # anyio's own: its start_soon costs about 40 µs more per task on CPython 3.11, some 4 %
        # of a pod's CPU at SchedulingBasic's pace.
        self._pod_tasks: asyncio.TaskGroup | None = None
        pod_events: PodEventHandler | GroupAwarePodEvents = PodEventHandler(
            self.cache,
            self.queue,
            self._responsible,
            self._on_pod_gone,
            lambda pod, outcome: self.instrumentation.pod_left(pod.uid, outcome),
            metrics=self.metrics,
            dispatcher=self.api_dispatcher,
        )
        # Workload-aware scheduling (GangScheduling, with GenericWorkload): the pod groups'
        # states follow the pods that name a group; nothing changes for the others.
        workloads = self.cluster_objects.workloads
        self._gangs = gang_scheduling_enabled(self.options.feature_gates)
        if self._gangs:
            pod_events = GroupAwarePodEvents(pod_events, workloads, self.queue)
            workloads.connect(self.queue.move_all_to_active_or_backoff)
            workloads.activate = self.queue.activate
        self.pod_informer: Informer[PodView] = Informer(
            client,
            ResourceWatch("/api/v1/pods", field_selector=POD_FIELD_SELECTOR),
            PodParser(),
            pod_events,
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
        resources = self.cluster_objects.resources
        resources.connect(self.queue.move_all_to_active_or_backoff)
        self.object_informers: list[Informer[Any]] = [
            Informer(client, ResourceWatch(path), parse, handler, name=name, rng=self.rng)
            for name, path, parse, handler in (
                *self.cluster_objects.informer_specs(),
                *storage.informer_specs(),
            )
        ]
        # resource.k8s.io/v1 (DynamicResources): a cluster older than v1.34, or RBAC without
        # those resources, leaves them empty instead of keeping the scheduler from starting.
        self.object_informers += [
            Informer(
                client, ResourceWatch(path), parse, handler, name=name, rng=self.rng, optional=True
            )
            for name, path, parse, handler in (
                *resources.informer_specs(),
                # scheduling.k8s.io/v1beta1: served only with GenericWorkload on (beta, off).
                *(workloads.informer_specs() if self._gangs else ()),
            )
        ]
        # scheduler-plugins' PodGroups (Coscheduling), only once a profile enables it (here or
        # by a reload: _apply_profiles).
        self.pod_group_status: PodGroupStatusController | None = None
        # Whether run() has started the informers, and the scheduling loop (after which the
        # PodGroup status controller may run): what a reload must start itself from then on.
        self._informers_started = False
        self._loop_started = False
        if _enables(config, "Coscheduling"):
            self.object_informers += self._watch_pod_groups()
        # The two halves of upstream's scheduleOne, and the failure handler they share.
        failures = FailureHandler(
            client=client,
            queue=self.queue,
            pod_informer=self.pod_informer,
            recorder=self.recorder,
            snapshot=self.snapshot,
            clock=clock,
            wall_clock=wall_clock,
            metrics=self.metrics,
            stats=self.stats,
            instrumentation=self.instrumentation,
            start_soon=self._start_soon,
            dispatcher=self.api_dispatcher,
        )
        preemption_calls = PreemptionCalls(
            client,
            self.recorder,
            wall_clock,
            self._reject_waiting_pod,
            self.queue.delete_nominated_pod_if_exists,
            self.api_dispatcher,
        )
        self.scheduling = SchedulingCycle(
            cache=self.cache,
            queue=self.queue,
            snapshot=self.snapshot,
            start_index=self.start_index,
            rng=self.rng,
            clock=clock,
            metrics=self.metrics,
            stats=self.stats,
            instrumentation=self.instrumentation,
            failures=failures,
            preemption_calls=preemption_calls,
            start_soon=self._start_soon,
            # SchedulerAsyncPreemption: beta and on by default upstream since v1.33.
            async_preemption=self.options.feature_gates.get("SchedulerAsyncPreemption", True),
        )
        # The PodGroup cycle: a gang's members placed in one cycle, all or none.
        self.podgroups: PodGroupCycle | None = None
        if self._gangs:
            self.podgroups = PodGroupCycle(
                cache=self.cache,
                queue=self.queue,
                snapshot=self.snapshot,
                start_index=self.start_index,
                rng=self.rng,
                clock=clock,
                stats=self.stats,
                instrumentation=self.instrumentation,
                failures=failures,
                workloads=workloads,
                status_writer=PodGroupStatusWriter(client, self._start_soon, wall_clock),
                metrics=self.metrics,
            )
        self.binding = BindingCycle(
            cache=self.cache,
            queue=self.queue,
            recorder=self.recorder,
            clock=clock,
            metrics=self.metrics,
            stats=self.stats,
            instrumentation=self.instrumentation,
            failures=failures,
            extenders=self.extenders,
            # NominatedNodeNameForExpectation (beta, on by default upstream since v1.35;
            # `aiosched run` passes every gate, the False only serves embedders' partial maps).
            nominate_for_expectation=self.options.feature_gates.get(
                "NominatedNodeNameForExpectation", False
            ),
        )

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
                start_preemption=lambda preemption: self.scheduling.start_preemption(
                    profile, preemption
                ),
                extenders=extenders.extenders,
                pod_lister=self._informed_pod,
                hint_observer=self._observe_queueing_hint,
                opportunistic_batching=self.options.opportunistic_batching,
                batch_metrics=self.metrics,
                feature_gates=self.options.feature_gates,
                activate=self.queue.activate if self.options.selectors_off_loop else None,
                api_dispatcher=self.api_dispatcher,
            )

        return ProfileSet.build(config, self.registry, deps_for)

    def _watch_pod_groups(self) -> list[Informer[Any]]:
        """Coscheduling's informers, once: the PodGroups (the CRD may be absent: optional) and
        the pods carrying the group label; and the PodGroup status controller, which runs while
        this process schedules. Returns the informers to start."""
        pod_groups = self.cluster_objects.pod_groups
        pod_groups.connect(self.queue.move_all_to_active_or_backoff)
        name, path, parse, store = pod_groups.group_informer_spec()
        self.pod_group_status = PodGroupStatusController(pod_groups, self.client)
        return [
            Informer(self.client, ResourceWatch(path), parse, store, name=name, rng=self.rng,
                     optional=True),
            Informer(
                self.client,
                ResourceWatch("/api/v1/pods", label_selector=pod_groups.MEMBER_LABEL_SELECTOR),
                PodView.from_dict,
                pod_groups.members,
                name="podgroup-pods",
                rng=self.rng,
            ),
        ]  # fmt: skip

    # ----------------------------------------------------------------------------- lifecycle

    async def run(self, active: asyncio.Event | None = None) -> None:
        """Run until cancelled. With ``active``, informers (and the queue they fill) start at
        once but the scheduling loop waits until it is set: a leader election standby keeps
        warm caches (kube-scheduler with delayCacheUntilActive false)."""
        try:
            await self._run(active)
        finally:
            # Shielded: when an anyio scope around run() is cancelled, every await in it is.
            with anyio.CancelScope(shield=True):
                for extenders in self._extender_sets.values():
                    await extenders.close()

    async def _run(self, active: asyncio.Event | None) -> None:
        async with anyio.create_task_group() as group:
            self._group = group
            await group.start(self._hold_pod_tasks, name="pod-tasks")
            group.start_soon(self.node_informer.run, name="informer-nodes")
            group.start_soon(self.pod_informer.run, name="informer-pods")
            for informer in self.object_informers:
                group.start_soon(informer.run, name=f"informer-{informer.name}")
            self._informers_started = True
            group.start_soon(self.recorder.run, name="event-recorder")
            group.start_soon(self.unparsable_pods.run, name="unparsable-pods")
            group.start_soon(self.queue.run, name="queue-flush")
            if self.api_dispatcher is not None:
                group.start_soon(self.api_dispatcher.run, name="api-dispatcher")
            await self.wait_for_cache_sync()
            if active is not None and not active.is_set():
                log.info("caches synced; waiting for leadership to schedule")
                await active.wait()
            log.info(
                "caches synced; scheduling",
                extra={"nodes": len(self.node_informer.store), "profiles": self.profiles.names()},
            )
            group.start_soon(self._scheduling_loop, name="scheduling-loop")
            self._loop_started = True  # from here a reload starts the controller itself
            if self.pod_group_status is not None:
                group.start_soon(self.pod_group_status.run, name="podgroup-status")

    async def _hold_pod_tasks(
        self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Own the per-pod tasks until run() ends: cancelled with run()'s group, the
        asyncio.TaskGroup cancels them and waits for them; one that fails ends run()."""
        async with asyncio.TaskGroup() as tasks:
            self._pod_tasks = tasks
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self._pod_tasks = None

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

    def _gate_may_lift(self, plugin: str, event: ClusterEvent) -> bool:
        """Whether PreEnqueue plugin `plugin` registered an event `event` matches (upstream's
        GatingPluginEvents, the plugin's events in every profile). Asked per gated pod per
        event, so answers are kept until the profiles change."""
        if not plugin:  # gated without a plugin's name (no profile): any event may help
            return True
        if self._gate_answers_for is not self.profiles:
            self._gate_answers = {}
            self._gate_answers_for = self.profiles
        key = (plugin, event)
        answer = self._gate_answers.get(key)
        if answer is None:
            answer = any(
                event.matches(registration.event)
                for profile in self.profiles.values()
                for registration in profile.framework.events_to_register().get(plugin, ())
            )
            self._gate_answers[key] = answer
        return answer

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

    # ---------------------------------------------------------------------------------- loop

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

    async def _schedule_one(
        self, pinfo: QueuedPodInfo, extenders: Sequence[HTTPExtender] = ()
    ) -> None:
        """Upstream's scheduleOne: the scheduling cycle here, in the loop, with the profiles
        of this cycle; the binding cycle of a pod it assumed in a task of its own."""
        if pinfo.pod.scheduling_group is not None and self.podgroups is not None:
            group = self.podgroups.group_of(pinfo.pod)
            if group is not None:
                assert self._pod_tasks is not None
                for member, placed in await self.podgroups.schedule_group(
                    pinfo, group, self.profiles
                ):
                    self._pod_tasks.create_task(
                        self.binding.run(member, placed), name=f"bind-{member.pod.key}"
                    )
                return
        attempt = await self.scheduling.schedule_one(pinfo, self.profiles, extenders)
        if attempt is not None:
            assert self._pod_tasks is not None
            self._pod_tasks.create_task(
                self.binding.run(pinfo, attempt), name=f"bind-{pinfo.pod.key}"
            )

    def _start_soon(
        self,
        func: Callable[[Unpack[PosArgs]], Coroutine[Any, Any, Any]],
        /,
        *args: *PosArgs,
        name: str,
    ) -> bool:
        """Run `func(*args)` as a per-pod task of run() (status patches, preemption calls);
        before run() has opened its groups, or once they are closing, nothing is started.
        Whether it was."""
        if self._pod_tasks is None:
            return False
        self._pod_tasks.create_task(func(*args), name=name)
        return True

    def _apply_profiles(self, profiles: ProfileSet) -> None:
        old_names = set(self.profiles.names())
        self._prune_retired()
        self._retired += [
            p.framework for p in self.profiles.values() if len(p.framework.waiting_pods)
        ]
        self.profiles = profiles
        self._pending_profiles = None
        config = profiles.config
        if self.pod_group_status is None and _enables(config, "Coscheduling"):
            self._start_watching_pod_groups()
        self.queue.set_backoff(config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds)
        extenders = self._extender_sets.get(profiles.config.extenders)
        if extenders is not None:  # always built by build_profiles
            # Binding cycles read them when they bind, pods scheduled before the swap included.
            self.extenders = self.binding.extenders = extenders
        self.queue.set_less(self._less, profiles.queue_sort_key())
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
        new_names = set(profiles.names())
        # Each key says what it counts: profiles by name, pending pods by number.
        log.info(
            "profiles swapped",
            extra={
                "profiles": profiles.names(),
                "profilesAdded": sorted(new_names - old_names),
                "profilesRemoved": sorted(old_names - new_names),
                "pendingPodsQueued": added,
                "pendingPodsDropped": len(dropped),
            },
        )

    def _start_watching_pod_groups(self) -> None:
        """A reload enabled Coscheduling for the first time: start its informers now (and the
        status controller, if this process schedules already; else run() starts it). Until the
        informers have listed, the plugin finds no PodGroup, and Permit refuses a labelled pod
        ("PodGroup not found") rather than place it alone; the PodGroups' arrival requeues it.
        They keep running if a later reload disables the plugin again."""
        informers = self._watch_pod_groups()
        self.object_informers += informers
        if self._group is None or not self._informers_started:
            return  # run() starts them with the others
        for informer in informers:
            self._group.start_soon(informer.run, name=f"informer-{informer.name}")
        if self._loop_started and self.pod_group_status is not None:
            self._group.start_soon(self.pod_group_status.run, name="podgroup-status")

    def _prune_retired(self) -> None:
        """Forget replaced frameworks once no pod waits on Permit in them any more."""
        self._retired = [f for f in self._retired if len(f.waiting_pods)]

    def _interested_extenders(self, pod: PodView) -> list[HTTPExtender]:
        """The extenders interested in `pod` (none configured: no work at all)."""
        if not self.extenders:
            return []
        return self.extenders.interested(pod)

    def _reject_waiting_pod(self, uid: str) -> bool:
        rejected = False
        for profile in self.profiles.values():
            rejected |= profile.framework.reject_waiting_pod(uid)
        return rejected


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
