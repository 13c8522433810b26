"""OpenTelemetry tracing of pods, scheduling attempts and extension points.

A pod's story is one trace, plus one trace per failed attempt::

    PodScheduling            first enqueue → bound (or deleted); upstream's pod_scheduling_sli.
      SchedulingAttempt      The attempt that bound the pod: exported with the pod span.
        PreFilter, Filter    (events "plugin" carry per-plugin status and duration)
        ...                  PostFilter, PreScore, Score, NormalizeScore, Reserve, Permit,
        WaitOnPermit         and, from the binding task, WaitOnPermit, PreBind, Bind, PostBind,
        Bind                 Unreserve — recorded on the attempt object the binding task holds,
                             never through contextvars, so a concurrent binding task joins it.

    SchedulingAttempt        A failed attempt (unschedulable, error, binding failed) is the root
      PreFilter, Filter      of a trace of its own, exported when it fails: a backend lists it
      PostFilter ...         while the pod is still pending. It links to the pod's
                             PodScheduling span, and the pod span links back to the last
                             MAX_LINKED_ATTEMPTS failed attempts; all carry the pod's k8s.pod.*
                             attributes, so a search by k8s.pod.name finds the whole story.

Whether an attempt ends in the pod's trace or in its own is known only when it ends, which is
when it and its extension points are exported; its span id is drawn when it starts.

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
``aiosched.attempt`` (link)    the linked attempt's number (links of the pod span)
=============================  ==============================================================

Configuration comes from the standard OTEL_* variables; explicit arguments win. With no endpoint
configured :func:`setup_tracing` returns :data:`NOOP_TRACING`, whose methods return shared no-op
objects and allocate nothing.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import time
import traceback
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Final
from urllib.parse import unquote, urlsplit

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.trace import (
    Link,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    Tracer,
)
from opentelemetry.version import __version__ as _otel_version

from observability.spans import (
    AttemptLog,
    AttemptWithPoints,
    ExtensionPoint,
    PluginOutcome,
    plugin_event,
)

log = logging.getLogger(__name__)

POD_SPAN_NAME: Final = "PodScheduling"
ATTEMPT_SPAN_NAME: Final = "SchedulingAttempt"
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
#: Failed attempts a PodScheduling span links to (the last ones): bounds what a pod pending for
#: days keeps in memory (two ints an attempt); every attempt links to the pod span anyway.
MAX_LINKED_ATTEMPTS: Final = 16

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


_STATUS_UNSET: Final = Status(StatusCode.UNSET)
_STATUS_OK: Final = Status(StatusCode.OK)
_SAMPLED_FLAGS: Final = TraceFlags(TraceFlags.SAMPLED)
#: Descriptions of the samplers that sample every root span as it is (no attributes, no state).
_SAMPLE_EVERY_ROOT: Final = frozenset(
    {ALWAYS_ON.get_description(), ParentBased(ALWAYS_ON).get_description()}  # type: ignore[no-untyped-call]
)


class _SpanSink:
    """Where directly built spans go: the provider's resource and scope, and the processor.

    Spans below a pod span are built as finished SDK ``ReadableSpan`` objects and handed to the
    span processor, instead of going through ``Tracer.start_span``: the SDK's per-span locks,
    limits, sampler call and processor fan-out cost ~25 µs a span, several times the rest of
    recording one. The sampling decision is the pod span's, which is what every supported
    sampler would decide for a child (parent-based ones follow the parent, the others decide
    by trace id, which the children share)."""

    __slots__ = ("compact_points", "new_span_id", "new_trace_id", "on_end", "resource", "scope")

    def __init__(
        self,
        provider: TracerProvider,
        processor: SpanProcessor,
        tracer: Tracer,
        compact_points: bool = False,
    ) -> None:
        # True when the exporter writes extension points from their records (AttemptWithPoints):
        # they then ride on their attempt's span instead of being spans of their own.
        self.compact_points = compact_points
        self.resource = provider.resource
        self.scope = getattr(tracer, "instrumentation_scope", None)
        self.new_span_id = provider.id_generator.generate_span_id
        self.new_trace_id = provider.id_generator.generate_trace_id
        self.on_end = processor.on_end

    def emit(
        self,
        name: str,
        context: SpanContext,
        parent: SpanContext | None,
        start_ns: int,
        end_ns: int,
        attributes: dict[str, AttributeValue],
        events: Sequence[Event] = (),
        status: Status = _STATUS_UNSET,
        log: AttemptLog | None = None,
        links: Sequence[Link] = (),
    ) -> None:
        """Hand a finished span to the processor: a plain ``ReadableSpan`` (the SDK's
        finished-span type that processors and exporters consume), or, with an attempt's
        ``log``, one carrying its extension points (followed by them as spans of their own
        unless the exporter takes them as records)."""
        common: dict[str, Any] = {
            "context": context,
            "parent": parent,
            "resource": self.resource,
            "attributes": attributes,
            "events": events,
            "links": links,
            "status": status,
            "start_time": start_ns,
            "end_time": end_ns,
            "instrumentation_scope": self.scope,
        }
        if log is None:
            self.on_end(ReadableSpan(name, **common))
            return
        attempt = AttemptWithPoints(name, log=log, span_id_base=self.new_span_id(), **common)
        self.on_end(attempt)
        if not self.compact_points:
            for point in attempt.point_spans():
                self.on_end(point)


def _exception_event(exc: BaseException) -> Event:
    kind = type(exc)
    module = kind.__module__
    return Event(
        "exception",
        {
            "exception.type": f"{module}.{kind.__qualname__}"
            if module and module != "builtins"
            else kind.__qualname__,
            "exception.message": str(exc),
            "exception.stacktrace": "".join(traceback.format_exception(exc)),
            "exception.escaped": "False",
        },
    )


class PointSpan:
    """One extension point's span, timed by a ``with`` block; recorded when the block ends."""

    __slots__ = (
        "_attempt",
        "_attributes",
        "_code",
        "_error",
        "_events",
        "_message",
        "_name",
        "_start_ns",
    )

    def __init__(self, attempt: AttemptSpan, name: str, start_ns: int | None) -> None:
        self._attempt = attempt
        self._name = name
        self._start_ns = start_ns if start_ns is not None else time.time_ns()
        self._attributes: dict[str, AttributeValue] = {}
        self._events: list[Event] = []
        self._code = ""
        self._message = ""
        self._error: Status | None = None

    def __enter__(self) -> PointSpan:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None:
            self._events.append(_exception_event(exc))
            self._error = Status(StatusCode.ERROR, repr(exc))
        self._attempt.add_point(
            ExtensionPoint(
                self._name,
                0,
                self._start_ns,
                time.time_ns(),
                self._code,
                self._message,
                (),
                self._attributes or None,
                tuple(self._events),
                self._error,
            )
        )

    def status(self, code: str, message: str = "") -> None:
        """The extension point's framework status (Success, Unschedulable, Error, Wait, Skip…)."""
        self._code, self._message = code, message

    def plugin(
        self,
        name: str,
        status: str = "Success",
        seconds: float | None = None,
        rejected: int | None = None,
    ) -> None:
        """Record one plugin's outcome at this extension point as a span event; ``rejected``
        (Filter): how many nodes it rejected, as ``aiosched.nodes_rejected``."""
        event = plugin_event(name, None, status, seconds)
        if rejected is not None:
            # the dict plugin_event just built, seen by nobody else yet
            attributes: dict[str, Any] = event.attributes  # type: ignore[assignment]
            attributes["aiosched.nodes_rejected"] = rejected
        self._events.append(event)

    def set(self, **attrs: AttributeValue) -> None:
        for key, value in attrs.items():
            self._attributes[_attribute_name(key)] = value


