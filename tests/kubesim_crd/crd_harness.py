"""The CRD tests' client: an in-process kubesim behind aiohttp's test client."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp.test_utils import TestClient

from kubesim.cluster import Cluster

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
        headers = {
            "Authorization": f"Bearer {TOKEN}",
            "Content-Type": content_type,
            "Accept": accept,
        }
        async with self.client.request(
            method, path, data=data, headers=headers, params=params
        ) as response:
            raw = await response.read()
            return response.status, (orjson.loads(raw) if raw else None)
