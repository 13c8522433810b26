"""Prometheus metrics under upstream kube-scheduler's names, labels and buckets.

Facts (names, label sets, bucket layouts) follow upstream pkg/scheduler/metrics/metrics.go.
Every instance owns its own CollectorRegistry, so tests and several schedulers in one process never
share state. Counters and histograms are :mod:`observability.fast_metrics` families: lock-free
plain arithmetic, only ever touched from the event-loop thread, with the same exposition as
prometheus_client's ``Counter`` / ``Histogram``. Gauges are
prometheus_client's. Hot-path methods look their label child up in a plain dict (one hash lookup)
instead of going through prometheus_client's locked ``labels()`` on every call.

/metrics leaves out the ``*_created`` series prometheus_client adds to counters and histograms:
upstream's component-base metrics (client_golang's text format) never write them, so dashboards
and recording rules written against kube-scheduler see the same series here.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from prometheus_client import (
    CollectorRegistry,
    Gauge,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest

from observability.fast_metrics import FastCounter, FastGauge, FastHistogram
from observability.resource_metrics import PodResourceMetrics
from observability.version import build_info_labels

#: Content type of :meth:`SchedulerMetrics.exposition` (Prometheus text format 0.0.4).
EXPOSITION_CONTENT_TYPE: Final = CONTENT_TYPE_PLAIN_0_0_4

#: Upstream samples plugin execution durations in 10 % of scheduling cycles
#: (pkg/scheduler/schedule_one.go, pluginMetricsSamplePercent).
PLUGIN_METRICS_SAMPLE_PERCENT: Final = 10

#: Values of the ``result`` label of the attempt metrics.
SCHEDULED: Final = "scheduled"
UNSCHEDULABLE: Final = "unschedulable"
ERROR: Final = "error"

#: Values of the ``queue`` label of scheduler_pending_pods.
PENDING_QUEUES: Final = ("active", "backoff", "unschedulable", "gated")

#: Values of the ``hint`` label of scheduler_queueing_hint_execution_duration_seconds.
HINT_QUEUE: Final = "Queue"
HINT_SKIP: Final = "QueueSkip"
HINT_ERROR: Final = "Error"


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """The same layout as component-base's ExponentialBuckets (``count`` finite upper bounds)."""
    return tuple(start * factor**i for i in range(count))


_ATTEMPT_BUCKETS: Final = exponential_buckets(0.001, 2, 15)
_SLI_BUCKETS: Final = exponential_buckets(0.01, 2, 20)
_ATTEMPTS_COUNT_BUCKETS: Final = exponential_buckets(1, 2, 5)
_EXTENSION_POINT_BUCKETS: Final = exponential_buckets(0.0001, 2, 12)
_EVENT_HANDLING_BUCKETS: Final = exponential_buckets(0.0001, 2, 12)
_PLUGIN_BUCKETS: Final = exponential_buckets(0.00001, 1.5, 20)
_VICTIM_BUCKETS: Final = exponential_buckets(1, 2, 7)
_BATCH_BUCKETS: Final = exponential_buckets(0.00001, 2, 12)


class _Children:
    """Memoises label children of one prometheus_client family (the gauges): the first call per
    label tuple pays. The fast families memoise their children themselves."""

    __slots__ = ("_children", "_family")

    def __init__(self, family: Any) -> None:
        self._family = family
        self._children: dict[tuple[str, ...], Any] = {}

    def get(self, *labels: str) -> Any:
        child = self._children.get(labels)
        if child is None:
            child = self._family.labels(*labels)
            self._children[labels] = child
        return child


class _PendingPods:
    """scheduler_pending_pods{queue}: from a source read at collect time, else last values set.
    All four queues are exported from the start, as upstream does."""

    NAME: Final = "scheduler_pending_pods"

    def __init__(self, documentation: str) -> None:
        self.documentation = documentation
        self.values: dict[str, float] = dict.fromkeys(PENDING_QUEUES, 0)
        self.source: Callable[[], Mapping[str, int]] | None = None

    def describe(self) -> list[GaugeMetricFamily]:
        return [GaugeMetricFamily(self.NAME, self.documentation, labels=("queue",))]

    def collect(self) -> list[GaugeMetricFamily]:
        family = GaugeMetricFamily(self.NAME, self.documentation, labels=("queue",))
        counts = self.values if self.source is None else {**self.values, **self.source()}
        for queue, count in counts.items():
            family.add_metric((queue,), count)
        return [family]


