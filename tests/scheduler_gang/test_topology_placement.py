"""Topology-aware placement of a gang (TopologyAwareWorkloadScheduling), ported from upstream's
tables: TopologyPlacementGenerator's TestGeneratePlacements (topology_placement_test.go),
PodGroupPodsCount's scoring (podgroup_pods_count.go), nominatedPlacement and
TestPodGroupSchedulingPlacementAlgorithm (algorithm_podgroup.go and its test: "no feasible
placements found", "0/N placements are available, first placement status: ..."), then the
PodGroup cycle of a Scheduler that is built but never run, on two zones."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from observability.explain import ExplainStore, render_text
from profiles.api import load_config_text
from scheduler.api.objects import PodView
from scheduler.api.workload import PodGroupView
from scheduler.cache.node_info import NodeInfo
from scheduler.client.rest import KubeClient
from scheduler.cycle.podgroup_placement import (
    Placement,
    nominated_placement,
    placements_failed_message,
)
from scheduler.cycle.profile_set import registry_for_config
from scheduler.cycle.scheduler import Scheduler, SchedulerOptions
from scheduler.framework.interface import PodGroupPlacementInfo
from scheduler.framework.status import Code, Status
from scheduler.plugins.podgrouppodscount import PodGroupPodsCount
from scheduler.plugins.registry import in_tree_registry
from scheduler.plugins.topologyplacementgenerator import (
    NAME as TOPOLOGY_PLACEMENT_GENERATOR,
)
from scheduler.plugins.topologyplacementgenerator import (
    NO_FEASIBLE_PLACEMENTS,
    TopologyPlacementGenerator,
)
from scheduler.testing import MakeNode, MakePod
from tests.scheduler_gang.gang_builders import pod_group
from tests.scheduler_gang.test_all_or_nothing_property import _NoClient
from tests.scheduler_gang.test_podgroup_cycle import GANG_CONFIG, GATES

ZONE = "topology.kubernetes.io/zone"
TAS_GATES = {**GATES, "TopologyAwareWorkloadScheduling": True}


def _infos(**zones: str | None) -> list[NodeInfo]:
    infos = []
    for name, zone in zones.items():
        builder = MakeNode(name)
        if zone is not None:
            builder = builder.label(ZONE, zone)
        info = NodeInfo()
        info.set_node(builder.obj())
        infos.append(info)
    return infos


def generate_placements(
    group: PodGroupView, infos: list[NodeInfo], scheduled: list[tuple[str, str]]
) -> tuple[list[Placement], Status]:
    """TopologyPlacementGenerator's GeneratePlacements within the parent placement of `infos`."""
    parent = Placement("", tuple(info.node_name for info in infos))
    plugin = TopologyPlacementGenerator(None, cast(Any, None))
    info = PodGroupPlacementInfo(group, scheduled, len(scheduled))
    placements, status = plugin.generate_placements(info, parent, infos)
    return list(placements), status


def pods_count_scores(scheduled: int, proposed: list[int]) -> list[int]:
    """PodGroupPodsCount's ScorePlacement then NormalizePlacementScore, one per placement."""
    plugin = PodGroupPodsCount(None, cast(Any, None))
    info = PodGroupPlacementInfo(pod_group("pg", 2), (), scheduled)
    scores = [
        plugin.score_placement(info, Placement(str(i), ()), count)[0]
        for i, count in enumerate(proposed)
    ]
    assert plugin.normalize_placement_score(info, scores).is_success
    return scores


# -- TopologyPlacementGenerator ---------------------------------------------------------------


def test_a_group_without_topology_constraints_gets_the_parent_placement() -> None:
    placements, status = generate_placements(pod_group("pg", 2), _infos(n1="a", n2="b"), [])
    assert status.is_success
    assert placements == [Placement("", ("n1", "n2"))]


def test_nodes_are_partitioned_by_domain_and_unlabelled_nodes_belong_to_none() -> None:
    group = pod_group("pg", 2, topology_key=ZONE)
    placements, status = generate_placements(group, _infos(n1="b", n2="a", n3=None, n4="b"), [])
    assert status.is_success
    assert placements == [Placement("a", ("n2",)), Placement("b", ("n1", "n4"))]


