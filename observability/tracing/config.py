"""Tracing settings from the standard OTEL_* environment variables and `aiosched run`'s
--otel-* flags (explicit arguments win): what to export, where, how and how much to sample.

It changes when the OpenTelemetry SDK's environment specification does; building spans and
exporters from the resolved settings is otel.py's and setup.py's.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import unquote, urlsplit

from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)

DEFAULT_SERVICE_NAME: Final = "aiosched"
DEFAULT_PROTOCOL: Final = "http/protobuf"
DEFAULT_SAMPLER: Final = "parentbased_always_on"
TRACES_PATH: Final = "/v1/traces"
#: The SDK's default (2048) drops spans in bursts: a traced pod queues ~13 spans (2 with
#: aiosched's exporter, whose attempts carry their extension points) at up to 1000 pods/s.
DEFAULT_MAX_QUEUE_SIZE: Final = 32768
#: Spans per OTLP request, the SDK's default. With aiosched's exporter an attempt's extension
#: points ride on its span, so 512 queued spans are ~3000 exported ones (~1.3 MB): a POST every
#: ~250 pods, whose ~0.7 ms of export-thread CPU is then negligible.
DEFAULT_MAX_EXPORT_BATCH_SIZE: Final = 512


class TracingConfigError(ValueError):
    """An OTEL_* variable or tracing flag has a value we cannot honour."""


# ---------------------------------------------------------------------------------------------
# Configuration from OTEL_* variables
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TracingConfig:
    """Resolved exporter settings; ``endpoint`` is the full traces URL (http) or target (grpc)."""

    endpoint: str
    protocol: str = DEFAULT_PROTOCOL
    service_name: str = DEFAULT_SERVICE_NAME
    sampler: str = DEFAULT_SAMPLER
    sampler_arg: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    resource_attributes: Mapping[str, str] = field(default_factory=dict)
    max_queue_size: int = DEFAULT_MAX_QUEUE_SIZE
    max_export_batch_size: int = DEFAULT_MAX_EXPORT_BATCH_SIZE


def _env(environ: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return value
    return None


def _parse_key_values(raw: str | None, what: str) -> dict[str, str]:
    """The ``k1=v1,k2=v2`` (URL-encoded) format of OTEL_*_HEADERS and OTEL_RESOURCE_ATTRIBUTES."""
    result: dict[str, str] = {}
    if not raw:
        return result
    for item in raw.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise TracingConfigError(f"{what}: expected key=value, got {item.strip()!r}")
        result[unquote(key.strip())] = unquote(value.strip())
    return result


def _traces_url(base: str) -> str:
    return base.rstrip("/") + TRACES_PATH


def resolve_tracing_config(
    service_name: str | None = None,
    endpoint: str | None = None,
    protocol: str | None = None,
    sampler: str | None = None,
    sampler_arg: str | float | None = None,
    environ: Mapping[str, str] = os.environ,
) -> TracingConfig | None:
    """Resolve explicit arguments over OTEL_* variables; ``None`` means tracing is off.

    An explicit ``endpoint`` given as a bare base URL (no path) gets ``/v1/traces`` appended, one
    with a path is used as-is. As the OTLP spec says, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used
    as-is and OTEL_EXPORTER_OTLP_ENDPOINT is a base URL.
    """
    resolved_protocol = (
        (
            protocol
            or _env(environ, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
            or DEFAULT_PROTOCOL
        )
        .strip()
        .lower()
    )
    if endpoint is None:
        if _env(environ, "OTEL_SDK_DISABLED") == "true":
            return None
        exporter = _env(environ, "OTEL_TRACES_EXPORTER")
        if exporter is not None and exporter.lower() == "none":
            return None
        traces = _env(environ, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        base = _env(environ, "OTEL_EXPORTER_OTLP_ENDPOINT")
        if traces is not None:
            url = traces
        elif base is not None:
            url = base if resolved_protocol == "grpc" else _traces_url(base)
        else:
            return None
    else:
        url = endpoint.strip()
        if not url:
            return None
        if resolved_protocol != "grpc" and urlsplit(url).path in ("", "/"):
            url = _traces_url(url)
    _check_protocol(resolved_protocol)

    sampler_name = (sampler or _env(environ, "OTEL_TRACES_SAMPLER") or DEFAULT_SAMPLER).lower()
    raw_arg = sampler_arg if sampler_arg is not None else _env(environ, "OTEL_TRACES_SAMPLER_ARG")
    parsed_arg = _parse_ratio(raw_arg) if raw_arg is not None else None
    build_sampler(sampler_name, parsed_arg)  # validate early, with the offending value
    headers = _parse_key_values(
        _env(environ, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"),
        "OTEL_EXPORTER_OTLP_HEADERS",
    )
    resource = _parse_key_values(
        _env(environ, "OTEL_RESOURCE_ATTRIBUTES"), "OTEL_RESOURCE_ATTRIBUTES"
    )
    name = (
        service_name
        or _env(environ, "OTEL_SERVICE_NAME")
        or resource.get("service.name")
        or DEFAULT_SERVICE_NAME
    )
    queue_size = _env_int(environ, "OTEL_BSP_MAX_QUEUE_SIZE", DEFAULT_MAX_QUEUE_SIZE)
    batch_size = _env_int(
        environ, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", min(DEFAULT_MAX_EXPORT_BATCH_SIZE, queue_size)
    )
    if batch_size > queue_size:
        raise TracingConfigError(
            f"OTEL_BSP_MAX_EXPORT_BATCH_SIZE ({batch_size}) must not exceed "
            f"OTEL_BSP_MAX_QUEUE_SIZE ({queue_size})"
        )
    return TracingConfig(
        endpoint=url,
        max_queue_size=queue_size,
        max_export_batch_size=batch_size,
        protocol=resolved_protocol,
        service_name=name,
        sampler=sampler_name,
        sampler_arg=parsed_arg,
        headers=headers,
        resource_attributes=resource,
    )


def _env_int(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = _env(environ, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise TracingConfigError(f"{name}: not an integer: {raw!r}") from None
    if value <= 0:
        raise TracingConfigError(f"{name}: must be positive, got {value}")
    return value


def _grpc_exporter_installed() -> bool:
    try:
        return importlib.util.find_spec("opentelemetry.exporter.otlp.proto.grpc") is not None
    except ModuleNotFoundError:
        return False


def _check_protocol(protocol: str) -> None:
    if protocol == "http/protobuf":
        return
    if protocol == "grpc":
        if not _grpc_exporter_installed():
            raise TracingConfigError(
                "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the opentelemetry-exporter-otlp-proto-grpc "
                "package, which is not installed; use http/protobuf (OTLP/HTTP, usually port 4318)"
            )
        return
    raise TracingConfigError(
        f"unsupported OTLP protocol {protocol!r}: supported are http/protobuf"
        + (" and grpc" if _grpc_exporter_installed() else "")
    )


def _parse_ratio(raw: str | float) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise TracingConfigError(f"OTEL_TRACES_SAMPLER_ARG: not a number: {raw!r}") from None
    if not 0.0 <= value <= 1.0:
        raise TracingConfigError(f"OTEL_TRACES_SAMPLER_ARG: {value} is outside [0, 1]")
    return value


def build_sampler(name: str, arg: float | None = None) -> Sampler:
    """The sampler the OTEL_TRACES_SAMPLER name stands for (ratio samplers default to 1.0)."""
    ratio = 1.0 if arg is None else arg
    samplers: dict[str, Sampler] = {
        "always_on": ALWAYS_ON,
        "always_off": ALWAYS_OFF,
        "traceidratio": TraceIdRatioBased(ratio),
        "parentbased_always_on": ParentBased(ALWAYS_ON),
        "parentbased_always_off": ParentBased(ALWAYS_OFF),
        "parentbased_traceidratio": ParentBased(TraceIdRatioBased(ratio)),
    }
    sampler = samplers.get(name)
    if sampler is None:
        raise TracingConfigError(
            f"OTEL_TRACES_SAMPLER: unsupported sampler {name!r}; supported: {', '.join(samplers)}"
        )
    return sampler
