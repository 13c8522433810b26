"""CPU per scheduling cycle, in process: what the scheduling loop itself spends per pod.

Not a scheduler_perf workload: no API server, no binding, no queue, no event handlers. A cache
of N nodes, the default profile's Filter/Score plugins, and per pod what the loop does around
schedule_pod: the snapshot update, the cycle, the assume. The machine's load barely moves it
(it is CPU time), so it compares two builds on a shared machine better than `aiosched bench`.

Shapes (the pods of upstream's scheduler_perf workloads of those names):
- daemonset: each pod pinned to its node by nodeAffinity matchFields metadata.name (NodeAffinity's
  PreFilter names one node), two pods per node; CPU per pod must not grow with the nodes;
- basic: SchedulingBasic's pod (100m CPU, 500Mi), any node fits;
- spread: TopologySpreading's pod (a zone spread constraint, DoNotSchedule);
- anti-affinity: SchedulingPodAntiAffinity's pod (required anti-affinity on the hostname).

`--watch-updates` adds what the pod watch brings the loop's process for each scheduled pod: the
bound pod confirming the assumed one, then its Running status, each parsed as the informer
parses it (sharing the previous view's spec) and given to the cache a few cycles after the
assume, as the binding and the kubelet lag behind the loop.

Run the same file over another checkout's code to compare builds:

    .venv/bin/python bench/cycle_microbench.py daemonset --nodes 5000,15000
    PYTHONPATH=../other-checkout .venv/bin/python bench/cycle_microbench.py daemonset
    .venv/bin/python bench/cycle_microbench.py basic --nodes 500,5000 --parallelism 1,2,4
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import zlib
from collections.abc import Callable, Coroutine
from typing import Any

from scheduler.api.objects import PodView
from scheduler.cache.cache import Cache
from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.algorithm import ScheduleResult, StartIndex, schedule_pod
from scheduler.framework.interface import CycleState
from scheduler.framework.runtime import HandleDeps
from scheduler.testing import MakePod, build_framework, make_node

PLUGINS = [
    "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
    "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
    "PodTopologySpread", "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality",
]  # fmt: skip
WEIGHTS = {"TaintToleration": 3, "NodeAffinity": 2, "PodTopologySpread": 2, "InterPodAffinity": 2}
ZONES = 10


def _base(index: int) -> MakePod:
    return (
        MakePod()
        .name(f"pod-{index}")
        .namespace("default")
        .labels({"app": "bench"})
        .container({"cpu": "100m", "memory": "500Mi"})
    )


def _daemonset_pod(index: int, nodes: int) -> PodView:
    term = {"matchFields": [{"key": "metadata.name", "operator": "In",
                             "values": [f"node-{index % nodes}"]}]}  # fmt: skip
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term]}}}  # fmt: skip
    return _base(index).affinity(affinity).obj()


def _spread_pod(index: int, nodes: int) -> PodView:
    constraint = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                  "whenUnsatisfiable": "DoNotSchedule",
                  "labelSelector": {"matchLabels": {"app": "bench"}}}  # fmt: skip
    return _base(index).spread_constraint(constraint).obj()


def _anti_affinity_pod(index: int, nodes: int) -> PodView:
    term = {"labelSelector": {"matchLabels": {"app": "bench"}},
            "topologyKey": "kubernetes.io/hostname"}  # fmt: skip
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return _base(index).affinity(affinity).obj()


SHAPES: dict[str, Callable[[int, int], PodView]] = {
    "daemonset": _daemonset_pod,
    "basic": lambda index, nodes: _base(index).obj(),
    "spread": _spread_pod,
    "anti-affinity": _anti_affinity_pod,
}


def drive(coro: Coroutine[Any, Any, ScheduleResult]) -> ScheduleResult:
    """schedule_pod without extenders never suspends: run it to its end in one step."""
    try:
        coro.send(None)
    except StopIteration as done:
        result: ScheduleResult = done.value
        return result
    raise RuntimeError("schedule_pod suspended")


def _deps(snapshot: Any, parallelism: int) -> HandleDeps:
    return HandleDeps(
        snapshot=lambda: snapshot,
        client=None,  # type: ignore[arg-type]
        rng=random.Random(1),
        parallelism=parallelism,
    )


def build_cache(nodes: int) -> tuple[Cache, Snapshot]:
    """A cache of `nodes` nodes (4 CPU, 32Gi, 110 pods) over ZONES zones, and its snapshot."""
    cache = Cache()
    for i in range(nodes):
        labels = {
            "kubernetes.io/hostname": f"node-{i}",
            "topology.kubernetes.io/zone": f"z{i % ZONES}",
        }
        cache.add_node(
            make_node(f"node-{i}", {"cpu": "4", "memory": "32Gi", "pods": "110"}, labels=labels)
        )
    return cache, cache.update_snapshot()


#: cycles between a pod's assume and its bound update, and between that and its Running update
WATCH_LAG = 8


def _bound(pod: PodView, host: str) -> PodView:
    """The pod as the watch shows it once bound: spec.nodeName set, a new resourceVersion."""
    raw = dict(pod.raw)
    raw["metadata"] = {**raw["metadata"], "resourceVersion": f"{pod.resource_version}-bound"}
    raw["spec"] = {**raw["spec"], "nodeName": host}
    return PodView.from_dict(raw, previous=pod)


def _running(pod: PodView) -> PodView:
    """The bound pod as the watch shows it once its kubelet reported it Running."""
    raw = dict(pod.raw)
    raw["metadata"] = {**raw["metadata"], "resourceVersion": f"{pod.resource_version}-running"}
    raw["status"] = {
        "phase": "Running",
        "startTime": "2026-01-01T00:00:00Z",
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    return PodView.from_dict(raw, previous=pod)


def run(
    shape: str, nodes: int, pods: int, parallelism: int = 1, watch_updates: bool = False
) -> dict[str, Any]:
    """CPU per pod (ms) of the loop's per-pod work, and the hosts chosen (to compare runs)."""
    cache, snapshot = build_cache(nodes)
    fwk = build_framework(PLUGINS, _deps(snapshot, parallelism), weights=WEIGHTS)
    make = SHAPES[shape]
    start, rng = StartIndex(), random.Random(1)
    hosts: list[str] = []
    pending: list[PodView] = []  # the informer's views of the scheduled pods, in order
    cpu = 0.0
    for cycle in range(1, pods + 1):
        pod = make(cycle - 1, nodes)
        began = time.process_time()
        if watch_updates:
            if len(pending) > WATCH_LAG:
                cache.add_pod(pending[-WATCH_LAG - 1])
            if len(pending) > 2 * WATCH_LAG:
                cache.add_pod(_running(pending[-2 * WATCH_LAG - 1]))
        cache.update_snapshot(snapshot)
        cycle_run = schedule_pod(
            fwk, CycleState(), pod, snapshot, percentage_of_nodes_to_score=None,
            next_start_index=start, rng=rng, cycle=cycle,
        )  # fmt: skip
        result = drive(cycle_run)
        cache.assume_pod(pod.with_node(result.suggested_host))
        if watch_updates:
            pending.append(_bound(pod, result.suggested_host))
        cpu += time.process_time() - began
        hosts.append(result.suggested_host)
    return {
        "shape": shape,
        "nodes": nodes,
        "pods": pods,
        "parallelism": parallelism,
        "cpu_per_pod_ms": round(cpu / pods * 1e3, 4),
        "hosts_digest": zlib.crc32(" ".join(hosts).encode()),
    }


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("shape", choices=sorted(SHAPES))
    parser.add_argument("--nodes", type=_ints, default=[5000], help="comma-separated node counts")
    parser.add_argument("--pods", type=int, default=0, help="pods per run (default: 2 per node, "
                        "at most 2000)")  # fmt: skip
    parser.add_argument("--parallelism", type=_ints, default=[1], help="comma-separated")
    parser.add_argument("--json", action="store_true", help="one JSON object per run")
    parser.add_argument("--watch-updates", action="store_true", help="also give the cache each "
                        "pod's bound and Running updates, as the pod watch does")  # fmt: skip
    args = parser.parse_args(argv)
    for nodes in args.nodes:
        for parallelism in args.parallelism:
            pods = args.pods or min(2 * nodes, 2000)
            figures = run(args.shape, nodes, pods, parallelism, args.watch_updates)
            if args.json:
                print(json.dumps(figures))
            else:
                print(
                    f"{args.shape:13} {nodes:6} nodes {pods:5} pods parallelism {parallelism:2}: "
                    f"{figures['cpu_per_pod_ms']:7.3f} ms CPU/pod"
                    f" (hosts {figures['hosts_digest']:08x})"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
