"""One replay: a trace through one scheduler configuration with one seed, in virtual time.

The replay builds a real `Scheduler` (its cache, queue, profiles, frameworks and plugins,
scheduling and binding cycles, the DRA allocator and claim tracker; the profiles as
`profile_set.py` builds them, for `aiosched run`) over `ReplayClient`, an API server in memory.
It feeds the objects of the trace through the Scheduler's own informers' watch path, as ADDED,
MODIFIED and DELETED events (parse, store, event handler: the cache and the queue), pops pods as
the scheduling loop does and runs their scheduling and binding cycles one after the other; what
the binding cycle wrote (the binding, the claims' allocation and reservation) comes back as the
watch would bring it. The informers never run: nothing lists or watches.

Time is virtual: the clock jumps from one arrival or departure to the next; while pods wait in
backoff or as unschedulable it ticks by one second, the period of the queue's own flushes.
Two modes for a pod the scheduler cannot place: `retry` keeps it pending (the queue's backoff,
queueing hints and flushes bring it back, as in a cluster); without it, as the FGD paper's
simulator, a pod gets one scheduling cycle and is dropped if it fails.

Not replayed: gangs (a pod of a PodGroup is scheduled alone), extenders, and preemption's API
calls (a PostFilter nomination is recorded, but no victim is evicted).
"""

from __future__ import annotations

import copy
import heapq
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import anyio

from profiles.config import ResolvedConfig
from scheduler.api.objects import PodView
from scheduler.api.resource import ResourceClaimView
from scheduler.client.informers import Informer
from scheduler.cycle.scheduler import Scheduler, SchedulerOptions
from scheduler.framework.registry import Registry
from scheduler.lab.client import ReplayClient
from scheduler.lab.trace import PodArrival, Trace

log = logging.getLogger(__name__)

#: The queue's flush periods (SchedulingQueue.run's defaults), in virtual seconds.
BACKOFF_FLUSH_SECONDS = 1.0
LEFTOVER_FLUSH_TICKS = 30
#: The wall clock a replay starts at (events and conditions carry times from it).
EPOCH = datetime(2025, 1, 1, tzinfo=UTC)


class VirtualClock:
    __slots__ = ("now",)

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def wall(self) -> datetime:
        return EPOCH + timedelta(seconds=self.now)


class ReplayObserver(Protocol):
    """What a replay reports as it goes (metrics: gpu_metrics.py)."""

    def placed(
        self, arrival: PodArrival, pod: PodView, claims: Sequence[ResourceClaimView]
    ) -> None:
        """`pod` (bound: `pod.node_name`) and its claims, as allocated, after its binding."""

    def failed(self, arrival: PodArrival) -> None:
        """The pod's attempt failed and the replay dropped it (only without retry)."""

    def departed(
        self, arrival: PodArrival, pod: PodView, claims: Sequence[ResourceClaimView]
    ) -> None:
        """A bound pod left; `claims` as they were allocated."""


@dataclass(slots=True)
class ReplayResult:
    pods: int = 0
    scheduled: int = 0
    #: Pods never placed: dropped after their attempt, or still pending at the end.
    failed: list[str] = field(default_factory=list)
    #: "namespace/name" → node, for every pod that was bound (departed ones included).
    placements: dict[str, str] = field(default_factory=dict)
    #: Virtual seconds from arrival to binding, per bound pod.
    pending_seconds: list[float] = field(default_factory=list)
    attempts: int = 0
    seconds: float = 0.0  # wall time of the replay


def _with_meta(obj: Mapping[str, Any], client: ReplayClient, uid: str) -> dict[str, Any]:
    raw = copy.deepcopy(dict(obj))
    meta = dict(raw.get("metadata") or {})
    meta.setdefault("uid", uid)
    meta["resourceVersion"] = client.next_resource_version()
    meta.setdefault("creationTimestamp", EPOCH.strftime("%Y-%m-%dT%H:%M:%SZ"))
    raw["metadata"] = meta
    return raw


