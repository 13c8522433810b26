"""schedule_pod with in-process fake extenders: upstream's
TestSchedulerWithExtenders cases (pkg/scheduler/extender_test.go), the statuses extenders leave
in the diagnosis, and the trace points of their calls."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.cache.node_info import NodeInfo
from scheduler.cycle.algorithm import StartIndex, schedule_pod
from scheduler.extenders import (
    EXTENDER_NAME,
    CallRecorder,
    ExtenderError,
    HostPriority,
    TracedPreemptingExtender,
)
from scheduler.framework.interface import CycleState
from scheduler.framework.results import FitError, SchedulingError
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.framework.status import Code, Status
from scheduler.testing import RecordingClient, make_node, make_node_info, make_pod, snapshot_of

Predicate = Callable[[str], bool | None]  # node → passes; None: the extender errors


def true_predicate(node: str) -> bool | None:
    return True


def false_predicate(node: str) -> bool | None:
    return False


def error_predicate(node: str) -> bool | None:
    return None


def node1_predicate(node: str) -> bool | None:
    return node == "node1"


def node2_predicate(node: str) -> bool | None:
    return node == "node2"


Prioritizer = Callable[[str], int | None]


def error_prioritizer(node: str) -> int | None:
    return None


def node1_prioritizer(node: str) -> int | None:
    return 10 if node == "node1" else 1


def node2_prioritizer(node: str) -> int | None:
    return 10 if node == "node2" else 1


@dataclass
class FakeExtender:
    """Upstream's testing FakeExtender: predicates, weighted prioritizers, interest, ignorable."""

    name: str
    predicates: Sequence[Predicate] = ()
    prioritizers: Sequence[tuple[Prioritizer, int]] = ()
    weight: int = 0
    uninterested: bool = False
    ignorable: bool = False
    calls: list[str] = field(default_factory=list)

    def is_interested(self, pod: Any) -> bool:
        return not self.uninterested

    def is_ignorable(self) -> bool:
        return self.ignorable

    def is_filter(self) -> bool:
        return True

    def is_prioritizer(self) -> bool:
        return bool(self.prioritizers)

    def is_binder(self) -> bool:
        return False

    async def filter(
        self, pod: Any, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodeInfo], dict[str, str], dict[str, str]]:
        self.calls.append("filter")
        passed, failed = [], {}
        for info in nodes:
            ok = all(p(info.node_name) for p in self.predicates)
            if any(p(info.node_name) is None for p in self.predicates):
                raise ExtenderError(self.name, "filter", "some error")
            if ok:
                passed.append(info)
            else:
                failed[info.node_name] = f'{self.name}: node "{info.node_name}" failed'
        return passed, failed, {}

    async def prioritize(
        self, pod: Any, nodes: Sequence[NodeInfo]
    ) -> tuple[list[HostPriority], int]:
        self.calls.append("prioritize")
        totals = dict.fromkeys((info.node_name for info in nodes), 0)
        for prioritizer, weight in self.prioritizers:
            for node in totals:
                score = prioritizer(node)
                if score is None:
                    raise ExtenderError(self.name, "prioritize", "some error")
                totals[node] += score * weight
        return [HostPriority(node, score) for node, score in totals.items()], self.weight


class TrueFilter:
    name = "TrueFilter"

    def filter(self, state: CycleState, pod: Any, node_info: NodeInfo) -> Status:
        return Status.OK


class EqualPrioritizer:
    name = "EqualPrioritizer"

    def score(self, state: CycleState, pod: Any, node_info: NodeInfo) -> tuple[int, Status]:
        return 1, Status.OK

    def score_extensions(self) -> None:
        return None


class Node2Prioritizer(EqualPrioritizer):
    name = "Node2Prioritizer"

    def score(self, state: CycleState, pod: Any, node_info: NodeInfo) -> tuple[int, Status]:
        return (100 if node_info.node_name == "node2" else 10), Status.OK


