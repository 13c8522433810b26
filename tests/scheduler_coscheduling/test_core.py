"""scheduler-plugins' pkg/coscheduling/core/core_test.go as facts: PreFilter (sibling count,
minResources), Permit's quorum, CheckClusterResource; and the backoff and permitted caches."""

from __future__ import annotations

import pytest

from scheduler.api.objects import PodView
from scheduler.api.podgroup import PodGroupView
from scheduler.framework.interface import CycleState
from scheduler.listers.pod_groups import PodGroupObjects
from scheduler.plugins.coscheduling.core import (
    PermitOutcome,
    PodGroupManager,
    PreFilterRejection,
    check_cluster_resource,
)
from scheduler.testing import MakeNode, MakePod, make_list_snapshot, node_infos
from tests.scheduler_coscheduling.kit import member, pod_group

NODES_4CPU = [
    MakeNode("node-a").capacity({"cpu": "4"}).obj(),
    MakeNode("node-b").capacity({"cpu": "4"}).obj(),
]


def _manager(groups: list[PodGroupView], pods: list[PodView]) -> PodGroupManager:
    objects = PodGroupObjects()
    objects.add(*groups, *pods)
    snap = make_list_snapshot(NODES_4CPU)
    return PodGroupManager(objects, lambda: snap, 10.0)


PRE_FILTER_CASES = [
    (
        "pod does not belong to any pg",
        MakePod("p").obj(),
        [member("p1", "ns", "pg1").obj(), member("p2", "ns", "pg2").obj()],
        [pod_group("pg1", "ns", 1), pod_group("pg2", "ns", 1)],
        None,
    ),
    (
        "pod belongs to a non-existent pg",
        member("p", "ns", "pg-non-existent").obj(),
        [],
        [pod_group("pg1", "ns", 1)],
        None,
    ),
    (
        "pod count less than minMember",
        member("p", "ns", "pg1").obj(),
        [member("pg2-1", "ns", "pg2").obj()],
        [pod_group("pg1", "ns", 2), pod_group("pg2", "ns", 2)],
        "pre-filter pod p cannot find enough sibling pods, current pods number: 0, "
        "minMember of group: 2",
    ),
    (
        "pod count equal minMember",
        member("p1a", "ns", "pg1").obj(),
        [member("p1b", "ns", "pg1").obj(), member("p1c", "ns", "pg1").obj()],
        [pod_group("pg1", "ns", 2), pod_group("pg2", "ns", 2)],
        None,
    ),
    (
        "pod count more than minMember",
        member("p1a", "ns", "pg1").obj(),
        [member("p1b", "ns", "pg1").obj(), member("p1c", "ns", "pg1").obj()],
        [pod_group("pg1", "ns", 1)],
        None,
    ),
    (
        # 2 nodes of 4 CPUs; minResources 6 CPUs (it would fail in Filter, not here).
        "cluster's resource satisfies minResource",
        member("p1a", "ns", "pg1").obj(),
        [member("p1b", "ns", "pg1").obj(), member("p1c", "ns", "pg1").obj()],
        [pod_group("pg1", "ns", 2, min_resources={"cpu": "6"})],
        None,
    ),
    (
        "cluster's resource cannot satisfy minResource",
        member("p1a", "ns", "pg1").obj(),
        [member("p1b", "ns", "pg1").obj(), member("p1c", "ns", "pg1").obj()],
        [pod_group("pg1", "ns", 2, min_resources={"cpu": "10"})],
        "resource gap: map[cpu:2]",
    ),
]


@pytest.mark.parametrize(
    ("pod", "pending", "groups", "message"),
    [case[1:] for case in PRE_FILTER_CASES],
    ids=[case[0] for case in PRE_FILTER_CASES],
)
def test_pre_filter(
    pod: PodView, pending: list[PodView], groups: list[PodGroupView], message: str | None
) -> None:
    manager = _manager(groups, pending)
    if message is None:
        manager.pre_filter(pod)
    else:
        with pytest.raises(PreFilterRejection) as rejection:
            manager.pre_filter(pod)
        assert str(rejection.value) == message


