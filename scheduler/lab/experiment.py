"""Many replays: every (configuration profile, seed) of one trace, on every core.

Each run is independent, so runs go to worker processes (one per core by default); a run builds
its own Scheduler from its configuration file, as `aiosched run` would, and its own copy of the
trace's workload for its seed. A run's record is the report's JSON object (report.py).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from functools import lru_cache
from multiprocessing import get_context
from typing import Any

from apimachinery.eventloop import run_event_loop
from profiles.api import load_config
from profiles.config import ResolvedConfig
from scheduler.cycle.profile_set import full_registry, registry_for_config
from scheduler.lab import openb
from scheduler.lab.engine import Replay
from scheduler.lab.gpu_metrics import GpuLedger, arrival_request, trace_target_workload
from scheduler.lab.trace import Trace, load_trace
from scheduler.plugins.gpushare.frag import TypicalPod
from scheduler.plugins.gpushare.plugins import FGD, FGDArgs


@dataclass(frozen=True, slots=True)
class TraceSource:
    """Where a run's trace comes from: a trace file, or openb CSVs with their inflation."""

    trace: str = ""
    openb_nodes: str = ""
    openb_pods: str = ""
    inflate: float = 1.3
    #: openb: model a GPU share as a capacity request (needs DRAConsumableCapacity).
    shareable: bool = False

    @property
    def name(self) -> str:
        return os.path.basename(self.trace or self.openb_pods)


@dataclass(frozen=True, slots=True)
class RunSpec:
    source: TraceSource
    config: str
    scheduler_name: str
    seed: int
    retry: bool
    feature_gates: tuple[tuple[str, bool], ...] = ()
    #: Add every bound pod's node to the record ("placements").
    placements: bool = False


@lru_cache(maxsize=4)
def _openb_files(nodes: str, pods: str) -> tuple[list[openb.OpenbNode], list[openb.OpenbTask]]:
    return openb.read_nodes(nodes), openb.read_tasks(pods)


@lru_cache(maxsize=4)
def _trace_file(path: str) -> tuple[Trace, tuple[TypicalPod, ...]]:
    trace = load_trace(path)
    return trace, trace_target_workload(trace)


def build_trace(source: TraceSource, seed: int) -> tuple[Trace, tuple[TypicalPod, ...]]:
    """The run's trace and the target workload its fragmentation is measured against."""
    if source.trace:
        return _trace_file(source.trace)
    nodes, tasks = _openb_files(source.openb_nodes, source.openb_pods)
    capacity = openb.gpu_capacity_milli(nodes)
    sequence = openb.workload(tasks, capacity, seed, source.inflate)
    trace = openb.openb_trace(source.name, nodes, sequence, shareable=source.shareable)
    return trace, openb.target_workload(tasks)


def with_target_workload(config: ResolvedConfig, typical: Sequence[TypicalPod]) -> ResolvedConfig:
    """FGD without its own target workload gets the trace's (the paper's M)."""
    profiles = []
    for profile in config.profiles:
        args = profile.args.get(FGD.name)
        if FGD.name in profile.plugin_names() and not (args and args.typical_pods):
            profile = dataclasses.replace(
                profile, args={**profile.args, FGD.name: FGDArgs(tuple(typical))}
            )
        profiles.append(profile)
    return dataclasses.replace(config, profiles=tuple(profiles))


def load(config_path: str, feature_gates: Mapping[str, bool] | None = None) -> ResolvedConfig:
    return load_config(config_path, registry_for_config(), feature_gates=feature_gates)


def run_one(spec: RunSpec, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """One replay; its report record."""
    gates = dict(spec.feature_gates)
    trace, typical = build_trace(spec.source, spec.seed)
    config = with_target_workload(load(spec.config, gates), typical)
    profile = next(p for p in config.profiles if p.scheduler_name == spec.scheduler_name)
    config = dataclasses.replace(config, profiles=(profile,))
    ledger = GpuLedger.for_trace(trace, typical)
    replay = Replay(
        config,
        full_registry(),
        spec.seed,
        retry=spec.retry,
        feature_gates=gates,
        observer=ledger,
        scheduler_name=spec.scheduler_name,
    )
    total = len(trace.pods)
    report = None if progress is None else (lambda done: progress(done, total))
    result = run_event_loop(replay.run(trace, report))
    allocation, fragmentation = ledger.curves()
    arrivals = {a.key: a for a in trace.pods}
    failed_shapes = Counter(arrival_request(arrivals[key]) for key in result.failed)
    pending = sorted(result.pending_seconds)
    return {
        "profile": {"config": spec.config, "schedulerName": spec.scheduler_name},
        "seed": spec.seed,
        "trace": spec.source.name,
        "pods": result.pods,
        "failed_pods": len(result.failed),
        "seconds": round(result.seconds, 3),
        "gpu_allocation_percent": allocation,
        "gpu_fragmentation_percent": fragmentation,
        "gpus": ledger.capacity_milli // 1000,
        "cpu_allocation_percent": round(100 * ledger.cpu_used / ledger.cpu_capacity, 2)
        if ledger.cpu_capacity
        else 0.0,
        "pending_seconds": {
            "median": pending[len(pending) // 2] if pending else 0.0,
            "p99": pending[min(len(pending) - 1, int(len(pending) * 0.99))] if pending else 0.0,
            "max": pending[-1] if pending else 0.0,
        },
        **({"placements": result.placements} if spec.placements else {}),
        "failed_by_shape": [
            {
                "cpuMilli": shape.cpu_milli,
                "gpuMilli": shape.gpu_milli,
                "gpuCount": shape.gpu_count,
                "models": sorted(shape.models),
                "pods": count,
            }
            for shape, count in failed_shapes.most_common()
        ],
    }


def _quiet() -> None:
    # A replay's output is its report; the scheduler's own logs would only drown it.
    logging.getLogger().setLevel(logging.ERROR)


def _worker(spec: RunSpec) -> dict[str, Any]:
    _quiet()
    return run_one(spec)


def run_all(
    specs: Sequence[RunSpec],
    jobs: int | None = None,
    say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> list[dict[str, Any]]:
    """Every run, `jobs` processes at a time (default: one per core); records in spec order."""
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(specs)))
    if jobs == 1:
        _quiet()
        records = []
        for number, spec in enumerate(specs, 1):
            label = f"[{number}/{len(specs)}] {spec.scheduler_name} seed {spec.seed}"

            def progress(done: int, total: int, label: str = label) -> None:
                if done % 1000 == 0 or done == total:
                    say(f"{label}: {done}/{total} pods")

            record = run_one(spec, progress)
            say(_finished(label, record))
            records.append(record)
        return records
    results: dict[int, dict[str, Any]] = {}
    with ProcessPoolExecutor(jobs, mp_context=get_context("fork")) as pool:
        pending: dict[Future[dict[str, Any]], int] = {
            pool.submit(_worker, spec): index for index, spec in enumerate(specs)
        }
        say(f"{len(specs)} runs on {jobs} processes")
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                index = pending.pop(future)
                spec = specs[index]
                results[index] = future.result()
                label = f"[{len(results)}/{len(specs)}] {spec.scheduler_name} seed {spec.seed}"
                say(_finished(label, results[index]))
    return [results[i] for i in range(len(specs))]


def _finished(label: str, record: Mapping[str, Any]) -> str:
    return (
        f"{label}: {record['pods']} pods, {record['failed_pods']} failed, {record['seconds']:.1f} s"
    )
