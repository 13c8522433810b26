"""Does splitting Filter across filter workers pay? The same pods over the same cluster, in
process and with every row pass split (FilterPool, `--filter-fanout-min-ms 0`), default
profile: the scheduling process's CPU and wall time per pod, and whether the decisions match.

    .venv/bin/python -m bench.filter_fanout_probe [--nodes 5000] [--pods 60] [--workers 1]
        [--shapes basic,spread,anti-affinity]

The pods are bench/cycle_microbench.py's shapes (SchedulingBasic's, TopologySpreading's,
SchedulingPodAntiAffinity's), each placed pod assumed as the loop does. The first pod of a run
is not counted: it builds the node table, and with workers it teaches the pool its cost and
starts them (the probe then waits until they are ready).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any

from bench import cycle_microbench as micro
from profiles import load_config
from scheduler.cache.cache import Cache
from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.algorithm import StartIndex, schedule_pod
from scheduler.cycle.profile_set import ProfileSet, full_registry, registry_for_config
from scheduler.framework.interface import CycleState
from scheduler.framework.runtime import HandleDeps
from scheduler.parallel.pool import FilterPool
from scheduler.testing import make_node

READY_WITHIN = 300.0


def _run(shape: str, nodes: int, pods: int, pool: FilterPool | None) -> dict[str, Any]:
    registry = full_registry()
    config = load_config(None, registry_for_config(registry))
    cache = pool.cache if pool is not None else Cache()
    snapshot = Snapshot()
    for i in range(nodes):
        labels = {"kubernetes.io/hostname": f"node-{i}",
                  "topology.kubernetes.io/zone": f"z{i % micro.ZONES}"}  # fmt: skip
        cache.add_node(
            make_node(f"node-{i}", {"cpu": "4", "memory": "32Gi", "pods": "110"}, labels=labels)
        )
    profiles = ProfileSet.build(
        config,
        registry,
        lambda name: HandleDeps(snapshot=lambda: snapshot, client=None),  # type: ignore[arg-type]
    )
    if pool is not None:
        pool.attach(lambda: profiles, snapshot)
    fwk = profiles["default-scheduler"].framework
    start, rng = StartIndex(), random.Random(1)
    hosts: list[str] = []
    cpu = wall = 0.0
    for index in range(pods + 1):
        pod = micro.SHAPES[shape](index, nodes)
        began_cpu, began_wall = time.process_time(), time.perf_counter()
        cache.update_snapshot(snapshot)
        run = schedule_pod(
            fwk, CycleState(), pod, snapshot, percentage_of_nodes_to_score=None,
            next_start_index=start, rng=rng, cycle=index + 1, fanout=pool,
        )  # fmt: skip
        host = micro.drive(run).suggested_host
        cache.assume_pod(pod.with_node(host))
        if index:
            cpu += time.process_time() - began_cpu
            wall += time.perf_counter() - began_wall
            hosts.append(host)
        elif pool is not None:
            deadline = time.monotonic() + READY_WITHIN
            while len(pool.ready_workers()) < pool.size:
                if time.monotonic() > deadline:
                    raise SystemExit("filter workers not ready in time")
                time.sleep(0.2)
    return {
        "cpu_ms": cpu / pods * 1e3,
        "wall_ms": wall / pods * 1e3,
        "hosts": hosts,
        "splits": pool.fanned_out if pool is not None else 0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=60)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--shapes", default="basic,spread,anti-affinity")
    args = parser.parse_args()
    for shape in args.shapes.split(","):
        alone = _run(shape, args.nodes, args.pods, None)
        pool = FilterPool(args.workers, min_seconds=0.0, min_rows=0)
        try:
            split = _run(shape, args.nodes, args.pods, pool)
        finally:
            pool.close()
        print(
            f"{shape:13} {args.nodes} nodes: in process {alone['cpu_ms']:6.2f} ms CPU "
            f"{alone['wall_ms']:6.2f} ms wall per pod; split over {args.workers} worker(s) "
            f"{split['cpu_ms']:6.2f} ms CPU {split['wall_ms']:6.2f} ms wall per pod "
            f"({split['splits'] / args.pods:.1f} split passes a pod); "
            f"decisions {'identical' if alone['hosts'] == split['hosts'] else 'DIFFER'}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
