"""SchedulerPopFromBackoffQ (beta, on by default upstream since v1.33), ported from upstream's
pkg/scheduler/backend/queue/scheduling_queue_test.go (TestPriorityQueue_Pop) and
backoff_queue_test.go (TestBackoffQueue_popAllBackoffCompleted, TestBackoffQueueOrdering):
with activeQ empty, Pop takes backoffQ's first pod (never one whose attempt ended in an
error); backoff expiries fall into one-second windows, ordered within one as activeQ orders.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, EventResource
from scheduler.queue.scheduling_queue import SchedulingQueue
from scheduler.queue.types import QueuedPodInfo

# A plugin whose rejection a new PVC resolves (no hint function: Queue).
PLUGINS = {
    "plugin": [
        ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD))
    ]
}
PVC_ADD = ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD, "PvcAdd")


def queue(new_queue: Any, enabled: bool) -> SchedulingQueue:
    built: SchedulingQueue = new_queue(PLUGINS, pop_from_backoff_q=enabled)
    return built


def requeued(
    q: SchedulingQueue,
    clock: Any,
    make_pod: Any,
    name: str,
    at: float,
    *,
    priority: int = 0,
    rejected: bool = True,
    event: bool = True,
) -> QueuedPodInfo:
    """A pod attempted once and handed back at `at`: rejected by "plugin" (after an event
    that may help, so into backoffQ; without one, into the unschedulable pods) or failed
    with an error (podErrorBackoffQ)."""
    clock.now = at
    q.add(make_pod(name, priority=priority))
    pinfo = q.try_pop()
    assert pinfo is not None and pinfo.pod.name == name
    if rejected:
        pinfo.unschedulable_plugins.add("plugin")
        if event:
            q.move_all_to_active_or_backoff(PVC_ADD, None, None)
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    return pinfo


def popped(q: SchedulingQueue) -> list[str]:
    names = []
    while (pinfo := q.try_pop()) is not None:
        names.append(pinfo.pod.name)
    return names


@pytest.mark.parametrize(
    ("enabled", "want"),
    [
        # "Pop pods from both activeQ and backoffQ when PopFromBackoffQ is enabled"
        (True, ["med", "high"]),
        # "Pop pod only from activeQ when PopFromBackoffQ is disabled"
        (False, ["med"]),
    ],
)
def test_pop(new_queue: Any, clock: Any, make_pod: Any, enabled: bool, want: list[str]) -> None:
    q = queue(new_queue, enabled)
    high = requeued(q, clock, make_pod, "high", 1000.0, priority=100)
    high2 = requeued(q, clock, make_pod, "high2", 1000.0, priority=100, rejected=False)
    unschedulable = requeued(q, clock, make_pod, "unsched", 1000.0, event=False)
    assert [q.location(p.uid) for p in (high, high2, unschedulable)] == [
        "backoff",
        "backoff",
        "unschedulable",
    ]
    q.add(make_pod("med", priority=50))
    assert popped(q) == want


def test_a_pod_popped_from_backoff_is_counted(new_queue: Any, clock: Any, make_pod: Any) -> None:
    q = queue(new_queue, True)
    requeued(q, clock, make_pod, "p", 1000.0)
    assert popped(q) == ["p"]
    text = q._metrics.exposition().decode()
    assert 'scheduler_queue_incoming_pods_total{event="PopFromBackoffQ",queue="active"} 1.0' in text


async def test_a_waiting_pop_takes_a_pod_entering_backoff(
    new_queue: Any, clock: Any, make_pod: Any
) -> None:
    q = queue(new_queue, True)
    q.add(make_pod("p"))
    pinfo = q.try_pop()
    assert pinfo is not None
    waiter = asyncio.ensure_future(q.pop())
    await asyncio.sleep(0)
    assert not waiter.done()
    pinfo.unschedulable_plugins.add("plugin")
    q.move_all_to_active_or_backoff(PVC_ADD, None, None)
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    got = await asyncio.wait_for(waiter, timeout=5)
    assert got is pinfo


# TestBackoffQueue_popAllBackoffCompleted: "pod0" / "pod1" rejected by a plugin, "pod2" /
# "pod3" failed with an error; 0 and 2 handed back 2 s before now, 1 and 3 1 s after it.
POD_TIMES = {"pod0": -2.0, "pod1": 1.0, "pod2": -2.0, "pod3": 1.0}


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize(
    ("in_backoff", "want"),
    [
        ([], []),
        (["pod0", "pod1"], ["pod0"]),
        (["pod2", "pod3"], ["pod2"]),
        (["pod0", "pod1", "pod2", "pod3"], ["pod0", "pod2"]),
        (["pod0", "pod2"], ["pod0", "pod2"]),
        (["pod1", "pod3"], []),
    ],
    ids=[
        "both queues empty",
        "only backoffQ, some moved",
        "only errorBackoffQ, some moved",
        "both queues, some moved",
        "both queues, all moved",
        "both queues, none moved",
    ],
)
def test_pop_all_backoff_completed(
    new_queue: Any,
    clock: Any,
    make_pod: Any,
    enabled: bool,
    in_backoff: list[str],
    want: list[str],
) -> None:
    q = queue(new_queue, enabled)
    now = 1000.0
    pods = {
        name: requeued(
            q, clock, make_pod, name, now + POD_TIMES[name], rejected=name in ("pod0", "pod1")
        )
        for name in in_backoff
    }
    # Each backs off 1 s: pod0 and pod2 until now - 1, pod1 and pod3 until now + 2.
    clock.now = now
    assert all(q.location(p.uid) == "backoff" for p in pods.values()) or not pods
    q.flush_backoff_completed()
    moved = sorted(name for name, p in pods.items() if q.location(p.uid) == "active")
    assert moved == want
    assert q.counts()["backoff"] == len(in_backoff) - len(want)


# TestBackoffQueueOrdering: (name, priority, handed back relative to a window's start T); each
# backs off 1 s.
ORDERING = [
    ("pod0", 1, 0.0),
    ("pod1", 1, -1.0),
    ("pod2", 2, -2.0 + 0.001),
    ("pod3", 1, -2.0),
    ("pod4", 2, -2.0),
    ("pod5", 1, -3.0),
]


@pytest.mark.parametrize(
    ("enabled", "want"),
    [
        # "Pods with the same window are ordered by priority if PopFromBackoffQ is enabled"
        (True, ["pod5", "pod4", "pod2", "pod3"]),
        # "Pods priority doesn't matter if PopFromBackoffQ is disabled"
        (False, ["pod5", "pod3", "pod4", "pod2"]),
    ],
)
def test_backoff_queue_ordering(
    new_queue: Any, clock: Any, make_pod: Any, enabled: bool, want: list[str]
) -> None:
    q = queue(new_queue, enabled)
    start = 1000.0  # a window's start
    # Handed back in an order unrelated to the expected one.
    pods = [
        requeued(q, clock, make_pod, name, start + offset, priority=priority)
        for name, priority, offset in ORDERING
    ]
    clock.now = start
    # What the flush at `start` takes out of backoffQ, in backoffQ's order (pod1's backoff
    # ends at `start` itself: still backing off).
    expired = q._backoff.pop_expired(start, inclusive=False)
    assert [p.pod.name for p in expired] == want
    assert {p.pod.name for p in pods if q.location(p.uid) == "backoff"} == {"pod0", "pod1"}


def test_pop_takes_backoff_in_its_order_when_active_is_empty(
    new_queue: Any, clock: Any, make_pod: Any
) -> None:
    q = queue(new_queue, True)
    start = 1000.0
    for name, priority, offset in ORDERING:
        requeued(q, clock, make_pod, name, start + offset, priority=priority)
    clock.now = start
    # Backing off or not: windows first, priority within one, then the time handed back.
    assert popped(q) == ["pod5", "pod4", "pod2", "pod3", "pod1", "pod0"]
