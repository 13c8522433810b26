"""The example plugin at work: on its own, and inside a profile built from its example config the
way `aiosched run` builds profiles (entry point → registry → load_config → ProfileSet)."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import pytest

from profiles.api import load_config
from scheduler.cycle.algorithm import StartIndex, schedule_pod
from scheduler.cycle.profile_set import ProfileSet, full_registry, registry_for_config
from scheduler.framework.events import ActionType, ClusterEvent, EventResource
from scheduler.framework.interface import CycleState
from scheduler.framework.results import FitError
from scheduler.framework.runtime import HandleDeps
from scheduler.framework.status import Code
from scheduler.testing import RecordingClient, make_node, make_node_info, make_pod, snapshot_of

if TYPE_CHECKING:
    from conftest import ExampleOnPath

    from scheduler.cache.node_info import NodeInfo

NODE_RESOURCES = {"cpu": "2", "memory": "4Gi", "pods": "110"}
NODES = ("node-0", "node-1", "node-2", "node-3")
NOT_ALLOWED = "node(s) didn't match the allowed name prefixes"


@pytest.mark.parametrize(
    ("prefixes", "node", "code"),
    [
        ((), "anything", Code.SUCCESS),
        (("pool-a-",), "pool-a-1", Code.SUCCESS),
        (("pool-a-",), "pool-b-1", Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        (("pool-a-", "pool-b-"), "pool-b-1", Code.SUCCESS),
        (("pool-a-",), "pool-a", Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
    ],
)
def test_filter(
    example_on_path: ExampleOnPath, prefixes: tuple[str, ...], node: str, code: Code
) -> None:
    from aiosched_example_plugin import NodeNamePrefix, NodeNamePrefixArgs

    plugin = NodeNamePrefix(NodeNamePrefixArgs(prefixes=prefixes))
    status = plugin.filter(CycleState(), make_pod(), make_node_info(make_node(node)))

    assert status.code == code
    if code != Code.SUCCESS:
        assert status.reasons == (NOT_ALLOWED,)


@pytest.mark.parametrize(
    ("preferred", "node", "score"),
    [("", "pool-a-1", 0), ("pool-a-", "pool-a-1", 100), ("pool-a-", "pool-b-1", 0)],
)
def test_score(example_on_path: ExampleOnPath, preferred: str, node: str, score: int) -> None:
    from aiosched_example_plugin import NodeNamePrefix, NodeNamePrefixArgs

    plugin = NodeNamePrefix(NodeNamePrefixArgs(preferred_prefix=preferred))
    value, status = plugin.score(CycleState(), make_pod(), make_node_info(make_node(node)))

    assert (value, status.is_success) == (score, True)


def cluster(full: set[str]) -> list[NodeInfo]:
    """NODES with 2 CPUs each; nodes in `full` run a pod using both."""
    return [
        make_node_info(
            make_node(name, NODE_RESOURCES),
            [make_pod(containers=[{"cpu": "2"}])] if name in full else [],
        )
        for name in NODES
    ]


def example_profile(example_on_path: ExampleOnPath, nodes: list[NodeInfo]) -> ProfileSet:
    snapshot = snapshot_of(nodes)
    config = load_config(example_on_path.config, registry_for_config())
    deps = HandleDeps(snapshot=lambda: snapshot, client=RecordingClient())
    return ProfileSet.build(config, full_registry(), lambda scheduler_name: deps)


@pytest.mark.parametrize(
    ("full", "chosen"),
    [
        (set(), "node-2"),  # preferred prefix wins over LeastAllocated's spreading
        ({"node-2"}, "node-1"),  # allowed but not preferred
        ({"node-1"}, "node-2"),
    ],
)
async def test_profile_from_example_config_places_pods(
    example_on_path: ExampleOnPath, full: set[str], chosen: str
) -> None:
    nodes = cluster(full)
    profile = example_profile(example_on_path, nodes)["default-scheduler"]

    result = await schedule_pod(
        profile.framework,
        CycleState(),
        make_pod(containers=[{"cpu": "1"}]),
        snapshot_of(nodes),
        percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
        next_start_index=StartIndex(),
        rng=random.Random(0),
    )

    assert result.suggested_host == chosen


async def test_no_allowed_node_fits_explains_why(example_on_path: ExampleOnPath) -> None:
    nodes = cluster({"node-1", "node-2"})
    profile = example_profile(example_on_path, nodes)["default-scheduler"]

    with pytest.raises(FitError) as caught:
        await schedule_pod(
            profile.framework,
            CycleState(),
            make_pod(containers=[{"cpu": "1"}]),
            snapshot_of(nodes),
            percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
            next_start_index=StartIndex(),
            rng=random.Random(0),
        )

    assert str(caught.value) == f"0/4 nodes are available: 2 Insufficient cpu, 2 {NOT_ALLOWED}."
    assert caught.value.diagnosis.unschedulable_plugins >= {"NodeNamePrefix"}


def test_only_node_additions_requeue_its_rejections(example_on_path: ExampleOnPath) -> None:
    profile = example_profile(example_on_path, cluster(set()))["default-scheduler"]

    events = profile.framework.events_to_register()["NodeNamePrefix"]

    assert [e.event for e in events] == [ClusterEvent(EventResource.NODE, ActionType.ADD)]
