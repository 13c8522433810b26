"""What-if for a whole gang (scheduler/cycle/what_if_group.py): the PodGroup cycle's algorithm
on what-if's private snapshot. The Scheduler is built but not run (as tests/scheduler_core/
test_what_if.py does): nodes and pods go straight into its cache, so each case is milliseconds."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from observability.explain import render_text
from observability.http import BadRequest
from profiles.api import load_config_text
from scheduler.cycle.profile_set import registry_for_config
from scheduler.cycle.scheduler import Scheduler, SchedulerOptions
from scheduler.cycle.what_if import WhatIf
from scheduler.plugins.registry import in_tree_registry
from tests.scheduler_core.test_what_if import NoClient, manifest, node, state_of
from tests.scheduler_gang.gang_builders import member, pod_group

GANG_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: GangScheduling
"""
GATES = {"GenericWorkload": True, "GangScheduling": True}


def gang_scheduler(cpus: dict[str, str], gates: dict[str, bool] | None = None) -> Scheduler:
    registry = in_tree_registry()
    # The gates decide the default plugins as in the process (the topology placement plugins).
    config = load_config_text(
        GANG_CONFIG, registry_for_config(registry), feature_gates=gates or GATES
    )
    client = NoClient()
    options = SchedulerOptions(seed=1, feature_gates=gates or GATES)
    scheduler = Scheduler(client, config, registry, options)  # type: ignore[arg-type]
    client.armed = True
    for name, cpu in cpus.items():
        scheduler.cache.add_node(node(name, cpu))
    return scheduler


def zoned(name: str, cpu: str, zone: str) -> Any:
    view = node(name, cpu)
    raw = copy.deepcopy(dict(view.raw))
    raw["metadata"]["labels"]["zone"] = zone
    return type(view).from_dict(raw)


def group_manifest(name: str, min_count: int, topology_key: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if topology_key:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": spec,
    }


def gang_list(count: int, cpu: str, min_count: int | None = None, **kw: str) -> dict[str, Any]:
    pods = [manifest(f"worker-{i}", cpu) for i in range(count)]
    group = group_manifest("train", count if min_count is None else min_count, **kw)
    return {"apiVersion": "v1", "kind": "List", "items": [group, *pods]}


def test_three_of_four_fit_the_quorum_is_not_placeable_and_the_blocker_is_named() -> None:
    scheduler = gang_scheduler({"a": "2", "b": "2", "c": "2"})
    before = state_of(scheduler)
    answer = WhatIf(scheduler, scheduler.registry).answer(gang_list(4, "1500m"))
    assert state_of(scheduler) == before  # nothing assumed, queued or bound
    group = answer["podGroup"]
    assert group["quorumPlaceable"] is False
    assert group["result"] == "unschedulable"
    assert group["message"] == "minCount (4) cannot be satisfied: 3 scheduled, 0 remaining"
    assert group["placementFeasible"]["code"] == "Unschedulable"
    rows = {m["pod"]: m for m in group["members"]}
    fitted = [rows[f"worker-{i}"] for i in range(3)]
    assert [m["result"] for m in fitted] == ["fitted"] * 3
    assert sorted(m["node"] for m in fitted) == ["a", "b", "c"]  # each sees the ones before
    assert rows["worker-3"]["result"] == "unschedulable"
    blocking = group["blockingMember"]
    assert blocking["pod"] == "worker-3"
    assert blocking["message"] == "0/3 nodes are available: 3 Insufficient cpu."
    assert blocking["filterVerdicts"][0]["plugin"] == "NodeResourcesFit"
    # The top level explains the blocking member, with the group's outcome.
    assert answer["pod"]["name"] == "worker-3"
    assert answer["result"] == "unschedulable"
    assert answer["whatIf"]["needsPreemption"] is True
    assert answer["whatIf"]["podGroup"] == {
        "source": "manifest",
        "members": 4,
        "scheduledInCluster": 0,
    }
    text = render_text(answer)
    assert "Blocking the quorum: worker-3: 0/3 nodes are available: 3 Insufficient cpu." in text


