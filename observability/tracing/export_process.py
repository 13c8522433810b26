"""The trace export process (`aiosched-trace-export` in ps): encodes and sends the scheduler's
spans, so that the scheduling process does not.

Started by ExportProcessSpanProcessor (export_processor.py) as ``python -m
observability.tracing.export_process NAME FD PARENT_PID`` with one end of a socketpair as FD.
The first frame is the TracingConfig (JSON; headers may hold credentials, so never on the
command line); from it this process builds the exporters and batch processors the scheduling
process would have built (exporters.py), says READY, and then feeds them each batch of spans
(span_wire.py). FLUSH asks for a force_flush and is answered FLUSHED; the socket's end is the
shutdown: what is queued is exported, then the process exits.

Frames: export_frames.py. It ends when the socket closes or its parent dies
(PR_SET_PDEATHSIG, and the parent pid checked at start).
"""

from __future__ import annotations

import logging
import socket
import sys

from apimachinery.child_process import Usage, become_helper
from observability.tracing import span_wire
from observability.tracing.export_frames import (
    CONFIG,
    FLUSH,
    FLUSH_TIMEOUT,
    FLUSHED,
    READY,
    SPANS,
    FrameError,
    config_from_json,
    read_frame,
    send_frame,
)
from observability.tracing.exporters import batch_processor_for

log = logging.getLogger(__name__)


def serve(sock: socket.socket) -> None:
    """Export what arrives until the socket ends, then flush and stop the exporters."""
    kind, payload = read_frame(sock)
    if kind != CONFIG:
        raise FrameError(f"expected the config first, got frame kind {kind}")
    processor = batch_processor_for(config_from_json(payload))
    send_frame(sock, READY)
    try:
        while True:
            try:
                kind, payload = read_frame(sock)
            except FrameError:
                return  # the scheduler is done (or gone): the finally exports what is queued
            if kind == SPANS:
                try:
                    spans = span_wire.loads(payload)
                except span_wire.WireError as exc:
                    log.error("dropping a span batch: %s", exc)
                    continue
                for span in spans:
                    processor.on_end(span)
            elif kind == FLUSH:
                (timeout_ms,) = FLUSH_TIMEOUT.unpack(payload)
                flushed = processor.force_flush(timeout_ms)
                send_frame(sock, FLUSHED, b"\x01" if flushed else b"\x00")
            else:
                log.error("ignoring a frame of unknown kind %d", kind)
    finally:
        processor.shutdown()


def main(argv: list[str]) -> int:
    try:
        name, fd = become_helper(argv, "observability.tracing.export_process")
    except Usage:
        return 2
    logging.basicConfig(level=logging.WARNING, format=f"{name}: %(levelname)s %(message)s")
    sock = socket.socket(fileno=fd)
    sock.setblocking(True)
    try:
        serve(sock)
    except FrameError as exc:
        log.error("stopping: %s", exc)
        return 1
    finally:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
