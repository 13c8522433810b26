"""Writing events to the API server: the queue, the writers, the body, the retries.

The half of the event recorder (recorder.py) that can run anywhere: in the scheduling process
(``--api-workers 0``), or in an API I/O worker (io_process.py), which then owns the queue and
the writes while the scheduling process keeps the spam filter and the counters. Either way an
event is built and retried the same:

- The body is events.k8s.io/v1, as client-go's tools/events recorder makes it
  (eventTime, reportingController, reportingInstance, action, reason, type, note truncated to
  1024 bytes, regarding), named ``<pod>.<16 hex>``; every try of one event reuses its name.
- A write that gets no answer (connection refused or reset, timeout), a 429 or a 5xx is retried
  with jittered backoff (0.5 s doubling to 5 s, +25 %) for up to 2 minutes per event. Upstream
  tries 12 times with a flat 10 s ±25 % sleep (maxTriesPerEvent, defaultSleepDuration): about as
  long, but it gives up on any HTTP error, 5xx included. Other refusals are final. One write
  succeeding wakes every writer waiting to retry, so a backlog drains as soon as the API server
  is back rather than a full sleep later (upstream retries each event in its own goroutine).
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import anyio

from scheduler.api.times import format_micro_time
from scheduler.client.rest import ApiError, status_message

log = logging.getLogger("scheduler.client.recorder")

MAX_QUEUED_EVENTS = 1000  # client-go tools/events maxQueuedEvents
WRITERS = 4
RETRY_FOR_SECONDS = 120.0  # about client-go's maxTriesPerEvent (12) times its 10 s sleep
FIRST_RETRY_SLEEP = 0.5
MAX_RETRY_SLEEP = 5.0
WRITE_TIMEOUT = 30.0  # an API server that accepts but never answers counts as down
NOTE_LIMIT = 1024  # client-go tools/events: a note is truncated to 1 KiB

QUEUE_FULL = "queue_full"
SPAM_FILTERED = "spam_filtered"
RETRIES_EXHAUSTED = "retries_exhausted"
REFUSED = "refused"
# The API I/O worker holding the event died before saying whether it was written.
WORKER_LOST = "worker_lost"
DROP_REASONS = (QUEUE_FULL, SPAM_FILTERED, RETRIES_EXHAUSTED, REFUSED, WORKER_LOST)


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


@dataclass(frozen=True, slots=True)
class PendingEvent:
    regarding: Regarding
    event_type: str  # "Normal" | "Warning"
    reason: str  # "Scheduled" | "FailedScheduling" | ...
    action: str  # "Binding" | "Scheduling"
    note: str
    controller: str  # the profile's schedulerName

    def describe(self) -> str:
        return f"{self.reason} for {self.regarding.key}"


class EventClient(Protocol):
    """What the writers need of a KubeClient (rest.py): one request, rate limited."""

    async def request(self, method: str, path: str, *, body: Any = None) -> tuple[int, Any]: ...


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    retry_for_seconds: float = RETRY_FOR_SECONDS
    first_sleep: float = FIRST_RETRY_SLEEP
    max_sleep: float = MAX_RETRY_SLEEP


class EventWriter:
    """A bounded queue of events and ``writers`` tasks writing them through ``client``.

    Each event queued ends in exactly one call: ``on_written()`` or ``on_dropped(reason,
    event)``; a full queue drops at once (upstream's DropIfChannelFull).
    """

    def __init__(
        self,
        client: EventClient,
        clock: Callable[[], float],
        instance: str,
        on_written: Callable[[], None],
        on_dropped: Callable[[str, PendingEvent], None],
        *,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        max_queued: int = MAX_QUEUED_EVENTS,
        writers: int = WRITERS,
        retry: RetryPolicy = RetryPolicy(),
        rng: random.Random | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        self._instance = instance
        self._on_written = on_written
        self._on_dropped = on_dropped
        self._wall_clock = wall_clock
        self._queue: asyncio.Queue[PendingEvent] = asyncio.Queue(max_queued)
        self._writers = writers
        self._retry = retry
        self._rng = rng or random.Random()
        # Set (and replaced) whenever a write succeeds: the API server is answering again.
        self._answering = asyncio.Event()

    def put(self, event: PendingEvent) -> None:
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self._on_dropped(QUEUE_FULL, event)

    def body(self, event: PendingEvent) -> dict[str, Any]:
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
            "note": event.note[:NOTE_LIMIT],
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
                self._on_written()
            else:
                self._on_dropped(outcome, event)

    async def _write(self, event: PendingEvent) -> str | None:
        """Write one event, retrying while the API server is unreachable or overloaded;
        None when written, else the drop reason."""
        path = f"/apis/events.k8s.io/v1/namespaces/{event.regarding.namespace}/events"
        body = self.body(event)  # one name for every try: a retried create is idempotent
        sleep = self._retry.first_sleep
        give_up_at = self._clock() + self._retry.retry_for_seconds
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
            sleep = min(self._retry.max_sleep, sleep * 2)

    async def _wait_to_retry(self, seconds: float) -> None:
        """Sleep, or less if another write gets through meanwhile."""
        answering = self._answering
        with anyio.move_on_after(seconds):
            await answering.wait()
