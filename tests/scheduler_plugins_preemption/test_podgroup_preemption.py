"""Workload-aware preemption (DefaultPreemption's PodGroupPostFilter) on a real Framework,
ported from upstream's pkg/scheduler/framework/preemption/podgrouppreemption_test.go
(TestPodGroupEvaluator_Preempt_Victims, newest master): nodes have a capacity in "sizes", each
pod a size (label "size", 1 by default), a Filter plugin checks the sum, and the group's
scheduling function places members first-fit with the group's minCount as the gang's quorum.
Upstream hands the evaluator its victims pre-generated in MoreImportantVictim order; here they
are generated from the snapshot, so the cases check the generation too. Plus the not-eligible
and topology answers, the nominations, what the scheduler is asked to delete, and that the
snapshot is restored afterwards."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from scheduler.api.objects import PodView
from scheduler.api.workload import PodGroupView
from scheduler.cache.node_info import NodeInfo
from scheduler.framework.interface import CycleState
from scheduler.framework.registry import PluginEntry
from scheduler.framework.status import Code, Status
from scheduler.listers.cluster_objects import DisruptionBudget
from scheduler.plugins.defaultpreemption.podgroup import (
    MutableNodes,
    Victim,
    cluster_victims,
    more_important_victim,
    preemptor_policy,
    sort_victims,
)
from scheduler.testing import make_node, make_pod
from scheduler.testing.preemption import Harness, build, make_pdb

LOW, MID, HIGH = 10, 100, 1000


class CapacityFilter:
    """Upstream's mockFilterPlugin: a node takes pods up to its capacity in sizes."""

    name = "Capacity"
    capacities: dict[str, int] = {}

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def filter(self, state: CycleState, pod: PodView, info: NodeInfo) -> Status:
        used = sum(_size(p) for p in info.pods)
        if used + _size(pod) > self.capacities.get(info.node_name, 0):
            return Status.unschedulable("not enough capacity")
        return Status.OK


def _size(pod: PodView) -> int:
    return int(pod.labels.get("size", "1"))


def pod(
    name: str,
    uid: str,
    node: str = "",
    *,
    priority: int = LOW,
    group: str | None = None,
    start: int | None = None,
    labels: dict[str, str] | None = None,
    policy: str = "",
    nominated: str = "",
) -> PodView:
    view = make_pod(
        name,
        uid=uid,
        node_name=node,
        priority=priority,
        labels=labels,
        preemption_policy=policy,
        nominated_node_name=nominated,
        start_time="" if start is None else f"1970-01-01T00:00:{start:02d}Z",
    )
    if group is None:
        return view
    raw = dict(view.raw)
    raw["spec"] = {**raw["spec"], "schedulingGroup": {"podGroupName": group}}
    return PodView.from_dict(raw)


def group(
    name: str,
    priority: int | None = None,
    *,
    all_mode: bool = False,
    min_count: int | None = None,
    policy: str | None = None,
    topology: str = "",
) -> PodGroupView:
    spec: dict[str, Any] = {
        "schedulingPolicy": {"basic": {}}
        if min_count is None
        else {"gang": {"minCount": min_count}},
        "disruptionMode": {"all": {}} if all_mode else {"single": {}},
    }
    if priority is not None:
        spec["priority"] = priority
    if policy is not None:
        spec["preemptionPolicy"] = policy
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return PodGroupView.from_dict(
        {
            "metadata": {"name": name, "namespace": "default", "uid": name, "resourceVersion": "1"},
            "spec": spec,
        }
    )


def setup(
    capacities: dict[str, int],
    pods: Sequence[PodView],
    groups: Sequence[PodGroupView] = (),
    pdbs: Sequence[DisruptionBudget] = (),
    group_policy: bool = False,
) -> Harness:
    """`group_policy`: the PodGroupPreemptionPolicy gate."""
    CapacityFilter.capacities = capacities
    h = build(
        [make_node(name) for name in capacities],
        pods,
        plugins=("Capacity",),
        extra=[PluginEntry("Capacity", CapacityFilter)],
        pdbs=pdbs,
        feature_gates={"PodGroupPreemptionPolicy": group_policy},
    )
    h.plugin.handle.cluster_objects.workloads.add(*groups)
    return h


