"""DefaultPreemption offering its candidates to extenders that support preemption: upstream's
callExtenders (pkg/scheduler/framework/preemption/preemption.go) and TestPreempt's extender
cases (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go: an
extender that keeps one node, an ignorable one that fails, one that drops every candidate),
with fake extenders that answer like an HTTP extender would."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from scheduler.api.objects import PodView
from scheduler.extenders import Victims as ExtenderVictims
from scheduler.framework.interface import PostFilterResult
from scheduler.framework.status import Code, Status
from scheduler.testing import make_pod
from scheduler.testing.preemption import (
    HIGH_PRIORITY,
    LOW_PRIORITY,
    SMALL_RES,
    build,
    topology_node,
)

UNSCHED = Status.unschedulable()


class FakeExtender:
    """Keeps the candidates on `keep` (all when None), or fails; interested unless told not."""

    def __init__(
        self,
        keep: set[str] | None = None,
        *,
        fail: bool = False,
        ignorable: bool = False,
        preempts: bool = True,
        interested: bool = True,
        no_victims_on: str = "",
    ) -> None:
        self.keep, self.fail, self.ignorable = keep, fail, ignorable
        self.preempts, self.interested, self.no_victims_on = preempts, interested, no_victims_on
        self.asked: list[set[str]] = []

    def supports_preemption(self) -> bool:
        return self.preempts

    def is_interested(self, pod: PodView) -> bool:
        return self.interested

    def is_ignorable(self) -> bool:
        return self.ignorable

    async def process_preemption(
        self, pod: PodView, victims: Mapping[str, Any], node_infos: Any
    ) -> dict[str, ExtenderVictims]:
        self.asked.append(set(victims))
        if self.fail:
            raise RuntimeError("extender http://fake/preempt: connection refused")
        out = {
            name: ExtenderVictims(tuple(v.pods), v.num_pdb_violations)
            for name, v in victims.items()
            if self.keep is None or name in self.keep
        }
        if self.no_victims_on:
            out[self.no_victims_on] = ExtenderVictims(())
        return out


def _cluster() -> tuple[Any, PodView, Any]:
    # room for one SMALL_RES pod each: the preemptor needs that node's low-priority pod gone
    room = {"cpu": "150m", "memory": "150", "pods": "10"}
    nodes = [topology_node(name, room) for name in ("node1", "node2", "node3")]
    pods = [
        make_pod(
            f"p{i}", uid=f"p{i}", node_name=f"node{i}", priority=LOW_PRIORITY, requests=SMALL_RES
        )
        for i in (1, 2, 3)
    ]
    preemptor = make_pod("preemptor", uid="preemptor", priority=HIGH_PRIORITY, requests=SMALL_RES)
    h = build(nodes, pods, plugins=("NodeResourcesFit",))
    filtered = {n.name: UNSCHED for n in nodes}
    return h, preemptor, filtered


def _statuses(filtered: dict[str, Status]) -> Any:
    from scheduler.framework.interface import NodeToStatus

    return NodeToStatus(dict(filtered))


# (extenders, node chosen or None, error text or "")
CASES = [
    ("one extender keeps node3", [FakeExtender({"node3"})], "node3", ""),
    ("two extenders narrow down", [FakeExtender({"node2", "node3"}), FakeExtender({"node2"})],
     "node2", ""),
    ("an ignorable extender that fails is skipped", [FakeExtender(fail=True, ignorable=True),
     FakeExtender({"node1"})], "node1", ""),
    ("a failing extender ends preemption", [FakeExtender(fail=True)], None,
     "extender http://fake/preempt: connection refused"),
    ("an extender without preempt verb is not asked", [FakeExtender(set(), preempts=False),
     FakeExtender({"node2"})], "node2", ""),
    ("an uninterested extender is not asked", [FakeExtender(set(), interested=False),
     FakeExtender({"node3"})], "node3", ""),
    ("a node without victims is an error", [FakeExtender({"node1"}, no_victims_on="node2")],
     None, 'expected at least one victim pod on node "node2"'),
    ("an ignorable extender's node without victims is dropped",
     [FakeExtender({"node1"}, no_victims_on="node2", ignorable=True)], "node1", ""),
]  # fmt: skip


@pytest.mark.parametrize(("name", "extenders", "want_node", "want_error"), CASES)
async def test_preemption_asks_preempting_extenders(
    name: str, extenders: list[FakeExtender], want_node: str | None, want_error: str
) -> None:
    h, pod, filtered = _cluster()
    state = h.pre_filtered_state(pod)
    result, status = await h.plugin.post_filter_with_extenders(
        state, pod, _statuses(filtered), extenders
    )
    if want_error:
        assert result is None and status.code == Code.ERROR
        assert status.message == "preemption: " + want_error
        assert h.preemptions == []
        return
    assert (result, status) == (PostFilterResult(want_node or ""), Status.OK)
    (preemption,) = h.preemptions
    assert preemption.node_name == want_node
    assert want_node is not None
    assert [v.name for v in preemption.victims] == [f"p{want_node[-1]}"]


async def test_extenders_dropping_every_candidate_leave_no_node() -> None:
    h, pod, filtered = _cluster()
    extender = FakeExtender(set())
    result, status = await h.plugin.post_filter_with_extenders(
        h.pre_filtered_state(pod), pod, _statuses(filtered), [extender]
    )
    assert result is None and status.code == Code.UNSCHEDULABLE
    assert status.message.startswith("preemption: ")
    assert extender.asked == [{"node1", "node2", "node3"}]
    assert h.preemptions == []


async def test_framework_runner_awaits_the_extender_aware_post_filter() -> None:
    h, pod, filtered = _cluster()
    result, status = await h.framework.run_post_filter_plugins(
        h.pre_filtered_state(pod), pod, _statuses(filtered), [FakeExtender({"node2"})]
    )
    assert (result, status.is_success) == (PostFilterResult("node2"), True)
