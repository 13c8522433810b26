"""The event recorder writing through an API I/O worker (recorder.py, io_process.WorkerEvents).

Against a small events endpoint: the worker writes the same body as the scheduling process
would, the requests show in the scheduler's rest_client metrics, and a worker killed while it
holds events counts them dropped (``worker_lost``) while the recorder carries on with its
replacement. The recorder's own tests (tests/scheduler_core/test_recorder.py and
test_recorder_outage.py) run in both layouts.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from observability.metrics import SchedulerMetrics
from scheduler.client.process_transport import ProcessTransport
from scheduler.client.recorder import EventRecorder, ObjectRef
from scheduler.client.rest import ClientSettings, KubeClient

EVENTS_PATH = "/apis/events.k8s.io/v1/namespaces/{namespace}/events"


class EventsEndpoint:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.hold = asyncio.Event()  # cleared: requests wait until it is set
        self.hold.set()
        self.held = 0

    async def create(self, request: web.Request) -> web.Response:
        body = await request.json()
        if body["regarding"]["name"] == "invalid":
            return web.json_response({"message": "Event is invalid: note too long"}, status=422)
        self.held += 1
        await self.hold.wait()
        self.held -= 1
        self.bodies.append(body)
        return web.json_response(body, status=201)


@pytest.fixture
async def endpoint() -> AsyncIterator[tuple[EventsEndpoint, str]]:
    endpoint = EventsEndpoint()
    app = web.Application()
    app.router.add_post(EVENTS_PATH, endpoint.create)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield endpoint, f"http://127.0.0.1:{port}"
    endpoint.hold.set()
    await runner.cleanup()


async def until(condition: Any, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)


NOTES = [
    "0/3 nodes are available: 3 Insufficient cpu.",
    "ünïcödé ☃ " * 200,  # truncated to its first 1024 characters, as in process
    "",
]


async def test_a_worker_writes_the_same_events_as_the_scheduling_process(
    endpoint: tuple[EventsEndpoint, str],
) -> None:
    server, url = endpoint
    settings = ClientSettings(master=url, qps=0)
    clients = [await KubeClient.connect(settings), await KubeClient.connect(settings, 1)]
    metrics = SchedulerMetrics()
    clients[1].observe_requests(metrics.rest_client)
    recorders = [EventRecorder(c.with_own_rate_limit(), time.monotonic) for c in clients]
    tasks = [asyncio.create_task(r.run()) for r in recorders]
    pod = ObjectRef("team-a", "web-0", "uid-0", "42")
    try:
        for recorder in recorders:
            for note in NOTES:
                recorder.record(pod, "Warning", "FailedScheduling", "Scheduling", note, "sched")
            await until(lambda r=recorder: r.written == len(NOTES))  # type: ignore[misc]
    finally:
        for task in tasks:
            task.cancel()
        for client in clients:
            await client.close()

    def comparable(body: dict[str, Any]) -> dict[str, Any]:
        name_prefix, _, suffix = body["metadata"]["name"].rpartition(".")
        assert name_prefix == "web-0" and len(suffix) == 16
        assert body["eventTime"].endswith("Z")
        return {
            **body,
            "metadata": {**body["metadata"], "name": name_prefix},
            "eventTime": None,
        }

    # Both recorders write their events concurrently, so they may reach the server in any order.
    local, remote = server.bodies[: len(NOTES)], server.bodies[len(NOTES) :]

    def in_note_order(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted((comparable(b) for b in bodies), key=lambda b: str(b["note"]))

    assert in_note_order(remote) == in_note_order(local)
    assert sorted(len(b["note"]) for b in remote) == [0, len(NOTES[0]), 1024]
    assert remote[0]["reportingInstance"].startswith("sched-")
    # the worker's requests count in the scheduler's rest_client metrics, as its own would
    host = url.removeprefix("http://")
    sample = metrics.registry.get_sample_value(
        "rest_client_requests_total", {"code": "201", "method": "POST", "host": host}
    )
    assert sample == len(NOTES)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGKILL")
async def test_a_killed_worker_counts_the_events_it_held_as_dropped(
    endpoint: tuple[EventsEndpoint, str],
) -> None:
    server, url = endpoint
    client = await KubeClient.connect(ClientSettings(master=url, qps=0), api_workers=1)
    transport = client.transport
    assert isinstance(transport, ProcessTransport)
    metrics = SchedulerMetrics()
    recorder = EventRecorder(client.with_own_rate_limit(), time.monotonic, metrics=metrics)
    task = asyncio.create_task(recorder.run())
    try:
        server.hold.clear()
        for i in range(6):  # four being written (the writers), two queued behind them
            pod = ObjectRef("default", f"p{i}", f"uid-{i}", "1")
            recorder.record(pod, "Normal", "Scheduled", "Binding", "assigned", "sched")
        await until(lambda: server.held == 4)
        (pid,) = transport.worker_pids
        os.kill(pid, signal.SIGKILL)
        await until(lambda: recorder.dropped["worker_lost"] == 6)
        assert (
            metrics.registry.get_sample_value(
                "aiosched_events_dropped_total", {"reason": "worker_lost"}
            )
            == 6
        )
        server.hold.set()
        # the recorder carries on: the next events go to the replacement
        recorder.record(
            ObjectRef("default", "q", "uid-q", "1"), "Normal", "Scheduled", "B", "", "s"
        )
        await until(lambda: recorder.written == 1)
        assert transport.restarts == 1
        assert recorder.written + recorder.dropped_total == recorder.recorded == 7
    finally:
        task.cancel()
        await client.close()


async def test_a_refused_event_is_logged_by_the_worker_with_its_pod(
    endpoint: tuple[EventsEndpoint, str], capfd: pytest.CaptureFixture[str]
) -> None:
    _, url = endpoint
    client = await KubeClient.connect(ClientSettings(master=url, qps=0), api_workers=1)
    recorder = EventRecorder(client.with_own_rate_limit(), time.monotonic)
    task = asyncio.create_task(recorder.run())
    try:
        pod = ObjectRef("default", "invalid", "uid-i", "1")
        recorder.record(pod, "Normal", "Scheduled", "Binding", "assigned", "sched")
        await until(lambda: recorder.dropped["refused"] == 1)
    finally:
        task.cancel()
        await client.close()
    lines = [line for line in capfd.readouterr().err.splitlines() if "event refused" in line]
    assert len(lines) == 1, lines
    assert lines[0].startswith("aiosched-io-0 ")
    assert 'pod="default/invalid"' in lines[0] and "status=422" in lines[0]
    assert 'error="Event is invalid: note too long"' in lines[0]


async def test_an_event_recorded_as_its_worker_dies_is_held_not_raised(
    endpoint: tuple[EventsEndpoint, str],
) -> None:
    """The worker's socket is closing but its connection_lost has not run yet (a kill -9 seen
    mid-iteration): recording must neither raise into the binding cycle that records nor lose
    the event; it goes to the replacement."""
    _, url = endpoint
    client = await KubeClient.connect(ClientSettings(master=url, qps=0), api_workers=1)
    transport = client.transport
    assert isinstance(transport, ProcessTransport)
    recorder = EventRecorder(client.with_own_rate_limit(), time.monotonic)
    task = asyncio.create_task(recorder.run())
    try:
        pod = ObjectRef("default", "p", "uid-p", "1")
        recorder.record(pod, "Normal", "Scheduled", "Binding", "assigned", "sched")
        await until(lambda: recorder.written == 1)
        (worker,) = [slot for slot in transport._slots if slot is not None]
        assert worker._transport is not None
        worker._transport.close()  # closing now; connection_lost runs on a later iteration
        recorder.record(pod, "Normal", "Scheduled", "Binding", "again", "sched")
        await until(lambda: recorder.written == 2)
        assert transport.restarts == 1
        assert recorder.recorded == 2 and recorder.dropped_total == 0
    finally:
        task.cancel()
        await client.close()
