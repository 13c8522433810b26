"""One workload's result: the JSON object written by --json, and the human table."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench.gang import GangPlacement
from bench.stats import (
    Checkpoint,
    Flatness,
    LatencySummary,
    ThroughputSummary,
    flatness,
    segment_size,
)
from bench.workloads import Workload


@dataclass(slots=True)
class BenchResult:
    workload: Workload
    scheduled: int = 0  # measured pods seen bound
    duration_seconds: float = 0.0  # first measured pod created -> last one seen bound
    throughput: ThroughputSummary | None = None
    throughput_samples: list[float] = field(default_factory=list)
    # measured pods bound when each throughput sample was taken
    throughput_scheduled_at: list[int] = field(default_factory=list)
    # one per second of the measurement (the first at 0 pods): CPU and RSS as pods are bound
    checkpoints: list[Checkpoint] = field(default_factory=list)
    # measured pods bound when the last one was created (None: creation did not finish)
    bound_while_creating: int | None = None
    latency: LatencySummary | None = None
    sli_latency: LatencySummary | None = None
    peak_rss_bytes: int | None = None
    scheduler_exit_code: int | None = None
    setup_seconds: float = 0.0
    scheduler_cpu_seconds: float | None = None  # used by the scheduler while measuring
    spans_exported: int | None = None  # received by the OTLP sink (--otlp-sink), init pods too
    # The scheduler's API requests per measured pod, by "VERB resource[/subresource]", as the
    # API server counted them (measured phase plus a second for late events).
    scheduler_requests_per_pod: dict[str, float] | None = None
    gangs: GangPlacement | None = None  # a gang workload's groups placed (else None)
    error: str | None = None

    @property
    def steady_seconds(self) -> float | None:
        """How long a steady-state workload kept its pods coming; None for the others."""
        dra = self.workload.dra
        return dra.steady_seconds if dra is not None and dra.steady_seconds else None

    @property
    def measured_pods(self) -> int:
        """The measured pods: the workload's count, or every pod a steady state scheduled."""
        return self.scheduled if self.steady_seconds else self.workload.measure_pods

    @property
    def rss_per_pod_bytes(self) -> float | None:
        """Peak RSS over every pod the run created (init and measured), the nodes' share too."""
        pods = self.workload.init_pods + self.measured_pods
        if self.peak_rss_bytes is None or pods <= 0:
            return None
        return self.peak_rss_bytes / pods

    def flatness(self) -> Flatness | None:
        """Per-segment CPU, throughput and RSS and the flat verdict; None before measuring."""
        if not self.checkpoints:
            return None
        return flatness(
            self.checkpoints,
            self.throughput_samples,
            self.throughput_scheduled_at,
            segment_size(self.measured_pods),
            self.bound_while_creating,
        )

    @property
    def ok(self) -> bool:
        if self.steady_seconds:  # upstream fails a steady state that scheduled nothing
            return self.error is None and self.scheduled > 0
        return self.error is None and self.scheduled == self.workload.measure_pods

    def to_json(self) -> dict[str, Any]:
        w = self.workload
        rss_per_pod = self.rss_per_pod_bytes
        flat = self.flatness()
        return {
            "workload": w.name,
            "pods_per_second": self.throughput.to_json() if self.throughput else None,
            "latency_seconds": self.latency.to_json() if self.latency else None,
            "peak_rss_bytes": self.peak_rss_bytes,
            "rss_per_pod_bytes": None if rss_per_pod is None else round(rss_per_pod),
            "nodes": w.init_nodes,
            "init_pods": w.init_pods,
            "pods": self.measured_pods,
            "scheduled": self.scheduled,
            # createPods steadyState: measure_pods kept pending for this long (else null)
            "steady_state_seconds": self.steady_seconds,
            "duration_seconds": round(self.duration_seconds, 3),
            "scheduler_requests_per_pod": self.scheduler_requests_per_pod,
            "throughput_samples": [round(s, 2) for s in self.throughput_samples],
            "latency_source": "watch: bound observed - create request sent",
            "sli_latency_seconds": self.sli_latency.to_json() if self.sli_latency else None,
            "threshold_pods_per_second": w.threshold,
            "setup_seconds": round(self.setup_seconds, 3),
            "scheduler_exit_code": self.scheduler_exit_code,
            "scheduler_cpu_seconds": (
                None if self.scheduler_cpu_seconds is None else round(self.scheduler_cpu_seconds, 2)
            ),
            "spans_exported": self.spans_exported,
            "flatness": flat.to_json() if flat is not None else None,
            "gangs": self.gangs.to_json() if self.gangs is not None else None,
            "error": self.error,
        }


