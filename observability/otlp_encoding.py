"""OTLP/protobuf encoding of SDK spans, written straight to bytes.

The SDK's exporter builds a protobuf message object per span, attribute and value and then
serialises the tree: about 20 µs per span, which at ~10 spans per pod costs more than the rest of
tracing together. Here each span is written directly as protobuf wire format, and the byte form of
recurring names and key/value pairs (profile, plugin names and statuses, node names...) is cached.

:func:`encode_export_request` produces an ``ExportTraceServiceRequest`` that decodes to the same
message as ``encode_spans(expand(spans))`` from opentelemetry-exporter-otlp-proto-common (the
tests compare the two on generated spans): spans grouped by resource, then by instrumentation
scope, in order of first appearance, each attempt's recorded extension points right after it.

Wire format reference: opentelemetry-proto's trace/v1/trace.proto and common/v1/common.proto.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status

from observability.spans import (
    DURATION_KEY,
    PLUGIN_EVENT_NAME,
    PLUGIN_KEY,
    STATUS_KEY,
    AttemptLog,
    AttemptWithPoints,
    ExtensionPoint,
    ExtensionPointSpan,
    PluginOutcome,
    PluginTiming,
    point_span_id,
)

log = logging.getLogger(__name__)

_pack_fixed64 = struct.Struct("<Q").pack
_pack_double = struct.Struct("<d").pack
_pack_fixed32 = struct.Struct("<I").pack
_pack_start_end = struct.Struct("<BQBQ").pack  # Span.start_time_unix_nano, end_time_unix_nano

#: Protobuf Span.flags: the "is the parent remote" bit is known (SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE)
_FLAGS_HAS_IS_REMOTE = 0x100
_FLAGS_IS_REMOTE = 0x200

#: Bound on each cache; cleared when full (the working set is small: names, profiles, nodes).
_CACHE_LIMIT = 16384


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64  # int64 as two's complement, ten bytes
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_VARINTS = tuple(_varint(n) for n in range(1 << 14))


def _len_prefix(length: int) -> bytes:
    return _SMALL_VARINTS[length] if length < 16384 else _varint(length)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2) whose tag byte(s) are given."""
    return tag + _len_prefix(len(payload)) + payload


def _string(tag: bytes, text: str) -> bytes:
    return _field(tag, text.encode("utf-8"))


# ------------------------------------------------------------------------ values (common.proto)