def test_pre_filter_backed_off_group_fails_recently() -> None:
    now = [0.0]
    manager = _manager([pod_group("pg1", "ns", 1)], [member("p1", "ns", "pg1").obj()])
    manager.backed_off._clock = lambda: now[0]
    manager.backoff_pod_group("ns/pg1", 10)
    with pytest.raises(PreFilterRejection, match=r"^podGroup ns/pg1 failed recently$"):
        manager.pre_filter(member("p1", "ns", "pg1").obj())
    now[0] = 10.0
    manager.pre_filter(member("p1", "ns", "pg1").obj())  # the backoff expired
    manager.backoff_pod_group("ns/pg1", 0)  # 0: no backoff at all
    manager.pre_filter(member("p1", "ns", "pg1").obj())


PERMIT_CASES = [
    ("pod does not belong to any pg", MakePod("p", "ns").uid("p").obj(), [],
     [pod_group("pg1", "ns", 2)], PermitOutcome.POD_GROUP_NOT_SPECIFIED),
    ("pod specifies a non-existent pg", member("p", "ns", "pg-non-existent").obj(), [],
     [pod_group("pg1", "ns", 2)], PermitOutcome.POD_GROUP_NOT_FOUND),
    ("pod belongs to a pg that doesn't have quorum", member("p", "ns", "pg1").obj(), [],
     [pod_group("pg1", "ns", 2)], PermitOutcome.WAIT),
    ("pod belongs to a pg that have quorum satisfied", member("p1a", "ns", "pg1").obj(),
     [member("p1b", "ns", "pg1").node("node").obj()],
     [pod_group("pg1", "ns", 2)], PermitOutcome.SUCCESS),
]  # fmt: skip


@pytest.mark.parametrize(
    ("pod", "existing", "groups", "want"),
    [case[1:] for case in PERMIT_CASES],
    ids=[case[0] for case in PERMIT_CASES],
)
def test_permit(
    pod: PodView, existing: list[PodView], groups: list[PodGroupView], want: PermitOutcome
) -> None:
    manager = _manager(groups, existing)
    assert manager.permit(CycleState(), pod) is want


def test_permit_counts_reserved_members_and_leaves_out_the_pod_itself() -> None:
    a, b = member("a", "ns", "pg").obj(), member("b", "ns", "pg").obj()
    manager = _manager([pod_group("pg", "ns", 2)], [a, b])
    state = CycleState()
    manager.reserved[a.uid] = ("ns", "pg")  # Reserve ran for `a` before its own Permit
    assert manager.permit(state, a) is PermitOutcome.WAIT
    # Only the group's first pod at Permit asks to activate its siblings.
    assert state.read("PermitCoscheduling").activate
    manager.reserved[b.uid] = ("ns", "pg")
    assert manager.permit(CycleState(), b) is PermitOutcome.SUCCESS


CHECK_CASES = [
    ("Cluster resource enough",
     [MakePod("p1", "ns").uid("p1").node("node-a").req({"cpu": "2"}).obj()], True),
    ("Cluster resource not enough",
     [MakePod("p1", "ns").uid("p1").node("node-a").req({"cpu": "2"}).obj(),
      MakePod("p2", "ns").uid("p2").node("node-b").req({"cpu": "1"}).obj()], False),
    ("Cluster resource enough as p1's resource needs to be excluded from minResources",
     [member("p1", "ns", "pg1").node("node-a").req({"cpu": "2"}).obj(),
      MakePod("p2", "ns").uid("p2").node("node-b").req({"cpu": "1"}).obj()], True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("existing", "want"), [case[1:] for case in CHECK_CASES], ids=[case[0] for case in CHECK_CASES]
)
def test_check_cluster_resource(existing: list[PodView], want: bool) -> None:
    # In total, the cluster has 3*2 = 6 cpus.
    nodes = [
        MakeNode("node-a").capacity({"cpu": "3"}).obj(),
        MakeNode("node-b").capacity({"cpu": "3"}).obj(),
    ]
    gap = check_cluster_resource(node_infos(nodes, existing), {"cpu": 4 * 10**9}, "ns/pg1")
    assert (gap is None) is want
