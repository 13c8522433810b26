"""bench.otlp_sink: counts the spans of OTLP/HTTP exports and rejects what it cannot decode."""

from __future__ import annotations

import gzip

from aiohttp.test_utils import TestClient, TestServer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from bench.otlp_sink import SinkStats, make_app


def request_with(*span_counts: int) -> bytes:
    scopes = [ScopeSpans(spans=[Span(name=f"s{i}") for i in range(n)]) for n in span_counts]
    message = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=scopes)])
    return message.SerializeToString()


async def test_counts_spans_of_plain_and_gzip_exports_and_rejects_garbage() -> None:
    """Spans are counted when /stats is read (decoding is deferred off the benchmark)."""
    stats = SinkStats()
    async with TestClient(TestServer(make_app(stats))) as client:
        headers = {"Content-Type": "application/x-protobuf"}
        resp = await client.post("/v1/traces", data=request_with(2, 3), headers=headers)
        assert resp.status == 200
        assert resp.content_type == "application/x-protobuf"
        zipped = gzip.compress(request_with(4))
        resp = await client.post(
            "/v1/traces", data=zipped, headers={**headers, "Content-Encoding": "gzip"}
        )
        assert resp.status == 200
        resp = await client.post("/v1/traces", data=b"\xff\xff not protobuf", headers=headers)
        assert resp.status == 400
        assert "cannot decode" in await resp.text()
        # Looks like a request but is truncated: accepted, found out when decoded for /stats.
        resp = await client.post("/v1/traces", data=b"\x0a\x7f\x12", headers=headers)
        assert resp.status == 200
        resp = await client.get("/stats")
        assert await resp.json() == {
            "requests": 4,
            "spans": 9,
            "bytes": len(request_with(2, 3)) + len(request_with(4)) + 15 + 3,
            "errors": 2,
        }
