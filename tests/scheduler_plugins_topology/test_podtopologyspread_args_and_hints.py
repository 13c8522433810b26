"""PodTopologySpread args and queueing hints, ported from upstream's
pkg/scheduler/apis/config/validation/validation_pluginargs_test.go
(TestValidatePodTopologySpreadArgs) and
pkg/scheduler/framework/plugins/podtopologyspread/plugin_test.go
(Test_isSchedulableAfterNodeChange, Test_isSchedulableAfterPodChange).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import NodeView, PodView
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.framework.registry import ArgsError
from scheduler.plugins.podtopologyspread import (
    PLUGIN_ENTRY,
    PodTopologySpread,
    decode_pod_topology_spread_args,
)
from scheduler.plugins.podtopologyspread.args import (
    LIST_DEFAULTING,
    SYSTEM_DEFAULT_CONSTRAINTS,
    DefaultConstraint,
    PodTopologySpreadArgs,
)
from scheduler.testing import exists, make_node, make_pod, spread

HARD = "DoNotSchedule"
SOFT = "ScheduleAnyway"
QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.SKIP


def c(max_skew: int, key: str, action: str, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": action, **extra}


# -- TestValidatePodTopologySpreadArgs -----------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        pytest.param(
            {
                "defaultConstraints": [c(1, "node", HARD), c(2, "zone", SOFT)],
                "defaultingType": "List",
            },
            None,
            None,
            id="valid config",
        ),
        pytest.param(
            {"defaultConstraints": [c(-1, "node", HARD)], "defaultingType": "List"},
            "defaultConstraints[0].maxSkew",
            "Invalid value: -1: not in valid range (0, inf)",
            id="maxSkew less than zero",
        ),
        pytest.param(
            {"defaultConstraints": [c(1, "", HARD)], "defaultingType": "List"},
            "defaultConstraints[0].topologyKey",
            "Required value: can not be empty",
            id="empty topology key",
        ),
        pytest.param(
            {"defaultConstraints": [c(1, "node", "")], "defaultingType": "List"},
            "defaultConstraints[0].whenUnsatisfiable",
            "Required value: can not be empty",
            id="whenUnsatisfiable is empty",
        ),
        pytest.param(
            {"defaultConstraints": [c(1, "node", "unknown action")], "defaultingType": "List"},
            "defaultConstraints[0].whenUnsatisfiable",
            'Unsupported value: "unknown action": supported values: "DoNotSchedule", '
            '"ScheduleAnyway"',
            id="whenUnsatisfiable contains unsupported action",
        ),
        pytest.param(
            {
                "defaultConstraints": [c(1, "node", HARD), c(2, "node", HARD)],
                "defaultingType": "List",
            },
            "defaultConstraints[1]",
            'Duplicate value: "{node, DoNotSchedule}"',
            id="duplicated constraints",
        ),
        pytest.param(
            {
                "defaultConstraints": [
                    c(1, "key", HARD, labelSelector={"matchLabels": {"a": "b"}})
                ],
                "defaultingType": "List",
            },
            "defaultConstraints[0].labelSelector",
            "Forbidden: constraint must not define a selector, as they deduced for each pod",
            id="label selector present",
        ),
        pytest.param(
            {"defaultingType": "List"}, None, None, id="list default constraints, no constraints"
        ),
        pytest.param({"defaultingType": "System"}, None, None, id="system default constraints"),
        pytest.param(
            {"defaultingType": "unknown"},
            "defaultingType",
            'Unsupported value: "unknown": supported values: "System", "List"',
            id="wrong constraints",
        ),
        pytest.param(
            {"defaultConstraints": [c(1, "key", HARD)], "defaultingType": "System"},
            "defaultingType",
            'Invalid value: "System": when .defaultConstraints are not empty',
            id="system default constraints, but has constraints",
        ),
        # Beyond upstream's table: v1 defaulting (System) and label-name validation.
        pytest.param(
            {"defaultConstraints": [c(1, "key", HARD)]},
            "defaultingType",
            'Invalid value: "System": when .defaultConstraints are not empty',
            id="unset defaultingType is System",
        ),
        pytest.param(
            {"defaultConstraints": [c(1, "a/b/c", HARD)], "defaultingType": "List"},
            "defaultConstraints[0].topologyKey",
            'Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, '
            "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')",
            id="topology key not a label name",
        ),
        pytest.param(
            {"defaultConstraints": [c(0, "node", HARD)], "defaultingType": "List"},
            "defaultConstraints[0].maxSkew",
            "Invalid value: 0: not in valid range (0, inf)",
            id="maxSkew zero",
        ),
        pytest.param(
            {"defaultConstraints": [c(1, "node", HARD)], "defaultingType": "List", "x": 1},
            "x",
            "unknown field",
            id="unknown field",
        ),
    ],
)
def test_validate_args(raw: dict[str, Any], path: str | None, message: str | None) -> None:
    if path is None:
        decode_pod_topology_spread_args(raw)
        return
    with pytest.raises(ArgsError) as info:
        decode_pod_topology_spread_args(raw)
    assert (info.value.path, info.value.message) == (path, message)


def test_args_defaults() -> None:
    args = decode_pod_topology_spread_args(None)
    assert args.defaulting_type == "System"
    assert args.effective_constraints == SYSTEM_DEFAULT_CONSTRAINTS
    assert [
        (d.topology_key, d.max_skew, d.when_unsatisfiable) for d in SYSTEM_DEFAULT_CONSTRAINTS
    ] == [
        ("kubernetes.io/hostname", 3, SOFT),
        ("topology.kubernetes.io/zone", 5, SOFT),
    ]
    listed = decode_pod_topology_spread_args(
        {"defaultingType": "List", "defaultConstraints": [c(2, "zone", SOFT, minDomains=3)]}
    )
    assert listed.effective_constraints == (DefaultConstraint(2, "zone", SOFT, 3),)
    assert PLUGIN_ENTRY.name == "PodTopologySpread"
    assert PLUGIN_ENTRY.extension_points >= {"preFilter", "filter", "preScore", "score"}


def test_events_to_register() -> None:
    plugin = PodTopologySpread(PodTopologySpreadArgs((), LIST_DEFAULTING))
    pod_event, node_event = plugin.events_to_register()
    assert pod_event.event.resource == EventResource.POD
    assert pod_event.event.action == (
        ActionType.ADD
        | ActionType.UPDATE_POD_LABEL
        | ActionType.UPDATE_POD_TOLERATIONS
        | ActionType.DELETE
    )
    assert node_event.event.resource == EventResource.NODE
    assert node_event.event.action == (
        ActionType.ADD
        | ActionType.DELETE
        | ActionType.UPDATE_NODE_LABEL
        | ActionType.UPDATE_NODE_TAINT
    )


# -- Test_isSchedulableAfterNodeChange ---------------------------------------------------

FOO = exists("foo")
BAR = exists("bar")
ZONE_ONLY = make_pod("p", spread_constraints=[spread(1, "zone", HARD, FOO)])
ZONE_NODE = make_pod(
    "p", spread_constraints=[spread(1, "zone", HARD, FOO), spread(1, "node", HARD, FOO)]
)
T_AAA = [{"key": "aaa", "value": "bbb", "effect": "NoSchedule"}]
T_CCC = [{"key": "ccc", "value": "bbb", "effect": "NoSchedule"}]


def n(labels: dict[str, str], taints: list[dict[str, str]] | None = None) -> NodeView:
    return make_node("node-a", labels=labels, taints=taints or [])


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(
            ZONE_ONLY,
            n({"zone": "zone1"}),
            n({"zone": "zone2"}),
            QUEUE,
            id="node updates label which matches topologyKey",
        ),
        pytest.param(
            ZONE_ONLY,
            n({"foo": "bar1"}),
            n({"foo": "bar2"}),
            SKIP,
            id="node that doesn't match topologySpreadConstraints updates non-related label",
        ),
        pytest.param(
            ZONE_NODE,
            n({"zone": "zone1", "node": "node1", "foo": "bar"}),
            n({"zone": "zone1", "node": "node1"}),
            SKIP,
            id="node that match topologySpreadConstraints adds non-related label",
        ),
        pytest.param(
            ZONE_ONLY, None, n({"foo": "bar"}), SKIP, id="create node with non-related labels"
        ),
        pytest.param(
            ZONE_ONLY, None, n({"zone": "zone1"}), QUEUE, id="create node with related labels"
        ),
        pytest.param(
            ZONE_ONLY, n({"foo": "bar"}), None, SKIP, id="delete node with non-related labels"
        ),
        pytest.param(
            ZONE_ONLY, n({"zone": "zone1"}), None, QUEUE, id="delete node with related labels"
        ),
        pytest.param(
            ZONE_NODE,
            None,
            n({"zone": "zone1"}),
            SKIP,
            id="add node with related labels that only match one of topologySpreadConstraints",
        ),
        pytest.param(
            ZONE_NODE,
            None,
            n({"zone": "zone1", "node": "node1"}),
            QUEUE,
            id="add node with related labels that match all topologySpreadConstraints",
        ),
        pytest.param(
            ZONE_NODE,
            n({"zone": "zone1"}),
            n({"zone": "zone1"}),
            SKIP,
            id="update node with related labels that only match one of topologySpreadConstraints",
        ),
        pytest.param(
            ZONE_NODE,
            n({"zone": "zone1", "node": "node1"}),
            n({"zone": "zone1", "node": "node2"}),
            QUEUE,
            id="update node with related labels that match all topologySpreadConstraints",
        ),
        pytest.param(
            ZONE_NODE,
            n({"zone": "zone1", "node": "node1"}, T_AAA),
            n({"zone": "zone1", "node": "node1"}, T_CCC),
            QUEUE,
            id="update node with different taints that match all topologySpreadConstraints",
        ),
        pytest.param(
            ZONE_NODE,
            n({"node": "node1"}, T_AAA),
            n({"node": "node1"}, T_CCC),
            SKIP,
            id="update node with different taints that only match one of topologySpreadConstraints",
        ),
    ],
)
def test_schedulable_after_node_change(
    pod: PodView, old: NodeView | None, new: NodeView | None, want: QueueingHint
) -> None:
    plugin = PodTopologySpread(PodTopologySpreadArgs((), LIST_DEFAULTING))
    assert plugin.schedulable_after_node_change(pod, old, new) == want


# -- Test_isSchedulableAfterPodChange ----------------------------------------------------

TOLERATION = {
    "key": "node.kubernetes.io/unschedulable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def target(*constraints: dict[str, Any]) -> PodView:
    return make_pod("p", uid="p", labels={"foo": ""}, spread_constraints=constraints)


def other(node: str = "", ns: str = "default", uid: str = "p2", **labels: str) -> PodView:
    return make_pod(uid=uid, node_name=node, namespace=ns, labels=labels)


ONE = target(spread(1, "zone", HARD, FOO))
TWO = target(spread(1, "zone", HARD, FOO), spread(1, "node", HARD, BAR))
HONOR_ZONE = target(spread(1, "zone", HARD, FOO, None, None, "Honor"), spread(1, "node", HARD, BAR))
IGNORE_ZONE = target(
    spread(1, "zone", HARD, FOO, None, None, "Ignore"), spread(1, "node", HARD, BAR)
)
FN = "fake-node"


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(
            ONE,
            None,
            other(FN, foo=""),
            QUEUE,
            id="add pod with labels match topologySpreadConstraints selector",
        ),
        pytest.param(ONE, None, other(foo=""), SKIP, id="add un-scheduled pod"),
        pytest.param(ONE, other(bar=""), other(foo=""), SKIP, id="update un-scheduled pod"),
        pytest.param(ONE, other(foo=""), None, SKIP, id="delete un-scheduled pod"),
        pytest.param(
            ONE,
            None,
            other(FN, "fake-namespace", foo=""),
            SKIP,
            id="add pod with different namespace",
        ),
        pytest.param(
            ONE,
            None,
            other(FN, bar=""),
            SKIP,
            id="add pod with labels don't match topologySpreadConstraints selector",
        ),
        pytest.param(
            ONE,
            other(FN, foo=""),
            None,
            QUEUE,
            id="delete pod with labels that match topologySpreadConstraints selector",
        ),
        pytest.param(
            ONE,
            other(FN, bar=""),
            None,
            SKIP,
            id="delete pod with labels that don't match topologySpreadConstraints selector",
        ),
        pytest.param(
            ONE,
            other(FN, foo="", bar="bar1"),
            other(FN, foo="", bar="bar2"),
            SKIP,
            id="update pod's non-related label",
        ),
        pytest.param(
            ONE,
            other(FN),
            other(FN, foo=""),
            QUEUE,
            id="add pod's label that matches topologySpreadConstraints selector",
        ),
        pytest.param(
            ONE,
            other(FN, foo=""),
            other(FN),
            QUEUE,
            id="delete pod label that matches topologySpreadConstraints selector",
        ),
        pytest.param(
            ONE,
            other(FN, foo="foo1"),
            other(FN, foo="foo2"),
            SKIP,
            id="change pod's label that matches topologySpreadConstraints selector",
        ),
        pytest.param(
            ONE,
            other(FN, foo="", bar="bar1"),
            other(FN, foo="", bar="bar2"),
            SKIP,
            id="change pod's label that doesn't match topologySpreadConstraints selector",
        ),
        pytest.param(
            TWO,
            other(FN, foo=""),
            other(FN, foo="", bar="bar2"),
            QUEUE,
            id="add pod's label that matches selector with multi constraints",
        ),
        pytest.param(
            TWO,
            other(FN, foo=""),
            other(FN, foo="", baz=""),
            SKIP,
            id="change pod's label that doesn't match selector with multi constraints",
        ),
        pytest.param(
            TWO,
            other(FN, foo="", bar=""),
            other(FN, foo="", bar="bar2"),
            SKIP,
            id="change pod's label that match selector with multi constraints",
        ),
        pytest.param(
            HONOR_ZONE,
            make_pod("p", uid="p", labels={"foo": ""}),
            make_pod("p", uid="p", labels={"foo": ""}, tolerations=[TOLERATION]),
            QUEUE,
            id="NodeTaintsPolicy:Honor and has got a new toleration",
        ),
        pytest.param(
            IGNORE_ZONE,
            make_pod("p", uid="p", labels={"foo": ""}),
            make_pod("p", uid="p", labels={"foo": ""}, tolerations=[TOLERATION]),
            SKIP,
            id="without NodeTaintsPolicy:Honor and has got a new toleration",
        ),
        pytest.param(
            IGNORE_ZONE,
            make_pod("p", uid="p"),
            make_pod("p", uid="p", labels={"foo": ""}),
            QUEUE,
            id="has got a new label matching the selector of the constraint",
        ),
        pytest.param(
            IGNORE_ZONE,
            make_pod("p", uid="p"),
            make_pod("p", uid="p", labels={"unrelated": ""}),
            SKIP,
            id="has got a new unrelated label",
        ),
    ],
)
def test_schedulable_after_pod_change(
    pod: PodView, old: PodView | None, new: PodView | None, want: QueueingHint
) -> None:
    plugin = PodTopologySpread(PodTopologySpreadArgs((), LIST_DEFAULTING))
    assert plugin.schedulable_after_pod_change(pod, old, new) == want
