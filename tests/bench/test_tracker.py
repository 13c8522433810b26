"""bench.tracker and bench.kubeapi: counting bound pods from a list+watch, reading kubeconfigs."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from bench.kubeapi import Endpoint, KubeApi, bulk, read_kubeconfig
from bench.tracker import PodTracker


def _pod(name: str, node: str | None = None, rv: int = 1) -> dict[str, Any]:
    spec = {"nodeName": node} if node else {}
    return {"metadata": {"name": name, "resourceVersion": str(rv)}, "spec": spec}


class FakeSource:
    """Lists, then serves one scripted watch connection per call (then blocks)."""

    def __init__(self, lists: list[list[dict[str, Any]]], watches: list[list[dict[str, Any]]]):
        self.lists = lists
        self.watches = watches
        self.watched_from: list[str] = []
        self.list_calls = 0

    async def get(self, path: str) -> dict[str, Any]:
        items = self.lists[min(self.list_calls, len(self.lists) - 1)]
        self.list_calls += 1
        return {"metadata": {"resourceVersion": str(100 * self.list_calls)}, "items": items}

    async def watch(self, path: str, resource_version: str) -> AsyncIterator[dict[str, Any]]:
        self.watched_from.append(resource_version)
        if not self.watches:
            await asyncio.Event().wait()
        for event in self.watches.pop(0):
            yield event


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


async def _track(source: FakeSource, count: int) -> PodTracker:
    tracker = PodTracker(source, "namespace-2", Clock())
    task = asyncio.create_task(tracker.run())
    try:
        await asyncio.wait_for(tracker.wait_for(count), 5)
    finally:
        task.cancel()
    return tracker


async def test_counts_each_pod_once_when_first_seen_bound() -> None:
    source = FakeSource(
        lists=[[_pod("a", "n1"), _pod("b")]],
        watches=[
            [
                {"type": "ADDED", "object": _pod("c", rv=101)},
                {"type": "MODIFIED", "object": _pod("b", "n2", rv=102)},
                {"type": "MODIFIED", "object": _pod("b", "n2", rv=103)},  # status update
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "104"}}},
                {"type": "MODIFIED", "object": _pod("c", "n1", rv=105)},
            ]
        ],
    )
    tracker = await _track(source, 3)
    assert tracker.bound_at == {"a": 1.0, "b": 2.0, "c": 3.0}
    assert source.watched_from == ["100"]


async def test_resumes_from_last_version_and_relists_on_gone() -> None:
    source = FakeSource(
        lists=[[], [_pod("a", "n1"), _pod("b", "n1")]],
        watches=[
            [{"type": "MODIFIED", "object": _pod("a", "n1", rv=150)}],  # server closes
            [{"type": "ERROR", "object": {"code": 410, "reason": "Expired"}}],
            [{"type": "ADDED", "object": _pod("c", "n2", rv=201)}],
        ],
    )
    tracker = await _track(source, 3)
    assert set(tracker.bound_at) == {"a", "b", "c"}
    assert source.watched_from == ["100", "150", "200"]


async def test_bulk_runs_every_index_with_bounded_concurrency() -> None:
    seen: list[int] = []
    in_flight = 0
    peak = 0

    async def work(index: int) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0)
        seen.append(index)
        in_flight -= 1

    await bulk(50, 4, work)
    assert sorted(seen) == list(range(50))
    assert peak == 4


def _kubeconfig(cluster: dict[str, Any], user: dict[str, Any]) -> str:
    return yaml.safe_dump(
        {
            "clusters": [
                {"name": "other", "cluster": {"server": "https://wrong"}},
                {"name": "c", "cluster": cluster},
            ],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "ctx",
        }
    )


@pytest.mark.parametrize(
    ("cluster", "user", "expected"),
    [
        ({"server": "http://127.0.0.1:1/"}, {"token": "t"}, Endpoint("http://127.0.0.1:1", "t")),
        (
            {"server": "https://h:6443", "certificate-authority-data": base64.b64encode(b"PEM")},
            {},
            Endpoint("https://h:6443", None, b"PEM"),
        ),
        (
            {"server": "https://h", "insecure-skip-tls-verify": True},
            {"token": "x"},
            Endpoint("https://h", "x", None, True),
        ),
    ],
)
def test_read_kubeconfig_uses_the_current_context(
    tmp_path: Path, cluster: dict[str, Any], user: dict[str, Any], expected: Endpoint
) -> None:
    if "certificate-authority-data" in cluster:
        cluster = {
            **cluster,
            "certificate-authority-data": cluster["certificate-authority-data"].decode(),
        }
    path = tmp_path / "kubeconfig"
    path.write_text(_kubeconfig(cluster, user))
    assert read_kubeconfig(path) == expected


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [(Endpoint("https://h", insecure=True), False), (Endpoint("https://h"), True)],
)
def test_ssl_option(endpoint: Endpoint, expected: bool) -> None:
    assert endpoint.ssl_option() is expected


async def test_client_sends_the_token_and_splits_watch_lines(aiohttp_free_port: int) -> None:
    seen_auth: list[str] = []

    async def watch(request: web.Request) -> web.StreamResponse:
        seen_auth.append(request.headers.get("Authorization", ""))
        resp = web.StreamResponse()
        await resp.prepare(request)
        # one event split across writes, two events in one write
        await resp.write(b'{"type":"ADDED","object":{"metadata":{"na')
        await resp.write(b'me":"a"}}}\n{"type":"DELETED","object":{}}\n{"type":"AD')
        await resp.write(b'DED","object":{}}\n')
        return resp

    app = web.Application()
    app.router.add_get("/api/v1/pods", watch)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", aiohttp_free_port).start()
    api = KubeApi(Endpoint(f"http://127.0.0.1:{aiohttp_free_port}", "secret"))
    try:
        events = [e async for e in api.watch("/api/v1/pods", "5")]
    finally:
        await api.close()
        await runner.cleanup()
    assert [e["type"] for e in events] == ["ADDED", "DELETED", "ADDED"]
    assert events[0]["object"]["metadata"]["name"] == "a"
    assert seen_auth == ["Bearer secret"]


@pytest.fixture
def aiohttp_free_port() -> int:
    from bench.processes import free_port

    return free_port()


def test_ssl_context_from_ca_data_is_built() -> None:
    with pytest.raises(ssl.SSLError):  # garbage PEM is refused, proving the CA is used
        Endpoint("https://h", ca_pem=b"-----BEGIN CERTIFICATE-----\nzz\n").ssl_option()