def framework(
    score: Sequence[tuple[Any, int]] = (),
    trace: bool = False,
    names: Sequence[str] = ("node1", "node2"),
) -> Framework:
    nodes = [make_node_info(make_node(n)) for n in names]
    snapshot = snapshot_of(nodes)
    plugins: dict[str, list[tuple[Any, int]]] = {"filter": [(TrueFilter(), 0)]}
    if score:
        plugins["score"] = list(score)
    return Framework(
        "default-scheduler",
        plugins,
        HandleDeps(snapshot=lambda: snapshot, client=RecordingClient(), trace_cycles=trace),  # type: ignore[arg-type]
    )


# (name, score plugins, extenders, want host | None (error), evaluated, feasible)
CASES: list[tuple[str, list[tuple[Any, int]], list[FakeExtender], str | None, int, int]] = [
    (
        "test 1: an erroring filter extender fails the attempt",
        [],
        [FakeExtender("E1", [true_predicate]), FakeExtender("E2", [error_predicate])],
        None,
        0,
        0,
    ),
    (
        "test 2: no node passes the extenders",
        [],
        [FakeExtender("E1", [true_predicate]), FakeExtender("E2", [false_predicate])],
        None,
        0,
        0,
    ),
    (
        "test 3: one extender keeps node1",
        [(EqualPrioritizer(), 1)],
        [FakeExtender("E1", [true_predicate]), FakeExtender("E2", [node1_predicate])],
        "node1",
        2,
        1,
    ),
    (
        "test 4: extenders keep disjoint nodes",
        [],
        [FakeExtender("E1", [node2_predicate]), FakeExtender("E2", [node1_predicate])],
        None,
        0,
        0,
    ),
    (
        "test 5: a failing prioritizer is ignored",
        [],
        [FakeExtender("E1", [true_predicate], [(error_prioritizer, 10)], weight=1)],
        "node1",
        1,
        1,
    ),
    (
        "test 6: weighted extender scores decide",
        [],
        [
            FakeExtender("E1", [true_predicate], [(node1_prioritizer, 10)], weight=1),
            FakeExtender("E2", [true_predicate], [(node2_prioritizer, 10)], weight=5),
        ],
        "node2",
        2,
        2,
    ),
    (
        "test 7: plugin and extender scores add up",
        [(Node2Prioritizer(), 20)],
        [FakeExtender("E1", [true_predicate], [(node1_prioritizer, 10)], weight=1)],
        "node2",
        2,
        2,
    ),
    (
        "test 8: an uninterested extender is not called",
        [(Node2Prioritizer(), 1)],
        [FakeExtender("E1", [error_predicate], [(error_prioritizer, 10)], uninterested=True)],
        "node2",
        2,
        2,
    ),
    (
        "test 9: an ignorable extender that fails is skipped",
        [(EqualPrioritizer(), 1)],
        [
            FakeExtender("E1", [error_predicate], ignorable=True),
            FakeExtender("E2", [node1_predicate]),
        ],
        "node1",
        2,
        1,
    ),
    (
        "test 10: no scoring, extender filters, several feasible nodes evaluated",
        [],
        [FakeExtender("E1", [true_predicate]), FakeExtender("E2", [node1_predicate])],
        "node1",
        2,
        1,
    ),
]


@pytest.mark.parametrize(
    ("name", "score", "extenders", "host", "evaluated", "feasible"),
    CASES,
    ids=[c[0] for c in CASES],
)
async def test_scheduler_with_extenders(
    name: str,
    score: list[tuple[Any, int]],
    extenders: list[FakeExtender],
    host: str | None,
    evaluated: int,
    feasible: int,
) -> None:
    # Upstream's test 5 has a single node.
    fwk = framework(score, names=("node1",) if name.startswith("test 5") else ("node1", "node2"))
    pod = make_pod("p")
    run = schedule_pod(
        fwk,
        CycleState(),
        pod,
        fwk.snapshot(),
        extenders=extenders,  # type: ignore[arg-type]
        percentage_of_nodes_to_score=None,
        next_start_index=StartIndex(),
        rng=random.Random(1),
    )
    if host is None:
        with pytest.raises((FitError, SchedulingError)):
            await run
        return
    result = await run
    assert (result.suggested_host, result.evaluated_nodes, result.feasible_nodes) == (
        host,
        evaluated,
        feasible,
    )
    if "uninterested" in name:
        assert extenders[0].calls == []


