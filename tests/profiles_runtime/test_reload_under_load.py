"""Hot reload while pods stream in, on an embedded cluster, through SchedulerService.reload.

Each config generation carries its number in the Generation test plugin's args, so every
scheduling attempt says which framework ran it (see generation_plugins.py). Odd generations drop
the "alt" schedulerName and use another QueueSort; the last generation has both names again.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from generation_plugins import EXPIRE_TIMEOUT, PERMIT_LABEL, Journal, generation_registry
from harness import Harness, running_scheduler

from scheduler.app.service import SchedulerService

ALT = "alt"
DEFAULT = "default-scheduler"
PODS = 150
GENERATIONS = 10  # reloads after the initial config; the last one (even) owns both names
RELOAD_PERIOD = 0.15


def config(generation: int) -> str:
    """Generation N: Generation plugin args {generation: N}; odd ones drop "alt" and sort
    the queue newest first."""
    queue_sort = (
        "    queueSort: {enabled: [{name: NewestFirst}], disabled: [{name: PrioritySort}]}\n"
        if generation % 2
        else ""
    )
    names = [DEFAULT] if generation % 2 else [DEFAULT, ALT]
    profiles = "".join(
        f"- schedulerName: {name}\n"
        "  plugins:\n"
        f"{queue_sort}"
        "    multiPoint: {enabled: [{name: Generation}]}\n"
        "  pluginConfig:\n"
        f"  - {{name: Generation, args: {{generation: {generation}}}}}\n"
        for name in names
    )
    return (
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "leaderElection: {leaderElect: false}\n"
        f"profiles:\n{profiles}"
    )


def in_force(h: Harness, scheduler_name: str) -> int:
    profile = h.scheduler.profiles.get(scheduler_name)
    if profile is None:
        return -1
    plugin: Any = profile.framework.plugins["Generation"]
    return int(plugin.generation)


async def bound_pods(h: Harness) -> dict[str, str]:
    status, body = await h.api.request("GET", "/api/v1/namespaces/default/pods")
    assert status == 200
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in body["items"]}


async def create_pod(h: Harness, name: str, scheduler_name: str, permit: str) -> None:
    container = {
        "name": "c",
        "image": "registry.k8s.io/pause:3.9",
        "resources": {"requests": {"cpu": "10m", "memory": "10Mi"}},
    }
    labels = {PERMIT_LABEL: permit} if permit else {}
    await h.api.create(
        "/api/v1/namespaces/default/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": labels},
            "spec": {"schedulerName": scheduler_name, "containers": [container]},
        },
    )


def permit_mode(i: int) -> str:
    if i in (3, 61):
        return "expire"
    return "wait" if i % 5 == 0 else ""


async def test_reload_under_load_loses_no_pod_and_never_mixes_generations(
    tmp_path: Path,
) -> None:
    journal = Journal()
    registry = generation_registry(journal)
    config_path = tmp_path / "config.yaml"
    config_path.write_text(config(0))
    async with running_scheduler(tmp_path, config(0), registry) as h:
        journal.in_force = lambda name: in_force(h, name)
        for n in range(4):
            await h.api.create_node(f"node-{n}")
        # Pods must reach Permit while the reloads go on (bindings spanning a reload, Permit
        # timeouts kept across one); pods that find no node yet only back off meanwhile.
        await h.wait_nodes_cached(4)
        service = SchedulerService(
            config_path=config_path, http_host="127.0.0.1", http_port=0, registry=registry
        )
        service.scheduler = h.scheduler
        relists = (h.scheduler.pod_informer.relists, h.scheduler.node_informer.relists)

        async def stream_pods() -> None:
            for i in range(PODS):
                await create_pod(h, f"p{i}", ALT if i % 3 == 0 else DEFAULT, permit_mode(i))
                await asyncio.sleep(0.01)

        reload_seconds: list[float] = []

        async def reload_repeatedly() -> None:
            for generation in range(1, GENERATIONS + 1):
                await asyncio.sleep(RELOAD_PERIOD)
                config_path.write_text(config(generation))
                start = time.perf_counter()
                assert await service.reload()
                reload_seconds.append(time.perf_counter() - start)
                assert in_force(h, DEFAULT) == generation  # idle loop: applied at once

        async with asyncio.TaskGroup() as group:
            group.create_task(stream_pods())
            group.create_task(reload_repeatedly())

        async def all_bound() -> bool:
            return all((await bound_pods(h)).values())

        await h.wait_for(all_bound, timeout=30, what="every pod bound")
        await h.wait_for(lambda: len(h.bindings.bindings) == PODS, what="watch saw bindings")

    # No pod lost, none bound twice.
    assert sorted(h.bindings.bindings) == sorted(f"default/p{i}" for i in range(PODS))
    assert all(len(nodes) == 1 for nodes in h.bindings.bindings.values())
    # Every attempt ran on the framework in force when its cycle began, reserved and bound
    # with that same framework even when a reload came in between.
    assert journal.attempts
    for attempt in journal.attempts:
        assert attempt.generation == attempt.in_force, attempt
        assert attempt.reserved_by in (-1, attempt.generation), attempt
        assert attempt.bound_by in (-1, attempt.generation), attempt
    alt_generations = {a.generation for a in journal.attempts if a.name in _alt_names()}
    assert all(g % 2 == 0 for g in alt_generations)
    bound = [a for a in journal.attempts if a.bound_by >= 0]
    assert sorted(a.name for a in bound) == sorted(f"p{i}" for i in range(PODS))
    # Some bindings outlived the framework that started them (held on Permit over a reload).
    spanning = [a for a in bound if a.in_force_at_bind != a.bound_by]
    assert spanning
    # Pods held on Permit across reloads kept their timeout.
    assert set(journal.expired) == {"p3", "p61"}
    for waited in journal.expired.values():
        assert EXPIRE_TIMEOUT - 0.05 <= waited <= EXPIRE_TIMEOUT + 1.0
    # The cache was kept: no relist.
    assert (h.scheduler.pod_informer.relists, h.scheduler.node_informer.relists) == relists
    assert len(reload_seconds) == GENERATIONS
    print(
        f"reloads: max {max(reload_seconds) * 1000:.1f} ms, {len(journal.attempts)} attempts, "
        f"{len(spanning)} bindings across a reload, {PODS} pods"
    )


def _alt_names() -> set[str]:
    return {f"p{i}" for i in range(PODS) if i % 3 == 0}
