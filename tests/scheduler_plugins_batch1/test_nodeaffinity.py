"""NodeAffinity, ported from upstream's
pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go (TestNodeAffinity,
TestNodeAffinityPriority, Test_isSchedulableAfterNodeChange): inputs, PreFilter results,
statuses and normalized scores."""

from __future__ import annotations

from typing import Any

import pytest
from row_answers import filter_rows_of, normalize_rows_of, score_rows_of

from scheduler.api.objects import NodeView, PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.framework.interface import CycleState, NodeScore, PreFilterResult
from scheduler.framework.registry import ArgsError
from scheduler.framework.status import Code, Status
from scheduler.plugins.nodeaffinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    PLUGIN_ENTRY,
    NodeAffinity,
    decode_node_affinity_args,
)
from scheduler.testing import expr, make_node, make_pod

Obj = dict[str, Any]
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"


def pod(spec: Obj | None = None) -> PodView:
    """Pod "p" with one container and the nodeSelector / affinity of an upstream case's spec."""
    spec = spec or {}
    assert set(spec) <= {"nodeSelector", "affinity"}, spec
    return make_pod(
        "p",
        uid="uid-p",
        containers=[{}],
        node_selector=spec.get("nodeSelector"),
        affinity=spec.get("affinity"),
    )


def node(name: str = "", labels: dict[str, str] | None = None) -> NodeView:
    return make_node(name, labels=labels)


def name_in(*names: str) -> Obj:
    return expr("metadata.name", "In", *names)


def required(*terms: Obj) -> Obj:
    return {"affinity": {"nodeAffinity": {REQ: {"nodeSelectorTerms": list(terms)}}}}


def term(*exprs: Obj, fields: tuple[Obj, ...] = ()) -> Obj:
    out: Obj = {}
    if exprs:
        out["matchExpressions"] = list(exprs)
    if fields:
        out["matchFields"] = list(fields)
    return out


BAD_POD = Status.unresolvable(ERR_REASON_POD)
ADDED_NODE2 = {"addedAffinity": {REQ: {"nodeSelectorTerms": [term(fields=(name_in("node2"),))]}}}
ADDED_ZONE_BAR = {"addedAffinity": {REQ: {"nodeSelectorTerms": [term(expr("zone", "In", "bar"))]}}}

