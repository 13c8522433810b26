"""OpenTelemetry tracing of pods, scheduling attempts and extension points.

Span tree, one trace per pod::

    PodScheduling            first enqueue → bound (or deleted); upstream's pod_scheduling_sli
      SchedulingAttempt      one per attempt; ends when the attempt's outcome is known, so a pod
        PreFilter            pending for hours still shows every finished attempt
        Filter               (events "plugin" carry per-plugin status and duration)
        ...                  PostFilter, PreScore, Score, NormalizeScore, Reserve, Permit,
        WaitOnPermit         and, from the binding task, WaitOnPermit, PreBind, Bind, PostBind,
        Bind                 Unreserve — parented explicitly on the attempt span, never through
                             contextvars, so a concurrently running binding task joins the trace.

Attributes (semantic conventions where they exist):

=============================  ==============================================================
``k8s.pod.name``               pod name (pod and attempt spans)
``k8s.namespace.name``         pod namespace (pod and attempt spans)
``k8s.pod.uid``                pod uid (pod and attempt spans)
``k8s.node.name``              chosen node (attempt span; pod span when bound)
``aiosched.profile``           schedulerName of the profile that ran the attempt
``aiosched.attempt``           1-based attempt number
``aiosched.result``            scheduled / unschedulable / error (attempt span)
``aiosched.evaluated_nodes``   nodes the Filter phase looked at
``aiosched.feasible_nodes``    nodes that passed Filter
``aiosched.failure_message``   upstream-form failure message (failed attempt)
``aiosched.status``            framework status code of an extension point / plugin event
``aiosched.plugin``            plugin name (plugin events)
``aiosched.duration_ms``       plugin duration (plugin events)
``aiosched.outcome``           bound / deleted / shutdown (pod span)
``aiosched.attempts``          attempts it took (pod span)
=============================  ==============================================================

Configuration comes from the standard OTEL_* variables; explicit arguments win. With no endpoint
configured :func:`setup_tracing` returns :data:`NOOP_TRACING`, whose methods return shared no-op
objects and allocate nothing.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Final
from urllib.parse import unquote, urlsplit

from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.trace import Span, Status, StatusCode, Tracer, set_span_in_context
from opentelemetry.version import __version__ as _otel_version

POD_SPAN_NAME: Final = "PodScheduling"
ATTEMPT_SPAN_NAME: Final = "SchedulingAttempt"
PLUGIN_EVENT_NAME: Final = "plugin"
DEFAULT_SERVICE_NAME: Final = "aiosched"
DEFAULT_PROTOCOL: Final = "http/protobuf"
DEFAULT_SAMPLER: Final = "parentbased_always_on"
TRACES_PATH: Final = "/v1/traces"
#: The SDK's default (2048) drops spans in bursts: ~13 spans per pod at 1000 pods/s.
DEFAULT_MAX_QUEUE_SIZE: Final = 32768

#: Framework status codes that mark a span as failed in the trace UI.
_FAILED_CODES: Final = frozenset({"Error", "Unschedulable", "UnschedulableAndUnresolvable"})

#: Short keys accepted by ``set(**attrs)`` and the attribute they stand for.
_ATTRIBUTE_KEYS: Final = {
    "node": "k8s.node.name",
    "evaluated_nodes": "aiosched.evaluated_nodes",
    "feasible_nodes": "aiosched.feasible_nodes",
    "failure_message": "aiosched.failure_message",
    "profile": "aiosched.profile",
    "attempt": "aiosched.attempt",
    "result": "aiosched.result",
}

AttributeValue = str | bool | int | float


class TracingConfigError(ValueError):
    """An OTEL_* variable or tracing flag has a value we cannot honour."""


def _attribute_name(key: str) -> str:
    return _ATTRIBUTE_KEYS.get(key) or f"aiosched.{key}"


# ---------------------------------------------------------------------------------------------
# Recording implementation
# ---------------------------------------------------------------------------------------------


class PointSpan:
    """One extension point's span; a context manager that ends it on exit."""

    __slots__ = ("_span",)

    def __init__(self, span: Span) -> None:
        self._span = span

    def __enter__(self) -> PointSpan:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None:
            self._span.record_exception(exc)
            self._span.set_status(Status(StatusCode.ERROR, repr(exc)))
        self._span.end()

    def status(self, code: str, message: str = "") -> None:
        """The extension point's framework status (Success, Unschedulable, Error, Wait, Skip…)."""
        _set_framework_status(self._span, code, message)

    def plugin(self, name: str, status: str = "Success", seconds: float | None = None) -> None:
        """Record one plugin's outcome at this extension point as a span event."""
        _add_plugin_event(self._span, name, None, status, seconds)

    def set(self, **attrs: AttributeValue) -> None:
        for key, value in attrs.items():
            self._span.set_attribute(_attribute_name(key), value)


