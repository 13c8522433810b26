"""The kubesim benchmark runs end to end and reports its figures as JSON (tiny workload)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from bench import kubesim_bench

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("flags", [[], ["--bare"]], ids=["controllers", "bare"])
def test_bench_reports_json(flags: list[str]) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.kubesim_bench",
            "--pods",
            "40",
            "--nodes",
            "4",
            "--concurrency",
            "8",
            *flags,
        ],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=120,
    ).stdout
    result = orjson.loads(out)
    assert result["pods"] == 40 and result["watchers"] == 3
    assert result["bare"] == bool(flags)
    assert result["watch_events_delivered"] == 3 * 40 * 3
    for key in ("creates_per_s", "binds_per_s", "events_per_s", "pods_per_s", "watch_events_per_s"):
        assert result[key] > 0
    # the server's own CPU, read from /proc, is what it spent serving these pods
    assert result["server_cpu_s"] > 0 and result["server_cpu_ms_per_pod"] > 0


def test_store_only_measures_the_store_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert kubesim_bench.main(["--store-only", "--pods", "50"]) == 0
    result = orjson.loads(capsys.readouterr().out)
    assert result["pods"] == 50 and result["store_only"] and result["watchers"] == 3
    assert result["store_cpu_us_per_pod"] > 0 and result["pods_per_cpu_s"] > 0


def test_ipc_only_measures_a_commits_round_trip(capsys: pytest.CaptureFixture[str]) -> None:
    assert kubesim_bench.main(["--ipc-only", "--pods", "200"]) == 0
    result = orjson.loads(capsys.readouterr().out)
    assert result["messages"] == 200 and result["ipc_only"]
    assert result["cpu_us_per_round_trip"] > 0
