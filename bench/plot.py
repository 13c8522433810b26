"""`aiosched bench --plot FILE`: throughput over time and the latency distribution, as SVG.

One row per workload, two panels: the per-second throughput samples (pods/s against seconds
since the first pod was bound, as upstream's collector samples them) and the latency CDF (the
share of measured pods seen bound within a latency, from the JSON's
latency_quantiles_seconds). Results of several runs of the same workload (this run and
`--compare` files, e.g. a `--scheduler-command` run of kube-scheduler) are drawn on the same
axes, one colour per scheduler, so two schedulers are read side by side.

The SVG is written by hand, not by matplotlib: two line charts do not justify a plotting
library (and numpy, Pillow) in the scheduler's environment, the output is the same on every
machine, any browser shows it, and a test can parse it as XML. For a PNG, convert it
(`rsvg-convert -o out.png out.svg`, Inkscape, or a browser's screenshot).

Runs of a `--parallelism` sweep add a row per workload: the average pods/s against the
parallelism, and CPU per pod (the scheduler's process tree and its critical path) against it.

It reads the JSON objects `--json` writes (BenchResult.to_json), so saved results plot as well
as live ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

#: The throughput panel's text for a run that bound its pods before a second sample.
TOO_SHORT = "too short for per-second samples: the table's pods/s is the overall rate"

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
WIDTH = 1000
ROW_HEIGHT = 360
PANEL_WIDTH = 400
PANEL_HEIGHT = 220
MARGIN_LEFT = 70  # room for the y tick labels and the axis title
PANEL_GAP = 90
TOP = 64  # a row's title and legend above its panels
LOG_SPAN = 50.0  # a latency axis is logarithmic when max/min exceeds this


class PlotError(ValueError):
    """The plot cannot be written as asked (a file name that is not .svg)."""


@dataclass(frozen=True, slots=True)
class Series:
    label: str  # the scheduler
    throughput: list[float]  # pods/s, one per second
    latency_quantiles: list[float]  # seconds, at every percent 0..100
    # the run bound its pods before a second sample: its pods/s is the overall rate alone
    too_short: bool = False


@dataclass(frozen=True, slots=True)
class Axis:
    low: float
    high: float
    log: bool = False

    def fraction(self, value: float) -> float:
        if self.log:
            value = max(value, self.low)
            return (math.log10(value) - math.log10(self.low)) / (
                math.log10(self.high) - math.log10(self.low)
            )
        return (value - self.low) / (self.high - self.low)

    def ticks(self) -> list[float]:
        if self.log:
            first = math.floor(math.log10(self.low))
            last = math.ceil(math.log10(self.high))
            return [10.0**e for e in range(first, last + 1) if self.low <= 10.0**e <= self.high]
        return nice_ticks(self.low, self.high)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About `count` round tick values from `low` to `high`."""
    if high <= low:
        return [low]
    step = _step(high - low, count)
    ticks = []
    value = math.ceil(low / step) * step
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _step(span: float, count: int) -> float:
    """The round step (1, 2 or 5 times a power of ten) cutting `span` into about `count`."""
    raw = span / count
    magnitude = 10.0 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw * (1 - 1e-9))


def nice_ceiling(value: float, count: int = 5) -> float:
    """`value` rounded up to a whole number of round steps: an axis's end."""
    if value <= 0:
        return 1.0
    step = _step(value, count)
    return round(math.ceil(value / step - 1e-9) * step, 10)


def _label(value: float) -> str:
    if value >= 1000 and value == int(value):
        return f"{value:,.0f}"
    return f"{value:g}"


