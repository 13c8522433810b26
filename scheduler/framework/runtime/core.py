"""The runtime's shared core: plugins by extension point, the handle's dependencies, the
observers, and the timing every extension point reports (upstream's frameworkImpl fields and
its metrics recording)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from scheduler.apicalls.dispatcher import ApiDispatcher
from scheduler.cache.rows import (
    RowFilterPlugin,
    RowNormalizePlugin,
    RowScorePlugin,
)
from scheduler.framework.errors import FrameworkError
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from scheduler.framework.filter_tally import FilterTally
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MAX_TOTAL_SCORE,
    ApiClient,
    BindPlugin,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    NominatedPodsFilterPlugin,
    PermitPlugin,
    PlacementFeasiblePlugin,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
    Plugin,
    PodGroupPostFilterPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    Preemption,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    SnapshotLister,
)
from scheduler.framework.runtime.batch import (
    BatchHandle,
    BatchMetrics,
    OpportunisticBatch,
    PodSigner,
)
from scheduler.framework.status import Status
from scheduler.framework.waiting_pods import WaitingPods
from scheduler.listers.cluster_objects import ClusterObjects

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.framework.extender import Extender

# Upstream caps a Permit Wait at 15 minutes.
MAX_PERMIT_TIMEOUT = 15 * 60.0

# Plugins that do not say which events could help get every event (upstream's allClusterEvents).
ALL_EVENTS = (ClusterEventWithHint(ClusterEvent(EventResource.WILDCARD, ActionType.ALL)),)


class Nominator(Protocol):
    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodView]: ...


class FrameworkObserver(Protocol):
    """Timing hooks for metrics and tracing (point names as upstream's metric labels)."""

    def on_extension_point(self, point: str, status: Status, seconds: float) -> None: ...

    def on_plugin(self, point: str, plugin: str, status: Status, seconds: float) -> None: ...

    def on_plugin_evaluated(self, point: str, plugin: str, count: int) -> None:
        """`plugin` ran on `count` nodes (PreFilter / PreScore: once per pod), as upstream's
        scheduler_plugin_evaluation_total counts: every run, never sampled, skips excluded."""
        ...

    def on_permit_wait(self, result: str, seconds: float) -> None:
        """A pod waited on Permit for `seconds`; `result` is the code the wait ended with."""
        ...


class CycleTracer(Protocol):
    """Per-attempt tracing hooks, carried in the attempt's CycleState (``state.tracer``) so
    that concurrent binding tasks report to their own attempt. Times are the framework clock's
    seconds.

    While a tracer is present the runtime times every plugin (``record_plugin_metrics`` is set);
    ``sample_plugin_metrics`` says whether those timings also go to the plugin metrics, which
    upstream samples.
    """

    sample_plugin_metrics: bool

    def on_extension_point(self, point: str, status: Status, start: float, end: float) -> None: ...

    def on_plugin(
        self, point: str, plugin: str, status: Status, seconds: float, end: float
    ) -> None: ...


class NoopObserver:
    def on_extension_point(self, point: str, status: Status, seconds: float) -> None:
        pass

    def on_plugin(self, point: str, plugin: str, status: Status, seconds: float) -> None:
        pass

    def on_plugin_evaluated(self, point: str, plugin: str, count: int) -> None:
        pass

    def on_permit_wait(self, result: str, seconds: float) -> None:
        pass


class _NoNominations:
    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodView]:
        return ()

    def has_nominated_pods(self) -> bool:
        return False

    def nominated_node_names(self) -> list[str]:
        return []


@dataclass(frozen=True, slots=True)
class _Capabilities:
    """Optional protocols each plugin implements, checked once: isinstance against a
    runtime-checkable Protocol walks its attributes, too slow for every cycle."""

    row_filter: frozenset[str]
    row_score: frozenset[str]
    row_normalize: frozenset[str]
    nominated_pods_filter: frozenset[str]
    enqueue_extensions: frozenset[str]

    @classmethod
    def of(cls, plugins: Iterable[Plugin]) -> _Capabilities:
        plugins = list(plugins)

        def having(protocol: type) -> frozenset[str]:
            return frozenset(p.name for p in plugins if isinstance(p, protocol))

        return cls(
            having(RowFilterPlugin),
            having(RowScorePlugin),
            having(RowNormalizePlugin),
            having(NominatedPodsFilterPlugin),
            having(EnqueueExtensions),
        )


