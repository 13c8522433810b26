"""Single-pod preemption with WorkloadAwarePreemption on, as facts: upstream's "pod group as
victim" (kubernetes#137981; TestPreparePotentialVictimPodGroups of
default_preemption_workload_test.go, the newest preemption/types.go's NewPodVictim and
searchCrossNodesVictimPods). A pod of a PodGroup has its group's priority; a pod of a group
whose disruptionMode is `all` stands for every scheduled pod of the group, on any node."""

from __future__ import annotations

import dataclasses

from scheduler.framework.interface import CycleState
from scheduler.plugins.defaultpreemption.plugin import node_victims
from tests.scheduler_plugins_preemption.test_podgroup_preemption import group, pod, setup

GATES = {"GenericWorkload": True, "GangScheduling": True, "WorkloadAwarePreemption": True}


def _harness(gates: dict[str, bool], all_mode: bool = True):  # type: ignore[no-untyped-def]
    pods = [
        pod("p1", "p1", "n1", priority=10, group="pg1", start=0),
        pod("p2", "p2", "n2", priority=10, group="pg1", start=1),
        pod("solo", "solo", "n3", priority=20),
    ]
    h = setup({"n1": 1, "n2": 1, "n3": 1}, pods, [group("pg1", 5, all_mode=all_mode)])
    h.framework._deps = dataclasses.replace(h.framework._deps, feature_gates=gates)
    for member in pods[:2]:
        h.plugin.handle.cluster_objects.workloads.states.pod_added(member)
    return h


def _units(h, node: str) -> list[tuple[list[str], int, bool]]:  # type: ignore[no-untyped-def]
    info = h.snapshot.get(node)
    workloads = h.plugin.handle.cluster_objects.workloads
    return [
        (sorted(p.name for p in u.pods), u.priority, u.is_group)
        for u in node_victims(info, workloads)
    ]


def test_no_gang_is_a_pod_at_its_own_priority() -> None:
    assert _units(_harness(GATES), "n3") == [(["solo"], 20, False)]


def test_gang_with_disruption_mode_all_is_every_scheduled_member_at_the_group_priority() -> None:
    assert _units(_harness(GATES), "n1") == [(["p1", "p2"], 5, True)]


def test_single_mode_member_is_a_pod_at_the_group_priority() -> None:
    assert _units(_harness(GATES, all_mode=False), "n1") == [(["p1"], 5, True)]


def _victims_on(h, node: str) -> list[str]:  # type: ignore[no-untyped-def]
    preemptor = pod("high", "high", priority=100)
    info = h.snapshot.get(node).snapshot()
    victims, violating, status = h.plugin.select_victims_on_node(
        CycleState(), preemptor, info, lambda p: []
    )
    assert status.is_success, status
    assert violating == 0
    return sorted(p.name for p in victims)


def test_preempting_one_member_of_an_all_mode_gang_takes_the_whole_gang() -> None:
    assert _victims_on(_harness(GATES), "n1") == ["p1", "p2"]


def test_gate_off_takes_only_the_pod_on_the_node() -> None:
    off = {**GATES, "WorkloadAwarePreemption": False}
    assert _victims_on(_harness(off), "n1") == ["p1"]


def test_gate_on_single_mode_takes_only_the_pod_on_the_node() -> None:
    assert _victims_on(_harness(GATES, all_mode=False), "n1") == ["p1"]


def test_group_priority_protects_a_member_the_preemptor_outranks_by_pod_priority() -> None:
    """The member's own priority (10) is below 50, its group's (60) is not."""
    h = setup(
        {"n1": 1},
        [pod("p1", "p1", "n1", priority=10, group="pg1")],
        [group("pg1", 60, all_mode=True)],
    )
    h.framework._deps = dataclasses.replace(h.framework._deps, feature_gates=GATES)
    preemptor = pod("mid", "mid", priority=50)
    _, _, status = h.plugin.select_victims_on_node(
        CycleState(), preemptor, h.snapshot.get("n1").snapshot(), lambda p: []
    )
    assert not status.is_success
    assert status.message == "No preemption victims found for incoming pod"