def first_fit(h: Harness, members: Sequence[PodView], quorum: int) -> Any:
    """The group's scheduling function: each member on the first node that passes Filter,
    added to it; Success once `quorum` members are placed."""

    async def schedule(nodes: MutableNodes) -> tuple[Status, list[tuple[PodView, str, CycleState]]]:
        placed: list[tuple[PodView, str, CycleState]] = []
        for member in members:
            state = CycleState()
            for info in h.snapshot.list():
                fits = h.framework.run_filter_plugins_with_nominated_pods(state, member, info)
                if fits.is_success:
                    assumed = member.with_node(info.node_name)
                    nodes.add_pod(assumed, info.node_name)
                    placed.append((assumed, info.node_name, state))
                    break
        for assumed, node, _ in placed:
            nodes.remove_pod(assumed, node)
        if len(placed) >= quorum:
            return Status.OK, placed
        return Status.unschedulable("pod group is unschedulable"), placed

    return schedule


def preempt(
    h: Harness, preemptor: PodGroupView, members: Sequence[PodView], quorum: int | None = None
) -> tuple[Any, Status]:
    schedule = first_fit(h, members, len(members) if quorum is None else quorum)
    return asyncio.run(h.plugin.pod_group_post_filter(preemptor, members, schedule))


def victims(h: Harness) -> list[str]:
    return sorted(p.name for preemption in h.preemptions for p in preemption.victims)


PREEMPTOR = group("preemptor-pg", HIGH)
ONE = [pod("p", "p", priority=HIGH)]
THREE = [pod(f"p-{c}", f"p-{c}", priority=HIGH) for c in "abc"]
SIZE1 = {"size": "1"}