# (name, pod spec, node name, node labels, args, want filter, want PreFilter status,
#  want PreFilter result, run PreFilter)
FILTER_CASES: list[tuple[Any, ...]] = [
    ("missing labels", {"nodeSelector": {"foo": "bar"}}, "", {}, None, BAD_POD, None, None, True),
    (
        "same labels",
        {"nodeSelector": {"foo": "bar"}},
        "",
        {"foo": "bar"},
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "node labels are superset",
        {"nodeSelector": {"foo": "bar"}},
        "",
        {"foo": "bar", "baz": "blah"},
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "node labels are subset",
        {"nodeSelector": {"foo": "bar", "baz": "blah"}},
        "",
        {"foo": "bar"},
        None,
        BAD_POD,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using In operator that matches the existing node",
        required(term(expr("foo", "In", "bar", "value2"))),
        "",
        {"foo": "bar"},
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using Gt operator that matches the existing node",
        required(term(expr("kernel-version", "Gt", "0204"))),
        "",
        {"kernel-version": "0206"},
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        required(term(expr("mem-type", "NotIn", "DDR", "DDR2"))),
        "",
        {"mem-type": "DDR3"},
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with matchExpressions using Exists operator that matches the existing node",
        required(term(expr("GPU", "Exists"))),
        "",
        {"GPU": "NVIDIA-GRID-K1"},
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        required(term(expr("foo", "In", "value1", "value2"))),
        "",
        {"foo": "bar"},
        None,
        BAD_POD,
        None,
        None,
        True,
    ),
    (
        "Pod with empty MatchExpressions is not a valid value will match no objects and won't "
        "schedule onto the node",
        required({"matchExpressions": []}),
        "",
        {"foo": "bar"},
        None,
        BAD_POD,
        None,
        None,
        True,
    ),
    (
        "Pod with no Affinity will schedule onto a node",
        {},
        "",
        {"foo": "bar"},
        None,
        None,
        Status.skip(),
        None,
        True,
    ),
    (
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        {"affinity": {"nodeAffinity": {REQ: None}}},
        "",
        {"foo": "bar"},
        None,
        None,
        Status.skip(),
        None,
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        required(term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))),
        "",
        {"GPU": "NVIDIA-GRID-K1"},
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        required(term(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER"))),
        "",
        {"GPU": "NVIDIA-GRID-K1"},
        None,
        BAD_POD,
        None,
        None,
        True,
    ),
    (
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and "
        "will schedule onto the node",
        required(
            term(expr("foo", "In", "bar", "value2")), term(expr("diffkey", "In", "wrong", "value2"))
        ),
        "",
        {"foo": "bar"},
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with an Affinity and a PodSpec.NodeSelector both are satisfied",
        {"nodeSelector": {"foo": "bar"}, **required(term(expr("foo", "Exists")))},
        "",
        {"foo": "bar"},
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector is not satisfied",
        {"nodeSelector": {"foo": "bar"}, **required(term(expr("foo", "Exists")))},
        "",
        {"foo": "barrrrrr"},
        None,
        BAD_POD,
        None,
        None,
        True,
    ),
    (
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        required(term(expr("foo", "NotIn", "invalid value: ___@#$%^"))),
        "",
        {"foo": "bar"},
        None,
        BAD_POD,
        None,
        None,
        True,
    ),
    (
        "Pod with matchFields using In operator that matches the existing node",
        required(term(fields=(name_in("node1"),))),
        "node1",
        {},
        None,
        None,
        None,
        frozenset({"node1"}),
        True,
    ),
    (
        "Pod with matchFields using In operator that does not match the existing node",
        required(term(fields=(name_in("node1"),))),
        "node2",
        {},
        None,
        BAD_POD,
        None,
        frozenset({"node1"}),
        True,
    ),
    (
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        required(term(fields=(name_in("node1"), name_in("node2"))), term(expr("foo", "In", "bar"))),
        "node2",
        {"foo": "bar"},
        None,
        None,
        None,
        None,
        True,
    ),
    (
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        required(term(expr("foo", "In", "bar"), fields=(name_in("node1"),))),
        "node2",
        {"foo": "bar"},
        None,
        BAD_POD,
        None,
        frozenset({"node1"}),
        True,
    ),
    (
        "Pod with one term: both matchFields and matchExpressions match",
        required(term(expr("foo", "In", "bar"), fields=(name_in("node1"),))),
        "node1",
        {"foo": "bar"},
        None,
        None,
        None,
        frozenset({"node1"}),
        True,
    ),
    (
        "Pod with two terms: both matchFields and matchExpressions do not match",
        required(term(fields=(name_in("node1"),)), term(expr("foo", "In", "not-match-to-bar"))),
        "node2",
        {"foo": "bar"},
        None,
        BAD_POD,
        None,
        None,
        True,
    ),
    (
        "Pod with two terms of node.Name affinity",
        required(term(fields=(name_in("node1"),)), term(fields=(name_in("node2"),))),
        "node2",
        {},
        None,
        None,
        None,
        frozenset({"node1", "node2"}),
        True,
    ),
    (
        "Pod with two conflicting mach field requirements",
        required(term(fields=(name_in("node1"), name_in("node2")))),
        "node2",
        {"foo": "bar"},
        None,
        BAD_POD,
        Status.unresolvable(ERR_REASON_CONFLICT),
        None,
        True,
    ),
    (
        "Matches added affinity and Pod's node affinity",
        required(term(expr("zone", "In", "foo"))),
        "node2",
        {"zone": "foo"},
        ADDED_NODE2,
        None,
        None,
        None,
        True,
    ),
    (
        "Matches added affinity but not Pod's node affinity",
        required(term(expr("zone", "In", "bar"))),
        "node2",
        {"zone": "foo"},
        ADDED_NODE2,
        BAD_POD,
        None,
        None,
        True,
    ),
    (
        "Doesn't match added affinity",
        {},
        "node2",
        {"zone": "foo"},
        ADDED_ZONE_BAR,
        Status.unresolvable(ERR_REASON_ENFORCED),
        None,
        None,
        True,
    ),
    (
        "Matches node selector correctly even if PreFilter is not called",
        {"nodeSelector": {"foo": "bar"}},
        "",
        {"foo": "bar", "baz": "blah"},
        None,
        None,
        None,
        None,
        False,
    ),
    (
        "Matches node affinity correctly even if PreFilter is not called",
        required(term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))),
        "",
        {"GPU": "NVIDIA-GRID-K1"},
        None,
        None,
        None,
        None,
        False,
    ),
]


