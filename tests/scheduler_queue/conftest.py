"""Builders shared by the queue tests: pods, a fake clock, PrioritySort, SchedulingGates."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from scheduler import testing
from scheduler.api.objects import PodView
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.status import Status
from scheduler.queue.hints import make_hint_fn
from scheduler.queue.scheduling_queue import SchedulingQueue
from scheduler.queue.types import QueuedPodInfo


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def make_pod(
    name: str,
    *,
    priority: int = 0,
    gates: Sequence[str] = (),
    labels: Mapping[str, str] | None = None,
    nominated: str = "",
    node: str = "",
    cpu: str = "100m",
    tolerations: Sequence[Mapping[str, Any]] = (),
    namespace: str = "ns",
    rv: str = "1",
) -> PodView:
    """The kit's pod with the queue tests' defaults: namespace "ns", uid "uid-<name>" (so a
    later version of a pod is the same pod) and one container requesting 100m cpu."""
    return testing.make_pod(
        name,
        namespace=namespace,
        uid=f"uid-{name}",
        resource_version=rv,
        labels=labels,
        requests={"cpu": cpu},
        priority=priority,
        scheduling_gates=gates,
        tolerations=tolerations,
        node_name=node,
        nominated_node_name=nominated,
    )


def priority_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """PrioritySort: higher priority first, then earlier timestamp."""
    if a.pod.priority != b.pod.priority:
        return a.pod.priority > b.pod.priority
    return a.timestamp < b.timestamp


def scheduling_gates(pod: PodView) -> Status:
    if pod.scheduling_gates:
        return Status.unresolvable("waiting for scheduling gates", plugin="SchedulingGates")
    return Status.OK


QueueFactory = Callable[..., SchedulingQueue]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def new_queue(clock: FakeClock) -> QueueFactory:
    """A queue with PrioritySort, SchedulingGates and hints from `registered` (plugin → events)."""

    def build(
        registered: Mapping[str, Sequence[ClusterEventWithHint]] | None = None,
        *,
        no_hints: bool = False,
        **kwargs: Any,
    ) -> SchedulingQueue:
        plugins = dict(registered or {})
        hints = None if no_hints else make_hint_fn(lambda _name: plugins)
        return SchedulingQueue(
            less=kwargs.pop("less", priority_less),
            pre_enqueue=kwargs.pop("pre_enqueue", scheduling_gates),
            hints=hints,
            clock=clock,
            **kwargs,
        )

    return build


@pytest.fixture(name="make_pod")
def make_pod_fixture() -> Callable[..., PodView]:
    return make_pod
