"""ObservabilityServer over real HTTP: /metrics, health endpoints, debug routes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from observability.explain import ExplainStore
from observability.http import ObservabilityServer, explain_routes, fetch_explanation
from observability.metrics import SchedulerMetrics


class Flags:
    synced = False
    leading = True

    def informer_sync(self) -> tuple[bool, str]:
        return self.synced, "caches not synced"

    def leader(self) -> tuple[bool, str]:
        return self.leading, "not the leader"


@pytest.fixture
def flags() -> Flags:
    return Flags()


@pytest.fixture
async def server(flags: Flags) -> AsyncIterator[ObservabilityServer]:
    metrics = SchedulerMetrics()
    metrics.pod_scheduled("default-scheduler", 0.01)
    store = ExplainStore()
    store.record(
        "u",
        "default",
        "web",
        profile="default-scheduler",
        attempt=1,
        result="unschedulable",
        message="0/1 nodes are available: 1 Insufficient cpu.",
        filter_verdicts={"n1": ("NodeResourcesFit", "Insufficient cpu")},
    )

    async def boom(request: web.Request) -> web.StreamResponse:
        return web.Response(text="custom")

    server = ObservabilityServer(
        "127.0.0.1",
        0,
        metrics=metrics,
        health=lambda: (True, ""),
        ready={"informer-sync": flags.informer_sync, "leader-election": flags.leader},
        debug_routes={**explain_routes(store), "/debug/custom": boom},
    )
    port = await server.start()
    assert port > 0 and server.port == port
    yield server
    await server.stop()


async def get(server: ObservabilityServer, path: str) -> tuple[int, str, str]:
    async with aiohttp.ClientSession() as session, session.get(server.url + path) as response:
        return response.status, response.headers["Content-Type"], await response.text()


async def test_metrics_endpoint_serves_parseable_exposition(server: ObservabilityServer) -> None:
    status, content_type, body = await get(server, "/metrics")
    assert status == 200
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    names = {family.name for family in text_string_to_metric_families(body)}
    assert "scheduler_schedule_attempts" in names


@pytest.mark.parametrize(
    ("synced", "leading", "path", "status", "body"),
    [
        (False, True, "/healthz", 200, "ok"),
        (False, True, "/livez", 200, "ok"),
        (True, True, "/readyz", 200, "ok"),
        (
            True,
            True,
            "/readyz?verbose",
            200,
            "[+]ping ok\n[+]informer-sync ok\n[+]leader-election ok\nreadyz check passed\n",
        ),
        (
            False,
            True,
            "/readyz",
            500,
            "[+]ping ok\n[-]informer-sync failed: caches not synced\n[+]leader-election ok\n"
            "readyz check failed\n",
        ),
        (
            False,
            True,
            "/readyz?exclude=informer-sync",
            200,
            "ok",
        ),
        (True, False, "/readyz/leader-election", 500, "internal server error: not the leader\n"),
        (True, True, "/readyz/informer-sync", 200, "ok"),
        (True, True, "/healthz/scheduler", 200, "ok"),
    ],
)
async def test_health_endpoints(
    server: ObservabilityServer,
    flags: Flags,
    synced: bool,
    leading: bool,
    path: str,
    status: int,
    body: str,
) -> None:
    flags.synced, flags.leading = synced, leading
    got_status, content_type, got_body = await get(server, path)
    assert (got_status, got_body) == (status, body)
    assert content_type.startswith("text/plain")


async def test_debug_routes_and_explain(server: ObservabilityServer) -> None:
    assert (await get(server, "/debug/custom"))[2] == "custom"
    status, content_type, _ = await get(server, "/debug/explain/default/web")
    assert (status, content_type) == (200, "application/json")
    data = await fetch_explanation(server.url, "default", "web")
    assert data is not None and data["filterVerdicts"][0]["plugin"] == "NodeResourcesFit"
    assert await fetch_explanation(server.url, "default", "missing") is None
    status, _, text = await get(server, "/debug/explain/default/web?format=text")
    assert status == 200 and "Insufficient cpu" in text
    status, _, text = await get(server, "/debug/explain/default/missing?format=text")
    assert status == 404 and "no scheduling attempt recorded" in text


async def test_a_crashing_check_fails_the_endpoint_not_the_server() -> None:
    def broken() -> tuple[bool, str]:
        raise RuntimeError("oops")

    async with ObservabilityServer("127.0.0.1", 0, ready=broken) as server:
        status, _, body = await get(server, "/readyz")
        assert status == 500
        assert "[-]scheduler failed: check raised RuntimeError('oops')" in body
        assert (await get(server, "/healthz"))[0] == 200
        assert (await get(server, "/metrics"))[0] == 404  # no metrics given


async def test_port_in_use_raises_and_port_before_start_is_an_error() -> None:
    async with ObservabilityServer("127.0.0.1", 0) as first:
        second = ObservabilityServer("127.0.0.1", first.port)
        with pytest.raises(RuntimeError):
            _ = second.port
        with pytest.raises(OSError):
            await second.start()
