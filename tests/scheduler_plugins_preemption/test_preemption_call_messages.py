"""What the victims of a preemption are told (scheduler/cycle/preemption_calls.py, upstream's
executor.go PreemptPod): a pod's preemption keeps its messages byte for byte; a PodGroup's
(workload-aware preemption) names the group, as upstream's podGroupExecutorPreemptor does."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from scheduler.cycle.preemption_calls import PreemptionCalls
from scheduler.framework.interface import Preemption
from scheduler.testing import make_pod


class FakeClient:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []

    async def request(self, method: str, path: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
        self.calls.append((method, path, kwargs.get("body")))
        return 200, {}


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(
        self, regarding: Any, kind: str, reason: str, action: str, note: str, c: str
    ) -> None:
        self.events.append((regarding.name, reason, note))


def run(preemption: Preemption) -> tuple[FakeClient, FakeRecorder]:
    client, recorder = FakeClient(), FakeRecorder()
    calls = PreemptionCalls(
        client,  # type: ignore[arg-type]
        recorder,  # type: ignore[arg-type]
        lambda: datetime(2026, 1, 1, tzinfo=UTC),
        lambda uid: False,
        lambda pod: None,
    )
    asyncio.run(calls.run(preemption, "default-scheduler"))
    return client, recorder


def condition_message(client: FakeClient) -> str:
    patches = [body for method, _, body in client.calls if method == "PATCH"]
    message: str = patches[0]["status"]["conditions"][0]["message"]
    return message


def test_a_pods_preemption_says_pod_as_before() -> None:
    victim = make_pod("v", uid="v", node_name="n1")
    client, recorder = run(Preemption(make_pod("p", uid="p-uid"), "n1", (victim,)))
    assert recorder.events == [("v", "Preempted", "Preempted by pod p-uid on node n1")]
    assert condition_message(client) == (
        "default-scheduler: preempting to accommodate a higher priority pod"
    )


def test_a_pod_groups_preemption_names_the_group_and_the_cluster() -> None:
    victims = (make_pod("v1", uid="v1", node_name="n1"), make_pod("v2", uid="v2", node_name="n2"))
    preemption = Preemption(
        make_pod("m0", uid="m0"),
        "cluster",
        victims,
        preemptor_type="podgroup",
        preemptor_uid="pg-uid",
    )
    client, recorder = run(preemption)
    assert recorder.events == [
        ("v1", "Preempted", "Preempted by podgroup pg-uid on node cluster"),
        ("v2", "Preempted", "Preempted by podgroup pg-uid on node cluster"),
    ]
    assert condition_message(client) == (
        "default-scheduler: preempting to accommodate a higher priority podgroup"
    )
    assert [m for m, _, _ in client.calls] == ["PATCH", "DELETE", "PATCH", "DELETE"]
