"""Adding a member wakes the group's held members only when GangScheduling's PreEnqueue could
let them through: with the PodGroup known and at least minCount pods (before that every wake
only parked them again, O(members²) hints for a 1000-member gang: bench GangScheduling)."""

from __future__ import annotations

from typing import Any

from scheduler.cycle.podgroup_cycle import GroupAwarePodEvents
from scheduler.listers.workload_objects import WorkloadObjects
from tests.scheduler_gang.gang_builders import member, pod_group


class _Handler:
    def on_add(self, pod: Any) -> None: ...

    def on_update(self, old: Any, new: Any) -> None: ...

    def on_delete(self, pod: Any) -> None: ...


class _Queue:
    def __init__(self) -> None:
        self.wakes: list[str] = []

    def move_all_to_active_or_backoff(self, event: Any, old: Any, new: Any, **_: Any) -> None:
        self.wakes.append(new.name)


def _events(*groups: Any) -> tuple[GroupAwarePodEvents, _Queue]:
    workloads = WorkloadObjects()
    workloads.add(*groups)
    queue = _Queue()
    return GroupAwarePodEvents(_Handler(), workloads, queue), queue  # type: ignore[arg-type]


def test_members_below_min_count_wake_nobody_and_the_quorum_wakes_the_group() -> None:
    events, queue = _events(pod_group("train", 3))
    for name in ("a", "b", "c", "d"):
        events.on_add(member(name, "train"))
    assert queue.wakes == ["c", "d"]  # from the member that completes minCount on


def test_members_of_an_unknown_group_wake_nobody() -> None:
    events, queue = _events()
    events.on_add(member("a", "missing"))
    assert queue.wakes == []


def test_basic_groups_wake_as_before() -> None:
    events, queue = _events(pod_group("web"))
    events.on_add(member("a", "web"))
    assert queue.wakes == ["a"]
