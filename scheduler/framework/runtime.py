"""The framework runtime for one profile (upstream's frameworkImpl, runtime/framework.go).

A `Framework` owns one instance of each enabled plugin (shared across the extension points it
implements), runs them in configured order with upstream's status semantics, and implements the
`Handle` plugins receive. Messages of wrapped errors follow upstream's wording so logs and
conditions read the same.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
import numpy.typing as npt

from scheduler.cache.rows import (
    RowFilterPlugin,
    RowNormalizePlugin,
    Rows,
    RowScorePlugin,
    RowVerdict,
    verdict_per_node,
)
from scheduler.framework.errors import FrameworkError
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.filter_tally import FilterTally
from scheduler.framework.interface import (
    EXTENSION_POINT_METHODS,
    MAX_NODE_SCORE,
    MAX_TOTAL_SCORE,
    MIN_NODE_SCORE,
    ApiClient,
    BindPlugin,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    NodeScore,
    NodeToStatus,
    NominatedPodsFilterPlugin,
    NominatedPodsVerdict,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    Preemption,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
    SnapshotLister,
)
from scheduler.framework.registry import Registry
from scheduler.framework.results import NodePluginScores, PluginScore
from scheduler.framework.status import Code, Status
from scheduler.framework.waiting_pods import WaitingPod, WaitingPods
from scheduler.listers.cluster_objects import ClusterObjects

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.cache.node_table import IntArray, NodeTable
    from scheduler.extenders.http import HTTPExtender
    from scheduler.queue.types import QueuedPodInfo

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


@dataclass(slots=True)
class RowRejections:
    """Rows one Filter plugin rejected in a row pass: `positions` index the rows passed in."""

    plugin: str
    positions: npt.NDArray[np.intp]
    verdict: RowVerdict


@dataclass(slots=True)
class RowScores:
    """Weighted scores of the rows passed to `run_score_plugins_rows`, per plugin and total."""

    plugins: list[str]
    weighted: list[IntArray]
    total: IntArray

    def node_plugin_scores(self, names: Sequence[str]) -> list[NodePluginScores]:
        """The per-node form prioritize_nodes returns (`names` of the rows, in order)."""
        columns = [
            (plugin, column.tolist())
            for plugin, column in zip(self.plugins, self.weighted, strict=True)
        ]
        return [
            NodePluginScores(name, [PluginScore(p, column[i]) for p, column in columns], total)
            for i, (name, total) in enumerate(zip(names, self.total.tolist(), strict=True))
        ]


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
    extenders: Sequence[HTTPExtender] = ()
    # The informer's pod by namespace and name (upstream's pod lister); None: not known here.
    pod_lister: Callable[[str, str], PodView | None] | None = None
    # (plugin, event, hint "Queue" / "QueueSkip" / "Error", seconds) per queueing hint call:
    # scheduler_queueing_hint_execution_duration_seconds.
    hint_observer: Callable[[str, ClusterEvent, str, float], None] | None = None


class _PostFilterRun:
    """One PostFilter run's bookkeeping, shared by the plain and the extender-aware runner:
    stop at the first Success / Unresolvable / Error, else combine the rejections."""

    __slots__ = ("_fwk", "_state", "reasons", "rejector", "result", "returned", "start")

    def __init__(self, fwk: Framework, state: CycleState) -> None:
        self._fwk = fwk
        self._state = state
        self.start = fwk.now()
        self.returned = Status.OK
        self.result: PostFilterResult | None = None
        self.reasons: list[str] = []
        self.rejector = ""

    def record(
        self, plugin: str, outcome: tuple[PostFilterResult | None, Status], plugin_start: float
    ) -> tuple[PostFilterResult | None, Status] | None:
        """The run's answer if this plugin's outcome ends it, else None."""
        plugin_result, status = outcome
        if self._state.record_plugin_metrics:
            self._fwk._plugin_done("PostFilter", plugin, status, plugin_start, self._state)
        if status.is_success:
            self.returned = status
            return plugin_result, status
        if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            self.returned = status.with_plugin(plugin)
            return plugin_result, self.returned
        if not status.is_rejected:
            self.returned = _error(status.message, plugin)
            return None, self.returned
        if plugin_result is not None:
            self.result = plugin_result
        self.reasons.extend(status.reasons)
        self.rejector = self.rejector or plugin
        return None

    def combined(self) -> tuple[PostFilterResult | None, Status]:
        self.returned = Status.unschedulable(*self.reasons, plugin=self.rejector)
        return self.result, self.returned


def _error(message: str, plugin: str = "") -> Status:
    return Status.error(message, plugin=plugin)


# Score failures in upstream's words; the per-node and the row paths must say the same.
def _score_failed(plugin: str, status: Status) -> Status:
    return _error(f'running Score plugins: plugin "{plugin}" failed with: {status.message}')


def _normalize_failed(plugin: str, status: Status) -> Status:
    return _error(
        f'running Normalize on Score plugins: plugin "{plugin}" failed with: {status.message}'
    )


def _invalid_score(plugin: str, score: int) -> Status:
    return _error(
        "applying score defaultWeights on Score plugins: "
        f'plugin "{plugin}" returns an invalid score {score}, it should '
        f"in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
    )


class Framework:
    """One profile's plugins and the logic that runs them."""

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

        # Upstream: weight 0 means 1; the total must not overflow MaxTotalScore.
        self.score_weights: dict[str, int] = {
            plugin.name: weight or 1 for plugin, weight in plugins_by_point.get("score", ())
        }
        if MAX_NODE_SCORE * sum(self.score_weights.values()) > MAX_TOTAL_SCORE:
            raise FrameworkError("total score of Score plugins could overflow")

        self.plugins: dict[str, Plugin] = {}
        for entries in plugins_by_point.values():
            for plugin, _ in entries:
                self.plugins.setdefault(plugin.name, plugin)
        self._capabilities = _Capabilities.of(self.plugins.values())

    @classmethod
    def build(
        cls,
        profile_name: str,
        registry: Registry,
        enabled: Mapping[str, Sequence[tuple[str, int]]],
        args: Mapping[str, Any],
        deps: HandleDeps,
    ) -> Framework:
        """Instantiate each enabled plugin once, as `PluginClass(args, handle)`.

        `enabled` maps configuration point names ("filter", "score", ...) to (plugin, weight)
        in order. `args` holds each plugin's decoded args; a raw mapping is decoded through the
        registry entry, and a plugin with no entry gets its defaults (`decode(None)`).
        """
        framework = cls.__new__(cls)
        instances: dict[str, Plugin] = {}
        by_point: dict[str, list[tuple[Plugin, int]]] = {}
        for point, names in enabled.items():
            if point not in EXTENSION_POINT_METHODS:
                raise FrameworkError(f"unknown extension point {point!r}")
            for name, weight in names:
                entry = registry.get(name)
                if entry is None:
                    raise FrameworkError(f"plugin {name!r} does not exist")
                if point not in entry.extension_points:
                    raise FrameworkError(f"plugin {name!r} does not extend {point} plugin")
                if name not in instances:
                    plugin_args = args.get(name)
                    if plugin_args is None or isinstance(plugin_args, Mapping):
                        plugin_args = entry.decode(plugin_args)
                    instances[name] = entry.cls(plugin_args, framework)
                by_point.setdefault(point, []).append((instances[name], weight))
        framework.__init__(profile_name, by_point, deps)  # type: ignore[misc]
        return framework

    # ---- Handle -------------------------------------------------------------------------

    @property
    def profile_name(self) -> str:
        return self._profile_name

    def snapshot(self) -> SnapshotLister:
        return self._deps.snapshot()

    @property
    def client(self) -> ApiClient:
        return self._deps.client

    @property
    def parallelism(self) -> int:
        return self._deps.parallelism

    @property
    def cluster_objects(self) -> ClusterObjects:
        return self._deps.cluster_objects

    def pod_exists(self, pod: PodView) -> bool:
        """Whether the pod is still in the informer's store (True when there is no store)."""
        lister = self._deps.pod_lister
        return lister is None or lister(pod.namespace, pod.name) is not None

    @property
    def rng(self) -> random.Random:
        return self._deps.rng

    def start_preemption(self, preemption: Preemption) -> None:
        self._deps.start_preemption(preemption)

    def extenders(self) -> Sequence[HTTPExtender]:
        return self._deps.extenders

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodView]:
        return self._deps.nominator.nominated_pods_for_node(node_name)

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def iterate_waiting_pods(self) -> Iterable[WaitingPod]:
        return iter(self.waiting_pods)

    def reject_waiting_pod(self, uid: str) -> bool:
        waiting_pod = self.waiting_pods.get(uid)
        if waiting_pod is None:
            return False
        waiting_pod.reject("", "removed")
        return True

    def has_filter_plugins(self) -> bool:
        return bool(self.filter_plugins)

    def has_post_filter_plugins(self) -> bool:
        return bool(self.post_filter_plugins)

    def has_score_plugins(self) -> bool:
        return bool(self.score_plugins)

    def list_plugins(self) -> dict[str, list[str]]:
        """Plugin names per configuration point, as configured (for /debug and logs)."""
        points: dict[str, Sequence[Plugin]] = {
            "preEnqueue": self.pre_enqueue_plugins,
            "queueSort": self.queue_sort_plugins,
            "preFilter": self.pre_filter_plugins,
            "filter": self.filter_plugins,
            "postFilter": self.post_filter_plugins,
            "preScore": self.pre_score_plugins,
            "score": self.score_plugins,
            "reserve": self.reserve_plugins,
            "permit": self.permit_plugins,
            "preBind": self.pre_bind_plugins,
            "bind": self.bind_plugins,
            "postBind": self.post_bind_plugins,
        }
        return {point: [p.name for p in plugins] for point, plugins in points.items() if plugins}

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
        self.observer.on_extension_point(point, status, end - start)
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

    # ---- queueing -----------------------------------------------------------------------

    def run_pre_enqueue_plugins(self, pod: PodView) -> Status:
        for plugin in self.pre_enqueue_plugins:
            status = plugin.pre_enqueue(pod)
            if status.is_success:
                continue
            if status.is_rejected:
                return status.with_plugin(plugin.name)
            return _error(
                f'running PreEnqueue plugin "{plugin.name}": {status.message}', plugin.name
            )
        return Status.OK

    def queue_sort_less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.queue_sort_plugins[0].less(a, b)

    def events_to_register(self) -> dict[str, tuple[ClusterEventWithHint, ...]]:
        """Events each plugin wants, by plugin name; plugins that don't say get every event."""
        registered: dict[str, tuple[ClusterEventWithHint, ...]] = {}
        for name, plugin in self.plugins.items():
            if name in self._capabilities.enqueue_extensions:
                registered[name] = tuple(cast(EnqueueExtensions, plugin).events_to_register())
            else:
                registered[name] = ALL_EVENTS
        return registered

    def queueing_hint(
        self, pod_info: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any
    ) -> QueueingHint:
        """Whether `event` may make an unschedulable pod schedulable (isPodWorthRequeuing).

        Only events registered by the plugins that rejected the pod count; a hint that raises
        counts as Queue, as upstream treats a hint error.
        """
        rejectors = pod_info.unschedulable_plugins | pod_info.pending_plugins
        if not rejectors or event.resource == EventResource.WILDCARD:
            return QueueingHint.QUEUE
        observe = self._deps.hint_observer
        for name in rejectors:
            plugin = self.plugins.get(name)
            if plugin is None:
                continue
            if name in self._capabilities.enqueue_extensions:
                registrations: Sequence[ClusterEventWithHint] = cast(
                    EnqueueExtensions, plugin
                ).events_to_register()
            else:
                registrations = ALL_EVENTS
            for registration in registrations:
                if not event.matches(registration.event):
                    continue
                if registration.hint is None:
                    if observe is not None:  # upstream times its default hint too
                        observe(name, event, QueueingHint.QUEUE.value, 0.0)
                    return QueueingHint.QUEUE
                start = time.perf_counter()
                try:
                    hint = registration.hint(pod_info.pod, old, new)
                except Exception:
                    if observe is not None:
                        observe(name, event, "Error", time.perf_counter() - start)
                    return QueueingHint.QUEUE
                if observe is not None:
                    observe(name, event, hint.value, time.perf_counter() - start)
                if hint == QueueingHint.QUEUE:
                    return QueueingHint.QUEUE
        return QueueingHint.SKIP

    # ---- PreFilter / Filter -------------------------------------------------------------

    def run_pre_filter_plugins(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status, set[str]]:
        """(merged node subset or None for all, status, plugins that restricted the nodes).

        Skip puts the plugin in state.skip_filter_plugins. UnschedulableAndUnresolvable stops at
        once; Unschedulable is remembered while the others run (so preemption can use their
        state). A merged subset that is empty rejects the pod as upstream words it.
        """
        start = self._now()
        skip: set[str] = set()
        result: PreFilterResult | None = None
        plugins_with_nodes: list[str] = []
        returned = Status.OK
        try:
            for plugin in self.pre_filter_plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                plugin_result, status = plugin.pre_filter(state, pod, nodes)
                if state.record_plugin_metrics:
                    self._plugin_done("PreFilter", plugin.name, status, plugin_start, state)
                if status.is_skip:
                    skip.add(plugin.name)
                    continue
                self.observer.on_plugin_evaluated("PreFilter", plugin.name, 1)
                if not status.is_success:
                    status = status.with_plugin(plugin.name)
                    if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                        returned = status
                        return None, status, set()
                    if status.code == Code.UNSCHEDULABLE:
                        returned = status
                        continue
                    returned = _error(
                        f'running PreFilter plugin "{plugin.name}": {status.message}', plugin.name
                    )
                    return None, returned, set()
                if plugin_result is not None and not plugin_result.all_nodes():
                    plugins_with_nodes.append(plugin.name)
                result = plugin_result if result is None else result.merge(plugin_result)
                if result is not None and result.node_names is not None and not result.node_names:
                    if len(plugins_with_nodes) == 1:
                        message = f"node(s) didn't satisfy plugin {plugins_with_nodes[0]}"
                    else:
                        names = " ".join(plugins_with_nodes)
                        message = f"node(s) didn't satisfy plugin(s) [{names}] simultaneously"
                    returned = Status.unresolvable(message)
                    return result, returned, set(plugins_with_nodes)
            return result, returned, set(plugins_with_nodes)
        finally:
            state.skip_filter_plugins = skip
            self._point_done("PreFilter", returned, start, state)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodView, pod_to_add: PodView, node_info: NodeInfo
    ) -> Status:
        return self._run_pre_filter_extension("AddPod", state, pod, pod_to_add, node_info)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodView, pod_to_remove: PodView, node_info: NodeInfo
    ) -> Status:
        return self._run_pre_filter_extension("RemovePod", state, pod, pod_to_remove, node_info)

    def _run_pre_filter_extension(
        self, op: str, state: CycleState, pod: PodView, other: PodView, node_info: NodeInfo
    ) -> Status:
        for plugin in self.pre_filter_plugins:
            if plugin.name in state.skip_filter_plugins:
                continue
            extensions = plugin.pre_filter_extensions()
            if extensions is None:
                continue
            plugin_start = self._now() if state.record_plugin_metrics else 0.0
            if op == "AddPod":
                status = extensions.add_pod(state, pod, other, node_info)
            else:
                status = extensions.remove_pod(state, pod, other, node_info)
            if state.record_plugin_metrics:
                self._plugin_done(
                    f"PreFilterExtension{op}", plugin.name, status, plugin_start, state
                )
            if not status.is_success:
                return _error(f'running {op} on PreFilter plugin "{plugin.name}": {status.message}')
        return Status.OK

    def run_filter_plugins(
        self,
        state: CycleState,
        pod: PodView,
        node_info: NodeInfo,
        tally: FilterTally | None = None,
    ) -> Status:
        """The first non-success Filter status, attributed to its plugin; non-rejections → Error.

        `tally`: the Filter pass this node belongs to (traced attempts), which times plugins."""
        skip = state.skip_filter_plugins
        record = state.record_plugin_metrics
        evaluated = self.observer.on_plugin_evaluated
        for plugin in self.filter_plugins:
            if plugin.name in skip:
                continue
            evaluated("Filter", plugin.name, 1)
            if record:
                plugin_start = self._now()
                status = plugin.filter(state, pod, node_info)
                self._filter_plugin_done(plugin.name, status, plugin_start, state, tally)
            else:
                status = plugin.filter(state, pod, node_info)
            if not status.is_success:
                return self._filter_failure(plugin.name, status)
        return Status.OK

    @staticmethod
    def _filter_failure(plugin: str, status: Status) -> Status:
        if not status.is_rejected:
            return _error(f'running "{plugin}" filter plugin: {status.message}', plugin)
        return status.with_plugin(plugin)

    # ---- Filter over NodeTable rows (the fast path) --------------------------------------

    def has_nominated_pods(self) -> bool:
        """Whether any pod is nominated anywhere (a nominator that can't tell: assume so)."""
        probe = getattr(self._deps.nominator, "has_nominated_pods", None)
        return True if probe is None else bool(probe())

    def can_list_nominated_nodes(self) -> bool:
        return hasattr(self._deps.nominator, "nominated_node_names")

    def nodes_needing_nominated_pass(self, pod: PodView) -> list[str] | None:
        """The nodes where filtering `pod` must consider pods nominated there (see
        needs_nominated_pods_pass); None when the nominator cannot list its nodes."""
        lister = getattr(self._deps.nominator, "nominated_node_names", None)
        if lister is None:
            return None
        names: list[str] = lister()
        return [name for name in names if self.needs_nominated_pods_pass(pod, name)]

    def per_node_filters(self, state: CycleState) -> list[str]:
        """The Filter plugins that run this cycle without a row method of their own: the row
        pass asks them per node, through the generic adapter (`verdict_per_node`)."""
        row_filter = self._capabilities.row_filter
        skip = state.skip_filter_plugins
        return [
            p.name for p in self.filter_plugins if p.name not in row_filter and p.name not in skip
        ]

    def run_filter_plugins_rows(
        self,
        state: CycleState,
        pod: PodView,
        table: NodeTable,
        rows: Rows,
        tally: FilterTally | None = None,
    ) -> tuple[npt.NDArray[np.intp], list[RowRejections]]:
        """Positions (into `rows`) that pass every Filter, and each plugin's rejections.

        As run_filter_plugins per node: plugins run in order and a row leaves at its first
        rejection. Statuses are left for the caller to build, except that a sampled plugin
        timing is labelled with the code of the plugin's first rejected row in the call
        (Success: none rejected).

        A plugin without `filter_rows` (an out-of-tree plugin, say), or declining it for this
        pod, goes through the generic per-node adapter: its `filter` on each candidate row's
        NodeInfo, the answers kept as a RowVerdict, so it is counted, timed, attributed and
        traced as any row method. A non-rejection it returns (an error) is not reported here:
        the caller then hands the cycle to the per-node path, which reports it in its words.
        """
        alive: npt.NDArray[np.intp] = np.arange(len(rows), dtype=np.intp)
        rejections: list[RowRejections] = []
        record = state.record_plugin_metrics
        skip = state.skip_filter_plugins
        row_filter = self._capabilities.row_filter
        for plugin in self.filter_plugins:
            if not len(alive):
                break
            if plugin.name in skip:
                continue
            plugin_start = self._now() if record else 0.0
            candidates = rows[alive]
            self.observer.on_plugin_evaluated("Filter", plugin.name, len(candidates))
            verdict = None
            if plugin.name in row_filter:
                verdict = cast(RowFilterPlugin, plugin).filter_rows(state, pod, table, candidates)
            if verdict is None:  # the generic per-node adapter
                verdict = verdict_per_node(plugin.filter, state, pod, table, candidates)
            passed = verdict.passed
            all_passed = bool(passed.all())
            if record:
                status = Status.OK
                if not all_passed:
                    status = verdict.reject(int(candidates[int(np.argmin(passed))]))
                self._filter_plugin_done(plugin.name, status, plugin_start, state, tally)
            if not all_passed:
                rejections.append(RowRejections(plugin.name, alive[~passed], verdict))
                alive = alive[passed]
        return alive, rejections

    def needs_nominated_pods_pass(self, pod: PodView, node_name: str) -> bool:
        """Whether filtering on this node must consider pods nominated to it."""
        return any(
            nominated.priority >= pod.priority and nominated.uid != pod.uid
            for nominated in self._deps.nominator.nominated_pods_for_node(node_name)
        )

    def nominated_pods_that_count(self, pod: PodView, node_name: str) -> list[PodView]:
        """The pods nominated to `node_name` that filtering `pod` must add: those of equal or
        higher priority, other than the pod itself."""
        return [
            other
            for other in self._deps.nominator.nominated_pods_for_node(node_name)
            if other.priority >= pod.priority and other.uid != pod.uid
        ]

    def nominated_pods_verdict(
        self, state: CycleState, pod: PodView
    ) -> NominatedPodsVerdict | None:
        """The one-step verdict on nodes with nominated pods that a Filter plugin offers for
        this attempt (NominatedPodsFilterPlugin), or None: filter those nodes with and without
        the pods (run_filter_plugins_with_nominated_pods)."""
        offering = self._capabilities.nominated_pods_filter
        skip = state.skip_filter_plugins
        for plugin in self.filter_plugins:
            if plugin.name in offering and plugin.name not in skip:
                verdict = cast(NominatedPodsFilterPlugin, plugin).nominated_pods_verdict(
                    self, state, pod
                )
                if verdict is not None:
                    return verdict
        return None

    def run_filter_plugins_with_nominated_pods(
        self,
        state: CycleState,
        pod: PodView,
        node_info: NodeInfo,
        tally: FilterTally | None = None,
    ) -> Status:
        """Filters with equal-or-higher priority nominated pods added, then (if that passed and
        any were added) without them: the pod must fit both ways, as upstream decides."""
        status = Status.OK
        pods_added = False
        for attempt in range(2):
            state_to_use, info_to_use = state, node_info
            if attempt == 0:
                added = self._add_nominated_pods(state, pod, node_info)
                if isinstance(added, Status):
                    return added
                pods_added, state_to_use, info_to_use = added
            elif not pods_added or not status.is_success:
                break
            status = self.run_filter_plugins(state_to_use, pod, info_to_use, tally)
            if not status.is_success and not status.is_rejected:
                return status
        return status

    def _add_nominated_pods(
        self, state: CycleState, pod: PodView, node_info: NodeInfo
    ) -> tuple[bool, CycleState, NodeInfo] | Status:
        nominated = self.nominated_pods_that_count(pod, node_info.node_name)
        if not nominated:
            return False, state, node_info
        info_out = node_info.snapshot()
        state_out = state.clone()
        for other in nominated:
            info_out.add_pod(other)
            status = self.run_pre_filter_extension_add_pod(state_out, pod, other, info_out)
            if not status.is_success:
                return status
        return True, state_out, info_out

    def run_post_filter_plugins(
        self, state: CycleState, pod: PodView, filtered: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Until the first Success / Unresolvable / Error; otherwise the rejections combined."""
        run = _PostFilterRun(self, state)
        try:
            for plugin in self.post_filter_plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                outcome = plugin.post_filter(state, pod, filtered)
                done = run.record(plugin.name, outcome, plugin_start)
                if done is not None:
                    return done
            return run.combined()
        finally:
            self._point_done("PostFilter", run.returned, run.start, state)

    async def run_post_filter_plugins_with_extenders(
        self, state: CycleState, pod: PodView, filtered: NodeToStatus, extenders: Sequence[Any]
    ) -> tuple[PostFilterResult | None, Status]:
        """run_post_filter_plugins when extenders that support preemption are interested in
        the pod: plugins offering `post_filter_with_extenders` (DefaultPreemption) are awaited
        with them, as upstream's preemption calls its extenders."""
        run = _PostFilterRun(self, state)
        try:
            for plugin in self.post_filter_plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                with_extenders = getattr(plugin, "post_filter_with_extenders", None)
                if with_extenders is not None:
                    outcome = await with_extenders(state, pod, filtered, extenders)
                else:
                    outcome = plugin.post_filter(state, pod, filtered)
                done = run.record(plugin.name, outcome, plugin_start)
                if done is not None:
                    return done
            return run.combined()
        finally:
            self._point_done("PostFilter", run.returned, run.start, state)

    # ---- Score --------------------------------------------------------------------------

    def run_pre_score_plugins(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> Status:
        start = self._now()
        skip: set[str] = set()
        returned = Status.OK
        try:
            for plugin in self.pre_score_plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                status = plugin.pre_score(state, pod, nodes)
                if state.record_plugin_metrics:
                    self._plugin_done("PreScore", plugin.name, status, plugin_start, state)
                if status.is_skip:
                    skip.add(plugin.name)
                    continue
                self.observer.on_plugin_evaluated("PreScore", plugin.name, 1)
                if not status.is_success:
                    returned = _error(f'running PreScore plugin "{plugin.name}": {status.message}')
                    return returned
            return returned
        finally:
            state.skip_score_plugins = skip
            self._point_done("PreScore", returned, start, state)

    def run_score_plugins(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodePluginScores], Status]:
        """Per-node weighted plugin scores and totals; scores outside [0, 100] after
        normalizing are an error, as upstream."""
        start = self._now()
        returned = Status.OK
        try:
            plugins = [p for p in self.score_plugins if p.name not in state.skip_score_plugins]
            per_plugin: list[list[NodeScore]] = []
            for plugin in plugins:
                scores, status = self._score_one_plugin(state, pod, plugin, nodes)
                if not status.is_success:
                    returned = _score_failed(plugin.name, status)
                    return [], returned
                per_plugin.append(scores)
            status = self._normalize_scores(state, pod, plugins, per_plugin)
            if not status.is_success:
                returned = status
                return [], returned
            results = [NodePluginScores(info.node_name) for info in nodes]
            for plugin, scores in zip(plugins, per_plugin, strict=True):
                weight = self.score_weights.get(plugin.name, 1)
                for node_scores, node_score in zip(results, scores, strict=True):
                    score = node_score.score
                    if score > MAX_NODE_SCORE or score < MIN_NODE_SCORE:
                        returned = _invalid_score(plugin.name, score)
                        return [], returned
                    weighted = score * weight
                    node_scores.scores.append(PluginScore(plugin.name, weighted))
                    node_scores.total_score += weighted
            return results, returned
        finally:
            self._point_done("Score", returned, start, state)

    def _normalize_scores(
        self,
        state: CycleState,
        pod: PodView,
        plugins: Sequence[ScorePlugin],
        per_plugin: Sequence[list[NodeScore]],
    ) -> Status:
        """Score extensions' NormalizeScore over NodeScores, in place."""
        return self._normalize_each(
            state,
            plugins,
            lambda index, plugin, extensions: extensions.normalize_score(
                state, pod, per_plugin[index]
            ),
        )

    def _normalize_each(
        self,
        state: CycleState,
        plugins: Sequence[ScorePlugin],
        normalize: Callable[[int, ScorePlugin, ScoreExtensions], Status],
    ) -> Status:
        """The NormalizeScore frame both score paths share: ``normalize(index, plugin,
        extensions)`` for each plugin with score extensions, timed per plugin, stopping at the
        first failure; a separate span (as upstream's) when traced."""
        tracer = self.cycle_tracer(state) if self._trace_cycles else None
        start = self._now() if tracer is not None else 0.0
        returned = Status.OK
        for index, plugin in enumerate(plugins):
            extensions = plugin.score_extensions()
            if extensions is None:
                continue
            plugin_start = self._now() if state.record_plugin_metrics else 0.0
            status = normalize(index, plugin, extensions)
            if state.record_plugin_metrics:
                self._plugin_done(
                    "ScoreExtensionNormalize", plugin.name, status, plugin_start, state
                )
            if not status.is_success:
                returned = _normalize_failed(plugin.name, status)
                break
        if tracer is not None:
            tracer.on_extension_point("NormalizeScore", returned, start, self._now())
        return returned

    def _score_one_plugin(
        self, state: CycleState, pod: PodView, plugin: ScorePlugin, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodeScore], Status]:
        record = state.record_plugin_metrics
        plugin_start = self._now() if record else 0.0
        status = Status.OK
        scores: list[NodeScore] = []
        for info in nodes:
            value, status = plugin.score(state, pod, info)
            if not status.is_success:
                break
            scores.append(NodeScore(info.node_name, value))
        ran = len(scores) + (0 if status.is_success else 1)
        self.observer.on_plugin_evaluated("Score", plugin.name, ran)
        if record:
            self._plugin_done("Score", plugin.name, status, plugin_start, state)
        if not status.is_success:
            return [], status
        return scores, Status.OK

    # ---- Score over NodeTable rows (the fast path) ---------------------------------------

    def run_score_plugins_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> tuple[RowScores | None, Status]:
        """run_score_plugins over table rows: the same scores, errors and messages.

        A plugin without `score_rows` (or declining it for this pod) goes through the generic
        per-node adapter: `score` on each row's NodeInfo, as run_score_plugins calls it (the
        same evaluation counts, timings and error messages), and NormalizeScore over
        NodeScores when it has no `normalize_rows` (`_normalize_rows`)."""
        start = self._now()
        returned = Status.OK
        try:
            plugins = [p for p in self.score_plugins if p.name not in state.skip_score_plugins]
            infos: list[NodeInfo] | None = None
            per_plugin: list[IntArray] = []
            for plugin in plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                values = None
                if plugin.name in self._capabilities.row_score:
                    values = cast(RowScorePlugin, plugin).score_rows(state, pod, table, rows)
                    if values is not None:
                        self.observer.on_plugin_evaluated("Score", plugin.name, len(rows))
                if values is None:  # the generic per-node adapter
                    if infos is None:
                        infos = [table.infos[row] for row in rows.tolist()]
                    scores, status = self._score_one_plugin(state, pod, plugin, infos)
                    if not status.is_success:
                        returned = _score_failed(plugin.name, status)
                        return None, returned
                    values = np.fromiter(
                        (s.score for s in scores), dtype=np.int64, count=len(scores)
                    )
                elif state.record_plugin_metrics:
                    self._plugin_done("Score", plugin.name, Status.OK, plugin_start, state)
                per_plugin.append(values)
            status = self._normalize_rows(state, pod, table, rows, plugins, per_plugin)
            if not status.is_success:
                returned = status
                return None, returned
            total = np.zeros(len(rows), dtype=np.int64)
            weighted: list[IntArray] = []
            for plugin, values in zip(plugins, per_plugin, strict=True):
                invalid = np.flatnonzero((values > MAX_NODE_SCORE) | (values < MIN_NODE_SCORE))
                if len(invalid):
                    score = int(values[invalid[0]])
                    returned = _invalid_score(plugin.name, score)
                    return None, returned
                column = values * self.score_weights.get(plugin.name, 1)
                weighted.append(column)
                total += column
            return RowScores([p.name for p in plugins], weighted, total), returned
        finally:
            self._point_done("Score", returned, start, state)

    def _normalize_rows(
        self,
        state: CycleState,
        pod: PodView,
        table: NodeTable,
        rows: Rows,
        plugins: Sequence[ScorePlugin],
        per_plugin: list[IntArray],
    ) -> Status:
        """NormalizeScore in place of `per_plugin`; plugins without a row path get NodeScores."""

        def normalize(index: int, plugin: ScorePlugin, extensions: ScoreExtensions) -> Status:
            if plugin.name in self._capabilities.row_normalize:
                per_plugin[index] = cast(RowNormalizePlugin, plugin).normalize_rows(
                    state, pod, per_plugin[index]
                )
                return Status.OK
            names = [table.names[row] for row in rows.tolist()]
            scores = [
                NodeScore(name, value)
                for name, value in zip(names, per_plugin[index].tolist(), strict=True)
            ]
            status = extensions.normalize_score(state, pod, scores)
            per_plugin[index] = np.fromiter(
                (s.score for s in scores), dtype=np.int64, count=len(scores)
            )
            return status

        return self._normalize_each(state, plugins, normalize)

    # ---- Reserve / Permit ---------------------------------------------------------------

    def run_reserve_plugins_reserve(
        self, state: CycleState, pod: PodView, node_name: str
    ) -> Status:
        start = self._now()
        returned = Status.OK
        try:
            for plugin in self.reserve_plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                status = plugin.reserve(state, pod, node_name)
                if state.record_plugin_metrics:
                    self._plugin_done("Reserve", plugin.name, status, plugin_start, state)
                if not status.is_success:
                    if status.is_rejected:
                        returned = status.with_plugin(plugin.name)
                    else:
                        returned = _error(
                            f'running Reserve plugin "{plugin.name}": {status.message}'
                        )
                    return returned
            return returned
        finally:
            self._point_done("Reserve", returned, start, state)

    def run_reserve_plugins_unreserve(
        self, state: CycleState, pod: PodView, node_name: str
    ) -> None:
        """Unreserve in the reverse order of Reserve."""
        start = self._now()
        for plugin in reversed(self.reserve_plugins):
            plugin_start = self._now() if state.record_plugin_metrics else 0.0
            plugin.unreserve(state, pod, node_name)
            if state.record_plugin_metrics:
                self._plugin_done("Unreserve", plugin.name, Status.OK, plugin_start, state)
        self._point_done("Unreserve", Status.OK, start, state)

    def run_permit_plugins(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        """Success, a rejection (attributed), an Error, or Wait: the pod is then parked in
        `waiting_pods` with one timer per waiting plugin (call inside the event loop)."""
        start = self._now()
        returned = Status.OK
        try:
            waits: dict[str, float] = {}
            for plugin in self.permit_plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                status, timeout = plugin.permit(state, pod, node_name)
                if state.record_plugin_metrics:
                    self._plugin_done("Permit", plugin.name, status, plugin_start, state)
                if status.is_success:
                    continue
                if status.is_rejected:
                    returned = status.with_plugin(plugin.name)
                    return returned
                if status.is_wait:
                    waits[plugin.name] = min(timeout, MAX_PERMIT_TIMEOUT)
                    continue
                returned = _error(
                    f'running Permit plugin "{plugin.name}": {status.message}', plugin.name
                )
                return returned
            if waits:
                self.waiting_pods.add(WaitingPod(pod, waits))
                returned = Status.wait(
                    f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"'
                )
            return returned
        finally:
            self._point_done("Permit", returned, start, state)

    async def wait_on_permit(self, pod: PodView) -> Status:
        """Block while the pod waits on Permit; Success, the rejection, or an Error."""
        waiting_pod = self.waiting_pods.get(pod.uid)
        if waiting_pod is None:
            return Status.OK
        start = self._now()
        try:
            status = await waiting_pod.wait()
        finally:
            self.waiting_pods.remove(pod.uid)
        # upstream's WaitOnPermit: the code the wait ended with (Success, Unschedulable...)
        self.observer.on_permit_wait(status.code_name, self._now() - start)
        if status.is_success or status.is_rejected:
            return status
        return _error(f"waiting on permit for pod: {status.message}", status.plugin)

    # ---- binding cycle ------------------------------------------------------------------

    async def run_pre_bind_plugins(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        start = self._now()
        returned = Status.OK
        try:
            for plugin in self.pre_bind_plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                status = await plugin.pre_bind(state, pod, node_name)
                if state.record_plugin_metrics:
                    self._plugin_done("PreBind", plugin.name, status, plugin_start, state)
                if not status.is_success:
                    if status.is_rejected:
                        returned = status.with_plugin(plugin.name)
                    else:
                        returned = _error(
                            f'running PreBind plugin "{plugin.name}": {status.message}'
                        )
                    return returned
            return returned
        finally:
            self._point_done("PreBind", returned, start, state)

    async def run_bind_plugins(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        """The first bind plugin that does not Skip decides; Skip when all skip (the caller
        treats that as an error, as upstream's bind does)."""
        start = self._now()
        returned = Status.skip()
        try:
            for plugin in self.bind_plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                status = await plugin.bind(state, pod, node_name)
                if state.record_plugin_metrics:
                    self._plugin_done("Bind", plugin.name, status, plugin_start, state)
                if status.is_skip:
                    continue
                if status.is_success:
                    returned = status
                elif status.is_rejected:
                    returned = status.with_plugin(plugin.name)
                else:
                    returned = _error(
                        f'running Bind plugin "{plugin.name}": {status.message}', plugin.name
                    )
                return returned
            return returned
        finally:
            self._point_done("Bind", returned, start, state)

    async def run_post_bind_plugins(self, state: CycleState, pod: PodView, node_name: str) -> None:
        start = self._now()
        for plugin in self.post_bind_plugins:
            plugin_start = self._now() if state.record_plugin_metrics else 0.0
            await plugin.post_bind(state, pod, node_name)
            if state.record_plugin_metrics:
                self._plugin_done("PostBind", plugin.name, Status.OK, plugin_start, state)
        self._point_done("PostBind", Status.OK, start, state)