class PodSpan:
    """The long-lived per-pod span of a sampled pod; exported when it ends."""

    __slots__ = (
        "_attributes",
        "_failed_attempts",
        "_owner",
        "_start_ns",
        "context",
        "name",
        "namespace",
        "uid",
    )

    recording: Final = True

    def __init__(
        self,
        owner: OtelTracing,
        context: SpanContext,
        attributes: dict[str, AttributeValue],
        start_ns: int,
        uid: str,
        namespace: str,
        name: str,
    ) -> None:
        self._owner = owner
        self.context = context
        self._attributes = attributes
        self._start_ns = start_ns
        self.uid = uid
        self.namespace = namespace
        self.name = name
        # (trace id, span id, attempt number) of the last failed attempts; None until one fails
        self._failed_attempts: deque[tuple[int, int, AttributeValue]] | None = None

    def bound(self, node: str, attempts: int, end_ns: int | None = None) -> None:
        self._attributes["k8s.node.name"] = node
        self.end("bound", attempts, end_ns)

    def deleted(self, attempts: int, end_ns: int | None = None) -> None:
        self.end("deleted", attempts, end_ns)

    def failed_attempt(self, context: SpanContext, attempt: AttributeValue) -> None:
        """A failed attempt, exported as a trace of its own: the pod span will link to it."""
        failed = self._failed_attempts
        if failed is None:
            failed = self._failed_attempts = deque(maxlen=MAX_LINKED_ATTEMPTS)
        failed.append((context.trace_id, context.span_id, attempt))

    def end(self, outcome: str, attempts: int | None = None, end_ns: int | None = None) -> None:
        """End the pod span once; later calls do nothing."""
        owner = self._owner
        if owner._open_pods.pop(self.uid, None) is None:
            return
        self._attributes["aiosched.outcome"] = outcome
        if attempts is not None:
            self._attributes["aiosched.attempts"] = attempts
        owner._sink.emit(
            POD_SPAN_NAME,
            self.context,
            None,
            self._start_ns,
            end_ns if end_ns is not None else time.time_ns(),
            self._attributes,
            links=self._links(),
        )

    def _links(self) -> Sequence[Link]:
        if not self._failed_attempts:
            return ()
        flags, state = self.context.trace_flags, self.context.trace_state
        return [
            Link(SpanContext(trace_id, span_id, False, flags, state), {"aiosched.attempt": number})
            for trace_id, span_id, number in self._failed_attempts
        ]


