"""The trace export process (`aiosched-trace-export`): spans handed to it reach an OTLP/HTTP
receiver as the in-process exporter would send them; killed, it is replaced; at shutdown it
exports what is queued; if it cannot start, spans are exported from the scheduling process."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, TraceFlags
from otlp_receiver import OtlpReceiver, ReceivedSpan
from processes import (
    Kubectl,
    Process,
    children_named,
    node_manifest,
    pod_manifest,
    start_cluster,
    start_scheduler,
    started,
    wait_until,
)

from observability.spans import AttemptLog, AttemptWithPoints
from observability.tracing import export_processor
from observability.tracing.config import TracingConfig
from observability.tracing.export_frames import EXPORT_PROCESS_NAME
from observability.tracing.export_processor import ExportProcessSpanProcessor
from scheduler.framework.status import Status as FrameworkStatus

RESOURCE = Resource({"service.name": "aiosched"})
SCOPE = InstrumentationScope("aiosched")
SAMPLED = TraceFlags(TraceFlags.SAMPLED)
WALL = 1_700_000_000_000_000_000


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    started = OtlpReceiver().start()
    yield started
    started.stop()


def config_for(receiver: OtlpReceiver, delay_ms: int = 50) -> TracingConfig:
    return TracingConfig(
        endpoint=f"{receiver.endpoint}/v1/traces",
        exporters=("otlp",),
        schedule_delay_millis=delay_ms,
        export_timeout_millis=5_000,
    )


def attempt(trace_id: int, rejected: bool = False) -> ReadableSpan:
    log = AttemptLog(keep_empty_points=False)
    log.set_clock(10.0, WALL)
    status = FrameworkStatus.unschedulable("node(s) didn't fit") if rejected else FrameworkStatus.OK
    log.entries.extend(
        [
            ("Filter", "NodeResourcesFit", status, 0.0002, 10.001),
            ("Filter", None, status, 10.0, 10.002),
        ]
    )
    return AttemptWithPoints(
        "SchedulingAttempt",
        context=SpanContext(trace_id, 0x40, False, SAMPLED),
        parent=SpanContext(trace_id, 0x30, False, SAMPLED),
        resource=RESOURCE,
        instrumentation_scope=SCOPE,
        start_time=WALL,
        end_time=WALL + 5_000_000,
        attributes={"aiosched.attempt": 1, "k8s.pod.name": f"pod-{trace_id}"},
        log=log,
        span_id_base=0x1000 * trace_id,
    )


def received_of(receiver: OtlpReceiver, trace_id: int) -> list[ReceivedSpan]:
    return [s for s in receiver.snapshot() if s.trace_id == f"{trace_id:032x}"]


def all_threads_gone(pid: int) -> bool:
    """A zombie whose every thread has exited: its sockets are closed. (Its main thread turns
    zombie before the others finish, and until they do its end of the socket is still open.)"""
    proc = Path(f"/proc/{pid}")
    state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
    return state == "Z" and len(list((proc / "task").iterdir())) == 1


def test_spans_reach_the_receiver_from_a_named_process(receiver: OtlpReceiver) -> None:
    processor = ExportProcessSpanProcessor(config_for(receiver))
    try:
        processor.on_end(attempt(1))
        processor.on_end(attempt(2, rejected=True))
        assert processor.force_flush(30_000)
        pid = processor.pid
        assert pid is not None and pid != os.getpid()
        shown = Path(f"/proc/{pid}/cmdline").read_bytes() + Path(f"/proc/{pid}/comm").read_bytes()
        assert EXPORT_PROCESS_NAME[:15].encode() in shown
    finally:
        processor.shutdown()
    first, second = received_of(receiver, 1), received_of(receiver, 2)
    # the attempt and its Filter point, as the exporter in this process writes them
    assert sorted(s.name for s in first) == ["Filter", "SchedulingAttempt"]
    filter_point = next(s for s in second if s.name == "Filter")
    assert filter_point.attributes["aiosched.status"] == "Unschedulable"
    assert filter_point.status_code == 2
    assert (
        "plugin",
        {
            "aiosched.plugin": "NodeResourcesFit",
            "aiosched.status": "Unschedulable",
            "aiosched.duration_ms": pytest.approx(0.2),
        },
    ) in filter_point.events
    assert wait_until(lambda: not Path(f"/proc/{pid}").exists(), what="its exit")


def test_a_killed_export_process_is_replaced(receiver: OtlpReceiver) -> None:
    processor = ExportProcessSpanProcessor(config_for(receiver))
    try:
        processor.on_end(attempt(3))
        assert processor.force_flush(30_000)
        first_pid = processor.pid
        assert first_pid is not None
        os.kill(first_pid, signal.SIGKILL)
        assert wait_until(lambda: all_threads_gone(first_pid), what="its exit")
        processor.on_end(attempt(4))
        assert processor.force_flush(30_000)
        assert processor.pid not in (None, first_pid)
        assert processor.restarts == 1
    finally:
        processor.shutdown()
    assert received_of(receiver, 3) and received_of(receiver, 4)


def test_a_span_that_cannot_cross_is_dropped_alone(receiver: OtlpReceiver) -> None:
    processor = ExportProcessSpanProcessor(config_for(receiver))
    broken = attempt(40)
    broken._attributes = {"lock": threading.Lock()}  # no type an attribute may have
    try:
        processor.on_end(broken)
        processor.on_end(attempt(41))
        assert processor.force_flush(30_000)
    finally:
        processor.shutdown()
    assert not received_of(receiver, 40) and received_of(receiver, 41)


def test_shutdown_exports_what_is_queued(receiver: OtlpReceiver) -> None:
    processor = ExportProcessSpanProcessor(config_for(receiver, delay_ms=60_000))
    for trace_id in range(10, 20):
        processor.on_end(attempt(trace_id))
    processor.shutdown()
    assert all(received_of(receiver, trace_id) for trace_id in range(10, 20))
    processor.on_end(attempt(21))  # after shutdown: ignored, as the SDK's processor does
    assert not processor.force_flush(1_000)


def test_spans_are_exported_here_when_the_process_cannot_start(
    receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export_processor, "MAX_START_FAILURES", 2)
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    processor = ExportProcessSpanProcessor(config_for(receiver))
    try:
        processor.on_end(attempt(30))
        assert processor.force_flush(30_000)
        assert processor.pid is None
    finally:
        processor.shutdown()
    assert received_of(receiver, 30)


SCHEDULER_CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""


def export_children(scheduler: Process) -> list[int]:
    """The scheduler's live children named aiosched-trace-export (ps shows 15 characters)."""
    return list(children_named(scheduler, "aiosched-trace"))


@pytest.mark.e2e
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_aiosched_run_exports_from_its_own_process_and_survives_its_kill(
    tmp_path: Path, receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    kubectl = Kubectl(tmp_path)
    scheduler_args = (SCHEDULER_CONFIG, "--trace-export-process")
    with started(
        partial(start_cluster, tmp_path), partial(start_scheduler, tmp_path, *scheduler_args)
    ) as (_, scheduler):
        kubectl.apply(node_manifest("n1", "4"))

        def bound_and_traced(pod: str) -> None:
            kubectl.apply(pod_manifest(pod, "100m"))
            wait_until(lambda: kubectl.json("pod", pod)["spec"].get("nodeName"), what="bound")
            receiver.wait_for(
                lambda spans: [s for s in spans if s.attributes.get("k8s.pod.name") == pod],
                what=f"{pod}'s spans",
            )

        bound_and_traced("before")
        (exporter,) = wait_until(lambda: export_children(scheduler), what="the exporter")
        os.kill(exporter, signal.SIGKILL)
        wait_until(lambda: exporter not in export_children(scheduler), what="its death")
        bound_and_traced("after")
        assert scheduler.proc.poll() is None
        assert len(export_children(scheduler)) == 1  # its replacement