def series_from_results(results: Sequence[Mapping[str, Any]]) -> dict[str, list[Series]]:
    """The results (to_json objects) by workload, in first-seen order, one series each."""
    by_workload: dict[str, list[Series]] = {}
    for doc in results:
        workload = str(doc.get("workload", "?"))
        series = by_workload.setdefault(workload, [])
        label = str(doc.get("scheduler") or "aiosched")
        if doc.get("parallelism") is not None:  # a --parallelism sweep's run
            label += f" parallelism {doc['parallelism']}"
        taken = {s.label for s in series}
        if label in taken:  # two runs of one scheduler: number them
            label = next(
                f"{label} #{n}" for n in range(2, len(series) + 3) if f"{label} #{n}" not in taken
            )
        series.append(
            Series(
                label,
                [float(v) for v in doc.get("throughput_samples") or []],
                [float(v) for v in doc.get("latency_quantiles_seconds") or []],
                too_short=bool((doc.get("pods_per_second") or {}).get("source")),
            )
        )
    return by_workload


class _Svg:
    def __init__(self, width: int, height: int, title: str) -> None:
        self.parts = [
            '<?xml version="1.0" encoding="UTF-8"?>',
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
            f"<title>{escape(title)}</title>",
            f'<rect width="{width}" height="{height}" fill="white"/>',
        ]

    def text(self, x: float, y: float, content: str, **attrs: str) -> None:
        extra = "".join(f" {k.replace('_', '-')}={quoteattr(v)}" for k, v in attrs.items())
        self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}"{extra}>{escape(content)}</text>')

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str, **attrs: str) -> None:
        extra = "".join(f" {k.replace('_', '-')}={quoteattr(v)}" for k, v in attrs.items())
        self.parts.append(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
            f'stroke="{stroke}"{extra}/>'
        )

    def polyline(self, points: list[tuple[float, float]], colour: str, label: str) -> None:
        coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        self.parts.append(
            f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="1.8" '
            f'stroke-linejoin="round"><title>{escape(label)}</title></polyline>'
        )

    def done(self) -> str:
        return "\n".join([*self.parts, "</svg>", ""])


def _panel(
    svg: _Svg,
    left: float,
    top: float,
    title: str,
    x_axis: Axis,
    y_axis: Axis,
    x_title: str,
    y_title: str,
    lines: list[tuple[Series, int, list[tuple[float, float]]]],
    empty: str = "no samples",
) -> None:
    """Axes, grid, ticks and one polyline per series; data points are in axis units; `empty`
    is said in the middle when there is no line."""

    def px(x: float) -> float:
        return left + x_axis.fraction(x) * PANEL_WIDTH

    def py(y: float) -> float:
        return top + PANEL_HEIGHT - y_axis.fraction(y) * PANEL_HEIGHT

    svg.text(left + PANEL_WIDTH / 2, top - 10, title, text_anchor="middle", font_weight="bold")
    for tick in x_axis.ticks():
        svg.line(px(tick), top, px(tick), top + PANEL_HEIGHT, "#e5e5e5")
        svg.text(px(tick), top + PANEL_HEIGHT + 16, _label(tick), text_anchor="middle")
    for tick in y_axis.ticks():
        svg.line(left, py(tick), left + PANEL_WIDTH, py(tick), "#e5e5e5")
        svg.text(left - 6, py(tick) + 4, _label(tick), text_anchor="end")
    svg.line(left, top + PANEL_HEIGHT, left + PANEL_WIDTH, top + PANEL_HEIGHT, "#333")
    svg.line(left, top, left, top + PANEL_HEIGHT, "#333")
    svg.text(left + PANEL_WIDTH / 2, top + PANEL_HEIGHT + 34, x_title, text_anchor="middle")
    mid = top + PANEL_HEIGHT / 2
    svg.text(
        left - 48, mid, y_title, text_anchor="middle", transform=f"rotate(-90 {left - 48} {mid})"
    )
    if not lines:
        svg.text(left + PANEL_WIDTH / 2, mid, empty, text_anchor="middle", fill="#888")
    for series, index, points in lines:
        colour = COLOURS[index % len(COLOURS)]
        svg.polyline([(px(x), py(y)) for x, y in points], colour, series.label)


