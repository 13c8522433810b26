"""Span tree, attributes and OTEL_* resolution of observability.tracing."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    SamplingResult,
)
from opentelemetry.trace import StatusCode
from opentelemetry.trace.span import TraceState

from observability.tracing import (
    MAX_LINKED_ATTEMPTS,
    NOOP_ATTEMPT,
    NOOP_TRACING,
    OtelTracing,
    TracingConfigError,
    resolve_tracing_config,
    setup_tracing,
    tracing_with_processor,
)

BASE = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}
TRACES = "http://c:4318/v1/traces"


def make_tracing(sampler: Sampler | None = None) -> tuple[OtelTracing, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tracing = tracing_with_processor(SimpleSpanProcessor(exporter), sampler=sampler)
    return tracing, exporter


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_scheduled_pod_span_tree_with_concurrent_binding_task() -> None:
    tracing, exporter = make_tracing()
    pod = tracing.pod_span("default/web", "uid-1", "default", "web")

    attempt = tracing.attempt(pod, "default-scheduler", 1)
    for point in ("PreFilter", "Filter", "PreScore", "Score", "NormalizeScore"):
        with attempt.extension_point(point) as span:
            span.plugin("NodeResourcesFit", "Success", 0.0001)
    attempt.set(evaluated_nodes=3, feasible_nodes=2)
    with attempt.extension_point("Reserve"):
        pass
    with attempt.extension_point("Permit"):
        pass

    async def binding_cycle() -> None:
        # A fresh task with its own (empty) contextvars; the attempt object carries the parent.
        for point in ("WaitOnPermit", "PreBind", "Bind", "PostBind"):
            with attempt.extension_point(point) as span:
                span.status("Success")
        attempt.end("scheduled", node="node-2")
        pod.bound("node-2", attempts=1)

    await asyncio.create_task(binding_cycle())

    spans = exporter.get_finished_spans()
    [root] = by_name(spans, "PodScheduling")
    [attempt_span] = by_name(spans, "SchedulingAttempt")
    assert root.parent is None
    assert parent_id(attempt_span) == root.context.span_id
    points = [s for s in spans if s.name not in ("PodScheduling", "SchedulingAttempt")]
    assert [s.name for s in points] == [
        "PreFilter",
        "Filter",
        "PreScore",
        "Score",
        "NormalizeScore",
        "Reserve",
        "Permit",
        "WaitOnPermit",
        "PreBind",
        "Bind",
        "PostBind",
    ]
    for finished in points:
        assert parent_id(finished) == attempt_span.context.span_id
        assert finished.context.trace_id == root.context.trace_id
    assert dict(attempt_span.attributes or {}) == {
        "k8s.pod.name": "web",
        "k8s.namespace.name": "default",
        "k8s.pod.uid": "uid-1",
        "aiosched.profile": "default-scheduler",
        "aiosched.attempt": 1,
        "aiosched.evaluated_nodes": 3,
        "aiosched.feasible_nodes": 2,
        "aiosched.result": "scheduled",
        "k8s.node.name": "node-2",
    }
    assert attempt_span.status.status_code is StatusCode.OK
    assert (root.attributes or {})["k8s.node.name"] == "node-2"
    assert (root.attributes or {})["aiosched.outcome"] == "bound"
    [event] = by_name(spans, "Filter")[0].events
    assert event.name == "plugin"
    assert (event.attributes or {})["aiosched.plugin"] == "NodeResourcesFit"


def test_pending_pod_exports_each_attempt_before_the_pod_span_ends() -> None:
    tracing, exporter = make_tracing()
    pod = tracing.pod_span("ns/p", "u", "ns", "p")
    message = "0/3 nodes are available: 3 Insufficient cpu."
    for n in (1, 2):
        attempt = tracing.attempt(pod, "default-scheduler", n)
        with attempt.extension_point("Filter") as point:
            point.status("Unschedulable", message)
        attempt.end("unschedulable", message)
    finished = exporter.get_finished_spans()
    attempts = by_name(finished, "SchedulingAttempt")
    assert [a.attributes["aiosched.attempt"] for a in attempts if a.attributes] == [1, 2]
    assert not by_name(finished, "PodScheduling")  # the pod is still pending
    assert attempts[0].status.status_code is StatusCode.ERROR
    assert (attempts[0].attributes or {})["aiosched.failure_message"] == message
    assert by_name(finished, "Filter")[0].status.status_code is StatusCode.ERROR
    # Each failed attempt is the root of a complete trace of its own, its points under it.
    assert [parent_id(a) for a in attempts] == [None, None]
    assert len({a.context.trace_id for a in attempts}) == 2
    for attempt, filter_span in zip(attempts, by_name(finished, "Filter"), strict=True):
        assert parent_id(filter_span) == attempt.context.span_id
        assert filter_span.context.trace_id == attempt.context.trace_id

    tracing.shutdown()  # ends open pod spans so they are exported
    [root] = by_name(exporter.get_finished_spans(), "PodScheduling")
    assert (root.attributes or {})["aiosched.outcome"] == "shutdown"
    # Linked both ways: attempt → its pod's span, pod span → the attempts, numbered.
    for attempt in attempts:
        assert [link.context for link in attempt.links] == [root.context]
    assert [(link.context, dict(link.attributes or {})) for link in root.links] == [
        (a.context, {"aiosched.attempt": n}) for n, a in enumerate(attempts, 1)
    ]


def test_pod_span_links_the_last_failed_attempts_only() -> None:
    tracing, exporter = make_tracing()
    pod = tracing.pod_span("ns/p", "u", "ns", "p")
    total = MAX_LINKED_ATTEMPTS + 3
    for n in range(1, total + 1):
        tracing.attempt(pod, "p", n).end("error", "boom")
    tracing.attempt(pod, "p", total + 1).end("scheduled", node="n")
    pod.bound("n", attempts=total + 1)
    [root] = by_name(exporter.get_finished_spans(), "PodScheduling")
    assert [(link.attributes or {})["aiosched.attempt"] for link in root.links] == list(
        range(4, total + 1)
    )
    assert (root.attributes or {})["aiosched.attempts"] == total + 1


def test_failed_attempts_keep_the_pods_sampling_trace_state() -> None:
    tracing, exporter = make_tracing(TaggingSampler())
    pod = tracing.pod_span("ns/p", "u", "ns", "p")
    tracing.attempt(pod, "p", 1).end("unschedulable", "no fit")
    [attempt] = exporter.get_finished_spans()
    assert attempt.context is not None
    assert attempt.context.trace_state.to_header() == "vendor=v1"
    assert attempt.context.trace_flags.sampled


def test_pod_span_is_one_handle_per_uid_and_ends_once() -> None:
    tracing, exporter = make_tracing()
    first = tracing.pod_span("ns/p", "u", "ns", "p")
    assert tracing.pod_span("ns/p", "u", "ns", "p") is first
    first.deleted(attempts=2)
    first.bound("n", attempts=3)  # ignored: already ended
    [root] = exporter.get_finished_spans()
    assert (root.attributes or {})["aiosched.outcome"] == "deleted"
    assert (root.attributes or {})["aiosched.attempts"] == 2
    assert tracing.pod_span("ns/p", "u", "ns", "p") is not first


def test_record_extension_point_uses_given_times_and_exception_marks_error() -> None:
    tracing, exporter = make_tracing()
    attempt = tracing.attempt(tracing.pod_span("ns/p", "u", "ns", "p"), "p", 1)
    attempt.record_extension_point("Bind", 1_000, 5_000, "Error", "409 conflict")
    with pytest.raises(RuntimeError), attempt.extension_point("PreBind"):
        raise RuntimeError("boom")
    assert exporter.get_finished_spans() == ()  # extension points are exported with the attempt
    attempt.end("error", "409 conflict")
    _, bind, prebind = exporter.get_finished_spans()
    assert (bind.start_time, bind.end_time) == (1_000, 5_000)
    assert bind.status.status_code is StatusCode.ERROR
    assert bind.status.description == "409 conflict"
    assert prebind.status.status_code is StatusCode.ERROR
    assert [e.name for e in prebind.events] == ["exception"]


def test_unsampled_pod_gets_noop_attempts() -> None:
    tracing, exporter = make_tracing(ParentBased(ALWAYS_OFF))
    pod = tracing.pod_span("ns/p", "u", "ns", "p")
    assert tracing.attempt(pod, "p", 1) is NOOP_ATTEMPT
    tracing.shutdown()
    assert exporter.get_finished_spans() == ()


def test_noop_tracing_allocates_nothing_per_call() -> None:
    pod = NOOP_TRACING.pod_span("ns/p", "u", "ns", "p")
    attempt = NOOP_TRACING.attempt(pod, "p", 1)
    assert attempt is NOOP_ATTEMPT
    assert attempt.extension_point("Filter") is attempt.extension_point("Score")
    with attempt.extension_point("Filter") as point:
        point.plugin("X")
    attempt.end("scheduled")
    pod.bound("n", 1)
    assert not NOOP_TRACING.enabled and not attempt.recording


# --- OTEL_* resolution ---


@pytest.mark.parametrize(
    ("kwargs", "environ", "expected"),
    [
        ({}, {}, None),
        ({}, {"OTEL_SERVICE_NAME": "x"}, None),
        ({}, BASE, (TRACES, "aiosched")),
        ({}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}, (TRACES, "aiosched")),
        (
            {},
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:1",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:2/t",
            },
            ("http://b:2/t", "aiosched"),
        ),
        ({"endpoint": "http://e:4318"}, {}, ("http://e:4318/v1/traces", "aiosched")),
        ({"endpoint": "http://e:4318/custom"}, {}, ("http://e:4318/custom", "aiosched")),
        (
            {"service_name": "flag"},
            {**BASE, "OTEL_SERVICE_NAME": "env"},
            (TRACES, "flag"),
        ),
        (
            {},
            {**BASE, "OTEL_SERVICE_NAME": "env"},
            (TRACES, "env"),
        ),
        (
            {},
            {**BASE, "OTEL_RESOURCE_ATTRIBUTES": "service.name=res"},
            (TRACES, "res"),
        ),
        ({}, {**BASE, "OTEL_SDK_DISABLED": "true"}, None),
        ({}, {**BASE, "OTEL_TRACES_EXPORTER": "none"}, None),
    ],
)
def test_resolve_endpoint_and_service_name(
    kwargs: dict[str, str], environ: Mapping[str, str], expected: tuple[str, str] | None
) -> None:
    config = resolve_tracing_config(environ=environ, **kwargs)
    if expected is None:
        assert config is None
    else:
        assert config is not None
        assert (config.endpoint, config.service_name) == expected


@pytest.mark.parametrize(
    ("kwargs", "environ", "sampler", "arg"),
    [
        ({}, {}, "parentbased_always_on", None),
        (
            {},
            {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"},
            "traceidratio",
            0.25,
        ),
        ({"sampler": "always_on"}, {"OTEL_TRACES_SAMPLER": "always_off"}, "always_on", None),
        ({"sampler_arg": 0.5}, {"OTEL_TRACES_SAMPLER_ARG": "0.1"}, "parentbased_always_on", 0.5),
    ],
)
def test_resolve_sampler(
    kwargs: dict[str, object], environ: dict[str, str], sampler: str, arg: float | None
) -> None:
    config = resolve_tracing_config(
        environ={**BASE, **environ},
        **kwargs,  # type: ignore[arg-type]
    )
    assert config is not None
    assert (config.sampler, config.sampler_arg) == (sampler, arg)


@pytest.mark.parametrize(
    ("kwargs", "environ", "message"),
    [
        (
            {},
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
            "OTEL_EXPORTER_OTLP_PROTOCOL=http/json: the OpenTelemetry Python SDK has no OTLP/JSON "
            "exporter; supported: grpc (OTLP/gRPC, usually port 4317) and http/protobuf "
            "(OTLP/HTTP, usually port 4318)",
        ),
        (
            {"protocol": "http/json"},
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "--otel-protocol http/json: the OpenTelemetry Python SDK has no OTLP/JSON exporter; "
            "supported: grpc (OTLP/gRPC, usually port 4317) and http/protobuf (OTLP/HTTP, "
            "usually port 4318)",
        ),
        (
            {},
            {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "thrift"},
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=thrift: unsupported OTLP protocol; supported: "
            "grpc (OTLP/gRPC, usually port 4317) and http/protobuf (OTLP/HTTP, usually port 4318)",
        ),
        (
            {},
            {"OTEL_TRACES_SAMPLER": "jaeger_remote"},
            "OTEL_TRACES_SAMPLER=jaeger_remote: unsupported sampler 'jaeger_remote'; supported: "
            "always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, "
            "parentbased_traceidratio",
        ),
        (
            {"sampler": "ratio"},
            {},
            "--otel-sampler ratio: unsupported sampler 'ratio'; supported: always_on, "
            "always_off, traceidratio, parentbased_always_on, parentbased_always_off, "
            "parentbased_traceidratio",
        ),
        ({}, {"OTEL_TRACES_SAMPLER_ARG": "abc"}, "OTEL_TRACES_SAMPLER_ARG=abc: not a number"),
        ({}, {"OTEL_TRACES_SAMPLER_ARG": "1.5"}, "OTEL_TRACES_SAMPLER_ARG=1.5: outside [0, 1]"),
        ({"sampler_arg": "2"}, {}, "--otel-sampler-arg 2: outside [0, 1]"),
        (
            {},
            {"OTEL_EXPORTER_OTLP_HEADERS": "novalue"},
            "OTEL_EXPORTER_OTLP_HEADERS=novalue: expected key=value, got 'novalue'",
        ),
        (
            {},
            {"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "a=1,=2"},
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS=a=1,=2: expected key=value, got '=2'",
        ),
        (
            {},
            {"OTEL_BSP_MAX_QUEUE_SIZE": "lots"},
            "OTEL_BSP_MAX_QUEUE_SIZE=lots: not an integer",
        ),
        ({}, {"OTEL_BSP_MAX_QUEUE_SIZE": "0"}, "OTEL_BSP_MAX_QUEUE_SIZE=0: must be positive"),
        (
            {},
            {"OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "200"},
            "OTEL_BSP_MAX_EXPORT_BATCH_SIZE (200) must not exceed OTEL_BSP_MAX_QUEUE_SIZE (100)",
        ),
        (
            {},
            {"OTEL_TRACES_EXPORTER": "zipkin"},
            "OTEL_TRACES_EXPORTER=zipkin: unsupported traces exporter 'zipkin'; supported: "
            "otlp, console, none (a comma-separated list)",
        ),
        (
            {"exporter": "otlp,jaeger"},
            {},
            "--otel-exporter otlp,jaeger: unsupported traces exporter 'jaeger'; supported: "
            "otlp, console, none (a comma-separated list)",
        ),
        (
            {},
            {"OTEL_TRACES_EXPORTER": "console,none"},
            "OTEL_TRACES_EXPORTER=console,none: none turns tracing off; it takes no other exporter",
        ),
        (
            {"exporter": ","},
            {},
            "--otel-exporter ,: no exporter named; supported: otlp, console, none",
        ),
        (
            {"exporter": "console", "endpoint": "http://c:4318"},
            {},
            "--otel-endpoint http://c:4318 is an OTLP endpoint, but --otel-exporter console has "
            "no otlp exporter",
        ),
        (
            {},
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
            "OTEL_EXPORTER_OTLP_ENDPOINT=collector:4318: not a URL; expected one like "
            "http://HOST:4318",
        ),
        (
            {"endpoint": "collector"},
            {},
            "--otel-endpoint collector: not a URL; expected one like http://HOST:4318",
        ),
        (
            {},
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://c:21/x"},
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=ftp://c:21/x: expected an http:// or https:// "
            "URL with a host",
        ),
        (
            {"endpoint": "http://c:port"},
            {},
            "--otel-endpoint http://c:port: the port is not a number",
        ),
        (
            {},
            {
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                "OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317",
                "OTEL_EXPORTER_OTLP_INSECURE": "yes",
            },
            "OTEL_EXPORTER_OTLP_INSECURE=yes: expected true or false",
        ),
        (
            {},
            {"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"},
            "OTEL_EXPORTER_OTLP_TIMEOUT=10s: not an integer",
        ),
        (
            {},
            {"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "-1"},
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT=-1: must be positive",
        ),
        (
            {},
            {"OTEL_EXPORTER_OTLP_COMPRESSION": "brotli"},
            "OTEL_EXPORTER_OTLP_COMPRESSION=brotli: unsupported compression; supported: gzip, none",
        ),
        (
            {},
            {"OTEL_EXPORTER_OTLP_CERTIFICATE": "/no/such/ca.pem"},
            "OTEL_EXPORTER_OTLP_CERTIFICATE=/no/such/ca.pem: no such file",
        ),
        (
            {},
            {"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": "/no/such/key.pem"},
            "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY=/no/such/key.pem: no such file",
        ),
        ({}, {"OTEL_BSP_SCHEDULE_DELAY": "soon"}, "OTEL_BSP_SCHEDULE_DELAY=soon: not an integer"),
    ],
)
def test_bad_settings_give_errors_naming_what_was_set(
    kwargs: dict[str, str], environ: dict[str, str], message: str
) -> None:
    """Each error names the flag or variable the user set, and its value."""
    with pytest.raises(TracingConfigError) as error:
        resolve_tracing_config(environ={**BASE, **environ}, **kwargs)  # type: ignore[arg-type]
    assert str(error.value) == message


@pytest.mark.parametrize(
    ("environ", "queue", "batch"),
    [
        ({}, 32768, 512),
        ({"OTEL_BSP_MAX_QUEUE_SIZE": "100"}, 100, 100),
        ({"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "4096"}, 32768, 4096),
    ],
)
def test_span_queue_and_batch_sizes(environ: dict[str, str], queue: int, batch: int) -> None:
    config = resolve_tracing_config(environ={**BASE, **environ})
    assert config is not None
    assert (config.max_queue_size, config.max_export_batch_size) == (queue, batch)


def test_headers_are_url_decoded() -> None:
    config = resolve_tracing_config(
        environ={
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b,x=1",
        }
    )
    assert config is not None and dict(config.headers) == {"api-key": "a b", "x": "1"}


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {**BASE, "OTEL_TRACES_SAMPLER": "always_off"},
    ],
)
def test_setup_tracing_off_is_the_noop(environ: dict[str, str]) -> None:
    assert setup_tracing(environ=environ) is NOOP_TRACING


def start_up_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, dict[str, Any]]]:
    keys = (
        "exporters",
        "endpoint",
        "protocol",
        "sampler",
        "samplerRatio",
        "serviceName",
        "reason",
    )
    return [
        (r.getMessage(), {k: getattr(r, k) for k in keys if hasattr(r, k)})
        for r in caplog.records
        if r.name == "observability.tracing" and r.levelname == "INFO"
    ]


@pytest.mark.parametrize(
    ("environ", "overrides", "message", "keys"),
    [
        pytest.param(
            {},
            {},
            "Tracing is off",
            {"reason": "no OTLP endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT or --otel-endpoint"},
            id="no endpoint",
        ),
        pytest.param(
            {**BASE, "OTEL_SDK_DISABLED": "true"},
            {},
            "Tracing is off",
            {"reason": "OTEL_SDK_DISABLED=true"},
            id="SDK disabled",
        ),
        pytest.param(
            {**BASE, "OTEL_TRACES_EXPORTER": "none"},
            {},
            "Tracing is off",
            {"reason": "OTEL_TRACES_EXPORTER=none"},
            id="exporter none",
        ),
        pytest.param(
            {**BASE, "OTEL_TRACES_SAMPLER": "always_off"},
            {},
            "Tracing is off",
            {"reason": "sampler always_off"},
            id="always_off sampler",
        ),
        pytest.param(
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
            {},
            "Tracing is on",
            {
                "exporters": "otlp",
                "endpoint": "http://127.0.0.1:9/v1/traces",
                "protocol": "http/protobuf",
                "sampler": "parentbased_always_on",
                "serviceName": "aiosched",
            },
            id="defaults",
        ),
        pytest.param(
            {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"},
            {"endpoint": "http://127.0.0.1:9", "service_name": "sched-a"},
            "Tracing is on",
            {
                "exporters": "otlp",
                "endpoint": "http://127.0.0.1:9/v1/traces",
                "protocol": "http/protobuf",
                "sampler": "parentbased_traceidratio",
                "samplerRatio": 0.25,
                "serviceName": "sched-a",
            },
            id="ratio sampler and flags",
        ),
        pytest.param(
            {"OTEL_TRACES_SAMPLER": "traceidratio"},
            {"endpoint": "http://127.0.0.1:9/custom"},
            "Tracing is on",
            {
                "exporters": "otlp",
                "endpoint": "http://127.0.0.1:9/custom",
                "protocol": "http/protobuf",
                "sampler": "traceidratio",
                "samplerRatio": 1.0,
                "serviceName": "aiosched",
            },
            id="ratio defaults to 1",
        ),
        pytest.param(
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
                "OTEL_TRACES_EXPORTER": "console",
            },
            {},
            "Tracing is on",
            {
                "exporters": "console",
                "sampler": "parentbased_always_on",
                "serviceName": "aiosched",
            },
            id="console only: no endpoint",
        ),
        pytest.param(
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_TRACES_EXPORTER": "console"},
            {"endpoint": "http://127.0.0.1:9"},
            "Tracing is on",
            {
                "exporters": "otlp,console",
                "endpoint": "http://127.0.0.1:9",
                "protocol": "grpc",
                "sampler": "parentbased_always_on",
                "serviceName": "aiosched",
            },
            id="the endpoint flag adds otlp to the variable's console",
        ),
        pytest.param(
            BASE,
            {"exporter": "none"},
            "Tracing is off",
            {"reason": "--otel-exporter none"},
            id="exporter flag none",
        ),
        pytest.param(
            {"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "console"},
            {},
            "Tracing is off",
            {"reason": "OTEL_SDK_DISABLED=true"},
            id="SDK disabled, case-insensitively",
        ),
    ],
)
def test_setup_tracing_logs_one_start_up_line(
    caplog: pytest.LogCaptureFixture,
    environ: dict[str, str],
    overrides: dict[str, str],
    message: str,
    keys: dict[str, Any],
) -> None:
    caplog.set_level("INFO", logger="observability.tracing")
    tracing = setup_tracing(environ=environ, **overrides)
    try:
        assert start_up_lines(caplog) == [(message, keys)]
    finally:
        if isinstance(tracing, OtelTracing):
            tracing.provider.shutdown()  # nothing was recorded: nothing to export


def test_setup_tracing_on_returns_recording_tracing() -> None:
    tracing = setup_tracing(environ={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    try:
        assert tracing.enabled
        pod = tracing.pod_span("ns/p", "u", "ns", "p")
        assert pod.recording
    finally:
        # Nothing listens on port 9: stop without ending (so without exporting) the pod span.
        assert isinstance(tracing, OtelTracing)
        tracing.provider.shutdown()


def test_always_on_sampler_is_used() -> None:
    tracing, exporter = make_tracing(ALWAYS_ON)
    tracing.attempt(tracing.pod_span("ns/p", "u", "ns", "p"), "p", 1).end()
    assert len(exporter.get_finished_spans()) == 1


class TaggingSampler(Sampler):
    """Samples every span, and adds an attribute and trace state, as vendor samplers do."""

    def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
        state = TraceState([("vendor", "v1")])
        return SamplingResult(Decision.RECORD_AND_SAMPLE, {"sampled.by": "tagger"}, state)

    def get_description(self) -> str:
        return "TaggingSampler"


@pytest.mark.parametrize(
    ("sampler", "attribute", "trace_state"),
    [
        pytest.param(ALWAYS_ON, None, None, id="always on: decided without asking"),
        pytest.param(ParentBased(ALWAYS_ON), None, None, id="parent-based always on: same"),
        pytest.param(TaggingSampler(), "tagger", "vendor=v1", id="other samplers are asked"),
    ],
)
def test_pod_spans_carry_what_the_sampler_adds(
    sampler: Sampler, attribute: str | None, trace_state: str | None
) -> None:
    tracing, exporter = make_tracing(sampler)
    tracing.pod_span("ns/p", "u", "ns", "p").end("deleted")
    (pod,) = exporter.get_finished_spans()
    assert (pod.attributes or {}).get("sampled.by") == attribute
    assert pod.context is not None
    assert (pod.context.trace_state.to_header() or None) == trace_state


@pytest.mark.parametrize(
    ("kwargs", "environ", "exporters", "endpoint", "protocol"),
    [
        pytest.param({}, BASE, ("otlp",), TRACES, "http/protobuf", id="endpoint: otlp"),
        pytest.param(
            {},
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/prefix/"},
            ("otlp",),
            "http://c:4318/prefix/v1/traces",
            "http/protobuf",
            id="http base: /v1/traces appended to its path",
        ),
        pytest.param(
            {},
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            ("otlp",),
            "http://c:4317",
            "grpc",
            id="grpc base: as-is",
        ),
        pytest.param(
            {},
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:4317",
            },
            ("otlp",),
            "http://t:4317",
            "grpc",
            id="traces variables win over the general ones",
        ),
        pytest.param(
            {"protocol": "GRPC", "endpoint": "http://f:4317"},
            {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", **BASE},
            ("otlp",),
            "http://f:4317",
            "grpc",
            id="flags win over variables",
        ),
        pytest.param(
            {},
            {"OTEL_TRACES_EXPORTER": "otlp"},
            ("otlp",),
            "http://localhost:4318/v1/traces",
            "http/protobuf",
            id="otlp asked for, no endpoint: the specification's default",
        ),
        pytest.param(
            {"exporter": "otlp", "protocol": "grpc"},
            {},
            ("otlp",),
            "http://localhost:4317",
            "grpc",
            id="otlp flag, grpc: the specification's default",
        ),
        pytest.param(
            {},
            {"OTEL_TRACES_EXPORTER": " Console ,console"},
            ("console",),
            "",
            "http/protobuf",
            id="console, each name once, any case",
        ),
        pytest.param(
            {},
            {**BASE, "OTEL_TRACES_EXPORTER": "console"},
            ("console",),
            "",
            "http/protobuf",
            id="the exporter variable decides, not the endpoint",
        ),
        pytest.param(
            {},
            {**BASE, "OTEL_TRACES_EXPORTER": "console,otlp"},
            ("console", "otlp"),
            TRACES,
            "http/protobuf",
            id="both",
        ),
        pytest.param(
            {"endpoint": "http://f:4318"},
            {"OTEL_TRACES_EXPORTER": "none", "OTEL_SDK_DISABLED": "true"},
            ("otlp",),
            "http://f:4318/v1/traces",
            "http/protobuf",
            id="the endpoint flag wins over the variables that turn tracing off",
        ),
        pytest.param(
            {"exporter": "console"},
            {**BASE, "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
            ("console",),
            "",
            "http/protobuf",
            id="the exporter flag wins; otlp's settings are not read without otlp",
        ),
    ],
)
def test_resolve_exporters_endpoint_and_protocol(
    kwargs: dict[str, str],
    environ: dict[str, str],
    exporters: tuple[str, ...],
    endpoint: str,
    protocol: str,
) -> None:
    config = resolve_tracing_config(environ=environ, **kwargs)  # type: ignore[arg-type]
    assert config is not None
    assert (config.exporters, config.endpoint, config.protocol) == (exporters, endpoint, protocol)


@pytest.mark.parametrize(
    ("environ", "insecure"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4317"}, False),
        # the insecure variables apply only to an endpoint without a scheme (the specification)
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4317",
                "OTEL_EXPORTER_OTLP_INSECURE": "true",
            },
            False,
        ),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317", "OTEL_EXPORTER_OTLP_INSECURE": "TRUE"}, True),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317",
                "OTEL_EXPORTER_OTLP_INSECURE": "true",
                "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "false",
            },
            False,
        ),
    ],
)
def test_grpc_transport_security(environ: dict[str, str], insecure: bool) -> None:
    config = resolve_tracing_config(environ={"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", **environ})
    assert config is not None and config.insecure is insecure


def test_otlp_exporter_settings(tmp_path: Any) -> None:
    """Timeouts are milliseconds (the specification; the Python SDK reads seconds), the traces
    variables win, every file is checked, gRPC metadata keys are lower case."""
    ca, key, cert = (tmp_path / name for name in ("ca.pem", "key.pem", "cert.pem"))
    for path in (ca, key, cert):
        path.write_text("-")
    environ = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4317",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "1500",
        "OTEL_EXPORTER_OTLP_COMPRESSION": "GZIP",
        "OTEL_EXPORTER_OTLP_HEADERS": "X-Tenant=blue,Api-Key=a%20b",
        "OTEL_EXPORTER_OTLP_CERTIFICATE": str(ca),
        "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": str(key),
        "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": str(cert),
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_BSP_EXPORT_TIMEOUT": "2000",
    }
    config = resolve_tracing_config(environ=environ)
    assert config is not None
    assert config.timeout_seconds == 1.5
    assert config.compression == "gzip"
    assert dict(config.headers) == {"x-tenant": "blue", "api-key": "a b"}
    assert (config.certificate_file, config.client_key_file, config.client_certificate_file) == (
        str(ca),
        str(key),
        str(cert),
    )
    assert (config.schedule_delay_millis, config.export_timeout_millis) == (100, 2000)
    assert config.insecure is False
    defaults = resolve_tracing_config(environ=BASE)
    assert defaults is not None
    assert (defaults.timeout_seconds, defaults.compression, defaults.certificate_file) == (
        10.0,
        "none",
        None,
    )
    assert (defaults.schedule_delay_millis, defaults.export_timeout_millis) == (5000, 30000)
