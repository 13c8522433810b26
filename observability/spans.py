"""The finished-span types aiosched builds: SDK ``ReadableSpan`` subclasses that keep the
many small parts of a traced attempt (extension points, plugin outcomes) as compact records.

A traced pod has ~11 extension points and ~17 plugin calls. Building a span object, attribute
dict and event per part on the scheduling loop cost more than the rest of tracing together, so
the loop only appends what the framework reported to the attempt's :class:`AttemptLog`. The
export thread turns the log into :class:`ExtensionPoint` records, and
:mod:`observability.otlp_encoding` writes those straight to bytes; anything else reading the
spans (another exporter, a test) gets ordinary spans and events from :func:`expand`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple, Protocol

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import SpanContext, Status, StatusCode

PLUGIN_EVENT_NAME: Final = "plugin"
PLUGIN_KEY: Final = "aiosched.plugin"
STATUS_KEY: Final = "aiosched.status"
STATUS_MESSAGE_KEY: Final = "aiosched.status_message"
DURATION_KEY: Final = "aiosched.duration_ms"
POINT_KEY: Final = "aiosched.extension_point"

#: Framework status codes that mark a span as failed in the trace UI.
FAILED_CODES: Final = frozenset({"Error", "Unschedulable", "UnschedulableAndUnresolvable"})
#: An extension point without plugins that took this long still gets its span (a Permit wait).
NOTABLE_EMPTY_POINT_SECONDS: Final = 0.001

_UNSET: Final = Status(StatusCode.UNSET)


class PluginOutcome(NamedTuple):
    """One plugin's outcome at an extension point: a "plugin" event."""

    plugin: str
    status: str
    duration_ms: float
    timestamp_ns: int

    def event(self) -> Event:
        return Event(
            PLUGIN_EVENT_NAME,
            {PLUGIN_KEY: self.plugin, STATUS_KEY: self.status, DURATION_KEY: self.duration_ms},
            self.timestamp_ns,
        )


def plugin_event(
    name: str, point: str | None, status: str, seconds: float | None, timestamp: int | None = None
) -> Event:
    """A "plugin" span event: one plugin's outcome (and duration) at an extension point."""
    attrs: dict[str, Any] = {PLUGIN_KEY: name, STATUS_KEY: status}
    if point is not None:
        attrs[POINT_KEY] = point
    if seconds is not None:
        attrs[DURATION_KEY] = seconds * 1000.0
    return Event(PLUGIN_EVENT_NAME, attrs, timestamp)


def framework_status(attributes: dict[str, Any], code: str, message: str) -> Status:
    """Record a framework status code as attributes; the span status it maps to."""
    attributes[STATUS_KEY] = code
    if code in FAILED_CODES:
        return Status(StatusCode.ERROR, message or code)
    if message:
        attributes[STATUS_MESSAGE_KEY] = message
    return _UNSET


class ExtensionPoint(NamedTuple):
    """An extension point's span, recorded compactly on its attempt (see AttemptWithPoints).

    ``code`` is the framework status code ("" when none was recorded); its span attributes and
    status come from :meth:`attributes_and_status`. The ``extra_*`` fields and ``error`` are
    only set by hand-timed points (``AttemptSpan.extension_point``)."""

    name: str
    span_id: int
    start_ns: int
    end_ns: int
    code: str
    message: str = ""
    plugin_outcomes: Sequence[PluginOutcome] = ()
    extra_attributes: Mapping[str, Any] | None = None
    extra_events: tuple[Event, ...] = ()
    error: Status | None = None  # a failure that is not a framework status (an exception)

    @property
    def is_plain(self) -> bool:
        """Only a status and plugin outcomes: the encoder's cached fast path applies."""
        return not self.extra_attributes and not self.extra_events and self.error is None

    def attributes_and_status(self) -> tuple[dict[str, Any], Status]:
        attributes: dict[str, Any] = {}
        status = framework_status(attributes, self.code, self.message) if self.code else _UNSET
        if self.extra_attributes:
            attributes.update(self.extra_attributes)
        return attributes, self.error if self.error is not None else status


class FrameworkStatus(Protocol):
    """What the log reads of the framework's Status (observability does not import it)."""

    @property
    def code_name(self) -> str: ...

    @property
    def message(self) -> str: ...


