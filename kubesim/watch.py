"""Watch events and watchers: each event is serialized once and its bytes shared by every watcher.

A watcher with selectors sees upstream's transitions: an object that stops matching arrives as
DELETED, one that starts matching as ADDED (as the apiserver's watch cache does).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson

Predicate = Callable[[dict[str, Any]], bool]
# stored form -> the form a watcher's resource is served in (views.py); None: as stored
Render = Callable[[dict[str, Any]], dict[str, Any]]

_TYPES = {t: b'{"type":"' + t.encode() + b'","object":' for t in ("ADDED", "MODIFIED", "DELETED")}


class Event:
    """One committed change; `old` is the previous version (None for ADDED)."""

    __slots__ = ("_bytes", "_line", "_view", "namespace", "obj", "old", "rv", "type")

    def __init__(
        self,
        type_: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        rv: int,
        namespace: str,
        encoded: bytes | None = None,
    ) -> None:
        self.type = type_
        self.obj = obj
        self.old = old
        self.rv = rv
        self.namespace = namespace
        self._bytes: bytes | None = encoded  # `obj` as JSON, when it arrived so (replica.py)
        self._line: bytes | None = None  # the line of its own type, shared by every watcher
        self._view: tuple[Render, bytes] | None = None

    def object_bytes(self) -> bytes:
        if self._line is not None:  # keep one encoding per event: history holds many
            return self._line[len(_TYPES[self.type]) : -2]
        if self._bytes is None:
            self._bytes = orjson.dumps(self.obj)
        return self._bytes

    def line(self, type_: str | None = None) -> bytes:
        if type_ is None or type_ == self.type:
            if self._line is None:
                self._line = _TYPES[self.type] + self.object_bytes() + b"}\n"
                self._bytes = None
            return self._line
        return _TYPES[type_] + self.object_bytes() + b"}\n"

    def view_line(self, render: Render | None, type_: str | None = None) -> bytes:
        """The line with the object rendered for a view; encoded once per view and event."""
        if render is None:
            return self.line(type_)
        cached = self._view
        if cached is None or cached[0] is not render:
            cached = self._view = (render, orjson.dumps(render(self.obj)))
        return _TYPES[type_ or self.type] + cached[1] + b"}\n"


def event_line(type_: str, obj: dict[str, Any]) -> bytes:
    return orjson.dumps({"type": type_, "object": obj}) + b"\n"


class WatcherClosed(Exception):
    """The watcher fell too far behind (or was stopped); the client must re-watch."""


class Watcher:
    """A queue of encoded event lines for one watch request."""

    def __init__(
        self,
        namespace: str | None,
        predicate: Predicate | None,
        after_rv: int,
        max_pending: int,
        render: Render | None = None,
    ) -> None:
        self.namespace = namespace
        self.render = render
        self.predicate = predicate
        self.after_rv = after_rv  # events at or below this were already delivered (or listed)
        self.last_rv = after_rv
        self._max_pending = max_pending
        self._lines: deque[bytes] = deque()
        self._ready = asyncio.Event()
        self.closed = False
        self._held = False  # lines wait until the initial state they follow is durable

    def hold(self) -> None:
        self._held = True

    def release(self) -> None:
        self._held = False
        self._ready.set()

    def push_line(self, line: bytes, rv: int) -> None:
        if self.closed:
            return
        if len(self._lines) >= self._max_pending:
            self.close()
            return
        self._lines.append(line)
        self.last_rv = max(self.last_rv, rv)
        self._ready.set()

    def offer(self, event: Event) -> None:
        if event.rv <= self.after_rv:
            return
        if self.namespace is not None and event.namespace != self.namespace:
            return
        predicate, render = self.predicate, self.render
        if predicate is None:
            self.push_line(event.view_line(render), event.rv)
            return
        now = predicate(event.obj)
        if event.type == "MODIFIED" and event.old is not None:
            before = predicate(event.old)
            if now and not before:
                self.push_line(event.view_line(render, "ADDED"), event.rv)
            elif before and not now:
                self.push_line(event.view_line(render, "DELETED"), event.rv)
            elif now:
                self.push_line(event.view_line(render), event.rv)
        elif now:
            self.push_line(event.view_line(render), event.rv)

    def close(self) -> None:
        self.closed = True
        self._ready.set()

    async def next_batch(self) -> list[bytes]:
        """Wait for lines and return all queued; raises WatcherClosed once drained and closed
        (or closed while held: its lines may show writes that never became durable)."""
        while not self._lines or self._held:
            if self.closed:
                raise WatcherClosed
            self._ready.clear()
            await self._ready.wait()
        lines = list(self._lines)
        self._lines.clear()
        return lines