@dataclass(slots=True)
class HandleDeps:
    """What the framework needs from the scheduler to serve plugins."""

    snapshot: Callable[[], SnapshotLister]
    client: ApiClient
    nominator: Nominator = field(default_factory=_NoNominations)
    parallelism: int = 16
    clock: Callable[[], float] = time.perf_counter  # for durations only
    observer: FrameworkObserver = field(default_factory=NoopObserver)
    # Whether attempts may carry a CycleTracer; False keeps the untraced path free of lookups.
    trace_cycles: bool = False
    cluster_objects: ClusterObjects = field(default_factory=ClusterObjects)
    rng: random.Random = field(default_factory=random.Random)
    # Carries out preemptions' API calls after the cycle (the scheduler's; tests record them).
    start_preemption: Callable[[Preemption], None] = lambda preemption: None
    # The configured scheduler extenders, in calling order (preemption asks those that
    # support it, as upstream's callExtenders).
    extenders: Sequence[Extender] = ()
    # The informer's pod by namespace and name (upstream's pod lister); None: not known here.
    pod_lister: Callable[[str, str], PodView | None] | None = None
    # (plugin, event, hint "Queue" / "QueueSkip" / "Error", seconds) per queueing hint call:
    # scheduler_queueing_hint_execution_duration_seconds.
    hint_observer: Callable[[str, ClusterEvent, str, float], None] | None = None
    # Feature gate OpportunisticBatching (upstream: beta, on by default since v1.35).
    opportunistic_batching: bool = True
    # Where the batch's metrics go (scheduler_batch_*); None: nowhere.
    batch_metrics: BatchMetrics | None = None
    # The --feature-gates values plugins read (DynamicResources); empty: every gate at its
    # default.
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    # Moves pods to activeQ (upstream's Handle.Activate, the PodActivator); None where no
    # queue is to be woken (tests, the policy lab, what-if).
    activate: Callable[[Sequence[PodView]], None] | None = None
    # SchedulerAsyncAPICalls on: the dispatcher DefaultBinder sends the binding through
    # (upstream's Handle.APICacher()); None: plugins make their calls themselves.
    api_dispatcher: ApiDispatcher | None = None


def _error(message: str, plugin: str = "") -> Status:
    return Status.error(message, plugin=plugin)


