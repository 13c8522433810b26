"""What the running scheduler keeps per bound pod, by source line (tracemalloc), issue 22.

bench/memory_per_pod.py models what a pod's view costs; this measures the real `aiosched run`
under an `aiosched bench` workload: the scheduler runs with tracemalloc on (one frame per
allocation), and once the pods it must bind are bound and their Running status has had time to
arrive, it takes a snapshot (after a full collection) and writes the bytes alive per source line.
Two workloads that differ only in their pods (SchedulingBasic's 5000Nodes and
5000Nodes_10000Pods: 5000 nodes, 2000 and 11,000 pods) give bytes per extra pod per line, so
what the nodes and the process cost cancels out.

    .venv/bin/python -m bench.scheduler_memory [--top 25] [--workdir DIR]

To measure another tree (an older commit), copy this file outside the trees and run it with
PYTHONPATH=<that tree>: the scheduler it starts imports the same tree.

tracemalloc sees Python's allocations only (not the allocator's free lists or fragmentation),
so its figure is below the RSS per pod the bench reports.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
import tempfile
import threading
import time
import tracemalloc
import types
import urllib.request
from pathlib import Path

import orjson

from apimachinery.eventloop import run_event_loop
from bench import workloads as wl
from bench.processes import ManagedProcess
from bench.runner import RunOptions, run_workloads

SMALL = "SchedulingBasic/5000Nodes"
LARGE = "SchedulingBasic/5000Nodes_10000Pods"
SETTLE_SECONDS = 3.0  # after the last binding: the kubelet's Running updates arrive
STOP_TIMEOUT = 60.0  # seconds the bench waits for the traced scheduler to stop
_STOP_SIGNAL = signal.SIGUSR2  # what the traced scheduler stops on instead of SIGTERM
_SCHEDULED = 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"}'


def _scheduled(metrics_url: str) -> float:
    with urllib.request.urlopen(metrics_url, timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(_SCHEDULED):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def _snapshot_when_bound(
    out: Path, expect: int, metrics_url: str, terminated: threading.Event
) -> None:
    """Wait until `expect` pods are scheduled (or the bench stops the scheduler), let the
    updates settle, write the snapshot, then stop the scheduler if the bench asked it to."""
    while not terminated.is_set():
        try:
            if _scheduled(metrics_url) >= expect:
                break
        except OSError:
            pass
        terminated.wait(1.0)
    time.sleep(SETTLE_SECONDS)
    gc.collect()
    snapshot = tracemalloc.take_snapshot()
    by_line: dict[str, int] = {}
    for stat in snapshot.statistics("lineno"):
        frame = stat.traceback[0]
        by_line[f"{frame.filename.split('/work/')[-1]}:{frame.lineno}"] = stat.size
    out.write_bytes(orjson.dumps({"total": sum(by_line.values()), "lines": by_line}))
    terminated.wait()
    os.kill(os.getpid(), _STOP_SIGNAL)


def traced_run(out: Path, expect: int, port: str, argv: list[str]) -> int:
    """`aiosched run argv` in this process with tracemalloc on; the snapshot goes to `out`.

    The bench stops the scheduler with SIGTERM as soon as it sees the last pod bound: `aiosched
    run` is given another signal to stop on, and SIGTERM only tells the snapshot thread to
    send it once the snapshot is written."""
    from scheduler.app.cli import main
    from scheduler.app.commands import run as run_command

    terminated = threading.Event()
    run_command.signal = types.SimpleNamespace(  # type: ignore[assignment,attr-defined]
        SIGINT=signal.SIGINT, SIGTERM=_STOP_SIGNAL, SIGHUP=signal.SIGHUP
    )
    signal.signal(signal.SIGTERM, lambda signum, frame: terminated.set())
    tracemalloc.start(1)
    metrics_url = f"http://127.0.0.1:{port}/metrics"
    threading.Thread(
        target=_snapshot_when_bound, args=(out, expect, metrics_url, terminated), daemon=True
    ).start()
    return main(["run", *argv, "--http-address", f"127.0.0.1:{port}", "--insecure-http"])


def _measure(name: str, workdir: Path) -> dict[str, object]:
    workload = wl.WORKLOADS[name]
    out = workdir / f"{workload.init_pods + workload.measure_pods}.json"
    command = (
        sys.executable, str(Path(__file__).resolve()), "--traced-run", str(out),
        "--expect", str(workload.init_pods + workload.measure_pods), "--port", "{port}", "--",
        "--kubeconfig", "{kubeconfig}", "--config", "{config}",
    )  # fmt: skip
    options = RunOptions(workdir=workdir, timeout=600.0, scheduler_command=command)
    # The traced scheduler writes its snapshot before it stops: give it a minute, not 10 s.
    ManagedProcess.__init__.__defaults__ = (STOP_TIMEOUT,)
    [result] = run_event_loop(run_workloads([workload], options))
    for _ in range(30):  # the snapshot is written SETTLE_SECONDS after the last binding
        if out.exists():
            break
        time.sleep(1.0)
    if not result.ok or not out.exists():
        raise RuntimeError(f"{name}: {result.error or 'no snapshot written'}")
    data: dict[str, object] = orjson.loads(out.read_bytes())
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--traced-run", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--expect", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--port", default="", help=argparse.SUPPRESS)
    parser.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.traced_run is not None:
        rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
        return traced_run(args.traced_run, args.expect, args.port, rest)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="aiosched-memory-"))
    small, large = (_measure(name, workdir) for name in (SMALL, LARGE))
    small_w, large_w = wl.WORKLOADS[SMALL], wl.WORKLOADS[LARGE]
    pods = large_w.init_pods + large_w.measure_pods - small_w.init_pods - small_w.measure_pods
    small_lines: dict[str, int] = small["lines"]  # type: ignore[assignment]
    large_lines: dict[str, int] = large["lines"]  # type: ignore[assignment]
    diff = {
        line: large_lines.get(line, 0) - small_lines.get(line, 0)
        for line in set(small_lines) | set(large_lines)
    }
    total = sum(diff.values())
    print(f"{total / pods:.0f} bytes per bound pod (tracemalloc, {LARGE} minus {SMALL})")
    for line, size in sorted(diff.items(), key=lambda item: -item[1])[: args.top]:
        print(f"{size / pods:8.1f} B/pod  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
