"""NodeNamePrefix tested the way a plugin author would, with aiosched's public kit only:
`scheduler.testing` builds pods, nodes and a framework, and runs one pod through it."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pytest
from aiosched_example_plugin import ERR_REASON_PREFIX_MISMATCH, NodeNamePrefix, NodeNamePrefixArgs

from scheduler.cache.node_info import NodeInfo
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code
from scheduler.testing import (
    FakeHandle,
    build_framework,
    framework_from_config,
    handle_deps,
    make_node,
    make_node_info,
    make_pod,
    run_cycle,
    snapshot_of,
)

CONFIG = Path(__file__).resolve().parents[1] / "config.yaml"
NODE_RESOURCES = {"cpu": "2", "memory": "4Gi", "pods": "110"}


def cluster(full: Collection[str] = ()) -> list[NodeInfo]:
    """node-0 … node-3 with 2 CPUs; nodes in `full` run a pod using both."""
    return [
        make_node_info(
            make_node(name, NODE_RESOURCES),
            [make_pod(requests={"cpu": "2"})] if name in full else [],
        )
        for name in ("node-0", "node-1", "node-2", "node-3")
    ]


def test_filter_rejects_other_prefixes_for_good() -> None:
    plugin = NodeNamePrefix(NodeNamePrefixArgs(prefixes=("pool-a-",)), FakeHandle())

    status = plugin.filter(CycleState(), make_pod(), make_node_info(make_node("pool-b-1")))

    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE  # preemption cannot help
    assert status.reasons == (ERR_REASON_PREFIX_MISMATCH,)


def test_in_a_framework_with_fit() -> None:
    infos = cluster(full={"node-2"})
    framework = build_framework(
        [NodeNamePrefix, "NodeResourcesFit"],
        handle_deps(snapshot_of(infos)),
        args={"NodeNamePrefix": {"prefixes": ["node-1", "node-2"], "preferredPrefix": "node-2"}},
    )

    result = run_cycle(framework, make_pod(requests={"cpu": "1"}))

    assert result.feasible == ["node-1"]
    assert result.filter["node-0"].plugin == "NodeNamePrefix"
    assert result.filter["node-2"].reasons == ("Insufficient cpu",)


@pytest.mark.parametrize(("full", "best"), [(set(), "node-2"), ({"node-2"}, "node-1")])
def test_profile_from_the_example_config(full: set[str], best: str) -> None:
    """The config this package ships: the preferred prefix outweighs LeastAllocated."""
    infos = cluster(full)
    # `plugins` registers the class as its entry point would once the package is installed.
    framework = framework_from_config(
        CONFIG, handle_deps(snapshot_of(infos)), plugins=[NodeNamePrefix]
    )

    totals = run_cycle(framework, make_pod(requests={"cpu": "1"})).totals

    assert max(totals, key=totals.__getitem__) == best


def test_the_algorithm_picks_the_preferred_node() -> None:
    """docs/plugin-authors.md's example of `schedule`: the whole algorithm, host included."""
    from scheduler.testing import make_snapshot, schedule

    nodes = [
        make_node(name, {"cpu": "2", "memory": "4Gi", "pods": "110"})
        for name in ("node-0", "node-1", "node-2")
    ]
    framework = build_framework(
        [NodeNamePrefix, "NodeResourcesFit"],
        args={"NodeNamePrefix": {"prefixes": ["node-1", "node-2"], "preferredPrefix": "node-2"}},
    )

    outcome = schedule(framework, make_pod(requests={"cpu": "1"}), make_snapshot(nodes))

    assert outcome.node == "node-2"
    assert outcome.feasible_nodes == 2


def test_a_new_node_may_help() -> None:
    """docs/plugin-authors.md's example of `queueing_hint`: a node add requeues, an update not."""
    from scheduler.framework.events import ActionType, EventResource
    from scheduler.testing import ClusterEvent, QueueingHint, queueing_hint

    plugin = NodeNamePrefix(NodeNamePrefixArgs(prefixes=("pool-a-",)), FakeHandle())
    added = ClusterEvent(EventResource.NODE, ActionType.ADD)
    updated = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL)
    node = make_node("pool-a-9")

    assert queueing_hint(plugin, added, make_pod(), None, node) is QueueingHint.QUEUE
    assert queueing_hint(plugin, updated, make_pod(), node, node) is QueueingHint.SKIP
