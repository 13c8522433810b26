"""/metrics/resources is served next to /metrics, behind the same request guard."""

from __future__ import annotations

import aiohttp
import pytest
from aiohttp import web

from observability.http import ObservabilityServer
from observability.metrics import EXPOSITION_CONTENT_TYPE, SchedulerMetrics
from observability.resource_metrics import PodResources


async def only_with_token(request: web.Request) -> web.StreamResponse | None:
    if request.headers.get("Authorization") == "Bearer ok":
        return None
    return web.Response(status=403, text=f"forbidden: {request.path}")


@pytest.mark.parametrize("path", ["/metrics", "/metrics/resources"])
async def test_same_guard_as_metrics(path: str) -> None:
    metrics = SchedulerMetrics()
    metrics.pod_resources.set_source(
        lambda: [PodResources("ns", "p", "n1", "default-scheduler", "", {"cpu": 0.5}, {})]
    )
    async with (
        ObservabilityServer(port=0, metrics=metrics, guard=only_with_token) as server,
        aiohttp.ClientSession() as session,
    ):
        async with session.get(server.url + path) as refused:
            assert refused.status == 403
        headers = {"Authorization": "Bearer ok"}
        async with session.get(server.url + path, headers=headers) as allowed:
            assert allowed.status == 200
            assert allowed.headers["Content-Type"] == EXPOSITION_CONTENT_TYPE
            body = await allowed.text()
    if path == "/metrics/resources":
        assert (
            'kube_pod_resource_request{namespace="ns",node="n1",pod="p",priority="",'
            'resource="cpu",scheduler="default-scheduler",unit="cores"} 0.5' in body
        )
