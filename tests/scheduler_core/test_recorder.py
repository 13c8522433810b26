"""scheduler.client.recorder: which failed writes are retried; every event is written or counted.

The recorder's tests run in both layouts: writing in this process (``--api-workers 0``) and
through an API I/O worker (process_transport.py), which then owns the queue and the writes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

import pytest
import pytest_asyncio
from aiohttp import web
from kubernetes_asyncio.client import Configuration

from observability.metrics import SchedulerMetrics
from scheduler.client.recorder import (
    MAX_SPAM_FILTER_ENTRIES,
    EventRecorder,
    ObjectRef,
    PendingEvent,
    SampledDropLog,
    SpamFilter,
)
from scheduler.client.rest import ApiError, ClientSettings, KubeClient

# The API I/O worker is started once for the module: the tests using it run in the module's loop.
in_module_loop = pytest.mark.asyncio(loop_scope="module")

POD = ObjectRef("default", "p", "uid-p", "7")
REFUSED_NOW = object()  # marker: raise ApiError (no HTTP answer)
EVENTS_PATH = "/apis/events.k8s.io/v1/namespaces/{namespace}/events"


class ScriptedClient:
    """Answers POSTs from a script of statuses (REFUSED_NOW: connection refused), then 201."""

    def __init__(self, *script: object) -> None:
        self.script = list(script)
        self.bodies: list[dict[str, Any]] = []

    async def request(
        self, method: str, path: str, *, body: Any = None, params: Mapping[str, str] | None = None
    ) -> tuple[int, Any]:
        self.bodies.append(body)
        answer = self.script.pop(0) if self.script else 201
        if answer is REFUSED_NOW:
            raise ApiError("POST: Connection refused")
        return cast(int, answer), {"message": "scripted"}


class ScriptedApiServer:
    """The events endpoint of an API server, answering from a script as ScriptedClient does
    (REFUSED_NOW: the connection is cut before an answer)."""

    def __init__(self) -> None:
        self.client = ScriptedClient()

    async def create(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.client.bodies.append(body)
        answer = self.client.script.pop(0) if self.client.script else 201
        if answer is REFUSED_NOW:
            assert request.transport is not None
            request.transport.abort()
            return web.Response(status=500)  # never reaches the client
        return web.json_response({"message": "scripted"}, status=cast(int, answer))


@dataclass
class WorkerApi:
    server: ScriptedApiServer
    client: KubeClient


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def worker_api() -> AsyncIterator[WorkerApi]:
    server = ScriptedApiServer()
    app = web.Application()
    app.router.add_post(EVENTS_PATH, server.create)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    settings = ClientSettings(master=f"http://127.0.0.1:{port}", qps=0)
    client = await KubeClient.connect(settings, api_workers=1)
    try:
        yield WorkerApi(server, client)
    finally:
        await client.close()
        await runner.cleanup()


@dataclass
class Layout:
    """Where the events are written: a scripted client here, or a scripted API server behind an
    API I/O worker. ``make`` builds a recorder answered by ``script``; ``bodies`` are the
    requests' bodies, in order."""

    name: str
    worker_api: WorkerApi | None
    scripted: ScriptedClient | None = None

    def make(self, *script: object, **kwargs: Any) -> tuple[EventRecorder, SchedulerMetrics]:
        if self.worker_api is None:
            self.scripted = ScriptedClient(*script)
            client = cast(KubeClient, self.scripted)
        else:
            self.scripted = self.worker_api.server.client = ScriptedClient(*script)
            client = self.worker_api.client.with_own_rate_limit()
        metrics = SchedulerMetrics()
        recorder = EventRecorder(
            client,
            time.monotonic,
            metrics=metrics,
            first_retry_sleep=0.001,
            max_retry_sleep=0.002,
            **kwargs,
        )
        return recorder, metrics

    @property
    def bodies(self) -> list[dict[str, Any]]:
        assert self.scripted is not None
        return self.scripted.bodies


@pytest.fixture(params=["in-process", "api-worker"])
def layout(request: pytest.FixtureRequest) -> Layout:
    if request.param == "in-process":
        return Layout(request.param, None)
    return Layout(request.param, request.getfixturevalue("worker_api"))


async def drain(recorder: EventRecorder) -> None:
    task = asyncio.create_task(recorder.run())
    try:
        deadline = time.monotonic() + 30
        while recorder.written + recorder.dropped_total < recorder.recorded:
            assert time.monotonic() < deadline, (recorder.written, recorder.dropped)
            await asyncio.sleep(0.001)
    finally:
        task.cancel()


@in_module_loop
@pytest.mark.parametrize(
    ("script", "written", "dropped", "requests"),
    [
        ((), 1, None, 1),
        ((REFUSED_NOW, REFUSED_NOW), 1, None, 3),  # API server down, then back
        ((503, 500, 429), 1, None, 4),  # overloaded or restarting: retried
        ((REFUSED_NOW, 409), 1, None, 2),  # the unanswered try had been stored after all
        ((422,), 0, "refused", 1),  # a malformed event is not retried (as upstream)
        ((403,), 0, "refused", 1),
        ((409,), 0, "refused", 1),  # a name clash on the first try is not ours
    ],
)
async def test_which_failures_are_retried(
    layout: Layout, script: tuple[object, ...], written: int, dropped: str | None, requests: int
) -> None:
    recorder, metrics = layout.make(*script)
    recorder.record(POD, "Normal", "Scheduled", "Binding", "assigned", "default-scheduler")
    await drain(recorder)
    assert recorder.written == written
    assert len(layout.bodies) == requests
    assert len({b["metadata"]["name"] for b in layout.bodies}) == 1  # retries reuse the name
    if dropped is not None:
        assert recorder.dropped[dropped] == 1
        assert (
            metrics.registry.get_sample_value("aiosched_events_dropped_total", {"reason": dropped})
            == 1
        )
    else:
        assert recorder.dropped_total == 0
        assert metrics.registry.get_sample_value("aiosched_events_written_total") == 1


