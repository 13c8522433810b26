"""bench.calibrate: the fixed task that puts a machine's speed in the bench's JSON."""

from __future__ import annotations

from pathlib import Path

import orjson

from bench.calibrate import CALIBRATION_VERSION, ROUNDS, calibrate, calibration_task
from bench.results import BenchResult, write_json
from bench.workloads import WORKLOADS


def test_the_task_is_deterministic() -> None:
    # a changed checksum means a changed task: bump CALIBRATION_VERSION (figures of two
    # versions do not compare)
    assert CALIBRATION_VERSION == 1
    assert calibration_task() == calibration_task() == 546780197


def test_the_best_of_the_rounds_is_kept() -> None:
    ticks = iter([0.0, 0.5, 1.0, 1.25, 2.0, 2.375])  # rounds of 0.5, 0.25 and 0.375 s
    calibration = calibrate(clock=lambda: next(ticks))
    assert ROUNDS == 3
    assert calibration.seconds == 0.25
    assert calibration.describe().startswith("machine calibration: 0.250 s (v1, fixed")


def test_calibration_is_stored_with_each_result(tmp_path: Path) -> None:
    ticks = iter([0.0, 0.25] * ROUNDS)
    machine = calibrate(clock=lambda: next(ticks)).to_json()
    run = BenchResult(workload=WORKLOADS["SchedulingBasic/Smoke"], machine=machine)
    write_json(tmp_path / "r.json", [run])
    (doc,) = orjson.loads((tmp_path / "r.json").read_bytes())
    assert doc["machine"]["seconds"] == 0.25
    assert doc["machine"]["version"] == CALIBRATION_VERSION
    assert set(doc["machine"]) == {
        "version",
        "seconds",
        "python",
        "implementation",
        "machine",
        "cpus",
    }
