"""bench.results: the JSON objects `aiosched bench --json` writes, and the table it prints."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from bench.results import BenchResult, format_table, write_json
from bench.stats import Checkpoint, LatencySummary, ThroughputSummary, summarize_throughput
from bench.workloads import WORKLOADS


def _finished() -> BenchResult:
    return BenchResult(
        workload=WORKLOADS["SchedulingBasic/500Nodes"],
        scheduled=1000,
        duration_seconds=3.2,
        throughput=ThroughputSummary(312.5, 300.0, 350.0, 360.0),
        throughput_samples=[300.0, 350.0, 360.0],
        latency=LatencySummary(0.01, 0.02, 0.05),
        peak_rss_bytes=150 * 2**20,
        scheduler_exit_code=0,
    )


def test_json_has_the_documented_shape(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    write_json(out, [_finished()])
    (doc,) = orjson.loads(out.read_bytes())
    assert doc["workload"] == "SchedulingBasic/500Nodes"
    assert doc["pods_per_second"] == {"average": 312.5, "p50": 300.0, "p90": 350.0, "p99": 360.0}
    assert doc["latency_seconds"] == {"p50": 0.01, "p90": 0.02, "p99": 0.05}
    assert doc["peak_rss_bytes"] == 150 * 2**20
    assert (doc["nodes"], doc["init_pods"], doc["pods"], doc["scheduled"]) == (500, 500, 1000, 1000)
    assert doc["scheduler_exit_code"] == 0
    assert doc["error"] is None


def test_failed_run_keeps_the_keys_with_nulls() -> None:
    failed = BenchResult(workload=WORKLOADS["SchedulingBasic/Smoke"], error="scheduler died")
    doc = failed.to_json()
    assert doc["pods_per_second"] is None and doc["latency_seconds"] is None
    assert doc["peak_rss_bytes"] is None
    assert doc["error"] == "scheduler died"
    assert not failed.ok


def test_incomplete_run_is_not_ok() -> None:
    partial = _finished()
    partial.scheduled = 999
    assert not partial.ok
    assert _finished().ok


def test_table_shows_one_row_per_workload() -> None:
    failed = BenchResult(workload=WORKLOADS["SchedulingBasic/Smoke"], error="timed out")
    lines = format_table([_finished(), failed]).splitlines()
    assert lines[0].split()[:2] == ["workload", "pods"]
    assert lines[2].split() == [
        "SchedulingBasic/500Nodes",
        "1000/1000",
        "312.5",
        "300.0",
        "350.0",
        "360.0",
        "10.0",  # ms
        "20.0",
        "50.0",
        "3.2",  # s
        "150",  # MiB
        "-",  # no CPU reading
        "-",  # nor of the critical path
        "102.4",  # KiB: 150 MiB over 500 init + 1000 measured pods
        "-",  # no checkpoints: flatness cannot be told
        "ok",
    ]
    assert lines[3].startswith("SchedulingBasic/Smoke") and lines[3].endswith("FAILED: timed out")


def test_table_headers_carry_units() -> None:
    """A second header line gives each number column's unit, aligned over the column."""
    header, units, row = format_table([_finished()]).splitlines()
    names = ["avg", "p50", "p90", "p99", "lat p50", "lat p90", "lat p99", "time", "peak RSS"]
    names += ["CPU/pod", "crit/pod", "RSS/pod"]
    expected = ["pods/s"] * 4 + ["ms"] * 3 + ["s", "MiB", "ms", "ms", "KiB"]
    for name, unit in zip(names, expected, strict=True):
        end = header.index(name) + len(name)  # number columns are right-aligned
        assert units[end - len(unit) : end] == unit, name
    assert units[: len("SchedulingBasic/500Nodes")].strip() == ""
    assert row.startswith("SchedulingBasic/500Nodes")


def test_table_shows_scheduler_cpu_per_pod_and_json_the_requests() -> None:
    run = _finished()
    run.scheduler_cpu_seconds = 0.9
    run.scheduler_requests_per_pod = {"POST events": 0.5, "POST pods/binding": 1.0}
    assert format_table([run]).splitlines()[2].split()[-5:] == ["0.90", "-", "102.4", "-", "ok"]
    assert run.to_json()["scheduler_requests_per_pod"] == {
        "POST events": 0.5,
        "POST pods/binding": 1.0,
    }