class PointAnnotation(NamedTuple):
    """Attributes a plugin adds to the span of the extension point it runs in (appended to the
    log while the point runs; they join that point's span when it ends)."""

    point: str
    attributes: Mapping[str, Any]


#: A plugin's calls at one extension point: [summed seconds, end of the last call, status code]
PluginTiming = list[Any]
#: An extension point the runtime timed: (name, status, start, end, plugin timings by name),
#: framework clock seconds.
TimedPoint = tuple[str, FrameworkStatus, float, float, dict[str, PluginTiming] | None]

_SPAN_ID_MASK: Final = (1 << 64) - 1


def point_span_id(base: int, index: int) -> int:
    """The span id of an attempt's ``index``-th extension point: one random id is drawn per
    attempt (``base``) and its points count up from it, so that every reader of the log (the
    encoder, :func:`expand`) names them alike without storing them. Zero is not a valid id."""
    return ((base + index) & _SPAN_ID_MASK) or 1


class AttemptLog:
    """What the framework reported during one attempt, as it came: a tuple per plugin call
    ``(point, plugin, status, seconds, end)`` and per extension point ``(point, None, status,
    start, end)`` (framework clock seconds), a ready :class:`ExtensionPoint`, or a
    :class:`PointAnnotation` for the next span of its point.

    Appending is all the scheduling loop does; :meth:`walk` runs on the export thread. A
    plugin's calls at one point (Filter runs per chunk) become one "plugin" event with their
    summed duration, at the end of the last call, and the last failing status."""

    __slots__ = ("clock_origin", "entries", "keep_empty_points", "wall_origin")

    def __init__(self, keep_empty_points: bool = True) -> None:
        self.entries: list[Any] = []
        # False: a successful extension point where no plugin ran (Reserve, Permit, PreBind...
        # in the default profile; WaitOnPermit when nothing waited) gets no span.
        self.keep_empty_points = keep_empty_points
        # Framework clock (monotonic seconds) → wall-clock nanoseconds.
        self.clock_origin = 0.0
        self.wall_origin = 0

    def set_clock(self, clock_seconds: float, wall_ns: int) -> None:
        """The framework clock and wall clock read back to back at the attempt's start."""
        self.clock_origin = clock_seconds
        self.wall_origin = wall_ns

    def wall_ns(self, clock_seconds: float) -> int:
        return self.wall_origin + int((clock_seconds - self.clock_origin) * 1e9)

    def walk(
        self, unfinished: dict[str, dict[str, PluginTiming]]
    ) -> Iterator[ExtensionPoint | TimedPoint]:
        """The extension points that get a span, in order. Plugin timings of points that never
        ended (PreFilter extensions run during preemption) are left in ``unfinished``."""
        keep_empty = self.keep_empty_points
        annotations: dict[str, dict[str, Any]] | None = None
        for entry in self.entries:
            if type(entry) is ExtensionPoint:
                yield entry
                continue
            if type(entry) is PointAnnotation:
                if annotations is None:
                    annotations = {}
                annotations.setdefault(entry.point, {}).update(entry.attributes)
                continue
            point, plugin, status, first, second = entry
            if plugin is not None:
                timings = unfinished.get(point)
                if timings is None:
                    timings = unfinished[point] = {}
                timing = timings.get(plugin)
                if timing is None:
                    timings[plugin] = [first, second, status.code_name]
                    continue
                timing[0] += first
                timing[1] = second
                code = status.code_name
                if code != "Success":
                    timing[2] = code
                continue
            plugins = unfinished.pop(point, None)
            if (
                plugins
                or keep_empty
                or second - first >= NOTABLE_EMPTY_POINT_SECONDS
                or status.code_name != "Success"
            ):
                extra = annotations.pop(point, None) if annotations else None
                if extra:
                    # an annotated point: a full record (the encoder's general path)
                    timed = self.timed_point((point, status, first, second, plugins), 0)
                    yield timed._replace(extra_attributes=extra)
                    continue
                yield point, status, first, second, plugins

    def timed_point(self, point: TimedPoint, span_id: int) -> ExtensionPoint:
        name, status, start, end, plugins = point
        wall_ns = self.wall_ns
        outcomes = (
            [
                PluginOutcome(plugin, timing[2], timing[0] * 1000.0, wall_ns(timing[1]))
                for plugin, timing in plugins.items()
            ]
            if plugins
            else ()
        )
        return ExtensionPoint(
            name, span_id, wall_ns(start), wall_ns(end), status.code_name, status.message, outcomes
        )

    def unfinished_events(self, unfinished: dict[str, dict[str, PluginTiming]]) -> list[Event]:
        """A "plugin" event (for the attempt span) per plugin whose point never ended."""
        return [
            plugin_event(plugin, point, timing[2], timing[0], self.wall_ns(timing[1]))
            for point, timings in unfinished.items()
            for plugin, timing in timings.items()
        ]

    def decode(self, span_id_base: int) -> tuple[list[ExtensionPoint], list[Event]]:
        """The extension points as records, and the attempt's events for unfinished ones."""
        unfinished: dict[str, dict[str, PluginTiming]] = {}
        points = []
        for index, point in enumerate(self.walk(unfinished), 1):
            span_id = point_span_id(span_id_base, index)
            if isinstance(point, ExtensionPoint):
                points.append(point._replace(span_id=span_id))
            else:
                points.append(self.timed_point(point, span_id))
        return points, self.unfinished_events(unfinished)


