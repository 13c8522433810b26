"""A whole kubesim (Cluster.start: storage controllers included) on a loopback port, driven over
HTTP with tests/kubesim's `Kube` client (loaded from its file: pytest runs with
--import-mode=importlib and conftest modules share one name)."""

from __future__ import annotations

import asyncio
import importlib.util
import random
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp

_TESTS = Path(__file__).parent.parent


def _load(path: Path, name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_kubesim_fixtures = _load(_TESTS / "kubesim" / "conftest.py", "kubesim_test_fixtures")
Kube = _kubesim_fixtures.Kube
TOKEN: str = _kubesim_fixtures.TOKEN

from kubesim.cluster import Cluster, ClusterConfig  # noqa: E402
from kubesim.nodes import NodeTemplate  # noqa: E402
from kubesim.storage.controllers import StorageOptions  # noqa: E402

CORE = "/api/v1"
STORAGE = "/apis/storage.k8s.io/v1"
NS = "default"


class StorageKube(Kube):  # type: ignore[misc,valid-type]
    """Kube plus the reads and writes storage tests repeat."""

    cluster: Cluster

    async def create(self, path: str, body: dict[str, Any]) -> Any:
        status, created = await self.call("POST", path, body)
        assert status == 201, created
        return created

    async def get(self, path: str) -> Any:
        status, body = await self.call("GET", path)
        return body if status == 200 else None

    async def patch(self, path: str, body: dict[str, Any]) -> Any:
        status, patched = await self.call(
            "PATCH", path, body, content_type="application/merge-patch+json"
        )
        assert status == 200, patched
        return patched

    async def delete(self, path: str) -> None:
        status, body = await self.call("DELETE", path)
        assert status == 200, body

    async def claim(self, name: str) -> Any:
        return await self.get(f"{CORE}/namespaces/{NS}/persistentvolumeclaims/{name}")

    async def volume(self, name: str) -> Any:
        return await self.get(f"{CORE}/persistentvolumes/{name}")

    async def volumes(self) -> list[Any]:
        return list((await self.get(f"{CORE}/persistentvolumes"))["items"])

    async def create_claim(self, name: str, **spec: Any) -> Any:
        spec.setdefault("accessModes", ["ReadWriteOnce"])
        spec.setdefault("resources", {"requests": {"storage": "1Gi"}})
        return await self.create(
            f"{CORE}/namespaces/{NS}/persistentvolumeclaims",
            {"metadata": {"name": name}, "spec": spec},
        )

    async def create_volume(
        self, name: str, labels: dict[str, str] | None = None, **spec: Any
    ) -> Any:
        spec.setdefault("accessModes", ["ReadWriteOnce"])
        spec.setdefault("capacity", {"storage": "1Gi"})
        spec.setdefault("hostPath", {"path": f"/mnt/{name}"})
        return await self.create(
            f"{CORE}/persistentvolumes",
            {"metadata": {"name": name, "labels": labels or {}}, "spec": spec},
        )

    async def create_class(self, name: str, provisioner: str, mode: str, **rest: Any) -> Any:
        return await self.create(
            f"{STORAGE}/storageclasses",
            {
                "metadata": {"name": name},
                "provisioner": provisioner,
                "volumeBindingMode": mode,
                **rest,
            },
        )

    async def settle(self) -> None:
        """Until the storage controllers have nothing left to do (their delay included)."""
        quiet = 0
        for _ in range(1000):
            await asyncio.sleep(0.005)
            quiet = quiet + 1 if self.cluster.storage.idle else 0
            if quiet == 3:  # with a data dir, an event follows its write by an fsync
                return
        raise AssertionError("the storage controllers did not settle")


async def eventually(check: Callable[[], Awaitable[Any]], timeout: float = 3.0) -> Any:
    """The first truthy result of `check`, polled until `timeout`."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = await check()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out; last result: {result!r}")
        await asyncio.sleep(0.01)


@asynccontextmanager
async def running(
    *,
    nodes: int = 0,
    zones: int = 0,
    storage: StorageOptions | None = None,
    data_dir: Path | None = None,
) -> AsyncIterator[StorageKube]:
    cluster = Cluster(
        ClusterConfig(
            nodes=nodes,
            node_template=NodeTemplate(zones=zones),
            token=TOKEN,
            tls=False,
            data_dir=data_dir,
            storage=storage or StorageOptions(),
        ),
        rng=random.Random(7),
    )
    await cluster.start()
    try:
        async with aiohttp.ClientSession(base_url=cluster.url) as session:
            yield StorageKube(session, cluster)
    finally:
        await cluster.stop()
