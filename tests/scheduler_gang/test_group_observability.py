"""What a PodGroup cycle tells the outside: one PodGroupSchedulingCycle span per cycle with each
member's SchedulingAttempt under it, and upstream's scheduler_podgroup_* metrics
(pkg/scheduler/metrics/metrics.go at v1.37), recorded by an unstarted Scheduler driven
directly (tests/scheduler_gang/test_all_or_nothing_property.py)."""

from __future__ import annotations

import asyncio

from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from observability.metrics import SchedulerMetrics
from observability.tracing import tracing_with_processor
from tests.scheduler_gang.test_all_or_nothing_property import run_cycles, unstarted_scheduler


def test_one_span_per_group_cycle_with_each_member_attempt_under_it() -> None:
    exporter = InMemorySpanExporter()
    tracing = tracing_with_processor(SimpleSpanProcessor(exporter))
    scheduler = unstarted_scheduler(tracing=tracing)
    # g0 (2 x 3 CPUs) fits on the 8-CPU node; g1 (3 x 1 CPU) then does not.
    assert asyncio.run(run_cycles([8], [(2, 3, 0), (3, 1, 0)], scheduler)) == {"g0": 2, "g1": 0}
    spans = exporter.get_finished_spans()
    groups = [s for s in spans if s.name == "PodGroupSchedulingCycle"]
    names = sorted(g.attributes["aiosched.pod_group"] for g in groups)
    assert names == ["default/g0", "default/g1"]
    by_group = {g.attributes["aiosched.pod_group"]: g for g in groups}
    ok, failed = by_group["default/g0"], by_group["default/g1"]
    assert ok.attributes["aiosched.result"] == "scheduled"
    assert ok.attributes["aiosched.scheduled_pods"] == 2
    assert failed.attributes["aiosched.result"] == "unschedulable"
    assert failed.attributes["aiosched.failure_message"] == (
        "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"
    )
    attempts = [s for s in spans if s.name == "SchedulingAttempt"]
    # Every member of g1 was tried and failed: three attempts, children of g1's cycle, in its
    # trace, each linked to its pod's PodScheduling span. (g0's attempts end when their
    # binding cycles do, which an unstarted scheduler never runs.)
    children = [a for a in attempts if a.parent and a.parent.span_id == failed.context.span_id]
    assert len(children) == 3 == len(attempts)
    for child in children:
        assert child.context.trace_id == failed.context.trace_id
        assert child.attributes["aiosched.result"] == "unschedulable"
        assert len(child.links) == 1


def test_podgroup_metrics_count_each_cycle_by_result() -> None:
    registry = CollectorRegistry()
    scheduler = unstarted_scheduler(metrics=SchedulerMetrics(registry))
    asyncio.run(run_cycles([8], [(2, 3, 0), (3, 1, 0)], scheduler))

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    attempts = "scheduler_podgroup_schedule_attempts_total"
    profile = "default-scheduler"
    assert value(attempts, result="scheduled", profile=profile) == 1
    assert value(attempts, result="unschedulable", profile=profile) == 1
    duration = "scheduler_podgroup_scheduling_attempt_duration_seconds_count"
    assert value(duration, result="scheduled", profile=profile) == 1
    assert value(duration, result="unschedulable", profile=profile) == 1
    assert value("scheduler_podgroup_scheduling_algorithm_duration_seconds_count") == 2
