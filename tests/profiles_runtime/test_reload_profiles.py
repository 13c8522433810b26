"""What a reload does to pods, one situation at a time, on an embedded cluster."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from generation_plugins import Journal, generation_registry
from harness import Harness, running_scheduler
from test_reload_under_load import create_pod

from scheduler.app.service import SchedulerService


def config(*names: str) -> str:
    profiles = "".join(
        f"- schedulerName: {name}\n  plugins: {{multiPoint: {{enabled: [{{name: Generation}}]}}}}\n"
        for name in names
    )
    return (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"leaderElection: {{leaderElect: false}}\nprofiles:\n{profiles}"
    )


def service_for(h: Harness, path: Path) -> SchedulerService:
    service = SchedulerService(
        config_path=path, http_host="127.0.0.1", http_port=0, registry=h.scheduler.registry
    )
    service.scheduler = h.scheduler
    return service


async def pod_uid(h: Harness, name: str) -> str:
    return str((await h.api.get_pod(name))["metadata"]["uid"])


async def test_new_scheduler_name_picks_up_pending_pods_while_the_loop_is_idle(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(config("default-scheduler"))
    async with running_scheduler(tmp_path, path.read_text(), generation_registry(Journal())) as h:
        await h.api.create_node("node-0")
        await h.wait_nodes_cached(1)  # the reload's one attempt must find the node
        await create_pod(h, "early", "late", "")
        await asyncio.sleep(0.5)
        assert (await h.api.get_pod("early"))["spec"].get("nodeName") is None
        path.write_text(config("default-scheduler", "late"))
        with caplog.at_level(logging.INFO, logger="scheduler.cycle.scheduler"):
            assert await service_for(h, path).reload()
            # Nothing else happens in the cluster: the reload alone must start the new profile.
            assert await h.wait_bound("early", timeout=3) == "node-0"
        # The swap's log says what each number counts: profiles by name, pending pods by number.
        [swapped] = [r for r in caplog.records if r.getMessage() == "profiles swapped"]
        assert swapped.profilesAdded == ["late"]
        assert swapped.profilesRemoved == []
        assert swapped.pendingPodsQueued == 1
        assert swapped.pendingPodsDropped == 0


async def test_pods_of_a_removed_scheduler_name_leave_the_queue_untouched(
    tmp_path: Path,
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(config("default-scheduler", "alt"))
    async with running_scheduler(tmp_path, path.read_text(), generation_registry(Journal())) as h:
        await create_pod(h, "orphan", "alt", "")  # no nodes yet: unschedulable
        uid = await pod_uid(h, "orphan")
        queue = h.scheduler.queue
        parked = ("unschedulable", "backoff")
        await h.wait_for(lambda: queue.location(uid) in parked, what="orphan parked")
        path.write_text(config("default-scheduler"))
        assert await service_for(h, path).reload()
        assert queue.location(uid) is None
        await h.api.create_node("node-0")
        await create_pod(h, "kept", "default-scheduler", "")
        assert await h.wait_bound("kept") == "node-0"
        await asyncio.sleep(0.3)
        assert (await h.api.get_pod("orphan"))["spec"].get("nodeName") is None
        assert queue.location(uid) is None


async def test_pod_held_on_permit_by_a_replaced_framework_is_released_when_deleted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(config("default-scheduler", "alt"))
    async with running_scheduler(tmp_path, path.read_text(), generation_registry(Journal())) as h:
        await h.api.create_node("node-0")
        await create_pod(h, "held", "alt", "hold")
        old = h.scheduler.profiles["alt"].framework
        await h.wait_for(lambda: len(old.waiting_pods) == 1, what="held on Permit")
        path.write_text(config("default-scheduler"))
        assert await service_for(h, path).reload()
        status, _ = await h.api.request("DELETE", "/api/v1/namespaces/default/pods/held")
        assert status == 200
        # Rejected at once (not after its 30 s timeout): the binding cycle ends as failed.
        await h.wait_for(lambda: h.scheduler.stats.bind_failures == 1, timeout=3, what="reject")
        assert len(old.waiting_pods) == 0
        assert h.scheduler.stats.scheduled == 0
