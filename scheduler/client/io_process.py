"""An API I/O worker process (`aiosched-io-N` in ps): the scheduler's HTTP, TLS and watch reading.

Started by ProcessTransport (process_transport.py) as ``python -m scheduler.client.io_process
NAME FD PARENT_PID`` with one end of a socketpair as FD. It reads the ClientSettings from the
first frame, builds its own aiohttp session from the same kubeconfig (HttpTransport), and then
serves frames (framing.py): each request is sent to the API server as it came and its answer
goes back as (status, body bytes); each watch is forwarded as the raw chunks it arrives in,
no faster than the scheduler acknowledges them (a window of framing.STREAM_WINDOW bytes per stream),
so a slow scheduler slows the API server's stream as a slow reader of one socket would. One
worker at a time also writes the scheduler's events (WorkerEvents): queued, built, rate limited
and retried here, their outcomes reported back in batches.

It keeps no state the scheduler needs but the events it is writing: killed, its requests fail
on the scheduler's side as connection errors, its events count as dropped (worker_lost), and a
fresh one takes its place. It ends when the socket closes or when its
parent dies (PR_SET_PDEATHSIG, and the parent pid checked once at start for the race).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

import aiohttp
from kubernetes_asyncio.client import Configuration

from apimachinery.child_process import Usage, become_helper
from apimachinery.eventloop import run_event_loop
from observability.logs import TextFormatter
from scheduler.client import framing
from scheduler.client.event_writer import EventWriter, ObjectRef, PendingEvent, RetryPolicy
from scheduler.client.kubeconfig import (
    ClientSettings,
    KubeconfigError,
    load_configuration,
    settings_from_json,
)
from scheduler.client.rest import KubeClient
from scheduler.client.transport import ApiError, HttpTransport

log = logging.getLogger(__name__)

OUTCOMES_EVERY = 0.05  # seconds between two reports of written and dropped events, at most


class _Window:
    """One stream's flow control: bytes sent minus bytes the scheduler said it consumed."""

    def __init__(self) -> None:
        self.outstanding = 0
        self._room = asyncio.Event()
        self._room.set()

    def sent(self, size: int) -> None:
        self.outstanding += size
        if self.outstanding >= framing.STREAM_WINDOW:
            self._room.clear()

    def consumed(self, size: int) -> None:
        self.outstanding -= size
        if self.outstanding < framing.STREAM_WINDOW:
            self._room.set()

    async def wait(self) -> None:
        await self._room.wait()


class WorkerEvents:
    """The events queue and writers of the scheduler's recorder, in this worker.

    The scheduling process keeps the spam filter and the counters and sends each event as one
    EVENT frame; here they are queued, written through a KubeClient of the events' own qps and
    burst (kube-scheduler's separate events clientset) and retried as in process
    (event_writer.py). What became of them goes back in one EVENTS_DONE frame per
    OUTCOMES_EVERY seconds at most: counts, the last drop, the requests for rest_client metrics.
    """

    def __init__(
        self,
        config: framing.EventConfig,
        client: KubeClient,
        report: Callable[[framing.EventOutcomes], None],
    ) -> None:
        client.set_rate_limit(config.qps, config.burst)
        client.observe_requests(self)
        self._report = report
        self._writer = EventWriter(
            client,
            time.monotonic,
            config.instance,
            self._written,
            self._dropped,
            max_queued=config.max_queued,
            writers=config.writers,
            retry=RetryPolicy(
                config.retry_for_seconds, config.first_retry_sleep, config.max_retry_sleep
            ),
        )
        self._task = asyncio.get_running_loop().create_task(self._writer.run())
        self._outcomes = framing.EventOutcomes(0, {}, None, [])
        self._flush_at: asyncio.TimerHandle | None = None

    def put(self, fields: framing.EventFields) -> None:
        regarding = ObjectRef(fields.namespace, fields.name, fields.uid, fields.resource_version)
        self._writer.put(
            PendingEvent(
                regarding,
                fields.event_type,
                fields.reason,
                fields.action,
                fields.note,
                fields.controller,
            )
        )

    def request_done(self, method: str, host: str, code: int | None, seconds: float) -> None:
        self._outcomes.requests.append((code, seconds))
        self._soon()

    def _written(self) -> None:
        self._outcomes = self._outcomes._replace(written=self._outcomes.written + 1)
        self._soon()

    def _dropped(self, reason: str, event: PendingEvent) -> None:
        dropped = self._outcomes.dropped
        dropped[reason] = dropped.get(reason, 0) + 1
        self._outcomes = self._outcomes._replace(last_dropped=event.describe())
        self._soon()

    def _soon(self) -> None:
        if self._flush_at is None:
            self._flush_at = asyncio.get_running_loop().call_later(OUTCOMES_EVERY, self._flush)

    def _flush(self) -> None:
        self._flush_at = None
        outcomes, self._outcomes = self._outcomes, framing.EventOutcomes(0, {}, None, [])
        self._report(outcomes)

    def close(self) -> None:
        self._task.cancel()
        if self._flush_at is not None:
            self._flush_at.cancel()