# (name, capacities, pods, groups, pdbs, members, quorum, expected victims)
VICTIM_CASES = [
    (
        "Priority: mix of no groups and pod groups",
        {"node1": 2},
        [pod("p1", "v1", "node1", labels=SIZE1), pod("p2", "v2", "node1", group="pg1")],
        [group("pg1", LOW)],
        [],
        ONE,
        None,
        ["p1"],
    ),
    (
        "Priority: StartTime of pods from same group with disruption mode single",
        {"node1": 2},
        [
            pod("p1", "v1", "node1", group="pg1", start=1),
            pod("p2", "v2", "node1", group="pg1", start=0),
        ],
        [group("pg1", LOW)],
        [],
        ONE,
        None,
        ["p1"],
    ),
    (
        "Pod group with disruption mode all not reprieved",
        {"node1": 1, "node2": 1},
        [pod("p1", "v1", "node1", group="pg1"), pod("p2", "v2", "node2", group="pg1")],
        [group("pg1", LOW, all_mode=True)],
        [],
        ONE,
        None,
        ["p1", "p2"],
    ),
    (
        "PDB: Mixed groups",
        {"node1": 2},
        [
            pod("victim-pdb", "v1", "node1", group="pg1", labels={"app": "foo"}),
            pod("victim-no-pdb", "v2", "node1", group="pg1"),
        ],
        [],
        [make_pdb("pdb", match_labels={"app": "foo"})],
        ONE,
        None,
        ["victim-no-pdb"],
    ),
    (
        "Preempt single lower priority pod",
        {"node1": 1},
        [pod("p1", "v1", "node1")],
        [],
        [],
        ONE,
        None,
        ["p1"],
    ),
    (
        "Priority: Prefer lower priority victim",
        {"node1": 2},
        [
            pod("p1", "v1", "node1"),
            pod("p2", "v2", "node1", priority=MID),
            pod("p3", "v3", "node1", priority=HIGH),
        ],
        [],
        [],
        ONE,
        None,
        ["p1", "p2"],
    ),
    (
        "Efficiency: Preempt minimum number of victims",
        {"node1": 3},
        [pod(f"p{i}", f"v{i}", "node1") for i in range(1, 5)],
        [],
        [],
        ONE,
        None,
        ["p3", "p4"],
    ),
    (
        "PDB: Prefer non-violating victim",
        {"node1": 2},
        [
            pod("victim-pdb", "v1", "node1", labels={"app": "foo"}),
            pod("victim-no-pdb", "v2", "node1"),
        ],
        [],
        [make_pdb("pdb", match_labels={"app": "foo"})],
        ONE,
        None,
        ["victim-no-pdb"],
    ),
    (
        "PDB: Prefer removing non-violating victim over lower priority violating victim",
        {"node1": 2},
        [
            pod("victim-pdb", "v1", "node1", labels={"app": "foo"}),
            pod("victim-no-pdb", "v2", "node1", priority=MID),
        ],
        [],
        [make_pdb("pdb", match_labels={"app": "foo"})],
        ONE,
        None,
        ["victim-no-pdb"],
    ),
    (
        "PDB: Prefer lower priority pod when preemption without a violation is not possible",
        {"node1": 2},
        [
            pod("p1", "v1", "node1", labels={"app": "foo"}),
            pod("p2", "v2", "node1", priority=MID, labels={"app": "foo"}),
        ],
        [],
        [make_pdb("pdb", match_labels={"app": "foo"})],
        ONE,
        None,
        ["p1"],
    ),
    (
        "PodGroup: Preempt group as a whole",
        {"node1": 1, "node2": 0},
        [pod("p1", "v1", "node1", group="pg1"), pod("p2", "v2", "node2", group="pg1")],
        [group("pg1", LOW, all_mode=True)],
        [],
        ONE,
        None,
        ["p1", "p2"],
    ),
    (
        "PodGroup: Prefer single pod over podGroup for preemption candidate",
        {"node1": 3},
        [
            pod("p1", "v1", "node1"),
            pod("g1-1", "g1", "node1", group="pg1"),
            pod("g1-2", "g2", "node1", group="pg1"),
        ],
        [group("pg1", LOW, all_mode=True)],
        [],
        ONE,
        None,
        ["p1"],
    ),
    (
        "PDB: Unit violation if any member violates",
        {"node1": 3},
        [
            pod("g1-1", "g1", "node1", group="pg1", labels={"app": "foo"}),
            pod("g1-2", "g2", "node1", group="pg1"),
            pod("p1", "v1", "node1"),
        ],
        [group("pg1", LOW, all_mode=True)],
        [make_pdb("pdb", match_labels={"app": "foo"})],
        ONE,
        None,
        ["p1"],
    ),
    (
        "Gang scheduling: as many pods as possible without preempting higher priority pods",
        {"node1": 1, "node2": 1, "node3": 1, "node4": 1},
        [
            pod("p1", "v1", "node1"),
            pod("p2", "v2", "node2"),
            pod("p3", "v3", "node3", priority=HIGH),
            pod("p4", "v4", "node4", priority=HIGH),
        ],
        [],
        [],
        THREE,
        1,
        ["p1", "p2"],
    ),
    (
        "Gang scheduling: do not reprieve victim pod group of lower priority",
        {"node1": 1, "node2": 1, "node3": 1},
        [
            pod("v1", "v1", "node1", group="victim-pg", priority=MID),
            pod("v2", "v2", "node2", group="victim-pg", priority=MID),
            pod("v3", "v3", "node3"),
        ],
        [group("victim-pg", MID, all_mode=True, min_count=1)],
        [],
        THREE,
        1,
        ["v1", "v2", "v3"],
    ),
    (
        "Gang scheduling: preempt a pod group victim but do not schedule full pod group",
        {"node1": 1, "node2": 1, "node3": 1, "node4": 1},
        [
            pod("v1", "v1", "node1", group="victim-pg", priority=MID),
            pod("v2", "v2", "node2", group="victim-pg", priority=MID),
            pod("v3", "v3", "node3", group="victim-pg2", priority=HIGH),
            pod("v4", "v4", "node4", group="victim-pg2", priority=HIGH),
        ],
        [
            group("victim-pg", MID, all_mode=True, min_count=2),
            group("victim-pg2", HIGH, all_mode=True, min_count=2),
        ],
        [],
        THREE,
        1,
        ["v1", "v2"],
    ),
]


