"""scheduler_event_handling_duration_seconds per informer handler, with upstream's event labels
(pkg/scheduler/eventhandlers.go: addPodToSchedulingQueue, updatePodInCache, ...)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from observability.metrics import SchedulerMetrics
from scheduler.api.objects import NodeView, PodView
from scheduler.cache.cache import Cache
from scheduler.cycle.eventhandlers import NodeEventHandler, PodEventHandler
from scheduler.queue.scheduling_queue import SchedulingQueue


class Ticks:
    """A timer that moves 1 ms per reading, so each handler call lasts a known time."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.001
        return self.now


def handled(metrics: SchedulerMetrics) -> dict[str, float]:
    """event label → number of handled events."""
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for s in family.samples:
            if s.name == "scheduler_event_handling_duration_seconds_count":
                counts[s.labels["event"]] = s.value
    return counts


def node(name: str, taints: list[dict[str, str]] | None = None) -> NodeView:
    return NodeView.from_dict(
        {
            "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"},
            "spec": {"taints": taints or []},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }
    )


@pytest.fixture
def metrics() -> SchedulerMetrics:
    return SchedulerMetrics()


@pytest.fixture
def handlers(
    new_queue: Callable[..., SchedulingQueue], metrics: SchedulerMetrics
) -> Iterator[tuple[PodEventHandler, NodeEventHandler]]:
    cache = Cache()
    queue = new_queue(metrics=metrics)
    pods = PodEventHandler(
        cache, queue, lambda pod: True, lambda pod: None, metrics=metrics, timer=Ticks()
    )
    yield pods, NodeEventHandler(cache, queue, metrics, timer=Ticks())


def test_pod_lifecycle_is_timed_under_upstream_labels(
    handlers: tuple[PodEventHandler, NodeEventHandler],
    metrics: SchedulerMetrics,
    make_pod: Callable[..., PodView],
) -> None:
    pods, nodes = handlers
    nodes.on_add(node("n1"))
    pending = make_pod("p")
    pods.on_add(pending)
    relabelled = make_pod("p", labels={"app": "x"}, rv="2")
    pods.on_update(pending, relabelled)
    bound = make_pod("p", labels={"app": "x"}, rv="3", node="n1")
    pods.on_update(relabelled, bound)
    pods.on_update(bound, make_pod("p", labels={"app": "y"}, rv="4", node="n1"))
    pods.on_delete(make_pod("p", labels={"app": "y"}, rv="4", node="n1"))
    nodes.on_update(node("n1"), node("n1", [{"key": "k", "effect": "NoSchedule"}]))
    nodes.on_delete(node("n1"))
    pods.on_add(make_pod("q"))
    pods.on_delete(make_pod("q"))

    assert handled(metrics) == {
        "NodeAdd": 1,
        "UnschedulablePodAdd": 2,
        "UnschedulablePodUpdate": 1,
        # Bound: the queue's handler sees a delete, the cache's an add (as upstream's two).
        "UnschedulablePodDelete": 2,
        "AssignedPodAdd": 1,
        "AssignedPodUpdate": 1,
        "AssignedPodDelete": 1,
        "NodeUpdate": 1,
        "NodeDelete": 1,
    }


def test_duration_is_the_handlers_own_time(
    handlers: tuple[PodEventHandler, NodeEventHandler], metrics: SchedulerMetrics
) -> None:
    _, nodes = handlers
    nodes.on_add(node("n1"))
    text = metrics.exposition().decode()
    sums = [
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "scheduler_event_handling_duration_seconds_sum"
    ]
    assert sums == [pytest.approx(0.001)]
