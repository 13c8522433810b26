"""A pending pod of ours that the scheduler cannot parse is not left Pending without a reason:
the pod informer, the reporter and the event recorder together write a FailedScheduling event
and a PodScheduled=False condition naming the field, once, and a fixed version is queued as
usual (issue 16, item 4).

The API server is a fake that serves a pod list and a watch fed by the test, and records every
write; whatever an API server accepts, the scheduler must cope with.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

import orjson
import pytest

from scheduler.api.objects import PodView
from scheduler.client.informers import Informer, ResourceWatch
from scheduler.client.recorder import EventRecorder
from scheduler.client.rest import ApiError, KubeClient
from scheduler.cycle.unparsable_pods import UnparsablePodReporter

BAD_OVERHEAD = (
    "spec.overhead.cpu: quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


def pod(
    version: str,
    *,
    name: str = "p",
    overhead: str = "abc",
    scheduler_name: str | None = None,
    node: str = "",
    status: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if overhead:
        spec["overhead"] = {"cpu": overhead}
    if scheduler_name:
        spec["schedulerName"] = scheduler_name
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "resourceVersion": version,
        },
        "spec": spec,
        "status": dict(status or {}),
    }


class FakeApi:
    """GET lists ``pods``; the watch streams what the test puts in ``watch``; POST and PATCH
    are recorded and answered from ``patch_answers`` (then 200)."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods = pods
        self.watch: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.events: list[dict[str, Any]] = []
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.patch_answers: list[int | None] = []  # None: no answer (connection refused)

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        if method == "GET":
            return 200, {"items": self.pods, "metadata": {"resourceVersion": "10"}}
        if method == "POST":
            self.events.append(body)
            return 201, body
        self.patches.append((path, body))
        answer = self.patch_answers.pop(0) if self.patch_answers else 200
        if answer is None:
            raise ApiError("PATCH: Connection refused")
        return answer, {"message": "fake"}

    @contextlib.asynccontextmanager
    async def stream(self, path: str, params: Mapping[str, str]) -> AsyncIterator[tuple[int, Any]]:
        yield 200, self._lines()

    async def _lines(self) -> AsyncIterator[bytes]:
        while True:
            yield orjson.dumps(await self.watch.get())


class Handler:
    def __init__(self) -> None:
        self.added: list[PodView] = []

    def on_add(self, obj: PodView) -> None:
        self.added.append(obj)

    def on_update(self, old: PodView, new: PodView) -> None: ...

    def on_delete(self, obj: PodView) -> None: ...


@contextlib.asynccontextmanager
async def running(api: FakeApi) -> AsyncIterator[Handler]:
    client = cast(KubeClient, api)
    recorder = EventRecorder(client, time.monotonic)
    reporter = UnparsablePodReporter(
        recorder, client, lambda name: name == "default-scheduler", first_retry_sleep=0.001
    )
    handler = Handler()
    informer: Informer[PodView] = Informer(
        client,
        ResourceWatch("/api/v1/pods"),
        PodView.from_dict,
        handler,
        name="pods",
        on_unparsable=reporter.report,
    )
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(t) for t in (informer.run(), recorder.run(), reporter.run())]
        await informer.synced.wait()
        try:
            yield handler
        finally:
            for task in tasks:
                task.cancel()


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0.005)


async def test_event_and_condition_name_the_field_once_then_a_fix_schedules() -> None:
    api = FakeApi([pod("5")])
    async with running(api) as handler:
        await settle()
        # Writing the condition makes a new version; it comes back just as unparsable.
        condition_written = pod("6", status={"conditions": [api.patches[0][1]["status"]]})
        await api.watch.put({"type": "MODIFIED", "object": condition_written})
        await settle()
        assert handler.added == []
        (event,) = api.events
        assert (event["type"], event["reason"], event["action"]) == (
            "Warning",
            "FailedScheduling",
            "Scheduling",
        )
        assert event["note"] == f"cannot read the pod: {BAD_OVERHEAD}"
        assert event["regarding"]["uid"] == "uid-p"
        assert event["reportingController"] == "default-scheduler"
        ((path, patch),) = api.patches
        assert path == "/api/v1/namespaces/default/pods/p/status"
        assert patch["metadata"] == {"resourceVersion": "5"}
        (condition,) = patch["status"]["conditions"]
        assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
            "type": "PodScheduled",
            "status": "False",
            "reason": "SchedulerError",
            "message": f"cannot read the pod: {BAD_OVERHEAD}",
        }

        await api.watch.put({"type": "MODIFIED", "object": pod("7", overhead="10m")})
        await settle()
        assert [p.resource_version for p in handler.added] == ["7"]


async def test_a_new_problem_is_reported_again() -> None:
    api = FakeApi([pod("5")])
    async with running(api):
        await settle()
        await api.watch.put({"type": "MODIFIED", "object": pod("6", overhead="1e")})
        await settle()
    assert [e["regarding"]["resourceVersion"] for e in api.events] == ["5", "6"]
    assert len(api.patches) == 2


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (pod("5", scheduler_name="someone-else"), "another scheduler's pod"),
        (pod("5", node="n1"), "bound: the kubelet's business"),
        (
            pod(
                "5",
                status={
                    "conditions": [
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "reason": "SchedulerError",
                            "message": f"cannot read the pod: {BAD_OVERHEAD}",
                        }
                    ]
                },
            ),
            "the condition is already there (met again after a restart): event only",
        ),
    ],
)
async def test_what_is_not_patched(raw: dict[str, Any], why: str) -> None:
    api = FakeApi([raw])
    async with running(api):
        await settle()
    assert api.patches == [], why
    expected_events = 1 if "event only" in why else 0
    assert len(api.events) == expected_events, why


@pytest.mark.parametrize(
    ("answers", "patches"),
    [
        ([None, 503, 429], 4),  # down, then overloaded: retried until written
        ([409], 1),  # a newer version exists: the watch brings it
        ([422], 1),  # refused for good
    ],
)
async def test_condition_patch_retries(answers: list[int | None], patches: int) -> None:
    api = FakeApi([pod("5")])
    api.patch_answers = list(answers)
    async with running(api):
        deadline = time.monotonic() + 5
        while len(api.patches) < patches and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        await settle()  # and no more than that
    assert len(api.patches) == patches
    assert len(api.events) == 1