def test_a_fourth_node_makes_the_quorum_placeable_one_node_per_member() -> None:
    scheduler = gang_scheduler({"a": "2", "b": "2", "c": "2", "d": "2"})
    answer = WhatIf(scheduler, scheduler.registry).answer(gang_list(4, "1500m"))
    group = answer["podGroup"]
    assert group["quorumPlaceable"] is True
    assert group["result"] == answer["result"] == "schedulable"
    assert "blockingMember" not in group
    assert [m["result"] for m in group["members"]] == ["schedulable"] * 4
    assert sorted(m["node"] for m in group["members"]) == ["a", "b", "c", "d"]


def test_repeated_answers_are_the_same_the_overlay_is_dropped() -> None:
    scheduler = gang_scheduler({"a": "2", "b": "2", "c": "2"})
    what_if = WhatIf(scheduler, scheduler.registry)
    first = what_if.answer(gang_list(3, "1500m"))
    second = what_if.answer(gang_list(3, "1500m"))
    assert first["podGroup"]["quorumPlaceable"] is second["podGroup"]["quorumPlaceable"] is True
    # The single-pod what-if after it sees every node free again.
    single = what_if.answer(manifest("probe", "1500m"))
    assert single["result"] == "schedulable"
    assert single["feasibleNodes"] == 3


def test_members_already_bound_in_the_cluster_count_toward_min_count() -> None:
    scheduler = gang_scheduler({"a": "2", "b": "2"})
    workloads = scheduler.cluster_objects.workloads
    workloads.add(pod_group("train", 3))
    bound = member("worker-0", "train", node="a")
    scheduler.cache.add_pod(bound)
    workloads.states.pod_added(bound)
    pods = [manifest(f"worker-{i}", "100m") for i in (1, 2)]
    for pod in pods:
        pod["spec"]["schedulingGroup"] = {"podGroupName": "train"}
    answer = WhatIf(scheduler, scheduler.registry).answer(
        {"apiVersion": "v1", "kind": "List", "items": pods}
    )
    assert answer["whatIf"]["podGroup"]["source"] == "cluster"
    assert answer["whatIf"]["podGroup"]["scheduledInCluster"] == 1
    assert answer["podGroup"]["quorumPlaceable"] is True


def test_topology_gate_places_the_gang_in_one_domain() -> None:
    gates = {**GATES, "TopologyAwareWorkloadScheduling": True}
    scheduler = gang_scheduler({}, gates)
    for name, zone in (("a1", "a"), ("b1", "b"), ("b2", "b")):
        scheduler.cache.add_node(zoned(name, "2", zone))
    answer = WhatIf(scheduler, scheduler.registry).answer(
        gang_list(2, "1500m", topology_key="zone")
    )
    group = answer["podGroup"]
    assert group["quorumPlaceable"] is True
    assert group["placement"] == "b"
    assert {p["name"]: p["feasible"] for p in group["placements"]} == {"a": False, "b": True}
    assert sorted(m["node"] for m in group["members"]) == ["b1", "b2"]


@pytest.mark.parametrize(
    ("body", "fragment", "status"),
    [
        ({"kind": "List", "items": []}, "a group what-if is a List", 400),
        ({"kind": "List", "items": [group_manifest("g", 2)]}, "no Pod", 400),
        ({"kind": "List", "items": [manifest("p", "1")]}, "must name the same PodGroup", 400),
        (
            {"kind": "List", "items": [{**manifest("p", "1"), "spec": {
                **manifest("p", "1")["spec"], "schedulingGroup": {"podGroupName": "nope"}}}]},
            "the cluster has no PodGroup default/nope",
            404,
        ),
        (
            {"kind": "List", "items": [group_manifest("g", 2), {"kind": "Service"}]},
            "neither",
            400,
        ),
    ],
)  # fmt: skip
def test_bad_group_input_is_a_clear_client_error(
    body: dict[str, Any], fragment: str, status: int
) -> None:
    scheduler = gang_scheduler({"a": "2"})
    with pytest.raises(BadRequest) as caught:
        WhatIf(scheduler, scheduler.registry).answer(body)
    assert fragment in str(caught.value)
    assert caught.value.status == status
