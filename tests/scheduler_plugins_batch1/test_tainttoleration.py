"""TaintToleration, ported from upstream's
pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go (inputs, expected
statuses and normalized scores)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from row_answers import filter_rows_of, normalize_rows_of, score_rows_of

from scheduler.api.objects import NodeView, PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.framework.events import QueueingHint
from scheduler.framework.interface import CycleState, NodeScore
from scheduler.framework.status import Code, Status
from scheduler.plugins.tainttoleration import TaintToleration
from scheduler.testing import FakeHandle, make_node, make_pod

Obj = dict[str, Any]


def pod_with(tolerations: Sequence[Obj], uid: str = "uid-1") -> PodView:
    return make_pod("pod1", uid=uid, containers=[{}], tolerations=tolerations)


def node_with(name: str, taints: Sequence[Obj]) -> NodeView:
    return make_node(name, taints=taints)


def tol(key: str, value: str = "", effect: str = "", op: str = "Equal") -> Obj:
    return {"key": key, "operator": op, "value": value, "effect": effect}


def taint(key: str, value: str, effect: str) -> Obj:
    return {"key": key, "value": value, "effect": effect}


def plugin_with(comparison_operators: bool) -> TaintToleration:
    """The plugin under the TaintTolerationComparisonOperators gate's value."""
    gates = {"TaintTolerationComparisonOperators": comparison_operators}
    return TaintToleration(handle=FakeHandle(feature_gates=gates))


PNS, NS = "PreferNoSchedule", "NoSchedule"
SLA = "node.kubernetes.io/sla"
SCORE_CASES: list[tuple[str, list[Obj], list[list[Obj]], list[int]]] = [
    (
        "node with taints tolerated by the pod, gets a higher score than those node with "
        "intolerable taints",
        [tol("foo", "bar", PNS)],
        [[taint("foo", "bar", PNS)], [taint("foo", "blah", PNS)]],
        [100, 0],
    ),
    (
        "the nodes that all of their taints are tolerated by the pod, get the same score, no "
        "matter how many tolerable taints a node has",
        [tol("cpu-type", "arm64", PNS), tol("disk-type", "ssd", PNS)],
        [
            [],
            [taint("cpu-type", "arm64", PNS)],
            [taint("cpu-type", "arm64", PNS), taint("disk-type", "ssd", PNS)],
        ],
        [100, 100, 100],
    ),
    (
        "the more intolerable taints a node has, the lower score it gets.",
        [tol("foo", "bar", PNS)],
        [
            [],
            [taint("cpu-type", "arm64", PNS)],
            [taint("cpu-type", "arm64", PNS), taint("disk-type", "ssd", PNS)],
        ],
        [100, 50, 0],
    ),
    (
        "only taints and tolerations that have effect PreferNoSchedule are checked by "
        "taints-tolerations priority function",
        [tol("cpu-type", "arm64", NS), tol("disk-type", "ssd", NS)],
        [
            [],
            [taint("cpu-type", "arm64", NS)],
            [taint("cpu-type", "arm64", PNS), taint("disk-type", "ssd", PNS)],
        ],
        [100, 100, 0],
    ),
    (
        "Default behaviour No taints and tolerations, lands on node with no taints",
        [],
        [[], [taint("cpu-type", "arm64", PNS)]],
        [100, 0],
    ),
]

# The Lt / Gt rows of TestTaintTolerationScore (enableTaintTolerationComparisonOps: true); with
# the gate off both nodes' taints are untolerated and score alike.
COMPARISON_SCORE_CASES: list[tuple[str, list[Obj], list[list[Obj]], list[int], list[int]]] = [
    (
        "Numeric Gt operator: pod with Gt toleration prefers nodes with matching SLA taint",
        [tol(SLA, "950", PNS, op="Gt")],
        [[taint(SLA, "800", PNS)], [taint(SLA, "999", PNS)]],
        [0, 100],
        [0, 0],
    ),
    (
        "Numeric Lt operator: pod with Lt toleration prefers nodes with matching SLA taint",
        [tol(SLA, "800", PNS, op="Lt")],
        [[taint(SLA, "950", PNS)], [taint(SLA, "700", PNS)]],
        [0, 100],
        [0, 0],
    ),
]