def _throughput_panel(svg: _Svg, left: float, top: float, series: list[Series]) -> None:
    lines = []
    for index, s in enumerate(series):
        if s.throughput:
            # sample i covers second i..i+1 after the first bound pod: a step per second
            points = [(float(i + t), v) for i, v in enumerate(s.throughput) for t in (0, 1)]
            lines.append((s, index, points))
    seconds = max((len(s.throughput) for s in series), default=0)
    peak = max((max(s.throughput) for s in series if s.throughput), default=0.0)
    _panel(
        svg,
        left,
        top,
        "throughput over time",
        Axis(0.0, nice_ceiling(max(seconds, 1))),
        Axis(0.0, nice_ceiling(peak * 1.05)),
        "seconds since the first pod was bound",
        "pods/s",
        lines,
        empty=TOO_SHORT if any(s.too_short for s in series) else "no samples",
    )


def _latency_panel(svg: _Svg, left: float, top: float, series: list[Series]) -> None:
    lines = []
    values_ms = [q * 1000 for s in series for q in s.latency_quantiles]
    positive = [v for v in values_ms if v > 0]
    low, high = (min(positive), max(positive)) if positive else (1.0, 10.0)
    log = high / low > LOG_SPAN
    if log:
        x_axis = Axis(10 ** math.floor(math.log10(low)), 10 ** math.ceil(math.log10(high)), True)
    else:
        x_axis = Axis(0.0, nice_ceiling(high * 1.05))
    for index, s in enumerate(series):
        q = s.latency_quantiles
        if len(q) >= 2:
            # quantile i of n is the latency under which i/(n-1) of the pods were bound
            points = [(v * 1000, 100.0 * i / (len(q) - 1)) for i, v in enumerate(q)]
            lines.append((s, index, points))
    _panel(
        svg,
        left,
        top,
        "latency distribution (CDF)",
        x_axis,
        Axis(0.0, 100.0),
        "ms from create to bound" + (" (log scale)" if log else ""),
        "% of pods",
        lines,
    )


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """One run of a --parallelism sweep."""

    parallelism: int
    pods_per_second: float | None  # the average of the 1 s samples
    cpu_per_pod_ms: float | None  # the scheduler's process tree
    critical_path_cpu_per_pod_ms: float | None  # the process running scheduling cycles


