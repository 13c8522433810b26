"""Messages between kubesim's store process and its API front-ends (`--workers N`).

One Unix stream socket per front-end carries length-prefixed JSON messages both ways, in order.
The store writes its durable events and its answers on the same ordered stream, so when a
front-end reads an answer it has already applied every event the store published before it.

Front-end to store, each with a request `id`:
  {"op": "commit", "changes": [[key, new | null, replaced resourceVersion | null, ns, name]]}
      compare-and-swap: each change names the resourceVersion of the object it replaces (null:
      the name must be free); answered {"ok": [resourceVersion, ...]} once durable, or
      {"stale": rv} if another write got there first (rv: everything up to it is streamed)
  {"op": "rv"}  the store's newest durable resourceVersion, answered {"ok": rv}
  {"op": "node", "name": ..., "action": "start" | "stop"}  a simulated kubelet switch
Store to front-end:
  {"hello": {...}}, {"objects": [[key, obj], ...]}..., {"ready": rv}   at connection
  b"E" + events   durable events in resourceVersion order, each a length-prefixed JSON header
      {"rv", "k"} (+ "ns", "n" for a deletion) and the length-prefixed object as the store
      encoded it (empty for a deletion): a front-end decodes it once and serves those very
      bytes to its watchers
  {"re": id, "ok" | "stale" | "error": ...}   answers
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import orjson

HEADER = struct.Struct("!I")
# a snapshot chunk or a batch of events stays well below it; anything larger is a bug
MAX_MESSAGE = 1 << 30
# a front-end this far behind the store's stream is cut off (it exits and is started again, as a
# watcher that falls too far behind is closed) rather than let the store's memory grow
MAX_UNSENT = 1 << 29


class ProtocolError(Exception):
    """The peer sent something that is not a message of this protocol."""


def frame(payload: bytes) -> bytes:
    return HEADER.pack(len(payload)) + payload


def encode(message: Any) -> bytes:
    return frame(orjson.dumps(message))


EVENTS = b"E"


def event_record(header: bytes, obj: bytes) -> bytes:
    return HEADER.pack(len(header)) + header + HEADER.pack(len(obj)) + obj


def event_records(payload: bytes) -> list[tuple[bytes, bytes]]:
    """The (header, object) pairs of an events message."""
    records = []
    view = memoryview(payload)
    at, end = len(EVENTS), len(payload)
    while at < end:
        (size,) = HEADER.unpack_from(view, at)
        header = bytes(view[at + HEADER.size : at + HEADER.size + size])
        at += HEADER.size + size
        (size,) = HEADER.unpack_from(view, at)
        obj = bytes(view[at + HEADER.size : at + HEADER.size + size])
        at += HEADER.size + size
        records.append((header, obj))
    if at != end:
        raise ProtocolError("an events message ends inside a record")
    return records


async def read_message(reader: asyncio.StreamReader) -> Any | None:
    """The next message (an events message as its bytes), or None once the peer closed the
    connection."""
    try:
        header = await reader.readexactly(HEADER.size)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise ProtocolError("connection closed inside a message header") from exc
        return None
    (size,) = HEADER.unpack(header)
    if size > MAX_MESSAGE:
        raise ProtocolError(f"message of {size} bytes is over the limit of {MAX_MESSAGE}")
    try:
        payload = await reader.readexactly(size)
    except asyncio.IncompleteReadError as exc:
        raise ProtocolError("connection closed inside a message") from exc
    if payload[:1] == EVENTS:
        return payload
    return orjson.loads(payload)


class Outbox:
    """Ordered messages to one peer, written in one go at the end of the loop iteration: many
    events published by one journal batch leave in one message and one system call."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._records: list[bytes] = []  # encoded events not yet framed
        self._frames: list[bytes] = []
        self._scheduled = False

    @property
    def closed(self) -> bool:
        return self._writer.is_closing()

    def event(self, record: bytes) -> None:
        self._records.append(record)
        self._schedule()

    def send(self, message: Any) -> None:
        self._seal_events()
        self._frames.append(encode(message))
        self._schedule()

    def _seal_events(self) -> None:
        if self._records:
            self._frames.append(frame(EVENTS + b"".join(self._records)))
            self._records = []

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self._scheduled = False
        self._seal_events()
        if self._frames and not self._writer.is_closing():
            self._writer.writelines(self._frames)
            if self._writer.transport.get_write_buffer_size() > MAX_UNSENT:
                self._writer.close()
        self._frames = []
