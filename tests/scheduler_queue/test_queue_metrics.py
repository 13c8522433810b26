"""The queue's metrics, read back from the Prometheus exposition after each move.

Where and with which labels upstream updates them: pkg/scheduler/backend/queue
(scheduling_queue.go moveToActiveQ / requeuePodWithQueueingStrategy / AddUnschedulableIfNotPresent,
backoff_queue.go add, unschedulable_pods.go add, active_queue.go unlockedPop / done).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from observability.metrics import SchedulerMetrics
from scheduler.api.objects import PodView
from scheduler.framework.events import (
    NODE_ADD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from scheduler.queue.scheduling_queue import SchedulingQueue

PROFILE = "default-scheduler"
PLUGINS = {
    "NodeResourcesFit": [ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD))],
    "SchedulingGates": [
        ClusterEventWithHint(
            ClusterEvent(
                EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
            )
        )
    ],
}


def sample(metrics: SchedulerMetrics, name: str, **labels: str) -> float:
    """A series' value; 0 when the series does not exist (yet)."""
    text = metrics.exposition().decode()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return float(s.value)
    return 0.0


def incoming(metrics: SchedulerMetrics, queue: str, event: str) -> float:
    return sample(metrics, "scheduler_queue_incoming_pods_total", queue=queue, event=event)


def rejected_by(metrics: SchedulerMetrics, plugin: str) -> float:
    return sample(metrics, "scheduler_unschedulable_pods", plugin=plugin, profile=PROFILE)


def inflight(metrics: SchedulerMetrics, event: str) -> float:
    return sample(metrics, "scheduler_inflight_events", event=event)


@pytest.fixture
def metrics() -> SchedulerMetrics:
    return SchedulerMetrics()


@pytest.fixture
def queue(new_queue: Callable[..., SchedulingQueue], metrics: SchedulerMetrics) -> SchedulingQueue:
    return new_queue(PLUGINS, metrics=metrics)


def fail(queue: SchedulingQueue, pod: PodView, *plugins: str) -> None:
    """Pop `pod` and bring it back rejected by `plugins` (an error when none)."""
    pinfo = queue.try_pop()
    assert pinfo is not None and pinfo.pod.uid == pod.uid
    pinfo.unschedulable_plugins.update(plugins)
    queue.add_unschedulable_if_not_present(pinfo, queue.scheduling_cycle)


def test_a_new_pod_enters_active_on_its_add_event(
    queue: SchedulingQueue, metrics: SchedulerMetrics, make_pod: Callable[..., PodView]
) -> None:
    queue.add(make_pod("p"))
    assert incoming(metrics, "active", "UnschedulablePodAdd") == 1


def test_a_gated_pod_enters_unschedulable_and_counts_for_its_gate(
    queue: SchedulingQueue, metrics: SchedulerMetrics, make_pod: Callable[..., PodView]
) -> None:
    gated = make_pod("g", gates=["example.com/wait"])
    queue.add(gated)
    assert incoming(metrics, "unschedulable", "UnschedulablePodAdd") == 1
    assert incoming(metrics, "active", "UnschedulablePodAdd") == 0
    assert rejected_by(metrics, "SchedulingGates") == 1
    queue.delete(gated)
    assert rejected_by(metrics, "SchedulingGates") == 0


def test_rejection_is_counted_until_the_pod_is_popped_again(
    queue: SchedulingQueue,
    metrics: SchedulerMetrics,
    make_pod: Callable[..., PodView],
    clock: Any,
) -> None:
    pod = make_pod("p")
    queue.add(pod)
    fail(queue, pod, "NodeResourcesFit", "TaintToleration")
    assert incoming(metrics, "unschedulable", "ScheduleAttemptFailure") == 1
    assert rejected_by(metrics, "NodeResourcesFit") == 1
    assert rejected_by(metrics, "TaintToleration") == 1

    # A node add may help NodeResourcesFit: the pod backs off (its first backoff is 1 s).
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert incoming(metrics, "backoff", "NodeAdd") == 1
    assert rejected_by(metrics, "NodeResourcesFit") == 1  # still rejected until retried

    clock.advance(2)
    queue.flush_backoff_completed()
    assert incoming(metrics, "active", "BackoffComplete") == 1
    assert queue.try_pop() is not None
    assert rejected_by(metrics, "NodeResourcesFit") == 0
    assert rejected_by(metrics, "TaintToleration") == 0


