"""CPU per pod of schedule_pod with and without opportunistic batching, in process.

Not a scheduler_perf workload: no API server, no binding, no queue. A 5000-node cache and
snapshot, the default plugins, pods placed by assuming them in the cache between cycles (as
the loop does). Two pod shapes:

- basic: SchedulingBasic's pod (100m CPU, 500Mi) on its nodes (4 CPU, 32Gi, 110 pods): many
  pods fit a node. Upstream v1.35 never reused a ranking there (the last node was not full:
  node_not_full); since re-scoring the last node is re-scored and competes with the kept
  candidates, so pods batch (with the spread defaults cleared) and this measures the re-score;
- one-per-node: the same pod with host port 80, so each node takes one: every pod after the
  first of a batch takes the previous ranking's next node.

Per case: CPU per pod without and with batching, the pods placed on a hint, and the re-scores
(scheduler_batch_rescore_attempts_total) with their mean duration.

Profiles: the default one (PodTopologySpread's system defaults make every pod unsignable, as
upstream) and the default one with PodTopologySpread's defaults cleared (List defaulting, no
constraints), as upstream's own batching integration test configures it.

    .venv/bin/python -m bench.batching_microbench [--pods 400] [--nodes 5000]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence

from bench.cycle_microbench import drive
from scheduler.api.objects import PodView
from scheduler.cache.cache import Cache
from scheduler.cycle.algorithm import StartIndex, schedule_pod
from scheduler.framework.interface import CycleState
from scheduler.framework.runtime import HandleDeps
from scheduler.framework.runtime.batch import NoBatchMetrics
from scheduler.testing import MakePod, build_framework, make_node

SIGNING_PLUGINS = [
    "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
    "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
    "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality",
]  # fmt: skip


def _pods(count: int, host_port: bool) -> list[PodView]:
    ports = [{"containerPort": 80, "hostPort": 80}] if host_port else []
    return [
        MakePod()
        .name(f"pod-{i}")
        .namespace("default")
        .container({"cpu": "100m", "memory": "500Mi"}, ports=ports)
        .obj()
        for i in range(count)
    ]


class _RescoreTally(NoBatchMetrics):
    """Counts the batch's re-scores and their time (the rest of the metrics go nowhere)."""

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0

    def batch_rescore_duration(self, profile: str, seconds: float) -> None:
        self.count += 1
        self.seconds += seconds


def run(
    nodes: int, pods: Sequence[PodView], plugins: list[str], batching: bool
) -> tuple[float, int, _RescoreTally]:
    cache = Cache()
    for i in range(nodes):
        cache.add_node(make_node(f"node-{i}", {"cpu": "4", "memory": "32Gi", "pods": "110"}))
    snapshot = cache.update_snapshot()
    tally = _RescoreTally()
    deps = HandleDeps(
        snapshot=lambda: snapshot,
        client=None,  # type: ignore[arg-type]
        rng=random.Random(1),
        opportunistic_batching=batching,
        batch_metrics=tally,
    )
    fwk = build_framework(plugins, deps)
    start, rng = StartIndex(), random.Random(1)
    cpu = 0.0
    for cycle, pod in enumerate(pods, 1):
        cache.update_snapshot(snapshot)
        began = time.process_time()
        coro = schedule_pod(
            fwk, CycleState(), pod, snapshot, percentage_of_nodes_to_score=None,
            next_start_index=start, rng=rng, cycle=cycle,
        )  # fmt: skip
        result = drive(coro)
        cpu += time.process_time() - began
        cache.assume_pod(pod.with_node(result.suggested_host))
    batched = fwk.batch.batched_pods if fwk.batch is not None else 0
    return cpu / len(pods), batched, tally


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=400)
    parser.add_argument("--nodes", type=int, default=5000)
    args = parser.parse_args()
    profiles = {
        "default profile": [*SIGNING_PLUGINS, "PodTopologySpread"],
        "spread defaults cleared": SIGNING_PLUGINS,
    }
    for shape, host_port in (("basic", False), ("one-per-node", True)):
        pods = _pods(args.pods, host_port)
        for profile, plugins in profiles.items():
            off, _, _ = run(args.nodes, pods, plugins, batching=False)
            on, batched, rescores = run(args.nodes, pods, plugins, batching=True)
            per_rescore = rescores.seconds / rescores.count * 1e3 if rescores.count else 0.0
            print(
                f"{shape:13} {profile:24} off {off * 1e3:6.3f} ms/pod  on {on * 1e3:6.3f} ms/pod"
                f"  ratio {on / off:5.2f}  batched {batched}/{len(pods)}"
                f"  rescores {rescores.count} ({per_rescore:.3f} ms each)"
            )


if __name__ == "__main__":
    main()
