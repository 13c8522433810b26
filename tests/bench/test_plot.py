"""bench.plot: the SVG `--plot` writes, for one run and for two schedulers side by side."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from bench.plot import PlotError, nice_ceiling, nice_ticks, render_svg, write_plot
from bench.results import BenchResult
from bench.stats import quantiles, summarize_throughput
from bench.workloads import WORKLOADS

SVG = "{http://www.w3.org/2000/svg}"


def _result(scheduler: str, rate: float, latency: float) -> dict[str, Any]:
    run = BenchResult(workload=WORKLOADS["SchedulingBasic/500Nodes"], scheduled=1000)
    run.scheduler = scheduler
    run.throughput_samples = [rate, rate * 1.1, rate * 0.9, rate]
    run.throughput = summarize_throughput(run.throughput_samples)
    run.latency_quantiles = quantiles(sorted(latency * (1 + i / 100) for i in range(1000)))
    return run.to_json()


def _parse(path: Path) -> ET.Element:
    root = ET.fromstring(path.read_text(encoding="utf-8"))  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg"
    return root


def _polylines(root: ET.Element) -> list[tuple[str, str]]:
    """(series label, points) of every drawn line."""
    return [
        (line.findtext(f"{SVG}title") or "", line.get("points", ""))
        for line in root.iter(f"{SVG}polyline")
    ]


def _texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def test_one_run_plots_throughput_over_time_and_the_latency_cdf(tmp_path: Path) -> None:
    out = tmp_path / "plot.svg"
    write_plot(out, [_result("aiosched", 300.0, 0.02)])
    root = _parse(out)
    texts = _texts(root)
    assert "SchedulingBasic/500Nodes" in texts
    assert {"throughput over time", "latency distribution (CDF)", "pods/s", "% of pods"} <= set(
        texts
    )
    throughput, latency = _polylines(root)
    assert throughput[0] == latency[0] == "aiosched"
    assert len(throughput[1].split()) == 2 * 4  # a step per one-second sample
    assert len(latency[1].split()) == 101  # every percent
    # the CDF climbs: y (down the page) decreases as the share of pods grows
    ys = [float(p.split(",")[1]) for p in latency[1].split()]
    assert ys == sorted(ys, reverse=True) and ys[0] > ys[-1]


def test_two_schedulers_share_the_axes(tmp_path: Path) -> None:
    out = tmp_path / "compare.svg"
    write_plot(out, [_result("aiosched", 300.0, 0.02), _result("kube-scheduler", 900.0, 0.005)])
    root = _parse(out)
    lines = _polylines(root)
    assert [label for label, _ in lines] == ["aiosched", "kube-scheduler"] * 2
    assert {"aiosched", "kube-scheduler"} <= set(_texts(root))  # the legend
    assert _texts(root).count("throughput over time") == 1  # one row: the same axes
    colours = {line.get("stroke") for line in root.iter(f"{SVG}polyline")}
    assert len(colours) == 2


def test_two_runs_of_one_scheduler_are_told_apart_and_workloads_get_rows() -> None:
    smoke = _result("aiosched", 10.0, 0.1)
    smoke["workload"] = "SchedulingBasic/Smoke"
    root = ET.fromstring(
        render_svg([_result("aiosched", 300.0, 0.02), _result("aiosched", 310.0, 0.02), smoke])
    )
    labels = [label for label, _ in _polylines(root)]
    assert labels == ["aiosched", "aiosched #2", "aiosched", "aiosched #2", "aiosched", "aiosched"]
    assert _texts(root).count("throughput over time") == 2


def test_a_failed_run_plots_empty_panels() -> None:
    failed = BenchResult(workload=WORKLOADS["SchedulingBasic/Smoke"], error="timed out").to_json()
    root = ET.fromstring(render_svg([failed]))
    assert not _polylines(root)
    assert _texts(root).count("no samples") == 2
    assert "no results" in _texts(ET.fromstring(render_svg([])))


def test_latencies_over_decades_get_a_log_axis() -> None:
    wide = _result("aiosched", 300.0, 0.002)
    wide["latency_quantiles_seconds"] = [0.002 * 1.08**i for i in range(101)]  # 2 ms .. 4.4 s
    assert "ms from create to bound (log scale)" in _texts(ET.fromstring(render_svg([wide])))


def test_only_svg_is_written(tmp_path: Path) -> None:
    with pytest.raises(PlotError, match="rsvg-convert"):
        write_plot(tmp_path / "plot.png", [])
    assert not (tmp_path / "plot.png").exists()


def test_axis_ends_and_ticks_are_round() -> None:
    assert nice_ceiling(12) == 15
    assert nice_ceiling(1654) == 2000
    assert nice_ceiling(0.3) == 0.3
    assert nice_ticks(0, 2000) == [0, 500, 1000, 1500, 2000]
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]


def test_a_parallelism_sweep_plots_pods_per_second_and_cpu_against_parallelism(
    tmp_path: Path,
) -> None:
    runs = []
    for parallelism, rate in ((4, 500.0), (1, 300.0), (2, 420.0)):
        doc = _result("aiosched", rate, 0.01)
        doc["parallelism"] = parallelism
        doc["scheduler_cpu_per_pod_ms"] = 1.0 + parallelism / 10
        doc["critical_path_cpu_per_pod_ms"] = 0.8
        runs.append(doc)
    out = tmp_path / "sweep.svg"
    write_plot(out, runs)
    root = _parse(out)
    texts = _texts(root)
    assert "SchedulingBasic/500Nodes: parallelism sweep" in texts
    assert "pods/s against parallelism" in texts and "CPU per pod against parallelism" in texts
    lines = dict(_polylines(root))
    # one line per run over time, told apart by their parallelism
    assert {"aiosched parallelism 1", "aiosched parallelism 2", "aiosched parallelism 4"} <= set(
        lines
    )
    # pods/s against parallelism: three points in parallelism order, rising with the rate
    rate = [tuple(map(float, p.split(","))) for p in lines["aiosched"].split()]
    assert len(rate) == 3 and [x for x, _ in rate] == sorted(x for x, _ in rate)
    assert rate[0][1] > rate[1][1] > rate[2][1]  # SVG y grows downwards
    assert "aiosched total" in lines and "aiosched critical path" in lines


def test_runs_without_parallelism_get_no_sweep_row() -> None:
    assert "parallelism sweep" not in render_svg([_result("aiosched", 300.0, 0.01)])


def test_a_run_too_short_for_samples_says_so_on_the_plot() -> None:
    from bench.plot import TOO_SHORT
    from bench.stats import ThroughputSummary

    run = BenchResult(
        workload=WORKLOADS["SchedulingBasic/Smoke"],
        scheduled=20,
        duration_seconds=0.8,
        throughput=ThroughputSummary.overall(20, 0.8),
    )
    root = ET.fromstring(render_svg([run.to_json()]))

    assert TOO_SHORT in _texts(root)
