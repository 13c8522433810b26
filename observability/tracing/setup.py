"""From resolved settings (config.py) to a Tracing: the exporters (OTLP over HTTP or gRPC, the
console), resource, sampler and batch processors, or NOOP_TRACING when tracing is off, and the
log line saying which.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, SynchronousMultiSpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_ON,
    ParentBased,
    Sampler,
)
from opentelemetry.version import __version__ as _otel_version

from observability.tracing.config import (
    DEFAULT_SERVICE_NAME,
    TracingConfig,
    TracingOff,
    build_sampler,
    resolve_tracing,
)
from observability.tracing.noop import NOOP_TRACING
from observability.tracing.otel import OtelTracing, Tracing

log = logging.getLogger("observability.tracing")  # one logger name for the package


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


def _exporters(config: TracingConfig) -> list[SpanExporter]:
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


def _resource(service_name: str, extra: Mapping[str, str]) -> Resource:
    return Resource(
        {
            "telemetry.sdk.language": "python",
            "telemetry.sdk.name": "opentelemetry",
            "telemetry.sdk.version": _otel_version,
            **extra,
            "service.name": service_name,
        }
    )


def tracing_with_processor(
    processor: SpanProcessor,
    sampler: Sampler | None = None,
    service_name: str = DEFAULT_SERVICE_NAME,
    resource_attributes: Mapping[str, str] | None = None,
    compact_points: bool = False,
) -> OtelTracing:
    """Tracing exporting through ``processor`` (tests use a SimpleSpanProcessor + in-memory).

    ``compact_points``: the exporter behind ``processor`` takes an attempt's extension points
    as records on its span (:class:`~observability.spans.AttemptWithPoints`), as
    :class:`~observability.otlp_export.FastOTLPSpanExporter` does; other exporters need them
    as spans of their own (the default)."""
    provider = TracerProvider(
        sampler=sampler if sampler is not None else ParentBased(ALWAYS_ON),
        resource=_resource(service_name, resource_attributes or {}),
        shutdown_on_exit=False,
    )
    provider.add_span_processor(processor)
    return OtelTracing(provider, processor, compact_points)


def setup_tracing(
    service_name: str | None = None,
    endpoint: str | None = None,
    protocol: str | None = None,
    sampler: str | None = None,
    sampler_arg: str | float | None = None,
    environ: Mapping[str, str] = os.environ,
    exporter: str | None = None,
) -> Tracing:
    """Tracing as configured (arguments over OTEL_* variables); :data:`NOOP_TRACING` when off.

    Raises :class:`TracingConfigError` for values it cannot honour (unknown exporter, protocol
    or sampler, malformed headers, a missing certificate file...), naming the flag or variable.
    """
    config = resolve_tracing(
        service_name, endpoint, protocol, sampler, sampler_arg, environ, exporter
    )
    if isinstance(config, TracingOff) or config.sampler == "always_off":
        reason = config.reason if isinstance(config, TracingOff) else f"sampler {config.sampler}"
        log.info("Tracing is off", extra={"reason": reason})
        return NOOP_TRACING
    log.info("Tracing is on", extra=_describe(config))
    processors = [
        BatchSpanProcessor(
            exporter,
            max_queue_size=config.max_queue_size,
            max_export_batch_size=config.max_export_batch_size,
            schedule_delay_millis=config.schedule_delay_millis,
            export_timeout_millis=config.export_timeout_millis,
        )
        for exporter in _exporters(config)
    ]
    processor: SpanProcessor
    if len(processors) == 1:
        processor = processors[0]
    else:
        processor = SynchronousMultiSpanProcessor()  # type: ignore[no-untyped-call]
        for each in processors:
            processor.add_span_processor(each)
    return tracing_with_processor(
        processor,
        build_sampler(config.sampler, config.sampler_arg),
        config.service_name,
        config.resource_attributes,
        compact_points=True,  # every exporter of _exporters takes them
    )


def _describe(config: TracingConfig) -> dict[str, str | float]:
    """The start-up line's keys: where traces go and which share of pods is traced."""
    described: dict[str, str | float] = {"exporters": ",".join(config.exporters)}
    if "otlp" in config.exporters:
        described["endpoint"] = config.endpoint
        described["protocol"] = config.protocol
    described["sampler"] = config.sampler
    if config.sampler.endswith("traceidratio"):
        described["samplerRatio"] = 1.0 if config.sampler_arg is None else config.sampler_arg
    described["serviceName"] = config.service_name
    return described
