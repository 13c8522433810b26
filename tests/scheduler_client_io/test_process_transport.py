"""KubeClient through API I/O worker processes (scheduler/client/process_transport.py).

Against a small HTTP server standing in for the API server: requests and watches give the
same answers through the workers as through this process's own session; a worker killed with
SIGKILL fails what it had in flight as ApiError and is replaced; workers that cannot start make
``failed()`` raise; and workers die with their parent.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
from aiohttp import web

from scheduler.client import process_transport
from scheduler.client.process_transport import (
    ProcessTransport,
    WorkersFailed,
    default_api_workers,
)
from scheduler.client.rest import ClientSettings, KubeClient
from scheduler.client.transport import ApiError

WATCH_LINES = [orjson.dumps({"type": "ADDED", "n": i, "pad": "x" * (i * 37)}) for i in range(200)]
BIG_LINE_COUNT = 3000
BIG_PAD = "y" * 8000  # 3000 lines of 8 KB: 24 MB, three times a stream's window


class FakeApiServer:
    def __init__(self) -> None:
        self.release_slow = asyncio.Event()
        self.slow_started = asyncio.Event()
        app = web.Application()
        app.router.add_route("*", "/echo/{rest:.*}", self.echo)
        app.router.add_get("/status/{code}", self.status)
        app.router.add_get("/watch", self.watch)
        app.router.add_get("/big-watch", self.big_watch)
        app.router.add_get("/slow", self.slow)
        self.app = app

    async def echo(self, request: web.Request) -> web.Response:
        body = await request.read()
        return web.json_response(
            {
                "method": request.method,
                "path": request.path,
                "query": sorted(request.query.items()),
                "content_type": request.headers.get("Content-Type"),
                "body": body.decode(),
                "user_agent": request.headers.get("User-Agent"),
            },
            status=201,
        )

    async def status(self, request: web.Request) -> web.Response:
        return web.Response(status=int(request.match_info["code"]), text="not json")

    async def watch(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        data = b"".join(line + b"\n" for line in WATCH_LINES)
        # cut mid-line on purpose: the scheduler must see whole lines all the same
        for start in range(0, len(data), 1013):
            await response.write(data[start : start + 1013])
            await asyncio.sleep(0)
        return response

    async def big_watch(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        for i in range(BIG_LINE_COUNT):
            await response.write(orjson.dumps({"n": i, "pad": BIG_PAD}) + b"\n")
        return response

    async def slow(self, request: web.Request) -> web.Response:
        self.slow_started.set()
        await self.release_slow.wait()
        return web.json_response({})


@pytest.fixture
async def api() -> AsyncIterator[tuple[FakeApiServer, str]]:
    server = FakeApiServer()
    runner = web.AppRunner(server.app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield server, f"http://127.0.0.1:{port}"
    server.release_slow.set()
    await runner.cleanup()


async def _both(url: str, workers: int = 2) -> tuple[KubeClient, KubeClient]:
    settings = ClientSettings(master=url, qps=0, user_agent="aiosched-test")
    return await KubeClient.connect(settings), await KubeClient.connect(settings, workers)


async def _lines(client: KubeClient, path: str) -> list[bytes]:
    async with client.stream(path, {"watch": "1"}) as (status, body):
        assert status == 200
        return [line.strip() for line in [line async for line in body] if line.strip()]


async def test_requests_and_watches_answer_the_same_through_the_workers(
    api: tuple[FakeApiServer, str],
) -> None:
    _, url = api
    local, remote = await _both(url)
    try:
        assert isinstance(remote.transport, ProcessTransport)
        assert len(remote.transport.worker_pids) == 2
        calls = [
            ("POST", "/echo/api/v1/namespaces/ns/pods/p/binding", {"a": "1"}, {"x": [1, "é"]}),
            ("PATCH", "/echo/x", {"fieldSelector": "a=b,c!=d", "limit": "500"}, {"m": None}),
            ("GET", "/echo/list", None, None),
            ("DELETE", "/echo/d", None, None),
            ("GET", "/status/404", None, None),
            ("GET", "/status/503", None, None),
        ]
        for method, path, params, body in calls:
            expected = await local.request(method, path, params=params, body=body)
            for _ in range(3):  # each worker in turn
                assert await remote.request(method, path, params=params, body=body) == expected
        assert (await remote.request("GET", "/echo/ua"))[1]["user_agent"] == "aiosched-test"
        assert await _lines(remote, "/watch") == await _lines(local, "/watch") == WATCH_LINES
        async with remote.stream("/status/410", {}) as (status, reply):
            assert (status, await reply.read()) == (410, b"not json")
    finally:
        await local.close()
        await remote.close()


async def test_a_watch_larger_than_the_window_arrives_whole(api: tuple[FakeApiServer, str]) -> None:
    _, url = api
    client = await KubeClient.connect(ClientSettings(master=url, qps=0), api_workers=1)
    try:
        count = 0
        async with client.stream("/big-watch", {}) as (_, body):
            async for line in body:
                if line:
                    assert orjson.loads(line)["n"] == count
                    count += 1
                    if count % 500 == 0:
                        await asyncio.sleep(0.01)  # a slow reader: the worker must wait
        assert count == BIG_LINE_COUNT
    finally:
        await client.close()


def _comm(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_a_killed_worker_fails_its_requests_and_is_replaced(
    api: tuple[FakeApiServer, str],
) -> None:
    server, url = api
    client = await KubeClient.connect(ClientSettings(master=url, qps=0), api_workers=1)
    transport = client.transport
    assert isinstance(transport, ProcessTransport)
    try:
        (pid,) = transport.worker_pids
        assert _comm(pid).startswith("aiosched-io-0")
        # it yields the core to the scheduling process rather than preempting it on wakeup
        assert os.sched_getscheduler(pid) == os.SCHED_BATCH
        in_flight = asyncio.create_task(client.request("GET", "/slow"))
        await asyncio.wait_for(server.slow_started.wait(), 10)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(ApiError, match="aiosched-io-0 is gone"):
            await asyncio.wait_for(in_flight, 10)
        # the next request waits for the replacement instead of failing
        status, answer = await asyncio.wait_for(client.request("GET", "/echo/after"), 30)
        assert (status, answer["path"]) == (201, "/echo/after")
        assert transport.restarts == 1 and transport.worker_pids != [pid]
    finally:
        await client.close()
    assert transport.worker_pids == []


async def test_workers_that_cannot_start_again_fail_the_transport(
    api: tuple[FakeApiServer, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, url = api
    monkeypatch.setattr(process_transport, "MAX_START_FAILURES", 2)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        textwrap.dedent(f"""\
            apiVersion: v1
            kind: Config
            clusters: [{{name: c, cluster: {{server: "{url}"}}}}]
            users: [{{name: u, user: {{token: t}}}}]
            contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
            current-context: x
            """)
    )
    client = await KubeClient.connect(ClientSettings(kubeconfig=str(kubeconfig)), api_workers=1)
    transport = client.transport
    assert isinstance(transport, ProcessTransport)
    try:
        kubeconfig.unlink()  # a replacement cannot read its credentials
        os.kill(transport.worker_pids[0], signal.SIGKILL)
        with pytest.raises(WorkersFailed, match="failed to start 2 times in a row"):
            await asyncio.wait_for(transport.failed(), 60)
        with pytest.raises(ApiError, match="no API I/O worker"):
            await client.request("GET", "/echo/x")
    finally:
        await client.close()


PARENT = """
import asyncio, sys, time
from scheduler.client.rest import ClientSettings, KubeClient

