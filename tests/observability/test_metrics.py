"""Exposition of SchedulerMetrics, parsed with prometheus_client's parser.

Names, types, labels and buckets are upstream's (pkg/scheduler/metrics/metrics.go).
"""

from __future__ import annotations

import math

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from observability.metrics import SchedulerMetrics, exponential_buckets


def samples(metrics: SchedulerMetrics) -> list[Sample]:
    text = metrics.exposition().decode()
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def families(metrics: SchedulerMetrics) -> dict[str, str]:
    text = metrics.exposition().decode()
    return {f.name: f.type for f in text_string_to_metric_families(text)}


def value(metrics: SchedulerMetrics, name: str, **labels: str) -> float:
    matches = [s.value for s in samples(metrics) if s.name == name and s.labels == labels]
    assert len(matches) == 1, (name, labels, matches)
    return matches[0]


def bucket_bounds(metrics: SchedulerMetrics, name: str) -> list[float]:
    bounds = [float(s.labels["le"]) for s in samples(metrics) if s.name == f"{name}_bucket"]
    return sorted(set(bounds))


def exercised() -> SchedulerMetrics:
    m = SchedulerMetrics()
    m.pod_scheduled("default-scheduler", 0.004)
    m.pod_unschedulable("default-scheduler", 0.002)
    m.pod_schedule_error("other", 0.5)
    m.scheduling_algorithm(0.003)
    m.pod_scheduling_sli(2, 1.5)
    m.observe_extension_point("Filter", "Success", "default-scheduler", 0.0002)
    m.observe_plugin("NodeResourcesFit", "Filter", "Success", 0.00002)
    m.plugin_evaluated("NodeResourcesFit", "Filter", "default-scheduler")
    m.permit_wait("Success", 0.01)
    m.preemption_attempted()
    m.preemption_victims(2)
    m.set_pending({"active": 3, "backoff": 1})
    m.incoming("active", "PodAdd")
    m.unschedulable_added(["NodeResourcesFit", "TaintToleration"], "default-scheduler")
    m.set_cache_size(nodes=5, pods=7, assumed=1)
    m.config_reload(ok=True)
    m.event_handled("NodeAdd", 0.0003)
    m.queueing_hint_executed("NodeAffinity", "NodeAdd", "QueueSkip", 0.00002)
    m.inflight_event("PodPopped", 1)
    m.pod_scheduled_after_flush()
    return m


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("scheduler_schedule_attempts", "counter"),
        ("scheduler_scheduling_attempt_duration_seconds", "histogram"),
        ("scheduler_scheduling_algorithm_duration_seconds", "histogram"),
        ("scheduler_pending_pods", "gauge"),
        ("scheduler_queue_incoming_pods", "counter"),
        ("scheduler_pod_scheduling_sli_duration_seconds", "histogram"),
        ("scheduler_pod_scheduling_attempts", "histogram"),
        ("scheduler_framework_extension_point_duration_seconds", "histogram"),
        ("scheduler_plugin_execution_duration_seconds", "histogram"),
        ("scheduler_plugin_evaluation", "counter"),
        ("scheduler_unschedulable_pods", "gauge"),
        ("scheduler_permit_wait_duration_seconds", "histogram"),
        ("scheduler_cache_size", "gauge"),
        ("scheduler_preemption_attempts", "counter"),
        ("scheduler_preemption_victims", "histogram"),
        ("scheduler_event_handling_duration_seconds", "histogram"),
        ("scheduler_queueing_hint_execution_duration_seconds", "histogram"),
        ("scheduler_inflight_events", "gauge"),
        ("scheduler_pod_scheduled_after_flush", "counter"),
        ("aiosched_config_reloads", "counter"),
        ("aiosched_config_last_reload_success", "gauge"),
        # prometheus_client's process, platform and GC collectors (Go's are upstream's).
        ("process_cpu_seconds", "counter"),
        ("process_resident_memory_bytes", "gauge"),
        ("process_open_fds", "gauge"),
        ("process_start_time_seconds", "gauge"),
        ("python_info", "gauge"),
        ("python_gc_collections", "counter"),
    ],
)
def test_family_names_and_types(name: str, kind: str) -> None:
    assert families(exercised())[name] == kind


