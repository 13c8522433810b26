"""scheduler-plugins' pkg/coscheduling/coscheduling_test.go as facts (Less, Permit,
PostFilter), and Unreserve, the optimistic PostFilter threshold and the registered events."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from scheduler.api.objects import PodView
from scheduler.api.podgroup import PodGroupView
from scheduler.framework.events import ActionType, ClusterEvent, EventResource
from scheduler.framework.interface import CycleState, NodeToStatus
from scheduler.framework.status import Code
from scheduler.plugins.registry import in_tree_registry
from scheduler.queue.event_labels import event_label
from scheduler.queue.types import QueuedPodInfo
from scheduler.testing import MakeNode, MakePod
from tests.scheduler_coscheduling.kit import framework, member, pod_group

NOW = datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC)
T = [(NOW + timedelta(seconds=d)).timestamp() for d in (0, 1, 2, 3, -2, -1)]


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


LESS_GROUPS = [
    pod_group("pg1", "namespace1", 5, creation_timestamp=_stamp(T[2])),
    pod_group("pg2", "namespace2", 5, creation_timestamp=_stamp(T[3])),
    pod_group("pg3", "namespace2", 5, creation_timestamp=_stamp(T[4])),
    pod_group("pg4", "namespace2", 5, creation_timestamp=_stamp(T[5])),
]
LOW, HIGH = 10, 100


def _q(namespace: str, name: str, priority: int, group: str = "", at: float = 0.0) -> QueuedPodInfo:
    pod = MakePod(name, namespace).priority(priority)
    if group:
        pod = pod.label("scheduling.x-k8s.io/pod-group", group)
    return QueuedPodInfo(pod.obj(), timestamp=at, initial_attempt_timestamp=at)


LESS_CASES = [
    ("p1.priority less than p2.priority",
     _q("namespace1", "pod1", LOW), _q("namespace2", "pod2", HIGH), False),
    ("p1.priority greater than p2.priority",
     _q("namespace1", "pod1", HIGH), _q("namespace2", "pod2", LOW), True),
    ("equal priority. p1 is added to schedulingQ earlier than p2",
     _q("namespace1", "pod1", HIGH, at=T[0]), _q("namespace2", "pod2", HIGH, at=T[1]), True),
    ("equal priority. p2 is added to schedulingQ earlier than p1",
     _q("namespace1", "pod1", HIGH, at=T[1]), _q("namespace2", "pod2", HIGH, at=T[0]), False),
    ("p1.priority less than p2.priority, p1 belongs to podGroup1",
     _q("namespace1", "pod1", LOW, "pg1"), _q("namespace2", "pod2", HIGH), False),
    ("p1.priority greater than p2.priority, p1 belongs to podGroup1",
     _q("namespace1", "pod1", HIGH, "pg1"), _q("namespace2", "pod2", LOW), True),
    ("equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to podGroup3",
     _q("namespace1", "pod1", HIGH, "pg3", T[0]), _q("namespace2", "pod2", HIGH, at=T[1]), True),
    ("equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to podGroup3",
     _q("namespace1", "pod1", HIGH, "pg3", T[1]), _q("namespace2", "pod2", HIGH, at=T[0]), False),
    ("p1.priority less than p2.priority, p1 belongs to podGroup1 and p2 belongs to podGroup2",
     _q("namespace1", "pod1", LOW, "pg1"), _q("namespace2", "pod2", HIGH, "pg2"), False),
    ("p1.priority greater than p2.priority, p1 belongs to podGroup1 and p2 belongs to podGroup2",
     _q("namespace1", "pod1", HIGH, "pg1"), _q("namespace2", "pod2", LOW, "pg2"), True),
    ("equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to podGroup1 and "
     "p2 belongs to podGroup2",
     _q("namespace1", "pod1", HIGH, "pg1", T[0]), _q("namespace2", "pod2", HIGH, "pg2", T[1]),
     True),
    ("equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to podGroup4 and "
     "p2 belongs to podGroup3",
     _q("namespace1", "pod1", HIGH, "pg4", T[1]), _q("namespace2", "pod2", HIGH, "pg3", T[0]),
     False),
    ("equal priority and creation time, p1 belongs to podGroup1 and p2 belongs to podGroup2",
     _q("namespace1", "pod1", HIGH, "pg1", T[0]), _q("namespace2", "pod2", HIGH, "pg2", T[0]),
     True),
    ("equal priority and creation time, p2 belong to podGroup2",
     _q("namespace1", "pod1", HIGH, at=T[0]), _q("namespace2", "pod2", HIGH, "pg2", T[0]), True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("p1", "p2", "expected"), [c[1:] for c in LESS_CASES], ids=[c[0] for c in LESS_CASES]
)
def test_less(p1: QueuedPodInfo, p2: QueuedPodInfo, expected: bool) -> None:
    fwk, plugin = framework(groups=LESS_GROUPS)
    assert plugin.less(p1, p2) is expected
    assert fwk.queue_sort_less(p1, p2) is expected


def test_less_ties_on_the_pods_namespaced_names() -> None:
    _, plugin = framework(groups=LESS_GROUPS)
    a = _q("namespace1", "a", HIGH, "pg1", T[0])
    b = _q("namespace1", "b", HIGH, "pg1", T[3])  # same group: same creation time
    assert plugin.less(a, b) and not plugin.less(b, a)


NODES = [MakeNode(f"node{i}").capacity({"cpu": "4"}).obj() for i in range(3)]


@pytest.mark.parametrize(
    ("name", "pod", "expected"),
    [
        ("pods do not belong to any podGroup", MakePod("pod1").uid("pod1").obj(), Code.SUCCESS),
        ("pods belong to a podGroup, Wait", member("pod1", "ns1", "pg1").obj(), Code.WAIT),
        ("pods belong to a podGroup, Allow", member("pod1", "ns1", "pg2").obj(), Code.SUCCESS),
    ],
)
def test_permit(name: str, pod: PodView, expected: Code) -> None:
    _, plugin = framework(
        groups=[pod_group("pg1", "ns1", 2), pod_group("pg2", "ns1", 1)], nodes=NODES
    )
    status, _ = plugin.permit(CycleState(), pod, "test")
    assert status.code == expected


def test_permit_waits_the_group_timeout_else_the_args() -> None:
    groups = [pod_group("pg1", "ns1", 2, schedule_timeout_seconds=10), pod_group("pg2", "ns1", 2)]
    _, plugin = framework(groups=groups, args={"permitWaitingTimeSeconds": 30})
    assert plugin.permit(CycleState(), member("a", "ns1", "pg1").obj(), "n")[1] == 10
    assert plugin.permit(CycleState(), member("b", "ns1", "pg2").obj(), "n")[1] == 30
    status, wait = plugin.permit(CycleState(), member("c", "ns1", "missing").obj(), "n")
    assert (status.code, status.message, wait) == (Code.UNSCHEDULABLE, "PodGroup not found", 0)


def test_post_filter() -> None:
    statuses = NodeToStatus({})
    groups = [pod_group("pg", "ns1", 2)]
    # "enough pods assigned, do not reject all": the group's pods are bound already.
    bound = [member(f"b{i}", "ns1", "pg").node("node0").obj() for i in range(10)]
    _, plugin = framework(groups=groups, members=bound, nodes=NODES)
    _, status = plugin.post_filter(CycleState(), member("pod1", "ns1", "pg").obj(), statuses)
    assert (status.code, status.message) == (Code.UNSCHEDULABLE, "")

    _, plugin = framework(groups=groups, nodes=NODES)
    _, status = plugin.post_filter(CycleState(), MakePod("pod1", "ns1").obj(), statuses)
    assert (status.code, status.message) == (Code.UNSCHEDULABLE, "can not find pod group")
    # "pod failed at filter phase, reject all pods"
    _, status = plugin.post_filter(CycleState(), member("pod1", "ns1", "pg").obj(), statuses)
    assert status.message == (
        "PodGroup ns1/pg gets rejected due to Pod pod1 is unschedulable even after PostFilter"
    )


@pytest.mark.parametrize(("assigned", "rejected"), [(9, False), (8, True)])
def test_post_filter_spares_a_group_within_the_reject_percentage(
    assigned: int, rejected: bool
) -> None:
    bound = [member(f"b{i}", "ns", "pg").node("node0").obj() for i in range(assigned)]
    _, plugin = framework(groups=[pod_group("pg", "ns", 10)], members=bound)
    _, status = plugin.post_filter(CycleState(), member("x", "ns", "pg").obj(), NodeToStatus({}))
    assert bool(status.message) is rejected


def _park(fwk: object, pod: PodView) -> None:
    status = fwk.run_permit_plugins(CycleState(), pod, "node0")  # type: ignore[attr-defined]
    assert status.is_wait


async def test_permit_of_the_last_member_allows_the_waiting_ones() -> None:
    pods = [member(n, "ns", "pg").obj() for n in ("a", "b", "c")]
    fwk, _ = framework(groups=[pod_group("pg", "ns", 3)], members=pods, nodes=NODES)
    for pod in pods[:2]:
        assert fwk.run_reserve_plugins_reserve(CycleState(), pod, "node0").is_success
        _park(fwk, pod)
    waits = [asyncio.ensure_future(fwk.wait_on_permit(pod)) for pod in pods[:2]]
    fwk.run_reserve_plugins_reserve(CycleState(), pods[2], "node0")
    assert fwk.run_permit_plugins(CycleState(), pods[2], "node0").is_success
    assert all(status.is_success for status in await asyncio.gather(*waits))


async def test_unreserve_rejects_the_group_and_post_filter_rejects_waiting_pods() -> None:
    pods = [member(n, "ns", "pg").obj() for n in ("a", "b", "c")]
    other = member("o", "ns", "other").obj()
    fwk, plugin = framework(
        groups=[pod_group("pg", "ns", 3), pod_group("other", "ns", 2)],
        members=[*pods, other],
        nodes=NODES,
    )
    for pod in (pods[0], other):
        fwk.run_reserve_plugins_reserve(CycleState(), pod, "node0")
        _park(fwk, pod)
    wait_a = asyncio.ensure_future(fwk.wait_on_permit(pods[0]))
    fwk.run_reserve_plugins_unreserve(CycleState(), pods[1], "node0")
    status = await wait_a
    assert status.code == Code.UNSCHEDULABLE
    assert "rejection in Unreserve" in status.message
    assert fwk.waiting_pods.get(other.uid) is not None  # another group is left alone

    fwk.run_reserve_plugins_reserve(CycleState(), pods[0], "node0")
    _park(fwk, pods[0])
    wait_a = asyncio.ensure_future(fwk.wait_on_permit(pods[0]))
    plugin.post_filter(CycleState(), pods[2], NodeToStatus({}))
    status = await wait_a
    assert "optimistic rejection in PostFilter" in status.message


def test_pre_filter_is_unresolvable_with_upstreams_message() -> None:
    fwk, _ = framework(groups=[pod_group("pg", "ns", 3)], members=[member("a", "ns", "pg").obj()])
    _, status, _ = fwk.run_pre_filter_plugins(CycleState(), member("a", "ns", "pg").obj(), [])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message == (
        "pre-filter pod a cannot find enough sibling pods, current pods number: 1, "
        "minMember of group: 3"
    )


def test_events_and_registration() -> None:
    entry = in_tree_registry()["Coscheduling"]
    assert entry.extension_points == {"queueSort", "preFilter", "postFilter", "permit", "reserve"}
    _, plugin = framework()
    events = [registered.event for registered in plugin.events_to_register()]
    assert ClusterEvent(EventResource.POD, ActionType.ADD) in events
    pg_add = ClusterEvent(EventResource.SCHEDULER_PLUGINS_POD_GROUP, ActionType.ADD)
    assert any(pg_add.matches(registered) for registered in events)
    assert event_label(pg_add) == "podgroups.v1alpha1.scheduling.x-k8s.ioAdd"


def test_a_group_view_reads_the_crd_fields() -> None:
    group = pod_group(
        "pg", "ns", 3, min_resources={"cpu": "2", "memory": "1Gi"}, schedule_timeout_seconds=5
    )
    assert isinstance(group, PodGroupView)
    assert (group.key, group.min_member, group.schedule_timeout_seconds) == ("ns/pg", 3, 5)
    assert group.min_resources == {"cpu": 2 * 10**9, "memory": 2**30 * 10**9}
