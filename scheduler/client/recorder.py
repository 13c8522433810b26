"""Event recording that never blocks the scheduling loop and never loses an event silently.

Modelled on client-go's events.k8s.io/v1 broadcaster (tools/events/event_broadcaster.go), which
kube-scheduler feeds from a clientset of its own (cmd/kube-scheduler/app/options createClients):

- Events are written through their own client: same connections, own qps/burst token bucket,
  so events never eat the budget bindings and status updates need (and vice versa).
- ``record`` only enqueues. The queue holds 1000 events (upstream's maxQueuedEvents); when it
  is full the new event is dropped, as upstream's DropIfChannelFull does.
- A write that gets no answer (connection refused or reset, timeout), a 429 or a 5xx is retried
  with jittered backoff (0.5 s doubling to 5 s, +25 %) for up to 2 minutes per event. Upstream
  tries 12 times with a flat 10 s ±25 % sleep (maxTriesPerEvent, defaultSleepDuration): about as
  long, but it gives up on any HTTP error, 5xx included. Other refusals are final. One write
  succeeding wakes every writer waiting to retry, so a backlog drains as soon as the API server
  is back rather than a full sleep later (upstream retries each event in its own goroutine).
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
import logging
import random
import secrets
import socket
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import anyio

from scheduler.api.times import format_micro_time
from scheduler.client.rest import ApiError, KubeClient, status_message

log = logging.getLogger(__name__)

MAX_QUEUED_EVENTS = 1000  # client-go tools/events maxQueuedEvents
RETRY_FOR_SECONDS = 120.0  # about client-go's maxTriesPerEvent (12) times its 10 s sleep
FIRST_RETRY_SLEEP = 0.5
MAX_RETRY_SLEEP = 5.0
MAX_SPAM_FILTER_ENTRIES = 4096  # client-go tools/record/events_cache.go maxLruCacheEntries
WRITE_TIMEOUT = 30.0  # an API server that accepts but never answers counts as down

QUEUE_FULL = "queue_full"
SPAM_FILTERED = "spam_filtered"
RETRIES_EXHAUSTED = "retries_exhausted"
REFUSED = "refused"
DROP_REASONS = (QUEUE_FULL, SPAM_FILTERED, RETRIES_EXHAUSTED, REFUSED)


class Regarding(Protocol):
    """The object an event is about (a PodView, or an ObjectRef for a pod that has none)."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def uid(self) -> str: ...
    @property
    def resource_version(self) -> str: ...
    @property
    def key(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ObjectRef:
    namespace: str
    name: str
    uid: str
    resource_version: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class EventMetrics(Protocol):
    def event_written(self) -> None: ...

    def event_dropped(self, reason: str) -> None: ...


@dataclass(frozen=True, slots=True)
class PendingEvent:
    regarding: Regarding
    event_type: str  # "Normal" | "Warning"
    reason: str  # "Scheduled" | "FailedScheduling" | ...
    action: str  # "Binding" | "Scheduling"
    note: str
    controller: str  # the profile's schedulerName


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

    def dropped(self, reason: str, event: PendingEvent) -> None:
        self._unlogged[reason] = self._unlogged.get(reason, 0) + 1
        now = self._clock()
        if self._last is not None and now - self._last < self._interval:
            return
        self._last = now
        counts, self._unlogged = self._unlogged, {}
        log.warning(
            "events dropped",
            extra={
                "dropped": counts,
                "last": f"{event.reason} for {event.regarding.key}",
                "next_report_in_seconds": self._interval,
            },
        )


class EventRecorder:
    def __init__(
        self,
        client: KubeClient,
        clock: Callable[[], float],
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        max_queued: int = MAX_QUEUED_EVENTS,
        writers: int = 4,
        *,
        metrics: EventMetrics | None = None,
        rng: random.Random | None = None,
        retry_for_seconds: float = RETRY_FOR_SECONDS,
        first_retry_sleep: float = FIRST_RETRY_SLEEP,
        max_retry_sleep: float = MAX_RETRY_SLEEP,
    ) -> None:
        self._client = client
        self._wall_clock = wall_clock
        self._queue: asyncio.Queue[PendingEvent] = asyncio.Queue(max_queued)
        self._spam = SpamFilter(clock)
        self._writers = writers
        self._instance = socket.gethostname()
        self._metrics = metrics
        self._clock = clock
        self._rng = rng or random.Random()
        self._retry_for = retry_for_seconds
        self._first_sleep = first_retry_sleep
        self._max_sleep = max_retry_sleep
        # Set (and replaced) whenever a write succeeds: the API server is answering again.
        self._answering = asyncio.Event()
        self._drop_log = SampledDropLog(clock)
        self.recorded = 0
        self.written = 0
        self.dropped: dict[str, int] = dict.fromkeys(DROP_REASONS, 0)

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
        event = PendingEvent(regarding, event_type, reason, action, note, controller)
        if not self._spam.allow(regarding.uid):
            self._drop(SPAM_FILTERED, event)
            return
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self._drop(QUEUE_FULL, event)

    def _drop(self, reason: str, event: PendingEvent) -> None:
        self.dropped[reason] += 1
        if self._metrics is not None:
            self._metrics.event_dropped(reason)
        self._drop_log.dropped(reason, event)

    def _body(self, event: PendingEvent) -> dict[str, Any]:
        regarding = event.regarding
        now = self._wall_clock()
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": f"{regarding.name}.{secrets.token_hex(8)}",
                "namespace": regarding.namespace,
            },
            "eventTime": format_micro_time(now),
            "reportingController": event.controller,
            "reportingInstance": f"{event.controller}-{self._instance}",
            "action": event.action,
            "reason": event.reason,
            "type": event.event_type,
            "note": event.note[:1024],
            "regarding": {
                "kind": "Pod",
                "apiVersion": "v1",
                "namespace": regarding.namespace,
                "name": regarding.name,
                "uid": regarding.uid,
                "resourceVersion": regarding.resource_version,
            },
        }

    async def run(self) -> None:
        """Drain the queue with a few concurrent writers until cancelled."""
        async with anyio.create_task_group() as group:
            for index in range(self._writers):
                group.start_soon(self._writer, name=f"event writer {index}")

    async def _writer(self) -> None:
        while True:
            event = await self._queue.get()
            outcome = await self._write(event)
            if outcome is None:
                self.written += 1
                if self._metrics is not None:
                    self._metrics.event_written()
            else:
                self._drop(outcome, event)

    async def _write(self, event: PendingEvent) -> str | None:
        """Write one event, retrying while the API server is unreachable or overloaded;
        None when written, else the drop reason."""
        path = f"/apis/events.k8s.io/v1/namespaces/{event.regarding.namespace}/events"
        body = self._body(event)  # one name for every try: a retried create is idempotent
        sleep = self._first_sleep
        give_up_at = self._clock() + self._retry_for
        attempt = 0
        while True:
            attempt += 1
            try:
                async with asyncio.timeout(WRITE_TIMEOUT):
                    status, answer = await self._client.request("POST", path, body=body)
            except (ApiError, TimeoutError) as exc:
                error = str(exc) or "timed out"
            else:
                if status < 300:
                    self._answering.set()
                    self._answering = asyncio.Event()
                    return None
                if status == 409 and attempt > 1:
                    return None  # AlreadyExists: an earlier try got through unanswered
                if status != 429 and status < 500:
                    log.warning(
                        "event refused",
                        extra={
                            "pod": event.regarding.key,
                            "status": status,
                            "error": status_message(answer),
                        },
                    )
                    return REFUSED
                error = f"{status} {status_message(answer)}"
            if self._clock() >= give_up_at:
                log.warning(
                    "event not written: retry limit exceeded",
                    extra={"pod": event.regarding.key, "reason": event.reason, "error": error},
                )
                return RETRIES_EXHAUSTED
            log.debug(
                "event write failed, retrying",
                extra={"pod": event.regarding.key, "error": error, "retry_in": sleep},
            )
            # Jittered like client-go's wait.Jitter(sleep, 0.25), so recorders do not retry in step.
            await self._wait_to_retry(sleep * (1 + 0.25 * self._rng.random()))
            sleep = min(self._max_sleep, sleep * 2)

    async def _wait_to_retry(self, seconds: float) -> None:
        """Sleep, or less if another write gets through meanwhile."""
        answering = self._answering
        with anyio.move_on_after(seconds):
            await answering.wait()
