"""A minimal OTLP/HTTP trace receiver for measuring the cost of tracing in benchmarks.

It accepts ``POST /v1/traces`` (protobuf, optionally gzip) and answers like a collector;
``GET /stats`` returns ``{"requests", "spans", "bytes", "errors"}`` (bytes after
decompression). It runs in its own process, and decodes the requests (to count their spans)
only when asked for the stats: on a 2-core benchmark machine, decoding while the scheduler
runs would take CPU from it that a real, remote Jaeger or collector does not.

    python -m bench.otlp_sink --port 4318
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

PROTOBUF = "application/x-protobuf"


class SinkStats:
    def __init__(self) -> None:
        self.requests = 0
        self.spans = 0
        self.bytes = 0
        self.errors = 0
        self.undecoded: list[bytes] = []

    def decode_pending(self) -> None:
        for body in self.undecoded:
            try:
                self.spans += count_spans(body)
            except Exception:
                self.errors += 1
        self.undecoded.clear()

    def to_json(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "spans": self.spans,
            "bytes": self.bytes,
            "errors": self.errors,
        }


def count_spans(body: bytes) -> int:
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    return sum(
        len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans
    )


def make_app(stats: SinkStats) -> web.Application:
    async def receive(request: web.Request) -> web.Response:
        body = await request.read()  # aiohttp has undone any Content-Encoding (gzip, deflate)
        stats.requests += 1
        stats.bytes += len(body)
        if not body.startswith(b"\x0a") and body:  # not a resource_spans field: refuse now
            stats.errors += 1
            return web.Response(status=400, text="cannot decode OTLP traces: no resource_spans")
        stats.undecoded.append(body)
        return web.Response(
            body=ExportTraceServiceResponse().SerializeToString(), content_type=PROTOBUF
        )

    async def get_stats(request: web.Request) -> web.Response:
        stats.decode_pending()
        return web.json_response(stats.to_json())

    app = web.Application(client_max_size=64 * 2**20)
    app.router.add_post("/v1/traces", receive)
    app.router.add_get("/stats", get_stats)
    return app


async def serve(host: str, port: int) -> None:
    runner = web.AppRunner(make_app(SinkStats()), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    bound = runner.addresses[0][1]  # port 0: the one the system chose (the bench reads it)
    print(f"otlp sink listening on http://{host}:{bound}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.otlp_sink", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=4318)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.host, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
