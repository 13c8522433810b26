"""PrioritySort, SchedulingGates, NodeUnschedulable, DefaultBinder and NodeResourcesFitArgs.

Facts from upstream's priority_sort_test.go, scheduling_gates_test.go,
node_unschedulable_test.go, default_binder_test.go and validation_pluginargs_test.go.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.events import QueueingHint
from scheduler.framework.interface import CycleState
from scheduler.framework.registry import ArgsError
from scheduler.framework.status import Code
from scheduler.plugins.defaultbinder import DefaultBinder, is_bind_conflict
from scheduler.plugins.noderesources.args import decode_node_resources_fit_args
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.prioritysort import PrioritySort
from scheduler.plugins.schedulinggates import SchedulingGates
from scheduler.queue.types import QueuedPodInfo
from scheduler.testing import RecordingClient, make_node, make_node_info, make_pod


@pytest.mark.parametrize(
    ("name", "p1", "t1", "p2", "t2", "expected"),
    [
        ("p1.priority less than p2.priority", 1, 0.0, 2, 0.0, False),
        ("p1.priority greater than p2.priority", 2, 0.0, 1, 0.0, True),
        ("equal priority. p1 is added to schedulingQ earlier than p2", 1, 1.0, 1, 2.0, True),
        ("equal priority. p2 is added to schedulingQ earlier than p1", 1, 2.0, 1, 1.0, False),
    ],
)
def test_priority_sort(name: str, p1: int, t1: float, p2: int, t2: float, expected: bool) -> None:
    a = QueuedPodInfo(make_pod(priority=p1), timestamp=t1)
    b = QueuedPodInfo(make_pod(priority=p2), timestamp=t2)
    assert PrioritySort().less(a, b) is expected


@pytest.mark.parametrize(
    ("gates", "code", "message"),
    [
        ((), Code.SUCCESS, ""),
        (
            ("foo", "bar"),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "waiting for scheduling gates: [foo bar]",
        ),
    ],
)
def test_scheduling_gates(gates: tuple[str, ...], code: Code, message: str) -> None:
    status = SchedulingGates().pre_enqueue(make_pod(scheduling_gates=gates))
    assert (status.code, status.message) == (code, message)


def test_scheduling_gates_hint_only_for_the_pod_itself() -> None:
    pod = make_pod(uid="a", scheduling_gates=("g",))
    (registration,) = SchedulingGates().events_to_register()
    assert registration.hint is not None
    assert registration.hint(pod, pod, make_pod(uid="a")) == QueueingHint.QUEUE
    assert registration.hint(pod, pod, make_pod(uid="b")) == QueueingHint.SKIP


UNSCHEDULABLE_TOLERATION = {
    "key": "node.kubernetes.io/unschedulable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


@pytest.mark.parametrize(
    ("unschedulable", "tolerations", "code"),
    [
        (True, [], Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        (False, [], Code.SUCCESS),
        (True, [UNSCHEDULABLE_TOLERATION], Code.SUCCESS),
        (
            True,
            [{"key": "other", "operator": "Exists", "effect": "NoSchedule"}],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ),
    ],
)
def test_node_unschedulable(
    unschedulable: bool, tolerations: list[dict[str, str]], code: Code
) -> None:
    node_info = make_node_info(make_node("n", unschedulable=unschedulable))
    status = NodeUnschedulable().filter(CycleState(), make_pod(tolerations=tolerations), node_info)
    assert status.code == code
    if code != Code.SUCCESS:
        assert status.message == "node(s) were unschedulable"


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (None, False, QueueingHint.QUEUE),  # schedulable node added
        (None, True, QueueingHint.SKIP),
        (True, False, QueueingHint.QUEUE),  # node became schedulable
        (False, False, QueueingHint.SKIP),
        (False, True, QueueingHint.SKIP),
    ],
)
def test_node_unschedulable_node_hint(old: bool | None, new: bool, hint: QueueingHint) -> None:
    registration = NodeUnschedulable().events_to_register()[0]
    assert registration.hint is not None
    old_node = None if old is None else make_node("n", unschedulable=old)
    assert registration.hint(make_pod(), old_node, make_node("n", unschedulable=new)) == hint


@pytest.mark.parametrize(
    ("response", "code", "conflict"),
    [
        ((201, {}), Code.SUCCESS, False),
        ((409, {"message": "already bound"}), Code.ERROR, True),
        ((500, {"message": "boom"}), Code.ERROR, False),
    ],
)
async def test_default_binder(response: tuple[int, Any], code: Code, conflict: bool) -> None:
    client = RecordingClient(responses=[response])

    class Handle:
        pass

    handle: Any = Handle()
    handle.client = client
    pod = make_pod("p", namespace="ns", uid="u1")
    status = await DefaultBinder(None, handle).bind(CycleState(), pod, "node1")
    assert status.code == code
    assert is_bind_conflict(status) is conflict
    method, path, body = client.requests[0]
    assert (method, path) == ("POST", "/api/v1/namespaces/ns/pods/p/binding")
    assert body["metadata"] == {"name": "p", "namespace": "ns", "uid": "u1"}
    assert body["target"] == {"apiVersion": "v1", "kind": "Node", "name": "node1"}
    if code == Code.ERROR and not conflict:
        assert "boom" in status.message


def test_fit_args_defaults() -> None:
    args = decode_node_resources_fit_args(None)
    assert args.scoring_strategy.type == "LeastAllocated"
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [
        ("cpu", 1),
        ("memory", 1),
    ]
    weighted = decode_node_resources_fit_args(
        {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}]}}
    )
    assert [(r.name, r.weight) for r in weighted.scoring_strategy.resources] == [("cpu", 1)]


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        (
            {"ignoredResources": ["example.com/aaa", "kubernetes.io/foo/bar"]},
            "ignoredResources[1]",
            "Invalid value",
        ),
        (
            {"ignoredResourceGroups": ["example.com/aa"]},
            "ignoredResourceGroups[0]",
            "resource group name can't contain '/'",
        ),
        (
            {"scoringStrategy": {"type": "Invalid"}},
            "scoringStrategy.type",
            'Unsupported value: "Invalid"',
        ),
        (
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "cpu", "weight": 101}],
                }
            },
            "scoringStrategy.resources[0].weight",
            "resource weight of cpu not in valid range (0, 100]",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "memory", "weight": -1}],
                }
            },
            "scoringStrategy.resources[0].weight",
            "not in valid range",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": []},
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape",
            "at least one point must be specified",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 10, "score": 1}, {"utilization": 10, "score": 2}]
                    },
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
            "utilization values must be sorted in increasing order",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 101, "score": 1}]},
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape[0].utilization",
            "not in valid range [0, 100]",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 10, "score": 11}]},
                }
            },
            "scoringStrategy.requestedToCapacityRatio.shape[0].score",
            "not in valid range [0, 10]",
        ),
        ({"unknown": 1}, "unknown", "unknown field"),
    ],
)
def test_fit_args_validation(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ArgsError) as caught:
        decode_node_resources_fit_args(raw)
    assert caught.value.path == path
    assert message in caught.value.message