class PodSpan:
    """The long-lived per-pod span; keep it on the pod's queue record."""

    __slots__ = ("_owner", "_span", "context", "name", "namespace", "uid")

    def __init__(self, owner: OtelTracing, span: Span, uid: str, namespace: str, name: str) -> None:
        self._owner = owner
        self._span = span
        self.uid = uid
        self.namespace = namespace
        self.name = name
        self.context: Context = set_span_in_context(span, Context())

    @property
    def recording(self) -> bool:
        return self._span.is_recording()

    def bound(self, node: str, attempts: int, end_ns: int | None = None) -> None:
        self._span.set_attribute("k8s.node.name", node)
        self.end("bound", attempts, end_ns)

    def deleted(self, attempts: int, end_ns: int | None = None) -> None:
        self.end("deleted", attempts, end_ns)

    def end(self, outcome: str, attempts: int | None = None, end_ns: int | None = None) -> None:
        """End the pod span once; later calls do nothing."""
        if self._owner._open_pods.pop(self.uid, None) is None:
            return
        self._span.set_attribute("aiosched.outcome", outcome)
        if attempts is not None:
            self._span.set_attribute("aiosched.attempts", attempts)
        self._span.end(end_ns)


class AttemptSpan:
    """One scheduling attempt. Pass this object to the binding task; its spans join this trace."""

    __slots__ = ("_ended", "_span", "_tracer", "context")

    def __init__(self, tracer: Tracer, span: Span) -> None:
        self._tracer = tracer
        self._span = span
        self._ended = False
        self.context: Context = set_span_in_context(span, Context())

    recording: Final = True

    def extension_point(self, name: str, start_ns: int | None = None) -> PointSpan:
        """``with attempt.extension_point("Filter") as point: ...`` — a child span."""
        return PointSpan(self._tracer.start_span(name, self.context, start_time=start_ns))

    def record_extension_point(
        self,
        name: str,
        start_ns: int,
        end_ns: int,
        status: str = "Success",
        message: str = "",
    ) -> None:
        """A child span for an extension point already timed by the caller (``time.time_ns``)."""
        span = self._tracer.start_span(name, self.context, start_time=start_ns)
        _set_framework_status(span, status, message)
        span.end(end_ns)

    def plugin(
        self, name: str, point: str, status: str = "Success", seconds: float | None = None
    ) -> None:
        """A plugin's outcome at ``point``, as an event on the attempt span."""
        _add_plugin_event(self._span, name, point, status, seconds)

    def set(self, **attrs: AttributeValue) -> None:
        """Short keys: node, evaluated_nodes, feasible_nodes, failure_message; others aiosched.*."""
        for key, value in attrs.items():
            self._span.set_attribute(_attribute_name(key), value)

    def end(
        self,
        result: str = "scheduled",
        message: str = "",
        node: str | None = None,
        end_ns: int | None = None,
    ) -> None:
        """End the attempt (result: scheduled / unschedulable / error). Idempotent."""
        if self._ended:
            return
        self._ended = True
        span = self._span
        span.set_attribute("aiosched.result", result)
        if node:
            span.set_attribute("k8s.node.name", node)
        if result == "scheduled":
            span.set_status(Status(StatusCode.OK))
        else:
            if message:
                span.set_attribute("aiosched.failure_message", message)
            span.set_status(Status(StatusCode.ERROR, message or result))
        span.end(end_ns)


