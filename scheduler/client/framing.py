"""The framed protocol between the scheduler and its API I/O worker processes.

One frame: a 9-byte header, little-endian ``<IIB`` = payload length, request id, kind; then the
payload. Requests carry their body bytes as they are (no pickle, no re-encoding): the header of
a request is a short JSON array [method, path, [[query name, value], ...], content type or null]
behind a u32 length, and the body follows it. Answers are a u16 HTTP status and the body bytes.

Scheduler → worker:
  CONFIG      id 0: the ClientSettings (JSON), once, first
  REQUEST     id: header + body                 → RESPONSE or FAILED
  OPEN_STREAM id: header (a GET)                → STREAM_STATUS, STREAM_DATA..., STREAM_END/FAILED
  CANCEL      id: forget a request, close a stream
  CREDIT      id: u32 bytes of STREAM_DATA consumed (the stream's flow control window)
  EVENTS_CONFIG id 0: how to write events (JSON list, event_config_payload), before the first EVENT
  EVENT       id 0: one event to write (JSON list of its fields, event_payload); no answer each
Worker → scheduler:
  READY       id 0: u32 pid, once the worker's client is built
  RESPONSE    id: u16 status + body
  FAILED      id: JSON [message, reason, untrusted certificate] (no HTTP answer: ApiError)
  STREAM_STATUS, STREAM_DATA (raw bytes as they arrived), STREAM_END (the server ended it)
  EVENTS_DONE id 0: JSON [written, {drop reason: count}, last dropped or null, [[status or
              null, seconds], ...] of the event requests made]: outcomes since the last one

Frames sent in one event loop iteration leave in one write (FrameWriter), in the order sent.

A frame longer than MAX_FRAME is a protocol error: the connection is closed, as a dead worker.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import orjson

HEADER = struct.Struct("<IIB")
U32 = struct.Struct("<I")
U16 = struct.Struct("<H")
# A list page or a watch chunk is far below this; a frame above it is garbage, not data.
MAX_FRAME = 1 << 30
# Bytes of one watch in flight from a worker to the scheduler, unacknowledged (flow control).
STREAM_WINDOW = 8 << 20

CONFIG = 1
REQUEST = 2
OPEN_STREAM = 3
CANCEL = 4
CREDIT = 5
EVENTS_CONFIG = 6
EVENT = 7
READY = 16
RESPONSE = 17
FAILED = 18
STREAM_STATUS = 19
STREAM_DATA = 20
STREAM_END = 21
EVENTS_DONE = 22

TO_WORKER = frozenset((CONFIG, REQUEST, OPEN_STREAM, CANCEL, CREDIT, EVENTS_CONFIG, EVENT))
FROM_WORKER = frozenset(
    (READY, RESPONSE, FAILED, STREAM_STATUS, STREAM_DATA, STREAM_END, EVENTS_DONE)
)
KINDS = TO_WORKER | FROM_WORKER


class ProtocolError(Exception):
    """The bytes on the socket are not frames of this protocol."""


def frame(kind: int, request_id: int, payload: bytes = b"") -> bytes:
    return HEADER.pack(len(payload), request_id, kind) + payload


def request_payload(
    method: str,
    path: str,
    params: Mapping[str, str] | None,
    content_type: str | None,
    data: bytes | None,
) -> bytes:
    query = list(params.items()) if params else []
    header = orjson.dumps([method, path, query, content_type])
    return U32.pack(len(header)) + header + (data or b"")


def parse_request(payload: bytes) -> tuple[str, str, list[tuple[str, str]], str | None, bytes]:
    """(method, path, query pairs, content type, body) of a REQUEST or OPEN_STREAM payload."""
    if len(payload) < U32.size:
        raise ProtocolError("request payload shorter than its header length")
    (length,) = U32.unpack_from(payload)
    end = U32.size + length
    if end > len(payload):
        raise ProtocolError("request header longer than its payload")
    try:
        header: Any = orjson.loads(payload[U32.size : end])
        method, path, query, content_type = header
        pairs = [(str(name), str(value)) for name, value in query]
    except (orjson.JSONDecodeError, ValueError, TypeError) as exc:
        raise ProtocolError(f"malformed request header: {exc}") from None
    if not isinstance(method, str) or not isinstance(path, str):
        raise ProtocolError("request method and path must be strings")
    if content_type is not None and not isinstance(content_type, str):
        raise ProtocolError("request content type must be a string or null")
    return method, path, pairs, content_type, payload[end:]


def status_payload(status: int, body: bytes = b"") -> bytes:
    return U16.pack(status) + body


def parse_status(payload: bytes) -> tuple[int, bytes]:
    if len(payload) < U16.size:
        raise ProtocolError("answer shorter than its status")
    return U16.unpack_from(payload)[0], payload[U16.size :]


def failure_payload(message: str, reason: str = "", untrusted_certificate: bool = False) -> bytes:
    return orjson.dumps([message, reason, untrusted_certificate])


def parse_failure(payload: bytes) -> tuple[str, str, bool]:
    """(message, reason, untrusted certificate) of a FAILED payload."""
    try:
        message, reason, untrusted = orjson.loads(payload)
        return str(message), str(reason), bool(untrusted)
    except (orjson.JSONDecodeError, ValueError, TypeError):
        return payload.decode("utf-8", "replace"), "", False


class EventFields(NamedTuple):
    """An event as the scheduling process hands it to a worker (recorder.py, event_writer.py)."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    event_type: str
    reason: str
    action: str
    note: str
    controller: str


