"""Fixtures: an in-process kubesim app behind aiohttp's test client.

Until kubesim.validation / kubesim.defaults (another helper's modules) exist, minimal stand-ins
are installed so the server's own semantics can be tested; once they land the real ones are used.
"""

from __future__ import annotations

import importlib
import random
import sys
import types
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer


def _install_stand_ins() -> None:
    try:
        importlib.import_module("kubesim.validation")
    except ImportError:
        module = types.ModuleType("kubesim.validation")

        @dataclass
        class Cause:
            field: str
            reason: str
            message: str

        def validate(kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
            name = (obj.get("metadata") or {}).get("name") or ""
            if not name:
                return [
                    Cause(
                        "metadata.name",
                        "FieldValueRequired",
                        "Required value: name or generateName is required",
                    )
                ]
            if name != name.lower() or "_" in name:
                return [Cause("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}"')]
            return []

        module.Cause = Cause  # type: ignore[attr-defined]
        module.validate = validate  # type: ignore[attr-defined]
        sys.modules["kubesim.validation"] = module
    try:
        importlib.import_module("kubesim.defaults")
    except ImportError:
        module = types.ModuleType("kubesim.defaults")

        class AdmissionError(Exception):
            def __init__(self, code: int, reason: str, message: str) -> None:
                super().__init__(message)
                self.code, self.reason, self.message = code, reason, message

        def apply_defaults(kind: str, obj: dict[str, Any]) -> None:
            if kind == "Pod":
                obj.setdefault("status", {})["phase"] = "Pending"
                obj.setdefault("spec", {}).setdefault("schedulerName", "default-scheduler")

        def admit_create(kind: str, obj: dict[str, Any], lookup: Any) -> None:
            return None

        module.AdmissionError = AdmissionError  # type: ignore[attr-defined]
        module.apply_defaults = apply_defaults  # type: ignore[attr-defined]
        module.admit_create = admit_create  # type: ignore[attr-defined]
        sys.modules["kubesim.defaults"] = module


_install_stand_ins()

from kubesim.cluster import Cluster, ClusterConfig  # noqa: E402

TOKEN = "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


# kubesim's layouts: everything in one process, or a store with API front-ends (--workers N;
# here two front-ends in the test's process, connected to the store as kubesim-api-N are).
# A module runs its tests in both with `pytestmark = pytest.mark.parametrize("layout", LAYOUTS)`.
LAYOUTS = ("one-process", "workers")


@pytest.fixture
def layout() -> str:
    return "one-process"


class Kube:
    """A test client that sends the token and speaks JSON. With several front-ends, `call`
    takes them in turn, so a test's read usually goes to another front-end than its write."""

    def __init__(
        self, client: TestClient, cluster: Cluster, others: tuple[TestClient, ...] = ()
    ) -> None:
        self.client = client
        self.cluster = cluster
        self._clients = [client, *others]
        self._turn = 0
        self.stores: list[Any] = [cluster.store]  # and each front-end's replica

    def _next_client(self) -> TestClient:
        self._turn += 1
        return self._clients[self._turn % len(self._clients)]

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
        **params: str,
    ) -> tuple[int, Any]:
        import orjson

        data = None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
        hdrs = {**AUTH, "Content-Type": content_type, **(headers or {})}
        client = self._next_client()
        async with client.request(method, path, data=data, headers=hdrs, params=params) as r:
            raw = await r.read()
            return r.status, (orjson.loads(raw) if raw else None)

    async def create_pod(self, name: str, namespace: str = "default", **spec: Any) -> Any:
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
        }
        status, body = await self.call("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
        assert status == 201, body
        return body


@pytest.fixture
async def kube(tmp_path: Any, layout: str) -> AsyncIterator[Kube]:
    cluster = Cluster(
        ClusterConfig(nodes=2, token=TOKEN, bookmark_interval=0.2),
        rng=random.Random(1),
    )
    async with await _started(cluster, layout) as kube:
        yield kube


class _Started:
    def __init__(self, cluster: Cluster, layout: str = "one-process") -> None:
        self.cluster = cluster
        self.layout = layout
        self.clients: list[TestClient] = []
        self.store_side: Any = None

    async def __aenter__(self) -> Kube:
        from kubesim.server import ServerOptions, build_app

        if self.layout == "workers":
            from tests.kubesim.workers_harness import StoreSide

            self.store_side = StoreSide.of(self.cluster, TOKEN)
            frontends = [await self.store_side.connect() for _ in range(2)]
            apps = [frontend.app() for frontend in frontends]
            await self.cluster._bootstrap()  # as kubesim-store: once its front-ends follow
        else:
            await self.cluster._bootstrap()
            apps = [build_app(self.cluster.api, ServerOptions(token=TOKEN, bookmark_interval=0.2))]
        for app in apps:
            client = TestClient(TestServer(app))
            await client.start_server()
            self.clients.append(client)
        await self.cluster.simulator.start(self.cluster.config.nodes)
        kube = Kube(self.clients[0], self.cluster, tuple(self.clients[1:]))
        if self.store_side is not None:
            kube.stores += [frontend.replica for frontend in self.store_side.frontends]
        return kube

    async def __aexit__(self, *exc: object) -> None:
        await self.cluster.simulator.stop()
        for client in self.clients:
            await client.close()
        if self.store_side is not None:
            await self.store_side.close()


async def _started(cluster: Cluster, layout: str = "one-process") -> _Started:
    return _Started(cluster, layout)
