"""One workload's result: the JSON object written by --json, and the human table."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench.gang import GangPlacement
from bench.proctree import ProcessCpu
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
    # used by the scheduler's process tree (its PID and descendants) while measuring
    scheduler_cpu_seconds: float | None = None
    # each process of that tree, the critical path (the scheduler's PID) first
    processes: list[ProcessCpu] = field(default_factory=list)
    # the KubeSchedulerConfiguration parallelism the bench set (None: the scheduler's default)
    parallelism: int | None = None
    spans_exported: int | None = None  # received by the OTLP sink (--otlp-sink), init pods too
    # The scheduler's API requests per measured pod, by "VERB resource[/subresource]", as the
    # API server counted them (measured phase plus a second for late events).
    scheduler_requests_per_pod: dict[str, float] | None = None
    gangs: GangPlacement | None = None  # a gang workload's groups placed (else None)
    error: str | None = None
    # which scheduler ran: "aiosched", or a name for --scheduler-command's (bench/cli.py)
    scheduler: str = "aiosched"
    # the latencies at every percent, 0 to 100 (bench.stats.quantiles): a CDF for plots
    latency_quantiles: list[float] = field(default_factory=list)
    # bench.calibrate.Calibration.to_json() of the machine that ran it
    machine: dict[str, object] | None = None

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

    @property
    def critical_path_cpu_seconds(self) -> float | None:
        """CPU of the process running scheduling cycles (the scheduler's PID) while measuring."""
        return next((p.cpu_seconds for p in self.processes if p.critical_path), None)

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
            "scheduler": self.scheduler,
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
            # per process of the scheduler's tree; the critical path runs scheduling cycles
            "scheduler_processes": [p.to_json(self.scheduled) for p in self.processes],
            "critical_path_cpu_seconds": _rounded(self.critical_path_cpu_seconds, 3),
            "critical_path_cpu_per_pod_ms": _per_pod_ms(
                self.critical_path_cpu_seconds, self.scheduled
            ),
            "scheduler_cpu_per_pod_ms": _per_pod_ms(self.scheduler_cpu_seconds, self.scheduled),
            "parallelism": self.parallelism,
            "spans_exported": self.spans_exported,
            "flatness": flat.to_json() if flat is not None else None,
            "latency_quantiles_seconds": [round(q, 6) for q in self.latency_quantiles],
            "machine": self.machine,
            "gangs": self.gangs.to_json() if self.gangs is not None else None,
            "error": self.error,
        }


def write_json(path: Path, results: list[BenchResult]) -> None:
    path.write_bytes(orjson.dumps([r.to_json() for r in results], option=orjson.OPT_INDENT_2))


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _per_pod_ms(seconds: float | None, pods: int) -> float | None:
    return None if seconds is None or not pods else round(seconds / pods * 1000, 4)


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f}"


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value / 2**20:.0f}"


def _cpu_per_pod(result: BenchResult, seconds: float | None) -> str:
    """CPU seconds per measured pod while measuring, in ms."""
    return _num(_per_pod_ms(seconds, result.scheduled), 2)


def _pods_cell(result: BenchResult) -> str:
    """Measured pods seen bound of those created; a steady state's count in its duration."""
    if result.steady_seconds:
        return f"{result.scheduled} in {result.steady_seconds:g}s"
    return f"{result.scheduled}/{result.workload.measure_pods}"


def _kib(value: float | None) -> str:
    return "-" if value is None else f"{value / 1024:.1f}"


def _verdict(flat: Flatness | None) -> str:
    if flat is None or flat.flat is None:
        return "-"
    return "yes" if flat.flat else "NO"