@in_module_loop
async def test_gives_up_after_the_retry_time_and_counts_it(layout: Layout) -> None:
    recorder, _ = layout.make(*[REFUSED_NOW] * 1000, retry_for_seconds=0.05)
    recorder.record(POD, "Warning", "FailedScheduling", "Scheduling", "no", "default-scheduler")
    await drain(recorder)
    assert recorder.dropped["retries_exhausted"] == 1
    assert 3 < len(layout.bodies) < 1000


@in_module_loop
async def test_full_queue_drops_and_counts_without_blocking(layout: Layout) -> None:
    recorder, metrics = layout.make(max_queued=2)
    pods = [ObjectRef("default", f"p{i}", f"uid-{i}", "1") for i in range(5)]
    for pod in pods:  # no writer runs yet: record() must return at once all the same
        recorder.record(pod, "Normal", "Scheduled", "Binding", "assigned", "default-scheduler")
    assert recorder.dropped["queue_full"] == 3
    await drain(recorder)
    assert recorder.written == 2
    assert (
        metrics.registry.get_sample_value("aiosched_events_dropped_total", {"reason": "queue_full"})
        == 3
    )


@in_module_loop
async def test_spam_filter_drops_are_counted(layout: Layout) -> None:
    recorder, _ = layout.make()
    for _ in range(30):  # the filter lets a burst of 25 through per object
        recorder.record(POD, "Warning", "FailedScheduling", "Scheduling", "no", "s")
    await drain(recorder)
    assert (recorder.written, recorder.dropped["spam_filtered"]) == (25, 5)


def test_drops_are_logged_first_then_once_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    drop_log = SampledDropLog(lambda: now[0], interval=10.0)
    caplog.set_level(logging.WARNING, logger="scheduler.client.recorder")
    pending = PendingEvent(POD, "Normal", "Scheduled", "Binding", "n", "s")
    drops = [
        (0.0, "queue_full"),  # the first: logged at once
        (1.0, "queue_full"),
        (2.0, "refused"),
        (9.9, "queue_full"),
        (10.5, "queue_full"),  # 10 s after the last line: logged with the three before it
        (11.0, "queue_full"),
    ]
    for moment, reason in drops:
        now[0] = moment
        drop_log.dropped(reason, pending.describe())
    counts = [r.dropped for r in caplog.records]  # type: ignore[attr-defined]
    assert counts == [{"queue_full": 1}, {"queue_full": 3, "refused": 1}]


async def test_events_have_a_rate_budget_of_their_own() -> None:
    """Bindings using up the client's budget do not delay events, and closing the events'
    client leaves the shared connections open."""

    async def created(request: web.Request) -> web.Response:
        return web.json_response({}, status=201)

    app = web.Application()
    app.router.add_post("/x", created)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    client = KubeClient(
        Configuration(host=f"http://127.0.0.1:{port}"), ClientSettings(qps=4, burst=1)
    )
    events = client.with_own_rate_limit()
    try:
        await client.request("POST", "/x", body={})  # the client's only banked token
        start = time.monotonic()
        status, _ = await events.request("POST", "/x", body={})
        assert status == 201 and time.monotonic() - start < 0.1
        start = time.monotonic()
        await client.request("POST", "/x", body={})  # the client itself waits ~0.25 s
        assert time.monotonic() - start > 0.2
        await events.close()
        assert (await client.request("POST", "/x", body={}))[0] == 201
    finally:
        await client.close()
        await runner.cleanup()


class ManualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_spam_filter_burst_then_one_per_refill() -> None:
    # client-go events_cache.go: defaultSpamBurst 25, defaultSpamQPS 1/300
    clock = ManualClock()
    spam = SpamFilter(clock)
    assert [spam.allow("pod-a") for _ in range(26)] == [True] * 25 + [False]
    clock.now = 299.0
    assert not spam.allow("pod-a")
    clock.now = 301.0
    assert spam.allow("pod-a")
    assert not spam.allow("pod-a")


def test_spam_filter_is_a_bounded_lru() -> None:
    # maxLruCacheEntries: the filter never holds more keys than its size, and the key evicted
    # is the least recently used one, which then starts again with a full burst
    clock = ManualClock()
    spam = SpamFilter(clock, burst=1, max_entries=3)
    for key in ("a", "b", "c"):
        assert spam.allow(key)
    assert not spam.allow("a")  # "a" is now the most recently used
    assert spam.allow("d")  # evicts "b"
    assert len(spam) == 3
    assert not spam.allow("a") and not spam.allow("c") and not spam.allow("d")
    assert spam.allow("b")  # forgotten, so a fresh burst


def test_spam_filter_size_stays_fixed_with_many_objects() -> None:
    clock = ManualClock()
    spam = SpamFilter(clock)
    for i in range(3 * MAX_SPAM_FILTER_ENTRIES):
        assert spam.allow(f"pod-{i}")
    assert len(spam) == MAX_SPAM_FILTER_ENTRIES == 4096