def test_scheduled_members_lock_the_group_into_their_domain() -> None:
    group = pod_group("pg", 2, topology_key=ZONE)
    placements, status = generate_placements(
        group, _infos(n1="a", n2="b", n3="b"), [("default/m0", "n2")]
    )
    assert status.is_success
    assert placements == [Placement("b", ("n2", "n3"))]


@pytest.mark.parametrize(
    "scheduled, reason",
    [
        (
            [("default/m0", "n1"), ("default/m1", "n2")],
            "more than 1 domain found for pod group: a, b",
        ),
        ([("default/m0", "n3")], "no topology domain found for pod default/m0"),
        ([("default/m0", "gone")], "getting node for pod default/m0: node 'gone' not found"),
    ],
)
def test_scheduled_members_in_no_single_domain_are_an_error(
    scheduled: list[tuple[str, str]], reason: str
) -> None:
    group = pod_group("pg", 2, topology_key=ZONE)
    placements, status = generate_placements(group, _infos(n1="a", n2="b", n3=None), scheduled)
    assert placements == []
    assert status.code == Code.ERROR
    assert status.message == f"cannot determine domain for already scheduled pods: {reason}"


def test_no_node_in_any_domain_is_unschedulable() -> None:
    group = pod_group("pg", 2, topology_key=ZONE)
    placements, status = generate_placements(group, _infos(n1=None), [])
    assert placements == []
    assert status.code == Code.UNSCHEDULABLE
    assert status.message == NO_FEASIBLE_PLACEMENTS == "no feasible placements found"
    assert status.plugin == TOPOLOGY_PLACEMENT_GENERATOR


# -- PodGroupPodsCount, nominatedPlacement, the fit error -------------------------------------


@pytest.mark.parametrize(
    "scheduled, proposed, want",
    [
        (0, [2, 4], [50, 100]),
        (0, [3, 3], [100, 100]),
        (2, [1, 2], [75, 100]),  # scheduled members count in every placement
        (0, [1, 3], [33, 100]),  # integer division, as upstream's int64 arithmetic
    ],
)
def test_pods_count_scores_normalise_against_the_best_placement(
    scheduled: int, proposed: list[int], want: list[int]
) -> None:
    assert pods_count_scores(scheduled, proposed) == want


def test_the_nominated_placement_is_the_single_one_holding_a_nominated_node() -> None:
    a, b = Placement("a", ("n1", "n2")), Placement("b", ("n3",))
    assert nominated_placement([a, b], ["", "n3"]) is b
    assert nominated_placement([a, b], ["", ""]) is None
    assert nominated_placement([a, b], ["n1", "n3"]) is None  # several: score them all
    assert nominated_placement([a, Placement("c", ("n1",))], ["n1"]) is None  # overlap


def test_placements_failed_message_is_upstreams() -> None:
    assert (
        placements_failed_message(2, "pod group is unschedulable")
        == "0/2 placements are available, first placement status: pod group is unschedulable"
    )


# -- the PodGroup cycle ---------------------------------------------------------------------


def _scheduler(gates: dict[str, bool], explain: ExplainStore | None = None) -> Scheduler:
    registry = in_tree_registry()
    # As the process does: --feature-gates decide the default plugins too (TopologyPlacement-
    # Generator and PodGroupPodsCount join the profile with TopologyAwareWorkloadScheduling).
    config = load_config_text(GANG_CONFIG, registry_for_config(registry), feature_gates=gates)
    return Scheduler(
        cast(KubeClient, _NoClient()),
        config,
        registry,
        SchedulerOptions(seed=3, feature_gates=gates),
        explain=explain,
    )


def _member(name: str, group: str, cpu: int, nominated: str = "") -> PodView:
    builder = MakePod(name, "default").uid(f"uid-{name}").req(cpu=str(cpu))
    if nominated:
        builder = builder.nominated(nominated)
    raw = builder.obj().raw
    spec = {**raw["spec"], "schedulingGroup": {"podGroupName": group}}
    return PodView.from_dict({**raw, "spec": spec})