def _measured_100k(cpu_ms_per_pod: list[float], rates: list[float]) -> BenchResult:
    """A 100,000-pod run whose 10 segments cost `cpu_ms_per_pod` each, sampled once a second
    at `rates` (pods/s) in turn."""
    run = BenchResult(workload=WORKLOADS["SchedulingBasic/5000Nodes_100000Pods"])
    run.peak_rss_bytes = 105_000 * 8192
    checkpoints = [Checkpoint(0.0, 0, 10.0, 100 * 2**20)]
    seconds, cpu, scheduled, tick = 0.0, 10.0, 0, 0
    while scheduled < 100_000:
        rate = rates[tick % len(rates)]
        new = min(int(rate), 100_000 - scheduled)
        cpu += new * cpu_ms_per_pod[scheduled // 10_000] / 1000
        scheduled += new
        seconds += 1.0
        tick += 1
        checkpoints.append(Checkpoint(seconds, scheduled, cpu, (100 + scheduled // 1000) * 2**20))
        run.throughput_samples.append(float(new))
        run.throughput_scheduled_at.append(scheduled)
    run.checkpoints = checkpoints
    run.scheduled = scheduled
    run.throughput = summarize_throughput(run.throughput_samples)
    return run


def test_json_and_table_report_segments_rss_per_pod_and_the_verdict() -> None:
    run = _measured_100k([1.0] * 9 + [1.1], [500.0])
    doc = run.to_json()
    assert doc["rss_per_pod_bytes"] == 8192
    flat = doc["flatness"]
    assert len(flat["segments"]) == 10
    assert flat["segments"][0]["pods"] == [0, 10_000]
    assert flat["segments"][-1]["pods"] == [90_000, 100_000]
    assert flat["segments"][0]["cpu_per_pod_ms"] == pytest.approx(1.0)
    assert flat["cpu_per_pod_last_over_first"] == pytest.approx(1.1)
    assert flat["flat"] is True
    table = format_table([run])
    assert table.splitlines()[2].split()[-2:] == ["yes", "ok"]
    assert "SchedulingBasic/5000Nodes_100000Pods: segments" in table
    assert "90000-100000" in table and "flat (CPU/pod last/first 1.10" in table


def test_a_cliff_is_not_flat() -> None:
    run = _measured_100k([1.0] * 7 + [5.0] * 3, [500.0])
    assert run.to_json()["flatness"]["flat"] is False
    assert format_table([run]).splitlines()[2].split()[-2:] == ["NO", "ok"]


def _with_processes() -> BenchResult:
    from bench.proctree import ProcessCpu

    result = _finished()
    result.processes = [
        ProcessCpu(100, "aiosched", 1.5, critical_path=True),
        ProcessCpu(101, "aiosched-api", 0.7, critical_path=False),
        ProcessCpu(102, "aiosched-api", 0.3, critical_path=False),
    ]
    result.scheduler_cpu_seconds = 2.5
    result.parallelism = 4
    return result


def test_json_reports_cpu_per_process_and_the_critical_path_apart(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    write_json(out, [_with_processes()])
    (doc,) = orjson.loads(out.read_bytes())
    assert doc["scheduler_cpu_seconds"] == 2.5  # the whole tree, as before with one process
    assert doc["scheduler_cpu_per_pod_ms"] == 2.5
    assert doc["critical_path_cpu_seconds"] == 1.5
    assert doc["critical_path_cpu_per_pod_ms"] == 1.5
    assert doc["parallelism"] == 4
    assert [(p["pid"], p["name"], p["cpu_per_pod_ms"], p["critical_path"])
            for p in doc["scheduler_processes"]] == [
        (100, "aiosched", 1.5, True),
        (101, "aiosched-api", 0.7, False),
        (102, "aiosched-api", 0.3, False),
    ]  # fmt: skip


def test_table_shows_cpu_per_process_the_critical_path_and_the_parallelism() -> None:
    text = format_table([_with_processes()])
    row = next(line for line in text.splitlines() if line.startswith("SchedulingBasic/500Nodes"))
    assert "(parallelism 4)" in row
    assert "2.50" in row.split() and "1.50" in row.split()  # CPU/pod total, then critical path
    section = text[text.index("CPU per process") :].splitlines()
    assert any(
        "aiosched" in line and "critical path" in line and "1.50" in line for line in section
    )
    assert any("101" in line and "aiosched-api" in line and "0.70" in line for line in section)
    assert any("total" in line and "2.50" in line for line in section)


def test_a_run_without_process_figures_has_no_process_section() -> None:
    result = _finished()
    doc = result.to_json()
    assert doc["scheduler_processes"] == [] and doc["critical_path_cpu_seconds"] is None
    assert "CPU per process" not in format_table([result])


def test_a_run_too_short_for_samples_says_so_instead_of_repeating_the_average() -> None:
    """SchedulingBasic/500Nodes binds its 1000 pods in about 1.5 s on a fast machine: one
    sampling tick, no per-second sample. It used to print p50 = p90 = p99 = the average."""
    short = _finished()
    short.duration_seconds = 1.5
    short.throughput = ThroughputSummary.overall(1000, 1.5)
    short.throughput_samples = []

    document = short.to_json()["pods_per_second"]
    table = format_table([short])

    assert document["average"] == pytest.approx(666.67, abs=0.01)
    assert (document["p50"], document["p90"], document["p99"]) == (None, None, None)
    assert "too short" in document["source"]
    assert "666.7" in table and "300.0" not in table
    assert "too short for per-second throughput samples" in table