def _any_value(value: Any) -> bytes:
    """The AnyValue message body, with the SDK encoder's type dispatch order."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return _string(b"\x0a", value)
    if isinstance(value, int):
        if not -(1 << 63) <= value < 1 << 63:
            raise ValueError(f"{value} does not fit an int64")
        return b"\x18" + _varint(value)
    if isinstance(value, float):
        return b"\x21" + _pack_double(value)
    if isinstance(value, bytes):
        return _field(b"\x3a", value)
    if isinstance(value, Sequence):
        return _field(b"\x2a", b"".join(_field(b"\x0a", _any_value(v)) for v in value))
    if isinstance(value, Mapping):
        return _field(
            b"\x32", b"".join(_field(b"\x0a", _key_value(str(k), v)) for k, v in value.items())
        )
    raise TypeError(f"invalid attribute value type {type(value).__name__}: {value!r}")


def _key_value(key: str, value: Any) -> bytes:
    return _string(b"\x0a", key) + _field(b"\x12", _any_value(value))


class SpanEncoder:
    """Per-exporter caches of encoded names and attributes; not thread-safe (one export thread)."""

    def __init__(self) -> None:
        # (field tag, key, value type, value) -> the whole attribute field; the type is part of
        # the key because True == 1 and they encode differently
        self._pairs: dict[tuple[bytes, str, type, Any], bytes] = {}
        # (field tag, key) -> an attribute field up to its 8-byte double (durations: never equal)
        self._double_prefixes: dict[tuple[bytes, str], bytes] = {}
        self._names: dict[tuple[bytes, str], bytes] = {}
        self._headers: dict[int, tuple[object, bytes]] = {}  # id(resource/scope) -> encoding
        # extension point (name, code, message) -> its span's bytes between the times and the
        # plugin events, and after them
        self._point_fixed: dict[tuple[str, str, str], tuple[bytes, bytes]] = {}
        # (plugin, status) -> packs a "plugin" event from its timestamp and duration
        self._outcome_packers: dict[tuple[str, str], Callable[[int, float], bytes]] = {}

    def attributes(
        self, tag: bytes, attributes: Mapping[str, Any] | None, out: list[bytes]
    ) -> None:
        """Append one ``tag`` field (a KeyValue) per attribute to ``out``."""
        if not attributes:
            return
        pairs = self._pairs
        for key, value in attributes.items():
            kind = type(value)
            if kind is float:
                out.append(self._double_prefix(tag, key) + _pack_double(value))
                continue
            cache_key = (tag, key, kind, value) if kind in _CACHEABLE else None
            encoded = pairs.get(cache_key) if cache_key is not None else None
            if encoded is None:
                try:
                    encoded = _field(tag, _key_value(key, value))
                except Exception as exc:  # the SDK encoder also drops just this attribute
                    log.error("cannot encode span attribute %s: %s", key, exc)
                    continue
                if cache_key is not None:
                    if len(pairs) >= _CACHE_LIMIT:
                        pairs.clear()
                    pairs[cache_key] = encoded
            out.append(encoded)

    def _double_prefix(self, tag: bytes, key: str) -> bytes:
        prefix = self._double_prefixes.get((tag, key))
        if prefix is None:
            key_field = _string(b"\x0a", key)
            value_field_head = b"\x12\x09\x21"  # AnyValue of 9 bytes: double_value's tag + 8
            length = len(key_field) + len(value_field_head) + 8
            prefix = tag + _len_prefix(length) + key_field + value_field_head
            if len(self._double_prefixes) >= _CACHE_LIMIT:
                self._double_prefixes.clear()
            self._double_prefixes[(tag, key)] = prefix
        return prefix

    def name(self, tag: bytes, name: str) -> bytes:
        key = (tag, name)
        encoded = self._names.get(key)
        if encoded is None:
            if len(self._names) >= _CACHE_LIMIT:
                self._names.clear()
            encoded = self._names[key] = _string(tag, name)
        return encoded

    # ---- spans (trace.proto) ----------------------------------------------------------------

    def span(self, span: ReadableSpan, events: Sequence[Any] | None = None) -> bytes:
        """A Span message; ``events`` stands in for ``span.events`` when given."""
        context = span.context
        assert context is not None, "an ended span always has a context"
        parts = [
            b"\x0a\x10" + context.trace_id.to_bytes(16, "big"),
            b"\x12\x08" + context.span_id.to_bytes(8, "big"),
        ]
        trace_state = context.trace_state
        if trace_state:
            parts.append(_string(b"\x1a", ",".join(f"{k}={v}" for k, v in trace_state.items())))
        parent = span.parent
        if parent is not None:
            parts.append(b"\x22\x08" + parent.span_id.to_bytes(8, "big"))
        parts.append(self.name(b"\x2a", span.name))
        parts.append(_KIND_FIELDS[span.kind])
        start, end = span.start_time, span.end_time
        if start:
            parts.append(b"\x39" + _pack_fixed64(start))
        if end:
            parts.append(b"\x41" + _pack_fixed64(end))
        self.attributes(b"\x4a", span.attributes, parts)
        if span.dropped_attributes:
            parts.append(b"\x50" + _varint(span.dropped_attributes))
        outcomes: Sequence[PluginOutcome] = ()
        if events is None:
            if type(span) is ExtensionPointSpan:
                events, outcomes = span.own_events, span.plugin_outcomes
            else:
                events = span.events
        self._events(events, outcomes, parts)
        if span.dropped_events:
            parts.append(b"\x60" + _varint(span.dropped_events))
        for link in span.links:
            parts.append(_field(b"\x6a", self._link(link)))
        if span.dropped_links:
            parts.append(b"\x70" + _varint(span.dropped_links))
        parts.append(_field(b"\x7a", self._status(span.status)))
        parts.append(_REMOTE_FLAGS if parent is not None and parent.is_remote else _LOCAL_FLAGS)
        return b"".join(parts)

    def point(self, head: bytes, point: ExtensionPoint) -> bytes:
        """An extension point's span, child of the attempt whose ``head`` is given: its trace
        id field, and trace state and parent fields (see :meth:`point_head`)."""
        span_id = b"\x12\x08" + point.span_id.to_bytes(8, "big")
        if not point.is_plain or not point.start_ns or not point.end_ns:
            return self._point_in_full(head, span_id, point)
        between, after = self._point_fixed_parts(point.name, point.code, point.message)
        parts = [head, span_id, _pack_start_end(0x39, point.start_ns, 0x41, point.end_ns)]
        parts.append(between)
        self._outcomes(point.plugin_outcomes, parts)
        parts.append(after)
        return b"".join(parts)

    def _point_fixed_parts(self, name: str, code: str, message: str) -> tuple[bytes, bytes]:
        """A plain extension point's span bytes between its times and its plugin events (name,
        kind, attributes), and after them (status, flags): they depend on these three only."""
        key = (name, code, message)
        fixed = self._point_fixed.get(key)
        if fixed is None:
            plain = ExtensionPoint(name, 0, 0, 0, code, message)
            attributes, status = plain.attributes_and_status()
            between = [self.name(b"\x2a", name), _INTERNAL_KIND]
            self.attributes(b"\x4a", attributes, between)
            fixed = b"".join(between), _field(b"\x7a", self._status(status)) + _LOCAL_FLAGS
            if len(self._point_fixed) >= _CACHE_LIMIT:
                self._point_fixed.clear()
            self._point_fixed[key] = fixed
        return fixed

    def _point_in_full(self, head: bytes, span_id: bytes, point: ExtensionPoint) -> bytes:
        attributes, status = point.attributes_and_status()
        parts = [head, span_id, self.name(b"\x2a", point.name), _INTERNAL_KIND]
        if point.start_ns:
            parts.append(b"\x39" + _pack_fixed64(point.start_ns))
        if point.end_ns:
            parts.append(b"\x41" + _pack_fixed64(point.end_ns))
        self.attributes(b"\x4a", attributes, parts)
        self._events(point.extra_events, point.plugin_outcomes, parts)
        parts.append(_field(b"\x7a", self._status(status)))
        parts.append(_LOCAL_FLAGS)
        return b"".join(parts)

    @staticmethod
    def point_head(attempt: SpanContext) -> bytes:
        """Fields every extension point of ``attempt`` shares (field order is free in
        protobuf): trace id, trace state, and the attempt as parent."""
        head = b"\x0a\x10" + attempt.trace_id.to_bytes(16, "big")
        if attempt.trace_state:
            items = ",".join(f"{k}={v}" for k, v in attempt.trace_state.items())
            head += _string(b"\x1a", items)
        return head + b"\x22\x08" + attempt.span_id.to_bytes(8, "big")

    def _events(
        self, events: Sequence[Any], outcomes: Sequence[PluginOutcome], parts: list[bytes]
    ) -> None:
        event = self._event
        for each in events:
            body = event(each)
            parts.append(b"\x5a" + _len_prefix(len(body)) + body)
        self._outcomes(outcomes, parts)

    def _outcomes(self, outcomes: Sequence[PluginOutcome], parts: list[bytes]) -> None:
        """Span.events fields, one "plugin" event per outcome."""
        packers = self._outcome_packers
        for outcome in outcomes:
            plugin, status, duration_ms, timestamp_ns = outcome
            if not timestamp_ns:  # the SDK leaves a zero time out: not the packed layout
                body = self._plugin_outcome(outcome)
                parts.append(b"\x5a" + _len_prefix(len(body)) + body)
                continue
            pack = packers.get((plugin, status)) or self._outcome_packer(plugin, status)
            parts.append(pack(timestamp_ns, duration_ms))

    def _outcome_packer(self, plugin: str, status: str) -> Callable[[int, float], bytes]:
        """Packs a timed "plugin" event of this plugin and status: everything but the
        timestamp and the duration (both fixed-size) is the same every time."""
        middle = (
            self.name(b"\x12", PLUGIN_EVENT_NAME)
            + self._string_pair(b"\x1a", PLUGIN_KEY, plugin)
            + self._string_pair(b"\x1a", STATUS_KEY, status)
            + self._double_prefix(b"\x1a", DURATION_KEY)
        )
        body_length = 1 + 8 + len(middle) + 8
        head = b"\x5a" + _len_prefix(body_length) + b"\x09"
        layout = struct.Struct(f"<{len(head)}sQ{len(middle)}sd")

        def pack(timestamp_ns: int, duration_ms: float) -> bytes:
            return layout.pack(head, timestamp_ns, middle, duration_ms)

        if len(self._outcome_packers) >= _CACHE_LIMIT:
            self._outcome_packers.clear()
        self._outcome_packers[(plugin, status)] = pack
        return pack

    def span_with_points(self, span: ReadableSpan, out: list[bytes]) -> None:
        """Append ``span``'s ScopeSpans.spans field, then its recorded extension points'."""
        if type(span) is not AttemptWithPoints:
            out.append(_field(b"\x12", self.span(span)))
            return
        assert span.context is not None
        head = self.point_head(span.context)
        log = span.log
        if log is None:
            out.append(_field(b"\x12", self.span(span)))
            for point in span.points:
                out.append(_field(b"\x12", self.point(head, point)))
            return
        points: list[bytes] = []
        unfinished: dict[str, dict[str, PluginTiming]] = {}
        self._log_points(head, log, span.span_id_base, unfinished, points)
        events = span.own_events
        if unfinished:
            events = (*events, *log.unfinished_events(unfinished))
        out.append(_field(b"\x12", self.span(span, events)))
        out.extend(points)

    def _log_points(
        self,
        head: bytes,
        log: AttemptLog,
        span_id_base: int,
        unfinished: dict[str, dict[str, PluginTiming]],
        out: list[bytes],
    ) -> None:
        """An attempt's extension points written straight from its log: the bytes of
        ``expand``'s point spans, without building them (about half the cost of tracing a pod
        was building then encoding these records)."""
        origin, wall = log.clock_origin, log.wall_origin
        packers = self._outcome_packers
        for index, point in enumerate(log.walk(unfinished), 1):
            span_id = point_span_id(span_id_base, index)
            if isinstance(point, ExtensionPoint):
                body = self.point(head, point._replace(span_id=span_id))
                out.append(b"\x12" + _len_prefix(len(body)) + body)
                continue
            name, status, start, end, plugins = point
            start_ns = wall + int((start - origin) * 1e9)
            end_ns = wall + int((end - origin) * 1e9)
            if not start_ns or not end_ns:  # the SDK leaves zero times out: the general path
                body = self.point(head, log.timed_point(point, span_id))
                out.append(b"\x12" + _len_prefix(len(body)) + body)
                continue
            between, after = self._point_fixed_parts(name, status.code_name, status.message)
            parts = [
                head,
                b"\x12\x08" + span_id.to_bytes(8, "big"),
                _pack_start_end(0x39, start_ns, 0x41, end_ns),
                between,
            ]
            if plugins:
                for plugin, (seconds, last_end, code) in plugins.items():
                    timestamp_ns = wall + int((last_end - origin) * 1e9)
                    pack = packers.get((plugin, code))
                    if pack is None or not timestamp_ns:
                        outcome = PluginOutcome(plugin, code, seconds * 1000.0, timestamp_ns)
                        self._outcomes((outcome,), parts)
                    else:
                        parts.append(pack(timestamp_ns, seconds * 1000.0))
            parts.append(after)
            body = b"".join(parts)
            out.append(b"\x12" + _len_prefix(len(body)) + body)

    def _event(self, event: Any) -> bytes:
        parts = []
        timestamp = event.timestamp
        if timestamp:
            parts.append(b"\x09" + _pack_fixed64(timestamp))
        name = event.name
        if name:
            parts.append(self.name(b"\x12", name))
        self.attributes(b"\x1a", event.attributes, parts)
        if event.dropped_attributes:
            parts.append(b"\x20" + _varint(event.dropped_attributes))
        return b"".join(parts)

    def _plugin_outcome(self, outcome: PluginOutcome) -> bytes:
        """The "plugin" event ``outcome.event()`` stands for, written from the tuple."""
        parts = [b"\x09" + _pack_fixed64(outcome.timestamp_ns)] if outcome.timestamp_ns else []
        parts.append(self.name(b"\x12", PLUGIN_EVENT_NAME))
        parts.append(self._string_pair(b"\x1a", PLUGIN_KEY, outcome.plugin))
        parts.append(self._string_pair(b"\x1a", STATUS_KEY, outcome.status))
        parts.append(self._double_prefix(b"\x1a", DURATION_KEY) + _pack_double(outcome.duration_ms))
        return b"".join(parts)

    def _string_pair(self, tag: bytes, key: str, value: str) -> bytes:
        cache_key = (tag, key, str, value)
        encoded = self._pairs.get(cache_key)
        if encoded is None:
            encoded = _field(tag, _key_value(key, value))
            if len(self._pairs) >= _CACHE_LIMIT:
                self._pairs.clear()
            self._pairs[cache_key] = encoded
        return encoded

    def _link(self, link: Any) -> bytes:
        linked = link.context
        parts = [
            b"\x0a\x10" + linked.trace_id.to_bytes(16, "big"),
            b"\x12\x08" + linked.span_id.to_bytes(8, "big"),
        ]
        self.attributes(b"\x22", link.attributes, parts)
        if link.dropped_attributes:
            parts.append(b"\x28" + _varint(link.dropped_attributes))
        parts.append(b"\x35" + _pack_fixed32(_flags(linked)))
        return b"".join(parts)

    @staticmethod
    def _status(status: Status) -> bytes:
        parts = []
        if status.description:
            parts.append(_string(b"\x12", status.description))
        if status.status_code.value:
            parts.append(b"\x18" + _SMALL_VARINTS[status.status_code.value])
        return b"".join(parts)

    # ---- resource and scope headers ----------------------------------------------------------

    def _header(self, obj: object, build: Any) -> bytes:
        cached = self._headers.get(id(obj))
        if cached is None or cached[0] is not obj:
            if len(self._headers) >= 64:
                self._headers.clear()
            cached = self._headers[id(obj)] = (obj, build(obj))
        return cached[1]

    def resource(self, resource: Resource) -> bytes:
        def build(r: Resource) -> bytes:
            parts: list[bytes] = []
            self.attributes(b"\x0a", r.attributes, parts)
            return _field(b"\x0a", b"".join(parts))

        return self._header(resource, build)

    def scope(self, scope: InstrumentationScope | None) -> bytes:
        if scope is None:
            return _field(b"\x0a", b"")

        def build(s: InstrumentationScope) -> bytes:
            parts = []
            if s.name:
                parts.append(_string(b"\x0a", s.name))
            if s.version:
                parts.append(_string(b"\x12", s.version))
            self.attributes(b"\x1a", s.attributes, parts)
            return _field(b"\x0a", b"".join(parts))

        return self._header(scope, build)

    # ---- the request -------------------------------------------------------------------------

    def request(self, spans: Sequence[ReadableSpan]) -> bytes:
        groups = _group(spans)
        out = []
        for resource, scopes in groups:
            scope_parts = []
            for scope, members in scopes:
                body = [self.scope(scope)]
                for member in members:
                    self.span_with_points(member, body)
                schema = scope.schema_url if scope is not None else ""
                if schema:
                    body.append(_string(b"\x1a", schema))
                scope_parts.append(_field(b"\x12", b"".join(body)))
            resource_body = [self.resource(resource), *scope_parts]
            if resource.schema_url:
                resource_body.append(_string(b"\x1a", resource.schema_url))
            out.append(_field(b"\x0a", b"".join(resource_body)))
        return b"".join(out)


_LOCAL_FLAGS: Final = b"\x85\x01" + _pack_fixed32(_FLAGS_HAS_IS_REMOTE)
_REMOTE_FLAGS: Final = b"\x85\x01" + _pack_fixed32(_FLAGS_HAS_IS_REMOTE | _FLAGS_IS_REMOTE)
#: Span.kind fields: the protobuf SPAN_KIND_* value is the API's SpanKind value + 1.
_KIND_FIELDS: Final = {kind: b"\x30" + _SMALL_VARINTS[kind.value + 1] for kind in SpanKind}
_INTERNAL_KIND: Final = _KIND_FIELDS[SpanKind.INTERNAL]
_CACHEABLE: Final = frozenset({str, int, bool})


def _flags(parent: SpanContext | None) -> int:
    if parent is not None and parent.is_remote:
        return _FLAGS_HAS_IS_REMOTE | _FLAGS_IS_REMOTE
    return _FLAGS_HAS_IS_REMOTE


Group = list[tuple[Resource, list[tuple[InstrumentationScope | None, list[ReadableSpan]]]]]


def _group(spans: Sequence[ReadableSpan]) -> Group:
    """Spans by resource, then scope, in first-appearance order, as the SDK groups them (by
    equality). Looked up by identity first: every span of one provider shares both objects."""
    groups: Group = []
    targets: dict[tuple[int, int], list[ReadableSpan]] = {}
    for span in spans:
        key = (id(span.resource), id(span.instrumentation_scope))
        target = targets.get(key)
        if target is None:
            target = targets[key] = _group_of(groups, span)
        target.append(span)
    return groups


def _group_of(groups: Group, span: ReadableSpan) -> list[ReadableSpan]:
    resource, scope = span.resource, span.instrumentation_scope or None
    scopes = next((entry for r, entry in groups if r is resource or r == resource), None)
    if scopes is None:
        scopes = []
        groups.append((resource, scopes))
    members = next((m for s, m in scopes if s is scope or s == scope), None)
    if members is None:
        members = []
        scopes.append((scope, members))
    return members


def encode_export_request(
    spans: Sequence[ReadableSpan], encoder: SpanEncoder | None = None
) -> bytes:
    """A serialized ``ExportTraceServiceRequest`` carrying ``spans``."""
    return (encoder or SpanEncoder()).request(spans)
