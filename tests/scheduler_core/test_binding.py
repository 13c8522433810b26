"""Binding-cycle failure paths against a real API server: 409 on bind, Permit rejection."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from harness import Harness, running_scheduler

from scheduler.api.objects import PodView
from scheduler.framework.interface import CycleState
from scheduler.framework.registry import PluginEntry
from scheduler.framework.status import Status
from scheduler.plugins.registry import in_tree_registry

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
        # The failed attempt may have requeued the pod if the scheduler's pod informer had not
        # seen the other binding yet; once it has, the pod leaves the queue for good.
        informer = h.scheduler.pod_informer
        await h.wait_for(
            lambda: (
                (seen := informer.store.get("default/p")) is not None
                and seen.is_bound
                and sum(h.scheduler.queue.counts().values()) == 0
            ),
            what="pod informer saw the other binding",
        )
        await h.wait_for(lambda: "default/p" in h.bindings.bindings, what="watch saw binding")
        await asyncio.sleep(0.3)  # any stray second binding would show up by now
        assert (await h.api.get_pod("p"))["spec"]["nodeName"] == other
        assert h.bindings.bindings == {"default/p": [other]}
        assert not h.scheduler.cache.is_assumed_pod(pod["metadata"]["uid"])
        assert sum(h.scheduler.queue.counts().values()) == 0


async def test_permit_rejection_unreserves_requeues_and_explains(tmp_path: Path) -> None:
    # Without SchedulerPopFromBackoffQ the rejected pod waits out its backoff, so the node is
    # seen free in between (with it, the pod is popped again at once).
    gates = {"SchedulerPopFromBackoffQ": False}
    async with running_scheduler(tmp_path, HOLD_CONFIG, hold_registry(), feature_gates=gates) as h:
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
        # The recorder's watch may lag behind the GET in wait_bound.
        await h.wait_for(lambda: "default/p" in h.bindings.bindings, what="watch saw binding")
        assert len(h.bindings.bindings["default/p"]) == 1


class CommitThenFailBinder:
    """A Bind plugin whose request reaches the API server but whose answer the scheduler never
    sees (a timeout, a reset connection, an API server killed after committing). ``then``
    runs first: ``bind`` really binds; ``touch`` only changes the pod (a label)."""

    name = "DefaultBinder"

    def __init__(self, client: Any, then: str) -> None:
        self.client = client
        self.then = then

    async def bind(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        base = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"
        if self.then == "bind":
            body = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": pod.name, "namespace": pod.namespace},
                "target": {"kind": "Node", "name": node_name},
            }
            status, _ = await self.client.request("POST", f"{base}/binding", body=body)
        else:
            patch = {"metadata": {"labels": {"touched": "yes"}}}
            status, _ = await self.client.request(
                "PATCH", base, body=patch, content_type="application/merge-patch+json"
            )
        assert status in (200, 201), status
        return Status.error("binding: Server disconnected")


def pod_scheduled(pod: dict[str, Any]) -> dict[str, Any] | None:
    conditions = pod.get("status", {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodScheduled"), None)


async def test_a_binding_stored_despite_an_error_is_never_marked_unscheduled(
    tmp_path: Path,
) -> None:
    async with running_scheduler(tmp_path) as h:
        for profile in h.scheduler.profiles.values():
            profile.framework.bind_plugins[:] = [CommitThenFailBinder(h.scheduler.client, "bind")]
        await h.api.create_node("a")
        await h.wait_nodes_cached(1)
        await h.api.create_pod("p")
        await h.wait_for(lambda: h.scheduler.stats.bind_failures >= 1, what="the bind error")
        await asyncio.sleep(0.5)  # the status patch, if any, has landed by now
        pod = await h.api.get_pod("p")
        assert pod["spec"]["nodeName"] == "a"
        condition = pod_scheduled(pod)
        assert condition is not None and condition["status"] == "True", condition


async def test_an_unbound_pod_changed_meanwhile_still_gets_its_condition(tmp_path: Path) -> None:
    async with running_scheduler(tmp_path) as h:
        for profile in h.scheduler.profiles.values():
            profile.framework.bind_plugins[:] = [CommitThenFailBinder(h.scheduler.client, "touch")]
        await h.api.create_node("a")
        await h.wait_nodes_cached(1)
        await h.api.create_pod("p")

        async def marked() -> dict[str, Any] | None:
            condition = pod_scheduled(await h.api.get_pod("p"))
            return condition if condition and condition["status"] == "False" else None

        condition = await h.wait_for(marked, what="PodScheduled=False")
        assert condition["reason"] == "SchedulerError"
        assert "Server disconnected" in condition["message"]
        pod = await h.api.get_pod("p")
        assert pod["metadata"]["labels"]["touched"] == "yes"
        assert not pod["spec"].get("nodeName")