#: rest_client_request_duration_seconds' buckets (component-base/metrics/prometheus/restclient).
_REST_CLIENT_BUCKETS: Final = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


class RestClientMetrics:
    """client-go's rest_client_requests_total{code,method,host} and
    rest_client_request_duration_seconds{verb,host}, as component-base registers them
    (metrics/prometheus/restclient/metrics.go): the code is the HTTP status, or "<error>" when
    no answer came; the host is the URL's host:port. One dict lookup per request."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._requests = FastCounter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ("code", "method", "host"),
            registry=registry,
        )
        self._duration = FastHistogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ("verb", "host"),
            buckets=_REST_CLIENT_BUCKETS,
            registry=registry,
        )

    def request_done(self, method: str, host: str, code: int | None, seconds: float) -> None:
        """One request answered (`code`) or failed without an answer (None)."""
        status = "<error>" if code is None else str(code)
        self._requests.labels(status, method, host).inc()
        self._duration.labels(method, host).observe(seconds)


class SchedulerMetrics:
    """The scheduler's metrics; call the methods named for what happened.

    ``registry`` (served at /metrics) also holds prometheus_client's process, platform and GC
    collectors (``process_*``, ``python_info``, ``python_gc_*``: what Go's process and runtime
    collectors are to kube-scheduler). ``pod_resources`` renders the separate /metrics/resources
    (``kube_pod_resource_request`` / ``kube_pod_resource_limit``).
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.pod_resources = PodResourceMetrics()
        self._event_handling = FastHistogram(
            "scheduler_event_handling_duration_seconds",
            "Event handling latency in seconds.",
            ("event",),
            buckets=_EVENT_HANDLING_BUCKETS,
            registry=reg,
        )
        self._queueing_hint_duration = FastHistogram(
            "scheduler_queueing_hint_execution_duration_seconds",
            "Duration for running a queueing hint function of a plugin.",
            ("plugin", "event", "hint"),
            buckets=_PLUGIN_BUCKETS,
            registry=reg,
        )
        self._inflight_events = FastGauge(
            "scheduler_inflight_events",
            "Number of events currently tracked in the scheduling queue.",
            ("event",),
            registry=reg,
        )
        self._schedule_attempts = FastCounter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could "
            "not be scheduled, while 'error' means an internal scheduler problem.",
            ("result", "profile"),
            registry=reg,
        )
        self._attempt_duration = FastHistogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ("result", "profile"),
            buckets=_ATTEMPT_BUCKETS,
            registry=reg,
        )
        self._algorithm_duration = FastHistogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            buckets=_ATTEMPT_BUCKETS,
            registry=reg,
        )
        # Pod group scheduling (upstream pkg/scheduler/metrics/metrics.go at v1.37: ALPHA,
        # recorded by the PodGroup cycle, GenericWorkload).
        self._podgroup_attempts = FastCounter(
            "scheduler_podgroup_schedule_attempts_total",
            "Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod "
            "group could not be scheduled, while 'error' means an internal scheduler problem.",
            ("result", "profile"),
            registry=reg,
        )
        self._podgroup_attempt_duration = FastHistogram(
            "scheduler_podgroup_scheduling_attempt_duration_seconds",
            "Pod group scheduling attempt latency in seconds",
            ("result", "profile"),
            buckets=exponential_buckets(0.001, 2, 15),
            registry=reg,
        )
        self._podgroup_algorithm_duration = FastHistogram(
            "scheduler_podgroup_scheduling_algorithm_duration_seconds",
            "Pod group scheduling algorithm latency in seconds",
            buckets=exponential_buckets(0.001, 2, 15),
            registry=reg,
        )
        self._preemption_victims = FastHistogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            buckets=_VICTIM_BUCKETS,
            registry=reg,
        )
        self._preemption_attempts = FastCounter(
            "scheduler_preemption_attempts_total",
            "Total preemption attempts in the cluster till now",
            registry=reg,
        )
        self._pending_pods = _PendingPods(
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; "
            "'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in "
            "unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the "
            "number of unschedulable pods that the scheduler never attempted to schedule because "
            "they are gated.",
        )
        reg.register(self._pending_pods)
        self._sli_duration = FastHistogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling "
            "queue and might involve multiple scheduling attempts.",
            ("attempts",),
            buckets=_SLI_BUCKETS,
            registry=reg,
        )
        self._scheduled_after_flush = FastCounter(
            "scheduler_pod_scheduled_after_flush_total",
            "Number of pods that were successfully scheduled after being flushed from "
            "unschedulablePods due to timeout. This metric helps detect potential queueing hint "
            "misconfigurations or event handling issues.",
            registry=reg,
        )
        self._pod_attempts = FastHistogram(
            "scheduler_pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=_ATTEMPTS_COUNT_BUCKETS,
            registry=reg,
        )
        self._extension_point_duration = FastHistogram(
            "scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ("extension_point", "status", "profile"),
            buckets=_EXTENSION_POINT_BUCKETS,
            registry=reg,
        )
        self._plugin_duration = FastHistogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ("plugin", "extension_point", "status"),
            buckets=_PLUGIN_BUCKETS,
            registry=reg,
        )
        self._incoming_pods = FastCounter(
            "scheduler_queue_incoming_pods_total",
            "Number of pods added to scheduling queues by event and queue type.",
            ("queue", "event"),
            registry=reg,
        )
        self._permit_wait_duration = FastHistogram(
            "scheduler_permit_wait_duration_seconds",
            "Duration of waiting on permit.",
            ("result",),
            buckets=_ATTEMPT_BUCKETS,
            registry=reg,
        )
        # Older upstream releases exported this as scheduler_scheduler_cache_size (Name
        # "scheduler_cache_size" under Subsystem "scheduler"); current upstream fixed the name.
        self._cache_size = Gauge(
            "scheduler_cache_size",
            "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
            ("type",),
            registry=reg,
        )
        self._unschedulable_pods = FastGauge(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will increment "
            "the gauge for all plugins that caused it to not schedule and so this metric have "
            "meaning only when broken down by plugin.",
            ("plugin", "profile"),
            registry=reg,
        )
        self._plugin_evaluations = FastCounter(
            "scheduler_plugin_evaluation_total",
            "Number of attempts to schedule pods by each plugin and the extension point "
            "(available only in PreFilter and Filter.).",
            ("plugin", "extension_point", "profile"),
            registry=reg,
        )
        # Opportunistic batching (upstream metrics.go, the newest stored: v1.35's and the
        # re-scoring ones; names, labels, buckets and help texts as there).
        self._batch_attempts = FastCounter(
            "scheduler_batch_attempts_total",
            "Counts of results when we attempt to use batching.",
            ("profile", "result"),
            registry=reg,
        )
        self._batch_flushed = FastCounter(
            "scheduler_batch_cache_flushed_total",
            "Counts of cache flushes by reason.",
            ("profile", "reason"),
            registry=reg,
        )
        self._batch_rescore_attempts = FastCounter(
            "scheduler_batch_rescore_attempts_total",
            "Counts of rescore attempts during opportunistic batching.",
            ("profile",),
            registry=reg,
        )
        self._batch_rescore_duration = FastHistogram(
            "scheduler_batch_rescore_duration_seconds",
            "Latency for rescoring a node during opportunistic batching.",
            ("profile",),
            buckets=_BATCH_BUCKETS,
            registry=reg,
        )
        self._get_node_hint_duration = FastHistogram(
            "scheduler_get_node_hint_duration_seconds",
            "Latency for getting a node hint.",
            ("hinted", "profile"),
            buckets=_BATCH_BUCKETS,
            registry=reg,
        )
        self._store_results_duration = FastHistogram(
            "scheduler_store_schedule_results_duration_seconds",
            "Latency for storing scheduling results.",  # v1.35 said "Latency for getting a no."
            ("profile",),
            buckets=_BATCH_BUCKETS,
            registry=reg,
        )
        self._config_reloads = FastCounter(
            "aiosched_config_reloads_total",
            "Number of scheduler configuration reloads, by result (success; failure: refused, "
            "the running configuration stays; restart_required: applied except fields that "
            "need a restart, such as leaderElection or clientConnection).",
            ("result",),
            registry=reg,
        )
        self._config_last_reload_success = Gauge(
            "aiosched_config_last_reload_success",
            "1 if the last configuration reload succeeded (or none was attempted yet), else 0.",
            registry=reg,
        )
        self._config_last_reload_success.set(1)
        # Upstream's event broadcaster counts nothing; these make every event accounted for.
        self._events_written = FastCounter(
            "aiosched_events_written_total",
            "Number of events the scheduler wrote to the API server.",
            registry=reg,
        )
        self._events_dropped = FastCounter(
            "aiosched_events_dropped_total",
            "Number of events the scheduler recorded but never wrote, by reason (queue_full, "
            "spam_filtered, retries_exhausted, refused, worker_lost).",
            ("reason",),
            registry=reg,
        )
        # client-go's REST client metrics, which KubeClient reports to (observe_requests)
        self.rest_client = RestClientMetrics(reg)
        # component-base/metrics/prometheus/clientgo/leaderelection: 1 while leading, 0 on a
        # standby (client-go sets 0 when the elector is made), absent without leader election
        self._leader_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease. "
            "Please make sure to group by name.",
            ("name",),
            registry=reg,
        )
        # component-base/metrics/version.go: a constant 1 labelled with what was built
        labels = build_info_labels()
        Gauge(
            "kubernetes_build_info",
            "A metric with a constant '1' value labeled by major, minor, git version, git "
            "commit, git tree state, build date, Go version, and compiler from which Kubernetes "
            "was built, and platform on which it is running.",
            tuple(labels),
            registry=reg,
        ).labels(**labels).set(1)
        # component-base/metrics/prometheus/feature: every registered gate, its stage
        # ("ALPHA", "BETA", "" for GA, "DEPRECATED") and 1 when enabled (set_feature_info).
        self._feature_enabled = Gauge(
            "kubernetes_feature_enabled",
            "This metric records the data about the stage and enablement of a k8s feature.",
            ("name", "stage"),
            registry=reg,
        )
        # Upstream's legacy registry carries Go's process and runtime collectors.
        ProcessCollector(registry=reg)
        PlatformCollector(registry=reg)
        GCCollector(registry=reg)

        self._cache_c = _Children(self._cache_size)
        self._unschedulable_c = self._unschedulable_pods.children
        self._event_handling_c = self._event_handling.children
        self._hint_c = self._queueing_hint_duration.children
        self._inflight_c = self._inflight_events.children
        # The fast families' children by label-value tuple: indexing is one C-level dict lookup.
        self._attempts_c = self._schedule_attempts.children
        self._attempt_duration_c = self._attempt_duration.children
        self._sli_c = self._sli_duration.children
        self._point_c = self._extension_point_duration.children
        self._plugin_c = self._plugin_duration.children
        self._incoming_c = self._incoming_pods.children
        self._permit_c = self._permit_wait_duration.children
        self._evaluations_c = self._plugin_evaluations.children
        # The unlabelled families' only children.
        self._algorithm_duration_c = self._algorithm_duration.labels()
        self._pod_attempts_c = self._pod_attempts.labels()
        self._preemption_attempts_c = self._preemption_attempts.labels()
        self._preemption_victims_c = self._preemption_victims.labels()

    def set_feature_info(self, features: Iterable[tuple[str, str, bool]]) -> None:
        """kubernetes_feature_enabled for each (name, stage, enabled), as featureGate.AddMetrics
        records them once the gates are set."""
        for name, stage, enabled in features:
            self._feature_enabled.labels(name, stage).set(1.0 if enabled else 0.0)

    # --- scheduling attempts (upstream metric_recorder.go / metrics.go helpers) ---

    def pod_scheduled(self, profile: str, seconds: float) -> None:
        self._attempt(SCHEDULED, profile, seconds)

    def pod_unschedulable(self, profile: str, seconds: float) -> None:
        self._attempt(UNSCHEDULABLE, profile, seconds)

    def pod_schedule_error(self, profile: str, seconds: float) -> None:
        self._attempt(ERROR, profile, seconds)

    def _attempt(self, result: str, profile: str, seconds: float) -> None:
        self._attempts_c[(result, profile)].inc()
        self._attempt_duration_c[(result, profile)].observe(seconds)

    def pod_group_attempt(self, result: str, profile: str, seconds: float) -> None:
        """One PodGroup cycle: result scheduled / unschedulable / waiting_on_preemption / error
        (upstream's PodGroupScheduled, PodGroupUnschedulable, ... helpers)."""
        self._podgroup_attempts.children[(result, profile)].inc()
        self._podgroup_attempt_duration.children[(result, profile)].observe(seconds)

    def pod_group_algorithm(self, seconds: float) -> None:
        self._podgroup_algorithm_duration.labels().observe(seconds)

    def pod_scheduled_after_flush(self) -> None:
        """A pod bound after the leftover flush requeued it (no event had woken it)."""
        self._scheduled_after_flush.inc()

    def scheduling_algorithm(self, seconds: float) -> None:
        self._algorithm_duration_c.observe(seconds)

    def pod_scheduling_sli(self, attempts: int, seconds: float) -> None:
        """A pod got bound: end-to-end latency since first enqueue and how many attempts it took."""
        self._sli_c[(str(attempts),)].observe(seconds)
        self._pod_attempts_c.observe(attempts)

    # --- framework ---

    def observe_extension_point(
        self, extension_point: str, status: str, profile: str, seconds: float
    ) -> None:
        self._point_c[(extension_point, status, profile)].observe(seconds)

    def observe_plugin(
        self, plugin: str, extension_point: str, status: str, seconds: float
    ) -> None:
        self._plugin_c[(plugin, extension_point, status)].observe(seconds)

    def plugin_evaluated(
        self, plugin: str, extension_point: str, profile: str, count: int = 1
    ) -> None:
        """``plugin`` ran ``count`` times (Filter / Score: once per node, as upstream)."""
        self._evaluations_c[(plugin, extension_point, profile)].inc(count)

    # --- opportunistic batching (scheduler/framework/runtime/batch.py BatchMetrics) ---

    def batch_attempt(self, profile: str, result: str) -> None:
        self._batch_attempts.children[(profile, result)].inc()

    def batch_cache_flushed(self, profile: str, reason: str) -> None:
        self._batch_flushed.children[(profile, reason)].inc()

    def batch_rescore_attempt(self, profile: str) -> None:
        self._batch_rescore_attempts.children[(profile,)].inc()

    def batch_rescore_duration(self, profile: str, seconds: float) -> None:
        self._batch_rescore_duration.children[(profile,)].observe(seconds)

    def get_node_hint_duration(self, hinted: str, profile: str, seconds: float) -> None:
        self._get_node_hint_duration.children[(hinted, profile)].observe(seconds)

    def store_schedule_results_duration(self, profile: str, seconds: float) -> None:
        self._store_results_duration.children[(profile,)].observe(seconds)

    @staticmethod
    def sample_plugin_metrics(rand: Callable[[], float] = random.random) -> bool:
        """Whether this cycle records per-plugin durations, at upstream's 10 % rate."""
        return rand() * 100 < PLUGIN_METRICS_SAMPLE_PERCENT

    def permit_wait(self, result: str, seconds: float) -> None:
        self._permit_c[(result,)].observe(seconds)

    def preemption_attempted(self) -> None:
        """One PostFilter (preemption) attempt."""
        self._preemption_attempts_c.inc()

    def preemption_victims(self, victims: int) -> None:
        """A preemption chose this many victims."""
        self._preemption_victims_c.observe(victims)

    # --- queue and cache ---

    def set_pending(self, counts: Mapping[str, int]) -> None:
        """Pods per queue, when no source is plugged in (see :meth:`set_pending_source`)."""
        self._pending_pods.values.update(counts)

    def set_pending_source(self, counts: Callable[[], Mapping[str, int]]) -> None:
        """Read scheduler_pending_pods from ``counts`` at every scrape: exact when scraped,
        where upstream moves the gauge on every queue change, and free on the hot path."""
        self._pending_pods.source = counts

    def incoming(self, queue: str, event: str) -> None:
        self._incoming_c[(queue, event)].inc()

    def unschedulable_added(self, plugins: Iterable[str], profile: str) -> None:
        """A queued pod is now counted as rejected by ``plugins`` (upstream counts it from the
        failed attempt, or the gating PreEnqueue, until it is popped again or deleted)."""
        children = self._unschedulable_c
        for plugin in plugins:
            children[(plugin, profile)].inc()

    def unschedulable_removed(self, plugins: Iterable[str], profile: str) -> None:
        """A pod previously counted for ``plugins`` was popped or deleted."""
        children = self._unschedulable_c
        for plugin in plugins:
            children[(plugin, profile)].dec()

    def inflight_event(self, event: str, delta: int) -> None:
        """The queue tracks ``delta`` more (or fewer) in-flight entries labelled ``event``."""
        self._inflight_c[(event,)].inc(delta)

    # --- informer event handlers and queueing hints ---

    def event_handled(self, event: str, seconds: float) -> None:
        self._event_handling_c[(event,)].observe(seconds)

    def queueing_hint_executed(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        self._hint_c[(plugin, event, hint)].observe(seconds)

    def set_cache_size(self, nodes: int, pods: int, assumed: int) -> None:
        self._cache_c.get("nodes").set(nodes)
        self._cache_c.get("pods").set(pods)
        self._cache_c.get("assumed_pods").set(assumed)

    # --- configuration ---

    def config_reload(self, ok: bool, restart_required: bool = False) -> None:
        """One reload: ``ok`` False when it was refused; ``restart_required`` when it was
        applied but changed fields only a restart applies (not counted as a success)."""
        if not ok:
            result = "failure"
        elif restart_required:
            result = "restart_required"
        else:
            result = "success"
        self._config_reloads.labels(result).inc()
        self._config_last_reload_success.set(1 if result == "success" else 0)

    # --- events (scheduler/client/recorder.py) ---

    def leading(self, name: str, leading: bool) -> None:
        """leader_election_master_status{name}: kube-scheduler's elector is named
        "kube-scheduler" (cmd/kube-scheduler/app/options makeLeaderElectionConfig)."""
        self._leader_status.labels(name).set(1 if leading else 0)

    def event_written(self) -> None:
        self._events_written.labels().inc()

    def event_dropped(self, reason: str) -> None:
        self._events_dropped.labels(reason).inc()

    # --- exposition ---

    def exposition(self) -> bytes:
        """The registry in Prometheus text format (see :data:`EXPOSITION_CONTENT_TYPE`)."""
        return generate_latest(_WithoutCreatedSeries(self.registry))

    def resources_exposition(self) -> bytes:
        """/metrics/resources in Prometheus text format, computed now from the pod source."""
        return self.pod_resources.exposition()


class _WithoutCreatedSeries:
    """A registry view without prometheus_client's ``*_created`` samples, which upstream's
    client_golang exposition never has. Per registry, not through prometheus_client's
    process-wide ``disable_created_metrics()``, so embedders' own metrics keep their setting."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterable[Any]:
        for family in self._registry.collect():
            if family.type in _WITH_CREATED:
                created = family.name + "_created"
                family.samples = [s for s in family.samples if s.name != created]
            yield family


#: The metric types prometheus_client gives a ``_created`` sample.
_WITH_CREATED: Final = frozenset({"counter", "histogram", "summary", "gaugehistogram"})
