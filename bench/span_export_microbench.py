"""What exporting a traced attempt costs each process: the scheduling process with the export
thread (OTLP encoding) or with the trace export process (the batch reduced to tuples and
pickled), and the export process (the batch rebuilt and encoded).

    python -m bench.span_export_microbench [--attempts 512] [--entries 30] [--rounds 20]

An attempt here is what the scheduling loop hands the span processor for one traced pod: the
attempt span with its AttemptLog of ``--entries`` entries (a plugin call or an extension
point's end each; the default profile's SchedulingBasic pod has about 30) and framework
statuses, plus its pod span. CPU is this process's (time.process_time), per attempt.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

from observability.otlp_encoding import SpanEncoder
from observability.spans import AttemptLog, AttemptWithPoints
from observability.tracing import span_wire
from scheduler.framework.status import Status as FrameworkStatus

POINTS = ("PreFilter", "Filter", "PreScore", "Score", "NormalizeScore", "Reserve", "Permit")
PLUGINS = ("NodeResourcesFit", "TaintToleration", "NodeAffinity", "PodTopologySpread")
SAMPLED = TraceFlags(TraceFlags.SAMPLED)
WALL = 1_700_000_000_000_000_000


def batch(attempts: int, entries: int) -> list[ReadableSpan]:
    """``attempts`` pods' spans: each a pod span and an attempt carrying its log."""
    resource = Resource({"service.name": "aiosched", "telemetry.sdk.language": "python"})
    scope = InstrumentationScope("aiosched")
    rejected = FrameworkStatus.unschedulable("node(s) had untolerated taint(s)")
    spans: list[ReadableSpan] = []
    for index in range(attempts):
        trace_id = index + 1
        log = AttemptLog(keep_empty_points=False)
        log.set_clock(10.0, WALL)
        clock = 10.0
        while len(log.entries) < entries:
            point = POINTS[len(log.entries) % len(POINTS)]
            for plugin in PLUGINS[: max(1, min(len(PLUGINS), entries - len(log.entries) - 1))]:
                status = rejected if plugin == "TaintToleration" and index % 7 == 0 else None
                clock += 0.00005
                log.entries.append((point, plugin, status or FrameworkStatus.OK, 0.00005, clock))
            log.entries.append((point, None, FrameworkStatus.OK, clock - 0.0002, clock))
        pod = {"k8s.pod.name": f"pod-{index}", "k8s.namespace.name": "default"}
        common: dict[str, Any] = {
            "resource": resource,
            "instrumentation_scope": scope,
            "start_time": WALL,
            "end_time": WALL + 2_000_000,
        }
        spans.append(
            ReadableSpan(
                "PodScheduling",
                context=SpanContext(trace_id, 1, False, SAMPLED),
                attributes={**pod, "aiosched.outcome": "bound", "k8s.node.name": "node-3"},
                **common,
            )
        )
        spans.append(
            AttemptWithPoints(
                "SchedulingAttempt",
                context=SpanContext(trace_id, 2, False, SAMPLED),
                parent=SpanContext(trace_id, 1, False, SAMPLED),
                attributes={**pod, "aiosched.attempt": 1, "aiosched.result": "scheduled"},
                status=Status(StatusCode.OK),
                log=log,
                span_id_base=0x100 * trace_id,
                **common,
            )
        )
    return spans


def _cpu_per_attempt(work: Callable[[], object], rounds: int, attempts: int) -> float:
    start = time.process_time()
    for _ in range(rounds):
        work()
    return (time.process_time() - start) / rounds / attempts * 1e6


def measure(attempts: int, entries: int, rounds: int) -> dict[str, Any]:
    spans = batch(attempts, entries)
    encoder = SpanEncoder()
    blob = span_wire.dumps(spans)
    receiving = SpanEncoder()
    return {
        "attempts": attempts,
        "entries": entries,
        "thread_encode_us": _cpu_per_attempt(lambda: encoder.request(spans), rounds, attempts),
        "process_handoff_us": _cpu_per_attempt(lambda: span_wire.dumps(spans), rounds, attempts),
        "export_process_us": _cpu_per_attempt(
            lambda: receiving.request(span_wire.loads(blob)), rounds, attempts
        ),
        "handoff_bytes_per_attempt": len(blob) // attempts,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=512, help="pods per batch (default 512)")
    parser.add_argument("--entries", type=int, default=30, help="log entries per attempt")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    args = parser.parse_args(argv)
    result = measure(args.attempts, args.entries, args.rounds)
    if args.json:
        print(json.dumps(result))
        return
    print(f"{args.attempts} traced pods, {args.entries} log entries each; CPU per pod:")
    rows = (
        ("scheduling process, export thread (OTLP encoding)", result["thread_encode_us"]),
        ("scheduling process, export process (hand-off)", result["process_handoff_us"]),
        ("export process (rebuild and encode)", result["export_process_us"]),
    )
    for what, micros in rows:
        print(f"  {what:52s}{micros:6.1f} µs")
    print(f"  hand-off size: {result['handoff_bytes_per_attempt']} bytes per pod")


if __name__ == "__main__":
    main()
