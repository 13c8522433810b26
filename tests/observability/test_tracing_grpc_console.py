"""setup_tracing's other exporters: OTLP over gRPC to an in-process TraceService receiver (the
twin of test_tracing_otlp.py's OTLP/HTTP one), the console exporter's output, and ``none``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

from observability.otlp_export import FastGrpcOTLPSpanExporter
from observability.tracing import NOOP_TRACING, OtelTracing, Tracing, setup_tracing


@dataclass
class GrpcReceiver:
    """An OTLP/gRPC TraceService: what it was sent, and each call's metadata."""

    endpoint: str = ""
    requests: list[ExportTraceServiceRequest] = field(default_factory=list)
    metadata: list[dict[str, str]] = field(default_factory=list)

    def spans(self) -> list[ProtoSpan]:
        return [
            span
            for request in self.requests
            for resource_spans in request.resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        ]

    def service_names(self) -> set[str]:
        return {
            attr.value.string_value
            for request in self.requests
            for resource_spans in request.resource_spans
            for attr in resource_spans.resource.attributes
            if attr.key == "service.name"
        }


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
    def __init__(self, state: GrpcReceiver) -> None:
        self.state = state

    def Export(
        self, request: ExportTraceServiceRequest, context: grpc.ServicerContext
    ) -> ExportTraceServiceResponse:
        self.state.requests.append(request)
        self.state.metadata.append(dict(context.invocation_metadata()))
        return ExportTraceServiceResponse()


@pytest.fixture
def grpc_receiver() -> Iterator[GrpcReceiver]:
    state = GrpcReceiver()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceService(state), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    state.endpoint = f"http://127.0.0.1:{port}"
    try:
        yield state
    finally:
        server.stop(grace=None)


def record_a_bound_pod(tracing: Tracing) -> None:
    """A pod scheduled at its second attempt: the first failed (a trace of its own)."""
    pod = tracing.pod_span("default/web", "uid-9", "default", "web")
    failed = tracing.attempt(pod, "default-scheduler", 1)
    with failed.extension_point("Filter") as point:
        point.plugin("NodeResourcesFit", "Unschedulable")
        point.status("Unschedulable", "0/1 nodes are available")
    failed.end("unschedulable", "0/1 nodes are available")
    attempt = tracing.attempt(pod, "default-scheduler", 2)
    with attempt.extension_point("Filter"):
        pass
    with attempt.extension_point("Bind"):
        pass
    attempt.end("scheduled", node="n1")
    pod.bound("n1", attempts=2)


def attrs(span: ProtoSpan) -> dict[str, object]:
    result: dict[str, object] = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        result[kv.key] = getattr(kv.value, kind) if kind else None
    return result


async def test_grpc_exporter_sends_the_span_tree(grpc_receiver: GrpcReceiver) -> None:
    tracing = setup_tracing(
        environ={
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_ENDPOINT": grpc_receiver.endpoint,
            "OTEL_EXPORTER_OTLP_HEADERS": "X-Tenant=blue",
            "OTEL_SERVICE_NAME": "aiosched-grpc",
        }
    )
    assert isinstance(tracing, OtelTracing)
    record_a_bound_pod(tracing)
    await tracing.aclose()

    assert grpc_receiver.service_names() == {"aiosched-grpc"}
    assert all(md.get("x-tenant") == "blue" for md in grpc_receiver.metadata)
    spans = grpc_receiver.spans()
    assert sorted(span.name for span in spans) == sorted(
        ["SchedulingAttempt", "Filter", "SchedulingAttempt", "Filter", "Bind", "PodScheduling"]
    )
    (root,) = [span for span in spans if span.name == "PodScheduling"]
    failed, bound = (span for span in spans if span.name == "SchedulingAttempt")
    assert failed.parent_span_id == b"" and failed.trace_id != root.trace_id
    assert attrs(failed)["aiosched.failure_message"] == "0/1 nodes are available"
    assert [(link.trace_id, link.span_id) for link in root.links] == [
        (failed.trace_id, failed.span_id)
    ]
    assert bound.parent_span_id == root.span_id and bound.trace_id == root.trace_id
    assert attrs(bound)["k8s.node.name"] == "n1"
    points = {
        span.name: span
        for span in spans
        if span.parent_span_id == bound.span_id and span.name in ("Filter", "Bind")
    }
    assert set(points) == {"Filter", "Bind"}
    (failed_filter,) = [span for span in spans if span.parent_span_id == failed.span_id]
    assert [event.name for event in failed_filter.events] == ["plugin"]


