"""DESIGN: every background task belongs to a task group owned by the object that started it.
Cancelling SchedulerService.run (what `aiosched run` does on SIGTERM) leaves no task running:
informers, event writers, the gauges, the leader elector and its leading work all end with it."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from kubesim.embedded import EmbeddedCluster
from scheduler.app.service import SchedulerService
from scheduler.client.rest import ClientSettings, KubeClient

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: {elect}
  resourceName: leak-check
  resourceNamespace: default
  leaseDuration: 15s
  renewDeadline: 10s
  retryPeriod: 1s
"""

# the packages whose code runs in the scheduler's tasks (kubesim's own tasks, and aiohttp's
# server-side request handlers, belong to the cluster the scheduler talks to)
ROOT = Path(__file__).resolve().parents[2]
SCHEDULER_CODE = tuple(str(ROOT / name) for name in ("scheduler", "observability", "profiles"))


def _runs_scheduler_code(task: asyncio.Task[Any]) -> bool:
    """True when some coroutine in the chain the task awaits through is the scheduler's."""
    awaited: Any = task.get_coro()
    while awaited is not None:
        code = getattr(awaited, "cr_code", None) or getattr(awaited, "gi_code", None)
        if code is not None and code.co_filename.startswith(SCHEDULER_CODE):
            return True
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    return False


@pytest.mark.parametrize("leader_elect", [False, True])
async def test_stopping_the_service_leaves_no_task(tmp_path: Path, leader_elect: bool) -> None:
    async with EmbeddedCluster(nodes=2, kubeconfig_out=tmp_path / "kubeconfig") as cluster:
        client = await KubeClient.connect(
            ClientSettings(kubeconfig=str(cluster.kubeconfig_path), qps=0)
        )
        try:
            path = tmp_path / "config.yaml"
            path.write_text(CONFIG.format(elect=str(leader_elect).lower()))
            service = SchedulerService(config_path=path, http_host="127.0.0.1", http_port=0)
            config = service.load_initial_config()
            await asyncio.sleep(0.1)  # the cluster's own background tasks start
            before = set(asyncio.all_tasks())
            run = asyncio.create_task(service.run(client, config))
            async with asyncio.timeout(10):
                while service.scheduler is None or not service.scheduler.synced():
                    await asyncio.sleep(0.05)
                while leader_elect and (service.elector is None or not service.elector.is_leader):
                    await asyncio.sleep(0.05)
            assert any(_runs_scheduler_code(t) for t in set(asyncio.all_tasks()) - before - {run})
            run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run
            running = set(asyncio.all_tasks()) - before
            assert not [task for task in running if _runs_scheduler_code(task)], running
        finally:
            await client.close()