class ExtensionPointSpan(ReadableSpan):
    """A ``ReadableSpan`` whose ``events`` are its other events, then one per plugin outcome."""

    def __init__(
        self, *args: Any, plugin_outcomes: Sequence[PluginOutcome] = (), **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.plugin_outcomes = plugin_outcomes

    @property
    def own_events(self) -> Sequence[Event]:
        """The events given to the span, without its plugin outcomes."""
        return super().events

    @property
    def events(self) -> Sequence[Event]:
        return (*super().events, *(outcome.event() for outcome in self.plugin_outcomes))


class AttemptWithPoints(ReadableSpan):
    """An attempt span that carries its extension points' spans as records.

    With aiosched's own OTLP exporter the points never become span objects: the encoder writes
    them from the records, children of this span. Anything else gets them as ordinary spans
    from :func:`expand` (or :meth:`point_spans`). The records are given (``points``) or decoded
    from the attempt's ``log`` on first use, off the scheduling loop.
    """

    def __init__(
        self,
        *args: Any,
        points: Sequence[ExtensionPoint] | None = None,
        log: AttemptLog | None = None,
        span_id_base: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.log = log if points is None else None
        self.span_id_base = span_id_base  # see point_span_id
        self._points = points
        self._log_events: Sequence[Event] = ()

    @property
    def points(self) -> Sequence[ExtensionPoint]:
        return self._decoded()

    @property
    def own_events(self) -> Sequence[Event]:
        """The events given to the span, without those the log adds."""
        return super().events

    @property
    def events(self) -> Sequence[Event]:
        """Its own events, then those of plugins whose extension point never ended."""
        own = super().events
        self._decoded()
        return (*own, *self._log_events) if self._log_events else own

    def _decoded(self) -> Sequence[ExtensionPoint]:
        if self._points is None:
            assert self.log is not None
            self._points, self._log_events = self.log.decode(self.span_id_base)
        return self._points

    def point_spans(self) -> list[ExtensionPointSpan]:
        context = self.context
        assert context is not None
        spans = []
        for point in self.points:
            attributes, status = point.attributes_and_status()
            spans.append(
                ExtensionPointSpan(
                    point.name,
                    context=SpanContext(
                        context.trace_id,
                        point.span_id,
                        False,
                        context.trace_flags,
                        context.trace_state,
                    ),
                    parent=context,
                    resource=self.resource,
                    attributes=attributes,
                    events=point.extra_events,
                    status=status,
                    start_time=point.start_ns,
                    end_time=point.end_ns,
                    instrumentation_scope=self.instrumentation_scope,
                    plugin_outcomes=point.plugin_outcomes,
                )
            )
        return spans


def expand(spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    """``spans`` with each attempt's recorded extension points as spans after it."""
    out: list[ReadableSpan] = []
    for span in spans:
        out.append(span)
        if type(span) is AttemptWithPoints:
            out.extend(span.point_spans())
    return out