def _set_framework_status(span: Span, code: str, message: str) -> None:
    span.set_attribute("aiosched.status", code)
    if code in _FAILED_CODES:
        span.set_status(Status(StatusCode.ERROR, message or code))
    elif message:
        span.set_attribute("aiosched.status_message", message)


def _add_plugin_event(
    span: Span, name: str, point: str | None, status: str, seconds: float | None
) -> None:
    attrs: dict[str, AttributeValue] = {"aiosched.plugin": name, "aiosched.status": status}
    if point is not None:
        attrs["aiosched.extension_point"] = point
    if seconds is not None:
        attrs["aiosched.duration_ms"] = seconds * 1000.0
    span.add_event(PLUGIN_EVENT_NAME, attrs)


class OtelTracing:
    """Tracing backed by an SDK TracerProvider it owns (never installed globally)."""

    enabled: Final = True

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self._tracer = provider.get_tracer("aiosched")
        self._open_pods: dict[str, PodSpan] = {}

    def pod_span(
        self,
        pod_key: str,
        uid: str,
        namespace: str,
        name: str,
        start_ns: int | None = None,
    ) -> PodSpan:
        """The pod's root span, started at first enqueue; the same handle while it is open."""
        existing = self._open_pods.get(uid)
        if existing is not None:
            return existing
        span = self._tracer.start_span(
            POD_SPAN_NAME,
            Context(),
            attributes={
                "k8s.pod.name": name,
                "k8s.namespace.name": namespace,
                "k8s.pod.uid": uid,
                "aiosched.pod": pod_key,
            },
            start_time=start_ns,
        )
        handle = PodSpan(self, span, uid, namespace, name)
        self._open_pods[uid] = handle
        return handle

    def attempt(
        self,
        pod: PodSpan | NoopPodSpan,
        profile: str,
        attempt: int,
        start_ns: int | None = None,
    ) -> AttemptSpan | NoopAttemptSpan:
        """An attempt span under ``pod``; a no-op when the pod's trace is not sampled."""
        if not isinstance(pod, PodSpan) or not pod.recording:
            return NOOP_ATTEMPT
        span = self._tracer.start_span(
            ATTEMPT_SPAN_NAME,
            pod.context,
            attributes={
                "k8s.pod.name": pod.name,
                "k8s.namespace.name": pod.namespace,
                "k8s.pod.uid": pod.uid,
                "aiosched.profile": profile,
                "aiosched.attempt": attempt,
            },
            start_time=start_ns,
        )
        return AttemptSpan(self._tracer, span)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.provider.force_flush(timeout_millis)

    def end_open_pods(self) -> None:
        """End every still-open pod span (outcome "shutdown") so it is exported."""
        for handle in list(self._open_pods.values()):
            handle.end("shutdown")

    def shutdown(self) -> None:
        """End open pod spans, flush and stop the exporter (blocks; see :meth:`aclose`)."""
        self.end_open_pods()
        self.provider.shutdown()

    async def aclose(self) -> None:
        """:meth:`shutdown` without blocking the event loop on the final export."""
        self.end_open_pods()
        await asyncio.to_thread(self.provider.shutdown)


# ---------------------------------------------------------------------------------------------
# No-op implementation: shared immutable objects, nothing allocated per call
# ---------------------------------------------------------------------------------------------

_EMPTY_CONTEXT: Final = Context()


class NoopPointSpan:
    __slots__ = ()

    def __enter__(self) -> NoopPointSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def status(self, code: str, message: str = "") -> None:
        pass

    def plugin(self, name: str, status: str = "Success", seconds: float | None = None) -> None:
        pass

    def set(self, **attrs: AttributeValue) -> None:
        pass


class NoopAttemptSpan:
    __slots__ = ()
    recording: Final = False
    context: Final = _EMPTY_CONTEXT

    def extension_point(self, name: str, start_ns: int | None = None) -> NoopPointSpan:
        return NOOP_POINT

    def record_extension_point(
        self, name: str, start_ns: int, end_ns: int, status: str = "Success", message: str = ""
    ) -> None:
        pass

    def plugin(
        self, name: str, point: str, status: str = "Success", seconds: float | None = None
    ) -> None:
        pass

    def set(self, **attrs: AttributeValue) -> None:
        pass

    def end(
        self,
        result: str = "scheduled",
        message: str = "",
        node: str | None = None,
        end_ns: int | None = None,
    ) -> None:
        pass


