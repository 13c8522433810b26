"""DESIGN: every background task belongs to a task group owned by the object that started it.
Stopping each long-lived kubesim owner (the controller manager, the write-ahead log's flusher,
the simulated kubelets, the storage controllers, a whole cluster) leaves no task running."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from kubesim import persistence
from kubesim.api import NAMESPACES, Api
from kubesim.background import BackgroundTasks
from kubesim.cluster import Cluster, ClusterConfig
from kubesim.controllers.options import ControllerOptions
from kubesim.controllers.setup import build_manager
from kubesim.embedded import EmbeddedCluster
from kubesim.nodes import NodeSimulator, NodeTemplate
from kubesim.storage.controllers import StorageControllers, StorageOptions
from kubesim.store import Store


def _running() -> set[asyncio.Task[object]]:
    return set(asyncio.all_tasks())


async def test_stopping_the_controller_manager_leaves_no_task() -> None:
    before = _running()
    manager = build_manager(Api(Store(), rng=random.Random(0)), ControllerOptions())
    await manager.start()
    assert _running() - before  # its worker runs
    await manager.stop()
    assert _running() == before


async def test_stopping_the_simulator_and_storage_controllers_leaves_no_task() -> None:
    api = Api(Store(), rng=random.Random(0))
    simulator = NodeSimulator(api, NodeTemplate())
    storage = StorageControllers(api, StorageOptions())
    before = _running()
    await simulator.start(2)
    await storage.start()
    assert _running() - before
    await storage.stop()
    await simulator.stop()
    assert _running() == before


async def test_draining_the_write_ahead_log_leaves_no_flusher(tmp_path: Path) -> None:
    store = Store()
    wal = persistence.open_data_dir(tmp_path, store)
    try:
        before = _running()
        await store.put(NAMESPACES.key, {"metadata": {"name": "default"}}, None)
        await wal.drain()
        assert _running() == before
        assert wal.fsyncs >= 1
    finally:
        wal.close()


@pytest.mark.parametrize("data_dir", [False, True])
async def test_stopping_a_cluster_leaves_no_task(tmp_path: Path, data_dir: bool) -> None:
    before = _running()
    config = ClusterConfig(nodes=2, tls=False, data_dir=tmp_path / "data" if data_dir else None)
    cluster = Cluster(config)
    await cluster.start()
    await cluster.stop()
    assert _running() == before


async def test_an_embedded_cluster_leaves_no_task(tmp_path: Path) -> None:
    before = _running()
    async with EmbeddedCluster(nodes=1, tls=False):
        pass
    assert _running() == before


async def test_background_tasks_close_cancels_or_waits() -> None:
    tasks = BackgroundTasks("test")
    finished: list[str] = []

    async def forever() -> None:
        await asyncio.Event().wait()

    async def short() -> None:
        await asyncio.sleep(0)
        finished.append("short")

    before = _running()
    tasks.start_soon(forever)
    await asyncio.sleep(0)
    assert tasks.running
    await tasks.close()
    assert not tasks.running and _running() == before
    tasks.start_soon(short)  # opens again
    await tasks.close(cancel=False)
    assert finished == ["short"] and _running() == before


async def test_background_tasks_close_raises_what_a_task_raised() -> None:
    tasks = BackgroundTasks("test")

    async def broken() -> None:
        raise ValueError("bug")

    tasks.start_soon(broken)
    await asyncio.sleep(0.01)
    assert not tasks.running
    with pytest.raises(ExceptionGroup) as caught:
        await tasks.close()
    assert caught.group_contains(ValueError, match="bug")
