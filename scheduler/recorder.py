"""Event recording and pod status updates that never block the scheduling loop.

Events go out as events.k8s.io/v1 Events (what upstream's scheduler writes), from a bounded
queue drained by one writer task. A per-object spam filter (upstream's default: a burst of 25,
then one more every 5 minutes) keeps a pod that fails for hours from flooding the API server.
When the queue is full the newest event is dropped and counted: losing an event is better than
stalling scheduling.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from scheduler.api.objects import PodView
from scheduler.api.times import format_micro_time
from scheduler.client import ApiError, KubeClient, status_message

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PendingEvent:
    pod: PodView
    event_type: str  # "Normal" | "Warning"
    reason: str  # "Scheduled" | "FailedScheduling" | ...
    action: str  # "Binding" | "Scheduling"
    note: str
    controller: str  # the profile's schedulerName


class SpamFilter:
    """Token bucket per regarding-object: `burst` events, then one per `refill_seconds`."""

    def __init__(
        self, clock: Callable[[], float], burst: int = 25, refill_seconds: float = 300.0
    ) -> None:
        self._clock = clock
        self._burst = burst
        self._refill = refill_seconds
        self._buckets: dict[str, tuple[float, float]] = {}  # uid → (tokens, last time)

    def allow(self, key: str) -> bool:
        now = self._clock()
        tokens, last = self._buckets.get(key, (float(self._burst), now))
        tokens = min(self._burst, tokens + (now - last) / self._refill)
        if tokens < 1:
            self._buckets[key] = (tokens, now)
            return False
        self._buckets[key] = (tokens - 1, now)
        if len(self._buckets) > 50_000:  # forget long-quiet objects
            self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < self._refill}
        return True


class EventRecorder:
    def __init__(
        self,
        client: KubeClient,
        clock: Callable[[], float],
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        max_queued: int = 2000,
        writers: int = 4,
    ) -> None:
        self._client = client
        self._wall_clock = wall_clock
        self._queue: asyncio.Queue[PendingEvent] = asyncio.Queue(max_queued)
        self._spam = SpamFilter(clock)
        self._writers = writers
        self._instance = socket.gethostname()
        self.dropped = 0
        self.written = 0

    def record(
        self, pod: PodView, event_type: str, reason: str, action: str, note: str, controller: str
    ) -> None:
        """Queue an event; returns at once. Dropped (and counted) if filtered or queue full."""
        if not self._spam.allow(pod.uid):
            self.dropped += 1
            return
        try:
            self._queue.put_nowait(PendingEvent(pod, event_type, reason, action, note, controller))
        except asyncio.QueueFull:
            self.dropped += 1

    def _body(self, event: PendingEvent) -> dict[str, Any]:
        pod = event.pod
        now = self._wall_clock()
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": f"{pod.name}.{secrets.token_hex(8)}",
                "namespace": pod.namespace,
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
                "namespace": pod.namespace,
                "name": pod.name,
                "uid": pod.uid,
                "resourceVersion": pod.resource_version,
            },
        }

    async def run(self) -> None:
        """Drain the queue with a few concurrent writers until cancelled."""
        async with asyncio.TaskGroup() as group:
            for _ in range(self._writers):
                group.create_task(self._writer())

    async def _writer(self) -> None:
        while True:
            event = await self._queue.get()
            path = f"/apis/events.k8s.io/v1/namespaces/{event.pod.namespace}/events"
            try:
                status, body = await self._client.request("POST", path, body=self._body(event))
            except ApiError as exc:
                log.warning("event write failed", extra={"pod": event.pod.key, "error": str(exc)})
                continue
            if status >= 300:
                log.warning(
                    "event write refused",
                    extra={"pod": event.pod.key, "status": status, "error": status_message(body)},
                )
            else:
                self.written += 1
