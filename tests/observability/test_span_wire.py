"""observability.tracing.span_wire: spans reduced to plain tuples for the trace export process
and rebuilt there export exactly as the originals would have (the same OTLP bytes)."""

from __future__ import annotations

import enum
import pickle
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import SpanContext, TraceFlags
from test_attempt_log import OK, REJECTED, SKIP, attempts, log_of
from test_otlp_encoding import RESOURCE, SCOPE, span, spans
from test_otlp_encoding import test_encoding_matches_the_sdk as encoding_cases

from observability.otlp_encoding import encode_export_request
from observability.spans import AttemptWithPoints, PointAnnotation, expand
from observability.tracing import span_wire

CASES = [mark.values[0] for mark in encoding_cases.pytestmark[0].args[1]]
CASE_IDS = [mark.id for mark in encoding_cases.pytestmark[0].args[1]]


def round_trip(batch: list[ReadableSpan]) -> list[ReadableSpan]:
    return span_wire.loads(span_wire.dumps(batch))


def assert_exports_alike(batch: list[ReadableSpan]) -> None:
    again = round_trip(batch)
    assert [type(s) for s in again] == [type(s) for s in batch]
    assert encode_export_request(again) == encode_export_request(batch)
    # and as other exporters see them: points expanded into spans of their own
    assert encode_spans(expand(again)) == encode_spans(expand(batch))


@pytest.mark.parametrize("batch", CASES, ids=CASE_IDS)
def test_every_encoding_case_crosses_unchanged(batch: list[ReadableSpan]) -> None:
    assert_exports_alike(batch)


@settings(max_examples=100, deadline=None)
@given(st.lists(spans(), max_size=6))
def test_any_batch_crosses_unchanged(batch: list[ReadableSpan]) -> None:
    assert_exports_alike(batch)


@settings(max_examples=100, deadline=None)
@given(st.lists(attempts(), min_size=1, max_size=3))
def test_any_attempt_log_crosses_unchanged(batch: list[AttemptWithPoints]) -> None:
    """The log crosses as appended (statuses as code and message) and folds into the same
    extension points on the other side."""
    assert_exports_alike(batch)


def test_a_typical_attempt_keeps_its_statuses_messages_and_annotations() -> None:
    entries: list[Any] = [
        ("PreFilter", "NodePorts", SKIP, 0.001, 10.002),
        ("PreFilter", None, OK, 10.0, 10.003),
        ("Filter", "TaintToleration", REJECTED, 0.002, 10.006),
        PointAnnotation("Filter", {"aiosched.nodes": 3}),
        ("Filter", None, REJECTED, 10.003, 10.007),
    ]
    flags = TraceFlags(TraceFlags.SAMPLED)
    attempt = AttemptWithPoints(
        "SchedulingAttempt",
        context=SpanContext(7, 8, False, flags),
        parent=SpanContext(7, 6, False, flags),
        resource=RESOURCE,
        instrumentation_scope=SCOPE,
        start_time=1,
        end_time=2,
        log=log_of(*entries),
        span_id_base=100,
    )
    (again,) = round_trip([attempt])
    assert isinstance(again, AttemptWithPoints)
    points = again.points
    assert [(p.name, p.code, p.message) for p in points] == [
        ("PreFilter", "Success", ""),
        ("Filter", "Unschedulable", "node(s) had untolerated taint"),
    ]
    assert points[1].extra_attributes == {"aiosched.nodes": 3}
    assert_exports_alike([attempt])


def test_resources_and_scopes_cross_once_per_batch_and_stay_shared() -> None:
    batch = [span("a"), span("b"), span("c", instrumentation_scope=None)]
    again = round_trip(batch)
    assert again[0].resource is again[1].resource
    assert again[0].instrumentation_scope is again[1].instrumentation_scope
    assert again[2].instrumentation_scope is None


def test_attribute_values_keep_their_types() -> None:
    """A str enum stays a str to the encoder, and bytes stay bytes."""

    class Phase(enum.StrEnum):
        RUNNING = "Running"

    (again,) = round_trip([span(attributes={"phase": Phase.RUNNING, "raw": b"\x00"})])
    assert again.attributes == {"phase": "Running", "raw": b"\x00"}
    assert_exports_alike([span(attributes={"phase": Phase.RUNNING})])


def test_locked_attribute_maps_cross_as_dicts() -> None:
    """The SDK's BoundedAttributes (they hold a lock) on a span and on an event."""
    attrs = BoundedAttributes(attributes={"k8s.pod.name": "web", "n": 3})
    event = Event("exception", BoundedAttributes(attributes={"exception.message": "boom"}), 5)
    (again,) = round_trip([span(attributes=attrs, events=[event])])
    assert dict(again.attributes) == {"k8s.pod.name": "web", "n": 3}
    assert_exports_alike([span(attributes=attrs, events=[event])])


def test_a_value_that_cannot_cross_is_a_wire_error() -> None:
    with pytest.raises(span_wire.WireError):
        span_wire.dumps([span(attributes={"lock": threading.Lock()})])


@pytest.mark.parametrize(
    "blob",
    [b"", b"\x00garbage", pickle.dumps(([], [], [("x",)])), b"\xff" * 40],
    ids=["empty", "garbage", "short span tuple", "not a pickle"],
)
def test_a_torn_or_foreign_batch_is_a_wire_error(blob: bytes) -> None:
    with pytest.raises(span_wire.WireError):
        span_wire.loads(blob)