class Replay:
    """A Scheduler over ReplayClient, fed and driven by hand: see the module docstring."""

    def __init__(
        self,
        config: ResolvedConfig,
        registry: Registry,
        seed: int,
        *,
        retry: bool = True,
        feature_gates: Mapping[str, bool] | None = None,
        observer: ReplayObserver | None = None,
        scheduler_name: str | None = None,
    ) -> None:
        self.clock = VirtualClock()
        self.client = ReplayClient()
        self.retry = retry
        self.observer = observer
        self.scheduler = Scheduler(
            self.client,
            config,
            registry,
            SchedulerOptions(
                seed=seed, feature_gates=dict(feature_gates or {}), selectors_off_loop=False
            ),
            clock=self.clock,
            wall_clock=self.clock.wall,
        )
        # Pods go to this profile whatever schedulerName the trace gives them.
        self.scheduler_name = scheduler_name or config.profiles[0].scheduler_name
        informers = {i.name: i for i in self.scheduler.object_informers}
        self._classes = informers["deviceclasses"]
        self._slices = informers["resourceslices"]
        self._claims = informers["resourceclaims"]
        self._pods: Informer[PodView] = self.scheduler.pod_informer
        self._nodes = self.scheduler.node_informer
        self._raw_pods: dict[str, dict[str, Any]] = {}
        self._arrivals: dict[str, PodArrival] = {}
        self._arrived_at: dict[str, float] = {}
        self.result = ReplayResult()

    # -- the watch, by hand ---------------------------------------------------------------

    @staticmethod
    def _deliver(informer: Informer[Any], kind: str, raw: Mapping[str, Any]) -> None:
        # The informer's own watch path: parse (a malformed object is logged and skipped),
        # store, event handler (cache, queue, listers).
        informer._apply_event({"type": kind, "object": raw})

    def _add(self, informer: Informer[Any], obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        uid = f"{kind}-{meta.get('namespace') or ''}-{meta.get('name')}"
        raw = _with_meta(obj, self.client, uid)
        if kind in ("pod", "claim"):
            raw["metadata"].setdefault("namespace", "default")
        self._deliver(informer, "ADDED", raw)
        return raw

    def load_cluster(self, trace: Trace) -> None:
        for obj in trace.device_classes:
            self._add(self._classes, obj, "deviceclass")
        for obj in trace.resource_slices:
            self._add(self._slices, obj, "resourceslice")
        for obj in trace.nodes:
            self._add(self._nodes, obj, "node")
        for obj in trace.claims:
            self._add(self._claims, obj, "claim")

    def _arrive(self, arrival: PodArrival) -> None:
        for claim in arrival.claims:
            # A recorded claim may carry its allocation from the cluster: the replay decides anew.
            self._add(self._claims, {k: v for k, v in claim.items() if k != "status"}, "claim")
        # _add copies it whole; these changes touch only new dicts
        pod = dict(arrival.pod)
        pod["spec"] = {**(pod.get("spec") or {}), "schedulerName": self.scheduler_name}
        pod.pop("status", None)
        pod["spec"].pop("nodeName", None)
        raw = self._add(self._pods, pod, "pod")
        key = f"{raw['metadata']['namespace']}/{raw['metadata']['name']}"
        self._raw_pods[key] = raw
        self._arrivals[key] = arrival
        self._arrived_at[key] = self.clock.now
        self.result.pods += 1

    def _claim_views(self, arrival: PodArrival, namespace: str) -> list[ResourceClaimView]:
        resources = self.scheduler.cluster_objects.resources
        views = []
        for ref in (arrival.pod.get("spec") or {}).get("resourceClaims") or ():
            name = ref.get("resourceClaimName") if isinstance(ref, Mapping) else None
            view = resources.claim(namespace, name) if name else None
            if view is not None:
                views.append(view)
        return views

    def _remove(self, key: str) -> None:
        """Delete a pod and the claims it brought, as a controller would."""
        raw = self._raw_pods.pop(key, None)
        arrival = self._arrivals.pop(key, None)
        self._arrived_at.pop(key, None)
        if raw is None or arrival is None:
            return
        stored = self._pods.store.get(key)
        namespace = raw["metadata"]["namespace"]
        claims = self._claim_views(arrival, namespace)
        self._deliver(self._pods, "DELETED", raw)
        if stored is not None and stored.node_name and self.observer is not None:
            self.observer.departed(arrival, stored, claims)
        for claim in arrival.claims:
            self._deliver(
                self._claims,
                "DELETED",
                {**claim, "metadata": {**claim["metadata"], "namespace": namespace}},
            )

    # -- the loop --------------------------------------------------------------------------

    async def _drain(self) -> None:
        """Upstream's scheduleOne for every pod in activeQ, one after the other."""
        scheduler = self.scheduler
        queue = scheduler.queue
        while (pinfo := queue.try_pop()) is not None:
            self.result.attempts += 1
            key = pinfo.pod.key
            attempt = await scheduler.scheduling.schedule_one(pinfo, scheduler.profiles)
            if attempt is not None:
                await scheduler.binding.run(pinfo, attempt)
            self._apply_writes()
            bound = self._pods.store.get(key)
            if bound is not None and bound.node_name:
                self._bound(key, bound)
            elif not self.retry and key in self._raw_pods:
                self.result.failed.append(key)
                arrival = self._arrivals[key]
                self._remove(key)
                if self.observer is not None:
                    self.observer.failed(arrival)

    def _apply_writes(self) -> None:
        for claim in self.client.take_claims().values():
            self._deliver(self._claims, "MODIFIED", claim)
        for key, node in self.client.take_bindings().items():
            raw = self._raw_pods.get(key)
            if raw is None:
                continue
            raw = {**raw, "spec": {**raw["spec"], "nodeName": node}}
            raw["metadata"] = {
                **raw["metadata"],
                "resourceVersion": self.client.next_resource_version(),
            }
            self._raw_pods[key] = raw
            self._deliver(self._pods, "MODIFIED", raw)

    def _bound(self, key: str, pod: PodView) -> None:
        result = self.result
        result.scheduled += 1
        result.placements[key] = pod.node_name
        result.pending_seconds.append(self.clock.now - self._arrived_at.get(key, self.clock.now))
        if self.observer is not None:
            arrival = self._arrivals[key]
            self.observer.placed(arrival, pod, self._claim_views(arrival, pod.namespace))

    def _waiting(self) -> bool:
        counts = self.scheduler.queue.counts()
        return bool(counts.get("backoff") or counts.get("unschedulable"))

    async def _advance_to(self, when: float) -> None:
        """Let virtual time pass until `when`, flushing the queue as its own task does."""
        queue = self.scheduler.queue
        ticks = 0
        while self._waiting() and self.clock.now + BACKOFF_FLUSH_SECONDS <= when:
            self.clock.now += BACKOFF_FLUSH_SECONDS
            ticks += 1
            queue.flush_backoff_completed()
            if ticks % LEFTOVER_FLUSH_TICKS == 0:
                queue.flush_unschedulable_left_over()
            await self._drain()
        self.clock.now = max(self.clock.now, when)

    async def run(
        self, trace: Trace, progress: Callable[[int], None] | None = None
    ) -> ReplayResult:
        dispatcher = self.scheduler.api_dispatcher
        if dispatcher is None:
            return await self._replay(trace, progress)
        # SchedulerAsyncAPICalls: bindings wait for the dispatcher, which must be running.
        async with anyio.create_task_group() as group:
            group.start_soon(dispatcher.run, name="api-dispatcher")
            try:
                result = await self._replay(trace, progress)
            finally:
                group.cancel_scope.cancel()
        return result

    async def _replay(self, trace: Trace, progress: Callable[[int], None] | None) -> ReplayResult:
        started = time.perf_counter()
        self.load_cluster(trace)
        departures: list[tuple[float, int, str]] = []
        for index, arrival in enumerate(trace.pods):
            while departures and departures[0][0] <= arrival.time:
                when, _, key = heapq.heappop(departures)
                await self._advance_to(when)
                self._remove(key)
                await self._drain()
            await self._advance_to(arrival.time)
            self._arrive(arrival)
            await self._drain()
            if arrival.departure is not None:
                heapq.heappush(departures, (arrival.departure, index, arrival.key))
            if progress is not None:
                progress(index + 1)
        while departures:
            when, _, key = heapq.heappop(departures)
            await self._advance_to(when)
            self._remove(key)
            await self._drain()
        # Pending pods get the queue's flushes until one maximum unschedulable time passes.
        if self.retry and self._waiting():
            await self._advance_to(
                self.clock.now + self.scheduler.options.max_unschedulable_seconds + 1
            )
        self.result.failed += [key for key in self._raw_pods if key not in self.result.placements]
        self.result.seconds = time.perf_counter() - started
        return self.result