@pytest.mark.parametrize(
    "capacities, pods, groups, pdbs, members, quorum, expected",
    [pytest.param(*case[1:], id=case[0]) for case in VICTIM_CASES],
)
def test_victims(
    capacities: dict[str, int],
    pods: list[PodView],
    groups: list[PodGroupView],
    pdbs: list[DisruptionBudget],
    members: list[PodView],
    quorum: int | None,
    expected: list[str],
) -> None:
    h = setup(capacities, pods, groups, pdbs)
    before = {info.node_name: sorted(p.name for p in info.pods) for info in h.snapshot.list()}
    result, status = preempt(h, PREEMPTOR, members, quorum)
    assert status.code == Code.SUCCESS, status.message
    assert status.message == (
        f"pod group preemption: found a placement for podgroup, preempting {len(expected)} victims"
    )
    assert victims(h) == expected
    (preemption,) = h.preemptions
    assert (preemption.node_name, preemption.preemptor_type) == ("cluster", "podgroup")
    assert preemption.preemptor_uid == PREEMPTOR.uid
    # Every member the simulation placed is nominated to its node (ModeOverride).
    assert result is not None and set(result.nominations) <= {m.uid for m in members}
    assert all(result.nominations.values())
    # StartMutations / EndMutations: the snapshot is as it was.
    after = {info.node_name: sorted(p.name for p in info.pods) for info in h.snapshot.list()}
    assert after == before


@pytest.mark.parametrize(
    "pods",
    [
        pytest.param([pod("p1", "v1", "node1", priority=HIGH)], id="no victims are generated"),
        pytest.param([], id="node is empty"),
    ],
)
def test_no_victims(pods: list[PodView]) -> None:
    h = setup({"node1": 100}, pods)
    result, status = preempt(h, group("preemptor-pg", MID), [pod("p", "p", priority=MID)])
    assert result is None
    assert status.code == Code.UNSCHEDULABLE
    assert status.message == (
        "pod group preemption: No preemption victims found for incoming preemptor"
    )
    assert h.preemptions == []


def test_a_group_that_does_not_fit_even_without_victims_gets_its_own_status() -> None:
    h = setup({"node1": 1}, [pod("p1", "v1", "node1")])
    big = [pod("p", "p", priority=HIGH, labels={"size": "2"})]
    result, status = preempt(h, PREEMPTOR, big)
    assert result is None
    assert status.message == "pod group preemption: pod group is unschedulable"
    assert h.preemptions == []
    assert [p.name for p in h.snapshot.get("node1").pods] == ["p1"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "preemptor, members, gate",
    [
        pytest.param(
            group("pg", HIGH, policy="Never"), ONE, True, id="the PodGroup says Never, gate on"
        ),
        pytest.param(
            PREEMPTOR,
            [pod("p", "p", priority=HIGH, policy="Never")],
            False,
            id="a member says Never, gate off",
        ),
    ],
)
def test_preemption_policy_never_is_not_eligible(
    preemptor: PodGroupView, members: list[PodView], gate: bool
) -> None:
    h = setup({"node1": 1}, [pod("p1", "v1", "node1")], group_policy=gate)
    result, status = preempt(h, preemptor, members)
    assert (result, status.code) == (None, Code.UNSCHEDULABLE)
    assert status.message == "pod group preemption: not eligible due to preemptionPolicy=Never."


@pytest.mark.parametrize(
    "preemptor, members, gate",
    [
        pytest.param(
            group("pg", HIGH, policy="PreemptLowerPriority"),
            [pod("p", "p", priority=HIGH, policy="Never")],
            True,
            id="the PodGroup's PreemptLowerPriority wins over a member, gate on",
        ),
        pytest.param(
            PREEMPTOR,
            [pod("p", "p", priority=HIGH, policy="Never")],
            True,
            id="a member's Never is ignored, gate on",
        ),
        pytest.param(
            group("pg", HIGH, policy="Never"),
            ONE,
            False,
            id="the PodGroup's Never is ignored, gate off",
        ),
    ],
)
def test_preemption_policy_preempt_lower_priority_preempts(
    preemptor: PodGroupView, members: list[PodView], gate: bool
) -> None:
    h = setup({"node1": 1}, [pod("p1", "v1", "node1")], group_policy=gate)
    _, status = preempt(h, preemptor, members)
    assert status.is_success
    assert victims(h) == ["p1"]


NEVER_POD = pod("p-never", "p-never", policy="Never")
LOWER_POD = pod("p-lower", "p-lower", policy="PreemptLowerPriority")
NIL_POD = pod("p-nil", "p-nil")


