"""The recording tracing: pod, attempt and extension-point spans built directly on an SDK
TracerProvider the scheduler owns (see the package docstring for the span tree and attributes).

It changes when what a trace records does; noop.py mirrors its interface for tracing off.
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from collections import deque
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Final

from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_ON,
    Decision,
    ParentBased,
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

from observability.spans import (
    AttemptLog,
    AttemptWithPoints,
    ExtensionPoint,
    PluginOutcome,
    plugin_event,
)
from observability.tracing.noop import (
    NOOP_ATTEMPT,
    NOOP_GROUP,
    NOOP_POD,
    AttributeValue,
    NoopAttemptSpan,
    NoopGroupSpan,
    NoopPodSpan,
    NoopTracing,
)

log = logging.getLogger("observability.tracing")  # one logger name for the package


POD_SPAN_NAME: Final = "PodScheduling"
ATTEMPT_SPAN_NAME: Final = "SchedulingAttempt"
#: One PodGroup scheduling cycle; its members' attempts are its children.
GROUP_SPAN_NAME: Final = "PodGroupSchedulingCycle"
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


class GroupSpan:
    """One PodGroup scheduling cycle, the root of a trace of its own: the attempts of its
    members are its children (each linked to its pod's PodScheduling span, and a failed one
    linked from it), so the whole group's cycle reads as one trace."""

    __slots__ = ("_attributes", "_ended", "_sink", "_start_ns", "context")

    recording: Final = True

    def __init__(
        self,
        sink: _SpanSink,
        context: SpanContext,
        attributes: dict[str, AttributeValue],
        start_ns: int | None = None,
    ) -> None:
        self._sink = sink
        self.context = context
        self._attributes = attributes
        self._start_ns = start_ns if start_ns is not None else time.time_ns()
        self._ended = False

    def end(
        self, result: str, message: str = "", placed: int = 0, end_ns: int | None = None
    ) -> None:
        """End the cycle (result: scheduled / unschedulable / error). Idempotent."""
        if self._ended:
            return
        self._ended = True
        attributes = self._attributes
        attributes["aiosched.result"] = result
        attributes["aiosched.scheduled_pods"] = placed
        if result == "scheduled":
            status = _STATUS_OK
        else:
            if message:
                attributes["aiosched.failure_message"] = message
            status = Status(StatusCode.ERROR, message or result)
        self._sink.emit(
            GROUP_SPAN_NAME,
            self.context,
            None,
            self._start_ns,
            end_ns if end_ns is not None else time.time_ns(),
            attributes,
            status=status,
        )


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
        "_group",
        "_pod",
        "_sink",
        "_span_id",
        "_start_ns",
        "log",
        "trace_id",
    )

    def __init__(
        self,
        sink: _SpanSink,
        pod: PodSpan,
        attributes: dict[str, AttributeValue],
        start_ns: int | None = None,
        group: SpanContext | None = None,
    ) -> None:
        self._sink = sink
        self._pod = pod
        # The PodGroup cycle it ran in: then the attempt is that cycle's child, whatever its
        # result, and links to the pod span.
        self._group = group
        self._span_id = sink.new_span_id()
        self._attributes = attributes
        self.log = AttemptLog()
        self._start_ns = start_ns if start_ns is not None else time.time_ns()
        self._ended = False
        # The trace the attempt was exported in, once it ended (0 before): the web view's link.
        self.trace_id = 0

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
        group = self._group
        parent: SpanContext | None
        links: tuple[Link, ...]
        if group is not None:  # under its PodGroup cycle's span
            if result == "scheduled":
                status = _STATUS_OK
            else:
                if message:
                    attributes["aiosched.failure_message"] = message
                status = Status(StatusCode.ERROR, message or result)
            parent, trace_id, links = group, group.trace_id, (Link(pod),)
        elif result == "scheduled":  # in the pod's trace, exported just before the pod span
            status = _STATUS_OK
            parent = pod
            trace_id = pod.trace_id
            links = ()
        else:  # a trace of its own, so that it is listed while the pod is pending
            if message:
                attributes["aiosched.failure_message"] = message
            status = Status(StatusCode.ERROR, message or result)
            parent, trace_id, links = None, self._sink.new_trace_id(), (Link(pod),)
        self.trace_id = trace_id
        context = SpanContext(trace_id, self._span_id, False, pod.trace_flags, pod.trace_state)
        if parent is None or (group is not None and result != "scheduled"):
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
        context = self._sampled_root(POD_SPAN_NAME, attributes)
        if context is None:
            return NOOP_POD
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
        group: GroupSpan | NoopGroupSpan | None = None,
    ) -> AttemptSpan | NoopAttemptSpan:
        """An attempt span under ``pod`` (under ``group`` when it runs in a PodGroup cycle); a
        no-op when the pod's trace is not sampled."""
        if not isinstance(pod, PodSpan) or not pod.recording:
            return NOOP_ATTEMPT
        attributes: dict[str, AttributeValue] = {
            "k8s.pod.name": pod.name,
            "k8s.namespace.name": pod.namespace,
            "k8s.pod.uid": pod.uid,
            "aiosched.profile": profile,
            "aiosched.attempt": attempt,
        }
        group_context = group.context if isinstance(group, GroupSpan) else None
        return AttemptSpan(self._sink, pod, attributes, start_ns, group_context)

    def group_span(
        self, namespace: str, name: str, profile: str, members: int
    ) -> GroupSpan | NoopGroupSpan:
        """The span of one PodGroup cycle, a root sampled as pod spans are."""
        attributes: dict[str, AttributeValue] = {
            "k8s.namespace.name": namespace,
            "aiosched.pod_group": f"{namespace}/{name}",
            "aiosched.profile": profile,
            "aiosched.pods": members,
        }
        context = self._sampled_root(GROUP_SPAN_NAME, attributes)
        if context is None:
            return NOOP_GROUP
        return GroupSpan(self._sink, context, attributes)

    def _sampled_root(
        self, span_name: str, attributes: dict[str, AttributeValue]
    ) -> SpanContext | None:
        """A new root span's context, or None when the sampler drops it (RECORD_ONLY spans are
        never exported by the SDK's processors, so they are dropped too). The sampler's
        attributes join `attributes`."""
        sink = self._sink
        trace_id = sink.new_trace_id()
        trace_state = None
        if not self._samples_every_root:
            sampling = self._sampler.should_sample(
                None, trace_id, span_name, SpanKind.INTERNAL, attributes
            )
            if sampling.decision is not Decision.RECORD_AND_SAMPLE:
                return None
            if sampling.attributes:
                attributes.update(sampling.attributes)
            trace_state = sampling.trace_state
        return SpanContext(trace_id, sink.new_span_id(), False, _SAMPLED_FLAGS, trace_state)

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


#: What the scheduler holds: either implementation, same methods.
Tracing = OtelTracing | NoopTracing
AnyPodSpan = PodSpan | NoopPodSpan
AnyAttemptSpan = AttemptSpan | NoopAttemptSpan
