"""Tracing settings from the standard OTEL_* environment variables and `aiosched run`'s
--otel-* flags (a flag wins over its variables): which exporters, where, how and how much to
sample.

The variables are read as the OpenTelemetry specification defines them
(specification/configuration/sdk-environment-variables.md and
specification/protocol/exporter.md): ``OTEL_TRACES_EXPORTER`` (``otlp``, ``console``, ``none``,
a comma-separated list), the OTLP exporter's ``OTEL_EXPORTER_OTLP_*`` variables with their
``OTEL_EXPORTER_OTLP_TRACES_*`` twins winning over them, timeouts in milliseconds. Every value
is resolved here and handed to the exporters explicitly, so that an error names exactly the
flag or variable the user set and its value, and nothing the SDK would read differently (it
reads OTEL_EXPORTER_OTLP_TIMEOUT as seconds) is left to it.

It changes when the specification does; building exporters and spans from the resolved
settings is setup.py's and otel.py's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, NamedTuple
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
#: The specification's endpoints when the otlp exporter is chosen and none is set.
DEFAULT_HTTP_ENDPOINT: Final = "http://localhost:4318"
DEFAULT_GRPC_ENDPOINT: Final = "http://localhost:4317"
#: OTEL_EXPORTER_OTLP_TIMEOUT's default (the specification's 10 s).
DEFAULT_TIMEOUT_MILLIS: Final = 10_000
#: OTEL_BSP_SCHEDULE_DELAY and OTEL_BSP_EXPORT_TIMEOUT's defaults (the specification's).
DEFAULT_SCHEDULE_DELAY_MILLIS: Final = 5_000
DEFAULT_EXPORT_TIMEOUT_MILLIS: Final = 30_000
#: The SDK's default (2048) drops spans in bursts: a traced pod queues ~13 spans (2 with
#: aiosched's exporter, whose attempts carry their extension points) at up to 1000 pods/s.
DEFAULT_MAX_QUEUE_SIZE: Final = 32768
#: Spans per OTLP request, the SDK's default. With aiosched's exporter an attempt's extension
#: points ride on its span, so 512 queued spans are ~3000 exported ones (~1.3 MB): a POST every
#: ~250 pods, whose ~0.7 ms of export-thread CPU is then negligible.
DEFAULT_MAX_EXPORT_BATCH_SIZE: Final = 512

#: OTEL_TRACES_EXPORTER's values aiosched honours (zipkin and the deprecated jaeger are not).
EXPORTERS: Final = ("otlp", "console", "none")
#: OTEL_EXPORTER_OTLP_PROTOCOL's values; http/json is the specification's too, but the
#: OpenTelemetry Python SDK has no OTLP/JSON exporter.
PROTOCOLS: Final = ("grpc", "http/protobuf")
#: OTEL_EXPORTER_OTLP_COMPRESSION's values (the specification's).
COMPRESSIONS: Final = ("gzip", "none")

# The flags of `aiosched run` standing for the variables below; named in errors.
ENDPOINT_FLAG: Final = "--otel-endpoint"
PROTOCOL_FLAG: Final = "--otel-protocol"
EXPORTER_FLAG: Final = "--otel-exporter"
SERVICE_NAME_FLAG: Final = "--otel-service-name"
SAMPLER_FLAG: Final = "--otel-sampler"
SAMPLER_ARG_FLAG: Final = "--otel-sampler-arg"


class TracingConfigError(ValueError):
    """An OTEL_* variable or tracing flag has a value we cannot honour."""


class Setting(NamedTuple):
    """A value and where it came from: a flag (``--otel-protocol``) or a variable."""

    value: str
    origin: str

    def __str__(self) -> str:
        """As the user wrote it: ``--otel-protocol grpc``, ``OTEL_EXPORTER_OTLP_PROTOCOL=grpc``."""
        separator = " " if self.origin.startswith("-") else "="
        return f"{self.origin}{separator}{self.value}"


# ---------------------------------------------------------------------------------------------
# Resolved settings
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TracingConfig:
    """Resolved exporter settings.

    ``endpoint`` is the full traces URL (http/protobuf) or the target (grpc) of the otlp
    exporter, empty when ``exporters`` has no otlp; the other otlp fields are its settings."""

    endpoint: str = ""
    protocol: str = DEFAULT_PROTOCOL
    service_name: str = DEFAULT_SERVICE_NAME
    sampler: str = DEFAULT_SAMPLER
    sampler_arg: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    resource_attributes: Mapping[str, str] = field(default_factory=dict)
    max_queue_size: int = DEFAULT_MAX_QUEUE_SIZE
    max_export_batch_size: int = DEFAULT_MAX_EXPORT_BATCH_SIZE
    exporters: tuple[str, ...] = ("otlp",)
    timeout_seconds: float = DEFAULT_TIMEOUT_MILLIS / 1000
    compression: str = "none"
    #: gRPC only: plaintext (True) or TLS; from the endpoint's scheme, else OTEL_*_INSECURE.
    insecure: bool = False
    certificate_file: str | None = None
    client_key_file: str | None = None
    client_certificate_file: str | None = None
    schedule_delay_millis: int = DEFAULT_SCHEDULE_DELAY_MILLIS
    export_timeout_millis: int = DEFAULT_EXPORT_TIMEOUT_MILLIS


class TracingOff(NamedTuple):
    """Why tracing is off, as the start-up line says it."""

    reason: str


def _setting(
    environ: Mapping[str, str], flag: tuple[str, str | float | None] | None, *names: str
) -> Setting | None:
    """The flag's value when given, else the first variable of ``names`` that is set."""
    if flag is not None and flag[1] is not None and str(flag[1]).strip():
        return Setting(str(flag[1]).strip(), flag[0])
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return Setting(value, name)
    return None