@pytest.mark.parametrize(
    ("name", "tolerations", "node_taints", "want"),
    SCORE_CASES,
    ids=[c[0][:60] for c in SCORE_CASES],
)
@pytest.mark.parametrize("rows", [False, True], ids=["per-node", "rows"])
def test_score(
    name: str, tolerations: list[Obj], node_taints: list[list[Obj]], want: list[int], rows: bool
) -> None:
    check_scores(TaintToleration(), tolerations, node_taints, want, rows)


@pytest.mark.parametrize(
    ("name", "tolerations", "node_taints", "want_on", "want_off"),
    COMPARISON_SCORE_CASES,
    ids=[c[0][:60] for c in COMPARISON_SCORE_CASES],
)
@pytest.mark.parametrize("gate", [True, False], ids=["gate-on", "gate-off"])
@pytest.mark.parametrize("rows", [False, True], ids=["per-node", "rows"])
def test_score_comparison_operators(
    name: str,
    tolerations: list[Obj],
    node_taints: list[list[Obj]],
    want_on: list[int],
    want_off: list[int],
    gate: bool,
    rows: bool,
) -> None:
    want = want_on if gate else want_off
    check_scores(plugin_with(gate), tolerations, node_taints, want, rows)


def check_scores(
    plugin: TaintToleration,
    tolerations: list[Obj],
    node_taints: list[list[Obj]],
    want: list[int],
    rows: bool,
) -> None:
    the_pod = pod_with(tolerations)
    infos = [NodeInfo(node_with(f"node{i}", t)) for i, t in enumerate(node_taints)]
    state = CycleState()
    assert plugin.pre_score(state, the_pod, infos).is_success
    if rows:
        raw = score_rows_of(plugin, state, the_pod, infos)
        assert normalize_rows_of(plugin, state, the_pod, raw) == want
    else:
        raw = []
        for info in infos:
            value, status = plugin.score(state, the_pod, info)
            assert status.is_success
            raw.append(value)
    scores = [NodeScore(info.node_name, value) for info, value in zip(infos, raw, strict=True)]
    assert plugin.score_extensions().normalize_score(state, the_pod, scores).is_success
    assert [s.score for s in scores] == want


def unresolvable(text: str) -> Status:
    return Status.unresolvable(text)


FILTER_CASES: list[tuple[str, list[Obj], list[Obj], Status | None]] = [
    (
        "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
        [],
        [taint("dedicated", "user1", NS)],
        unresolvable("node(s) had untolerated taint(s)"),
    ),
    (
        "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        [tol("dedicated", "user1", NS)],
        [taint("dedicated", "user1", NS)],
        None,
    ),
    (
        "A pod which can't be scheduled on a dedicated node assigned to user2 with effect "
        "NoSchedule",
        [tol("dedicated", "user2", NS)],
        [taint("dedicated", "user1", NS)],
        unresolvable("node(s) had untolerated taint(s)"),
    ),
    (
        "A pod can be scheduled onto the node, with a toleration uses operator Exists that "
        "tolerates the taints on the node",
        [tol("foo", effect=NS, op="Exists")],
        [taint("foo", "bar", NS)],
        None,
    ),
    (
        "A pod has multiple tolerations, node has multiple taints, all the taints are "
        "tolerated, pod can be scheduled onto the node",
        [tol("dedicated", "user2", NS), tol("foo", effect=NS, op="Exists")],
        [taint("dedicated", "user2", NS), taint("foo", "bar", NS)],
        None,
    ),
    (
        "A pod has a toleration that keys and values match the taint on the node, but "
        "(non-empty) effect doesn't match, can't be scheduled onto the node",
        [tol("foo", "bar", PNS)],
        [taint("foo", "bar", NS)],
        unresolvable("node(s) had untolerated taint(s)"),
    ),
    (
        "The pod has a toleration that keys and values match the taint on the node, the effect "
        "of toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled "
        "onto the node",
        [tol("foo", "bar")],
        [taint("foo", "bar", NS)],
        None,
    ),
    (
        "The pod has a toleration that key and value don't match the taint on the node, but the "
        "effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
        [tol("dedicated", "user2", NS)],
        [taint("dedicated", "user1", PNS)],
        None,
    ),
    (
        "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can "
        "be scheduled onto the node",
        [],
        [taint("dedicated", "user1", PNS)],
        None,
    ),
    # Not in upstream's table: a taint without value, and NoExecute.
    (
        "taint without a value is shown with an empty value",
        [],
        [taint("node.kubernetes.io/not-ready", "", "NoExecute")],
        unresolvable("node(s) had untolerated taint(s)"),
    ),
]


