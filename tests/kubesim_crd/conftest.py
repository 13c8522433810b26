"""Fixtures for the CRD tests: an in-process kubesim behind aiohttp's test client (`kube`), and
e2e_scheduler's processes on the path for the kubectl test (importlib mode)."""

from __future__ import annotations

import random
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

for _dir in (Path(__file__).parent, Path(__file__).parent.parent / "e2e_scheduler"):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))

from kubesim.cluster import Cluster, ClusterConfig  # noqa: E402
from kubesim.server import ServerOptions, build_app  # noqa: E402

TOKEN = "crd-token"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


class Kube:
    """A client that sends the token and speaks JSON."""

    def __init__(self, client: TestClient, cluster: Cluster) -> None:
        self.client = client
        self.cluster = cluster

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        accept: str = "application/json",
        **params: str,
    ) -> tuple[int, Any]:
        data = None if body is None else orjson.dumps(body)
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": content_type,
                   "Accept": accept}
        async with self.client.request(method, path, data=data, headers=headers,
                                       params=params) as response:
            raw = await response.read()
            return response.status, (orjson.loads(raw) if raw else None)


@pytest.fixture
async def kube() -> AsyncIterator[Kube]:
    cluster = Cluster(ClusterConfig(nodes=0, token=TOKEN), rng=random.Random(7))
    await cluster._bootstrap()
    app = build_app(cluster.api, ServerOptions(token=TOKEN, bookmark_interval=0.2))
    client = TestClient(TestServer(app))
    await client.start_server()
    try:
        yield Kube(client, cluster)
    finally:
        await client.close()
