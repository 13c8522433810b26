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
Worker → scheduler:
  READY       id 0: u32 pid, once the worker's client is built
  RESPONSE    id: u16 status + body
  FAILED      id: JSON [message, reason, untrusted certificate] (no HTTP answer: ApiError)
  STREAM_STATUS, STREAM_DATA (raw bytes as they arrived), STREAM_END (the server ended it)

A frame longer than MAX_FRAME is a protocol error: the connection is closed, as a dead worker.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

HEADER = struct.Struct("<IIB")
U32 = struct.Struct("<I")
U16 = struct.Struct("<H")
# A list page or a watch chunk is far below this; a frame above it is garbage, not data.
MAX_FRAME = 1 << 30

CONFIG = 1
REQUEST = 2
OPEN_STREAM = 3
CANCEL = 4
CREDIT = 5
READY = 16
RESPONSE = 17
FAILED = 18
STREAM_STATUS = 19
STREAM_DATA = 20
STREAM_END = 21

TO_WORKER = frozenset((CONFIG, REQUEST, OPEN_STREAM, CANCEL, CREDIT))
FROM_WORKER = frozenset((READY, RESPONSE, FAILED, STREAM_STATUS, STREAM_DATA, STREAM_END))
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
