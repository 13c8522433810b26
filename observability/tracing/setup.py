"""From resolved settings (config.py) to a Tracing: the exporters (OTLP over HTTP or gRPC, the
console), resource, sampler and batch processors, or NOOP_TRACING when tracing is off, and the
log line saying which.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
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
from observability.tracing.export_frames import EXPORT_PROCESS_NAME
from observability.tracing.export_processor import ExportProcessSpanProcessor
from observability.tracing.exporters import batch_processor_for
from observability.tracing.noop import NOOP_TRACING
from observability.tracing.otel import OtelTracing, Tracing

log = logging.getLogger("observability.tracing")  # one logger name for the package


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
    export_process: bool = False,
) -> Tracing:
    """Tracing as configured (arguments over OTEL_* variables); :data:`NOOP_TRACING` when off.

    ``export_process``: spans are encoded and sent by a process of their own
    (``aiosched-trace-export``, export_processor.py) instead of a thread of this one.

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
    log.info("Tracing is on", extra=_describe(config, export_process))
    processor: SpanProcessor = (
        ExportProcessSpanProcessor(config) if export_process else batch_processor_for(config)
    )
    return tracing_with_processor(
        processor,
        build_sampler(config.sampler, config.sampler_arg),
        config.service_name,
        config.resource_attributes,
        compact_points=True,  # every exporter of exporters_for takes them
    )


def _describe(config: TracingConfig, export_process: bool) -> dict[str, str | float]:
    """The start-up line's keys: where traces go, from which process, and which share of pods
    is traced."""
    described: dict[str, str | float] = {"exporters": ",".join(config.exporters)}
    described["exportFrom"] = EXPORT_PROCESS_NAME if export_process else "this process"
    if "otlp" in config.exporters:
        described["endpoint"] = config.endpoint
        described["protocol"] = config.protocol
    described["sampler"] = config.sampler
    if config.sampler.endswith("traceidratio"):
        described["samplerRatio"] = 1.0 if config.sampler_arg is None else config.sampler_arg
    described["serviceName"] = config.service_name
    return described
