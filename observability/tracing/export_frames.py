"""The frames between the scheduling process and the trace export process (export_process.py),
both ways: ``<IB`` (payload length, kind), then the payload; and the TracingConfig as the first
frame's JSON (headers may hold credentials, so never on the command line).
"""

from __future__ import annotations

import dataclasses
import socket
import struct
from typing import Any

import orjson

from observability.tracing.config import TracingConfig

EXPORT_PROCESS_NAME = "aiosched-trace-export"

HEADER = struct.Struct("<IB")
FLUSH_TIMEOUT = struct.Struct("<I")  # milliseconds
#: A batch of max_export_batch_size spans is far below this; a longer frame is garbage.
MAX_FRAME = 1 << 28

# Scheduler → export process
CONFIG = 1
SPANS = 2
FLUSH = 3
# Export process → scheduler
READY = 16
FLUSHED = 17


class FrameError(Exception):
    """The other end closed, or sent what is not a frame of this protocol."""


def send_frame(sock: socket.socket, kind: int, payload: bytes = b"") -> None:
    sock.sendall(HEADER.pack(len(payload), kind) + payload)


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    parts = []
    while size:
        chunk = sock.recv(min(size, 1 << 20))
        if not chunk:
            raise FrameError("closed")
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def read_frame(sock: socket.socket) -> tuple[int, bytes]:
    """The next frame's kind and payload (FrameError at the end or on a malformed header)."""
    length, kind = HEADER.unpack(_read_exactly(sock, HEADER.size))
    if length > MAX_FRAME:
        raise FrameError(f"a frame of {length} bytes")
    return kind, _read_exactly(sock, length) if length else b""


def config_to_json(config: TracingConfig) -> bytes:
    return orjson.dumps(dataclasses.asdict(config))


def config_from_json(data: bytes) -> TracingConfig:
    fields: dict[str, Any] = orjson.loads(data)
    fields["exporters"] = tuple(fields["exporters"])
    return TracingConfig(**fields)
