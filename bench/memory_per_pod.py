"""Bytes the scheduler keeps per bound pod, measured with tracemalloc on an in-process model.

The model does what the scheduler does with every pod of SchedulingBasic once it is bound: the
watch delivers the pod's JSON (as kubesim serves it: defaulted, bound, with its PodScheduled
condition), orjson decodes it, the informer parses it into a PodView (with its PodParser) and
keeps it in its store, and the cache adds it to its node (5000 nodes, created before
measuring); the snapshot is then brought up to date, so its NodeInfos hold their own pod lists.
Bytes per pod is what tracemalloc sees allocated and still alive afterwards, divided by the
pods.

    .venv/bin/python bench/memory_per_pod.py [--pods 50000] [--nodes 5000] [--top 12]
"""

from __future__ import annotations

import argparse
import gc
import tracemalloc
from typing import Any

import orjson

from bench import workloads as wl
from kubesim import defaults
from scheduler import testing
from scheduler.api.objects import PodView
from scheduler.api.pod import PodParser
from scheduler.cache.cache import Cache
from scheduler.client.informers import object_key

WORKLOAD = wl.WORKLOADS["SchedulingBasic/5000Nodes_50000Pods"]


def bound_pod_json(index: int, nodes: int) -> bytes:
    """Pod `index` of SchedulingBasic as a watch event's object once it is bound."""
    pod: dict[str, Any] = wl.pod_manifest(WORKLOAD, index, measured=True)
    defaults.apply_defaults("Pod", pod)
    meta = pod["metadata"]
    meta.update(
        uid=f"6f1c2b1e-0000-4000-8000-{index:012d}",
        resourceVersion=str(100_000 + index),
        creationTimestamp="2025-01-01T00:00:00Z",
    )
    spec = pod["spec"]
    spec.update(
        nodeName=wl.node_name(index % nodes), priority=0, preemptionPolicy="PreemptLowerPriority"
    )
    pod["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": "2025-01-01T00:00:01Z",
        }
    ]
    return orjson.dumps(pod)


def measure(pods: int, nodes: int, top: int) -> tuple[float, list[str]]:
    cache = Cache()
    for index in range(nodes):
        cache.add_node(
            testing.make_node(wl.node_name(index), {"cpu": "4", "memory": "32Gi", "pods": "110"})
        )
    snapshot = cache.update_snapshot()
    events = [bound_pod_json(index, nodes) for index in range(pods)]
    store: dict[str, PodView] = {}
    parse = PodParser()  # the pod informer's
    gc.collect()
    tracemalloc.start(1)
    before = tracemalloc.take_snapshot()
    for event in events:
        raw = orjson.loads(event)
        view = parse(raw)
        store[object_key(raw)] = view
        cache.add_pod(view)
    cache.update_snapshot(snapshot)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    stats = after.compare_to(before, "lineno")
    total = sum(stat.size_diff for stat in stats)
    lines = [
        f"{stat.size_diff / pods:8.1f} B/pod  {stat.traceback[0].filename.split('/work/')[-1]}"
        f":{stat.traceback[0].lineno}"
        for stat in stats[:top]
    ]
    return total / pods, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)
    per_pod, lines = measure(args.pods, args.nodes, args.top)
    print(f"{per_pod:.0f} bytes per bound pod ({args.pods} pods on {args.nodes} nodes)")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