class FrameworkCore:
    """What every part of the runtime shares: the profile's plugins by extension point,
    the handle's dependencies, and the timing of extension points and plugins."""

    def __init__(
        self,
        profile_name: str,
        plugins_by_point: Mapping[str, Sequence[tuple[Plugin, int]]],
        deps: HandleDeps,
    ) -> None:
        self._profile_name = profile_name
        self._deps = deps
        self._now = deps.clock  # called several times per plugin: no wrapper frame
        self.observer = deps.observer
        self._trace_cycles = deps.trace_cycles
        self.waiting_pods = WaitingPods()

        def at(point: str) -> list[Any]:
            return [plugin for plugin, _ in plugins_by_point.get(point, ())]

        self.pre_enqueue_plugins: list[PreEnqueuePlugin] = at("preEnqueue")
        self.queue_sort_plugins: list[QueueSortPlugin] = at("queueSort")
        self.pre_filter_plugins: list[PreFilterPlugin] = at("preFilter")
        self.filter_plugins: list[FilterPlugin] = at("filter")
        self.post_filter_plugins: list[PostFilterPlugin] = at("postFilter")
        self.pre_score_plugins: list[PreScorePlugin] = at("preScore")
        self.score_plugins: list[ScorePlugin] = at("score")
        self.reserve_plugins: list[ReservePlugin] = at("reserve")
        self.permit_plugins: list[PermitPlugin] = at("permit")
        self.pre_bind_plugins: list[PreBindPlugin] = at("preBind")
        self.bind_plugins: list[BindPlugin] = at("bind")
        self.post_bind_plugins: list[PostBindPlugin] = at("postBind")
        self.placement_generate_plugins: list[PlacementGeneratePlugin] = at("placementGenerate")
        self.placement_score_plugins: list[PlacementScorePlugin] = at("placementScore")
        self.placement_feasible_plugins: list[PlacementFeasiblePlugin] = at("placementFeasible")
        self.pod_group_post_filter_plugins: list[PodGroupPostFilterPlugin] = at(
            "podGroupPostFilter"
        )

        # Upstream: weight 0 means 1; the total must not overflow MaxTotalScore.
        self.score_weights: dict[str, int] = {
            plugin.name: weight or 1 for plugin, weight in plugins_by_point.get("score", ())
        }
        if MAX_NODE_SCORE * sum(self.score_weights.values()) > MAX_TOTAL_SCORE:
            raise FrameworkError("total score of Score plugins could overflow")
        self.placement_score_weights: dict[str, int] = {
            plugin.name: weight or 1
            for plugin, weight in plugins_by_point.get("placementScore", ())
        }
        if MAX_NODE_SCORE * sum(self.placement_score_weights.values()) > MAX_TOTAL_SCORE:
            raise FrameworkError("total score of PlacementScore plugins could overflow")

        self.plugins: dict[str, Plugin] = {}
        for entries in plugins_by_point.values():
            for plugin, _ in entries:
                self.plugins.setdefault(plugin.name, plugin)
        self._capabilities = _Capabilities.of(self.plugins.values())
        # the plugins' EnqueueExtensions registrations, asked once (Framework.events_to_register)
        self._registrations: dict[str, tuple[ClusterEventWithHint, ...]] | None = None
        # Opportunistic batching (batch.py): the signer over the points a signature covers.
        self.pod_signer = PodSigner(
            [
                *self.pre_filter_plugins, *self.filter_plugins,
                *self.pre_score_plugins, *self.score_plugins,
            ],
            has_extenders=bool(deps.extenders),
            clock=deps.clock,
            observer=self.observer,
        )  # fmt: skip
        self.batch: OpportunisticBatch | None = None
        if deps.opportunistic_batching:
            self.batch = OpportunisticBatch(
                cast("BatchHandle", self), self.pod_signer.sign, deps.clock, deps.batch_metrics
            )

    # ---- timing -------------------------------------------------------------------------

    def now(self) -> float:
        """The injected clock (seconds), for timing extension points."""
        return self._deps.clock()

    def cycle_tracer(self, state: CycleState) -> CycleTracer | None:
        """The attempt's tracer, or None when the attempt is not traced."""
        if not self._trace_cycles:
            return None
        tracer: CycleTracer | None = state.tracer
        return tracer

    def record_extension_point(
        self, point: str, status: Status, start: float, state: CycleState | None = None
    ) -> None:
        """An extension point ended (``start`` from :meth:`now`): metrics, and the trace."""
        end = self._now()
        seconds = end - start
        self.observer.on_extension_point(point, status, seconds)
        if state is not None:
            kept = state.point_seconds  # the web view's timings: the metric's own float, kept
            if kept is not None:
                kept.append(point)
                kept.append(seconds)
        if self._trace_cycles and state is not None:
            tracer = self.cycle_tracer(state)
            if tracer is not None:
                tracer.on_extension_point(point, status, start, end)

    def _point_done(
        self, point: str, status: Status, start: float, state: CycleState | None = None
    ) -> None:
        self.record_extension_point(point, status, start, state)

    def _plugin_done(
        self, point: str, plugin: str, status: Status, start: float, state: CycleState
    ) -> None:
        end = self._now()
        seconds = end - start
        tracer: CycleTracer | None = state.tracer if self._trace_cycles else None
        if tracer is None:
            self.observer.on_plugin(point, plugin, status, seconds)
            return
        tracer.on_plugin(point, plugin, status, seconds, end)
        if tracer.sample_plugin_metrics:
            self.observer.on_plugin(point, plugin, status, seconds)

    def filter_tally(self, state: CycleState) -> FilterTally | None:
        """A tally for this attempt's Filter pass when the attempt is traced, else None."""
        tracer = self.cycle_tracer(state)
        return None if tracer is None else FilterTally(tracer)

    def _filter_plugin_done(
        self,
        plugin: str,
        status: Status,
        start: float,
        state: CycleState,
        tally: FilterTally | None,
    ) -> None:
        """A Filter plugin call ended: into the pass's tally when traced (the span is recorded
        whole at the end of the pass), else as any plugin."""
        if tally is None:
            self._plugin_done("Filter", plugin, status, start, state)
            return
        end = self._now()
        tally.timed(plugin, end - start, end)
        if tally.sample_plugin_metrics:
            self.observer.on_plugin("Filter", plugin, status, end - start)

    def record_filter_point(
        self,
        state: CycleState,
        status: Status,
        start: float,
        tally: FilterTally | None,
        feasible: int,
    ) -> None:
        """A Filter pass ended with `status` (Success when some node passed): metrics, and
        the Filter span (from the tally when there is one)."""
        if tally is None:
            self.record_extension_point("Filter", status, start, state)
            return
        end = self._now()
        self.observer.on_extension_point("Filter", status, end - start)
        tally.record(status, start, end, feasible)
