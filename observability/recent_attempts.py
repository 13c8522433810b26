"""The last scheduling attempts, for the web view: who, when, the outcome, the time spent at
each extension point and, for attempts that were traced, the trace they were exported in.

Recording is one deque append of references the attempt already holds (the hot path pays no
more). The per-extension-point timings are summed only when someone asks
(:meth:`RecentAttempts.items`): a traced attempt's from its span log
(:class:`observability.spans.AttemptLog`), an untraced one's from the flat
``[point, seconds, ...]`` list the framework runtime filled with the durations it measured for
``scheduler_framework_extension_point_duration_seconds`` (CycleState.point_seconds).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

from observability.spans import ExtensionPoint


class TracedAttempt(Protocol):
    """What an ended attempt span offers: its log and the trace it went to (0: none)."""

    @property
    def trace_id(self) -> int: ...

    @property
    def log(self) -> Any: ...


class _Attempt(NamedTuple):
    timestamp: float
    namespace: str
    name: str
    profile: str
    attempt: int
    result: str  # scheduled / unschedulable / error
    detail: str  # the node when scheduled, else the message
    span: TracedAttempt | None
    point_seconds: Sequence[str | float] | None  # untraced: [point, seconds, ...]


class RecentAttempts:
    """A ring of the last ``size`` attempts, newest last (``size`` 0 records nothing)."""

    def __init__(self, size: int = 50, clock: Callable[[], float] = time.time) -> None:
        self._ring: deque[_Attempt] = deque(maxlen=max(size, 0))
        self._clock = clock
        self.enabled = size > 0

    def __len__(self) -> int:
        return len(self._ring)

    def record(
        self,
        namespace: str,
        name: str,
        *,
        profile: str,
        attempt: int,
        result: str,
        detail: str,
        span: TracedAttempt | None = None,
        point_seconds: Sequence[str | float] | None = None,
    ) -> None:
        if self.enabled:
            self._ring.append(
                _Attempt(
                    self._clock(), namespace, name, profile, attempt, result, detail, span,
                    point_seconds,
                )
            )  # fmt: skip

    def items(self, limit: int) -> list[dict[str, Any]]:
        """The last `limit` attempts, newest first, JSON-ready."""
        out = []
        for entry in list(reversed(self._ring))[: max(limit, 0)]:
            item: dict[str, Any] = {
                "timestamp": entry.timestamp,
                "pod": {"namespace": entry.namespace, "name": entry.name},
                "profile": entry.profile,
                "attempt": entry.attempt,
                "result": entry.result,
            }
            if entry.result == "scheduled":
                item["node"] = entry.detail
            else:
                item["message"] = entry.detail
            if entry.span is not None:
                item["extensionPoints"] = point_durations(entry.span.log.entries)
                if entry.span.trace_id:
                    item["traceId"] = format(entry.span.trace_id, "032x")
            elif entry.point_seconds:
                item["extensionPoints"] = measured_point_durations(entry.point_seconds)
            out.append(item)
        return out


def point_durations(entries: list[Any]) -> list[dict[str, Any]]:
    """Milliseconds per extension point, in the order they ended, from an AttemptLog's
    entries: ``(point, None, status, start, end)`` tuples in framework-clock seconds and
    ready ExtensionPoint records in nanoseconds (a point run twice is summed)."""
    totals: dict[str, float] = {}
    for entry in list(entries):
        if type(entry) is ExtensionPoint:
            seconds = (entry.end_ns - entry.start_ns) / 1e9
            point = entry.name
        elif type(entry) is tuple and len(entry) == 5 and entry[1] is None:
            point, _, _, start, end = entry
            seconds = end - start
        else:
            continue  # a plugin's own timing or an annotation
        totals[point] = totals.get(point, 0.0) + seconds
    return [{"point": point, "ms": round(seconds * 1000.0, 3)} for point, seconds in totals.items()]


def measured_point_durations(point_seconds: Sequence[str | float]) -> list[dict[str, Any]]:
    """Milliseconds per extension point, in the order they ended, from the runtime's flat
    ``[point, seconds, point, seconds, ...]`` list (a point run twice is summed)."""
    totals: dict[str, float] = {}
    flat = list(point_seconds)  # a binding task may still be appending
    for index in range(0, len(flat) - 1, 2):
        point, seconds = flat[index], flat[index + 1]
        if isinstance(point, str) and not isinstance(seconds, str):
            totals[point] = totals.get(point, 0.0) + seconds
    return [{"point": point, "ms": round(seconds * 1000.0, 3)} for point, seconds in totals.items()]
