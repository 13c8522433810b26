"""The scheduler's side of the API I/O worker processes: a Transport over framed sockets.

ProcessTransport starts N workers (io_process.py, `aiosched-io-0` ... in ps), each on one end of
a socketpair, and sends each request to one of them (round robin over the live ones; a watch to
the one holding the fewest). What this process does per request is one frame out and one frame
in; TLS, HTTP parsing and the aiohttp machinery run in the workers. Events are handed to one
worker at a time, one EVENT frame each, and written there (``send_event``, recorder.py).

A worker that dies (kill -9, a crash) fails everything it had in flight as ApiError, exactly as
a broken connection would: a bind is retried by the binding cycle (and a 409 then says it got
through), a watch relists; the events it held are reported lost (the recorder counts them
dropped, reason worker_lost). Its slot starts a fresh worker; when a slot
fails to start MAX_START_FAILURES times in a row, ``failed()`` raises WorkersFailed so the
scheduler exits non-zero rather than limping on or hanging.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import os
import socket
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Protocol, cast

from scheduler.client import framing
from scheduler.client.kubeconfig import ClientSettings, settings_to_json
from scheduler.client.transport import ApiError, StreamBody

log = logging.getLogger(__name__)

START_TIMEOUT = 60.0  # a worker imports aiohttp and kubernetes-asyncio, then reads kubeconfig
NO_WORKER_WAIT = 10.0  # how long a request waits for a restarting worker before failing
MAX_START_FAILURES = 5
HEALTHY_AFTER = 30.0  # a worker that ran this long resets its slot's failure count
STOP_TIMEOUT = 5.0
MAX_LINE = 64 << 20  # a watch line longer than this is not an event
SOCKET_BUFFER = 4 << 20
CREDIT_BATCH = framing.STREAM_WINDOW // 8


def worker_socketpair() -> tuple[socket.socket, socket.socket]:
    """A connected pair for a worker process (ours, the child's), with buffers of
    SOCKET_BUFFER each way so that a burst of frames does not stall the sender."""
    ours, theirs = socket.socketpair()
    for end in (ours, theirs):
        end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
        end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
    return ours, theirs


def default_api_workers(cpu_count: int | None) -> int:
    """`aiosched run --api-workers`'s default for a machine of ``cpu_count`` cores.

    0 (one process) on 1 core, where the workers could only take turns with the scheduling loop.
    From 2 cores, one worker per 4 cores, at least 1 and at most 4: on 2 cores one worker
    doubled SchedulingBasic/500Nodes' pods/s for about the same total CPU, and the other cores
    are left to the loop and to Filter and Score (ARCHITECTURE.md, Processes, has the figures).
    """
    cores = cpu_count or 1
    if cores < 2:
        return 0
    return max(1, min(4, cores // 4))


class WorkersFailed(Exception):
    """API I/O workers keep dying at start: the scheduler cannot reach its API server."""


class WorkerStream:
    """A watch's body as a worker forwards it: chunks in, lines out, credit back."""

    def __init__(self, credit: collections.abc.Callable[[int], None]) -> None:
        self.status: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._chunks: collections.deque[bytes] = collections.deque()
        self._wakeup: asyncio.Future[None] | None = None
        self._ended = False
        self._error: ApiError | None = None
        self._credit = credit
        self._uncredited = 0

    @property
    def finished(self) -> bool:
        return self._ended or self._error is not None

    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)

    def push(self, chunk: bytes) -> None:
        self._chunks.append(chunk)
        self._wake()

    def end(self) -> None:
        self._ended = True
        self._wake()

    def fail(self, error: ApiError) -> None:
        self._error = error
        if not self.status.done():
            self.status.set_exception(error)
        self._wake()

    async def _next(self) -> bytes | None:
        while not self._chunks:
            if self._error is not None:
                raise ApiError(str(self._error), reason=self._error.reason)
            if self._ended:
                return None
            self._wakeup = asyncio.get_running_loop().create_future()
            await self._wakeup
        chunk = self._chunks.popleft()
        # Credit in batches: a frame (and a write) per MiB read rather than per chunk. The
        # worker stops only with a whole window unacknowledged, so batching cannot stall it.
        self._uncredited += len(chunk)
        if self._uncredited >= CREDIT_BATCH:
            self._credit(self._uncredited)
            self._uncredited = 0
        return chunk

    async def read(self) -> bytes:
        parts = []
        while (chunk := await self._next()) is not None:
            parts.append(chunk)
        return b"".join(parts)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        """The body's lines, without their line ends."""
        carry = b""
        while (chunk := await self._next()) is not None:
            if carry:
                chunk = carry + chunk
            lines = chunk.split(b"\n")
            carry = lines.pop()
            if len(carry) > MAX_LINE:
                raise ApiError(f"watch line longer than {MAX_LINE} bytes")
            for line in lines:
                yield line
        if carry:
            yield carry


