"""Binding-cycle failure paths against a real API server: 409 on bind, Permit rejection."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from harness import Harness, running_scheduler

from scheduler.api.objects import PodView
from scheduler.framework.interface import CycleState
from scheduler.framework.registry import PluginEntry, in_tree_registry
from scheduler.framework.status import Status

HOLD_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    permit:
      enabled:
      - name: HoldAtPermit
"""


class HoldAtPermit:
    """Parks every pod at Permit until the test allows or rejects it."""

    name = "HoldAtPermit"

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    def permit(self, state: CycleState, pod: PodView, node_name: str) -> tuple[Status, float]:
        return Status.wait(plugin=self.name), 30.0


def hold_registry() -> Any:
    registry = in_tree_registry()
    registry.register(PluginEntry(HoldAtPermit.name, HoldAtPermit))
    return registry


async def _waiting(h: Harness, uid: str) -> Any:
    fwk = h.scheduler.profiles["default-scheduler"].framework
    return await h.wait_for(lambda: fwk.get_waiting_pod(uid), what="pod waiting at Permit")


async def test_bind_conflict_leaves_the_other_binding_alone(tmp_path: Path) -> None:
    async with running_scheduler(tmp_path, HOLD_CONFIG, hold_registry()) as h:
        await h.api.create_node("a")
        await h.api.create_node("b")
        pod = await h.api.create_pod("p")
        waiting = await _waiting(h, pod["metadata"]["uid"])
        chosen = waiting.pod.node_name
        other = "b" if chosen == "a" else "a"
        # Someone else binds the pod while we wait at Permit.
        status, body = await h.api.request(
            "POST",
            "/api/v1/namespaces/default/pods/p/binding",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": "p"},
                "target": {"kind": "Node", "name": other},
            },
        )
        assert status == 201, body
        waiting.allow(HoldAtPermit.name)
        await h.wait_for(lambda: h.scheduler.stats.bind_failures == 1, what="bind failure")
        await asyncio.sleep(0.3)
        assert (await h.api.get_pod("p"))["spec"]["nodeName"] == other
        assert h.bindings.bindings == {"default/p": [other]}
        assert not h.scheduler.cache.is_assumed_pod(pod["metadata"]["uid"])
        assert sum(h.scheduler.queue.counts().values()) == 0


async def test_permit_rejection_unreserves_requeues_and_explains(tmp_path: Path) -> None:
    async with running_scheduler(tmp_path, HOLD_CONFIG, hold_registry()) as h:
        await h.api.create_node("a", cpu="1")
        await h.wait_for(lambda: h.scheduler.cache.node_count() == 1, what="node in cache")
        pod = await h.api.create_pod("p", cpu="800m")
        uid = pod["metadata"]["uid"]
        (await _waiting(h, uid)).reject(HoldAtPermit.name, "not today")

        async def failed() -> list[dict[str, Any]]:
            events = await h.api.events_for("p")
            return [e for e in events if e["reason"] == "FailedScheduling"]

        (event, *_) = await h.wait_for(failed, what="FailedScheduling")
        assert "not today" in event["note"]
        # The assumed pod was forgotten: the node's CPU is free again.
        info = h.scheduler.cache.get_node_info("a")
        assert info is not None and info.requested.milli_cpu == 0
        # Any cluster event brings it back (HoldAtPermit registers no events: all count).
        await h.api.create_node("b", cpu="1")
        (await _waiting(h, uid)).allow(HoldAtPermit.name)
        assert await h.wait_bound("p") in {"a", "b"}
        assert len(h.bindings.bindings["default/p"]) == 1
