"""The framework for one profile (upstream's frameworkImpl, runtime/framework.go): built from
the registry and the configuration, the Handle plugins receive, and the queueing points
(PreEnqueue, QueueSort, queueing hints); the other points come from its parts."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from scheduler.apicalls.dispatcher import ApiDispatcher
from scheduler.framework.errors import FrameworkError
from scheduler.framework.events import (
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import (
    EXTENSION_POINT_METHODS,
    ApiClient,
    EnqueueExtensions,
    Plugin,
    Preemption,
    SnapshotLister,
)
from scheduler.framework.registry import Registry
from scheduler.framework.runtime.binding import Binding
from scheduler.framework.runtime.core import (
    ALL_EVENTS,
    HandleDeps,
    _error,
)
from scheduler.framework.runtime.filtering import Filtering
from scheduler.framework.runtime.placement import Placing
from scheduler.framework.runtime.scoring import Scoring
from scheduler.framework.status import Status
from scheduler.framework.waiting_pods import WaitingPod
from scheduler.listers.cluster_objects import ClusterObjects

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.framework.extender import Extender
    from scheduler.queue.types import QueuedPodInfo, SortKey


class Framework(Filtering, Scoring, Binding, Placing):
    """One profile's plugins and the logic that runs them."""

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
        # What plugins may read of the handle while they are built (feature gates, listers).
        framework._deps = deps
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

    @property
    def feature_gates(self) -> Mapping[str, bool]:
        """The process's --feature-gates values (a gate not in it is at its default)."""
        return self._deps.feature_gates

    @property
    def pod_activator(self) -> Callable[[Sequence[PodView]], None] | None:
        """Upstream's Handle.Activate: moves pods to activeQ; None without a queue."""
        return self._deps.activate

    @property
    def api_dispatcher(self) -> ApiDispatcher | None:
        """The API call dispatcher when SchedulerAsyncAPICalls is on (upstream's APICacher)."""
        return self._deps.api_dispatcher

    def pod_exists(self, pod: PodView) -> bool:
        """Whether the pod is still in the informer's store (True when there is no store)."""
        lister = self._deps.pod_lister
        return lister is None or lister(pod.namespace, pod.name) is not None

    @property
    def rng(self) -> random.Random:
        return self._deps.rng

    def start_preemption(self, preemption: Preemption) -> None:
        self._deps.start_preemption(preemption)

    def extenders(self) -> Sequence[Extender]:
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
            "placementGenerate": self.placement_generate_plugins,
            "placementScore": self.placement_score_plugins,
            "placementFeasible": self.placement_feasible_plugins,
            "podGroupPostFilter": self.pod_group_post_filter_plugins,
        }
        return {point: [p.name for p in plugins] for point, plugins in points.items() if plugins}

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

    def queue_sort_key(self) -> SortKey | None:
        """The QueueSort plugin's `sort_key`, when it has one (a key ordered as its `less`)."""
        key: SortKey | None = getattr(self.queue_sort_plugins[0], "sort_key", None)
        return key

    def events_to_register(self) -> dict[str, tuple[ClusterEventWithHint, ...]]:
        """Events each plugin wants, by plugin name; plugins that don't say get every event.
        Asked of the plugins once per framework, as upstream builds its queueingHintMap once:
        the hints run for every waiting pod on every event, and rebuilding the registrations
        there dominated the scheduler's time when thousands of claims appeared at once."""
        if self._registrations is None:
            registered: dict[str, tuple[ClusterEventWithHint, ...]] = {}
            for name, plugin in self.plugins.items():
                if name in self._capabilities.enqueue_extensions:
                    registered[name] = tuple(cast(EnqueueExtensions, plugin).events_to_register())
                else:
                    registered[name] = ALL_EVENTS
            self._registrations = registered
        return self._registrations

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
        by_plugin = self.events_to_register()
        for name in rejectors:
            registrations = by_plugin.get(name)
            if registrations is None:
                continue
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