@pytest.mark.parametrize(
    (
        "name",
        "spec",
        "node_name",
        "labels",
        "args",
        "want",
        "want_pre_status",
        "want_pre_result",
        "run_pre_filter",
    ),
    FILTER_CASES,
    ids=[c[0][:70] for c in FILTER_CASES],
)
def test_filter(
    name: str,
    spec: Obj,
    node_name: str,
    labels: dict[str, str],
    args: Obj | None,
    want: Status | None,
    want_pre_status: Status | None,
    want_pre_result: frozenset[str] | None,
    run_pre_filter: bool,
) -> None:
    plugin = NodeAffinity(decode_node_affinity_args(args))
    the_pod = pod(spec)
    info = NodeInfo(node(node_name, labels))
    state = CycleState()
    if run_pre_filter:
        result, pre_status = plugin.pre_filter(state, the_pod, [info])
        assert pre_status == (want_pre_status or Status.OK)
        assert pre_status.code == (want_pre_status or Status.OK).code
        assert result == (None if want_pre_result is None else PreFilterResult(want_pre_result))
    got = plugin.filter(state, the_pod, info)
    assert got == (want or Status.OK)
    assert got.code == (want or Status.OK).code
    assert filter_rows_of(plugin, state, the_pod, [info]) == [want]