async def test_extender_rejections_in_fit_error() -> None:
    """Failed nodes get Unschedulable statuses with the extender's message; the pod is marked
    rejected by "Extender" so any cluster event requeues it."""
    fwk = framework()
    extender = FakeExtender("E1", [false_predicate])
    with pytest.raises(FitError) as caught:
        await schedule_pod(
            fwk,
            CycleState(),
            make_pod("p"),
            fwk.snapshot(),
            extenders=[extender],  # type: ignore[list-item]
            percentage_of_nodes_to_score=None,
            next_start_index=StartIndex(),
            rng=random.Random(1),
        )
    diagnosis = caught.value.diagnosis
    assert diagnosis.unschedulable_plugins == {EXTENDER_NAME}
    assert {n: s.code for n, s in diagnosis.node_to_status.statuses.items()} == {
        "node1": Code.UNSCHEDULABLE,
        "node2": Code.UNSCHEDULABLE,
    }
    assert str(caught.value) == (
        '0/2 nodes are available: 1 E1: node "node1" failed, 1 E1: node "node2" failed.'
    )


class RecordingTracer:
    sample_plugin_metrics = False

    def __init__(self) -> None:
        self.points: list[tuple[str, str]] = []
        self.plugins: list[tuple[str, str]] = []

    def on_extension_point(self, point: str, status: Status, start: float, end: float) -> None:
        self.points.append((point, status.code_name))

    def on_plugin(
        self, point: str, plugin: str, status: Status, seconds: float, end: float
    ) -> None:
        self.plugins.append((point, plugin))


async def test_extender_calls_are_traced() -> None:
    fwk = framework([(EqualPrioritizer(), 1)], trace=True)
    state = CycleState()
    tracer = RecordingTracer()
    state.tracer = tracer
    extenders = [
        FakeExtender("E1", [error_predicate], ignorable=True),
        FakeExtender("E2", [true_predicate], [(node1_prioritizer, 1)], weight=1),
    ]
    result = await schedule_pod(
        fwk,
        state,
        make_pod("p"),
        fwk.snapshot(),
        extenders=extenders,  # type: ignore[arg-type]
        percentage_of_nodes_to_score=None,
        next_start_index=StartIndex(),
        rng=random.Random(1),
        recorder=CallRecorder(fwk, state),
    )
    assert result.suggested_host == "node1"
    extender_points = [p for p in tracer.points if p[0].startswith("Extender")]
    assert extender_points == [
        ("ExtenderFilter", "Error"),
        ("ExtenderFilter", "Success"),
        ("ExtenderPrioritize", "Success"),
    ]
    assert ("ExtenderFilter", "E1") in tracer.plugins
    assert ("ExtenderPrioritize", "E2") in tracer.plugins


class PreemptingFake:
    """An extender's preempt verb: keeps the candidates, or fails."""

    def __init__(self, name: str, fails: bool) -> None:
        self.name = name
        self.fails = fails

    def supports_preemption(self) -> bool:
        return True

    def is_interested(self, pod: Any) -> bool:
        return True

    def is_ignorable(self) -> bool:
        return False

    async def process_preemption(self, pod: Any, victims: Any, node_infos: Any) -> Any:
        if self.fails:
            raise ExtenderError(self.name, "preempt", "connection refused")
        return victims


async def test_extender_preempt_calls_are_traced() -> None:
    fwk = framework([(EqualPrioritizer(), 1)], trace=True)
    state = CycleState()
    tracer = RecordingTracer()
    state.tracer = tracer
    recorder = CallRecorder(fwk, state)
    kept = TracedPreemptingExtender(PreemptingFake("P1", fails=False), recorder)  # type: ignore[arg-type]
    failing = TracedPreemptingExtender(PreemptingFake("P2", fails=True), recorder)  # type: ignore[arg-type]
    assert await kept.process_preemption(make_pod("p"), {"node1": "v"}, None) == {"node1": "v"}
    with pytest.raises(ExtenderError):
        await failing.process_preemption(make_pod("p"), {"node1": "v"}, None)
    assert tracer.points == [("ExtenderPreempt", "Success"), ("ExtenderPreempt", "Error")]
    assert tracer.plugins == [("ExtenderPreempt", "P1"), ("ExtenderPreempt", "P2")]
