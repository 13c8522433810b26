"""Frames between the scheduler and its filter workers: a 4-byte length, then a pickle.

Both ends are this program (the scheduler starts its workers from its own interpreter, with
one end of a socketpair each), so pickle's reach is not a concern here, and it carries what
the cycle's state holds (NumPy arrays, Statuses, the plugins' PreFilter data) without a schema
per plugin. Sockets are blocking: a scheduling cycle is synchronous, and it waits for its
shards as the serial pass would wait for its own work; every wait has a deadline.
"""

from __future__ import annotations

import copyreg
import io
import pickle
import socket
import struct
import time
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

_LENGTH = struct.Struct("<I")
MAX_FRAME = 1 << 30


class WorkerLost(Exception):
    """The other end closed, broke the protocol or missed its deadline."""


def read_only(mapping: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    """Rebuilds a read-only mapping on the receiving end."""
    return MappingProxyType(mapping)


def _mapping_proxy(proxy: MappingProxyType[Any, Any]) -> tuple[Any, ...]:
    return read_only, (dict(proxy),)


# The views keep read-only mappings (MappingProxyType), which pickle refuses by default; this
# pickler's own table carries them as the dicts they wrap (the module-wide table is untouched).
_DISPATCH = copyreg.dispatch_table.copy()
_DISPATCH[MappingProxyType] = _mapping_proxy


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, shared: Callable[[Any], Any] | None) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.dispatch_table = _DISPATCH
        self._shared = shared

    def persistent_id(self, obj: Any) -> Any:
        return None if self._shared is None else self._shared(obj)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, resolve: Callable[[Any], Any] | None) -> None:
        super().__init__(file)
        self._resolve = resolve

    def persistent_load(self, pid: Any) -> Any:
        if self._resolve is None:
            raise pickle.UnpicklingError(f"a reference {pid!r} with nothing to resolve it")
        return self._resolve(pid)


def dumps(message: Any, shared: Callable[[Any], Any] | None = None) -> bytes:
    """`message` as a pickle, read-only mappings included. `shared(obj)` names the objects
    both ends hold (the snapshot's NodeInfos, its NodeTable, the cycle's pod): they travel as
    that name (None: by value), and `loads`' `resolve` turns the name into its own copy."""
    buffer = io.BytesIO()
    _Pickler(buffer, shared).dump(message)
    return buffer.getvalue()


def loads(data: bytes, resolve: Callable[[Any], Any] | None = None) -> Any:
    return _Unpickler(io.BytesIO(data), resolve).load()


def send(sock: socket.socket, message: Any) -> None:
    body = dumps(message)
    try:
        sock.sendall(_LENGTH.pack(len(body)) + body)
    except OSError as exc:
        raise WorkerLost(f"send failed: {exc}") from None


def _read_exactly(sock: socket.socket, size: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerLost("no answer in time")
            sock.settimeout(remaining)
        try:
            chunk = sock.recv(min(left, 1 << 20))
        except TimeoutError:
            raise WorkerLost("no answer in time") from None
        except OSError as exc:
            raise WorkerLost(f"receive failed: {exc}") from None
        if not chunk:
            raise WorkerLost("connection closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket, timeout: float | None = None) -> Any:
    """The next message; WorkerLost when none comes within `timeout` seconds (None: wait)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        (size,) = _LENGTH.unpack(_read_exactly(sock, _LENGTH.size, deadline))
        if size > MAX_FRAME:
            raise WorkerLost(f"frame of {size} bytes")
        return pickle.loads(_read_exactly(sock, size, deadline))
    finally:
        if deadline is not None:
            sock.settimeout(None)
