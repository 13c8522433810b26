"""The replay's reports: JSON (one object per run), CSV, a one-screen summary, SVG plots.

The plots show, per profile, the median over seeds of GPU allocation and of fragmentation
against the arrived GPU workload, with the band between the 25th and 75th percentiles (the
paper's Figure 9 draws the median and a 50 % interval).
"""

from __future__ import annotations

import csv
import json
import statistics
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from scheduler.lab.gpu_metrics import PERCENT_AXIS

METRICS = ("gpu_allocation_percent", "gpu_fragmentation_percent")
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def profile_label(record: Mapping[str, Any]) -> str:
    profile = record["profile"]
    return f"{Path(profile['config']).name}:{profile['schedulerName']}"


def by_profile(records: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        grouped.setdefault(profile_label(record), []).append(record)
    return grouped


def write_json(records: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    Path(path).write_text(json.dumps(list(records), indent=1) + "\n")


def write_csv(records: Sequence[Mapping[str, Any]], path: str | Path) -> None:
    """One row per run and metric: the run's keys, then one column per arrived percent."""
    columns = [str(p) for p in PERCENT_AXIS]
    with Path(path).open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(
            ["config", "schedulerName", "seed", "trace", "pods", "failed_pods", "seconds",
             "metric", *columns]
        )  # fmt: skip
        for record in records:
            for metric in METRICS:
                curve = record[metric]
                writer.writerow(
                    [record["profile"]["config"], record["profile"]["schedulerName"],
                     record["seed"], record["trace"], record["pods"], record["failed_pods"],
                     record["seconds"], metric, *(curve.get(c, "") for c in columns)]
                )  # fmt: skip


def _at(records: Sequence[Mapping[str, Any]], metric: str, percent: int) -> list[float]:
    return [r[metric][str(percent)] for r in records if str(percent) in r[metric]]


def _mean_sd(values: Sequence[float]) -> str:
    if not values:
        return "-"
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:6.2f} ±{sd:4.2f}"


def summary(records: Sequence[Mapping[str, Any]]) -> str:
    """A table a person reads at a glance: per profile, over its seeds, GPU allocation at 100 %
    and 130 % of arrived GPU workload, fragmentation at 100 %, failed pods, time per run."""
    if not records:
        return "no runs\n"
    grouped = by_profile(records)
    width = max(len(label) for label in grouped)
    head = (
        f"{'profile':<{width}}  runs  {'pods':>6}  {'alloc@100%':>12}  {'alloc@130%':>12}  "
        f"{'frag@100%':>12}  {'failed':>7}  {'wait p99':>8}  {'s/run':>6}"
    )
    lines = [
        f"trace {records[0]['trace']}: GPU allocation and fragmentation, % of capacity "
        "(mean ±sd over seeds)",
        head,
        "-" * len(head),
    ]
    ranked = sorted(
        grouped.items(),
        key=lambda item: -statistics.fmean(_at(item[1], METRICS[0], 130) or [0.0]),
    )
    for label, runs in ranked:
        lines.append(
            f"{label:<{width}}  {len(runs):>4}  {statistics.fmean(r['pods'] for r in runs):>6.0f}  "
            f"{_mean_sd(_at(runs, METRICS[0], 100)):>12}  "
            f"{_mean_sd(_at(runs, METRICS[0], 130)):>12}  "
            f"{_mean_sd(_at(runs, METRICS[1], 100)):>12}  "
            f"{statistics.fmean(r['failed_pods'] for r in runs):>7.0f}  "
            f"{statistics.fmean(r['pending_seconds']['p99'] for r in runs):>7.1f}s  "
            f"{statistics.fmean(r['seconds'] for r in runs):>6.1f}"
        )
    if _at(ranked[0][1], METRICS[0], 130):
        lines.append(f"most GPU allocated at 130 % arrived: {ranked[0][0]}")
    return "\n".join(lines) + "\n"


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _panel(
    grouped: Mapping[str, Sequence[Mapping[str, Any]]],
    metric: str,
    title: str,
    x0: float,
    size: tuple[float, float],
    x_range: tuple[int, int],
) -> list[str]:
    width, height = size
    left, top, plot_w, plot_h = x0 + 55, 40, width - 75, height - 90
    curves: dict[str, list[tuple[int, float, float, float]]] = {}
    for label, runs in grouped.items():
        points = []
        for percent in range(x_range[0], x_range[1] + 1):
            values = _at(runs, metric, percent)
            if values:
                points.append(
                    (
                        percent,
                        _quantile(values, 0.25),
                        statistics.median(values),
                        _quantile(values, 0.75),
                    )
                )
        curves[label] = points
    ys = [v for points in curves.values() for p in points for v in p[1:]]
    y_low = min(ys, default=0.0)
    y_high = max(ys, default=1.0)
    pad = max((y_high - y_low) * 0.05, 0.5)
    y_low, y_high = max(0.0, y_low - pad), y_high + pad

    def sx(x: float) -> float:
        return left + (x - x_range[0]) / max(x_range[1] - x_range[0], 1) * plot_w

    def sy(y: float) -> float:
        return top + plot_h - (y - y_low) / (y_high - y_low) * plot_h

    out = [
        f'<text x="{x0 + width / 2}" y="22" text-anchor="middle" font-size="15">'
        f"{escape(title)}</text>",
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
        'stroke="#999"/>',
    ]
    for i in range(6):
        y = y_low + (y_high - y_low) * i / 5
        out.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" '
            'stroke="#eee"/>'
        )
        out.append(
            f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end" '
            f'font-size="11">{y:.1f}</text>'
        )
    step = 5 if x_range[1] - x_range[0] <= 60 else 10
    for x in range(x_range[0] - x_range[0] % step, x_range[1] + 1, step):
        if x >= x_range[0]:
            out.append(
                f'<text x="{sx(x):.1f}" y="{top + plot_h + 16}" text-anchor="middle" '
                f'font-size="11">{x}</text>'
            )
    out.append(
        f'<text x="{left + plot_w / 2}" y="{top + plot_h + 34}" text-anchor="middle" '
        'font-size="12">arrived GPU workload, % of capacity</text>'
    )
    for index, points in enumerate(curves.values()):
        if not points:
            continue
        color = PALETTE[index % len(PALETTE)]
        band = [f"{sx(p[0]):.1f},{sy(p[3]):.1f}" for p in points]
        band += [f"{sx(p[0]):.1f},{sy(p[1]):.1f}" for p in reversed(points)]
        out.append(
            f'<polygon points="{" ".join(band)}" fill="{color}" fill-opacity="0.18" stroke="none"/>'
        )
        line = " ".join(f"{sx(p[0]):.1f},{sy(p[2]):.1f}" for p in points)
        out.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="2"/>')
    return out