def sweeps_from_results(
    results: Sequence[Mapping[str, Any]],
) -> dict[str, dict[str, list[SweepPoint]]]:
    """Runs with a parallelism, by workload then scheduler, in parallelism order."""
    sweeps: dict[str, dict[str, list[SweepPoint]]] = {}
    for doc in results:
        parallelism = doc.get("parallelism")
        if not isinstance(parallelism, int):
            continue
        throughput = doc.get("pods_per_second") or {}
        point = SweepPoint(
            parallelism,
            _number(throughput.get("average")),
            _number(doc.get("scheduler_cpu_per_pod_ms")),
            _number(doc.get("critical_path_cpu_per_pod_ms")),
        )
        by_scheduler = sweeps.setdefault(str(doc.get("workload", "?")), {})
        by_scheduler.setdefault(str(doc.get("scheduler") or "aiosched"), []).append(point)
    for by_scheduler in sweeps.values():
        for points in by_scheduler.values():
            points.sort(key=lambda p: p.parallelism)
    return sweeps


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _sweep_row(
    svg: _Svg, top: float, workload: str, by_scheduler: dict[str, list[SweepPoint]]
) -> None:
    """pods/s against parallelism, and CPU per pod (total and critical path) against it."""
    svg.text(16, top, f"{workload}: parallelism sweep", font_size="15", font_weight="bold")
    most = max(p.parallelism for points in by_scheduler.values() for p in points)
    x_axis = Axis(0.0, nice_ceiling(max(most, 1)))
    rate_lines: list[tuple[Series, int, list[tuple[float, float]]]] = []
    cpu_lines: list[tuple[Series, int, list[tuple[float, float]]]] = []
    for index, (scheduler, points) in enumerate(by_scheduler.items()):
        rate = [(float(p.parallelism), p.pods_per_second) for p in points]
        total = [(float(p.parallelism), p.cpu_per_pod_ms) for p in points]
        critical = [(float(p.parallelism), p.critical_path_cpu_per_pod_ms) for p in points]
        for lines, label, data, colour_index in (
            (rate_lines, scheduler, rate, index),
            (cpu_lines, f"{scheduler} total", total, 2 * index),
            (cpu_lines, f"{scheduler} critical path", critical, 2 * index + 1),
        ):
            known = [(x, y) for x, y in data if y is not None]
            if known:
                lines.append((Series(label, [], []), colour_index, known))
    rate_peak = max((y for _, _, pts in rate_lines for _, y in pts), default=0.0)
    cpu_peak = max((y for _, _, pts in cpu_lines for _, y in pts), default=0.0)
    _panel(
        svg, MARGIN_LEFT, top + TOP, "pods/s against parallelism", x_axis,
        Axis(0.0, nice_ceiling(rate_peak * 1.05)), "parallelism", "pods/s (average)", rate_lines,
    )  # fmt: skip
    _panel(
        svg, MARGIN_LEFT + PANEL_WIDTH + PANEL_GAP, top + TOP, "CPU per pod against parallelism",
        x_axis, Axis(0.0, nice_ceiling(cpu_peak * 1.05)), "parallelism", "ms", cpu_lines,
    )  # fmt: skip
    x, legend = 16.0, top + 22
    for series, colour_index, _points in cpu_lines:
        colour = COLOURS[colour_index % len(COLOURS)]
        svg.line(x, legend - 4, x + 22, legend - 4, colour, stroke_width="3")
        svg.text(x + 28, legend, series.label)
        x += 28 + len(series.label) * 7 + 24


def render_svg(results: Sequence[Mapping[str, Any]], title: str = "aiosched bench") -> str:
    """The figure for these results (to_json objects), as an SVG document: per workload its
    throughput and latency, and for a --parallelism sweep a row against parallelism."""
    workloads = series_from_results(results)
    sweeps = sweeps_from_results(results)
    height = (max(1, len(workloads)) + len(sweeps)) * ROW_HEIGHT + 20
    svg = _Svg(WIDTH, height, title)
    if not workloads:
        svg.text(WIDTH / 2, ROW_HEIGHT / 2, "no results", text_anchor="middle")
    for row, (workload, series) in enumerate(workloads.items()):
        top = row * ROW_HEIGHT + 24
        svg.text(16, top, workload, font_size="15", font_weight="bold")
        x, legend = 16.0, top + 22  # the legend on the line under the name
        for index, s in enumerate(series):
            colour = COLOURS[index % len(COLOURS)]
            svg.line(x, legend - 4, x + 22, legend - 4, colour, stroke_width="3")
            svg.text(x + 28, legend, s.label)
            x += 28 + len(s.label) * 7 + 24  # about 7 px a letter at 12 px
        left = MARGIN_LEFT
        _throughput_panel(svg, left, top + TOP, series)
        _latency_panel(svg, left + PANEL_WIDTH + PANEL_GAP, top + TOP, series)
    for row, (workload, by_scheduler) in enumerate(sweeps.items(), len(workloads)):
        _sweep_row(svg, row * ROW_HEIGHT + 24, workload, by_scheduler)
    return svg.done()


def check_plot_path(path: Path) -> None:
    """Refuse a name the plot cannot have before minutes of measuring, not after."""
    if path.suffix.lower() != ".svg":
        raise PlotError(
            f"--plot writes SVG: name the file *.svg, not {path.name!r} (for a PNG, convert "
            "it: rsvg-convert -o plot.png plot.svg)"
        )


def write_plot(path: Path, results: Sequence[Mapping[str, Any]]) -> None:
    check_plot_path(path)
    path.write_text(render_svg(results), encoding="utf-8")
