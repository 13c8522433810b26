"""The OTLP span exporters (OTLP/HTTP and OTLP/gRPC), with aiosched's span encoder, and the
wrapper that lets any other exporter (the console's) take compact attempts.

Each is the SDK's ``OTLPSpanExporter`` of its transport (endpoint, headers, TLS, compression,
timeout, retries with backoff all as the SDK does them; observability.tracing.config resolves
the OTEL_* variables and hands them over) with one change: the batch is serialized by
:mod:`observability.otlp_encoding`, about four times faster than the SDK's message-object
encoder. The export thread shares the GIL with the scheduling loop, so every microsecond spent
encoding is taken from scheduling.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcOTLPSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from observability.otlp_encoding import SpanEncoder
from observability.spans import expand

log = logging.getLogger(__name__)


class FastOTLPSpanExporter(OTLPSpanExporter):
    """``OTLPSpanExporter`` serializing with :class:`~observability.otlp_encoding.SpanEncoder`.

    The SDK's exporter keeps its HTTP client in ``_client`` (``export(bytes)``); on an SDK
    version without it, batches go through the SDK's own ``export`` unchanged.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._encoder = SpanEncoder()
        client = getattr(self, "_client", None)
        self._send = getattr(client, "export", None)
        if self._send is None:  # pragma: no cover - depends on the installed SDK
            log.info("OTLP exporter: this SDK has no HTTP client hook; using its own encoder")

    #: Attempts may carry their extension points as records (observability.spans).
    takes_compact_points = True

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        send = self._send
        if send is None or getattr(self, "_shutdown", False):
            return super().export(expand(spans))  # pragma: no cover - depends on the SDK
        try:
            data = self._encoder.request(spans)
        except Exception as exc:
            log.error("Failed to encode span batch: %s", exc)
            return SpanExportResult.FAILURE
        result = send(data)
        if getattr(result, "success", False):
            return SpanExportResult.SUCCESS
        return SpanExportResult.FAILURE


#: The OTLP/gRPC method (opentelemetry-proto's trace_service.proto).
GRPC_EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _already_encoded(request: bytes) -> bytes:
    return request


class _EncodedTraceServiceStub:
    """TraceServiceStub's Export, taking the request already serialized by SpanEncoder."""

    def __init__(self, channel: Any) -> None:
        self.Export = channel.unary_unary(
            GRPC_EXPORT_METHOD,
            request_serializer=_already_encoded,
            response_deserializer=ExportTraceServiceResponse.FromString,
        )


class FastGrpcOTLPSpanExporter(GrpcOTLPSpanExporter):
    """The SDK's OTLP/gRPC ``OTLPSpanExporter`` sending requests encoded by
    :class:`~observability.otlp_encoding.SpanEncoder`.

    The SDK's exporter calls ``self._client.Export(request=self._translate_data(spans), ...)``
    inside its retry loop and rebuilds ``self._client`` from ``self._stub`` when it reconnects:
    here the stub takes bytes and ``_translate_data`` returns them. On an SDK version without
    those attributes, batches go through the SDK's own encoder unchanged.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._encoder = SpanEncoder()
        channel = getattr(self, "_channel", None)
        self._fast = channel is not None and hasattr(self, "_client") and hasattr(self, "_stub")
        if self._fast:
            self._stub = _EncodedTraceServiceStub
            self._client = _EncodedTraceServiceStub(channel)  # type: ignore[assignment]
        else:  # pragma: no cover - depends on the installed SDK
            log.info("OTLP/gRPC exporter: this SDK has no client hook; using its own encoder")

    #: Attempts may carry their extension points as records (observability.spans).
    takes_compact_points = True

    def _translate_data(self, data: Sequence[ReadableSpan]) -> Any:
        if self._fast:
            return self._encoder.request(data)
        return super()._translate_data(expand(data))  # pragma: no cover - depends on the SDK


class ExpandingExporter(SpanExporter):
    """Any exporter, handed each attempt's extension points as spans of their own (the SDK's
    ``ConsoleSpanExporter`` knows nothing of compact attempts), so that one span sink can feed
    it beside the OTLP exporters."""

    takes_compact_points = True

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export(expand(spans))

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)
