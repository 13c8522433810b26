"""bench.processes: stopping children cleanly or forcibly, and reading their peak RSS."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from bench.processes import (
    ManagedProcess,
    parse_cpu_seconds,
    parse_vm_hwm,
    read_cpu_seconds,
    read_peak_rss,
)

IGNORES_SIGTERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)
EXITS_ON_SIGTERM = "import time\nprint('ready', flush=True)\ntime.sleep(60)\n"


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (
            "Name:\tpython\nVmPeak:\t  300 kB\nVmHWM:\t   123456 kB\nVmRSS:\t 100 kB\n",
            123456 * 1024,
        ),
        ("Name:\tkthreadd\n", None),
    ],
)
def test_parse_vm_hwm(status: str, expected: int | None) -> None:
    assert parse_vm_hwm(status) == expected


@pytest.mark.parametrize(
    ("stat", "ticks", "expected"),
    [
        # proc(5): pid (comm) state ppid ... utime(14) stime(15)
        ("42 (python) S 1 42 42 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 3 0", 100, 3.0),
        ("7 (a b) c) R 1 7 7 0 -1 0 0 0 0 0 10 5 0 0 20 0 1 0", 100, 0.15),
    ],
)
def test_parse_cpu_seconds(stat: str, ticks: int, expected: float) -> None:
    assert parse_cpu_seconds(stat, ticks) == pytest.approx(expected)


def test_read_cpu_seconds_of_this_process_grows() -> None:
    before = read_cpu_seconds(os.getpid())
    sum(range(3_000_000))
    after = read_cpu_seconds(os.getpid())
    assert before is not None and after is not None and after >= before > 0


def test_read_peak_rss_of_this_process() -> None:
    peak = read_peak_rss(os.getpid())
    assert peak is not None and peak > 1024 * 1024


async def _wait_ready(proc: ManagedProcess) -> None:
    for _ in range(200):
        if "ready" in proc.log_tail():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("child never became ready")


@pytest.mark.parametrize(
    ("script", "expected_code"),
    [(EXITS_ON_SIGTERM, -15), (IGNORES_SIGTERM, -9)],
    ids=["sigterm", "sigkill-after-timeout"],
)
async def test_stop_terminates_then_kills(tmp_path: Path, script: str, expected_code: int) -> None:
    proc = ManagedProcess("child", [sys.executable, "-c", script], tmp_path / "child.log", 0.5)
    async with proc:
        await _wait_ready(proc)
        assert proc.alive()
        proc.sample_rss()
    assert not proc.alive()
    assert proc.returncode == expected_code
    assert proc.peak_rss_bytes is not None and proc.peak_rss_bytes > 0


async def test_stop_of_an_exited_process_reports_its_code(tmp_path: Path) -> None:
    proc = ManagedProcess("child", [sys.executable, "-c", "raise SystemExit(3)"], tmp_path / "l")
    await proc.start()
    while proc.alive():
        await asyncio.sleep(0.01)
    assert await proc.stop() == 3
