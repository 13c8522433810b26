"""Event recording that never blocks the scheduling loop and never loses an event silently.

Modelled on client-go's events.k8s.io/v1 broadcaster (tools/events/event_broadcaster.go), which
kube-scheduler feeds from a clientset of its own (cmd/kube-scheduler/app/options createClients):

- Events are written through their own client: same connections, own qps/burst token bucket,
  so events never eat the budget bindings and status updates need (and vice versa).
- ``record`` only enqueues. The queue holds 1000 events (upstream's maxQueuedEvents); when it
  is full the new event is dropped, as upstream's DropIfChannelFull does.
- Writes that fail are retried for up to 2 minutes (event_writer.py has the details).
- With API I/O workers (``aiosched run --api-workers N``, process_transport.py) the queue, the
  body, the writes and their retries move to one of them: ``record`` keeps the spam filter and
  the counters here and sends the event as one EVENT frame. One worker at a time holds the
  events, so there is one queue of 1000 and one token bucket, as upstream's one recorder; here
  the 1000 counts the events sent and not yet reported written or dropped. Outcomes come back
  in batches; events recorded while no worker runs wait here (within the same 1000) for one
  to start. A worker that dies takes the events it held with it: they count as dropped,
  reason ``worker_lost`` (some may have been written in its last moments).
- Upstream counts none of its drops. Here every event recorded ends up either written or
  dropped with a reason (``DROP_REASONS``), counted in ``written`` / ``dropped`` and in the
  aiosched_events_written_total / aiosched_events_dropped_total{reason} metrics, and drops are
  logged at a sampled rate: the first at once, then at most one line per interval with the
  count since the last line.
- A per-object spam filter (the core/v1 recorder's EventCorrelator default: a burst of 25, then
  one more every 5 minutes, in an LRU cache of 4096 objects) keeps a pod that fails for hours
  from flooding the API server, at a fixed cost per event however many objects have events.
  Upstream's v1 broadcaster aggregates repeats into an EventSeries instead; not done here.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import socket
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from scheduler.client import framing
from scheduler.client.event_writer import (
    DROP_REASONS,
    FIRST_RETRY_SLEEP,
    MAX_QUEUED_EVENTS,
    MAX_RETRY_SLEEP,
    QUEUE_FULL,
    RETRIES_EXHAUSTED,
    RETRY_FOR_SECONDS,
    SPAM_FILTERED,
    WORKER_LOST,
    WRITERS,
    EventWriter,
    ObjectRef,
    PendingEvent,
    Regarding,
    RetryPolicy,
)
from scheduler.client.process_transport import ProcessTransport
from scheduler.client.rest import KubeClient

__all__ = [
    "DROP_REASONS",
    "QUEUE_FULL",
    "RETRIES_EXHAUSTED",
    "SPAM_FILTERED",
    "WORKER_LOST",
    "EventRecorder",
    "ObjectRef",
    "PendingEvent",
    "Regarding",
]

log = logging.getLogger(__name__)

MAX_SPAM_FILTER_ENTRIES = 4096  # client-go tools/record/events_cache.go maxLruCacheEntries


class EventMetrics(Protocol):
    def event_written(self) -> None: ...

    def event_dropped(self, reason: str) -> None: ...


class SpamFilter:
    """Token bucket per regarding object: `burst` events, then one more per `refill_seconds`.

    As client-go's EventSourceObjectSpamFilter (tools/record/events_cache.go): the buckets live
    in an LRU cache of `max_entries` (maxLruCacheEntries, 4096), so memory and the cost of one
    event stay fixed however many objects have had events; an object evicted from the cache
    starts again with a full burst, as upstream's does.
    """

    def __init__(
        self,
        clock: Callable[[], float],
        burst: int = 25,
        refill_seconds: float = 300.0,
        max_entries: int = MAX_SPAM_FILTER_ENTRIES,
    ) -> None:
        self._clock = clock
        self._burst = burst
        self._refill = refill_seconds
        self._max_entries = max_entries
        # key → (tokens, last time), least recently used first
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def allow(self, key: str) -> bool:
        now = self._clock()
        bucket = self._buckets.pop(key, None)
        if bucket is None:
            tokens = float(self._burst)
            if len(self._buckets) >= self._max_entries:
                self._buckets.popitem(last=False)
        else:
            tokens, last = bucket
            tokens = min(float(self._burst), tokens + (now - last) / self._refill)
        allowed = tokens >= 1
        self._buckets[key] = (tokens - 1 if allowed else tokens, now)
        return allowed


class SampledDropLog:
    """Logs the first drop at once, then at most one line per `interval` with the counts."""

    def __init__(self, clock: Callable[[], float], interval: float = 10.0) -> None:
        self._clock = clock
        self._interval = interval
        self._last: float | None = None
        self._unlogged: dict[str, int] = {}

    def dropped(self, reason: str, what: str, count: int = 1) -> None:
        """``count`` events dropped for ``reason``, the last of them ``what``."""
        self._unlogged[reason] = self._unlogged.get(reason, 0) + count
        now = self._clock()
        if self._last is not None and now - self._last < self._interval:
            return
        self._last = now
        counts, self._unlogged = self._unlogged, {}
        log.warning(
            "events dropped",
            extra={
                "dropped": counts,
                "last": what,
                "next_report_in_seconds": self._interval,
            },
        )


class EventRecorder:
    """``record`` for the scheduler's callers; the writing happens in this process or in an
    API I/O worker, as ``client``'s transport says (see the module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        clock: Callable[[], float],
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        max_queued: int = MAX_QUEUED_EVENTS,
        writers: int = WRITERS,
        *,
        metrics: EventMetrics | None = None,
        rng: random.Random | None = None,
        retry_for_seconds: float = RETRY_FOR_SECONDS,
        first_retry_sleep: float = FIRST_RETRY_SLEEP,
        max_retry_sleep: float = MAX_RETRY_SLEEP,
    ) -> None:
        self._client = client
        self._spam = SpamFilter(clock)
        self._metrics = metrics
        self._drop_log = SampledDropLog(clock)
        self._max_queued = max_queued
        self.recorded = 0
        self.written = 0
        self.dropped: dict[str, int] = dict.fromkeys(DROP_REASONS, 0)
        instance = socket.gethostname()
        retry = RetryPolicy(retry_for_seconds, first_retry_sleep, max_retry_sleep)
        transport = getattr(client, "transport", None)
        self._workers = transport if isinstance(transport, ProcessTransport) else None
        self._local: EventWriter | None = None
        # Events recorded while no API I/O worker runs, waiting for one (framing payloads).
        self._held: collections.deque[bytes] = collections.deque()
        self._held_wakeup = asyncio.Event()
        if self._workers is not None:
            qps, burst = client.rate_limit
            self._workers.attach_events(
                self,
                framing.EventConfig(
                    qps,
                    burst,
                    max_queued,
                    writers,
                    retry.retry_for_seconds,
                    retry.first_sleep,
                    retry.max_sleep,
                    instance,
                ),
            )
        else:
            self._local = EventWriter(
                client,
                clock,
                instance,
                self._written,
                self._drop,
                wall_clock=wall_clock,
                max_queued=max_queued,
                writers=writers,
                retry=retry,
                rng=rng,
            )

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    def record(
        self,
        regarding: Regarding,
        event_type: str,
        reason: str,
        action: str,
        note: str,
        controller: str,
    ) -> None:
        """Queue an event; returns at once. Dropped (and counted) if filtered or queue full."""
        self.recorded += 1
        if self._local is not None:
            event = PendingEvent(regarding, event_type, reason, action, note, controller)
            if not self._spam.allow(regarding.uid):
                self._drop(SPAM_FILTERED, event)
            else:
                self._local.put(event)
            return
        workers = self._workers
        assert workers is not None
        if not self._spam.allow(regarding.uid):
            self._drop_many(SPAM_FILTERED, 1, f"{reason} for {regarding.key}")
            return
        if workers.events_outstanding + len(self._held) >= self._max_queued:
            self._drop_many(QUEUE_FULL, 1, f"{reason} for {regarding.key}")
            return
        payload = framing.event_payload(
            (
                regarding.namespace,
                regarding.name,
                regarding.uid,
                regarding.resource_version,
                event_type,
                reason,
                action,
                note,
                controller,
            )
        )
        if self._held or not workers.send_event(payload):
            self._held.append(payload)
            self._held_wakeup.set()

    def _written(self) -> None:
        self.written += 1
        if self._metrics is not None:
            self._metrics.event_written()

    def _drop(self, reason: str, event: PendingEvent) -> None:
        self._drop_many(reason, 1, event.describe())

    def _drop_many(self, reason: str, count: int, what: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + count
        if self._metrics is not None:
            for _ in range(count):
                self._metrics.event_dropped(reason)
        self._drop_log.dropped(reason, what, count)

    # What the API I/O worker holding the events reports (process_transport.EventListener).

    def events_done(self, outcomes: framing.EventOutcomes) -> None:
        self.written += outcomes.written
        if self._metrics is not None:
            for _ in range(outcomes.written):
                self._metrics.event_written()
        for reason, count in outcomes.dropped.items():
            self._drop_many(reason, count, outcomes.last_dropped or "")
        for code, seconds in outcomes.requests:
            self._client.report_request("POST", code, seconds)

    def events_lost(self, count: int) -> None:
        self._drop_many(WORKER_LOST, count, "the events an API I/O worker held when it died")

    async def run(self) -> None:
        """Write events until cancelled: this process's writers, or, with API I/O workers,
        hand the events held while none ran to the next one that starts."""
        if self._local is not None:
            await self._local.run()
            return
        workers = self._workers
        assert workers is not None
        while True:
            await self._held_wakeup.wait()
            self._held_wakeup.clear()
            while self._held:
                await workers.wait_for_worker()
                while self._held and workers.send_event(self._held[0]):
                    self._held.popleft()
