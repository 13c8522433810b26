"""The span exporters and batch processors a TracingConfig asks for: OTLP over HTTP or gRPC
(with aiosched's span encoder) and the console, each behind the SDK's BatchSpanProcessor.
Built in the scheduling process, or in the trace export process (export_process.py).
"""

from __future__ import annotations

import sys

from opentelemetry.sdk.trace import SpanProcessor, SynchronousMultiSpanProcessor
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)

from observability.tracing.config import TracingConfig


def _otlp_exporter(config: TracingConfig) -> SpanExporter:
    """The OTLP exporter of ``config.protocol``, every setting passed explicitly."""
    from observability.otlp_export import FastGrpcOTLPSpanExporter, FastOTLPSpanExporter

    if config.protocol == "grpc":
        import grpc

        credentials = None
        if not config.insecure and config.certificate_file:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_read(config.certificate_file),
                private_key=_read(config.client_key_file),
                certificate_chain=_read(config.client_certificate_file),
            )
        return FastGrpcOTLPSpanExporter(
            endpoint=config.endpoint,
            insecure=config.insecure,
            credentials=credentials,
            headers=dict(config.headers),
            timeout=config.timeout_seconds,
            compression=grpc.Compression.Gzip
            if config.compression == "gzip"
            else grpc.Compression.NoCompression,
        )
    from opentelemetry.exporter.otlp.proto.http import Compression

    return FastOTLPSpanExporter(
        endpoint=config.endpoint,
        certificate_file=config.certificate_file,
        client_key_file=config.client_key_file,
        client_certificate_file=config.client_certificate_file,
        headers=dict(config.headers) or None,
        timeout=config.timeout_seconds,
        compression=Compression.Gzip if config.compression == "gzip" else Compression.NoCompression,
    )


def _read(path: str | None) -> bytes | None:
    if path is None:
        return None
    with open(path, "rb") as file:
        return file.read()


def exporters_for(config: TracingConfig) -> list[SpanExporter]:
    """One exporter per name of OTEL_TRACES_EXPORTER, each taking compact attempts."""
    from observability.otlp_export import ExpandingExporter

    exporters: list[SpanExporter] = []
    for name in config.exporters:
        if name == "otlp":
            exporters.append(_otlp_exporter(config))
        elif name == "console":
            # sys.stdout as it is now (the SDK's default argument is the one at import time)
            console = ConsoleSpanExporter(service_name=config.service_name, out=sys.stdout)
            exporters.append(ExpandingExporter(console))
    return exporters


def batch_processor_for(config: TracingConfig) -> SpanProcessor:
    """A BatchSpanProcessor per exporter of ``config`` (one SpanProcessor for all of them)."""
    processors = [
        BatchSpanProcessor(
            exporter,
            max_queue_size=config.max_queue_size,
            max_export_batch_size=config.max_export_batch_size,
            schedule_delay_millis=config.schedule_delay_millis,
            export_timeout_millis=config.export_timeout_millis,
        )
        for exporter in exporters_for(config)
    ]
    if len(processors) == 1:
        return processors[0]
    combined = SynchronousMultiSpanProcessor()  # type: ignore[no-untyped-call]
    for each in processors:
        combined.add_span_processor(each)
    return combined
