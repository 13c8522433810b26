"""Scheduling-loop throughput with tracing off / on (full sampling), in-process, no API server.

Not a test (timing goals live in bench/); run by hand:

    .venv/bin/python tests/scheduler_tracing/measure_overhead.py --nodes 500 --pods 2000 \
        --otel-endpoint http://127.0.0.1:4318

Each pod goes through the real Scheduler: queue pop, scheduling cycle, binding task (the
API server answers 201 at once), explain recording and log guards. Modes alternate so that
load from other processes hits them alike.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import anyio

from observability.explain import ExplainStore
from observability.tracing import NOOP_TRACING, Tracing, setup_tracing
from profiles.api import load_config_text
from scheduler.api.objects import NodeView, PodView
from scheduler.cycle.profile_set import registry_for_config
from scheduler.cycle.scheduler import Scheduler, SchedulerOptions
from scheduler.plugins.registry import in_tree_registry

CONFIG = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


class InstantApi:
    """Answers every request at once: bindings 201, everything else 200."""

    async def request(self, method: str, path: str, **_: Any) -> tuple[int, Any]:
        return (201 if path.endswith("/binding") else 200), {}

    def with_own_rate_limit(self) -> InstantApi:
        return self  # the event recorder's client: no rate limit to keep apart

    async def close(self) -> None:
        pass


def node(i: int) -> NodeView:
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    return NodeView.from_dict(
        {
            "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
            "status": {"capacity": resources, "allocatable": resources},
        }
    )


def pod(i: int) -> PodView:
    return PodView.from_dict(
        {
            "metadata": {"name": f"pod-{i}", "namespace": "default", "uid": f"uid-{i}"},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}},
                    }
                ]
            },
        }
    )


async def run_once(
    nodes: int,
    pods: int,
    tracing: Tracing,
    explain: ExplainStore,
    trace_empty_points: bool = True,
) -> float:
    registry = in_tree_registry()
    config = load_config_text(CONFIG, registry_for_config(registry))
    scheduler = Scheduler(
        InstantApi(),  # type: ignore[arg-type]
        config,
        registry,
        SchedulerOptions(seed=1),
        tracing=tracing,
        explain=explain,
    )
    scheduler.instrumentation.trace_empty_points = trace_empty_points
    for i in range(nodes):
        scheduler.cache.add_node(node(i))
    views = [pod(i) for i in range(pods)]
    gc.collect()
    async with anyio.create_task_group() as group, asyncio.TaskGroup() as pod_tasks:
        scheduler._group = group
        scheduler._pod_tasks = pod_tasks  # what Scheduler.run's _hold_pod_tasks provides
        start = time.perf_counter()
        for view in views:
            scheduler.queue.add(view)
            pinfo = scheduler.queue.try_pop()
            assert pinfo is not None
            await scheduler._schedule_one(pinfo)
            await asyncio.sleep(0)  # the binding task runs here
        elapsed = time.perf_counter() - start
    assert scheduler.stats.scheduled == pods, scheduler.stats
    await tracing.aclose()
    return pods / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--otel-endpoint", required=True)
    args = parser.parse_args()

    def traced(sampler: str, arg: float | None = None) -> Tracing:
        return setup_tracing(
            endpoint=args.otel_endpoint, sampler=sampler, sampler_arg=arg, environ={}
        )

    modes: dict[str, Callable[[], tuple[Tracing, ExplainStore, bool]]] = {
        "off, explain off": lambda: (NOOP_TRACING, ExplainStore(max_pods=0), True),
        "off (default)": lambda: (NOOP_TRACING, ExplainStore(), True),
        "on, full sampling": lambda: (traced("always_on"), ExplainStore(), True),
        "on, no empty points": lambda: (traced("always_on"), ExplainStore(), False),
        "on, 10 % sampled": lambda: (traced("parentbased_traceidratio", 0.1), ExplainStore(), True),
    }
    results: dict[str, list[float]] = {name: [] for name in modes}
    asyncio.run(run_once(args.nodes, args.pods // 4, NOOP_TRACING, ExplainStore()))  # warm-up
    for _ in range(args.rounds):
        for name, make in modes.items():
            tracing, explain, empty_points = make()
            rate = asyncio.run(run_once(args.nodes, args.pods, tracing, explain, empty_points))
            results[name].append(rate)
    base = statistics.median(results["off, explain off"])
    for name, rates in results.items():
        median = statistics.median(rates)
        print(
            f"{name:22s} median {median:7.1f} pods/s  (runs: "
            + ", ".join(f"{r:.0f}" for r in rates)
            + f")  cost vs explain off: {100 * (1 - median / base):+.1f} %"
        )


if __name__ == "__main__":
    main()
