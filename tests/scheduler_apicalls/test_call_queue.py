"""The call queue and dispatcher, with upstream's cases.

Upstream: pkg/scheduler/backend/api_dispatcher/call_queue_test.go and api_dispatcher_test.go.
Each row is a sequence of operations on mock calls ("low" and "high" relevances) and the queue
state it must leave: pending calls per type, the call kept per UID, the UIDs in flight, and
each call's outcome as on_finish received it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest

from scheduler.apicalls.calls import ApiCall, CallOverwritten, CallSkipped, PodStatus
from scheduler.apicalls.dispatcher import ApiDispatcher, CallQueue, QueuedCall

RELEVANCES = {"low": 1, "high": 2}


@dataclass(eq=False)
class MockCall:
    """api_dispatcher_test.go mockAPICall: each hook counts its calls."""

    uid: str
    call_type: str
    noop_after: str = ""  # "merge" / "sync": is_noop turns true once that hook ran
    noop: bool = False
    counts: dict[str, int] = field(default_factory=dict)

    def _count(self, hook: str) -> None:
        self.counts[hook] = self.counts.get(hook, 0) + 1
        if hook == self.noop_after:
            self.noop = True

    async def execute(self) -> None:
        self._count("execute")

    def sync(self, status: PodStatus) -> PodStatus:
        self._count("sync")
        return PodStatus(status.scheduled, "synced")

    def merge(self, old: ApiCall) -> None:
        self._count("merge")

    def is_noop(self) -> bool:
        self._count("is_noop")
        return self.noop


Step = tuple[Any, ...]


@dataclass
class Case:
    calls: dict[str, MockCall]
    steps: list[Step]
    pending: dict[str, int]
    kept: list[str]
    in_flight: list[str] = field(default_factory=list)
    outcomes: dict[str, type[BaseException] | None] = field(default_factory=dict)


def run_steps(case: Case) -> tuple[CallQueue, dict[str, QueuedCall]]:
    queue = CallQueue(RELEVANCES)
    loop = asyncio.new_event_loop()
    queued = {name: QueuedCall(call, loop.create_future()) for name, call in case.calls.items()}
    for step in case.steps:
        op, *args = step
        if op == "add":
            name, skipped = args
            if skipped:
                with pytest.raises(CallSkipped):
                    queue.add(queued[name])
            else:
                queue.add(queued[name])
        elif op == "pop":
            popped = queue.pop_nowait()
            assert popped is queued[args[0]]
        elif op == "finalize":
            queue.finalize(queued[args[0]])
        elif op == "sync":
            uid, synced = args
            status = queue.sync_object(uid, PodStatus())
            assert status.nominated_node_name == ("synced" if synced else "")
    loop.close()
    return queue, queued


def low(uid: str = "uid1", **kw: Any) -> MockCall:
    return MockCall(uid, "low", **kw)


def high(uid: str = "uid1", **kw: Any) -> MockCall:
    return MockCall(uid, "high", **kw)


CASES: dict[str, Callable[[], Case]] = {
    # TestCallQueueAdd
    "First call is added without collision": lambda: Case(
        {"c": low()}, [("add", "c", False)], {"low": 1}, ["c"]
    ),
    "No-op call is skipped": lambda: Case(
        {"c": low(noop=True)}, [("add", "c", True)], {"low": 0}, [], outcomes={"c": CallSkipped}
    ),
    "Two calls for different objects don't collide": lambda: Case(
        {"c1": low("uid1"), "c2": high("uid2")},
        [("add", "c1", False), ("add", "c2", False)],
        {"low": 1, "high": 1},
        ["c1", "c2"],
    ),
    "New call overwrites less relevant call": lambda: Case(
        {"low": low(), "high": high()},
        [("add", "low", False), ("add", "high", False)],
        {"high": 1, "low": 0},
        ["high"],
        outcomes={"low": CallOverwritten},
    ),
    "New call is skipped if less relevant": lambda: Case(
        {"low": low(), "high": high()},
        [("add", "high", False), ("add", "low", True)],
        {"high": 1},
        ["high"],
        outcomes={"low": CallSkipped},
    ),
    "New call merges with old call and skips if no-op": lambda: Case(
        {"c1": low(), "c2": low(), "c3": low(noop_after="merge")},
        [("add", "c1", False), ("add", "c2", False), ("add", "c3", True)],
        {"low": 0},
        [],
        outcomes={"c1": CallOverwritten, "c2": CallOverwritten, "c3": CallSkipped},
    ),
    # A more relevant call while the old one is in flight: the old one is not overwritten
    # (it is being sent); the new one waits for it (call_queue.go merge).
    "More relevant call waits while the old call is in flight": lambda: Case(
        {"low": low(), "high": high()},
        [("add", "low", False), ("pop", "low"), ("add", "high", False), ("finalize", "low")],
        {"high": 1, "low": 0},
        ["high"],
    ),
    # TestCallQueuePop
    "Calls are popped from the queue in FIFO order": lambda: Case(
        {"c1": low("uid1"), "c2": low("uid2")},
        [("add", "c1", False), ("add", "c2", False), ("pop", "c1"), ("pop", "c2")],
        {"low": 0},
        ["c1", "c2"],
        in_flight=["uid1", "uid2"],
    ),
    # TestCallQueueFinalize
    "Call details are cleared if there is no waiting call": lambda: Case(
        {"c": low("uid")}, [("add", "c", False), ("pop", "c"), ("finalize", "c")], {"low": 0}, []
    ),
    "UID is re-queued if a new call arrived while one was in-flight": lambda: Case(
        {"c1": low("uid"), "c2": low("uid")},
        [("add", "c1", False), ("pop", "c1"), ("add", "c2", False), ("finalize", "c1")],
        {"low": 1},
        ["c2"],
        outcomes={"c1": CallOverwritten},
    ),
    # TestCallQueueSyncObject
    "Object is synced with pending call details": lambda: Case(
        {"c": low()}, [("add", "c", False), ("sync", "uid1", True)], {"low": 1}, ["c"]
    ),
    "Pending call is canceled if sync results in no-op": lambda: Case(
        {"c": low(noop_after="sync")},
        [("add", "c", False), ("sync", "uid1", True)],
        {"low": 0},
        [],
        outcomes={"c": CallSkipped},
    ),
    "Object is not synced if UID is not present in the controller": lambda: Case(
        {"c": low("uid1")}, [("add", "c", False), ("sync", "uid2", False)], {"low": 1}, ["c"]
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_call_queue(name: str) -> None:
    case = CASES[name]()
    queue, queued = run_steps(case)
    assert {t: queue.pending_by_type[t] for t in RELEVANCES} == {
        t: case.pending.get(t, 0) for t in RELEVANCES
    }
    assert len(queue.order) == sum(case.pending.values())
    assert queue.calls == {queued[n].call.uid: queued[n] for n in case.kept}
    assert queue.in_flight == set(case.in_flight)
    for call_name, entry in queued.items():
        assert entry.on_finish is not None
        expected = case.outcomes.get(call_name)
        if expected is None:
            assert not entry.on_finish.done(), call_name
        else:
            assert isinstance(entry.on_finish.result(), expected), call_name


async def test_pop_blocks_until_add_and_returns_none_once_closed() -> None:
    """TestCallQueuePop "Pop blocks when queue is empty..." and TestCallQueueClose."""
    queue = CallQueue(RELEVANCES)
    waiter = asyncio.ensure_future(queue.pop())
    await asyncio.sleep(0.01)
    assert not waiter.done()
    call = QueuedCall(low())
    queue.add(call)
    assert await asyncio.wait_for(waiter, 1) is call
    closed_waiter = asyncio.ensure_future(queue.pop())
    await asyncio.sleep(0.01)
    queue.close()
    assert await asyncio.wait_for(closed_waiter, 1) is None
    assert await queue.pop() is None


async def test_dispatcher_lifecycle() -> None:
    """api_dispatcher_test.go TestAPIDispatcherLifecycle."""
    observed: list[tuple[str, str]] = []
    dispatcher = ApiDispatcher(RELEVANCES, 1, lambda t, r, _s: observed.append((t, r)))
    loop = asyncio.get_running_loop()
    call1, call2 = low("uid"), low("uid")
    done1: asyncio.Future[BaseException | None] = loop.create_future()
    done2: asyncio.Future[BaseException | None] = loop.create_future()
    dispatcher.add(call1, done1)
    dispatcher.add(call2, done2)
    assert call2.counts["merge"] == 1
    assert isinstance(await done1, CallOverwritten)
    dispatcher.sync_object("uid", PodStatus())
    assert call2.counts["sync"] == 1
    async with anyio.create_task_group() as group:
        group.start_soon(dispatcher.run)
        assert await asyncio.wait_for(done2, 1) is None
        dispatcher.close()
    assert call2.counts["execute"] == 1
    assert call2.counts["is_noop"] == 2
    assert observed == [("low", "success")]


async def test_dispatcher_bounds_calls_in_flight_and_reports_errors() -> None:
    """goroutines_limiter.go: at most `parallelism` calls are sent at once; a failed call's
    error reaches its on_finish."""
    in_flight = peak = 0
    release = asyncio.Event()

    class Slow(MockCall):
        async def execute(self) -> None:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await release.wait()
            in_flight -= 1
            if self.uid == "bad":
                raise RuntimeError("HTTP 500")

    dispatcher = ApiDispatcher(RELEVANCES, 2)
    loop = asyncio.get_running_loop()
    futures = {}
    for uid in ("a", "b", "c", "bad"):
        futures[uid] = loop.create_future()
        dispatcher.add(Slow(uid, "low"), futures[uid])
    async with anyio.create_task_group() as group:
        group.start_soon(dispatcher.run)
        await asyncio.sleep(0.05)
        assert peak == 2
        release.set()
        results = [await asyncio.wait_for(f, 1) for f in futures.values()]
        dispatcher.close()
    assert peak == 2
    assert results[:3] == [None, None, None]
    assert isinstance(results[3], RuntimeError)
    assert not dispatcher.queue.calls and not dispatcher.queue.in_flight


def test_parallelism_must_be_positive() -> None:
    with pytest.raises(ValueError, match="parallelism must be at least 1, got 0"):
        ApiDispatcher(RELEVANCES, 0)