def write_svg(
    records: Sequence[Mapping[str, Any]], path: str | Path, x_range: tuple[int, int] = (0, 130)
) -> None:
    """Two panels (GPU allocation, GPU fragmentation) with a legend; median and 25-75 % band
    over seeds per profile."""
    grouped = by_profile(records)
    panel = (560.0, 420.0)
    legend_h = 22 * len(grouped) + 20
    total_w, total_h = 2 * panel[0], panel[1] + legend_h
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w:.0f}" height="{total_h:.0f}" '
        'font-family="sans-serif">',
        f'<rect width="{total_w:.0f}" height="{total_h:.0f}" fill="white"/>',
    ]
    parts += _panel(grouped, METRICS[0], "GPU allocated, % of capacity", 0, panel, x_range)
    parts += _panel(grouped, METRICS[1], "GPU fragmented, % of capacity", panel[0], panel, x_range)
    seeds = {len(runs) for runs in grouped.values()}
    for index, label in enumerate(grouped):
        y = panel[1] + 10 + 22 * index
        color = PALETTE[index % len(PALETTE)]
        parts.append(f'<rect x="60" y="{y}" width="18" height="10" fill="{color}"/>')
        parts.append(f'<text x="86" y="{y + 10}" font-size="12">{escape(label)}</text>')
    parts.append(
        f'<text x="{total_w - 20}" y="{total_h - 8}" text-anchor="end" font-size="11" '
        f'fill="#555">median and 25-75 % over {"/".join(map(str, sorted(seeds)))} seed(s); '
        f"trace {escape(str(records[0]['trace'])) if records else ''}</text>"
    )
    parts.append("</svg>")
    Path(path).write_text("\n".join(parts) + "\n")
