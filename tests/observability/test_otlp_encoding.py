"""observability.otlp_encoding writes the same OTLP message the SDK's encoder builds.

Every case decodes our bytes with opentelemetry-proto and compares the message with
``encode_spans`` from opentelemetry-exporter-otlp-proto-common.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.span import TraceState

from observability.otlp_encoding import SpanEncoder, encode_export_request
from observability.spans import (
    AttemptWithPoints,
    ExtensionPoint,
    ExtensionPointSpan,
    PluginOutcome,
    expand,
)

RESOURCE = Resource({"service.name": "aiosched", "telemetry.sdk.language": "python"})
OTHER_RESOURCE = Resource({"service.name": "other"}, schema_url="https://example.com/s")
SCOPE = InstrumentationScope("aiosched")
VERSIONED_SCOPE = InstrumentationScope("lib", "1.2", "https://example.com/x", {"k": "v"})


def context(trace_id: int, span_id: int, remote: bool = False, **kw: Any) -> SpanContext:
    return SpanContext(trace_id, span_id, remote, TraceFlags(TraceFlags.SAMPLED), **kw)


def span(name: str = "Filter", **kw: Any) -> ReadableSpan:
    defaults: dict[str, Any] = {
        "context": context(0xABC, 0x12),
        "parent": context(0xABC, 0x11),
        "resource": RESOURCE,
        "instrumentation_scope": SCOPE,
        "start_time": 1_700_000_000_000_000_000,
        "end_time": 1_700_000_000_000_500_000,
    }
    return ReadableSpan(name, **(defaults | kw))


def assert_same_message(spans: list[ReadableSpan]) -> None:
    ours = ExportTraceServiceRequest.FromString(encode_export_request(spans))
    assert ours == encode_spans(expand(spans))


@pytest.mark.parametrize(
    "spans",
    [
        pytest.param([], id="empty batch"),
        pytest.param([span()], id="plain child span"),
        pytest.param([span(parent=None)], id="root span"),
        pytest.param([span(parent=context(1, 2, remote=True))], id="remote parent flag"),
        pytest.param(
            [span(context=context(1, 2, trace_state=TraceState([("a", "1"), ("b", "2")])))],
            id="trace state",
        ),
        pytest.param(
            [
                span(
                    attributes={
                        "s": "x",
                        "empty": "",
                        "t": True,
                        "f": False,
                        "zero": 0,
                        "neg": -5,
                        "big": 2**62,
                        "float": 0.25,
                        "strs": ("a", "b"),
                        "ints": [1, 2],
                        "none": None,
                        "bytes": b"\x00\x01",
                        "unicode": "pod-ü-✓",
                    }
                )
            ],
            id="every attribute type",
        ),
        pytest.param([span(attributes={"huge": 2**70, "ok": 1})], id="int64 overflow dropped"),
        pytest.param([span(status=Status(StatusCode.OK))], id="status ok"),
        pytest.param([span(status=Status(StatusCode.ERROR, "0/3 nodes"))], id="status error"),
        pytest.param(
            [
                span(
                    events=[
                        Event("plugin", {"aiosched.plugin": "X", "ms": 0.5}, 123),
                        Event("bare", None, 456),
                    ]
                )
            ],
            id="events",
        ),
        pytest.param(
            [span(links=[Link(context(7, 8, remote=True), {"why": "retry"}), Link(context(7, 9))])],
            id="links",
        ),
        pytest.param([span(kind=SpanKind.CLIENT), span(kind=SpanKind.CONSUMER)], id="kinds"),
        pytest.param(
            [
                span("a"),
                span("b", resource=OTHER_RESOURCE),
                span("c", instrumentation_scope=VERSIONED_SCOPE),
                span("d", instrumentation_scope=None),
                span("e", resource=Resource(dict(RESOURCE.attributes))),  # equal, not identical
                span("f"),
            ],
            id="grouped by resource then scope in first-seen order",
        ),
        pytest.param([span(start_time=None, end_time=None)], id="unset times"),
        pytest.param(
            [
                ExtensionPointSpan(
                    "Filter",
                    context=context(5, 6),
                    parent=context(5, 4),
                    resource=RESOURCE,
                    instrumentation_scope=SCOPE,
                    start_time=10,
                    end_time=20,
                    attributes={"aiosched.status": "Success"},
                    events=[Event("exception", {"exception.message": "boom"}, 15)],
                    plugin_outcomes=[
                        PluginOutcome("NodeResourcesFit", "Success", 0.0125, 17),
                        PluginOutcome("TaintToleration", "Unschedulable", 0.5, 18),
                        PluginOutcome("NodeName", "Skip", 0.0, 0),
                    ],
                )
            ],
            id="plugin outcomes written from their tuples",
        ),
        pytest.param(
            [
                span("before"),
                AttemptWithPoints(
                    "SchedulingAttempt",
                    context=context(9, 0x40, trace_state=TraceState([("vendor", "x")])),
                    parent=context(9, 0x30),
                    resource=RESOURCE,
                    instrumentation_scope=SCOPE,
                    start_time=100,
                    end_time=900,
                    attributes={"aiosched.attempt": 1, "aiosched.result": "scheduled"},
                    status=Status(StatusCode.OK),
                    points=[
                        ExtensionPoint(
                            "Filter",
                            0x41,
                            110,
                            200,
                            "Success",
                            "",
                            [PluginOutcome("NodeResourcesFit", "Success", 0.01, 150)],
                        ),
                        ExtensionPoint(
                            "Bind",
                            0x42,
                            300,
                            800,
                            "Error",
                            "409 conflict",
                            extra_events=(Event("exception", {"exception.message": "boom"}, 400),),
                        ),
                        ExtensionPoint(
                            "PreBind",
                            0x43,
                            300,
                            800,
                            "",
                            extra_attributes={"aiosched.volumes": 2},
                            error=Status(StatusCode.ERROR, "RuntimeError('x')"),
                        ),
                        ExtensionPoint("Permit", 0x44, 0, 0, "Wait", "waiting on gate"),
                    ],
                ),
                span("after"),
            ],
            id="an attempt's recorded extension points become its child spans",
        ),
    ],
)
def test_encoding_matches_the_sdk(spans: list[ReadableSpan]) -> None:
    assert_same_message(spans)


scalars = st.one_of(
    st.text(max_size=12),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
)
attribute_values = st.one_of(scalars, st.lists(st.text(max_size=5), max_size=3).map(tuple))
attribute_maps = st.dictionaries(st.text(min_size=1, max_size=10), attribute_values, max_size=6)
ids = st.integers(min_value=1, max_value=2**64 - 1)


@st.composite
def spans(draw: st.DrawFn) -> ReadableSpan:
    trace_id = draw(st.integers(min_value=1, max_value=2**128 - 1))
    has_parent = draw(st.booleans())
    events = draw(
        st.lists(
            st.builds(
                Event,
                st.text(max_size=8),
                attribute_maps,
                st.integers(min_value=0, max_value=2**63),
            ),
            max_size=3,
        )
    )
    code = draw(st.sampled_from([StatusCode.UNSET, StatusCode.OK, StatusCode.ERROR]))
    return span(
        draw(st.text(max_size=20)),
        context=context(trace_id, draw(ids)),
        parent=context(trace_id, draw(ids), draw(st.booleans())) if has_parent else None,
        attributes=draw(attribute_maps),
        events=events,
        status=Status(code, draw(st.text(max_size=10)) if code is StatusCode.ERROR else None),
        resource=draw(st.sampled_from([RESOURCE, OTHER_RESOURCE])),
        instrumentation_scope=draw(st.sampled_from([SCOPE, VERSIONED_SCOPE, None])),
        start_time=draw(st.integers(min_value=0, max_value=2**64 - 1)),
        end_time=draw(st.integers(min_value=0, max_value=2**64 - 1)),
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(spans(), max_size=8))
def test_any_batch_encodes_like_the_sdk(batch: list[ReadableSpan]) -> None:
    assert_same_message(batch)


def test_cached_encodings_are_reused_across_batches_without_changing_the_output() -> None:
    encoder = SpanEncoder()
    batch = [span(attributes={"aiosched.profile": "default-scheduler", "n": 3}) for _ in range(3)]
    first = encoder.request(batch)
    assert encoder.request(batch) == first
    assert ExportTraceServiceRequest.FromString(first) == encode_spans(batch)


def test_plugin_outcomes_read_as_sdk_events_after_the_others() -> None:
    point = ExtensionPointSpan(
        "Score",
        events=[Event("exception", {"exception.message": "boom"}, 1)],
        plugin_outcomes=[PluginOutcome("ImageLocality", "Success", 0.25, 2)],
    )
    first, second = point.events
    assert (first.name, second.name, second.timestamp) == ("exception", "plugin", 2)
    assert dict(second.attributes or {}) == {
        "aiosched.plugin": "ImageLocality",
        "aiosched.status": "Success",
        "aiosched.duration_ms": 0.25,
    }