def test_grpc_exporter_encodes_with_aiosched_s_encoder_and_compresses(
    grpc_receiver: GrpcReceiver,
) -> None:
    """The batch goes out as SpanEncoder's bytes through the SDK's retrying Export call, gzip
    compressed when asked (the receiver decodes it as any OTLP/gRPC request)."""
    exporter = FastGrpcOTLPSpanExporter(endpoint=grpc_receiver.endpoint, insecure=True)
    assert exporter._fast and exporter.takes_compact_points
    tracing = setup_tracing(
        environ={
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": grpc_receiver.endpoint,
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
        }
    )
    tracing.pod_span("ns/p", "u", "ns", "p").deleted(attempts=0)
    tracing.shutdown()
    exporter.shutdown()
    (span,) = grpc_receiver.spans()
    assert span.name == "PodScheduling" and attrs(span)["aiosched.outcome"] == "deleted"


def test_console_exporter_prints_every_span_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    tracing = setup_tracing(
        environ={"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "aiosched-console"}
    )
    assert isinstance(tracing, OtelTracing)
    record_a_bound_pod(tracing)
    tracing.shutdown()

    spans = console_spans(capsys.readouterr().out)
    names = sorted(span["name"] for span in spans)
    assert names == sorted(
        ["SchedulingAttempt", "Filter", "SchedulingAttempt", "Filter", "Bind", "PodScheduling"]
    )
    by_id = {span["context"]["span_id"]: span for span in spans}
    (root,) = [span for span in spans if span["name"] == "PodScheduling"]
    bound = next(
        span
        for span in spans
        if span["name"] == "SchedulingAttempt" and span["parent_id"] == root["context"]["span_id"]
    )
    assert bound["attributes"]["k8s.node.name"] == "n1"
    assert {by_id[span["parent_id"]]["name"] for span in spans if span["name"] == "Bind"} == {
        "SchedulingAttempt"
    }
    assert {span["resource"]["attributes"]["service.name"] for span in spans} == {
        "aiosched-console"
    }


def console_spans(out: str) -> list[dict[str, Any]]:
    """The ConsoleSpanExporter's output: one indented JSON object per span."""
    decoder = json.JSONDecoder()
    spans: list[dict[str, Any]] = []
    index = 0
    while index < len(out):
        if out[index].isspace():
            index += 1
            continue
        span, index = decoder.raw_decode(out, index)
        spans.append(span)
    return spans


async def test_otlp_and_console_together(
    grpc_receiver: GrpcReceiver, capsys: pytest.CaptureFixture[str]
) -> None:
    tracing = setup_tracing(
        endpoint=grpc_receiver.endpoint,
        protocol="grpc",
        environ={"OTEL_TRACES_EXPORTER": "console"},
    )
    record_a_bound_pod(tracing)
    await tracing.aclose()
    console = sorted(span["name"] for span in console_spans(capsys.readouterr().out))
    assert console == sorted(span.name for span in grpc_receiver.spans())
    assert len(console) == 6


@pytest.mark.parametrize(
    ("kwargs", "environ"),
    [
        ({}, {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}),
        ({"exporter": "none"}, {"OTEL_TRACES_EXPORTER": "console"}),
        ({}, {"OTEL_TRACES_EXPORTER": " NONE "}),
    ],
)
def test_none_turns_tracing_off(
    kwargs: dict[str, str], environ: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert setup_tracing(environ=environ, **kwargs) is NOOP_TRACING  # type: ignore[arg-type]
    assert capsys.readouterr().out == ""