@pytest.mark.parametrize(
    ("name", "tolerations", "taints", "want"), FILTER_CASES, ids=[c[0][:60] for c in FILTER_CASES]
)
def test_filter(name: str, tolerations: list[Obj], taints: list[Obj], want: Status | None) -> None:
    plugin = TaintToleration()
    the_pod = pod_with(tolerations)
    info = NodeInfo(node_with("nodeA", taints))
    got = plugin.filter(CycleState(), the_pod, info)
    assert got == (want or Status.OK)
    if want is not None:
        assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert filter_rows_of(plugin, CycleState(), the_pod, [info]) == [want]


UNTOLERATED = unresolvable("node(s) had untolerated taint(s)")
PRIORITY = "node.example.com/priority-level"
# The Lt / Gt rows of TestTaintTolerationFilter and TestTaintTolerationFilterWithFeatureGate:
# (name, tolerations, taints, gate, want).
COMPARISON_FILTER_CASES: list[tuple[str, list[Obj], list[Obj], bool, Status | None]] = [
    (
        "Pod with Gt toleration cannot be scheduled on node when taint value is lower than "
        "threshold",
        [tol(PRIORITY, "950", NS, op="Gt")],
        [taint(PRIORITY, "800", NS)],
        True,
        UNTOLERATED,
    ),
    (
        "Pod with Gt toleration can be scheduled on node when taint value is higher than threshold",
        [tol(SLA, "750", NS, op="Gt")],
        [taint(SLA, "950", NS)],
        True,
        None,
    ),
    (
        "Pod with Lt toleration cannot be scheduled on node when taint value is higher than "
        "threshold",
        [tol(PRIORITY, "800", NS, op="Lt")],
        [taint(PRIORITY, "950", NS)],
        True,
        UNTOLERATED,
    ),
    (
        "Pod with Lt toleration can be scheduled on node when taint value is lower than threshold",
        [tol(SLA, "950", NS, op="Lt")],
        [taint(SLA, "800", NS)],
        True,
        None,
    ),
    (
        "Pod with Gt toleration cannot be scheduled on node with non-numeric taint value",
        [tol(SLA, "950", NS, op="Gt")],
        [taint(SLA, "high", NS)],
        True,
        UNTOLERATED,
    ),
    (
        "Pod with Gt toleration cannot be scheduled when feature gate is disabled",
        [tol(SLA, "750", NS, op="Gt")],
        [taint(SLA, "950", NS)],
        False,
        UNTOLERATED,
    ),
    (
        "Pod with Lt toleration cannot be scheduled when feature gate is disabled",
        [tol(SLA, "950", NS, op="Lt")],
        [taint(SLA, "800", NS)],
        False,
        UNTOLERATED,
    ),
    (
        "Pod with mixed tolerations (Equal and Gt) when feature gate is disabled - only Equal is "
        "honored",
        [tol("dedicated", "user1", NS), tol(SLA, "750", NS, op="Gt")],
        [taint("dedicated", "user1", NS)],
        False,
        None,
    ),
    (
        "Pod with mixed tolerations, Gt toleration needed but filtered out when feature gate is "
        "disabled",
        [tol("dedicated", "user1", NS), tol(SLA, "750", NS, op="Gt")],
        [taint("dedicated", "user1", NS), taint(SLA, "950", NS)],
        False,
        UNTOLERATED,
    ),
    # The same pod with the gate on: both taints tolerated.
    (
        "Pod with mixed tolerations, Gt toleration needed, feature gate enabled",
        [tol("dedicated", "user1", NS), tol(SLA, "750", NS, op="Gt")],
        [taint("dedicated", "user1", NS), taint(SLA, "950", NS)],
        True,
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "tolerations", "taints", "gate", "want"),
    COMPARISON_FILTER_CASES,
    ids=[c[0][:70] for c in COMPARISON_FILTER_CASES],
)
def test_filter_comparison_operators(
    name: str, tolerations: list[Obj], taints: list[Obj], gate: bool, want: Status | None
) -> None:
    plugin = plugin_with(gate)
    the_pod = pod_with(tolerations)
    info = NodeInfo(node_with("nodeA", taints))
    assert plugin.filter(CycleState(), the_pod, info) == (want or Status.OK)
    assert filter_rows_of(plugin, CycleState(), the_pod, [info]) == [want]