class EventConfig(NamedTuple):
    """How a worker writes events: the events client's rate limit, the writers, the retries."""

    qps: float
    burst: int
    max_queued: int
    writers: int
    retry_for_seconds: float
    first_retry_sleep: float
    max_retry_sleep: float
    instance: str  # the scheduler's hostname, for reportingInstance


def event_payload(fields: Sequence[str]) -> bytes:
    return orjson.dumps(fields)


def _loads_list(payload: bytes, what: str, size: int) -> list[Any]:
    try:
        value = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"malformed {what}: {exc}") from None
    if not isinstance(value, list) or len(value) != size:
        raise ProtocolError(f"{what} must be a list of {size} items")
    return value


def parse_event(payload: bytes) -> EventFields:
    fields = _loads_list(payload, "event", len(EventFields._fields))
    if not all(isinstance(field, str) for field in fields):
        raise ProtocolError("every field of an event must be a string")
    return EventFields(*fields)


def event_config_payload(config: EventConfig) -> bytes:
    return orjson.dumps(list(config))


def parse_event_config(payload: bytes) -> EventConfig:
    qps, burst, queued, writers, retry_for, first, most, instance = _loads_list(
        payload, "event configuration", len(EventConfig._fields)
    )
    try:
        return EventConfig(
            float(qps),
            int(burst),
            int(queued),
            int(writers),
            float(retry_for),
            float(first),
            float(most),
            str(instance),
        )
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"malformed event configuration: {exc}") from None


class EventOutcomes(NamedTuple):
    written: int
    dropped: dict[str, int]
    last_dropped: str | None  # what the last event dropped was, for the sampled drop log
    requests: list[tuple[int | None, float]]  # (HTTP status or None: no answer, seconds)


def event_outcomes_payload(outcomes: EventOutcomes) -> bytes:
    return orjson.dumps(list(outcomes))


def parse_event_outcomes(payload: bytes) -> EventOutcomes:
    written, dropped, last, requests = _loads_list(payload, "event outcomes", 4)
    try:
        return EventOutcomes(
            int(written),
            {str(reason): int(count) for reason, count in dict(dropped).items()},
            None if last is None else str(last),
            [(None if code is None else int(code), float(seconds)) for code, seconds in requests],
        )
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"malformed event outcomes: {exc}") from None


class FrameWriter:
    """Frames out through one transport, each event loop iteration's in one write.

    A write is a syscall and, on the other side, a wakeup: a cycle that sends a binding, an
    event and a watch credit would otherwise make three of each. ``send`` only buffers; a
    callback queued with call_soon writes what the iteration buffered, in order. ``flush``
    writes at once (before closing).
    """

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._parts: list[bytes] = []
        self._loop = asyncio.get_running_loop()

    def send(self, kind: int, request_id: int, payload: bytes = b"") -> None:
        parts = self._parts
        if not parts:
            self._loop.call_soon(self.flush)
        parts.append(HEADER.pack(len(payload), request_id, kind))
        if payload:
            parts.append(payload)

    def flush(self) -> None:
        parts, self._parts = self._parts, []
        if parts and not self._transport.is_closing():
            self._transport.write(b"".join(parts))


class FrameReader:
    """Cuts a byte stream into frames; ``feed`` returns the frames completed by its bytes."""

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self._buffer = bytearray()
        self._max_frame = max_frame

    def feed(self, data: bytes) -> Sequence[tuple[int, int, bytes]]:
        """(kind, request id, payload) of each frame ``data`` completes, in order."""
        buffer = self._buffer
        buffer += data
        frames: list[tuple[int, int, bytes]] = []
        start = 0
        size = len(buffer)
        header = HEADER.size
        while size - start >= header:
            length, request_id, kind = HEADER.unpack_from(buffer, start)
            if length > self._max_frame:
                raise ProtocolError(f"frame of {length} bytes exceeds {self._max_frame}")
            if kind not in KINDS:
                raise ProtocolError(f"unknown frame kind {kind}")
            end = start + header + length
            if end > size:
                break
            frames.append((kind, request_id, bytes(buffer[start + header : end])))
            start = end
        if start:
            del buffer[:start]
        return frames

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame held."""
        return len(self._buffer)