def _render(rows: list[tuple[str, ...]], left: tuple[int, ...], indent: str = "") -> list[str]:
    """Rows as aligned columns: those in `left` left-aligned, the numbers right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [
            cell.ljust(width) if i in left else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append(indent + "  ".join(cells).rstrip())
    return lines


def format_segments(result: BenchResult) -> str:
    """One line per segment of the measured pods (empty without two or more)."""
    flat = result.flatness()
    if flat is None or len(flat.segments) < 2:
        return ""
    rows: list[tuple[str, ...]] = [
        ("pods", "time", "CPU/pod", "avg", "p50", "RSS"),
        ("", "s", "ms", "pods/s", "pods/s", "MiB"),  # the units
    ]
    for seg in flat.segments:
        t = seg.throughput
        rows.append(
            (
                f"{seg.first_pod}-{seg.last_pod}" + (" drain" if seg.drain else ""),
                f"{seg.seconds:.1f}",
                _num(seg.cpu_per_pod_ms, 2),
                _num(t.average if t else None),
                _num(t.p50 if t else None),
                _mib(seg.rss_bytes),
            )
        )
    lines = [f"{result.workload.name}: segments", *_render(rows, (0,), "  ")]
    ratio = [
        f"CPU/pod last/first {flat.cpu_ratio:.2f}" if flat.cpu_ratio is not None else "",
        f"p50/average {flat.p50_ratio:.2f}" if flat.p50_ratio is not None else "",
    ]
    if flat.flat is None:
        lines.append(f"  cannot tell: {flat.undecided_reason}")
    else:
        verdict = "flat" if flat.flat else "NOT flat"
        lines.append(f"  {verdict} ({', '.join(r for r in ratio if r)}; within 20 % is flat)")
    if flat.drain is not None:
        lines.append("  (the drain segment, bound after the last pod was created, is not judged)")
    return "\n".join(lines)


def run_name(result: BenchResult) -> str:
    """The workload's name, and the parallelism a --parallelism sweep set for this run."""
    if result.parallelism is None:
        return result.workload.name
    return f"{result.workload.name} (parallelism {result.parallelism})"


def format_processes(result: BenchResult) -> str:
    """One line per process of the scheduler's tree: its CPU while measuring and per pod; the
    critical path (the process running scheduling cycles) marked, then the total."""
    if not result.processes:
        return ""
    rows: list[tuple[str, ...]] = [
        ("pid", "process", "CPU", "CPU/pod", ""),
        ("", "", "s", "ms", ""),
    ]
    for p in result.processes:
        rows.append(
            (
                str(p.pid),
                p.name,
                _num(p.cpu_seconds, 2),
                _cpu_per_pod(result, p.cpu_seconds),
                "critical path" if p.critical_path else "",
            )
        )
    total = result.scheduler_cpu_seconds
    rows.append(("", "total", _num(total, 2), _cpu_per_pod(result, total), ""))
    title = f"{run_name(result)}: CPU per process of the scheduler"
    return "\n".join([title, *_render(rows, (0, 1, 4), "  ")])


# The table's columns, and the unit of each (its second header line).
TABLE_HEADER = (
    ("workload", ""),
    ("pods", "bound"),
    ("avg", "pods/s"),
    ("p50", "pods/s"),
    ("p90", "pods/s"),
    ("p99", "pods/s"),
    ("lat p50", "ms"),
    ("lat p90", "ms"),
    ("lat p99", "ms"),
    ("time", "s"),
    ("peak RSS", "MiB"),
    ("CPU/pod", "ms"),
    ("crit/pod", "ms"),
    ("RSS/pod", "KiB"),
    ("flat", ""),
    ("status", ""),
)


def format_table(results: list[BenchResult]) -> str:
    """The results as columns under a header line and a line of units; then the segments."""
    rows: list[tuple[str, ...]] = [
        tuple(name for name, _ in TABLE_HEADER),
        tuple(unit for _, unit in TABLE_HEADER),
    ]
    for r in results:
        t, lat = r.throughput, r.latency
        rows.append(
            (
                run_name(r),
                _pods_cell(r),
                _num(t.average if t else None),
                _num(t.p50 if t else None),
                _num(t.p90 if t else None),
                _num(t.p99 if t else None),
                _ms(lat.p50 if lat else None),
                _ms(lat.p90 if lat else None),
                _ms(lat.p99 if lat else None),
                _num(r.duration_seconds if r.scheduled else None),
                _mib(r.peak_rss_bytes),
                _cpu_per_pod(r, r.scheduler_cpu_seconds),
                _cpu_per_pod(r, r.critical_path_cpu_seconds),
                _kib(r.rss_per_pod_bytes),
                _verdict(r.flatness()),
                "ok" if r.ok else f"FAILED: {r.error or 'incomplete'}",
            )
        )
    lines = _render(rows, (0, len(TABLE_HEADER) - 1))
    lines += [
        f"{r.workload.name}: bound its pods in {r.duration_seconds:.1f} s, too short for "
        "per-second throughput samples: pods/s is the overall rate, with no percentiles "
        "(a workload with more pods measures them)"
        for r in results
        if r.throughput is not None and not r.throughput.sampled
    ]
    processes = [text for text in (format_processes(r) for r in results) if text]
    segments = [text for text in (format_segments(r) for r in results) if text]
    gangs = format_gangs(results)
    return "\n".join(
        [
            *lines,
            *("\n" + text for text in processes),
            *("\n" + text for text in segments),
            *(["\n" + gangs] if gangs else []),
        ]
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