def _signal(name: str) -> tuple[str, str]:
    """The traces-specific variable, which wins, and the general one (OTEL_EXPORTER_OTLP_X)."""
    return _OTLP_VARIABLES[name]


#: Each OTLP exporter setting's variables: the traces-specific one wins over the general one.
_OTLP_VARIABLES: Final = {
    "ENDPOINT": ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"),
    "PROTOCOL": ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"),
    "TIMEOUT": ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"),
    "COMPRESSION": ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"),
    "HEADERS": ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"),
    "CERTIFICATE": ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE"),
    "CLIENT_KEY": ("OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "OTEL_EXPORTER_OTLP_CLIENT_KEY"),
    "CLIENT_CERTIFICATE": (
        "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
    ),
    "INSECURE": ("OTEL_EXPORTER_OTLP_TRACES_INSECURE", "OTEL_EXPORTER_OTLP_INSECURE"),
}


def _parse_key_values(setting: Setting | None) -> dict[str, str]:
    """The ``k1=v1,k2=v2`` (URL-encoded) format of OTEL_*_HEADERS and OTEL_RESOURCE_ATTRIBUTES."""
    result: dict[str, str] = {}
    if setting is None:
        return result
    for item in setting.value.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise TracingConfigError(f"{setting}: expected key=value, got {item.strip()!r}")
        result[unquote(key.strip())] = unquote(value.strip())
    return result


def _traces_url(base: str) -> str:
    """OTEL_EXPORTER_OTLP_ENDPOINT's rule for OTLP/HTTP: the signal path is appended to the
    base URL's path (``http://c:4318/prefix`` → ``http://c:4318/prefix/v1/traces``)."""
    return base.rstrip("/") + TRACES_PATH


def _exporters(setting: Setting | None) -> tuple[str, ...] | None:
    """OTEL_TRACES_EXPORTER's comma-separated list, each name once, in order."""
    if setting is None:
        return None
    names: list[str] = []
    for raw in setting.value.split(","):
        name = raw.strip().lower()
        if not name:
            continue
        if name not in EXPORTERS:
            raise TracingConfigError(
                f"{setting}: unsupported traces exporter {name!r}; supported: "
                f"{', '.join(EXPORTERS)} (a comma-separated list)"
            )
        if name not in names:
            names.append(name)
    if "none" in names and len(names) > 1:
        raise TracingConfigError(f"{setting}: none turns tracing off; it takes no other exporter")
    if not names:
        raise TracingConfigError(f"{setting}: no exporter named; supported: {', '.join(EXPORTERS)}")
    return tuple(names)


def resolve_tracing_config(
    service_name: str | None = None,
    endpoint: str | None = None,
    protocol: str | None = None,
    sampler: str | None = None,
    sampler_arg: str | float | None = None,
    environ: Mapping[str, str] = os.environ,
    exporter: str | None = None,
) -> TracingConfig | None:
    """Resolve explicit arguments (the --otel-* flags) over OTEL_* variables; ``None`` means
    tracing is off. Raises :class:`TracingConfigError` naming the flag or variable at fault."""
    resolved = resolve_tracing(
        service_name, endpoint, protocol, sampler, sampler_arg, environ, exporter
    )
    return None if isinstance(resolved, TracingOff) else resolved


def resolve_tracing(
    service_name: str | None = None,
    endpoint: str | None = None,
    protocol: str | None = None,
    sampler: str | None = None,
    sampler_arg: str | float | None = None,
    environ: Mapping[str, str] = os.environ,
    exporter: str | None = None,
) -> TracingConfig | TracingOff:
    """:func:`resolve_tracing_config`, saying why when tracing is off.

    Which exporters: ``--otel-exporter``, else OTEL_TRACES_EXPORTER; when neither is set, otlp
    if an endpoint is (``--otel-endpoint``, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
    OTEL_EXPORTER_OTLP_ENDPOINT), else tracing is off: it costs throughput, so aiosched turns
    it on only when asked. ``--otel-endpoint`` turns otlp on whatever the variables say.
    OTEL_SDK_DISABLED=true turns tracing off unless a tracing flag turns it on.

    Where: ``--otel-endpoint`` given as a bare base URL (no path) gets ``/v1/traces`` appended
    for OTLP/HTTP, one with a path is used as-is; OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used
    as-is and OTEL_EXPORTER_OTLP_ENDPOINT is a base URL, as the specification says; with otlp
    chosen and no endpoint, the specification's localhost:4318 (4317 for grpc).
    """
    flag_endpoint = _setting(environ, (ENDPOINT_FLAG, endpoint))
    flag_exporter = _setting(environ, (EXPORTER_FLAG, exporter))
    exporters = _exporters(flag_exporter)
    if exporters is None:
        if endpoint is not None and flag_endpoint is None:  # --otel-endpoint ""
            return TracingOff(f"{ENDPOINT_FLAG} is empty")
        if flag_endpoint is None:
            disabled = _setting(environ, None, "OTEL_SDK_DISABLED")
            if disabled is not None and disabled.value.lower() == "true":
                return TracingOff("OTEL_SDK_DISABLED=true")
        env_exporter = _setting(environ, None, "OTEL_TRACES_EXPORTER")
        exporters = _exporters(env_exporter)
        if flag_endpoint is not None and (exporters is None or "otlp" not in exporters):
            exporters = ("otlp", *(name for name in exporters or () if name != "none"))
        if exporters is None:
            if _setting(environ, None, *_signal("ENDPOINT")) is None:
                return TracingOff(
                    "no OTLP endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT or --otel-endpoint"
                )
            exporters = ("otlp",)
        elif exporters == ("none",):
            return TracingOff(str(env_exporter))
    elif exporters == ("none",):
        return TracingOff(str(flag_exporter))
    elif flag_endpoint is not None and "otlp" not in exporters:
        raise TracingConfigError(
            f"{flag_endpoint} is an OTLP endpoint, but {flag_exporter} has no otlp exporter"
        )

    sampler_setting = _setting(environ, (SAMPLER_FLAG, sampler), "OTEL_TRACES_SAMPLER")
    sampler_name = (sampler_setting.value if sampler_setting else DEFAULT_SAMPLER).lower()
    arg_setting = _setting(environ, (SAMPLER_ARG_FLAG, sampler_arg), "OTEL_TRACES_SAMPLER_ARG")
    parsed_arg = _parse_ratio(arg_setting) if arg_setting is not None else None
    _sampler(sampler_name, parsed_arg, sampler_setting)  # validate early, naming the value
    resource = _parse_key_values(_setting(environ, None, "OTEL_RESOURCE_ATTRIBUTES"))
    name_setting = _setting(environ, (SERVICE_NAME_FLAG, service_name), "OTEL_SERVICE_NAME")
    name = (
        name_setting.value if name_setting else resource.get("service.name") or DEFAULT_SERVICE_NAME
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
    config = TracingConfig(
        exporters=exporters,
        max_queue_size=queue_size,
        max_export_batch_size=batch_size,
        schedule_delay_millis=_env_int(
            environ, "OTEL_BSP_SCHEDULE_DELAY", DEFAULT_SCHEDULE_DELAY_MILLIS
        ),
        export_timeout_millis=_env_int(
            environ, "OTEL_BSP_EXPORT_TIMEOUT", DEFAULT_EXPORT_TIMEOUT_MILLIS
        ),
        service_name=name,
        sampler=sampler_name,
        sampler_arg=parsed_arg,
        resource_attributes=resource,
    )
    if "otlp" not in exporters:
        return config
    return _with_otlp(config, environ, flag_endpoint, protocol)


def _with_otlp(
    config: TracingConfig,
    environ: Mapping[str, str],
    flag_endpoint: Setting | None,
    protocol: str | None,
) -> TracingConfig:
    """``config`` with the otlp exporter's settings (endpoint, protocol, TLS, headers...)."""
    protocol_setting = _setting(environ, (PROTOCOL_FLAG, protocol), *_signal("PROTOCOL"))
    proto = protocol_setting.value.lower() if protocol_setting else DEFAULT_PROTOCOL
    if proto not in PROTOCOLS:
        why = (
            "the OpenTelemetry Python SDK has no OTLP/JSON exporter"
            if proto == "http/json"
            else "unsupported OTLP protocol"
        )
        raise TracingConfigError(
            f"{protocol_setting}: {why}; supported: grpc (OTLP/gRPC, usually port 4317) and "
            "http/protobuf (OTLP/HTTP, usually port 4318)"
        )
    grpc = proto == "grpc"
    traces_endpoint, base_endpoint = _signal("ENDPOINT")
    if flag_endpoint is not None:
        where = flag_endpoint
        url = where.value
        if not grpc and urlsplit(url).path in ("", "/"):
            url = _traces_url(url)
    elif (traces := _setting(environ, None, traces_endpoint)) is not None:
        where, url = traces, traces.value
    elif (base := _setting(environ, None, base_endpoint)) is not None:
        where = base
        url = base.value if grpc else _traces_url(base.value)
    else:
        default = DEFAULT_GRPC_ENDPOINT if grpc else DEFAULT_HTTP_ENDPOINT
        where = Setting(default, "the default OTLP endpoint")
        url = default if grpc else _traces_url(default)
    insecure = _check_endpoint(where, grpc, environ)
    timeout = _positive_int(_setting(environ, None, *_signal("TIMEOUT")), DEFAULT_TIMEOUT_MILLIS)
    compression = _setting(environ, None, *_signal("COMPRESSION"))
    if compression is not None and compression.value.lower() not in COMPRESSIONS:
        raise TracingConfigError(
            f"{compression}: unsupported compression; supported: {', '.join(COMPRESSIONS)}"
        )
    headers = _parse_key_values(_setting(environ, None, *_signal("HEADERS")))
    files = [
        _file(_setting(environ, None, *_signal(setting)))
        for setting in ("CERTIFICATE", "CLIENT_KEY", "CLIENT_CERTIFICATE")
    ]
    return TracingConfig(
        **{
            **config.__dict__,
            "endpoint": url,
            "protocol": proto,
            "headers": {key.lower(): value for key, value in headers.items()} if grpc else headers,
            "timeout_seconds": timeout / 1000,
            "compression": compression.value.lower() if compression else "none",
            "insecure": insecure,
            "certificate_file": files[0],
            "client_key_file": files[1],
            "client_certificate_file": files[2],
        }
    )


def _check_endpoint(where: Setting, grpc: bool, environ: Mapping[str, str]) -> bool:
    """Refuse an endpoint that is no URL; for gRPC, whether to connect without TLS: the
    scheme says (http: plaintext, https: TLS), else OTEL_EXPORTER_OTLP_[TRACES_]INSECURE."""
    value = where.value
    if "://" not in value:
        if grpc and not value.startswith("/") and ":" in value:  # host:port, no scheme
            insecure = _setting(environ, None, *_signal("INSECURE"))
            if insecure is None:
                return False
            if insecure.value.lower() not in ("true", "false"):
                raise TracingConfigError(f"{insecure}: expected true or false")
            return insecure.value.lower() == "true"
        example = "http://HOST:4317" if grpc else "http://HOST:4318"
        raise TracingConfigError(f"{where}: not a URL; expected one like {example}")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TracingConfigError(f"{where}: expected an http:// or https:// URL with a host")
    try:
        parts.port  # noqa: B018 - raises on a port that is no number
    except ValueError:
        raise TracingConfigError(f"{where}: the port is not a number") from None
    return parts.scheme == "http"


def _file(setting: Setting | None) -> str | None:
    if setting is None:
        return None
    if not os.path.isfile(setting.value):
        raise TracingConfigError(f"{setting}: no such file")
    return setting.value


def _env_int(environ: Mapping[str, str], name: str, default: int) -> int:
    return _positive_int(_setting(environ, None, name), default)


def _positive_int(setting: Setting | None, default: int) -> int:
    """A count or a duration in milliseconds (the specification's unit for every timeout)."""
    if setting is None:
        return default
    try:
        value = int(setting.value)
    except ValueError:
        raise TracingConfigError(f"{setting}: not an integer") from None
    if value <= 0:
        raise TracingConfigError(f"{setting}: must be positive")
    return value


def _parse_ratio(setting: Setting) -> float:
    try:
        value = float(setting.value)
    except ValueError:
        raise TracingConfigError(f"{setting}: not a number") from None
    if not 0.0 <= value <= 1.0:
        raise TracingConfigError(f"{setting}: outside [0, 1]")
    return value


_SAMPLERS: Final = (
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
)


def _sampler(name: str, arg: float | None, setting: Setting | None) -> Sampler:
    ratio = 1.0 if arg is None else arg
    match name:
        case "always_on":
            return ALWAYS_ON
        case "always_off":
            return ALWAYS_OFF
        case "traceidratio":
            return TraceIdRatioBased(ratio)
        case "parentbased_always_on":
            return ParentBased(ALWAYS_ON)
        case "parentbased_always_off":
            return ParentBased(ALWAYS_OFF)
        case "parentbased_traceidratio":
            return ParentBased(TraceIdRatioBased(ratio))
    named = setting if setting is not None else f"OTEL_TRACES_SAMPLER={name}"
    raise TracingConfigError(
        f"{named}: unsupported sampler {name!r}; supported: {', '.join(_SAMPLERS)}"
    )


def build_sampler(name: str, arg: float | None = None) -> Sampler:
    """The sampler the OTEL_TRACES_SAMPLER name stands for (ratio samplers default to 1.0)."""
    return _sampler(name, arg, None)