class _Failures:
    """Stands for the FailureHandler: records each failed member's message."""

    def __init__(self) -> None:
        self.messages: dict[str, str] = {}

    def fail(self, profile: Any, pinfo: Any, status: Any, *args: Any, **kwargs: Any) -> None:
        self.messages[pinfo.pod.name] = status.message

    def fail_unschedulable(self, profile: Any, pinfo: Any, fit: Any, *args: Any) -> None:
        self.messages[pinfo.pod.name] = fit.message()


async def _one_cycle(
    zones: dict[str, tuple[str, int]],
    members: int,
    min_count: int,
    *,
    gates: dict[str, bool] = TAS_GATES,
    topology_key: str = ZONE,
    nominated: str = "",
    explain: ExplainStore | None = None,
) -> tuple[dict[str, str], dict[str, str]]:
    """One group cycle of `members` 3-CPU pods on nodes {name: (zone, cpu)}: where each member
    is assumed, and each failed member's message (not recorded when `explain` is given: the
    real failure handler then records each member's attempt for explain)."""
    scheduler = _scheduler(gates, explain)
    assert scheduler.podgroups is not None
    for name, (zone, cpu) in zones.items():
        scheduler.cache.add_node(
            MakeNode(name)
            .label(ZONE, zone)
            .capacity({"cpu": str(cpu), "memory": "64Gi", "pods": "110"})
            .obj()
        )
    workloads = scheduler.cluster_objects.workloads
    workloads.add(pod_group("gang", min_count, topology_key=topology_key))
    pods = [_member(f"m{i}", "gang", 3, nominated if i == 0 else "") for i in range(members)]
    # Every member known before any is queued: none waits in PreEnqueue for its quorum.
    for pod in pods:
        workloads.states.pod_added(pod)
    for pod in pods:
        scheduler.queue.add(pod)
    for pod in pods:  # the informer's view: a failed member is requeued, not taken as deleted
        scheduler.pod_informer.store[pod.key] = pod
    recorder = _Failures()
    if explain is None:
        cycle: Any = scheduler.podgroups
        cycle._failures = recorder
    failures = recorder.messages
    pinfo = scheduler.queue.try_pop()
    assert pinfo is not None
    group = scheduler.podgroups.group_of(pinfo.pod)
    assert group is not None
    await scheduler.podgroups.schedule_group(pinfo, group, scheduler.profiles)
    placed = {}
    for pod in pods:
        assumed = scheduler.cache.get_pod(pod.uid)
        if assumed is not None and scheduler.cache.is_assumed_pod(pod.uid):
            placed[pod.name] = assumed.node_name
    return placed, failures


# zone a: two 4-CPU nodes (two 3-CPU members); zone b: three (three members). Without the
# constraint, a gang of 3 spreads over whatever fits first; with it, only zone b holds it.
TWO_ZONES = {
    "a-0": ("a", 4),
    "a-1": ("a", 4),
    "b-0": ("b", 4),
    "b-1": ("b", 4),
    "b-2": ("b", 4),
}


def test_a_topology_constrained_gang_lands_in_the_one_zone_that_holds_it() -> None:
    placed, failures = asyncio.run(_one_cycle(TWO_ZONES, 3, 3))
    assert failures == {}
    assert sorted(placed.values()) == ["b-0", "b-1", "b-2"]


def test_the_placement_that_holds_more_members_wins() -> None:
    # minCount 2 of 4 members: zone a holds 2, zone b 3; PodGroupPodsCount prefers b.
    placed, failures = asyncio.run(_one_cycle(TWO_ZONES, 4, 2))
    assert {node[0] for node in placed.values()} == {"b"}
    assert len(placed) == 3
    assert list(failures.values()) == ["0/3 nodes are available: 3 Insufficient cpu."]


def test_the_nominated_placement_is_taken_when_the_gang_fits_there() -> None:
    placed, _ = asyncio.run(_one_cycle(TWO_ZONES, 4, 2, nominated="a-0"))
    assert {node[0] for node in placed.values()} == {"a"}
    assert len(placed) == 2


