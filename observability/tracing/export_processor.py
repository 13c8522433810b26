"""The span processor that hands finished spans to the trace export process (export_process.py)
instead of exporting them from a thread of the scheduling process.

Why: the SDK's BatchSpanProcessor exports from a thread, and a thread shares the GIL. With every
pod traced, encoding OTLP cost that thread about 0.14 ms of CPU per pod on SchedulingBasic, time
the scheduling loop waited for the lock. Here the loop only appends each span to a queue; a
thread of this process takes batches of them, reduces them to plain tuples (span_wire.py: about
14 µs per traced pod against 51 to encode) and writes them to the export process, which encodes
and sends them on another core.

The queue and batch sizes and the delay are the config's (OTEL_BSP_*), as the SDK's processor
uses them: spans beyond max_queue_size are dropped (and counted in a warning). A batch that the
export process did not take (it died) is sent again to the one started in its place; spans it
had taken and not yet exported are lost with it, as they would be with the scheduler's. After
MAX_START_FAILURES failed starts in a row the spans are exported from this process, as without
the export process, and an error says so.
"""

from __future__ import annotations

import collections
import logging
import os
import socket
import subprocess
import sys
import threading
import time

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from observability.tracing import span_wire
from observability.tracing.config import TracingConfig
from observability.tracing.export_frames import (
    CONFIG,
    EXPORT_PROCESS_NAME,
    FLUSH,
    FLUSH_TIMEOUT,
    FLUSHED,
    READY,
    SPANS,
    FrameError,
    config_to_json,
    read_frame,
    send_frame,
)
from observability.tracing.exporters import batch_processor_for

log = logging.getLogger("observability.tracing")

START_TIMEOUT = 30.0  # seconds for a new export process to say READY (imports, exporters)
MAX_START_FAILURES = 5
#: The export process's exit after the socket closes: its last export's timeout, and this.
STOP_MARGIN = 5.0


def default_trace_export_process(cpu_count: int | None) -> bool:
    """On from 4 cores. Below, the export process takes turns with the scheduling loop, the API
    I/O worker and the API server: on 2 cores, with every pod traced, it cut the loop's CPU per
    pod but lowered throughput (docs/processes.md)."""
    return (cpu_count or 1) >= 4


