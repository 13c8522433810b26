"""setup_tracing exports over real OTLP/HTTP to a local receiver that decodes the protobuf."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

from observability.tracing import setup_tracing


@dataclass
class Receiver:
    base_url: str
    requests: list[ExportTraceServiceRequest] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

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


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    app = web.Application()
    state = Receiver(base_url="")

    async def handle(request: web.Request) -> web.Response:
        message = ExportTraceServiceRequest()
        message.ParseFromString(await request.read())
        state.requests.append(message)
        state.paths.append(request.path)
        state.headers.append(dict(request.headers))
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(),
            content_type="application/x-protobuf",
        )

    app.router.add_post("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    state.base_url = f"http://{host}:{port}"
    yield state
    await runner.cleanup()


def attrs(span: ProtoSpan) -> dict[str, object]:
    result: dict[str, object] = {}
    for kv in span.attributes:
        value = kv.value
        kind = value.WhichOneof("value")
        result[kv.key] = getattr(value, kind) if kind else None
    return result


async def test_env_configured_exporter_sends_the_span_tree(receiver: Receiver) -> None:
    tracing = setup_tracing(
        environ={
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.base_url,
            "OTEL_SERVICE_NAME": "aiosched-test",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=blue",
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": "1.0",
        }
    )
    assert tracing.enabled
    pod = tracing.pod_span("default/web", "uid-9", "default", "web")
    attempt = tracing.attempt(pod, "default-scheduler", 1)
    with attempt.extension_point("Filter") as point:
        point.plugin("TaintToleration", "Unschedulable")
        point.status("Unschedulable", "0/1 nodes are available")

    async def bind() -> None:
        with attempt.extension_point("Bind"):
            await asyncio.sleep(0)
        attempt.end("scheduled", node="n1")
        pod.bound("n1", attempts=1)

    await asyncio.create_task(bind())
    await tracing.aclose()

    assert set(receiver.paths) == {"/v1/traces"}
    assert all(h.get("x-tenant") == "blue" for h in receiver.headers)
    assert receiver.service_names() == {"aiosched-test"}
    spans = {span.name: span for span in receiver.spans()}
    assert set(spans) == {"PodScheduling", "SchedulingAttempt", "Filter", "Bind"}
    root, attempt_span = spans["PodScheduling"], spans["SchedulingAttempt"]
    assert root.parent_span_id == b""
    assert attempt_span.parent_span_id == root.span_id
    assert spans["Filter"].parent_span_id == attempt_span.span_id
    assert spans["Bind"].parent_span_id == attempt_span.span_id
    assert len({span.trace_id for span in spans.values()}) == 1
    assert attrs(attempt_span)["k8s.node.name"] == "n1"
    assert attrs(root)["k8s.pod.uid"] == "uid-9"
    assert [e.name for e in spans["Filter"].events] == ["plugin"]


async def test_traces_endpoint_variable_is_used_verbatim(receiver: Receiver) -> None:
    tracing = setup_tracing(
        environ={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.base_url + "/custom/path"}
    )
    tracing.pod_span("ns/p", "u", "ns", "p").deleted(attempts=0)
    await tracing.aclose()
    assert receiver.paths == ["/custom/path"]
    assert receiver.service_names() == {"aiosched"}


async def test_failed_attempt_is_sent_as_a_linked_root_before_the_pod_span(
    receiver: Receiver,
) -> None:
    tracing = setup_tracing(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.base_url})
    pod = tracing.pod_span("default/web", "uid-9", "default", "web")
    failed = tracing.attempt(pod, "default-scheduler", 1)
    with failed.extension_point("Filter") as point:
        point.status("Unschedulable", "0/1 nodes are available")
    failed.end("unschedulable", "0/1 nodes are available")
    # Exported now, while the pod is pending: a root span, its extension point under it.
    assert await asyncio.to_thread(tracing.force_flush)
    sent, filter_span = receiver.spans()
    assert sent.name == "SchedulingAttempt" and sent.parent_span_id == b""
    assert filter_span.parent_span_id == sent.span_id and filter_span.trace_id == sent.trace_id

    tracing.attempt(pod, "default-scheduler", 2).end("scheduled", node="n1")
    pod.bound("n1", attempts=2)
    await tracing.aclose()
    spans = receiver.spans()
    (root,) = [span for span in spans if span.name == "PodScheduling"]
    bound = spans[-2]
    assert bound.name == "SchedulingAttempt" and bound.parent_span_id == root.span_id
    assert bound.trace_id == root.trace_id != sent.trace_id
    assert [(link.trace_id, link.span_id) for link in sent.links] == [(root.trace_id, root.span_id)]
    assert [(link.trace_id, link.span_id) for link in root.links] == [(sent.trace_id, sent.span_id)]
    assert [(kv.key, kv.value.int_value) for kv in root.links[0].attributes] == [
        ("aiosched.attempt", 1)
    ]
