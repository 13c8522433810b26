"""Framework runtime semantics, after upstream's pkg/scheduler/framework/runtime/framework_test.go
(status handling, ordering, weights, Skip, PreFilterResult, Permit, Unreserve order)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from scheduler.api.objects import PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.framework.errors import FrameworkError
from scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.framework.interface import CycleState, NodeScore, PreFilterResult
from scheduler.framework.registry import PluginEntry, Registry
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.framework.status import Code, Status
from scheduler.framework.waiting_pods import format_go_duration
from scheduler.plugins.registry import in_tree_registry
from scheduler.queue.types import QueuedPodInfo
from scheduler.testing import RecordingClient, make_node, make_node_info, make_pod, snapshot_of


class Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []


class FakePlugin:
    """Configurable plugin implementing every point; behaviour set through attributes."""

    def __init__(self, name: str, log: Recorder, **behaviour: Any) -> None:
        self.name = name
        self.log = log
        self.b = behaviour

    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        self.log.calls.append(f"pre_filter:{self.name}")
        return self.b.get("pre_filter_result"), self.b.get("pre_filter", Status.OK)

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        self.log.calls.append(f"filter:{self.name}")
        status: Status = self.b.get("filter", Status.OK)
        return status

    def pre_score(self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]) -> Status:
        status: Status = self.b.get("pre_score", Status.OK)
        return status

    def score(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> tuple[int, Status]:
        self.log.calls.append(f"score:{self.name}")
        return self.b.get("score", 1), Status.OK

    def score_extensions(self) -> Any:
        return self.b.get("normalize")

    def reserve(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        self.log.calls.append(f"reserve:{self.name}")
        status: Status = self.b.get("reserve", Status.OK)
        return status

    def unreserve(self, state: CycleState, pod: PodView, node_name: str) -> None:
        self.log.calls.append(f"unreserve:{self.name}")

    def permit(self, state: CycleState, pod: PodView, node_name: str) -> tuple[Status, float]:
        result: tuple[Status, float] = self.b.get("permit", (Status.OK, 0.0))
        return result

    async def bind(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        self.log.calls.append(f"bind:{self.name}")
        status: Status = self.b.get("bind", Status.OK)
        return status


def framework(points: dict[str, list[tuple[FakePlugin, int]]], nominator: Any = None) -> Framework:
    deps = HandleDeps(snapshot=lambda: snapshot_of([]), client=RecordingClient())
    if nominator is not None:
        deps.nominator = nominator
    return Framework("default-scheduler", points, deps)


NODE = make_node_info(make_node("node1", {"cpu": "1", "memory": "1Gi", "pods": "10"}))
POD = make_pod("p", uid="p-uid")


def test_filter_first_failure_wins_and_is_attributed() -> None:
    log = Recorder()
    a = FakePlugin("A", log)
    b = FakePlugin("B", log, filter=Status.unschedulable("nope"))
    c = FakePlugin("C", log, filter=Status.unschedulable("never asked"))
    status = framework({"filter": [(a, 0), (b, 0), (c, 0)]}).run_filter_plugins(
        CycleState(), POD, NODE
    )
    assert (status.code, status.message, status.plugin) == (Code.UNSCHEDULABLE, "nope", "B")
    assert log.calls == ["filter:A", "filter:B"]


def test_filter_non_rejection_becomes_error() -> None:
    plugin = FakePlugin("A", Recorder(), filter=Status.wait("?"))
    status = framework({"filter": [(plugin, 0)]}).run_filter_plugins(CycleState(), POD, NODE)
    assert status.code == Code.ERROR
    assert status.message == 'running "A" filter plugin: ?'


def test_pre_filter_skip_skips_filter() -> None:
    log = Recorder()
    skipper = FakePlugin("Skipper", log, pre_filter=Status.skip(), filter=Status.unschedulable("x"))
    fwk = framework({"preFilter": [(skipper, 0)], "filter": [(skipper, 0)]})
    state = CycleState()
    _, status, _ = fwk.run_pre_filter_plugins(state, POD, [NODE])
    assert status.is_success
    assert state.skip_filter_plugins == {"Skipper"}
    assert fwk.run_filter_plugins(state, POD, NODE).is_success


@pytest.mark.parametrize(
    ("results", "expected_nodes", "code", "message", "plugins"),
    [
        ([None, None], None, Code.SUCCESS, "", set()),
        ([{"a", "b"}, None], {"a", "b"}, Code.SUCCESS, "", {"P0"}),
        ([{"a", "b"}, {"b", "c"}], {"b"}, Code.SUCCESS, "", {"P0", "P1"}),
        (
            [set(), None],
            set(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node(s) didn't satisfy plugin P0",
            {"P0"},
        ),
        (
            [{"a"}, {"b"}],
            set(),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node(s) didn't satisfy plugin(s) [P0 P1] simultaneously",
            {"P0", "P1"},
        ),
    ],
)
def test_pre_filter_results_merge(
    results: list[set[str] | None],
    expected_nodes: set[str] | None,
    code: Code,
    message: str,
    plugins: set[str],
) -> None:
    log = Recorder()
    points = [
        (
            FakePlugin(
                f"P{i}", log, pre_filter_result=None if r is None else PreFilterResult(frozenset(r))
            ),
            0,
        )
        for i, r in enumerate(results)
    ]
    result, status, unschedulable = framework({"preFilter": points}).run_pre_filter_plugins(
        CycleState(), POD, [NODE]
    )
    got = None if result is None else result.node_names
    assert got == (None if expected_nodes is None else frozenset(expected_nodes))
    assert (status.code, status.message, unschedulable) == (code, message, plugins)


def test_pre_filter_unschedulable_runs_the_rest_unresolvable_stops() -> None:
    log = Recorder()
    first = FakePlugin("A", log, pre_filter=Status.unschedulable("a"))
    second = FakePlugin("B", log)
    _, status, _ = framework({"preFilter": [(first, 0), (second, 0)]}).run_pre_filter_plugins(
        CycleState(), POD, [NODE]
    )
    assert (status.code, status.plugin) == (Code.UNSCHEDULABLE, "A")
    assert log.calls == ["pre_filter:A", "pre_filter:B"]
    log.calls.clear()
    first.b["pre_filter"] = Status.unresolvable("a")
    _, status, _ = framework({"preFilter": [(first, 0), (second, 0)]}).run_pre_filter_plugins(
        CycleState(), POD, [NODE]
    )
    assert (status.code, status.plugin) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "A")
    assert log.calls == ["pre_filter:A"]
    first.b["pre_filter"] = Status.error("boom")
    _, status, _ = framework({"preFilter": [(first, 0)]}).run_pre_filter_plugins(
        CycleState(), POD, [NODE]
    )
    assert (status.code, status.message) == (Code.ERROR, 'running PreFilter plugin "A": boom')


class Normalizer:
    def __init__(self, delta: int) -> None:
        self.delta = delta

    def normalize_score(self, state: CycleState, pod: PodView, scores: list[NodeScore]) -> Status:
        for item in scores:
            item.score += self.delta
        return Status.OK


@pytest.mark.parametrize(
    ("plugins", "expected_total", "error"),
    [
        ([("A", 1, 1, None)], 1, ""),
        ([("A", 10, 3, None), ("B", 20, 2, None)], 70, ""),
        ([("A", 10, 0, None)], 10, ""),  # weight 0 counts as 1
        ([("A", 10, 1, Normalizer(5))], 15, ""),
        (
            [("A", 101, 1, None)],
            0,
            'plugin "A" returns an invalid score 101, it should in the range of [0, 100] after'
            " normalizing",
        ),
        ([("A", 0, 1, Normalizer(-1))], 0, 'plugin "A" returns an invalid score -1'),
    ],
)
def test_score_weights_and_range(
    plugins: list[tuple[str, int, int, Any]], expected_total: int, error: str
) -> None:
    log = Recorder()
    points = [
        (FakePlugin(name, log, score=score, normalize=norm), weight)
        for name, score, weight, norm in plugins
    ]
    scores, status = framework({"score": points}).run_score_plugins(CycleState(), POD, [NODE])
    if error:
        assert status.code == Code.ERROR
        assert error in status.message
    else:
        assert status.is_success
        assert scores[0].name == "node1"
        assert scores[0].total_score == expected_total


def test_pre_score_skip_skips_score() -> None:
    log = Recorder()
    plugin = FakePlugin("A", log, pre_score=Status.skip(), score=50)
    fwk = framework({"preScore": [(plugin, 0)], "score": [(plugin, 1)]})
    state = CycleState()
    assert fwk.run_pre_score_plugins(state, POD, [NODE]).is_success
    scores, _ = fwk.run_score_plugins(state, POD, [NODE])
    assert scores[0].total_score == 0
    assert "score:A" not in log.calls


def test_unreserve_runs_in_reverse_order() -> None:
    log = Recorder()
    plugins = [(FakePlugin(n, log), 0) for n in ("A", "B", "C")]
    fwk = framework({"reserve": plugins})
    assert fwk.run_reserve_plugins_reserve(CycleState(), POD, "node1").is_success
    fwk.run_reserve_plugins_unreserve(CycleState(), POD, "node1")
    assert log.calls == [
        "reserve:A",
        "reserve:B",
        "reserve:C",
        "unreserve:C",
        "unreserve:B",
        "unreserve:A",
    ]


def test_reserve_rejection_is_attributed_error_is_wrapped() -> None:
    log = Recorder()
    fwk = framework({"reserve": [(FakePlugin("A", log, reserve=Status.unschedulable("full")), 0)]})
    status = fwk.run_reserve_plugins_reserve(CycleState(), POD, "node1")
    assert (status.code, status.plugin) == (Code.UNSCHEDULABLE, "A")
    fwk = framework({"reserve": [(FakePlugin("A", log, reserve=Status.error("x")), 0)]})
    assert (
        fwk.run_reserve_plugins_reserve(CycleState(), POD, "node1").message
        == 'running Reserve plugin "A": x'
    )


async def test_permit_wait_then_all_allow() -> None:
    log = Recorder()
    a = FakePlugin("A", log, permit=(Status.wait(), 10.0))
    b = FakePlugin("B", log, permit=(Status.wait(), 10.0))
    fwk = framework({"permit": [(a, 0), (b, 0)]})
    status = fwk.run_permit_plugins(CycleState(), POD, "node1")
    assert status.code == Code.WAIT
    waiting = fwk.get_waiting_pod(POD.uid)
    assert waiting is not None
    assert sorted(waiting.pending_plugins()) == ["A", "B"]
    waiter = asyncio.create_task(fwk.wait_on_permit(POD))
    waiting.allow("A")
    await asyncio.sleep(0)
    assert not waiter.done()  # B has not allowed yet
    waiting.allow("B")
    assert (await waiter).is_success
    assert fwk.get_waiting_pod(POD.uid) is None


async def test_permit_reject_while_waiting() -> None:
    fwk = framework({"permit": [(FakePlugin("A", Recorder(), permit=(Status.wait(), 10.0)), 0)]})
    fwk.run_permit_plugins(CycleState(), POD, "node1")
    waiter = asyncio.create_task(fwk.wait_on_permit(POD))
    for waiting in fwk.iterate_waiting_pods():
        waiting.reject("Other", "no room")
    status = await waiter
    assert (status.code, status.message, status.plugin) == (Code.UNSCHEDULABLE, "no room", "Other")


async def test_permit_timeout_rejects_with_upstream_message() -> None:
    fwk = framework({"permit": [(FakePlugin("A", Recorder(), permit=(Status.wait(), 0.01)), 0)]})
    fwk.run_permit_plugins(CycleState(), POD, "node1")
    status = await fwk.wait_on_permit(POD)
    assert status.code == Code.UNSCHEDULABLE
    assert status.message == "rejected due to timeout after waiting 10ms at plugin A"
    assert status.plugin == "A"


async def test_reject_waiting_pod_through_the_handle() -> None:
    fwk = framework({"permit": [(FakePlugin("A", Recorder(), permit=(Status.wait(), 10.0)), 0)]})
    fwk.run_permit_plugins(CycleState(), POD, "node1")
    assert fwk.reject_waiting_pod(POD.uid)
    assert (await fwk.wait_on_permit(POD)).message == "removed"
    assert not fwk.reject_waiting_pod(POD.uid)


def test_permit_rejection_stops() -> None:
    fwk = framework(
        {"permit": [(FakePlugin("A", Recorder(), permit=(Status.unschedulable("no"), 0.0)), 0)]}
    )
    status = fwk.run_permit_plugins(CycleState(), POD, "node1")
    assert (status.code, status.plugin) == (Code.UNSCHEDULABLE, "A")
    assert fwk.get_waiting_pod(POD.uid) is None


@pytest.mark.parametrize(
    ("statuses", "code", "called"),
    [
        ([Status.skip(), Status.OK], Code.SUCCESS, ["bind:A", "bind:B"]),
        ([Status.OK, Status.OK], Code.SUCCESS, ["bind:A"]),
        ([Status.skip(), Status.skip()], Code.SKIP, ["bind:A", "bind:B"]),
        ([Status.error("x"), Status.OK], Code.ERROR, ["bind:A"]),
    ],
)
async def test_bind_skip_goes_to_next(
    statuses: list[Status], code: Code, called: list[str]
) -> None:
    log = Recorder()
    plugins = [(FakePlugin(n, log, bind=s), 0) for n, s in zip("AB", statuses, strict=True)]
    status = await framework({"bind": plugins}).run_bind_plugins(CycleState(), POD, "node1")
    assert status.code == code
    assert log.calls == called


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (10, "10s"),
        (0.5, "500ms"),
        (90, "1m30s"),
        (0, "0s"),
        (3600, "1h0m0s"),
        (1.5, "1.5s"),
        (0.0015, "1.5ms"),
    ],
)
def test_go_duration(seconds: float, text: str) -> None:
    assert format_go_duration(seconds) == text


def test_build_from_registry_shares_instances() -> None:
    deps = HandleDeps(snapshot=lambda: snapshot_of([]), client=RecordingClient())
    fwk = Framework.build(
        "p",
        in_tree_registry(),
        {
            "preFilter": [("NodeResourcesFit", 0)],
            "filter": [("NodeResourcesFit", 0)],
            "score": [("NodeResourcesFit", 3)],
        },
        {"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}}},
        deps,
    )
    assert fwk.pre_filter_plugins[0] is fwk.filter_plugins[0] is fwk.score_plugins[0]
    assert fwk.score_weights == {"NodeResourcesFit": 3}
    with pytest.raises(FrameworkError, match="does not extend"):
        Framework.build("p", in_tree_registry(), {"bind": [("NodeResourcesFit", 0)]}, {}, deps)
    with pytest.raises(FrameworkError, match="does not exist"):
        Framework.build("p", in_tree_registry(), {"filter": [("Nope", 0)]}, {}, deps)


def test_registry_refuses_duplicates_and_reports_points() -> None:
    registry = in_tree_registry()
    assert registry["NodeResourcesFit"].extension_points == frozenset(
        {"preFilter", "filter", "preScore", "score"}
    )
    assert registry["DefaultBinder"].extension_points == frozenset({"bind"})
    with pytest.raises(ValueError, match="already exists"):
        registry.register(PluginEntry("DefaultBinder", object))
    assert len(Registry(registry)) == len(registry)


def test_events_to_register_and_queueing_hints() -> None:
    log = Recorder()
    registry = in_tree_registry()
    deps = HandleDeps(snapshot=lambda: snapshot_of([]), client=RecordingClient())
    fwk = Framework.build(
        "p", registry, {"filter": [("NodeResourcesFit", 0), ("NodeUnschedulable", 0)]}, {}, deps
    )
    events = fwk.events_to_register()
    assert set(events) == {"NodeResourcesFit", "NodeUnschedulable"}
    fake = framework({"filter": [(FakePlugin("Legacy", log), 0)]})
    assert fake.events_to_register()["Legacy"][0].event.resource == EventResource.WILDCARD

    pod = make_pod(containers=[{"cpu": "2"}])
    info = QueuedPodInfo(pod, timestamp=0.0, unschedulable_plugins={"NodeResourcesFit"})
    node_add = ClusterEvent(EventResource.NODE, ActionType.ADD)
    small = make_node("n", {"cpu": "1", "pods": "10"})
    big = make_node("n", {"cpu": "4", "pods": "10"})
    assert fwk.queueing_hint(info, node_add, None, small) == QueueingHint.SKIP
    assert fwk.queueing_hint(info, node_add, None, big) == QueueingHint.QUEUE
    taint = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT)
    assert fwk.queueing_hint(info, taint, small, big) == QueueingHint.SKIP  # not registered
    deleted = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE)
    bound = make_pod(node_name="n", containers=[{"cpu": "1"}])
    assert fwk.queueing_hint(info, deleted, bound, None) == QueueingHint.QUEUE
    no_rejectors = QueuedPodInfo(pod, timestamp=0.0)
    assert fwk.queueing_hint(no_rejectors, taint, small, big) == QueueingHint.QUEUE


def test_filter_with_nominated_pods_two_passes() -> None:
    # A higher-priority pod nominated to the node takes its room: the pod must not fit.
    from scheduler.plugins.noderesources.fit import NodeResourcesFit
    from scheduler.testing import StaticNominator

    fit = NodeResourcesFit(None)
    node = make_node_info(make_node("node1", {"cpu": "2", "pods": "10"}))
    pod = make_pod(priority=1, containers=[{"cpu": "1500m"}])
    nominated = make_pod(priority=5, containers=[{"cpu": "1"}], nominated_node_name="node1")
    fwk = framework(
        {"preFilter": [(fit, 0)], "filter": [(fit, 0)]},  # type: ignore[list-item]
        nominator=StaticNominator({"node1": [nominated]}),
    )
    state = CycleState()
    fwk.run_pre_filter_plugins(state, pod, [node])
    assert fwk.needs_nominated_pods_pass(pod, "node1")
    status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node)
    assert status.reasons == ("Insufficient cpu",)
    assert len(node.pods) == 0  # the real NodeInfo is untouched
    lower = make_pod(priority=9, containers=[{"cpu": "1500m"}])
    assert not fwk.needs_nominated_pods_pass(lower, "node1")
    assert fwk.run_filter_plugins_with_nominated_pods(state, lower, node).is_success
