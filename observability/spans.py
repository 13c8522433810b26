"""The finished-span types aiosched builds: SDK ``ReadableSpan`` subclasses that keep the
many small parts of a traced attempt (extension points, plugin outcomes) as compact records.

An extension point has a "plugin" event for each plugin that ran, ~17 per traced pod. Making
each an SDK ``Event`` with its attribute dict, and encoding that generically, was a tenth of the
cost of tracing. Here they are tuples until someone reads ``events`` (another exporter, a test),
and :mod:`observability.otlp_encoding` writes them straight from the tuples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import SpanContext, Status

PLUGIN_EVENT_NAME: Final = "plugin"
PLUGIN_KEY: Final = "aiosched.plugin"
STATUS_KEY: Final = "aiosched.status"
DURATION_KEY: Final = "aiosched.duration_ms"


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


class ExtensionPointSpan(ReadableSpan):
    """A ``ReadableSpan`` whose ``events`` are its other events, then one per plugin outcome."""

    def __init__(
        self, *args: Any, plugin_outcomes: Sequence[PluginOutcome] = (), **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.plugin_outcomes = plugin_outcomes

    @property
    def other_events(self) -> Sequence[Event]:
        return super().events

    @property
    def events(self) -> Sequence[Event]:
        return (*super().events, *(outcome.event() for outcome in self.plugin_outcomes))


class ExtensionPoint(NamedTuple):
    """An extension point's span, recorded compactly on its attempt (see AttemptWithPoints)."""

    name: str
    span_id: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    status: Status
    events: tuple[Event, ...]
    plugin_outcomes: Sequence[PluginOutcome]


class AttemptWithPoints(ReadableSpan):
    """An attempt span that carries its extension points' spans as records.

    With aiosched's own OTLP exporter the points never become span objects: the encoder writes
    them from the records, children of this span. Anything else gets them as ordinary spans
    from :func:`expand` (or :meth:`point_spans`).
    """

    def __init__(self, *args: Any, points: Sequence[ExtensionPoint] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.points = points

    def point_spans(self) -> list[ExtensionPointSpan]:
        context = self.context
        assert context is not None
        return [
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
                attributes=point.attributes,
                events=point.events,
                status=point.status,
                start_time=point.start_ns,
                end_time=point.end_ns,
                instrumentation_scope=self.instrumentation_scope,
                plugin_outcomes=point.plugin_outcomes,
            )
            for point in self.points
        ]


def expand(spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    """``spans`` with each attempt's recorded extension points as spans after it."""
    out: list[ReadableSpan] = []
    for span in spans:
        out.append(span)
        if type(span) is AttemptWithPoints:
            out.extend(span.point_spans())
    return out