def preferred(*items: tuple[int, Obj]) -> Obj:
    return {
        "affinity": {"nodeAffinity": {PREF: [{"weight": w, "preference": t} for w, t in items]}}
    }


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = preferred((2, term(expr("foo", "In", "bar"))))
AFFINITY2 = preferred(
    (2, term(expr("foo", "In", "bar"))),
    (4, term(expr("key", "In", "value"))),
    (5, term(expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1"))),
)

# (name, pod spec, nodes, args, want scores, run PreScore, want PreScore code)
SCORE_CASES: list[tuple[Any, ...]] = [
    (
        "all nodes are same priority as NodeAffinity is nil",
        {},
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        None,
        [0, 0, 0],
        False,
        None,
    ),
    (
        "Skip is returned in PreScore when NodeAffinity is nil",
        {},
        [("node1", LABEL1)],
        None,
        None,
        True,
        Code.SKIP,
    ),
    (
        "PreScore returns error when an incoming Pod has a broken affinity",
        preferred((2, term(expr("invalid key", "In", "bar")))),
        [("node1", LABEL1)],
        None,
        None,
        True,
        Code.ERROR,
    ),
    (
        "no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' "
        "priority is zero",
        AFFINITY1,
        [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)],
        None,
        [0, 0, 0],
        True,
        None,
    ),
    (
        "only node1 matches the preferred scheduling requirements of pod",
        AFFINITY1,
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        None,
        [100, 0, 0],
        True,
        None,
    ),
    (
        "all nodes matches the preferred scheduling requirements of pod but with different "
        "priorities",
        AFFINITY2,
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        None,
        [18, 100, 36],
        True,
        None,
    ),
    (
        "added affinity",
        {},
        [("node1", LABEL1), ("node2", LABEL2)],
        {"addedAffinity": AFFINITY1["affinity"]["nodeAffinity"]},
        [100, 0],
        True,
        None,
    ),
    (
        "added affinity and pod has default affinity",
        AFFINITY1,
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
        {"addedAffinity": {PREF: [{"weight": 3, "preference": term(expr("key", "In", "value"))}]}},
        [40, 60, 100],
        True,
        None,
    ),
    (
        "calculate the priorities correctly even if PreScore is not called",
        AFFINITY2,
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        None,
        [18, 100, 36],
        False,
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "spec", "nodes", "args", "want", "run_pre_score", "want_pre_code"),
    SCORE_CASES,
    ids=[c[0][:70] for c in SCORE_CASES],
)
@pytest.mark.parametrize("rows", [False, True], ids=["per-node", "rows"])
def test_score(
    name: str,
    spec: Obj,
    nodes: list[tuple[str, dict[str, str]]],
    args: Obj | None,
    want: list[int] | None,
    run_pre_score: bool,
    want_pre_code: Code | None,
    rows: bool,
) -> None:
    plugin = NodeAffinity(decode_node_affinity_args(args))
    the_pod = pod(spec)
    infos = [NodeInfo(node(n, labels)) for n, labels in nodes]
    state = CycleState()
    if run_pre_score:
        status = plugin.pre_score(state, the_pod, infos)
        assert status.code == (want_pre_code or Code.SUCCESS)
        if not status.is_success:
            return
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


POD_FOO_BAR = required(term(expr("foo", "In", "bar")))
ADDED_FOO_BAR = {"addedAffinity": {REQ: {"nodeSelectorTerms": [term(expr("foo", "In", "bar"))]}}}
HINT_CASES: list[tuple[str, Obj | None, Any, Any, QueueingHint]] = [
    ("backoff-wrong-new-object", None, None, "not-a-node", QueueingHint.QUEUE),
    ("backoff-wrong-old-object", None, "not-a-node", node(), QueueingHint.QUEUE),
    ("skip-queue-on-add", None, None, node(), QueueingHint.SKIP),
    ("queue-on-add", None, None, node(labels={"foo": "bar"}), QueueingHint.QUEUE),
    ("skip-unrelated-changes", None, node(), node(), QueueingHint.SKIP),
    ("skip-unrelated-changes-on-labels", None, node(), node(labels={"k": "v"}), QueueingHint.SKIP),
    (
        "skip-labels-changes-on-node-from-suitable-to-unsuitable",
        None,
        node(labels={"foo": "bar"}),
        node(labels={"k": "v"}),
        QueueingHint.SKIP,
    ),
    (
        "queue-on-labels-change-makes-pod-schedulable",
        None,
        node(),
        node(labels={"foo": "bar"}),
        QueueingHint.QUEUE,
    ),
    (
        "skip-queue-on-add-scheduler-enforced-node-affinity",
        ADDED_FOO_BAR,
        None,
        node(),
        QueueingHint.SKIP,
    ),
    (
        "queue-on-add-scheduler-enforced-node-affinity",
        ADDED_FOO_BAR,
        None,
        node(labels={"foo": "bar"}),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    ("name", "args", "old", "new", "want"), HINT_CASES, ids=[c[0] for c in HINT_CASES]
)
def test_node_change_hint(
    name: str, args: Obj | None, old: Any, new: Any, want: QueueingHint
) -> None:
    (registered,) = NodeAffinity(decode_node_affinity_args(args)).events_to_register()
    assert registered.event.resource == EventResource.NODE
    assert registered.event.action == ActionType.ADD | ActionType.UPDATE_NODE_LABEL
    assert registered.hint is not None
    assert registered.hint(pod(POD_FOO_BAR), old, new) == want


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        (
            {"addedAffinity": {REQ: {"nodeSelectorTerms": [term(expr("foo", "Bad", "x"))]}}},
            f"addedAffinity.{REQ}.nodeSelectorTerms[0].matchExpressions[0]",
        ),
        (
            {
                "addedAffinity": {
                    PREF: [{"weight": 1, "preference": term(expr("invalid key", "In", "x"))}]
                }
            },
            f"addedAffinity.{PREF}[0].preference.matchExpressions[0]",
        ),
        ({"addedAffinity": {"other": 1}}, "addedAffinity.other"),
        ({"addedAffinity": {REQ: "x"}}, f"addedAffinity.{REQ}"),
        ({"kind": "Other"}, "kind"),
    ],
)
def test_args_validation_names_the_field(raw: Obj, path: str) -> None:
    with pytest.raises(ArgsError) as caught:
        PLUGIN_ENTRY.decode(raw)
    assert caught.value.path == path


def test_args_defaults() -> None:
    args = PLUGIN_ENTRY.decode(None)
    assert args.added_required is None and args.added_preferred == ()
    # Zero weights and empty preferences are dropped, as upstream's NewPreferredSchedulingTerms.
    args = PLUGIN_ENTRY.decode(
        {
            "addedAffinity": {
                PREF: [
                    {"weight": 0, "preference": term(expr("a", "Exists"))},
                    {"weight": 3, "preference": {}},
                ]
            }
        }
    )
    assert args.added_preferred == ()
