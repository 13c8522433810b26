"""GangScheduling's facts, ported from upstream's gangscheduling_test.go (v1.37: PodGroup in
scheduling.k8s.io/v1beta1, pods naming it in spec.schedulingGroup): PreEnqueue,
PlacementFeasible (which replaced v1.36's Reserve / Permit) and the queueing hints, as
tables."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import PodView
from scheduler.api.workload import PodGroupView
from scheduler.cycle.podgroup_status import condition_patch
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.framework.status import Code
from scheduler.plugins.gangscheduling.plugin import (
    MSG_WAITING_FOR_MIN_COUNT_IN_QUEUE,
    GangScheduling,
)
from scheduler.testing import FakeHandle
from tests.scheduler_gang.gang_builders import member, pod_group


def _plugin(groups: list[PodGroupView], pods: list[PodView]) -> tuple[GangScheduling, FakeHandle]:
    handle = FakeHandle()
    workloads = handle.cluster_objects.workloads
    workloads.add(*groups)
    for pod in pods:
        workloads.states.pod_added(pod)
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
        'waiting for pod\'s pod group "pg" to appear in scheduling queue',
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


# -- PlacementFeasible: TestGangScheduling_PlacementFeasible ------------------------------------

PLACEMENT_FEASIBLE = [
    # (name, group, scheduled, remaining, code, message)
    ("basic group, nothing scheduled yet", pod_group("pg"), 0, 3, Code.WAIT,
     "minCount (1) is not yet satisfied: 0 scheduled, 3 remaining"),
    ("basic group, one scheduled", pod_group("pg"), 1, 2, Code.SUCCESS, ""),
    ("gang, quorum still reachable", pod_group("pg", 3), 1, 2, Code.WAIT,
     "minCount (3) is not yet satisfied: 1 scheduled, 2 remaining"),
    ("gang, quorum met", pod_group("pg", 3), 3, 0, Code.SUCCESS, ""),
    ("gang, more than the quorum", pod_group("pg", 3), 4, 1, Code.SUCCESS, ""),
    ("gang, too few remaining", pod_group("pg", 4), 3, 0, Code.UNSCHEDULABLE,
     "minCount (4) cannot be satisfied: 3 scheduled, 0 remaining"),
    ("gang, too few members at all", pod_group("pg", 4), 0, 3, Code.UNSCHEDULABLE,
     "minCount (4) cannot be satisfied: 0 scheduled, 3 remaining"),
]  # fmt: skip


@pytest.mark.parametrize(
    "group, scheduled, remaining, code, message",
    [case[1:] for case in PLACEMENT_FEASIBLE],
    ids=[c[0] for c in PLACEMENT_FEASIBLE],
)
def test_placement_feasible(
    group: PodGroupView, scheduled: int, remaining: int, code: Code, message: str
) -> None:
    plugin, _ = _plugin([group], [])
    status = plugin.placement_feasible(group, scheduled, remaining)
    assert status.code == code
    assert status.message == message
    if code != Code.SUCCESS:
        assert status.plugin == "GangScheduling"


def test_scheduled_count_reads_bound_members_and_the_caches_assumed_ones() -> None:
    pods = [member("p1", "pg", node="n1"), member("p2", "pg"), member("p3", "pg")]
    _, handle = _plugin([pod_group("pg", 3)], pods)
    state = handle.cluster_objects.workloads.states.get("default", "pg")
    assert state.scheduled_pods_count(lambda uid: False) == 1
    assert state.scheduled_pods_count(lambda uid: uid == "uid-p2") == 2
    assert [p.name for p in state.unscheduled_pods()] == ["p2", "p3"]


# -- queueing hints: TestGangScheduling_isSchedulableAfter* -------------------------------------


def _hint(resource: EventResource, action: ActionType) -> Any:
    plugin = GangScheduling(None, FakeHandle())
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
    ("policy not a gang: skip (v1.37)", EventResource.POD_GROUP, ActionType.UPDATE,
     member("p", "pg"), pod_group("pg"), pod_group("pg", resource_version="2"),
     QueueingHint.SKIP),
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


# -- the v1beta1 view -------------------------------------------------------------------------


def test_pod_group_view_reads_v1beta1_as_the_informer_hands_it() -> None:
    raw = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "pg",
            "namespace": "ns",
            "uid": "u",
            "resourceVersion": "3",
            "generation": 2,
        },
        "spec": {
            "workloadRef": {"workloadName": "train", "templateName": "workers"},
            "schedulingPolicy": {"gang": {"minCount": 4}},
            "priority": 7,
        },
        "status": {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "False"}]},
    }
    # The informer calls parse(raw, previous).
    view = PodGroupView.from_dict(raw, None)
    assert (view.key, view.min_count, view.generation, view.priority) == ("ns/pg", 4, 2, 7)
    assert (view.workload_name, view.template_name) == ("train", "workers")
    condition = view.condition("PodGroupInitiallyScheduled")
    assert condition is not None and condition["status"] == "False"


# -- the PodGroupInitiallyScheduled condition (updatePodGroupCondition) ------------------------


def _with_condition(status: str, generation: int = 1) -> PodGroupView:
    raw = dict(pod_group("pg", 2).raw)
    raw["metadata"] = {**raw["metadata"], "generation": generation}
    raw["status"] = {
        "conditions": [
            {
                "type": "PodGroupInitiallyScheduled",
                "status": status,
                "observedGeneration": 1,
                "reason": "Scheduled" if status == "True" else "Unschedulable",
                "message": "m",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
            {
                "type": "DisruptionTarget",
                "status": "False",
                "reason": "r",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
        ]
    }
    return PodGroupView.from_dict(raw)


def test_condition_patch_sets_the_condition_with_the_generation_and_keeps_the_others() -> None:
    patch = condition_patch(
        _with_condition("False", generation=3),
        "False",
        "Unschedulable",
        "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining",
        "now",
    )
    assert patch is not None
    conditions = patch["status"]["conditions"]
    assert [c["type"] for c in conditions] == ["DisruptionTarget", "PodGroupInitiallyScheduled"]
    mine = conditions[1]
    assert (mine["status"], mine["reason"], mine["observedGeneration"]) == (
        "False",
        "Unschedulable",
        3,
    )
    assert mine["lastTransitionTime"] == "2026-01-01T00:00:00Z"  # the status did not change


def test_condition_patch_never_takes_a_scheduled_group_back_to_false() -> None:
    assert condition_patch(_with_condition("True"), "False", "Unschedulable", "x", "now") is None
    assert condition_patch(_with_condition("False"), "False", "Unschedulable", "m", "now") is None
    patch = condition_patch(_with_condition("False"), "True", "Scheduled", "", "now")
    assert patch is not None and patch["status"]["conditions"][1]["lastTransitionTime"] == "now"
