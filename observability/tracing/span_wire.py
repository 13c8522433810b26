"""Finished spans as plain tuples and back: what crosses from the scheduling process to the trace
export process (export_process.py).

A batch is one pickle of tuples: each span's fields, its resource and scope by index into tables
sent once per batch, and an attempt's :class:`~observability.spans.AttemptLog` entries as the
loop appended them, each framework status reduced to its code and message (pickled once per
status object: most are the shared OK). That costs the scheduling process about 14 µs per traced
pod (its pod span and an attempt of 30 entries), where encoding them as OTLP costs about 51 µs
(``python -m bench.span_export_microbench``); the export process folds the log into extension
points and encodes them, as the exporter always has. Both ends are this program (the scheduler
starts the export process from its own interpreter), so pickle's reach is not a concern.

Rebuilt spans encode to the same OTLP bytes as the originals
(tests/observability/test_span_wire.py).
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.span import TraceState

from observability.spans import (
    AttemptLog,
    AttemptWithPoints,
    ExtensionPoint,
    ExtensionPointSpan,
    PluginOutcome,
)

# What a span tuple's first field says it is.
_PLAIN, _POINT_SPAN, _ATTEMPT_LOG, _ATTEMPT_POINTS = range(4)

_KINDS = tuple(SpanKind)
_CODES = tuple(StatusCode)


class WireError(ValueError):
    """A batch that does not decode (a torn or foreign frame)."""


def dumps(spans: Sequence[ReadableSpan]) -> bytes:
    """One batch as bytes: the resources and scopes it names, once each, and its spans
    (WireError for an attribute value that cannot cross)."""
    buffer = io.BytesIO()
    try:
        _Pickler(buffer).dump(_Writer().batch(spans))
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise WireError(f"a span that cannot cross: {exc}") from None
    return buffer.getvalue()


def loads(blob: bytes) -> list[ReadableSpan]:
    """The spans of a batch made by :func:`dumps` (WireError if it is not one)."""
    try:
        resource_table, scope_table, items = pickle.loads(blob)
        resources = [Resource(attrs, schema_url) for attrs, schema_url in resource_table]
        scopes = [
            InstrumentationScope(name, version, schema_url, attrs)
            for name, version, schema_url, attrs in scope_table
        ]
        return [_span(item, resources, scopes) for item in items]
    except (pickle.UnpicklingError, EOFError, TypeError, ValueError, IndexError) as exc:
        raise WireError(f"undecodable span batch: {exc}") from None
    except (AttributeError, ImportError, KeyError) as exc:  # their str() is a bare name
        raise WireError(f"undecodable span batch: {exc!r}") from None


class _CodeAndMessage:
    """What the attempt log reads of a framework status (spans.FrameworkStatus)."""

    __slots__ = ("code_name", "message")

    def __init__(self, code_name: str, message: str) -> None:
        self.code_name = code_name
        self.message = message


class _Pickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)

    def reducer_override(self, obj: Any) -> Any:
        """Framework statuses (of the scheduler, which this package does not import) cross as
        their code and message; other mappings (read-only ones, the SDK's locked
        BoundedAttributes) as the dicts they show; a str, int, float or bytes of a subclass (an
        enum's, NumPy's) as the builtin value the encoder writes of it, so that no class of a
        plugin's module must be importable in the export process."""
        if isinstance(obj, Mapping):
            return dict, (dict(obj),)
        for builtin in _BUILTINS:
            if isinstance(obj, builtin):
                return builtin, (_BUILTIN_VALUE[builtin](obj),)
        code = getattr(obj, "code_name", None)
        if type(code) is str:
            return _CodeAndMessage, (code, obj.message)
        return NotImplemented


_BUILTINS = (str, int, float, bytes)  # bool has no subclasses; exact builtins never get here
_BUILTIN_VALUE: dict[type, Any] = {str: str.__str__, int: int, float: float, bytes: bytes}


# ---- to tuples ---------------------------------------------------------------------------


