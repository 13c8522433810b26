"""A minimal OTLP/HTTP trace receiver (protobuf), run in a thread for tests that start processes.

It decodes each ExportTraceServiceRequest with opentelemetry-proto and keeps the spans as plain
dicts: ids as hex, attributes as Python values, events, links, status code, the service name.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

PROTOBUF = "application/x-protobuf"


def any_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    return getattr(value, kind)


def attributes(pairs: Any) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for pair in pairs:
        assert isinstance(pair, KeyValue)
        result[pair.key] = any_value(pair.value)
    return result


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int  # 0 unset, 1 ok, 2 error
    start_ns: int
    end_ns: int
    service: str
    links: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # trace, span, attrs


@dataclass
class OtlpReceiver:
    spans: list[ReceivedSpan] = field(default_factory=list)
    requests: int = 0
    port: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _loop: asyncio.AbstractEventLoop | None = None
    _runner: web.AppRunner | None = None
    _thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _handle(self, request: web.Request) -> web.Response:
        message = ExportTraceServiceRequest()
        message.ParseFromString(await request.read())
        decoded = []
        for resource_spans in message.resource_spans:
            service = attributes(resource_spans.resource.attributes).get("service.name", "")
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    decoded.append(
                        ReceivedSpan(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            attributes=attributes(span.attributes),
                            events=[(e.name, attributes(e.attributes)) for e in span.events],
                            status_code=span.status.code,
                            start_ns=span.start_time_unix_nano,
                            end_ns=span.end_time_unix_nano,
                            service=service,
                            links=[
                                (
                                    link.trace_id.hex(),
                                    link.span_id.hex(),
                                    attributes(link.attributes),
                                )
                                for link in span.links
                            ],
                        )
                    )
        with self._lock:
            self.spans.extend(decoded)
            self.requests += 1
        body = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=body, content_type=PROTOBUF)

    def start(self) -> OtlpReceiver:
        started = threading.Event()

        async def serve() -> None:
            app = web.Application(client_max_size=64 * 1024 * 1024)
            app.router.add_post("/v1/traces", self._handle)
            self._runner = web.AppRunner(app)
            await self._runner.setup()
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            await site.start()
            server = site._server
            assert server is not None
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            started.set()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(serve())
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="otlp-receiver", daemon=True)
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("OTLP receiver did not start")
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is None or self._runner is None:
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def snapshot(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self.spans)

    def wait_for(
        self, predicate: Callable[[list[ReceivedSpan]], Any], timeout: float = 20.0, what: str = ""
    ) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = predicate(self.snapshot())
            if value:
                return value
            if time.monotonic() > deadline:
                names = sorted({s.name for s in self.snapshot()})
                raise AssertionError(f"timed out waiting for {what}; spans so far: {names}")
            time.sleep(0.1)
