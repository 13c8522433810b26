"""The scheduler's metrics scraped over HTTP after a scenario that should move them.

One scenario on the embedded cluster: a pod that fits, a pod too big for any node (it waits,
rejected by NodeResourcesFit, until a larger node arrives and the queueing hint requeues it),
and a high-priority pod that preempts. /metrics and /metrics/resources are then read through
the scheduler's HTTP server, as Prometheus reads them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from harness import Harness, running_scheduler
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from observability.http import ObservabilityServer
from observability.metrics import SchedulerMetrics

#: Families the scenario cannot move, and where they are updated and tested instead.
NOT_MOVED_BY_THIS_SCENARIO = {
    # Group cycles only (GangScheduling; tests/scheduler_gang/test_group_observability.py).
    "scheduler_podgroup_schedule_attempts": "pod group cycles",
    "scheduler_podgroup_scheduling_attempt_duration_seconds": "pod group cycles",
    "scheduler_podgroup_scheduling_algorithm_duration_seconds": "pod group cycles",
    # Read from the queue at scrape time: back to 0 when the scenario ends (the scenario checks
    # it at 1 while "big" waits).
    "scheduler_pending_pods": "read at scrape time",
    # The service's gauge loop sets it every second (tests/e2e_scheduler reads it).
    "scheduler_cache_size": "service gauge loop",
    # Configuration reloads happen in the service (tests/profiles_runtime).
    "aiosched_config_reloads": "service reloads",
    "aiosched_config_last_reload_success": "service reloads",
    # Set once by the service from --feature-gates (tests/scheduler_startup/
    # test_feature_gates.py, tests/e2e_scheduler/test_upstream_flags.py).
    "kubernetes_feature_enabled": "service start",
    # A constant 1 with the build's labels, set when the metrics are made.
    "kubernetes_build_info": "set once",
    # The service's client reports to them (observe_requests); this harness builds its own
    # client (tests/observability/test_client_process_metrics.py).
    "rest_client_requests": "the service's client",
    "rest_client_request_duration_seconds": "the service's client",
    # Set by the service's leader election (tests/observability/test_client_process_metrics.py).
    "leader_election_master_status": "service leader election",
    # Only an event the recorder could not write moves it (tests/scheduler_core recorder tests).
    "aiosched_events_dropped": "recorder failures",
    # Needs the 5-minute leftover flush (tests/scheduler_queue/test_queue_metrics.py flags the
    # pod; the scheduler counts it when the flagged pod binds).
    "scheduler_pod_scheduled_after_flush": "the leftover flush",
    # Observed only when a Permit plugin answers Wait, as upstream; no in-tree plugin does
    # (tests/scheduler_framework/test_filter_truth.py covers it with a waiting plugin).
    "scheduler_permit_wait_duration_seconds": "a waiting Permit plugin",
    # Only a batch re-score moves them: the default profile signs no pod (PodTopologySpread's
    # system defaults), as upstream (tests/scheduler_framework/test_batch.py re-scores).
    "scheduler_batch_rescore_attempts": "a batch re-score",
    "scheduler_batch_rescore_duration_seconds": "a batch re-score",
}

#: Collectors prometheus_client provides (process / platform / GC), not metrics.py families.
RUNTIME_PREFIXES = ("process_", "python_")


async def scrape(session: aiohttp.ClientSession, url: str) -> list[Sample]:
    async with session.get(url) as response:
        assert response.status == 200, await response.text()
        text = await response.text()
    return [s for f in text_string_to_metric_families(text) for s in f.samples]


def value(samples: list[Sample], name: str, **labels: str) -> float | None:
    for s in samples:
        if s.name == name and s.labels == labels:
            return float(s.value)
    return None


def total(samples: list[Sample], name: str, **labels: str) -> float:
    """Sum over series whose labels include `labels`."""
    return sum(
        float(s.value)
        for s in samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


@pytest.fixture
async def scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Harness, aiohttp.ClientSession, str]]:
    # Plugin durations are sampled in 10 % of cycles; time every cycle so that a handful of
    # attempts surely moves them.
    monkeypatch.setattr("scheduler.cycle.scheduling_cycle.PLUGIN_METRICS_SAMPLE_PERCENT", 100)
    async with running_scheduler(tmp_path) as h:
        server = ObservabilityServer(port=0, metrics=h.scheduler.metrics)
        async with server, aiohttp.ClientSession() as session:
            yield h, session, server.url


async def run_scenario(h: Harness, session: aiohttp.ClientSession, url: str) -> None:
    await h.api.create_node("small", cpu="1", memory="4Gi")
    await h.wait_nodes_cached(1)
    await h.api.create_pod("fits", cpu="250m")
    assert await h.wait_bound("fits") == "small"

    await h.api.create_pod("big", cpu="2")

    async def rejected() -> bool:
        samples = await scrape(session, f"{url}/metrics")
        labels = {"plugin": "NodeResourcesFit", "profile": "default-scheduler"}
        return (
            value(samples, "scheduler_unschedulable_pods", **labels) == 1
            and value(samples, "scheduler_pending_pods", queue="unschedulable") == 1
        )

    await h.wait_for(rejected, what="big counted as rejected by NodeResourcesFit")
    await h.api.create_node("large", cpu="4", memory="8Gi")
    assert await h.wait_bound("big") == "large"

    # Preemption: only "large" can hold 3 cpu, and only by evicting "big" (priority 0).
    await h.api.create_priority_class("vip", 1000)
    await h.api.create_pod("vip", cpu="3", extra_spec={"priorityClassName": "vip"})
    assert await h.wait_bound("vip", timeout=20) == "large"


async def test_scenario_moves_every_metric_with_upstream_labels(
    scenario: tuple[Harness, aiohttp.ClientSession, str],
) -> None:
    h, session, url = scenario
    await run_scenario(h, session, url)
    samples = await scrape(session, f"{url}/metrics")

    incoming = "scheduler_queue_incoming_pods_total"
    assert total(samples, incoming, queue="active", event="UnschedulablePodAdd") >= 3
    assert total(samples, incoming, queue="unschedulable", event="ScheduleAttemptFailure") >= 1
    # "big" is requeued by the node add (to backoffQ or, its backoff over, to activeQ).
    assert total(samples, incoming, event="NodeAdd") >= 1

    profile = "default-scheduler"
    unschedulable = "scheduler_unschedulable_pods"
    assert value(samples, unschedulable, plugin="NodeResourcesFit", profile=profile) == 0

    handling = "scheduler_event_handling_duration_seconds_count"
    for event in ("NodeAdd", "UnschedulablePodAdd", "UnschedulablePodDelete", "AssignedPodAdd"):
        assert total(samples, handling, event=event) >= 1, event

    hint = "scheduler_queueing_hint_execution_duration_seconds_count"
    assert total(samples, hint, plugin="NodeResourcesFit", event="NodeAdd", hint="Queue") >= 1

    # Pods were in flight (the series exists) and none is any more.
    assert value(samples, "scheduler_inflight_events", event="PodPopped") == 0

    assert total(samples, "scheduler_preemption_attempts_total") >= 1
    assert total(samples, "process_cpu_seconds_total") > 0
    assert total(samples, "process_resident_memory_bytes") > 0
    assert any(s.name == "python_info" for s in samples)
    assert total(samples, "python_gc_collections_total") >= 0

    resources = await scrape(session, f"{url}/metrics/resources")
    request = {
        "namespace": "default",
        "pod": "fits",
        "node": "small",
        "scheduler": profile,
        "priority": "0",
        "resource": "cpu",
        "unit": "cores",
    }
    assert value(resources, "kube_pod_resource_request", **request) == 0.25
    assert (
        value(
            resources,
            "kube_pod_resource_request",
            **{**request, "resource": "memory", "unit": "bytes"},
        )
        == 100 * 2**20
    )


async def test_no_metric_family_stays_dead(
    scenario: tuple[Harness, aiohttp.ClientSession, str],
) -> None:
    """Every family metrics.py defines moves in the scenario, or is listed (with the reason)
    in NOT_MOVED_BY_THIS_SCENARIO. A new family that nothing updates fails here."""
    h, session, url = scenario
    untouched = {
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for f in text_string_to_metric_families(SchedulerMetrics().exposition().decode())
        for s in f.samples
    }
    await run_scenario(h, session, url)
    text = h.scheduler.metrics.exposition().decode()
    dead = []
    for family in text_string_to_metric_families(text):
        if (
            family.name.startswith(RUNTIME_PREFIXES)
            or family.name.endswith("_created")  # the text parser's view of *_created series
            or family.name in NOT_MOVED_BY_THIS_SCENARIO
        ):
            continue
        moved = [
            s
            for s in family.samples
            if not s.name.endswith("_created")
            and (s.name, tuple(sorted(s.labels.items())), s.value) not in untouched
        ]
        if not moved:
            dead.append(family.name)
    assert dead == []