@pytest.mark.parametrize(
    ("name", "labels", "expected"),
    [
        (
            "scheduler_schedule_attempts_total",
            {"result": "scheduled", "profile": "default-scheduler"},
            1,
        ),
        (
            "scheduler_schedule_attempts_total",
            {"result": "unschedulable", "profile": "default-scheduler"},
            1,
        ),
        ("scheduler_schedule_attempts_total", {"result": "error", "profile": "other"}, 1),
        (
            "scheduler_scheduling_attempt_duration_seconds_count",
            {"result": "error", "profile": "other"},
            1,
        ),
        (
            "scheduler_scheduling_attempt_duration_seconds_sum",
            {"result": "error", "profile": "other"},
            0.5,
        ),
        ("scheduler_pod_scheduling_sli_duration_seconds_count", {"attempts": "2"}, 1),
        ("scheduler_pod_scheduling_attempts_sum", {}, 2),
        ("scheduler_pending_pods", {"queue": "active"}, 3),
        ("scheduler_pending_pods", {"queue": "backoff"}, 1),
        ("scheduler_pending_pods", {"queue": "unschedulable"}, 0),
        ("scheduler_pending_pods", {"queue": "gated"}, 0),
        ("scheduler_queue_incoming_pods_total", {"queue": "active", "event": "PodAdd"}, 1),
        (
            "scheduler_framework_extension_point_duration_seconds_count",
            {"extension_point": "Filter", "status": "Success", "profile": "default-scheduler"},
            1,
        ),
        (
            "scheduler_plugin_execution_duration_seconds_count",
            {"plugin": "NodeResourcesFit", "extension_point": "Filter", "status": "Success"},
            1,
        ),
        (
            "scheduler_unschedulable_pods",
            {"plugin": "TaintToleration", "profile": "default-scheduler"},
            1,
        ),
        ("scheduler_permit_wait_duration_seconds_count", {"result": "Success"}, 1),
        ("scheduler_cache_size", {"type": "nodes"}, 5),
        ("scheduler_cache_size", {"type": "pods"}, 7),
        ("scheduler_cache_size", {"type": "assumed_pods"}, 1),
        ("scheduler_preemption_attempts_total", {}, 1),
        ("scheduler_preemption_victims_sum", {}, 2),
        ("aiosched_config_reloads_total", {"result": "success"}, 1),
        ("aiosched_config_last_reload_success", {}, 1),
        ("scheduler_event_handling_duration_seconds_count", {"event": "NodeAdd"}, 1),
        (
            "scheduler_queueing_hint_execution_duration_seconds_count",
            {"plugin": "NodeAffinity", "event": "NodeAdd", "hint": "QueueSkip"},
            1,
        ),
        ("scheduler_inflight_events", {"event": "PodPopped"}, 1),
        ("scheduler_pod_scheduled_after_flush_total", {}, 1),
    ],
)
def test_values_and_labels(name: str, labels: dict[str, str], expected: float) -> None:
    assert value(exercised(), name, **labels) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("name", "start", "factor", "count"),
    [
        ("scheduler_scheduling_attempt_duration_seconds", 0.001, 2, 15),
        ("scheduler_scheduling_algorithm_duration_seconds", 0.001, 2, 15),
        ("scheduler_pod_scheduling_sli_duration_seconds", 0.01, 2, 20),
        ("scheduler_pod_scheduling_attempts", 1, 2, 5),
        ("scheduler_framework_extension_point_duration_seconds", 0.0001, 2, 12),
        ("scheduler_plugin_execution_duration_seconds", 0.00001, 1.5, 20),
        ("scheduler_permit_wait_duration_seconds", 0.001, 2, 15),
        ("scheduler_preemption_victims", 1, 2, 7),
        ("scheduler_event_handling_duration_seconds", 0.0001, 2, 12),
        ("scheduler_queueing_hint_execution_duration_seconds", 0.00001, 1.5, 20),
    ],
)
def test_buckets_match_upstream(name: str, start: float, factor: float, count: int) -> None:
    bounds = bucket_bounds(exercised(), name)
    assert bounds[-1] == math.inf
    assert bounds[:-1] == pytest.approx(list(exponential_buckets(start, factor, count)))
    assert len(bounds) == count + 1


def test_unschedulable_gauge_goes_back_down() -> None:
    m = SchedulerMetrics()
    m.unschedulable_added(["NodeAffinity"], "p")
    m.unschedulable_removed(["NodeAffinity"], "p")
    assert value(m, "scheduler_unschedulable_pods", plugin="NodeAffinity", profile="p") == 0


def test_pending_pods_read_from_the_source_at_scrape_time() -> None:
    m = SchedulerMetrics()
    counts = {"active": 2, "backoff": 0, "unschedulable": 1, "gated": 0}
    m.set_pending_source(lambda: counts)
    assert value(m, "scheduler_pending_pods", queue="active") == 2
    counts["active"] = 5
    assert value(m, "scheduler_pending_pods", queue="active") == 5
    assert value(m, "scheduler_pending_pods", queue="gated") == 0


def test_failed_reload_flips_the_gauge() -> None:
    m = SchedulerMetrics()
    m.config_reload(ok=True)
    m.config_reload(ok=False)
    assert value(m, "aiosched_config_last_reload_success") == 0
    assert value(m, "aiosched_config_reloads_total", result="failure") == 1


def test_instances_do_not_share_state() -> None:
    first, second = SchedulerMetrics(), SchedulerMetrics()
    first.pod_scheduled("p", 0.1)
    assert not [s for s in samples(second) if s.name == "scheduler_schedule_attempts_total"]


@pytest.mark.parametrize(
    ("draw", "sampled"), [(0.0, True), (0.0999, True), (0.1, False), (0.9, False)]
)
def test_plugin_metrics_sampled_at_ten_percent(draw: float, sampled: bool) -> None:
    assert SchedulerMetrics.sample_plugin_metrics(lambda: draw) is sampled


def test_no_created_series() -> None:
    """kube-scheduler's /metrics (client_golang) has no ``*_created`` series; prometheus_client
    adds one to every counter and histogram unless told not to."""
    text = exercised().exposition().decode()
    assert "_created" not in text
    assert "scheduler_schedule_attempts_total{" in text
    assert "scheduler_scheduling_attempt_duration_seconds_bucket{" in text
