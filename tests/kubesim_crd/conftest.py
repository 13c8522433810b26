"""Fixtures for the CRD tests: an in-process kubesim (`kube`); this directory and
e2e_scheduler's processes on the path (importlib mode)."""

from __future__ import annotations

import random
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

for _dir in (Path(__file__).parent, Path(__file__).parent.parent / "e2e_scheduler"):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))

from crd_harness import TOKEN, Kube  # noqa: E402

from kubesim.cluster import Cluster, ClusterConfig  # noqa: E402
from kubesim.server import ServerOptions, build_app  # noqa: E402


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
