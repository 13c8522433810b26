"""observability.spans.AttemptLog: what the framework reported becomes extension-point spans.

The scheduling loop only appends to the log; these tests pin down what the export thread makes
of it, and that aiosched's encoder, which writes the points straight from the log, produces the
same OTLP message as the SDK's encoder given the spans ``expand`` builds from the same log.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

from observability.otlp_encoding import SpanEncoder
from observability.spans import (
    AttemptLog,
    AttemptWithPoints,
    ExtensionPoint,
    PluginOutcome,
    PointAnnotation,
    expand,
    point_span_id,
)
from scheduler.framework.status import Code
from scheduler.framework.status import Status as FrameworkStatus

OK = FrameworkStatus.OK
SKIP = FrameworkStatus.skip()
REJECTED = FrameworkStatus.unschedulable("node(s) had untolerated taint")
WALL = 1_700_000_000_000_000_000  # wall clock (ns) when the framework clock read 10.0 s


def log_of(*entries: Any, keep_empty_points: bool = True) -> AttemptLog:
    log = AttemptLog(keep_empty_points)
    log.set_clock(10.0, WALL)
    log.entries.extend(entries)
    return log


def ns(seconds: float) -> int:
    return WALL + int((seconds - 10.0) * 1e9)


@pytest.mark.parametrize(
    ("entries", "keep_empty", "expected"),
    [
        pytest.param(
            [
                ("PreFilter", "NodePorts", SKIP, 0.001, 10.002),
                ("PreFilter", None, OK, 10.0, 10.003),
            ],
            True,
            [("PreFilter", "Success", "", [("NodePorts", "Skip", 1.0, ns(10.002))])],
            id="a plugin event per plugin that ran",
        ),
        pytest.param(
            [
                ("Filter", "TaintToleration", OK, 0.001, 10.01),
                ("Filter", "TaintToleration", REJECTED, 0.002, 10.02),
                ("Filter", "TaintToleration", OK, 0.003, 10.03),
                ("Filter", None, REJECTED, 10.0, 10.04),
            ],
            True,
            [
                (
                    "Filter",
                    "Unschedulable",
                    "node(s) had untolerated taint",
                    [("TaintToleration", "Unschedulable", 6.0, ns(10.03))],
                )
            ],
            id="calls per chunk: summed, at the last end, failing status kept",
        ),
        pytest.param(
            [("Reserve", None, OK, 10.0, 10.0001), ("Permit", None, OK, 10.1, 10.1002)],
            True,
            [("Reserve", "Success", "", []), ("Permit", "Success", "", [])],
            id="empty points kept by default",
        ),
        pytest.param(
            [
                ("Reserve", None, OK, 10.0, 10.0001),
                ("Permit", None, FrameworkStatus.wait(), 10.1, 10.1002),
                ("WaitOnPermit", None, OK, 10.2, 10.25),
                ("PreBind", None, FrameworkStatus(Code.ERROR, "boom"), 10.3, 10.3001),
            ],
            False,
            [
                ("Permit", "Wait", "", []),
                ("WaitOnPermit", "Success", "", []),
                ("PreBind", "Error", "boom", []),
            ],
            id="without empty points: only failing or slow ones",
        ),
    ],
)
def test_decoded_points(entries: list[Any], keep_empty: bool, expected: list[Any]) -> None:
    points, unfinished = log_of(*entries, keep_empty_points=keep_empty).decode(0x100)
    assert unfinished == []
    assert [
        (p.name, p.code, p.message, [tuple(o) for o in p.plugin_outcomes]) for p in points
    ] == expected
    assert [p.span_id for p in points] == [0x101 + i for i in range(len(points))]


def test_points_keep_their_times_in_wall_clock_nanoseconds() -> None:
    (point,), _ = log_of(("Bind", None, OK, 10.5, 10.75)).decode(7)
    assert (point.start_ns, point.end_ns) == (WALL + 500_000_000, WALL + 750_000_000)


def test_plugins_of_a_point_that_never_ended_become_attempt_events() -> None:
    log = log_of(("PreFilter", "NodeAffinity", OK, 0.002, 10.5), ("Bind", None, OK, 10.6, 10.7))
    points, events = log.decode(1)
    assert [p.name for p in points] == ["Bind"]
    (event,) = events
    assert (event.name, event.timestamp) == ("plugin", ns(10.5))
    assert dict(event.attributes or {}) == {
        "aiosched.plugin": "NodeAffinity",
        "aiosched.status": "Success",
        "aiosched.extension_point": "PreFilter",
        "aiosched.duration_ms": 2.0,
    }


def test_hand_timed_points_keep_their_place_and_get_the_next_id() -> None:
    hand_timed = ExtensionPoint("Permit", 0, 5, 6, "Success")
    log = log_of(("Reserve", None, OK, 10.0, 10.1), hand_timed, ("Bind", None, OK, 10.2, 10.3))
    points, _ = log.decode(41)
    assert [(p.name, p.span_id) for p in points] == [("Reserve", 42), ("Permit", 43), ("Bind", 44)]


def test_annotations_join_the_next_span_of_their_point() -> None:
    claims = {"aiosched.dra.claims": ("default/gpu",)}
    log = log_of(
        ("Reserve", "DynamicResources", OK, 0.001, 10.001),
        PointAnnotation("Reserve", claims),
        ("Reserve", None, OK, 10.0, 10.002),
        ("Permit", None, OK, 10.003, 10.004),
        PointAnnotation("PreBind", {"aiosched.dra.devices": ("default/gpu/gpu: d/p/x",)}),
        PointAnnotation("PreBind", claims),
        ("PreBind", None, OK, 10.005, 10.006),
    )
    points, _ = log.decode(1)
    assert [(p.name, dict(p.extra_attributes or {})) for p in points] == [
        ("Reserve", claims),
        ("Permit", {}),
        ("PreBind", {"aiosched.dra.devices": ("default/gpu/gpu: d/p/x",), **claims}),
    ]
    assert [p.span_id for p in points] == [2, 3, 4]
    attempt = AttemptWithPoints(
        "a", context=SpanContext(1, 2, False, FLAGS), log=log, span_id_base=1
    )
    reserve = expand([attempt])[1]
    assert dict(reserve.attributes or {}) == {"aiosched.status": "Success", **claims}


def test_point_span_ids_wrap_and_are_never_zero() -> None:
    assert point_span_id(2**64 - 1, 1) == 1
    assert point_span_id(2**64 - 2, 1) == 2**64 - 1
    assert point_span_id(5, 2) == 7


# ----------------------------------------------------------- encoder equals the SDK's encoder

RESOURCE = Resource({"service.name": "aiosched"})
SCOPE = InstrumentationScope("aiosched")
FLAGS = TraceFlags(TraceFlags.SAMPLED)
SHARED_ENCODER = SpanEncoder()  # its caches carry over between examples, as in a real exporter

statuses = st.sampled_from(
    [
        OK,
        SKIP,
        REJECTED,
        FrameworkStatus.wait(),
        FrameworkStatus(Code.ERROR, "409 conflict"),
        FrameworkStatus(Code.PENDING, "waiting", "for a driver"),
    ]
)
point_names = st.sampled_from(["PreFilter", "Filter", "Score", "Reserve", "Bind", "PostBind"])
plugin_names = st.sampled_from(["NodeResourcesFit", "TaintToleration", "DefaultBinder", "Ünï"])
times = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)
plugin_entries = st.tuples(
    point_names, plugin_names, statuses, st.floats(min_value=0.0, max_value=10.0), times
)
point_entries = st.tuples(point_names, st.none(), statuses, times, times)
annotations = st.builds(
    PointAnnotation,
    point_names,
    st.sampled_from(
        [{"aiosched.dra.claims": ("default/a",)}, {"aiosched.dra.devices": ("x", "y"), "n": 1}]
    ),
)
hand_timed = st.builds(
    ExtensionPoint,
    point_names,
    st.just(0),
    st.integers(min_value=0, max_value=2**63),
    st.integers(min_value=0, max_value=2**63),
    st.sampled_from(["", "Success", "Unschedulable"]),
    st.text(max_size=5),
    st.lists(
        st.builds(
            PluginOutcome,
            plugin_names,
            st.sampled_from(["Success", "Skip"]),
            st.floats(allow_nan=False),
            st.integers(min_value=0, max_value=2**63),
        ),
        max_size=2,
    ),
    extra_attributes=st.sampled_from([None, {"aiosched.volumes": 2}]),
    extra_events=st.just(()),
    error=st.sampled_from([None, Status(StatusCode.ERROR, "RuntimeError()")]),
)


@st.composite
def attempts(draw: st.DrawFn) -> AttemptWithPoints:
    log = AttemptLog(draw(st.booleans()))
    # A zero origin puts times at (or near) zero, which the SDK leaves out of the message.
    log.set_clock(0.0, draw(st.sampled_from([0, 1, WALL])))
    log.entries.extend(
        draw(
            st.lists(st.one_of(plugin_entries, point_entries, hand_timed, annotations), max_size=14)
        )
    )
    context = SpanContext(0xABC, 0x40, False, FLAGS)
    return AttemptWithPoints(
        "SchedulingAttempt",
        context=context,
        parent=SpanContext(0xABC, 0x30, False, FLAGS),
        resource=RESOURCE,
        instrumentation_scope=SCOPE,
        start_time=WALL,
        end_time=WALL + 1,
        status=Status(StatusCode.OK),
        log=log,
        span_id_base=draw(st.integers(min_value=1, max_value=2**64 - 1)),
    )


@settings(max_examples=200, deadline=None)
@given(attempts())
def test_points_written_from_the_log_match_the_sdk_encoding(attempt: AttemptWithPoints) -> None:
    ours = ExportTraceServiceRequest.FromString(SHARED_ENCODER.request([attempt]))
    assert ours == encode_spans(expand([attempt]))


def test_a_typical_attempt_encodes_like_the_sdk_twice_over() -> None:
    entries = [
        ("PreFilter", "NodeResourcesFit", OK, 0.00001, 10.0001),
        ("PreFilter", None, OK, 10.0, 10.0002),
        ("Filter", "NodeResourcesFit", OK, 0.0002, 10.001),
        ("Filter", None, OK, 10.0003, 10.0012),
        ("Bind", "DefaultBinder", OK, 0.003, 10.005),
        ("Bind", None, OK, 10.0015, 10.0051),
    ]
    encoder = SpanEncoder()
    for base in (1, 2):  # the second pass reads every cached part
        attempt = AttemptWithPoints(
            "SchedulingAttempt",
            context=SpanContext(1, 2, False, FLAGS),
            resource=RESOURCE,
            start_time=WALL,
            end_time=WALL + 5,
            log=log_of(*entries),
            span_id_base=base,
        )
        ours = ExportTraceServiceRequest.FromString(encoder.request([attempt]))
        assert ours == encode_spans(expand([attempt]))
        assert len(ours.resource_spans[0].scope_spans[0].spans) == 4