class WorkerProtocol(asyncio.Protocol):
    """The worker's end of the socket: frames in, requests to the API server, frames out."""

    def __init__(self, closed: asyncio.Future[None]) -> None:
        self._closed = closed
        self._reader = framing.FrameReader()
        self._transport: asyncio.Transport | None = None
        self._http: HttpTransport | None = None
        self._ready = asyncio.Event()
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._windows: dict[int, _Window] = {}
        self._configuration: Configuration | None = None
        self._settings: ClientSettings | None = None
        self._events: WorkerEvents | None = None
        self._writer: framing.FrameWriter | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._writer = framing.FrameWriter(self._transport)

    def connection_lost(self, exc: Exception | None) -> None:
        for task in self._tasks.values():
            task.cancel()
        if self._events is not None:
            self._events.close()
        if not self._closed.done():
            self._closed.set_result(None)

    def _send(self, kind: int, request_id: int, payload: bytes = b"") -> None:
        if self._writer is not None:
            self._writer.send(kind, request_id, payload)

    def _event(self, kind: int, payload: bytes) -> None:
        """An EVENTS_CONFIG or EVENT frame."""
        if kind == framing.EVENTS_CONFIG:
            assert self._http is not None and self._configuration is not None
            assert self._settings is not None
            if self._events is not None:
                self._events.close()
            self._events = WorkerEvents(
                framing.parse_event_config(payload),
                KubeClient(self._configuration, self._settings, transport=self._http),
                lambda outcomes: self._send(
                    framing.EVENTS_DONE, 0, framing.event_outcomes_payload(outcomes)
                ),
            )
        elif self._events is not None:
            self._events.put(framing.parse_event(payload))

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._reader.feed(data)
        except framing.ProtocolError as exc:
            log.error("bad frame from the scheduler; exiting", extra={"error": str(exc)})
            assert self._transport is not None
            self._transport.abort()
            return
        for kind, request_id, payload in frames:
            if kind == framing.REQUEST:
                self._start(request_id, self._request(request_id, payload))
            elif kind == framing.OPEN_STREAM:
                self._windows[request_id] = _Window()
                self._start(request_id, self._stream(request_id, payload))
            elif kind == framing.CREDIT:
                window = self._windows.get(request_id)
                if window is not None:
                    window.consumed(framing.U32.unpack_from(payload)[0])
            elif kind == framing.CANCEL:
                task = self._tasks.get(request_id)
                if task is not None:
                    task.cancel()
            elif kind == framing.EVENT or kind == framing.EVENTS_CONFIG:
                try:
                    self._event(kind, payload)
                except framing.ProtocolError as exc:
                    log.error("bad event from the scheduler; exiting", extra={"error": str(exc)})
                    assert self._transport is not None
                    self._transport.abort()
                    return
            elif kind == framing.CONFIG:
                self._start(0, self._configure(payload))

    def _start(self, request_id: int, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks[request_id] = task
        task.add_done_callback(lambda _: self._finished(request_id, task))

    def _finished(self, request_id: int, task: asyncio.Task[None]) -> None:
        if self._tasks.get(request_id) is task:
            del self._tasks[request_id]
            self._windows.pop(request_id, None)

    async def _configure(self, payload: bytes) -> None:
        try:
            settings = settings_from_json(payload)
            configuration = await load_configuration(settings)
            self._http = HttpTransport(configuration, settings.user_agent, settings.max_connections)
            self._configuration, self._settings = configuration, settings
        except (KubeconfigError, OSError, ValueError, TypeError) as exc:
            self._send(
                framing.FAILED, 0, framing.failure_payload(f"cannot build the API client: {exc}")
            )
            assert self._transport is not None
            self._transport.close()
            return
        self._ready.set()
        self._send(framing.READY, 0, framing.U32.pack(os.getpid()))

    async def _request(self, request_id: int, payload: bytes) -> None:
        await self._ready.wait()
        assert self._http is not None
        try:
            method, path, query, content_type, body = framing.parse_request(payload)
            status, answer = await self._http.send(
                method, path, dict(query), body or None, content_type
            )
        except (ApiError, framing.ProtocolError) as exc:
            self._failed(request_id, exc)
            return
        self._send(framing.RESPONSE, request_id, framing.status_payload(status, answer))

    async def _stream(self, request_id: int, payload: bytes) -> None:
        await self._ready.wait()
        assert self._http is not None
        window = self._windows[request_id]
        try:
            _, path, query, _, _ = framing.parse_request(payload)
            params: Mapping[str, str] = dict(query)
            async with self._http.stream(path, params) as (status, body):
                self._send(framing.STREAM_STATUS, request_id, framing.U16.pack(status))
                reader = cast(aiohttp.StreamReader, body)
                async for chunk in reader.iter_any():
                    await window.wait()
                    window.sent(len(chunk))
                    self._send(framing.STREAM_DATA, request_id, chunk)
        except (ApiError, framing.ProtocolError) as exc:
            self._failed(request_id, exc)
            return
        self._send(framing.STREAM_END, request_id)

    def _failed(self, request_id: int, exc: Exception) -> None:
        if isinstance(exc, ApiError):
            payload = framing.failure_payload(str(exc), exc.reason, exc.untrusted_certificate)
        else:
            payload = framing.failure_payload(str(exc))
        self._send(framing.FAILED, request_id, payload)

    async def close(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()
        if self._events is not None:
            self._events.close()
        if self._http is not None:
            await self._http.close()


async def serve(fd: int) -> None:
    loop = asyncio.get_running_loop()
    closed: asyncio.Future[None] = loop.create_future()
    sock = socket.socket(fileno=fd)
    _, protocol = await loop.create_connection(lambda: WorkerProtocol(closed), sock=sock)
    try:
        await closed
    finally:
        await protocol.close()


class WorkerLogFormatter(TextFormatter):
    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name

    def format(self, record: logging.LogRecord) -> str:
        return f"{self._name} {super().format(record)}"


def main(argv: list[str]) -> int:
    try:
        name, fd = become_helper(argv, "scheduler.client.io_process")
    except Usage:
        return 2
    # The scheduler's text format, structured keys included (the event writers log the pod
    # and the API server's answer as keys), behind the worker's name.
    handler = logging.StreamHandler()
    handler.setFormatter(WorkerLogFormatter(name))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    run_event_loop(serve(fd))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