async def main():
    client = await KubeClient.connect(ClientSettings(master=sys.argv[1]), api_workers=2)
    print(*client.transport.worker_pids, flush=True)
    await asyncio.sleep(120)

asyncio.run(main())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG")
def test_workers_die_with_their_parent(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    # no API server needed: the workers only build their session until the first request
    parent = subprocess.Popen(
        [sys.executable, str(script), "http://127.0.0.1:9"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        pids = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(pids) == 2 and all(Path(f"/proc/{pid}").exists() for pid in pids)
        parent.kill()
        parent.wait(10)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in pids):
            assert time.monotonic() < deadline, "a worker outlived its parent"
            time.sleep(0.05)
    finally:
        parent.kill()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie is dead, waiting for init to reap it


@pytest.mark.parametrize(
    ("cores", "workers"),
    [(None, 0), (1, 0), (2, 1), (3, 1), (4, 1), (8, 2), (16, 4), (64, 4)],
)
def test_the_default_keeps_one_process_on_one_core(cores: int | None, workers: int) -> None:
    assert default_api_workers(cores) == workers


async def test_a_refused_connection_reads_the_same_through_the_workers() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    local, remote = await _both(url, workers=1)
    try:
        failures = []
        for client in (local, remote):
            with pytest.raises(ApiError) as caught:
                await client.request("GET", "/version")
            failures.append((caught.value.reason, caught.value.untrusted_certificate))
        assert failures == [("Connection refused", False)] * 2
    finally:
        await local.close()
        await remote.close()
