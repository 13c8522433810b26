"""One figure for the machine's speed, so bench results from two machines can be compared.

The scheduler is CPU-bound on one core, so its pods/s follow the speed at which this machine runs
pure Python. `aiosched bench` times a fixed pure-Python task before its workloads, prints it on
one line and stores it with each result in the JSON: a machine (or Python) that takes twice as
long for it is expected to schedule about half as many pods per second, so
`pods/s * calibration seconds` is comparable across machines (docs/benchmarks.md).

The task is a miniature of a scheduling cycle (filter nodes by free CPU and memory, score them,
bind to the best, with dicts, small objects, sorting and string formatting, as the scheduler's
hot paths), deterministic, single-threaded and allocation-heavy like the scheduler. It is
VERSIONed: changing the task changes the figure, so a change must bump CALIBRATION_VERSION and
figures of two versions must not be compared.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

CALIBRATION_VERSION = 1
NODES = 200
PODS = 2000
ROUNDS = 3  # the best of three: the least disturbed by other processes


@dataclass(frozen=True, slots=True)
class Calibration:
    seconds: float  # the task's best time
    python: str
    implementation: str
    machine: str
    cpus: int | None

    def to_json(self) -> dict[str, object]:
        return {
            "version": CALIBRATION_VERSION,
            "seconds": round(self.seconds, 4),
            "python": self.python,
            "implementation": self.implementation,
            "machine": self.machine,
            "cpus": self.cpus,
        }

    def describe(self) -> str:
        cpus = "? CPUs" if self.cpus is None else f"{self.cpus} CPUs"
        return (
            f"machine calibration: {self.seconds:.3f} s (v{CALIBRATION_VERSION}, fixed "
            f"pure-Python task, best of {ROUNDS}; lower is faster; {self.implementation} "
            f"{self.python}, {self.machine}, {cpus})"
        )


class _Node:
    __slots__ = ("allocated_cpu", "allocated_memory", "labels", "name", "pods")

    def __init__(self, index: int) -> None:
        self.name = f"node-{index}"
        self.labels = {"zone": f"zone-{index % 3}", "kubernetes.io/hostname": self.name}
        self.allocated_cpu = 0
        self.allocated_memory = 0
        self.pods: list[str] = []


def calibration_task() -> int:
    """The fixed work: PODS pods placed on NODES nodes; returns a checksum of the placement."""
    nodes = [_Node(i) for i in range(NODES)]
    seed = 12345
    checksum = 0
    for index in range(PODS):
        seed = (seed * 1103515245 + 12345) & 0x7FFFFFFF  # a fixed LCG: the same pods every run
        pod: dict[str, int | str] = {
            "name": f"pod-{index}",
            "cpu": 100 + seed % 400,
            "memory": (64 + seed % 192) << 20,
            "zone": f"zone-{seed % 3}",
        }
        cpu, memory = int(pod["cpu"]), int(pod["memory"])
        feasible = [
            n
            for n in nodes
            if n.allocated_cpu + cpu <= 32_000 and n.allocated_memory + memory <= 64 << 30
        ]
        scored = sorted(
            (
                (
                    (32_000 - n.allocated_cpu) // 320
                    + (10 if n.labels["zone"] == pod["zone"] else 0)
                    - len(n.pods) % 7,
                    n.name,
                    n,
                )
                for n in feasible
            ),
            key=lambda entry: (-entry[0], entry[1]),
        )
        best = scored[0][2]
        best.allocated_cpu += cpu
        best.allocated_memory += memory
        best.pods.append(str(pod["name"]))
        checksum = (checksum * 31 + int(best.name.rpartition("-")[2])) % 1_000_000_007
    return checksum


def calibrate(clock: Callable[[], float] = time.perf_counter) -> Calibration:
    """Time the task ROUNDS times and keep the best."""
    best = float("inf")
    for _ in range(ROUNDS):
        started = clock()
        calibration_task()
        best = min(best, clock() - started)
    return Calibration(
        seconds=best,
        python=platform.python_version(),
        implementation=sys.implementation.name,
        machine=platform.machine() or "unknown",
        cpus=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
    )