class EventListener(Protocol):
    """Hears what became of the events sent to the workers (the EventRecorder, recorder.py)."""

    def events_done(self, outcomes: framing.EventOutcomes) -> None: ...

    def events_lost(self, count: int) -> None:
        """A worker died holding ``count`` events: unknown whether they were written."""
        ...


class WorkerConnection(asyncio.Protocol):
    """This process's end of one worker's socket."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.ready: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.pending: dict[int, asyncio.Future[tuple[int, bytes]]] = {}
        self.streams: dict[int, WorkerStream] = {}
        # Events sent to this worker whose outcome it has not reported yet.
        self.events_outstanding = 0
        self.events_configured = False
        self.events: EventListener | None = None
        self._reader = framing.FrameReader()
        self._transport: asyncio.Transport | None = None
        self._writer: framing.FrameWriter | None = None

    @property
    def alive(self) -> bool:
        # A transport closing (the worker died, its connection_lost not run yet) cannot send.
        return (
            self.ready.done()
            and not self.ready.exception()
            and not self.lost.done()
            and self._transport is not None
            and not self._transport.is_closing()
        )

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._writer = framing.FrameWriter(self._transport)

    def send(self, kind: int, request_id: int, payload: bytes = b"") -> None:
        if self._writer is None or self._transport is None or self._transport.is_closing():
            raise ApiError(f"API I/O worker {self.name} is gone")
        self._writer.send(kind, request_id, payload)

    def close(self) -> None:
        if self._transport is not None:
            if self._writer is not None:
                self._writer.flush()
            self._transport.close()

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._reader.feed(data)
        except framing.ProtocolError as exc:
            log.error(
                "bad frame from an API I/O worker", extra={"worker": self.name, "error": str(exc)}
            )
            assert self._transport is not None
            self._transport.abort()
            return
        for kind, request_id, payload in frames:
            if kind == framing.RESPONSE:
                future = self.pending.pop(request_id, None)
                if future is not None and not future.done():
                    future.set_result(framing.parse_status(payload))
            elif kind == framing.STREAM_DATA:
                stream = self.streams.get(request_id)
                if stream is not None:
                    stream.push(payload)
            elif kind == framing.STREAM_STATUS:
                stream = self.streams.get(request_id)
                if stream is not None and not stream.status.done():
                    stream.status.set_result(framing.U16.unpack_from(payload)[0])
            elif kind == framing.STREAM_END:
                stream = self.streams.get(request_id)
                if stream is not None:
                    stream.end()
            elif kind == framing.FAILED:
                self._failed(request_id, *framing.parse_failure(payload))
            elif kind == framing.EVENTS_DONE:
                self._events_done(payload)
            elif kind == framing.READY and not self.ready.done():
                self.ready.set_result(framing.U32.unpack_from(payload)[0])

    def _events_done(self, payload: bytes) -> None:
        try:
            outcomes = framing.parse_event_outcomes(payload)
        except framing.ProtocolError as exc:
            log.error("bad event outcomes", extra={"worker": self.name, "error": str(exc)})
            return
        done = outcomes.written + sum(outcomes.dropped.values())
        self.events_outstanding = max(0, self.events_outstanding - done)
        if self.events is not None:
            self.events.events_done(outcomes)

    def _failed(self, request_id: int, message: str, reason: str, untrusted: bool) -> None:
        if request_id == 0:
            if not self.ready.done():
                self.ready.set_exception(WorkersFailed(message))
            return
        error = ApiError(message, reason=reason, untrusted_certificate=untrusted)
        future = self.pending.pop(request_id, None)
        if future is not None and not future.done():
            future.set_exception(error)
        stream = self.streams.get(request_id)
        if stream is not None:
            stream.fail(error)

    def connection_lost(self, exc: Exception | None) -> None:
        message = f"API I/O worker {self.name} is gone"
        if not self.ready.done():
            self.ready.set_exception(WorkersFailed(f"{message} before it was ready"))
        if not self.lost.done():
            self.lost.set_result(None)
        pending, self.pending = self.pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(ApiError(message))
        for stream in self.streams.values():
            stream.fail(ApiError(message))
        lost, self.events_outstanding = self.events_outstanding, 0
        if lost and self.events is not None:
            self.events.events_lost(lost)


class ProcessTransport:
    """Requests and watches through N API I/O worker processes (see the module docstring)."""

    def __init__(self, settings: ClientSettings, host: str, workers: int) -> None:
        self._settings = settings
        self._host = (host or "").rstrip("/")
        self._slots: list[WorkerConnection | None] = [None] * workers
        self._processes: list[asyncio.subprocess.Process | None] = [None] * workers
        self._ids = itertools.count(1)
        self._turn = itertools.count()
        self._someone_alive = asyncio.Event()
        self._failure: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._keepers: list[asyncio.Task[None]] = []
        self._closing = False
        self.restarts = 0
        # Events go to one worker at a time, so that one queue and one token bucket hold them
        # as upstream's one recorder does (recorder.py); another takes over when it dies.
        self._events_worker: WorkerConnection | None = None
        self._events_listener: EventListener | None = None
        self._events_config = b""

    @classmethod
    async def start(cls, settings: ClientSettings, host: str, workers: int) -> ProcessTransport:
        """Start the workers; return once every one is ready (WorkersFailed if one cannot)."""
        transport = cls(settings, host, workers)
        try:  # at once: each spends about half a second of CPU importing its libraries
            await asyncio.gather(*(transport._start_worker(index) for index in range(workers)))
        except BaseException:
            await transport.close()
            raise
        for index in range(workers):
            transport._keepers.append(
                asyncio.create_task(transport._keep_running(index), name=f"aiosched-io-{index}")
            )
        return transport

    @property
    def host(self) -> str:
        return self._host

    @property
    def worker_pids(self) -> list[int]:
        return [p.pid for p in self._processes if p is not None and p.returncode is None]

    async def _start_worker(self, index: int) -> None:
        name = f"aiosched-io-{index}"
        ours, theirs = worker_socketpair()
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "scheduler.client.io_process",
                name,
                str(theirs.fileno()),
                str(os.getpid()),
                pass_fds=(theirs.fileno(),),
                stdin=asyncio.subprocess.DEVNULL,
            )
        except OSError as exc:
            ours.close()
            raise WorkersFailed(f"cannot start {name}: {exc}") from None
        finally:
            theirs.close()
        self._processes[index] = process
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(lambda: WorkerConnection(name), sock=ours)
        connection.send(framing.CONFIG, 0, settings_to_json(self._settings))
        try:
            async with asyncio.timeout(START_TIMEOUT):
                await connection.ready
        except BaseException as exc:
            connection.close()
            await self._reap(process)
            if isinstance(exc, TimeoutError):
                raise WorkersFailed(f"{name} was not ready after {START_TIMEOUT:.0f}s") from None
            raise
        self._slots[index] = connection
        self._someone_alive.set()

    async def _reap(self, process: asyncio.subprocess.Process) -> int:
        try:
            async with asyncio.timeout(STOP_TIMEOUT):
                return await process.wait()
        except TimeoutError:
            process.kill()
            return await process.wait()

    async def _keep_running(self, index: int) -> None:
        """Restart slot ``index``'s worker whenever it dies; give up after repeated failures."""
        failures = 0
        while True:
            connection, process = self._slots[index], self._processes[index]
            assert connection is not None and process is not None
            started = time.monotonic()
            await connection.lost
            connection.close()
            code = await self._reap(process)
            self._slots[index] = None
            if not any(slot is not None for slot in self._slots):
                self._someone_alive.clear()
            if self._closing:
                return
            if time.monotonic() - started >= HEALTHY_AFTER:
                failures = 0
            log.warning(
                "API I/O worker exited; starting another",
                extra={"worker": connection.name, "pid": process.pid, "exit_code": code},
            )
            while True:
                await asyncio.sleep(min(2.0, 0.1 * 2**failures))
                try:
                    await self._start_worker(index)
                except WorkersFailed as exc:
                    failures += 1
                    log.error(
                        "API I/O worker failed to start",
                        extra={"worker": connection.name, "attempt": failures, "error": str(exc)},
                    )
                    if failures >= MAX_START_FAILURES:
                        if not self._failure.done():
                            self._failure.set_exception(
                                WorkersFailed(
                                    f"API I/O worker {connection.name} failed to start "
                                    f"{failures} times in a row: {exc}"
                                )
                            )
                        return
                    continue
                self.restarts += 1
                break

    async def failed(self) -> None:
        """Return never; raise WorkersFailed when a worker cannot be started again."""
        await asyncio.shield(self._failure)

    async def _worker(self, for_stream: bool = False) -> WorkerConnection:
        while True:
            alive = [slot for slot in self._slots if slot is not None and slot.alive]
            if alive:
                if for_stream:
                    return min(alive, key=lambda slot: len(slot.streams))
                return alive[next(self._turn) % len(alive)]
            if self._closing or self._failure.done():
                raise ApiError("no API I/O worker is running")
            self._someone_alive.clear()
            try:
                async with asyncio.timeout(NO_WORKER_WAIT):
                    await self._someone_alive.wait()
            except TimeoutError:
                raise ApiError("no API I/O worker is running") from None

    async def send(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        data: bytes | None,
        content_type: str | None,
    ) -> tuple[int, bytes]:
        worker = await self._worker()
        request_id = next(self._ids)
        future: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        worker.pending[request_id] = future
        try:
            worker.send(
                framing.REQUEST,
                request_id,
                framing.request_payload(method, path, params, content_type, data),
            )
            return await future
        except asyncio.CancelledError:
            if worker.pending.pop(request_id, None) is not None and worker.alive:
                worker.send(framing.CANCEL, request_id)
            raise
        finally:
            worker.pending.pop(request_id, None)

    @asynccontextmanager
    async def stream(
        self, path: str, params: Mapping[str, str]
    ) -> AsyncIterator[tuple[int, StreamBody]]:
        worker = await self._worker(for_stream=True)
        request_id = next(self._ids)

        def credit(size: int) -> None:
            if worker.alive:
                worker.send(framing.CREDIT, request_id, framing.U32.pack(size))

        body = WorkerStream(credit)
        worker.streams[request_id] = body
        try:
            worker.send(
                framing.OPEN_STREAM,
                request_id,
                framing.request_payload("GET", path, params, None, None),
            )
            yield await body.status, body
        finally:
            del worker.streams[request_id]
            if not body.finished and worker.alive:
                worker.send(framing.CANCEL, request_id)

    def attach_events(self, listener: EventListener, config: framing.EventConfig) -> None:
        """Have the workers write events as ``config`` says and report to ``listener`` (one
        recorder per transport: a second one attached takes the reports over)."""
        self._events_listener = listener
        self._events_config = framing.event_config_payload(config)
        for slot in self._slots:
            if slot is not None:  # a worker configured again forgets the events it held
                slot.events = listener
                slot.events_configured = False
                slot.events_outstanding = 0

    @property
    def events_outstanding(self) -> int:
        """Events sent to a live worker and not yet reported written or dropped."""
        return sum(slot.events_outstanding for slot in self._slots if slot is not None)

    def send_event(self, payload: bytes) -> bool:
        """Hand one event (framing.event_payload) to the events worker; False when no worker
        is running to take it."""
        worker = self._events_worker
        if worker is None or not worker.alive:
            alive = [slot for slot in self._slots if slot is not None and slot.alive]
            if not alive:
                return False
            worker = self._events_worker = alive[0]
        # `alive` (transport open) means these sends cannot fail in this same step
        if not worker.events_configured:
            worker.events = self._events_listener
            worker.send(framing.EVENTS_CONFIG, 0, self._events_config)
            worker.events_configured = True
        worker.send(framing.EVENT, 0, payload)
        worker.events_outstanding += 1
        return True

    async def wait_for_worker(self) -> None:
        """Return once a worker is running (at once if one is)."""
        while not any(slot is not None and slot.alive for slot in self._slots):
            # Never raises: when no worker can start, failed() ends the scheduler.
            self._someone_alive.clear()
            await self._someone_alive.wait()

    async def close(self) -> None:
        """Stop the workers: their sockets close, they exit (killed after STOP_TIMEOUT)."""
        self._closing = True
        for keeper in self._keepers:
            keeper.cancel()
        for slot in self._slots:
            if slot is not None:
                slot.close()
        for process in self._processes:
            if process is not None and process.returncode is None:
                await self._reap(process)