class ExportProcessSpanProcessor(SpanProcessor):
    """Spans to the trace export process, in batches (see the module docstring)."""

    def __init__(self, config: TracingConfig, name: str = EXPORT_PROCESS_NAME) -> None:
        self._config = config
        self._name = name
        self._max_queue = config.max_queue_size
        self._batch_size = config.max_export_batch_size
        self._delay = config.schedule_delay_millis / 1000
        self._queue: collections.deque[ReadableSpan] = collections.deque()
        self._wake = threading.Condition()
        self._flushes: list[tuple[threading.Event, list[bool], int]] = []
        self._shutting_down = False
        self._sender_waiting = False  # the sender is waiting on _wake: a full batch wakes it
        self._dropped = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._start_failures = 0
        self._fallback: SpanProcessor | None = None
        self.restarts = 0
        self._sender = threading.Thread(target=self._run, name=f"{name}-sender", daemon=True)
        self._sender.start()

    @property
    def pid(self) -> int | None:
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    # ---- the scheduling loop's side --------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        if not span.context.trace_flags.sampled or self._shutting_down:
            return
        fallback = self._fallback
        if fallback is not None:
            fallback.on_end(span)
            return
        queue = self._queue
        if len(queue) >= self._max_queue:
            self._dropped += 1
            return
        queue.append(span)
        if len(queue) >= self._batch_size and self._sender_waiting:
            with self._wake:
                self._wake.notify()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        fallback = self._fallback
        if fallback is not None:
            return fallback.force_flush(timeout_millis)
        done = threading.Event()
        answer = [False]
        with self._wake:
            if self._shutting_down:
                return False
            self._flushes.append((done, answer, timeout_millis))
            self._wake.notify()
        return done.wait(timeout_millis / 1000) and answer[0]

    def shutdown(self) -> None:
        with self._wake:
            if self._shutting_down:
                return
            self._shutting_down = True
            self._wake.notify()
        self._sender.join(self._config.export_timeout_millis / 1000 + START_TIMEOUT)
        if self._fallback is not None:
            self._fallback.shutdown()

    # ---- the sender thread -----------------------------------------------------------------

    def _run(self) -> None:
        try:
            while True:
                with self._wake:
                    self._sender_waiting = True
                    if not (
                        len(self._queue) >= self._batch_size or self._flushes or self._shutting_down
                    ):
                        self._wake.wait(self._delay)
                    self._sender_waiting = False
                    flushes, self._flushes = self._flushes, []
                    stopping = self._shutting_down
                self._send_queued()
                for done, answer, timeout_ms in flushes:
                    answer[0] = self._flush(timeout_ms)
                    done.set()
                if stopping:
                    self._send_queued()
                    break
        finally:
            self._stop_process()

    def _send_queued(self) -> None:
        queue = self._queue
        while queue:
            batch = [queue.popleft() for _ in range(min(len(queue), self._batch_size))]
            self._warn_dropped()
            if self._fallback is None:
                payload = self._dumps(batch)
                if payload is None or self._send(SPANS, payload):
                    continue
            if self._fallback is None:
                log.warning("span batch dropped", extra={"spans": len(batch)})
                continue
            for span in batch:  # the export process could not be started: export here
                self._fallback.on_end(span)

    def _dumps(self, batch: list[ReadableSpan]) -> bytes | None:
        """The batch as a frame's payload; a span that cannot cross (an attribute value of no
        type OpenTelemetry allows) is dropped alone, with an error naming it."""
        try:
            return span_wire.dumps(batch)
        except span_wire.WireError:
            pass
        crossing = []
        for span in batch:
            try:
                span_wire.dumps([span])
            except span_wire.WireError as exc:
                log.error("span dropped", extra={"span": span.name, "error": str(exc)})
                continue
            crossing.append(span)
        return span_wire.dumps(crossing) if crossing else None

    def _warn_dropped(self) -> None:
        if self._dropped:
            dropped, self._dropped = self._dropped, 0
            log.warning(
                "trace export queue full, spans dropped",
                extra={"dropped": dropped, "maxQueueSize": self._max_queue},
            )

    def _send(self, kind: int, payload: bytes) -> bool:
        """Send one frame; a process that died before taking it is replaced and the frame sent
        to the new one (once). False when no process took it."""
        for _attempt in range(2):
            sock = self._ensure_process()
            if sock is None:
                return False
            try:
                send_frame(sock, kind, payload)
                return True
            except OSError as exc:
                self._lost(f"send failed: {exc}")
        return False

    def _flush(self, timeout_ms: int) -> bool:
        if self._fallback is not None:
            return self._fallback.force_flush(timeout_ms)
        if not self._send(FLUSH, FLUSH_TIMEOUT.pack(timeout_ms)):
            return False
        sock = self._sock
        assert sock is not None
        sock.settimeout(timeout_ms / 1000 + 1.0)
        try:
            kind, payload = read_frame(sock)
        except (OSError, FrameError) as exc:
            # The export process answers within the flush's own timeout (its processor's
            # force_flush gives up then); no answer a second later means it is wedged.
            self._lost(f"no answer to a flush: {exc}")
            return False
        finally:
            if self._sock is sock:
                sock.settimeout(None)
        return kind == FLUSHED and payload == b"\x01"

    # ---- the export process's life ---------------------------------------------------------

    def _ensure_process(self) -> socket.socket | None:
        while self._sock is None:
            if self._fallback is not None:
                return None
            if self._start_failures:
                time.sleep(min(2.0, 0.1 * 2**self._start_failures))
            try:
                self._start_process()
            except (OSError, FrameError) as exc:
                self._start_failures += 1
                log.error(
                    "trace export process failed to start",
                    extra={"attempt": self._start_failures, "error": str(exc)},
                )
                if self._start_failures >= MAX_START_FAILURES:
                    log.error(
                        "trace export process failed to start %d times in a row; exporting "
                        "spans from the scheduling process",
                        self._start_failures,
                    )
                    self._fallback = batch_processor_for(self._config)
                    return None
        return self._sock

    def _start_process(self) -> None:
        ours, theirs = socket.socketpair()
        try:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "observability.tracing.export_process",
                    self._name,
                    str(theirs.fileno()),
                    str(os.getpid()),
                ],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        self._process = process
        try:
            send_frame(ours, CONFIG, config_to_json(self._config))
            ours.settimeout(START_TIMEOUT)
            kind, _ = read_frame(ours)
            if kind != READY:
                raise FrameError(f"expected READY, got frame kind {kind}")
            ours.settimeout(None)
        except (OSError, FrameError):
            ours.close()
            self._reap(kill=True)
            raise
        if self.restarts:
            log.info("trace export process started", extra={"pid": process.pid})
        self._sock = ours
        self._start_failures = 0

    def _lost(self, why: str) -> None:
        process = self._process
        log.warning(
            "trace export process lost; starting another",
            extra={"pid": process.pid if process else None, "error": why},
        )
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._reap(kill=True)
        self.restarts += 1

    def _stop_process(self) -> None:
        """Close the socket (the export process's shutdown) and wait for it to export the
        rest and exit."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        self._reap(kill=False)

    def _reap(self, kill: bool) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if kill:
            process.kill()
        try:
            process.wait(self._config.export_timeout_millis / 1000 + STOP_MARGIN)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