class NoopPodSpan:
    __slots__ = ()
    recording: Final = False
    context: Final = _EMPTY_CONTEXT
    uid: Final = ""

    def bound(self, node: str, attempts: int, end_ns: int | None = None) -> None:
        pass

    def deleted(self, attempts: int, end_ns: int | None = None) -> None:
        pass

    def end(self, outcome: str, attempts: int | None = None, end_ns: int | None = None) -> None:
        pass


class NoopTracing:
    """Tracing off: every call returns a shared no-op object."""

    __slots__ = ()
    enabled: Final = False

    def pod_span(
        self, pod_key: str, uid: str, namespace: str, name: str, start_ns: int | None = None
    ) -> NoopPodSpan:
        return NOOP_POD

    def attempt(
        self,
        pod: PodSpan | NoopPodSpan,
        profile: str,
        attempt: int,
        start_ns: int | None = None,
    ) -> NoopAttemptSpan:
        return NOOP_ATTEMPT

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def end_open_pods(self) -> None:
        pass

    def shutdown(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


NOOP_POINT: Final = NoopPointSpan()
NOOP_ATTEMPT: Final = NoopAttemptSpan()
NOOP_POD: Final = NoopPodSpan()
NOOP_TRACING: Final = NoopTracing()

#: What the scheduler holds: either implementation, same methods.
Tracing = OtelTracing | NoopTracing
AnyPodSpan = PodSpan | NoopPodSpan
AnyAttemptSpan = AttemptSpan | NoopAttemptSpan


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
    raw_queue = _env(environ, "OTEL_BSP_MAX_QUEUE_SIZE")
    try:
        queue_size = int(raw_queue) if raw_queue is not None else DEFAULT_MAX_QUEUE_SIZE
    except ValueError:
        raise TracingConfigError(
            f"OTEL_BSP_MAX_QUEUE_SIZE: not an integer: {raw_queue!r}"
        ) from None
    return TracingConfig(
        endpoint=url,
        max_queue_size=queue_size,
        protocol=resolved_protocol,
        service_name=name,
        sampler=sampler_name,
        sampler_arg=parsed_arg,
        headers=headers,
        resource_attributes=resource,
    )


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


def _build_exporter(config: TracingConfig) -> SpanExporter:
    if config.protocol == "grpc":  # pragma: no cover - optional package, not installed here
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
            OTLPSpanExporter as GrpcExporter,
        )

        grpc: SpanExporter = GrpcExporter(endpoint=config.endpoint, headers=dict(config.headers))
        return grpc
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=config.endpoint, headers=dict(config.headers) or None)


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
) -> OtelTracing:
    """Tracing exporting through ``processor`` (tests use a SimpleSpanProcessor + in-memory)."""
    provider = TracerProvider(
        sampler=sampler if sampler is not None else ParentBased(ALWAYS_ON),
        resource=_resource(service_name, resource_attributes or {}),
        shutdown_on_exit=False,
    )
    provider.add_span_processor(processor)
    return OtelTracing(provider)


def tracing_with_exporter(
    exporter: SpanExporter, sampler: Sampler | None = None, batch: bool = True
) -> OtelTracing:
    if batch:
        return tracing_with_processor(BatchSpanProcessor(exporter), sampler)
    return tracing_with_processor(SimpleSpanProcessor(exporter), sampler)


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
        return NOOP_TRACING
    return tracing_with_processor(
        BatchSpanProcessor(_build_exporter(config), max_queue_size=config.max_queue_size),
        build_sampler(config.sampler, config.sampler_arg),
        config.service_name,
        config.resource_attributes,
    )


def now_ns() -> int:
    """Wall-clock nanoseconds, the time base of span start/end arguments."""
    return time.time_ns()
