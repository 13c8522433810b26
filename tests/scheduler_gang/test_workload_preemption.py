"""Workload-aware preemption through a real Scheduler against the embedded cluster: a gang
that fits only once lower-priority pods go preempts just enough of them and binds all its
members; a gang below everything running preempts nobody and says so (upstream's
podgrouppreemption.go, default_preemption.go's PodGroupPostFilter and schedule_one_podgroup.go's
applyPodGroupPostFilterResult)."""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from scheduler.api.workload import PodGroupView
from tests.scheduler_core.harness import Harness, running_scheduler
from tests.scheduler_gang.test_podgroup_cycle import GANG_CONFIG

GATES = {"GenericWorkload": True, "GangScheduling": True, "WorkloadAwarePreemption": True}


def preempting_scheduler(tmp_path: Path) -> AbstractAsyncContextManager[Harness]:
    return running_scheduler(tmp_path, GANG_CONFIG, feature_gates=GATES)


def _gang(name: str, min_count: int, priority: int) -> PodGroupView:
    return PodGroupView.from_dict(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {
                "name": name,
                "namespace": "default",
                "uid": f"pg-{name}",
                "resourceVersion": "1",
            },
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}, "priority": priority},
        }
    )


def _add_group(h: Harness, group: PodGroupView) -> None:
    workloads = h.scheduler.cluster_objects.workloads
    workloads.pod_groups.on_add(group)
    h.scheduler.queue.move_all_to_active_or_backoff(
        workloads.pod_groups.event_of(None, group), None, group
    )


async def _exists(h: Harness, name: str) -> bool:
    status, _ = await h.api.request("GET", f"/api/v1/namespaces/default/pods/{name}")
    return status == 200


async def _fill(h: Harness, per_node: int, cpu: str, priority: int) -> list[str]:
    """Two nodes filled with `per_node` pods each, of a PriorityClass of `priority`."""
    extra: dict[str, Any] = {}
    if priority:
        await h.api.create(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"p{priority}"},
                "value": priority,
            },
        )
        extra = {"priorityClassName": f"p{priority}"}
    names = []
    for node in range(2):
        for i in range(per_node):
            name = f"low-{node}-{i}"
            await h.api.create_pod(name, cpu=cpu, extra_spec=extra)
            names.append(name)
    for name in names:
        await h.wait_bound(name)
    return names


async def _condition(h: Harness, name: str) -> dict[str, Any] | None:
    for _ in range(100):
        pod = await h.api.get_pod(name)
        for condition in pod.get("status", {}).get("conditions") or ():
            if condition.get("type") == "PodScheduled":
                return dict(condition)
        await asyncio.sleep(0.05)
    return None


async def test_a_higher_priority_gang_preempts_just_enough_and_binds_every_member(
    tmp_path: Path,
) -> None:
    async with preempting_scheduler(tmp_path) as h:
        for i in range(2):
            await h.api.create_node(f"n{i}", cpu="4")
        await h.wait_nodes_cached(2)
        low = await _fill(h, per_node=4, cpu="1", priority=0)
        _add_group(h, _gang("gang", 2, priority=100))
        members = ["m0", "m1"]
        for name in members:
            await h.api.create_pod(
                name, cpu="3", extra_spec={"schedulingGroup": {"podGroupName": "gang"}}
            )
        nodes = {await h.wait_bound(name, timeout=20) for name in members}
        assert nodes == {"n0", "n1"}
        survivors = [name for name in low if await _exists(h, name)]
        # 3 CPUs per node were needed: three victims on each node, one pod reprieved on each.
        assert len(survivors) == 2
        survivor_nodes = {(await h.api.get_pod(n))["spec"]["nodeName"] for n in survivors}
        assert survivor_nodes == {"n0", "n1"}


async def test_a_gang_below_everything_running_preempts_nobody_and_says_why(
    tmp_path: Path,
) -> None:
    async with preempting_scheduler(tmp_path) as h:
        for i in range(2):
            await h.api.create_node(f"n{i}", cpu="4")
        await h.wait_nodes_cached(2)
        low = await _fill(h, per_node=2, cpu="2", priority=10)
        _add_group(h, _gang("gang", 2, priority=5))
        for name in ("m0", "m1"):
            await h.api.create_pod(
                name, cpu="3", extra_spec={"schedulingGroup": {"podGroupName": "gang"}}
            )
        messages = set()
        for name in ("m0", "m1"):
            condition = await _condition(h, name)
            assert condition is not None and condition["status"] == "False"
            messages.add(condition["message"])
        assert (
            "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, "
            "pod group preemption: No preemption victims found for incoming preemptor"
        ) in messages
        await asyncio.sleep(0.3)
        assert all([await _exists(h, name) for name in low])
