"""OpenTelemetry tracing of pods, scheduling attempts and extension points.

A pod's story is one trace, plus one trace per failed attempt::

    PodScheduling            first enqueue → bound (or deleted); upstream's pod_scheduling_sli.
      SchedulingAttempt      The attempt that bound the pod: exported with the pod span.
        PreFilter, Filter    (events "plugin" carry per-plugin status and duration)
        ...                  PostFilter, PreScore, Score, NormalizeScore, Reserve, Permit,
        WaitOnPermit         and, from the binding task, WaitOnPermit, PreBind, Bind, PostBind,
        Bind                 Unreserve — recorded on the attempt object the binding task holds,
                             never through contextvars, so a concurrent binding task joins it.

    PodGroupSchedulingCycle  One PodGroup cycle (gang scheduling), a trace of its own: every
      SchedulingAttempt      member's attempt in that cycle is its child and links to the
        PreFilter ...        member's PodScheduling span (which links back to a failed one).

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

Configuration comes from the standard OTEL_* variables (OTEL_TRACES_EXPORTER: otlp over
http/protobuf or grpc, console, none); explicit arguments win. With no exporter or endpoint
configured :func:`setup_tracing` returns :data:`NOOP_TRACING`, whose methods return shared
no-op objects and allocate nothing.

The package is split by reason to change: :mod:`~observability.tracing.config` (the OTEL_*
variables and --otel-* flags), :mod:`~observability.tracing.otel` (the recording spans),
:mod:`~observability.tracing.noop` (their no-op twins) and :mod:`~observability.tracing.setup`
(from settings to a Tracing). Import from the package: the names below are its interface.
"""

from __future__ import annotations

from observability.tracing.config import (
    DEFAULT_MAX_EXPORT_BATCH_SIZE,
    DEFAULT_MAX_QUEUE_SIZE,
    DEFAULT_PROTOCOL,
    DEFAULT_SAMPLER,
    DEFAULT_SERVICE_NAME,
    EXPORTERS,
    PROTOCOLS,
    TRACES_PATH,
    TracingConfig,
    TracingConfigError,
    TracingOff,
    build_sampler,
    resolve_tracing,
    resolve_tracing_config,
)
from observability.tracing.noop import (
    NOOP_ATTEMPT,
    NOOP_GROUP,
    NOOP_POD,
    NOOP_POINT,
    NOOP_TRACING,
    AttributeValue,
    NoopAttemptSpan,
    NoopGroupSpan,
    NoopPodSpan,
    NoopPointSpan,
    NoopTracing,
)
from observability.tracing.otel import (
    ATTEMPT_SPAN_NAME,
    GROUP_SPAN_NAME,
    MAX_LINKED_ATTEMPTS,
    POD_SPAN_NAME,
    AnyAttemptSpan,
    AnyPodSpan,
    AttemptSpan,
    GroupSpan,
    OtelTracing,
    PodSpan,
    PointSpan,
    Tracing,
)
from observability.tracing.setup import (
    setup_tracing,
    tracing_with_processor,
)

__all__ = [
    "ATTEMPT_SPAN_NAME",
    "DEFAULT_MAX_EXPORT_BATCH_SIZE",
    "DEFAULT_MAX_QUEUE_SIZE",
    "DEFAULT_PROTOCOL",
    "DEFAULT_SAMPLER",
    "DEFAULT_SERVICE_NAME",
    "EXPORTERS",
    "GROUP_SPAN_NAME",
    "MAX_LINKED_ATTEMPTS",
    "NOOP_ATTEMPT",
    "NOOP_GROUP",
    "NOOP_POD",
    "NOOP_POINT",
    "NOOP_TRACING",
    "POD_SPAN_NAME",
    "PROTOCOLS",
    "TRACES_PATH",
    "AnyAttemptSpan",
    "AnyPodSpan",
    "AttemptSpan",
    "AttributeValue",
    "GroupSpan",
    "NoopAttemptSpan",
    "NoopGroupSpan",
    "NoopPodSpan",
    "NoopPointSpan",
    "NoopTracing",
    "OtelTracing",
    "PodSpan",
    "PointSpan",
    "Tracing",
    "TracingConfig",
    "TracingConfigError",
    "TracingOff",
    "build_sampler",
    "resolve_tracing",
    "resolve_tracing_config",
    "setup_tracing",
    "tracing_with_processor",
]
