"""The call queue and the dispatcher that sends the scheduler's API calls off its cycles.

Upstream: pkg/scheduler/backend/api_dispatcher/call_queue.go and api_dispatcher.go
(SchedulerAsyncAPICalls). At most one call per object UID is pending: a newer call of a more
relevant type replaces the pending one, a less relevant one is skipped, one of the same type is
merged into the newer. While an object's call is in flight, a newer call for it waits and is
sent after. Each call's outcome goes to its ``on_finish`` future, if it has one. Everything
runs on the event loop, so the queue needs no locks; ``parallelism`` bounds the calls in flight
(upstream's goroutinesLimiter).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import anyio

from scheduler.apicalls.calls import (
    ApiCall,
    CallOverwritten,
    CallSkipped,
    PodStatus,
)

log = logging.getLogger(__name__)

OnFinish = asyncio.Future[BaseException | None]


@dataclass(eq=False, slots=True)
class QueuedCall:
    """call_queue.go queuedAPICall: a call, who waits for its outcome, and its order of arrival."""

    call: ApiCall
    on_finish: OnFinish | None = None
    call_id: int = field(default=0)

    def send_on_finish(self, error: BaseException | None) -> None:
        # Upstream's channel send is non-blocking: only the first outcome is delivered.
        if self.on_finish is not None and not self.on_finish.done():
            self.on_finish.set_result(error)


class CallQueue:
    """call_queue.go callQueue: pending calls by object UID, in FIFO order of objects."""

    def __init__(self, relevances: Mapping[str, int]) -> None:
        self._relevances = relevances
        self._next_call_id = 0
        self.calls: dict[str, QueuedCall] = {}
        self.order: deque[str] = deque()
        self.in_flight: set[str] = set()
        self.pending_by_type: Counter[str] = Counter()  # the async_api_pending_calls gauge
        self._ready = asyncio.Event()
        self._closed = False

    def _less_relevant(self, old: str, new: str) -> bool:
        return self._relevances.get(new, 0) < self._relevances.get(old, 0)

    def _merge(self, old: QueuedCall, new: QueuedCall) -> None:
        """Raise CallSkipped/TypeError when ``new`` is not to be queued."""
        if self._less_relevant(old.call.call_type, new.call.call_type):
            error = CallSkipped("a more relevant call is already enqueued for this object")
            new.send_on_finish(error)
            raise error
        if old.call.call_type != new.call.call_type:
            if old.call.uid in self.in_flight:
                return  # the old call is no longer pending: nothing to overwrite
            self.pending_by_type[old.call.call_type] -= 1
            self.pending_by_type[new.call.call_type] += 1
            old.send_on_finish(CallOverwritten("a more relevant call was enqueued for this object"))
            return
        try:
            new.call.merge(old.call)
        except TypeError as exc:
            new.send_on_finish(exc)
            raise
        old.send_on_finish(CallOverwritten("a call of the same type was enqueued for this object"))

    def _enqueue(self, queued: QueuedCall, old_present: bool) -> None:
        uid = queued.call.uid
        if queued.call.is_noop() and uid not in self.in_flight:
            if old_present:
                self._remove_pending(uid)
            error = CallSkipped("call does not need to be executed because it has no effect")
            queued.send_on_finish(error)
            raise error
        self.calls[uid] = queued
        if old_present:
            return  # the object already has its place in the order
        self.order.append(uid)
        self.pending_by_type[queued.call.call_type] += 1
        self._ready.set()

    def _remove_pending(self, uid: str) -> None:
        queued = self.calls.pop(uid, None)
        if queued is None:
            return
        if uid not in self.in_flight:
            # O(pending calls), as upstream's removeFromQueue; only for a call that became a no-op.
            self.order.remove(uid)
            self.pending_by_type[queued.call.call_type] -= 1

    def add(self, queued: QueuedCall) -> None:
        """Queue a call; raise CallSkipped when it is not to be sent (on_finish says so too)."""
        queued.call_id = self._next_call_id
        self._next_call_id += 1
        old = self.calls.get(queued.call.uid)
        if old is not None:
            self._merge(old, queued)
        self._enqueue(queued, old is not None)

    def pop_nowait(self) -> QueuedCall | None:
        """The next call to send (its object is then in flight), None when none is pending."""
        if not self.order:
            self._ready.clear()
            return None
        uid = self.order.popleft()
        queued = self.calls[uid]
        self.in_flight.add(uid)
        self.pending_by_type[queued.call.call_type] -= 1
        return queued

    async def pop(self) -> QueuedCall | None:
        """call_queue.go pop: wait for a call; None once the queue is closed and empty."""
        while True:
            queued = self.pop_nowait()
            if queued is not None or self._closed:
                return queued
            await self._ready.wait()

    def finalize(self, queued: QueuedCall) -> None:
        """After a call was sent: forget it, or queue the call that arrived meanwhile."""
        uid = queued.call.uid
        newest = self.calls.get(uid)
        if newest is not None and newest.call_id == queued.call_id:
            del self.calls[uid]
        elif newest is not None:
            self.order.append(uid)
            self.pending_by_type[newest.call.call_type] += 1
            self._ready.set()
        self.in_flight.discard(uid)

    def sync_object(self, uid: str, status: PodStatus) -> PodStatus:
        """call_queue.go syncObject: the status as pending calls will leave it.

        The pending call is refreshed with the informer's status; if it then has no effect it
        is dropped (CallSkipped to its on_finish)."""
        queued = self.calls.get(uid)
        if queued is None:
            return status
        synced = queued.call.sync(status)
        if queued.call.is_noop() and uid not in self.in_flight:
            self._remove_pending(uid)
            queued.send_on_finish(
                CallSkipped("call does not need to be executed because after sync it has no effect")
            )
        return synced

    def close(self) -> None:
        self._closed = True
        self._ready.set()


class ApiDispatcher:
    """api_dispatcher.go APIDispatcher: sends queued calls, at most ``parallelism`` at once.

    ``observe(call_type, result, seconds)`` records scheduler_async_api_call_execution_total
    and _duration_seconds (result "success" or "error") where metrics are kept."""

    def __init__(
        self,
        relevances: Mapping[str, int],
        parallelism: int,
        observe: Callable[[str, str, float], None] | None = None,
    ) -> None:
        if parallelism < 1:
            raise ValueError(f"API dispatcher parallelism must be at least 1, got {parallelism}")
        self.queue = CallQueue(relevances)
        self._limit = anyio.Semaphore(parallelism)
        self._observe = observe

    def add(self, call: ApiCall, on_finish: OnFinish | None = None) -> None:
        """Queue ``call``; raises CallSkipped when it will not be sent."""
        self.queue.add(QueuedCall(call, on_finish))

    def sync_object(self, uid: str, status: PodStatus) -> PodStatus:
        return self.queue.sync_object(uid, status)

    async def run(self) -> None:
        """Send calls until cancelled or closed."""
        async with anyio.create_task_group() as group:
            while True:
                await self._limit.acquire()
                queued = await self.queue.pop()
                if queued is None:
                    self._limit.release()
                    return
                group.start_soon(self._send, queued, name=f"api-call-{queued.call.call_type}")

    async def _send(self, queued: QueuedCall) -> None:
        started = time.perf_counter()
        error: BaseException | None = None
        try:
            await queued.call.execute()
        except Exception as exc:  # reported to on_finish, as upstream's Execute error
            error = exc
            log.warning(
                "async API call failed",
                extra={"call": queued.call.call_type, "uid": queued.call.uid, "error": str(exc)},
            )
        finally:
            self._limit.release()
        if self._observe is not None:
            result = "error" if error is not None else "success"
            self._observe(queued.call.call_type, result, time.perf_counter() - started)
        self.queue.finalize(queued)
        queued.send_on_finish(error)

    def close(self) -> None:
        self.queue.close()
