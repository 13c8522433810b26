"""GangScheduling's facts, ported from upstream's gangscheduling_test.go (v1.36: PodGroup in
scheduling.k8s.io/v1alpha2, pods naming it in spec.schedulingGroup): PreEnqueue, Permit and the
queueing hints, as tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.api.objects import PodView
from scheduler.api.workload import PodGroupView
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.plugins.gangscheduling.plugin import (
    MSG_WAITING_FOR_MIN_COUNT_IN_QUEUE,
    MSG_WAITING_FOR_MIN_COUNT_SCHEDULED,
    PERMIT_TIMEOUT_SECONDS,
    GangScheduling,
)
from scheduler.testing import FakeHandle
from tests.scheduler_gang.gang_builders import member, pod_group


class _Waiting:
    def __init__(self) -> None:
        self.allowed: list[str] = []

    def allow(self, plugin: str) -> None:
        self.allowed.append(plugin)


@dataclass
class Handle(FakeHandle):
    waiting: dict[str, _Waiting] = field(default_factory=dict)

    def get_waiting_pod(self, uid: str) -> Any:
        return self.waiting.get(uid)


def _plugin(
    groups: list[PodGroupView], pods: list[PodView], assumed: tuple[str, ...] | list[str] = ()
) -> tuple[GangScheduling, Handle]:
    handle = Handle()
    workloads = handle.cluster_objects.workloads
    workloads.add(*groups)
    for pod in pods:
        workloads.states.pod_added(pod)
    by_name = {p.name: p for p in pods}
    for name in assumed:
        workloads.states.assume(by_name[name])
    return GangScheduling(None, handle), handle


# -- PreEnqueue: TestGangScheduling_PreEnqueue -------------------------------------------------

PRE_ENQUEUE = [
    # (name, groups, pods known, pod, expected code, expected message)
    ("pod without a group", [pod_group("pg", 2)], [], member("p", None), Code.SUCCESS, ""),
    (
        "pod group not found",
        [],
        [member("p", "pg")],
        member("p", "pg"),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        'waiting for pods\'s pod group "pg" to appear in scheduling queue',
    ),
    ("basic policy", [pod_group("pg")], [member("p", "pg")], member("p", "pg"), Code.SUCCESS, ""),
    (
        "gang: fewer pods than minCount",
        [pod_group("pg", 3)],
        [member("p1", "pg"), member("p2", "pg")],
        member("p1", "pg"),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        MSG_WAITING_FOR_MIN_COUNT_IN_QUEUE,
    ),
    (
        "gang: minCount pods exist",
        [pod_group("pg", 2)],
        [member("p1", "pg"), member("p2", "pg")],
        member("p1", "pg"),
        Code.SUCCESS,
        "",
    ),
    (
        "gang: bound pods count towards minCount",
        [pod_group("pg", 2)],
        [member("p1", "pg"), member("p2", "pg", node="n1")],
        member("p1", "pg"),
        Code.SUCCESS,
        "",
    ),
    (
        "gang: pods of another group do not count",
        [pod_group("pg", 2), pod_group("other", 1)],
        [member("p1", "pg"), member("p2", "other")],
        member("p1", "pg"),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        MSG_WAITING_FOR_MIN_COUNT_IN_QUEUE,
    ),
    (
        "gang: a group of the same name in another namespace does not count",
        [pod_group("pg", 2)],
        [member("p1", "pg"), member("p2", "pg", namespace="other")],
        member("p1", "pg"),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        MSG_WAITING_FOR_MIN_COUNT_IN_QUEUE,
    ),
]


@pytest.mark.parametrize(
    "groups, pods, pod, code, message",
    [case[1:] for case in PRE_ENQUEUE],
    ids=[c[0] for c in PRE_ENQUEUE],
)
def test_pre_enqueue(
    groups: list[PodGroupView], pods: list[PodView], pod: PodView, code: Code, message: str
) -> None:
    plugin, _ = _plugin(groups, pods)
    status = plugin.pre_enqueue(pod)
    assert status.code == code
    assert status.message == message


# -- Permit: TestGangScheduling_Permit ---------------------------------------------------------

PERMIT = [
    # (name, groups, pods, assumed before Permit, pod, code, timeout, allowed)
    ("pod without a group", [pod_group("pg", 2)], [], [], member("p", None), Code.SUCCESS, 0.0, []),
    (
        "basic policy",
        [pod_group("pg")],
        [member("p", "pg")],
        ["p"],
        member("p", "pg"),
        Code.SUCCESS,
        0.0,
        [],
    ),
    (
        "quorum not met: wait with upstream's timeout",
        [pod_group("pg", 3)],
        [member("p1", "pg"), member("p2", "pg"), member("p3", "pg")],
        ["p1", "p2"],
        member("p2", "pg"),
        Code.WAIT,
        PERMIT_TIMEOUT_SECONDS,
        [],
    ),
    (
        "quorum met by this pod: allow the waiting ones",
        [pod_group("pg", 3)],
        [member("p1", "pg"), member("p2", "pg"), member("p3", "pg")],
        ["p1", "p2", "p3"],
        member("p3", "pg"),
        Code.SUCCESS,
        0.0,
        ["uid-p1", "uid-p2"],
    ),
    (
        "quorum met with a bound member",
        [pod_group("pg", 2)],
        [member("p1", "pg", node="n1"), member("p2", "pg")],
        ["p2"],
        member("p2", "pg"),
        Code.SUCCESS,
        0.0,
        [],
    ),
    (
        "pod group gone: an error",
        [],
        [member("p1", "pg")],
        ["p1"],
        member("p1", "pg"),
        Code.ERROR,
        0.0,
        [],
    ),
]


@pytest.mark.parametrize(
    "groups, pods, assumed, pod, code, timeout, allowed",
    [case[1:] for case in PERMIT],
    ids=[c[0] for c in PERMIT],
)
def test_permit(
    groups: list[PodGroupView],
    pods: list[PodView],
    assumed: list[str],
    pod: PodView,
    code: Code,
    timeout: float,
    allowed: list[str],
) -> None:
    plugin, handle = _plugin(groups, pods, assumed)
    handle.waiting = {p.uid: _Waiting() for p in pods if p.uid != pod.uid}
    status, wait = plugin.permit(CycleState(), pod, "n1")
    assert status.code == code
    assert wait == timeout
    if code == Code.WAIT:
        assert status.message == MSG_WAITING_FOR_MIN_COUNT_SCHEDULED
    assert sorted(uid for uid, w in handle.waiting.items() if w.allowed) == allowed


def test_permit_wait_activates_the_unscheduled_members() -> None:
    pods = [member("p1", "pg"), member("p2", "pg"), member("p3", "pg")]
    plugin, handle = _plugin([pod_group("pg", 3)], pods, ["p1"])
    activated: list[str] = []
    handle.cluster_objects.workloads.activate = lambda ps: activated.extend(p.name for p in ps)
    status, _ = plugin.permit(CycleState(), pods[0], "n1")
    assert status.code == Code.WAIT
    assert sorted(activated) == ["p2", "p3"]


def test_reserve_and_unreserve_track_assumed_members() -> None:
    pods = [member("p1", "pg"), member("p2", "pg")]
    plugin, handle = _plugin([pod_group("pg", 2)], pods)
    state = handle.cluster_objects.workloads.states.get("default", "pg")
    plugin.reserve(CycleState(), pods[0], "n1")
    assert state.scheduled_pods_count() == 1
    plugin.unreserve(CycleState(), pods[0], "n1")
    assert state.scheduled_pods_count() == 0


# -- queueing hints: TestGangScheduling_isSchedulableAfter* -------------------------------------


def _hint(resource: EventResource, action: ActionType) -> Any:
    plugin = GangScheduling(None, Handle())
    for registered in plugin.events_to_register():
        if registered.event.resource == resource and registered.event.action == action:
            return registered.hint
    raise AssertionError(f"{resource} {action} not registered")


HINTS = [
    # (name, resource, action, pod, old, new, expected)
    ("pod of the same group added", EventResource.UNSCHEDULED_POD, ActionType.ADD,
     member("p", "pg"), None, member("q", "pg"), QueueingHint.QUEUE),
    ("pod of another group added", EventResource.UNSCHEDULED_POD, ActionType.ADD,
     member("p", "pg"), None, member("q", "other"), QueueingHint.SKIP),
    ("pod without a group added", EventResource.UNSCHEDULED_POD, ActionType.ADD,
     member("p", "pg"), None, member("q", None), QueueingHint.SKIP),
    ("bound pod of the same group added", EventResource.ASSIGNED_POD, ActionType.ADD,
     member("p", "pg"), None, member("q", "pg", node="n1"), QueueingHint.QUEUE),
    ("same group name, other namespace", EventResource.UNSCHEDULED_POD, ActionType.ADD,
     member("p", "pg"), None, member("q", "pg", namespace="x"), QueueingHint.SKIP),
    ("the pod's group added", EventResource.POD_GROUP, ActionType.ADD,
     member("p", "pg"), None, pod_group("pg", 2), QueueingHint.QUEUE),
    ("another group added", EventResource.POD_GROUP, ActionType.ADD,
     member("p", "pg"), None, pod_group("other", 2), QueueingHint.SKIP),
    ("minCount decreased", EventResource.POD_GROUP, ActionType.UPDATE,
     member("p", "pg"), pod_group("pg", 3), pod_group("pg", 2), QueueingHint.QUEUE),
    ("minCount increased", EventResource.POD_GROUP, ActionType.UPDATE,
     member("p", "pg"), pod_group("pg", 2), pod_group("pg", 3), QueueingHint.SKIP),
    ("minCount unchanged", EventResource.POD_GROUP, ActionType.UPDATE,
     member("p", "pg"), pod_group("pg", 2), pod_group("pg", 2, resource_version="2"),
     QueueingHint.SKIP),
    ("another group updated", EventResource.POD_GROUP, ActionType.UPDATE,
     member("p", "pg"), pod_group("other", 3), pod_group("other", 1), QueueingHint.SKIP),
    ("policy not a gang: requeue", EventResource.POD_GROUP, ActionType.UPDATE,
     member("p", "pg"), pod_group("pg"), pod_group("pg", resource_version="2"),
     QueueingHint.QUEUE),
]  # fmt: skip


@pytest.mark.parametrize(
    "resource, action, pod, old, new, expected",
    [case[1:] for case in HINTS],
    ids=[c[0] for c in HINTS],
)
def test_queueing_hints(
    resource: EventResource,
    action: ActionType,
    pod: PodView,
    old: Any,
    new: Any,
    expected: QueueingHint,
) -> None:
    assert _hint(resource, action)(pod, old, new) is expected
