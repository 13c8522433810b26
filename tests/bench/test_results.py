"""bench.results: the JSON objects `aiosched bench --json` writes, and the table it prints."""

from __future__ import annotations

from pathlib import Path

import orjson

from bench.results import BenchResult, format_table, write_json
from bench.stats import LatencySummary, ThroughputSummary
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
    assert lines[1].split() == [
        "SchedulingBasic/500Nodes",
        "1000/1000",
        "312.5",
        "300.0",
        "350.0",
        "360.0",
        "0.010",
        "0.020",
        "0.050",
        "150",
        "MiB",
        "-",  # no CPU reading
        "ok",
    ]
    assert lines[2].startswith("SchedulingBasic/Smoke") and lines[2].endswith("FAILED: timed out")


def test_table_shows_scheduler_cpu_per_pod_and_json_the_requests() -> None:
    run = _finished()
    run.scheduler_cpu_seconds = 0.9
    run.scheduler_requests_per_pod = {"POST events": 0.5, "POST pods/binding": 1.0}
    assert format_table([run]).splitlines()[1].split()[-3:] == ["0.90", "ms", "ok"]
    assert run.to_json()["scheduler_requests_per_pod"] == {
        "POST events": 0.5,
        "POST pods/binding": 1.0,
    }