# TestNewPodGroupPreemptorResolvesPreemptionPolicy (preemption/types_test.go, v1.37): the
# PodGroup rows (its CompositePodGroup rows need CompositePodGroups, which aiosched lacks), plus
# the unset policy with the gate on, which resolvePreemptionPolicy defaults.
@pytest.mark.parametrize(
    "group_policy_value, members, gate, want",
    [
        pytest.param("Never", [LOWER_POD], True, "Never", id="Never from the PodGroup, gate on"),
        pytest.param(
            "PreemptLowerPriority",
            [LOWER_POD, NIL_POD],
            True,
            "PreemptLowerPriority",
            id="PreemptLowerPriority from the PodGroup, gate on",
        ),
        pytest.param(
            "Never", [LOWER_POD], False, "PreemptLowerPriority", id="from the pods, gate off"
        ),
        pytest.param(
            "PreemptLowerPriority",
            [NEVER_POD, LOWER_POD, NIL_POD],
            False,
            "Never",
            id="from the pods when they differ, gate off",
        ),
        pytest.param(
            None, [NEVER_POD], True, "PreemptLowerPriority", id="unset on the PodGroup, gate on"
        ),
    ],
)
def test_resolve_preemption_policy(
    group_policy_value: str | None, members: list[PodView], gate: bool, want: str
) -> None:
    assert preemptor_policy(group("pg", policy=group_policy_value), members, gate) == want


def test_a_lower_priority_pod_terminating_by_preemption_on_a_nominated_node_is_ongoing() -> None:
    terminating = make_pod(
        "victim",
        uid="v1",
        node_name="node1",
        priority=LOW,
        terminating=True,
        conditions=[
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ],
    )
    h = setup({"node1": 1}, [terminating])
    members = [pod("p", "p", priority=HIGH, nominated="node1")]
    result, status = preempt(h, PREEMPTOR, members)
    assert status.code == Code.SUCCESS
    assert status.message == "pod group preemption: ongoing preemption on nominated nodes"
    assert result is not None and dict(result.nominations) == {"p": "node1"}
    assert h.preemptions == []


def test_a_group_with_a_topology_constraint_is_refused() -> None:
    h = setup({"node1": 1}, [pod("p1", "v1", "node1")])
    result, status = preempt(h, group("pg", HIGH, topology="zone"), ONE)
    assert (result, status.code) == (None, Code.UNSCHEDULABLE)
    assert status.message == "pod group preemption: not supported with topology constraints"


def test_a_pod_in_a_group_has_its_groups_priority() -> None:
    # The pod says HIGH but its PodGroup says LOW: it is a victim of a MID gang.
    h = setup(
        {"node1": 1}, [pod("p1", "v1", "node1", priority=HIGH, group="pg1")], [group("pg1", LOW)]
    )
    _, status = preempt(h, group("preemptor-pg", MID), [pod("p", "p", priority=MID)])
    assert status.is_success
    assert victims(h) == ["p1"]


def test_a_group_without_priority_has_priority_zero() -> None:
    h = setup({"node1": 1}, [pod("p1", "v1", "node1", priority=-5)])
    _, status = preempt(h, group("preemptor-pg"), [pod("p", "p", priority=HIGH)])
    assert status.is_success and victims(h) == ["p1"]


def test_more_important_victim_order() -> None:
    def v(
        uid: str, priority: int, *, is_group: bool, size: int = 1, start: int | None = None
    ) -> Victim:
        pods = tuple(pod(f"{uid}-{i}", f"{uid}{i}", "n", start=start) for i in range(size))
        return Victim(pods, priority, is_group)

    single_old = v("a", LOW, is_group=False, start=1)
    single_new = v("b", LOW, is_group=False, start=2)
    single_unstarted = v("c", LOW, is_group=False)
    group_small = v("d", LOW, is_group=True, size=2)
    group_big = v("e", LOW, is_group=True, size=3)
    higher = v("f", MID, is_group=False)
    ordered = sort_victims(
        [single_unstarted, single_new, group_small, higher, single_old, group_big]
    )
    assert ordered == [higher, group_big, group_small, single_old, single_new, single_unstarted]
    # Identical but for the UID: the lower UID is the more important.
    assert more_important_victim(v("a", LOW, is_group=False), v("b", LOW, is_group=False))