class AttemptSpan:
    """One scheduling attempt. Pass this object to the binding task: what it records joins
    this attempt, whatever task runs it (never through contextvars).

    Its extension points are appended to ``log`` while the attempt runs and exported with it
    when it ends: in the pod's trace, under its PodScheduling span, when it scheduled the pod;
    otherwise as a trace of its own, linked to the pod span, so that a backend lists it while
    the pod is still pending."""

    __slots__ = (
        "_attributes",
        "_ended",
        "_pod",
        "_sink",
        "_span_id",
        "_start_ns",
        "log",
    )

    def __init__(
        self,
        sink: _SpanSink,
        pod: PodSpan,
        attributes: dict[str, AttributeValue],
        start_ns: int | None = None,
    ) -> None:
        self._sink = sink
        self._pod = pod
        self._span_id = sink.new_span_id()
        self._attributes = attributes
        self.log = AttemptLog()
        self._start_ns = start_ns if start_ns is not None else time.time_ns()
        self._ended = False

    recording: Final = True

    def add_point(self, point: ExtensionPoint) -> None:
        """A finished extension point (its span id is assigned at export)."""
        self.log.entries.append(point)

    def extension_point(self, name: str, start_ns: int | None = None) -> PointSpan:
        """``with attempt.extension_point("Filter") as point: ...`` — a child span."""
        return PointSpan(self, name, start_ns)

    def record_extension_point(
        self,
        name: str,
        start_ns: int,
        end_ns: int,
        status: str = "Success",
        message: str = "",
        attributes: dict[str, AttributeValue] | None = None,
        plugin_outcomes: Sequence[PluginOutcome] = (),
    ) -> None:
        """A child span for an extension point already timed by the caller (``time.time_ns``),
        with a "plugin" event per outcome."""
        self.add_point(
            ExtensionPoint(
                name, 0, start_ns, end_ns, status, message, plugin_outcomes, attributes or None
            )
        )

    def set(self, **attrs: AttributeValue) -> None:
        """Short keys: node, evaluated_nodes, feasible_nodes, failure_message; others aiosched.*."""
        for key, value in attrs.items():
            self._attributes[_attribute_name(key)] = value

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
        attributes = self._attributes
        attributes["aiosched.result"] = result
        if node:
            attributes["k8s.node.name"] = node
        pod = self._pod.context
        if result == "scheduled":  # in the pod's trace, exported just before the pod span
            status = _STATUS_OK
            parent: SpanContext | None = pod
            trace_id = pod.trace_id
            links: tuple[Link, ...] = ()
        else:  # a trace of its own, so that it is listed while the pod is pending
            if message:
                attributes["aiosched.failure_message"] = message
            status = Status(StatusCode.ERROR, message or result)
            parent, trace_id, links = None, self._sink.new_trace_id(), (Link(pod),)
        context = SpanContext(trace_id, self._span_id, False, pod.trace_flags, pod.trace_state)
        if parent is None:
            self._pod.failed_attempt(context, attributes.get("aiosched.attempt", 0))
        self._sink.emit(
            ATTEMPT_SPAN_NAME,
            context,
            parent,
            self._start_ns,
            end_ns if end_ns is not None else time.time_ns(),
            attributes,
            status=status,
            log=self.log,
            links=links,
        )