def _attrs(attributes: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return dict(attributes) if attributes else None


def _context(context: SpanContext | None) -> tuple[Any, ...] | None:
    if context is None:
        return None
    state = context.trace_state
    return (
        context.trace_id,
        context.span_id,
        context.is_remote,
        int(context.trace_flags),
        tuple(state.items()) if state else None,
    )


class _Writer:
    """A batch as plain tuples."""

    def batch(self, spans: Sequence[ReadableSpan]) -> tuple[Any, ...]:
        resources: dict[int, int] = {}
        scopes: dict[int, int] = {}
        resource_table: list[Any] = []
        scope_table: list[Any] = []
        items = []
        for span in spans:
            resource = span.resource
            index = resources.get(id(resource))
            if index is None:
                index = resources[id(resource)] = len(resource_table)
                resource_table.append((_attrs(resource.attributes) or {}, resource.schema_url))
            scope = span.instrumentation_scope
            scope_index = -1
            if scope is not None:
                found = scopes.get(id(scope))
                if found is None:
                    found = scopes[id(scope)] = len(scope_table)
                    scope_table.append(
                        (scope.name, scope.version, scope.schema_url, _attrs(scope.attributes))
                    )
                scope_index = found
            items.append(self.span(span, index, scope_index))
        return resource_table, scope_table, items

    def events(self, events: Sequence[Event]) -> list[tuple[Any, ...]]:
        return [(event.name, _attrs(event.attributes), event.timestamp) for event in events]

    def span(self, span: ReadableSpan, resource: int, scope: int) -> tuple[Any, ...]:
        status = span.status
        if isinstance(span, AttemptWithPoints):
            events = span.own_events
            log = span.log
            if log is not None:
                extra: Any = (
                    _ATTEMPT_LOG,
                    span.span_id_base,
                    log.keep_empty_points,
                    log.clock_origin,
                    log.wall_origin,
                    log.entries,  # as appended (see _Pickler)
                )
            else:
                extra = (_ATTEMPT_POINTS, span.span_id_base, [self.record(p) for p in span.points])
        elif isinstance(span, ExtensionPointSpan):
            events = span.own_events
            extra = (_POINT_SPAN, [tuple(outcome) for outcome in span.plugin_outcomes])
        else:
            events = span.events
            extra = (_PLAIN,)
        return (
            span.name,
            _context(span.context),
            _context(span.parent),
            span.start_time,
            span.end_time,
            _attrs(span.attributes),
            self.events(events),
            [(_context(link.context), _attrs(link.attributes)) for link in span.links],
            span.kind.value,
            status.status_code.value,
            status.description,
            resource,
            scope,
            extra,
        )

    def record(self, point: ExtensionPoint) -> tuple[Any, ...]:
        error = point.error
        return (
            point.name,
            point.span_id,
            point.start_ns,
            point.end_ns,
            point.code,
            point.message,
            [tuple(outcome) for outcome in point.plugin_outcomes],
            _attrs(point.extra_attributes),
            self.events(point.extra_events),
            None if error is None else (error.status_code.value, error.description),
        )


# ---- back to spans -----------------------------------------------------------------------


def _unwire_context(item: tuple[Any, ...] | None) -> SpanContext | None:
    if item is None:
        return None
    trace_id, span_id, remote, flags, state = item
    return SpanContext(
        trace_id,
        span_id,
        remote,
        TraceFlags(flags),
        TraceState(list(state)) if state is not None else None,
    )


def _unwire_events(items: list[tuple[Any, ...]]) -> list[Event]:
    return [Event(name, attrs, timestamp) for name, attrs, timestamp in items]


def _unwire_status(code: int, description: str | None) -> Status:
    return Status(_CODES[code], description)


def _span(
    item: tuple[Any, ...], resources: list[Resource], scopes: list[InstrumentationScope]
) -> ReadableSpan:
    (
        name,
        context,
        parent,
        start,
        end,
        attributes,
        events,
        links,
        kind,
        code,
        description,
        resource,
        scope,
        extra,
    ) = item
    common: dict[str, Any] = {
        "context": _unwire_context(context),
        "parent": _unwire_context(parent),
        "resource": resources[resource],
        "attributes": attributes,
        "events": _unwire_events(events),
        "links": [Link(_unwire_context(c), attrs) for c, attrs in links],  # type: ignore[arg-type]
        "kind": _KINDS[kind],
        "status": _unwire_status(code, description),
        "start_time": start,
        "end_time": end,
        "instrumentation_scope": scopes[scope] if scope >= 0 else None,
    }
    tag = extra[0]
    if tag == _PLAIN:
        return ReadableSpan(name, **common)
    if tag == _POINT_SPAN:
        outcomes = [PluginOutcome(*outcome) for outcome in extra[1]]
        return ExtensionPointSpan(name, plugin_outcomes=outcomes, **common)
    if tag == _ATTEMPT_POINTS:
        points = [_unwire_record(record) for record in extra[2]]
        return AttemptWithPoints(name, points=points, span_id_base=extra[1], **common)
    if tag == _ATTEMPT_LOG:
        _, base, keep_empty, clock_origin, wall_origin, entries = extra
        log = AttemptLog(keep_empty)
        log.clock_origin = clock_origin
        log.wall_origin = wall_origin
        log.entries = entries
        return AttemptWithPoints(name, log=log, span_id_base=base, **common)
    raise WireError(f"unknown span kind {tag!r}")


def _unwire_record(item: tuple[Any, ...]) -> ExtensionPoint:
    name, span_id, start, end, code, message, outcomes, attrs, events, error = item
    return ExtensionPoint(
        name,
        span_id,
        start,
        end,
        code,
        message,
        [PluginOutcome(*outcome) for outcome in outcomes],
        attrs,
        tuple(_unwire_events(events)),
        None if error is None else _unwire_status(*error),
    )