def write_json(path: Path, results: list[BenchResult]) -> None:
    path.write_bytes(orjson.dumps([r.to_json() for r in results], option=orjson.OPT_INDENT_2))


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _cpu_per_pod(result: BenchResult) -> str:
    """The scheduler's CPU per measured pod while measuring, in ms."""
    if result.scheduler_cpu_seconds is None or not result.scheduled:
        return "-"
    return f"{result.scheduler_cpu_seconds / result.scheduled * 1000:.2f} ms"


def _pods_cell(result: BenchResult) -> str:
    """Measured pods seen bound of those created; a steady state's count in its duration."""
    if result.steady_seconds:
        return f"{result.scheduled} in {result.steady_seconds:g}s"
    return f"{result.scheduled}/{result.workload.measure_pods}"


def _bytes(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1024:.1f} KiB" if value >= 1024 else f"{value:.0f} B"


def _verdict(flat: Flatness | None) -> str:
    if flat is None or flat.flat is None:
        return "-"
    return "yes" if flat.flat else "NO"


def format_segments(result: BenchResult) -> str:
    """One line per segment of the measured pods (empty without two or more)."""
    flat = result.flatness()
    if flat is None or len(flat.segments) < 2:
        return ""
    rows: list[tuple[str, ...]] = [("pods", "seconds", "CPU/pod", "avg/s", "p50/s", "RSS")]
    for seg in flat.segments:
        t = seg.throughput
        rows.append(
            (
                f"{seg.first_pod}-{seg.last_pod}" + (" drain" if seg.drain else ""),
                f"{seg.seconds:.1f}",
                "-" if seg.cpu_per_pod_ms is None else f"{seg.cpu_per_pod_ms:.2f} ms",
                _num(t.average if t else None),
                _num(t.p50 if t else None),
                "-" if seg.rss_bytes is None else f"{seg.rss_bytes / 2**20:.0f} MiB",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [f"{result.workload.name}: segments"]
    for row in rows:
        cells = [
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    ratio = [
        f"CPU/pod last/first {flat.cpu_ratio:.2f}" if flat.cpu_ratio is not None else "",
        f"p50/average {flat.p50_ratio:.2f}" if flat.p50_ratio is not None else "",
    ]
    verdict = {None: "cannot tell", True: "flat", False: "NOT flat"}[flat.flat]
    lines.append(f"  {verdict} ({', '.join(r for r in ratio if r)}; within 20 % is flat)")
    if flat.drain is not None:
        lines.append("  (the drain segment, bound after the last pod was created, is not judged)")
    return "\n".join(lines)


def format_table(results: list[BenchResult]) -> str:
    header = (
        "workload",
        "pods",
        "avg/s",
        "p50/s",
        "p90/s",
        "p99/s",
        "lat p50",
        "lat p90",
        "lat p99",
        "peak RSS",
        "CPU/pod",
        "RSS/pod",
        "flat",
        "status",
    )
    rows: list[tuple[str, ...]] = [header]
    for r in results:
        t, lat = r.throughput, r.latency
        rss = "-" if r.peak_rss_bytes is None else f"{r.peak_rss_bytes / 2**20:.0f} MiB"
        rows.append(
            (
                r.workload.name,
                _pods_cell(r),
                _num(t.average if t else None),
                _num(t.p50 if t else None),
                _num(t.p90 if t else None),
                _num(t.p99 if t else None),
                _num(lat.p50 if lat else None, 3),
                _num(lat.p90 if lat else None, 3),
                _num(lat.p99 if lat else None, 3),
                rss,
                _cpu_per_pod(r),
                _bytes(r.rss_per_pod_bytes),
                _verdict(r.flatness()),
                "ok" if r.ok else f"FAILED: {r.error or 'incomplete'}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for row in rows:
        last = len(row) - 1
        cells = [
            cell.ljust(width) if i in (0, last) else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    segments = [text for text in (format_segments(r) for r in results) if text]
    gangs = format_gangs(results)
    return "\n".join(
        [*lines, *("\n" + text for text in segments), *(["\n" + gangs] if gangs else [])]
    )


def format_gangs(results: list[BenchResult]) -> str:
    """One line per gang workload: groups placed, groups/s and time to full placement."""
    rows: list[tuple[str, ...]] = [
        ("gang workload", "groups", "groups/s", "place p50", "place p90", "place p99")
    ]
    for r in results:
        g = r.gangs
        if g is None:
            continue
        t = g.time_to_placement
        rows.append(
            (
                r.workload.name,
                f"{g.placed}/{g.groups}",
                _num(g.groups_per_second, 2),
                _num(t.p50 if t else None, 3),
                _num(t.p90 if t else None, 3),
                _num(t.p99 if t else None, 3),
            )
        )
    if len(rows) < 2:
        return ""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    )
