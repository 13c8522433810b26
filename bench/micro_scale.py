"""Per-operation cost of the scheduler's per-pod and per-event paths at 1k/10k/100k (issue 22).

Each case builds one structure at a size (pods in flight, unschedulable pods, cached pods)
and times the operation that runs per pod, per event or per scrape on it; a flat cost is the
same figure at every size. It runs in-process, on the code importable as `scheduler` (run it
with PYTHONPATH pointing at another checkout's tree to measure that one), and uses only the
API both the old and the new code have.

    .venv/bin/python bench/micro_scale.py [--sizes 1000,10000,100000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from scheduler import testing
from scheduler.api.objects import PodView
from scheduler.cache.cache import Cache
from scheduler.framework.events import ASSIGNED_POD_DELETE, NODE_ADD, QueueingHint
from scheduler.framework.status import Status
from scheduler.queue.in_flight import InFlight
from scheduler.queue.scheduling_queue import SchedulingQueue
from scheduler.queue.types import QueuedPodInfo


def _pod(index: int, namespace: str = "ns", node: str = "") -> PodView:
    return testing.make_pod(
        f"p{index}", namespace=namespace, uid=f"uid-{index}", node_name=node,
        requests={"cpu": "100m"},
    )  # fmt: skip


def _per_op(run: Callable[[int], object], ops: int) -> float:
    """Microseconds per operation of `run(i)` over `ops` calls."""
    start = time.perf_counter()
    for i in range(ops):
        run(i)
    return (time.perf_counter() - start) / ops * 1e6


def in_flight_steady_state(size: int) -> float:
    """`size` pods in flight (binding), each with one event recorded since it was popped; per
    op one pod is popped, one event recorded and the oldest pod finishes."""
    flight = InFlight()
    infos = [QueuedPodInfo(pod=_pod(i), timestamp=0.0) for i in range(size + 20_000)]
    for info in infos[:size]:
        flight.start(info)
        flight.record(NODE_ADD, None, None, "NodeAdd")

    def op(i: int) -> None:
        flight.start(infos[size + i])
        flight.record(NODE_ADD, None, None, "NodeAdd")
        flight.finish(infos[i].uid)

    return _per_op(op, 20_000)


def _queue_with_unschedulable(size: int) -> SchedulingQueue:
    queue = SchedulingQueue(
        less=lambda a, b: a.timestamp < b.timestamp,
        pre_enqueue=lambda pod: Status.OK,
        hints=None,
        clock=time.monotonic,
    )
    for i in range(size):
        queue.add(_pod(i))
    for _ in range(size):
        pinfo = queue.try_pop()
        assert pinfo is not None
        pinfo.unschedulable_plugins = {"NodeResourcesFit"}
        queue.add_unschedulable_if_not_present(pinfo, queue.scheduling_cycle)
    return queue


def assigned_pod_added(size: int) -> float:
    """`size` pods unschedulable for lack of resources; per op a pod is bound elsewhere (an
    AssignedPodAdd event: upstream asks only pods with cross-topology rejections)."""
    queue = _queue_with_unschedulable(size)
    bound = [_pod(size + i, node="n1") for i in range(2000)]
    return _per_op(lambda i: queue.assigned_pod_added(bound[i]), 2000)


def pending_pods_scrape(size: int) -> float:
    """`size` unschedulable pods; per op one scheduler_pending_pods read (a scrape)."""
    queue = _queue_with_unschedulable(size)
    return _per_op(lambda i: queue.counts(), 2000)


def cache_size_gauge(size: int) -> float:
    """`size` nodes with one pod each; per op the cache-size gauges are read."""
    cache = Cache()
    for i in range(size):
        cache.add_node(testing.make_node(f"n{i}"))
        cache.add_pod(_pod(i, node=f"n{i}"))
    return _per_op(lambda i: cache.pod_count(), 500)


def pod_on_crowded_node(size: int) -> float:
    """`size` pods bound to one node; per op a new pod is assumed onto it and the snapshot
    updated (as before a cycle), its binding confirmed by the watch (remove the assumed view,
    add the bound one), its Running status seen (remove, add), the snapshot updated again and
    an old pod deleted (SchedulingWhileGated's shape: every pod on one node)."""
    cache = Cache()
    cache.add_node(testing.make_node("n1", capacity={"pods": "200000"}))
    for i in range(size):
        cache.add_pod(_pod(i, node="n1"))
    snapshot = cache.update_snapshot()
    ops = 2000
    new = [_pod(size + i, node="n1") for i in range(ops)]
    bound = [_pod(size + i, node="n1") for i in range(ops)]
    running = [_pod(size + i, node="n1") for i in range(ops)]

    def op(i: int) -> None:
        cache.assume_pod(new[i])
        cache.update_snapshot(snapshot)
        cache.update_pod(new[i], bound[i])
        cache.update_pod(bound[i], running[i])
        cache.update_snapshot(snapshot)
        cache.remove_pod(_pod(i, node="n1"))

    return _per_op(op, ops)


def assigned_pod_deleted_with_gated(size: int) -> float:
    """`size` pods waiting at their scheduling gate; per op a bound pod is deleted (an
    AssignedPodDelete event, which upstream offers every unschedulable pod whose gate it may
    lift: not these)."""
    gates = {"SchedulingGates": ASSIGNED_POD_DELETE}  # plugin → an event it did not register
    queue = SchedulingQueue(
        less=lambda a, b: a.timestamp < b.timestamp,
        pre_enqueue=lambda pod: Status.unresolvable("gated", plugin="SchedulingGates"),
        hints=lambda pinfo, event, old, new: QueueingHint.SKIP,  # SchedulingGates' answer
        clock=time.monotonic,
        **_gate_events(gates),
    )
    for i in range(size):
        queue.add(_pod(i))
    deleted = _pod(size, node="n1")
    return _per_op(
        lambda i: queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, deleted, None), 200
    )


def _gate_events(gates: dict[str, Any]) -> dict[str, Any]:
    """The queue's gate_may_lift argument where it exists (older trees lack it)."""
    import inspect

    if "gate_may_lift" not in inspect.signature(SchedulingQueue).parameters:
        return {}
    return {"gate_may_lift": lambda plugin, event: event is not gates.get(plugin)}


CASES: dict[str, Callable[[int], float]] = {
    "in_flight finish (pods in flight)": in_flight_steady_state,
    "AssignedPodAdd (unschedulable pods)": assigned_pod_added,
    "scheduler_pending_pods scrape (unschedulable pods)": pending_pods_scrape,
    "cache pod_count (nodes)": cache_size_gauge,
    "bound pod's life on one node (pods on the node)": pod_on_crowded_node,
    "AssignedPodDelete (gated pods)": assigned_pod_deleted_with_gated,
}


async def _measure(sizes: list[int]) -> dict[str, dict[int, float]]:
    # The queue builds asyncio events: give it a running loop.
    return {name: {size: case(size) for size in sizes} for name, case in CASES.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    results = asyncio.run(_measure(sizes))
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
        return 0
    width = max(len(name) for name in results)
    print(f"{'µs per op':<{width}}" + "".join(f"{size:>12,}" for size in sizes))
    for name, by_size in results.items():
        print(f"{name:<{width}}" + "".join(f"{by_size[s]:>12.2f}" for s in sizes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
