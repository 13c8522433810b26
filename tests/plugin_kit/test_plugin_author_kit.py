"""What a plugin author relies on: optional score extensions, FakeHandle as a Handle, and the
public runners over the whole algorithm (`schedule`) and the queue's hints (`queueing_hint`)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.objects import PodView
from scheduler.framework.events import ActionType, ClusterEventWithHint, EventResource
from scheduler.framework.interface import CycleState, Handle
from scheduler.framework.status import Status
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.testing import (
    ClusterEvent,
    FakeHandle,
    NodePluginScores,
    QueueingHint,
    build_framework,
    make_node,
    make_pod,
    make_snapshot,
    queueing_hint,
    run_cycle,
    schedule,
)


class PreferBig:
    """Scores a node by its allocatable CPU cores; has no score_extensions at all."""

    name = "PreferBig"

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.handle = handle

    def score(self, state: CycleState, pod: PodView, node_info: Any) -> tuple[int, Status]:
        return node_info.allocatable.milli_cpu // 1000, Status.OK


def test_a_score_plugin_without_score_extensions_runs() -> None:
    nodes = [
        make_node(f"n{i}", {"cpu": str(cpu), "memory": "8Gi", "pods": "10"})
        for i, cpu in enumerate((2, 8, 4))
    ]
    snapshot = make_snapshot(nodes)
    framework = build_framework([PreferBig], points=["score"])

    outcome = schedule(framework, make_pod(), snapshot)
    per_node = run_cycle(framework, make_pod(), snapshot)

    assert outcome.node == "n1"
    assert per_node.totals == {"n0": 2, "n1": 8, "n2": 4}
    assert all(isinstance(scores, NodePluginScores) for scores in outcome.scores)


def test_fake_handle_is_a_handle_for_in_tree_plugins() -> None:
    handle: Handle = FakeHandle()  # mypy holds FakeHandle to Handle (scheduler/testing/cluster.py)
    plugin = NodeResourcesFit(None, handle)

    assert plugin.name == "NodeResourcesFit"
    assert handle.get_waiting_pod("uid") is None and handle.pod_exists(make_pod())


@settings(max_examples=40, deadline=None)
@given(
    cpus=st.lists(st.integers(1, 16), min_size=1, max_size=6),
    request=st.integers(1, 12),
)
def test_schedule_picks_a_node_run_cycle_scores_highest(cpus: list[int], request: int) -> None:
    """The algorithm (the row path) and the per-node runner agree: the chosen node is one of
    those run_cycle gives the highest total, and nothing is chosen when nothing fits."""
    nodes = [
        make_node(f"n{i}", {"cpu": str(cpu), "memory": "64Gi", "pods": "10"})
        for i, cpu in enumerate(cpus)
    ]
    snapshot = make_snapshot(nodes)
    framework = build_framework(["NodeResourcesFit", "NodeResourcesBalancedAllocation"])
    pod = make_pod(containers=[{"cpu": str(request), "memory": "1Gi"}])

    outcome = schedule(framework, pod, snapshot)
    per_node = run_cycle(framework, pod, snapshot)

    feasible = per_node.feasible
    if not feasible:
        assert outcome.node is None and "Insufficient cpu" in outcome.message
        return
    assert outcome.feasible_nodes == len(feasible)
    if len(feasible) == 1:
        assert outcome.node == feasible[0]
        return
    best = max(per_node.totals.values())
    assert per_node.totals[outcome.node or ""] == best
    assert {s.name: s.total_score for s in outcome.scores} == per_node.totals


def test_queueing_hint_asks_the_registered_hints_as_the_queue_does() -> None:
    calls: list[tuple[Any, Any]] = []

    def bigger_node(pod: PodView, old: Any, new: Any) -> QueueingHint:
        calls.append((old, new))
        grew = new.allocatable.milli_cpu > old.allocatable.milli_cpu
        return QueueingHint.QUEUE if grew else QueueingHint.SKIP

    class Waits:
        name = "Waits"

        def events_to_register(self) -> list[ClusterEventWithHint]:
            return [
                ClusterEventWithHint(
                    ClusterEvent(EventResource.NODE, ActionType.UPDATE), bigger_node
                )
            ]

    small, big = make_node("n", {"cpu": "1"}), make_node("n", {"cpu": "4"})
    update = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE)
    pod = make_pod()

    assert queueing_hint(Waits(), update, pod, small, big) is QueueingHint.QUEUE
    assert queueing_hint(Waits(), update, pod, big, small) is QueueingHint.SKIP
    add = ClusterEvent(EventResource.NODE, ActionType.ADD)
    assert queueing_hint(Waits(), add, pod, None, big) is QueueingHint.SKIP  # not registered
    assert len(calls) == 2


def test_an_in_tree_plugin_s_hints() -> None:
    from scheduler.plugins.nodeunschedulable import NodeUnschedulable

    plugin = NodeUnschedulable()
    cordoned = make_node("n", {"cpu": "1"}, unschedulable=True)
    uncordoned = make_node("n", {"cpu": "1"})
    taint_update = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)

    assert queueing_hint(plugin, taint_update, make_pod(), cordoned, uncordoned) is (
        QueueingHint.QUEUE
    )
