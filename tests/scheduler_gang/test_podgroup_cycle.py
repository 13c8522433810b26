"""The PodGroup cycle through a real Scheduler against the embedded cluster (kubesim): a gang is
placed all or nothing (upstream's schedule_one_podgroup_test.go outcomes), members wait in
PreEnqueue for their quorum, and two gangs that cannot both fit never hold resources against
each other. PodGroups are put into the scheduler's listers directly: kubesim serves
scheduling.k8s.io/v1beta1 too (tests/e2e_plugins/test_gang_scheduling.py drives it there)."""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from scheduler.api.workload import PodGroupView
from tests.scheduler_core.harness import Harness, running_scheduler
from tests.scheduler_gang.gang_builders import pod_group

GANG_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: GangScheduling
"""
GATES = {"GenericWorkload": True, "GangScheduling": True}


def gang_scheduler(tmp_path: Path) -> AbstractAsyncContextManager[Harness]:
    return running_scheduler(tmp_path, GANG_CONFIG, feature_gates=GATES)


def _add_group(h: Harness, group: PodGroupView) -> None:
    h.scheduler.cluster_objects.workloads.pod_groups.on_add(group)
    h.scheduler.queue.move_all_to_active_or_backoff(
        h.scheduler.cluster_objects.workloads.pod_groups.event_of(None, group), None, group
    )


async def _create_member(h: Harness, name: str, group: str, cpu: str = "1") -> dict[str, Any]:
    return await h.api.create_pod(
        name, cpu=cpu, extra_spec={"schedulingGroup": {"podGroupName": group}}
    )


async def _bound(h: Harness, names: list[str]) -> dict[str, str]:
    out = {}
    for name in names:
        pod = await h.api.get_pod(name)
        node = pod.get("spec", {}).get("nodeName")
        if node:
            out[name] = node
    return out


async def _scheduled_condition(h: Harness, name: str) -> dict[str, Any] | None:
    for _ in range(50):
        pod = await h.api.get_pod(name)
        for condition in pod.get("status", {}).get("conditions") or ():
            if condition.get("type") == "PodScheduled":
                return dict(condition)
        await asyncio.sleep(0.05)
    return None


async def test_gang_that_does_not_fit_places_nobody_then_all_once_room_appears(
    tmp_path: Path,
) -> None:
    async with gang_scheduler(tmp_path) as h:
        # Three nodes take one 3-CPU member each: a gang of 4 does not fit.
        for i in range(3):
            await h.api.create_node(f"n{i}", cpu="4")
        await h.wait_nodes_cached(3)
        _add_group(h, pod_group("gang", 4))
        names = [f"m{i}" for i in range(4)]
        for name in names:
            await _create_member(h, name, "gang", cpu="3")
        condition = await _scheduled_condition(h, "m0")
        assert condition is not None and condition["status"] == "False"
        await asyncio.sleep(0.3)
        assert await _bound(h, names) == {}
        # Nothing stays assumed: the cache holds no member.
        assert h.scheduler.cache.assumed_pod_count() == 0
        messages = {
            c["message"] for c in [await _scheduled_condition(h, n) for n in names] if c is not None
        }
        # The members that fitted carry the group's message (v1.37: GangScheduling's
        # PlacementFeasible), the one that did not its FitError.
        assert messages == {
            "minCount (4) cannot be satisfied: 3 scheduled, 0 remaining",
            "0/3 nodes are available: 3 Insufficient cpu.",
        }
        # A fourth node: all four bind.
        await h.api.create_node("n3", cpu="4")
        for name in names:
            await h.wait_bound(name, timeout=15)
        assert len(set((await _bound(h, names)).values())) == 4


async def test_members_wait_in_pre_enqueue_until_the_quorum_exists(tmp_path: Path) -> None:
    async with gang_scheduler(tmp_path) as h:
        await h.api.create_node("n0", cpu="8")
        await h.wait_nodes_cached(1)
        _add_group(h, pod_group("gang", 3))
        await _create_member(h, "a", "gang")
        await _create_member(h, "b", "gang")
        await asyncio.sleep(0.3)
        queued = h.scheduler.queue.get((await h.api.get_pod("a"))["metadata"]["uid"])
        assert queued is not None and queued.gated
        assert queued.gating_plugin == "GangScheduling"
        assert await _bound(h, ["a", "b"]) == {}
        await _create_member(h, "c", "gang")
        for name in ("a", "b", "c"):
            await h.wait_bound(name, timeout=15)


async def test_two_gangs_that_cannot_both_fit_never_hold_resources_against_each_other(
    tmp_path: Path,
) -> None:
    async with gang_scheduler(tmp_path) as h:
        # Four slots of 3 CPUs; two gangs of 3: only one fits at a time.
        for i in range(4):
            await h.api.create_node(f"n{i}", cpu="4")
        await h.wait_nodes_cached(4)
        _add_group(h, pod_group("blue", 3))
        _add_group(h, pod_group("red", 3))
        blue = [f"blue-{i}" for i in range(3)]
        red = [f"red-{i}" for i in range(3)]
        for b, r in zip(blue, red, strict=True):
            await _create_member(h, b, "blue", cpu="3")
            await _create_member(h, r, "red", cpu="3")
        await asyncio.sleep(1.0)
        placed_blue, placed_red = await _bound(h, blue), await _bound(h, red)
        # One gang complete, the other holds nothing.
        assert sorted([len(placed_blue), len(placed_red)]) == [0, 3]
        if not placed_blue and not placed_red:
            raise AssertionError("neither gang was placed")
        # The waiting gang holds nothing: no member is assumed or waiting on Permit.
        assert h.scheduler.cache.assumed_pod_count() == 0
        for profile in h.scheduler.profiles.values():
            assert len(profile.framework.waiting_pods) == 0