def test_an_errored_attempt_goes_to_backoff_and_counts_no_plugin(
    queue: SchedulingQueue, metrics: SchedulerMetrics, make_pod: Callable[..., PodView]
) -> None:
    pod = make_pod("p")
    queue.add(pod)
    fail(queue, pod)
    assert incoming(metrics, "backoff", "ScheduleAttemptFailure") == 1
    assert rejected_by(metrics, "NodeResourcesFit") == 0


def test_deleting_a_rejected_pod_drops_its_count(
    queue: SchedulingQueue, metrics: SchedulerMetrics, make_pod: Callable[..., PodView]
) -> None:
    pod = make_pod("p")
    queue.add(pod)
    fail(queue, pod, "NodeResourcesFit")
    queue.delete(pod)
    assert rejected_by(metrics, "NodeResourcesFit") == 0


@pytest.mark.parametrize(
    ("move", "queue_name", "event"),
    [
        ("activate", "active", "ForceActivate"),
        ("leftover", "active", "UnschedulableTimeout"),
    ],
)
def test_other_moves_are_labelled_with_their_event(
    queue: SchedulingQueue,
    metrics: SchedulerMetrics,
    make_pod: Callable[..., PodView],
    clock: Any,
    move: str,
    queue_name: str,
    event: str,
) -> None:
    pod = make_pod("p")
    queue.add(pod)
    fail(queue, pod, "NodeResourcesFit")
    clock.advance(400)  # past backoff and the 5-minute limit
    if move == "activate":
        queue.activate([pod])
    else:
        queue.flush_unschedulable_left_over()
    assert incoming(metrics, queue_name, event) == 1


def test_inflight_events_follow_pods_and_the_events_they_may_need(
    queue: SchedulingQueue, metrics: SchedulerMetrics, make_pod: Callable[..., PodView]
) -> None:
    first, second = make_pod("a"), make_pod("b")
    queue.add(first)
    queue.add(second)
    queue.try_pop()
    assert inflight(metrics, "PodPopped") == 1
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)  # recorded for "a"
    assert inflight(metrics, "NodeAdd") == 1
    queue.try_pop()
    assert inflight(metrics, "PodPopped") == 2

    queue.done(first.uid)  # "b" was popped after the event: nobody needs it any more
    assert inflight(metrics, "PodPopped") == 1
    assert inflight(metrics, "NodeAdd") == 0
    queue.done(second.uid)
    assert inflight(metrics, "PodPopped") == 0


def test_events_with_no_pod_in_flight_are_not_tracked(
    queue: SchedulingQueue, metrics: SchedulerMetrics
) -> None:
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert inflight(metrics, "NodeAdd") == 0


def test_a_pod_requeued_by_the_leftover_flush_is_flagged_until_its_next_failure(
    queue: SchedulingQueue, make_pod: Callable[..., PodView], clock: Any
) -> None:
    """What scheduler_pod_scheduled_after_flush_total counts when the pod then binds."""
    pod = make_pod("p")
    queue.add(pod)
    fail(queue, pod, "NodeResourcesFit")
    clock.advance(400)  # past the 5-minute limit
    queue.flush_unschedulable_left_over()
    pinfo = queue.try_pop()
    assert pinfo is not None and pinfo.flushed_from_unschedulable
    pinfo.unschedulable_plugins.add("NodeResourcesFit")
    queue.add_unschedulable_if_not_present(pinfo, queue.scheduling_cycle)
    assert not pinfo.flushed_from_unschedulable


def test_a_pod_woken_by_an_event_is_not_flagged(
    queue: SchedulingQueue, make_pod: Callable[..., PodView], clock: Any
) -> None:
    pod = make_pod("p")
    queue.add(pod)
    fail(queue, pod, "NodeResourcesFit")
    clock.advance(400)
    queue.move_all_to_active_or_backoff(NODE_ADD, None, None)
    pinfo = queue.try_pop()
    assert pinfo is not None and not pinfo.flushed_from_unschedulable
