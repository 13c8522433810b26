"""pop() waiting and waking, close(), and the run() loop's periodic flushes."""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.framework.events import (
    NODE_ADD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from scheduler.queue.scheduling_queue import SchedulingQueue


async def test_pop_waits_until_a_pod_is_added(new_queue: Any, make_pod: Any) -> None:
    q: SchedulingQueue = new_queue()
    waiter = asyncio.create_task(q.pop())
    await asyncio.sleep(0)
    assert not waiter.done()
    q.add(make_pod("p"))
    pinfo = await asyncio.wait_for(waiter, 1)
    assert pinfo is not None and pinfo.pod.name == "p"


async def test_gated_pod_does_not_wake_pop(new_queue: Any, make_pod: Any) -> None:
    gates_lifted = ClusterEvent(
        EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    )
    q: SchedulingQueue = new_queue({"SchedulingGates": [ClusterEventWithHint(gates_lifted)]})
    waiter = asyncio.create_task(q.pop())
    gated = make_pod("p", gates=("g",))
    q.add(gated)
    await asyncio.sleep(0.01)
    assert not waiter.done()
    q.update(gated, make_pod("p", rv="2"))
    pinfo = await asyncio.wait_for(waiter, 1)
    assert pinfo is not None and pinfo.attempts == 1


async def test_close_wakes_every_waiter_with_none(new_queue: Any, make_pod: Any) -> None:
    q: SchedulingQueue = new_queue()
    waiters = [asyncio.create_task(q.pop()) for _ in range(3)]
    await asyncio.sleep(0)
    q.close()
    assert await asyncio.wait_for(asyncio.gather(*waiters), 1) == [None, None, None]
    q.add(make_pod("late"))
    assert await q.pop() is None


async def test_two_waiters_each_get_one_pod(new_queue: Any, make_pod: Any) -> None:
    q: SchedulingQueue = new_queue()
    waiters = [asyncio.create_task(q.pop()) for _ in range(2)]
    await asyncio.sleep(0)
    q.add(make_pod("a"))
    await asyncio.sleep(0.01)
    assert sum(w.done() for w in waiters) == 1
    q.add(make_pod("b"))
    got = await asyncio.wait_for(asyncio.gather(*waiters), 1)
    assert sorted(p.pod.name for p in got if p is not None) == ["a", "b"]


async def test_event_wakes_pop_for_unschedulable_pod(new_queue: Any, make_pod: Any) -> None:
    q: SchedulingQueue = new_queue(no_hints=True, initial_backoff=0.0)
    q.add(make_pod("p"))
    pinfo = await q.pop()
    assert pinfo is not None
    pinfo.unschedulable_plugins.add("NodeResourcesFit")
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle)
    waiter = asyncio.create_task(q.pop())
    await asyncio.sleep(0.01)
    assert not waiter.done()
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert await asyncio.wait_for(waiter, 1) is pinfo


async def test_run_flushes_backoff_and_leftovers(new_queue: Any, make_pod: Any, clock: Any) -> None:
    q: SchedulingQueue = new_queue()
    q.add(make_pod("errored"))
    q.add(make_pod("stuck"))
    errored, stuck = q.try_pop(), q.try_pop()
    assert errored is not None and stuck is not None
    q.add_unschedulable_if_not_present(errored, q.scheduling_cycle)  # backoff
    stuck.unschedulable_plugins.add("NodeResourcesFit")
    q.add_unschedulable_if_not_present(stuck, q.scheduling_cycle)  # unschedulable
    runner = asyncio.create_task(q.run(backoff_period=0.005, leftover_period=0.01))
    clock.advance(2)
    first = await asyncio.wait_for(q.pop(), 1)
    assert first is errored
    clock.advance(301)
    second = await asyncio.wait_for(q.pop(), 1)
    assert second is stuck
    q.close()
    await asyncio.wait_for(runner, 1)
