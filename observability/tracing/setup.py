"""From resolved settings (config.py) to a Tracing: the exporter, resource, sampler and batch
processor, or NOOP_TRACING when no endpoint is configured, and the log line saying which.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_ON,
    ParentBased,
    Sampler,
)
from opentelemetry.version import __version__ as _otel_version

from observability.tracing.config import (
    DEFAULT_SERVICE_NAME,
    TracingConfig,
    _env,
    build_sampler,
    resolve_tracing_config,
)
from observability.tracing.noop import NOOP_TRACING
from observability.tracing.otel import OtelTracing, Tracing

log = logging.getLogger("observability.tracing")  # one logger name for the package


def _build_exporter(config: TracingConfig) -> SpanExporter:
    if config.protocol == "grpc":  # pragma: no cover - optional package, not installed here
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
            OTLPSpanExporter as GrpcExporter,
        )

        grpc: SpanExporter = GrpcExporter(endpoint=config.endpoint, headers=dict(config.headers))
        return grpc
    from observability.otlp_export import FastOTLPSpanExporter

    return FastOTLPSpanExporter(endpoint=config.endpoint, headers=dict(config.headers) or None)


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
) -> Tracing:
    """Tracing as configured (arguments over OTEL_* variables); :data:`NOOP_TRACING` when off.

    Raises :class:`TracingConfigError` for values it cannot honour (unknown sampler, grpc without
    its exporter package, malformed headers).
    """
    config = resolve_tracing_config(service_name, endpoint, protocol, sampler, sampler_arg, environ)
    if config is None or config.sampler == "always_off":
        log.info("Tracing is off", extra={"reason": _off_reason(config, endpoint, environ)})
        return NOOP_TRACING
    log.info("Tracing is on", extra=_describe(config))
    exporter = _build_exporter(config)
    return tracing_with_processor(
        BatchSpanProcessor(
            exporter,
            max_queue_size=config.max_queue_size,
            max_export_batch_size=config.max_export_batch_size,
        ),
        build_sampler(config.sampler, config.sampler_arg),
        config.service_name,
        config.resource_attributes,
        compact_points=getattr(exporter, "takes_compact_points", False),
    )


def _describe(config: TracingConfig) -> dict[str, str | float]:
    """The start-up line's keys: where traces go and which share of pods is traced."""
    described: dict[str, str | float] = {
        "endpoint": config.endpoint,
        "protocol": config.protocol,
        "sampler": config.sampler,
    }
    if config.sampler.endswith("traceidratio"):
        described["samplerRatio"] = 1.0 if config.sampler_arg is None else config.sampler_arg
    described["serviceName"] = config.service_name
    return described


def _off_reason(
    config: TracingConfig | None, endpoint: str | None, environ: Mapping[str, str]
) -> str:
    if config is not None:
        return f"sampler {config.sampler}"
    if endpoint is None and _env(environ, "OTEL_SDK_DISABLED") == "true":
        return "OTEL_SDK_DISABLED=true"
    exporter = _env(environ, "OTEL_TRACES_EXPORTER")
    if endpoint is None and exporter is not None and exporter.lower() == "none":
        return "OTEL_TRACES_EXPORTER=none"
    return "no OTLP endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT or --otel-endpoint"