def test_no_zone_holds_the_gang_so_nobody_is_placed_and_each_says_why() -> None:
    placed, failures = asyncio.run(_one_cycle(TWO_ZONES, 4, 4))
    assert placed == {}
    group_message = placements_failed_message(
        2, "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining"
    )
    # The first placement's outcomes (zone a): two members fitted there and carry the group's
    # message, the third its FitError over zone a's two nodes, the fourth was not tried.
    assert failures == {
        "m0": group_message,
        "m1": group_message,
        "m2": "0/2 nodes are available: 2 Insufficient cpu.",
        "m3": group_message,
    }


def test_no_labelled_node_is_no_feasible_placement() -> None:
    placed, failures = asyncio.run(_one_cycle(TWO_ZONES, 3, 3, topology_key="rack"))
    assert placed == {}
    assert set(failures.values()) == {NO_FEASIBLE_PLACEMENTS}


def test_with_the_gate_off_the_constraint_is_not_read() -> None:
    # Upstream's default (alpha, off): the default algorithm spreads over zones.
    placed, failures = asyncio.run(_one_cycle(TWO_ZONES, 5, 5, gates=GATES))
    assert failures == {}
    assert {node[0] for node in placed.values()} == {"a", "b"}


def test_an_unconstrained_gang_under_the_gate_uses_one_placement_of_every_node() -> None:
    placed, failures = asyncio.run(_one_cycle(TWO_ZONES, 5, 5, topology_key=""))
    assert failures == {}
    assert len(placed) == 5
    placed, failures = asyncio.run(_one_cycle(TWO_ZONES, 6, 6, topology_key=""))
    assert placed == {}
    assert failures["m0"] == placements_failed_message(
        1, "minCount (6) cannot be satisfied: 5 scheduled, 0 remaining"
    )


# -- explain for a group ----------------------------------------------------------------------


def test_explain_of_a_member_says_where_each_fitted_who_blocked_and_the_verdict() -> None:
    store = ExplainStore()
    asyncio.run(_one_cycle(TWO_ZONES, 4, 4, explain=store))
    data = store.get("default", "m0")
    assert data is not None
    group = data["podGroup"]
    first = "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining"
    assert group["name"] == "gang" and group["minCount"] == 4
    assert group["result"] == "unschedulable"
    assert group["message"] == placements_failed_message(2, first)
    assert group["placementFeasible"] == {"code": "Unschedulable", "message": first}
    assert group["topologyKey"] == ZONE
    assert [(p["name"], p["nodes"], p["feasible"], p["placed"]) for p in group["placements"]] == [
        ("a", 2, False, 2),
        ("b", 3, False, 3),
    ]
    assert group["members"] == [
        {"pod": "m0", "result": "fitted", "node": "a-0"},
        {"pod": "m1", "result": "fitted", "node": "a-1"},
        {
            "pod": "m2",
            "result": "unschedulable",
            "message": "0/2 nodes are available: 2 Insufficient cpu.",
        },
        {"pod": "m3", "result": "notTried"},
    ]
    blocking = group["blockingMember"]
    assert blocking["pod"] == "m2"
    assert [(g["plugin"], g["reason"], g["count"]) for g in blocking["filterVerdicts"]] == [
        ("NodeResourcesFit", "Insufficient cpu", 2)
    ]
    # The member's own fields are unchanged; the text names the blocking member.
    assert data["result"] == "unschedulable" and data["pod"]["name"] == "m0"
    text = render_text(data)
    assert "Blocking the quorum: m2: 0/2 nodes are available: 2 Insufficient cpu." in text
    assert f"PlacementFeasible: Unschedulable: {first}" in text


def test_explain_of_a_placed_member_names_the_chosen_placement() -> None:
    store = ExplainStore()
    asyncio.run(_one_cycle(TWO_ZONES, 3, 3, explain=store))
    # First-attempt successes are kept lazily per profile; the group section comes with them.
    data = store.get("default", "m1")
    assert data is not None
    group = data["podGroup"]
    assert group["result"] == "scheduled" and group["placement"] == "b"
    assert group["placementFeasible"]["code"] == "Success"
    assert {m["result"] for m in group["members"]} == {"scheduled"}
    assert "blockingMember" not in group