@pytest.mark.parametrize(("gate", "want"), [(True, QueueingHint.QUEUE), (False, QueueingHint.SKIP)])
def test_node_change_hint_comparison_operators(gate: bool, want: QueueingHint) -> None:
    """A node whose SLA taint rises above a Gt toleration's threshold requeues the pod only
    when the gate lets the toleration count."""
    node_event, _ = plugin_with(gate).events_to_register()
    assert node_event.hint is not None
    the_pod = pod_with([tol(SLA, "900", NS, op="Gt")])
    old = node_with("nodeA", [taint(SLA, "800", NS)])
    new = node_with("nodeA", [taint(SLA, "950", NS)])
    assert node_event.hint(the_pod, old, new) == want


TOL_USER2 = [tol("dedicated", "user2", NS)]
NODE_HINT_CASES: list[tuple[str, Any, Any, QueueingHint]] = [
    ("backoff-wrong-new-object", None, "not-a-node", QueueingHint.QUEUE),
    (
        "backoff-wrong-old-object",
        "not-a-node",
        node_with("nodeA", [taint("dedicated", "user1", NS)]),
        QueueingHint.QUEUE,
    ),
    (
        "skip-queue-on-untoleratedtaint-node-added",
        None,
        node_with("nodeA", [taint("dedicated", "user1", NS)]),
        QueueingHint.SKIP,
    ),
    (
        "queue-on-toleratedtaint-node-added",
        None,
        node_with("nodeA", [taint("dedicated", "user2", NS)]),
        QueueingHint.QUEUE,
    ),
    (
        "skip-unrelated-change",
        node_with("nodeA", [taint("dedicated", "user1", NS)]),
        node_with("nodeA", [taint("dedicated", "user1", NS), taint("dedicated", "user3", NS)]),
        QueueingHint.SKIP,
    ),
    (
        "queue-on-taint-change",
        node_with("nodeA", [taint("dedicated", "user1", NS)]),
        node_with("nodeA", [taint("dedicated", "user2", NS)]),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    ("name", "old", "new", "want"), NODE_HINT_CASES, ids=[c[0] for c in NODE_HINT_CASES]
)
def test_node_change_hint(name: str, old: Any, new: Any, want: QueueingHint) -> None:
    node_event, _ = TaintToleration().events_to_register()
    assert node_event.hint is not None
    assert node_event.hint(pod_with(TOL_USER2), old, new) == want


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("backoff-wrong-new-object", None, "not-a-pod", QueueingHint.QUEUE),
        ("backoff-wrong-old-object", "not-a-pod", pod_with([]), QueueingHint.QUEUE),
        (
            "skip-updates-other-pod",
            pod_with([], uid="uid1"),
            pod_with([tol("foo", effect=NS)], uid="uid1"),
            QueueingHint.SKIP,
        ),
        (
            "queue-on-toleration-added",
            pod_with([], uid="uid0"),
            pod_with([tol("foo", effect=NS)], uid="uid0"),
            QueueingHint.QUEUE,
        ),
    ],
)
def test_pod_toleration_hint(name: str, old: Any, new: Any, want: QueueingHint) -> None:
    _, pod_event = TaintToleration().events_to_register()
    assert pod_event.hint is not None
    assert pod_event.hint(pod_with([], uid="uid0"), old, new) == want
