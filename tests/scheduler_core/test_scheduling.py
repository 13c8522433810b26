"""The scheduler end to end on an embedded cluster: placement, failures, requeue, ownership."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from harness import running_scheduler


async def test_pods_land_where_they_fit_and_bind_exactly_once(tmp_path: Path) -> None:
    async with running_scheduler(tmp_path) as h:
        await h.api.create_node("small", cpu="1", memory="2Gi")
        await h.api.create_node("large", cpu="8", memory="32Gi")
        names = [f"big-{i}" for i in range(3)] + [f"tiny-{i}" for i in range(6)]
        for name in names:
            await h.api.create_pod(name, cpu="2" if name.startswith("big") else "100m")
        placed = {name: await h.wait_bound(name) for name in names}
        assert all(placed[f"big-{i}"] == "large" for i in range(3))
        # The recorder's watch may lag behind the GETs above: let it see every binding first.
        await h.wait_for(
            lambda: len(h.bindings.bindings) == len(names), what="watch saw the bindings"
        )
        await asyncio.sleep(0.5)  # any stray second binding would show up by now
        assert {key: nodes for key, nodes in h.bindings.bindings.items()} == {
            f"default/{name}": [placed[name]] for name in names
        }


async def test_unschedulable_pod_is_explained_and_scheduled_when_a_node_fits(
    tmp_path: Path,
) -> None:
    async with running_scheduler(tmp_path) as h:
        await h.api.create_node("a", cpu="2")
        await h.api.create_node("b", cpu="2")
        await h.wait_nodes_cached(2)  # the first failure message must count both nodes
        await h.api.create_pod("huge", cpu="6")
        # 6 cpu is more than either node has: no preemption can help (fit.go's Unresolvable).
        expected = (
            "0/2 nodes are available: 2 Insufficient cpu. "
            "no new claims to deallocate, "
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        )

        async def condition() -> dict[str, Any] | None:
            pod = await h.api.get_pod("huge")
            for cond in pod.get("status", {}).get("conditions", []):
                if cond["type"] == "PodScheduled" and cond["status"] == "False":
                    return dict(cond)
            return None

        cond = await h.wait_for(condition, what="PodScheduled=False")
        assert cond["reason"] == "Unschedulable"
        assert cond["message"] == expected

        async def failed_event() -> list[dict[str, Any]]:
            return [e for e in await h.api.events_for("huge") if e["reason"] == "FailedScheduling"]

        (event, *_) = await h.wait_for(failed_event, what="FailedScheduling event")
        assert event["type"] == "Warning"
        assert event["note"] == expected
        assert event["reportingController"] == "default-scheduler"

        # A node that fits is a cluster event: the pod comes back at once, not after 5 minutes.
        await h.api.create_node("c", cpu="8")
        assert await h.wait_bound("huge", timeout=5) == "c"
        events = await h.wait_for(lambda: _scheduled_events(h, "huge"), what="Scheduled event")
        assert events[0]["note"] == "Successfully assigned default/huge to c"


async def _scheduled_events(h: Any, name: str) -> list[dict[str, Any]]:
    return [e for e in await h.api.events_for(name) if e["reason"] == "Scheduled"]


async def test_pods_of_other_schedulers_are_left_alone(tmp_path: Path) -> None:
    async with running_scheduler(tmp_path) as h:
        await h.api.create_node("a")
        await h.api.create_pod("theirs", scheduler_name="someone-else")
        await h.api.create_pod("ours")
        await h.wait_bound("ours")
        await asyncio.sleep(0.5)
        pod = await h.api.get_pod("theirs")
        assert not pod["spec"].get("nodeName")
        assert await h.api.events_for("theirs") == []


async def test_gated_pod_waits_until_its_gates_are_removed(tmp_path: Path) -> None:
    async with running_scheduler(tmp_path) as h:
        await h.api.create_node("a")
        await h.api.create_pod("gated", gates=["example.com/wait"])
        await asyncio.sleep(0.5)
        assert not (await h.api.get_pod("gated"))["spec"].get("nodeName")
        assert h.scheduler.queue.counts()["gated"] == 1
        status, body = await h.api.request(
            "PATCH",
            "/api/v1/namespaces/default/pods/gated",
            {"spec": {"schedulingGates": None}},
            content_type="application/merge-patch+json",
        )
        assert status == 200, body
        assert await h.wait_bound("gated", timeout=5) == "a"


async def test_cordoned_and_tainted_nodes_are_avoided_with_upstream_reasons(
    tmp_path: Path,
) -> None:
    async with running_scheduler(tmp_path) as h:
        await h.api.create_node("cordoned")
        await h.api.request(
            "PATCH",
            "/api/v1/nodes/cordoned",
            {"spec": {"unschedulable": True}},
            content_type="application/merge-patch+json",
        )
        await h.api.create_node(
            "tainted", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
        )
        # The node watch is ordered: with "tainted" cached, the cordon is too. Otherwise the
        # pod could be bound to "cordoned" before the scheduler sees it cordoned.
        await h.wait_nodes_cached(2)
        await h.api.create_pod("p")

        async def message() -> str:
            pod = await h.api.get_pod("p")
            for cond in pod.get("status", {}).get("conditions", []):
                if cond["type"] == "PodScheduled" and cond["status"] == "False":
                    return str(cond["message"])
            return ""

        text = await h.wait_for(message, what="failure message")
        assert text == (
            "0/2 nodes are available: 1 node(s) had untolerated taint(s), "
            "1 node(s) were unschedulable. "
            "no new claims to deallocate, "
            "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        )
        # Uncordoning is a node update the queue routes back to the pod.
        await h.api.request(
            "PATCH",
            "/api/v1/nodes/cordoned",
            {"spec": {"unschedulable": None}},
            content_type="application/merge-patch+json",
        )
        assert await h.wait_bound("p", timeout=5) == "cordoned"