class OtelTracing:
    """Tracing backed by an SDK TracerProvider it owns (never installed globally)."""

    enabled: Final = True

    def __init__(
        self, provider: TracerProvider, processor: SpanProcessor, compact_points: bool = False
    ) -> None:
        self.provider = provider
        self._tracer = provider.get_tracer("aiosched")
        self._sink = _SpanSink(provider, processor, self._tracer, compact_points)
        self._sampler = provider.sampler
        # Pod spans are roots: these samplers keep every one, and add nothing to it.
        self._samples_every_root = self._sampler.get_description() in _SAMPLE_EVERY_ROOT
        self._open_pods: dict[str, PodSpan] = {}

    def pod_span(
        self,
        pod_key: str,
        uid: str,
        namespace: str,
        name: str,
        start_ns: int | None = None,
    ) -> PodSpan | NoopPodSpan:
        """The pod's root span, started at first enqueue; the same handle while it is open.

        The sampler decides here, once per pod: an unsampled pod gets :data:`NOOP_POD`, and so
        do all its attempts."""
        existing = self._open_pods.get(uid)
        if existing is not None:
            return existing
        attributes: dict[str, AttributeValue] = {
            "k8s.pod.name": name,
            "k8s.namespace.name": namespace,
            "k8s.pod.uid": uid,
            "aiosched.pod": pod_key,
        }
        sink = self._sink
        trace_id = sink.new_trace_id()
        trace_state = None
        if not self._samples_every_root:
            sampling = self._sampler.should_sample(
                None, trace_id, POD_SPAN_NAME, SpanKind.INTERNAL, attributes
            )
            # RECORD_ONLY spans are never exported by the SDK's processors: they are dropped.
            if sampling.decision is not Decision.RECORD_AND_SAMPLE:
                return NOOP_POD
            if sampling.attributes:
                attributes.update(sampling.attributes)
            trace_state = sampling.trace_state
        context = SpanContext(trace_id, sink.new_span_id(), False, _SAMPLED_FLAGS, trace_state)
        start = start_ns if start_ns is not None else time.time_ns()
        handle = PodSpan(self, context, attributes, start, uid, namespace, name)
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
        attributes: dict[str, AttributeValue] = {
            "k8s.pod.name": pod.name,
            "k8s.namespace.name": pod.namespace,
            "k8s.pod.uid": pod.uid,
            "aiosched.profile": profile,
            "aiosched.attempt": attempt,
        }
        return AttemptSpan(self._sink, pod, attributes, start_ns)

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


class NoopPointSpan:
    __slots__ = ()

    def __enter__(self) -> NoopPointSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def status(self, code: str, message: str = "") -> None:
        pass

    def plugin(
        self,
        name: str,
        status: str = "Success",
        seconds: float | None = None,
        rejected: int | None = None,
    ) -> None:
        pass

    def set(self, **attrs: AttributeValue) -> None:
        pass


class NoopAttemptSpan:
    __slots__ = ()
    recording: Final = False

    def extension_point(self, name: str, start_ns: int | None = None) -> NoopPointSpan:
        return NOOP_POINT

    def record_extension_point(
        self, name: str, start_ns: int, end_ns: int, status: str = "Success", message: str = ""
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
