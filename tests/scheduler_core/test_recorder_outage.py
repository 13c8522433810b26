"""Events survive an API server that is down for 10 s under load (issue 16, item 5): every
event recorded is eventually written or counted as dropped, and none is written twice.

The API server here is a small aiohttp app that stores events by name; it is stopped (its port
refuses connections, open connections are cut) for ten seconds while events keep coming, then
started again on the same port, answering 503 to its first requests as a restarting API server
does. The recorder writes through a real KubeClient, in this process or through an API I/O
worker.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio.client import Configuration

from observability.metrics import SchedulerMetrics
from scheduler.client.recorder import EventRecorder, ObjectRef
from scheduler.client.rest import ClientSettings, KubeClient

OUTAGE_SECONDS = 10.0
EVENTS_PER_SECOND = 50


class EventStore:
    def __init__(self) -> None:
        self.names: list[str] = []
        self.unavailable = 0  # answer 503 to this many requests first

    async def create(self, request: web.Request) -> web.Response:
        if self.unavailable > 0:
            self.unavailable -= 1
            return web.json_response({"kind": "Status", "code": 503}, status=503)
        body: dict[str, Any] = await request.json()
        name = body["metadata"]["name"]
        if name in self.names:
            return web.json_response({"kind": "Status", "code": 409}, status=409)
        self.names.append(name)
        return web.json_response(body, status=201)


@asynccontextmanager
async def serving(store: EventStore, port: int) -> AsyncIterator[None]:
    app = web.Application()
    app.router.add_post("/apis/events.k8s.io/v1/namespaces/{namespace}/events", store.create)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port, reuse_address=True).start()
    try:
        yield
    finally:
        await runner.cleanup()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# Through the worker the outage is shorter: the same paths, less of the suite's time.
@pytest.mark.parametrize(
    ("api_workers", "outage_seconds"),
    [(0, OUTAGE_SECONDS), (1, 3.0)],
    ids=["in-process", "api-worker"],
)
async def test_every_event_is_written_or_counted_across_an_outage(
    api_workers: int, outage_seconds: float
) -> None:
    store, port = EventStore(), free_port()
    # clientConnection.qps 500: the backlog drains in about a second once the server is back.
    settings = ClientSettings(master=f"http://127.0.0.1:{port}", qps=500, burst=500)
    if api_workers:  # the queue, the writes and their retries in an API I/O worker
        client = await KubeClient.connect(settings, api_workers=api_workers)
    else:
        client = KubeClient(Configuration(host=settings.master), settings)
    metrics = SchedulerMetrics()
    recorder = EventRecorder(client.with_own_rate_limit(), time.monotonic, metrics=metrics)
    writer = asyncio.create_task(recorder.run())
    recorded = 0

    async def load(seconds: float) -> None:
        nonlocal recorded
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            recorded += 1
            pod = ObjectRef("default", f"pod-{recorded}", f"uid-{recorded}", "1")
            recorder.record(pod, "Normal", "Scheduled", "Binding", "assigned", "default-scheduler")
            await asyncio.sleep(1 / EVENTS_PER_SECOND)

    try:
        async with serving(store, port):
            await load(1.0)
        await load(outage_seconds)  # down: connections refused
        store.unavailable = 3  # a restarting API server answers 503 at first
        async with serving(store, port):
            await load(1.0)
            deadline = time.monotonic() + 15
            while recorder.written + recorder.dropped_total < recorded:
                assert time.monotonic() < deadline, (recorder.written, recorder.dropped)
                await asyncio.sleep(0.05)
    finally:
        writer.cancel()
        await client.close()

    assert recorder.recorded == recorded > EVENTS_PER_SECOND * outage_seconds
    assert recorder.written + recorder.dropped_total == recorded
    # 600 events at most fit in the queue of 1000: none had to be dropped, each was written once.
    assert recorder.dropped_total == 0, recorder.dropped
    assert len(store.names) == len(set(store.names)) == recorded
    assert metrics.registry.get_sample_value("aiosched_events_written_total") == recorded