def test_cluster_victims_group_an_all_mode_group_across_nodes() -> None:
    h = setup(
        {"node1": 5, "node2": 5},
        [
            pod("a1", "a1", "node1", group="all-pg"),
            pod("s1", "s1", "node1", group="single-pg"),
            pod("x", "x", "node1"),
            pod("a2", "a2", "node2", group="all-pg"),
            pod("orphan", "o", "node2", group="missing", priority=MID),
        ],
        [group("all-pg", LOW, all_mode=True), group("single-pg", MID)],
    )
    found = cluster_victims(h.snapshot.list(), h.plugin.handle.cluster_objects.workloads)
    assert [([p.name for p in v.pods], v.priority, v.is_group) for v in found] == [
        (["a1", "a2"], LOW, True),
        (["s1"], MID, True),
        (["x"], LOW, False),
        # A PodGroup not known (yet): the pod's own priority, still a group's member.
        (["orphan"], MID, True),
    ]


# -- properties ------------------------------------------------------------------------------

_cluster_pod = st.tuples(
    st.integers(0, 3),  # node index
    st.sampled_from([LOW, MID, HIGH]),  # priority (a group's when the pod has one)
    st.sampled_from([None, "ga", "gs"]),  # ga: disruptionMode all; gs: single
    st.integers(1, 2),  # size
)


@settings(max_examples=120, deadline=None)
@given(
    capacities=st.lists(st.integers(0, 4), min_size=1, max_size=4),
    existing=st.lists(_cluster_pod, max_size=10),
    gang_priority=st.sampled_from([LOW, MID, HIGH]),
    gang_sizes=st.lists(st.integers(1, 2), min_size=1, max_size=4),
    quorum_cut=st.integers(0, 3),
)
def test_preemption_never_leaves_a_partial_group_nor_evicts_equal_or_higher_priority(
    capacities: list[int],
    existing: list[tuple[int, int, str | None, int]],
    gang_priority: int,
    gang_sizes: list[int],
    quorum_cut: int,
) -> None:
    nodes = {f"node{i}": cap for i, cap in enumerate(capacities)}
    group_priority = {"ga": LOW, "gs": MID}
    pods = []
    filled = dict.fromkeys(nodes, 0)
    for i, (node, priority, group_name, size) in enumerate(existing):
        node_name = f"node{node % len(capacities)}"
        if filled[node_name] + size > nodes[node_name]:
            continue  # the cluster starts within its capacities
        filled[node_name] += size
        pods.append(
            pod(
                f"x{i}",
                f"x{i:02d}",
                node_name,
                priority=group_priority[group_name] if group_name else priority,
                group=group_name,
                labels={"size": str(size)},
            )
        )
    groups = [group("ga", LOW, all_mode=True), group("gs", MID)]
    h = setup(nodes, pods, groups)
    before = {info.node_name: sorted(p.name for p in info.pods) for info in h.snapshot.list()}
    members = [
        pod(f"m{i}", f"m{i}", priority=gang_priority, labels={"size": str(size)})
        for i, size in enumerate(gang_sizes)
    ]
    quorum = max(1, len(members) - quorum_cut)
    result, status = preempt(h, group("gang", gang_priority), members, quorum)

    after = {info.node_name: sorted(p.name for p in info.pods) for info in h.snapshot.list()}
    assert after == before  # the snapshot is restored, whatever the outcome
    event("preempted" if h.preemptions and h.preemptions[0].victims else status.code_name)
    if not status.is_success:
        assert result is None and h.preemptions == []
        return
    chosen = {p.name for preemption in h.preemptions for p in preemption.victims}
    by_name = {p.name: p for p in pods}
    # Never a victim of equal or higher priority (a pod in a group has its group's).
    assert all(by_name[name].priority < gang_priority for name in chosen)
    # A disruptionMode-all group goes whole or not at all.
    all_mode = {p.name for p in pods if p.scheduling_group == "ga"}
    assert not chosen & all_mode or all_mode <= chosen
    # With the victims gone, the nominated members fit together, at least the quorum of them.
    assert result is not None and len(result.nominations) >= quorum
    used = {name: 0 for name in nodes}
    for p in pods:
        if p.name not in chosen:
            used[p.node_name] += _size(p)
    for member in members:
        node = result.nominations.get(member.uid)
        if node:
            used[node] += _size(member)
    assert all(used[name] <= cap for name, cap in nodes.items())
