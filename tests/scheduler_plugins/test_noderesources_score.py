"""NodeResourcesFit scoring strategies, ported from upstream's
pkg/scheduler/framework/plugins/noderesources/{least,most}_allocated_test.go and
requested_to_capacity_ratio_test.go. Units as upstream's tables: "cpu": "4000" is cores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from scheduler.framework.interface import CycleState
from scheduler.plugins.noderesources.args import decode_node_resources_fit_args
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.plugins.noderesources.scoring import broken_linear_function
from scheduler.testing import make_node, make_node_info, make_pod

Res = Mapping[str, str]
TWO_CONTAINERS = [{"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"}]


def scores(
    args: Mapping[str, Any],
    pod_containers: Sequence[Res],
    nodes: Sequence[tuple[str, Res]],
    existing: Mapping[str, Sequence[Res]] | None = None,
) -> list[int]:
    plugin = NodeResourcesFit(decode_node_resources_fit_args(args))
    pod = make_pod(containers=pod_containers)
    infos = [
        make_node_info(
            make_node(name, alloc),
            [make_pod(containers=[r]) for r in (existing or {}).get(name, ())],
        )
        for name, alloc in nodes
    ]
    state = CycleState()
    assert plugin.pre_score(state, pod, infos).is_success
    out = []
    for info in infos:
        value, status = plugin.score(state, pod, info)
        assert status.is_success
        out.append(value)
    return out


def strategy(kind: str, resources: list[dict[str, Any]] | None = None, **extra: Any) -> Any:
    body: dict[str, Any] = {"type": kind, **extra}
    if resources:
        body["resources"] = resources
    return {"scoringStrategy": body}


SMALL = {"cpu": "4000", "memory": "10000"}
WIDE = {"cpu": "6000", "memory": "10000"}
BIG = {"cpu": "10000", "memory": "20000"}
MEM_HEAVY = [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}]
EXT = "example.com/gpu"
WITH_EXT = [
    {"name": "cpu", "weight": 1},
    {"name": "memory", "weight": 1},
    {"name": EXT, "weight": 1},
]

LEAST = [
    ("nothing scheduled, nothing requested", None, [], [SMALL, SMALL], None, [100, 100]),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        None,
        TWO_CONTAINERS,
        [SMALL, WIDE],
        None,
        [37, 50],
    ),
    (
        "no resources requested, pods scheduled with resources",
        None,
        [],
        [BIG, BIG],
        {
            "node1": [{"cpu": "3000", "memory": "0"}, {"cpu": "3000", "memory": "0"}],
            "node2": [{"cpu": "3000", "memory": "0"}, {"cpu": "3000", "memory": "5000"}],
        },
        [70, 57],
    ),
    (
        "resources requested, pods scheduled with resources",
        None,
        TWO_CONTAINERS,
        [BIG, BIG],
        {"node1": [{"cpu": "3000", "memory": "0"}], "node2": [{"cpu": "3000", "memory": "5000"}]},
        [57, 45],
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        None,
        TWO_CONTAINERS,
        [BIG, {"cpu": "10000", "memory": "50000"}],
        {"node1": [{"cpu": "3000", "memory": "0"}], "node2": [{"cpu": "3000", "memory": "5000"}]},
        [57, 60],
    ),
    (
        "requested resources exceed node capacity",
        None,
        [{"cpu": "3000", "memory": "0"}],
        [SMALL, SMALL],
        {"node1": [{"cpu": "3000", "memory": "0"}], "node2": [{"cpu": "3000", "memory": "5000"}]},
        [50, 25],
    ),
    (
        "zero node resources, pods scheduled with resources",
        None,
        [],
        [{}, {}],
        {"node1": [{"cpu": "3000", "memory": "0"}], "node2": [{"cpu": "3000", "memory": "5000"}]},
        [0, 0],
    ),
    (
        "nothing scheduled, resources requested with different weight on CPU and memory",
        MEM_HEAVY,
        TWO_CONTAINERS,
        [SMALL, WIDE],
        None,
        [41, 50],
    ),
    (
        "bypass extended resource if the pod does not request",
        WITH_EXT,
        TWO_CONTAINERS,
        [WIDE, {**WIDE, EXT: "4"}],
        None,
        [50, 50],
    ),
    (
        "honor extended resource if the pod requests",
        WITH_EXT,
        [{"cpu": "1000", "memory": "2000", EXT: "2"}, {"cpu": "2000", "memory": "3000"}],
        [{**WIDE, EXT: "4"}, {**WIDE, EXT: "10"}],
        None,
        [50, 60],
    ),
]


@pytest.mark.parametrize(("name", "resources", "pod", "allocs", "existing", "expected"), LEAST)
def test_least_allocated(
    name: str,
    resources: list[dict[str, Any]] | None,
    pod: Sequence[Res],
    allocs: Sequence[Res],
    existing: Mapping[str, Sequence[Res]] | None,
    expected: list[int],
) -> None:
    nodes = [(f"node{i + 1}", alloc) for i, alloc in enumerate(allocs)]
    assert scores(strategy("LeastAllocated", resources), pod, nodes, existing) == expected


MOST = [
    ("nothing scheduled, nothing requested", None, [], [SMALL, SMALL], None, [0, 0]),
    (
        "nothing scheduled, resources requested, differently sized nodes",
        None,
        TWO_CONTAINERS,
        [SMALL, WIDE],
        None,
        [62, 50],
    ),
    (
        "resources requested, pods scheduled with resources",
        None,
        TWO_CONTAINERS,
        [BIG, BIG],
        {"node1": [{"cpu": "3000", "memory": "0"}], "node2": [{"cpu": "3000", "memory": "5000"}]},
        [42, 55],
    ),
    (
        "nothing scheduled, resources requested with different weight on CPU and memory",
        MEM_HEAVY,
        TWO_CONTAINERS,
        [SMALL, WIDE],
        None,
        [58, 50],
    ),
    (
        # Requests beyond capacity count as fully used: cpu 100, memory 50 → 75.
        "requested resources at node capacity",
        None,
        [{"cpu": "3000", "memory": "5000"}],
        [SMALL],
        {"node1": [{"cpu": "3000", "memory": "0"}]},
        [75],
    ),
]


@pytest.mark.parametrize(("name", "resources", "pod", "allocs", "existing", "expected"), MOST)
def test_most_allocated(
    name: str,
    resources: list[dict[str, Any]] | None,
    pod: Sequence[Res],
    allocs: Sequence[Res],
    existing: Mapping[str, Sequence[Res]] | None,
    expected: list[int],
) -> None:
    nodes = [(f"node{i + 1}", alloc) for i, alloc in enumerate(allocs)]
    assert scores(strategy("MostAllocated", resources), pod, nodes, existing) == expected


DECREASING = {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]}


@pytest.mark.parametrize(
    ("name", "pod", "allocs", "existing", "expected"),
    [
        ("nothing scheduled, nothing requested", [], [SMALL, SMALL], None, [100, 100]),
        (
            "nothing scheduled, resources requested, differently sized nodes",
            TWO_CONTAINERS,
            [SMALL, WIDE],
            None,
            [38, 50],
        ),
        (
            "no resources requested, pods scheduled with resources",
            [],
            [BIG, BIG],
            {
                "node1": [{"cpu": "3000", "memory": "0"}],
                "node2": [{"cpu": "3000", "memory": "5000"}],
            },
            [85, 73],  # round((70 + 100) / 2), round((70 + 75) / 2) = round(72.5)
        ),
    ],
)
def test_requested_to_capacity_ratio(
    name: str,
    pod: Sequence[Res],
    allocs: Sequence[Res],
    existing: Mapping[str, Sequence[Res]] | None,
    expected: list[int],
) -> None:
    args = strategy("RequestedToCapacityRatio", requestedToCapacityRatio=DECREASING)
    nodes = [(f"node{i + 1}", alloc) for i, alloc in enumerate(allocs)]
    assert scores(args, pod, nodes, existing) == expected


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        # helper/shape_score_test.go TestBrokenLinearFunction
        (
            [(10, 1), (90, 9)],
            {-10: 1, 0: 1, 9: 1, 10: 1, 15: 1, 19: 1, 20: 2, 89: 8, 90: 9, 99: 9, 100: 9, 110: 9},
        ),
        (
            [(0, 2), (40, 10), (100, 0)],
            {-10: 2, 0: 2, 20: 6, 30: 8, 40: 10, 70: 5, 100: 0, 110: 0},
        ),
        ([(0, 2), (40, 2), (100, 2)], {-10: 2, 0: 2, 20: 2, 30: 2, 40: 2, 70: 2, 100: 2, 110: 2}),
    ],
)
def test_broken_linear_function(shape: list[tuple[int, int]], expected: dict[int, int]) -> None:
    function = broken_linear_function(shape)
    assert {p: function(p) for p in expected} == expected


def test_non_zero_requests_are_used_for_scoring() -> None:
    # A container without requests counts as 100m / 200Mi (resource_allocation.go).
    node = {"cpu": "1", "memory": "2000Mi"}
    got = scores({}, [{}], [("node1", node)])
    assert got == [(90 + 90) // 2]
