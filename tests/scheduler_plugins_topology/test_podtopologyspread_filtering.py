"""PodTopologySpread PreFilter / Filter, ported from upstream's
pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go (TestPreFilterState,
TestPreFilterStateAddPod, TestPreFilterStateRemovePod, TestSingleConstraint,
TestMultipleConstraints, TestPreFilterDisabled): inputs and expected counts / statuses.

Every case runs both ways: PreFilter on the snapshot's own node list (the NodeTable fast path;
Filter checked per node and through filter_rows) and on a copied list (the reference per-pod
path). Critical paths compare as upstream's tests do (equal counts ordered by value).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.api.objects import NodeView, PodView
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Status
from scheduler.plugins.podtopologyspread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PodTopologySpread,
)
from scheduler.plugins.podtopologyspread.args import (
    LIST_DEFAULTING,
    DefaultConstraint,
    PodTopologySpreadArgs,
)
from scheduler.plugins.podtopologyspread.plugin import PRE_FILTER_STATE_KEY
from scheduler.plugins.podtopologyspread.state import MAX_INT32, PreFilterState
from scheduler.testing import (
    FakeHandle,
    cluster_objects,
    exists,
    expr,
    make_node,
    make_pod,
    make_snapshot,
    match_labels,
    required_node_affinity,
    service,
    spread,
)

HARD = "DoNotSchedule"
SOFT = "ScheduleAnyway"
FOO = exists("foo")
BAR = exists("bar")
NOT_MATCH = Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
MISSING = Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
OK = Status.OK
UNSET = (("", MAX_INT32), ("", MAX_INT32))
TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def zn(name: str, zone: str, **extra: str) -> NodeView:
    """A node with labels zone and node (upstream's usual test node)."""
    return make_node(name, labels={"zone": zone, "node": name, **extra})


def on(node: str, *labels: str, name: str = "", ns: str = "default") -> PodView:
    """An existing pod on `node` with the given label keys (value "")."""
    return make_pod(name, node_name=node, namespace=ns, labels=dict.fromkeys(labels, ""))


def incoming(
    *constraints: dict[str, Any], labels: tuple[str, ...] = ("foo",), **kw: Any
) -> PodView:
    return make_pod("p", labels=dict.fromkeys(labels, ""), spread_constraints=constraints, **kw)


def plugin_for(
    nodes: list[NodeView],
    pods: list[PodView],
    defaults: tuple[DefaultConstraint, ...] | None = None,
    objs: tuple[dict[str, Any], ...] = (),
) -> tuple[PodTopologySpread, Any]:
    snapshot = make_snapshot(nodes, pods)
    handle = FakeHandle(snapshot, cluster_objects(*objs))
    args = PodTopologySpreadArgs(defaults or (), LIST_DEFAULTING)
    return PodTopologySpread(args, handle), snapshot


def both_states(
    pod: PodView,
    nodes: list[NodeView],
    pods: list[PodView],
    defaults: tuple[DefaultConstraint, ...] | None = None,
    objs: tuple[dict[str, Any], ...] = (),
) -> list[tuple[PodTopologySpread, CycleState, Status]]:
    """(plugin, state, PreFilter status) for the fast path and the reference path."""
    out = []
    for fast in (True, False):
        plugin, snapshot = plugin_for(nodes, pods, defaults, objs)
        node_list = snapshot.node_info_list if fast else list(snapshot.node_info_list)
        state = CycleState()
        _, status = plugin.pre_filter(state, pod, node_list)
        out.append((plugin, state, status))
    return out


def summary(s: PreFilterState) -> list[tuple[dict[str, int], Any]]:
    return [
        (counts, paths.sorted_pairs())
        for counts, paths in zip(s.tp_value_to_match_num, s.critical_paths, strict=True)
    ]


def pairs(*items: tuple[str, int]) -> tuple[tuple[str, int], tuple[str, int]]:
    first, second = sorted(items, key=lambda p: (p[1], p[0]))
    return first, second


# -- TestPreFilterState --------------------------------------------------------------------

FOUR = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")]
THREE = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-y", "zone2")]
PODS_5 = [
    on("node-a", "foo"),
    on("node-a", "foo"),
    on("node-b", "foo"),
    on("node-y", "foo"),
    on("node-y", "foo"),
]
PODS_7 = [*PODS_5, on("node-y", "foo"), on("node-y", "foo")]
NODE_C3 = [
    make_node("node-a", labels={"node": "node-a", "foo": ""}),
    make_node("node-b", labels={"node": "node-b", "foo": ""}),
    make_node("node-c", labels={"node": "node-c", "bar": ""}),
]
PODS_C3 = [on("node-a", "bar"), on("node-b", "bar"), on("node-b", "bar"), on("node-c")]
TAINTED_C3 = [
    make_node("node-a", labels={"node": "node-a"}),
    make_node("node-b", labels={"node": "node-b"}),
    make_node("node-c", labels={"node": "node-c", "bar": ""}, taints=[TAINT]),
]
TOLERATE = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
FOO_A_5 = [
    make_pod(node_name=n, labels={"foo": "a"})
    for n in ("node-a", "node-a", "node-b", "node-y", "node-y")
]

PRE_FILTER_STATE_CASES: list[tuple[str, PodView, list[NodeView], list[PodView], Any]] = [
    (
        "clean cluster with one spreadConstraint",
        incoming(spread(5, "zone", HARD, match_labels(foo="bar"))),
        FOUR,
        [],
        [({"zone1": 0, "zone2": 0}, pairs(("zone1", 0), ("zone2", 0)))],
    ),
    (
        "normal case with one spreadConstraint",
        incoming(spread(1, "zone", HARD, FOO)),
        FOUR,
        PODS_5,
        [({"zone1": 3, "zone2": 2}, pairs(("zone2", 2), ("zone1", 3)))],
    ),
    (
        "normal case with null label selector",
        incoming(spread(1, "zone", HARD, None)),
        FOUR,
        PODS_5,
        [({"zone1": 0, "zone2": 0}, pairs(("zone2", 0), ("zone1", 0)))],
    ),
    (
        "normal case with one spreadConstraint, on a 3-zone cluster",
        incoming(spread(1, "zone", HARD, FOO)),
        [*FOUR, zn("node-o", "zone3"), zn("node-p", "zone3")],
        PODS_5,
        [({"zone1": 3, "zone2": 2, "zone3": 0}, pairs(("zone3", 0), ("zone2", 2)))],
    ),
    (
        "namespace mismatch doesn't count",
        incoming(spread(1, "zone", HARD, FOO)),
        FOUR,
        [
            on("node-a", "foo"),
            on("node-a", "foo", ns="ns1"),
            on("node-b", "foo"),
            on("node-y", "foo", ns="ns2"),
            on("node-y", "foo"),
        ],
        [({"zone1": 2, "zone2": 1}, pairs(("zone2", 1), ("zone1", 2)))],
    ),
    (
        "normal case with two spreadConstraints",
        incoming(spread(1, "zone", HARD, FOO), spread(1, "node", HARD, FOO)),
        FOUR,
        PODS_7,
        [
            ({"zone1": 3, "zone2": 4}, pairs(("zone1", 3), ("zone2", 4))),
            (
                {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4},
                pairs(("node-x", 0), ("node-b", 1)),
            ),
        ],
    ),
    (
        "soft spreadConstraints should be bypassed",
        incoming(
            spread(1, "zone", SOFT, FOO),
            spread(1, "zone", HARD, FOO),
            spread(1, "node", SOFT, FOO),
            spread(1, "node", HARD, FOO),
        ),
        THREE,
        PODS_7,
        [
            ({"zone1": 3, "zone2": 4}, pairs(("zone1", 3), ("zone2", 4))),
            ({"node-a": 2, "node-b": 1, "node-y": 4}, pairs(("node-b", 1), ("node-a", 2))),
        ],
    ),
    (
        "different labelSelectors - simple version",
        incoming(spread(1, "zone", HARD, FOO), spread(1, "node", HARD, BAR), labels=("foo", "bar")),
        THREE,
        [on("node-a", "foo"), on("node-b", "bar")],
        [
            ({"zone1": 1, "zone2": 0}, pairs(("zone2", 0), ("zone1", 1))),
            ({"node-a": 0, "node-b": 1, "node-y": 0}, pairs(("node-a", 0), ("node-y", 0))),
        ],
    ),
    (
        "different labelSelectors - complex pods",
        incoming(spread(1, "zone", HARD, FOO), spread(1, "node", HARD, BAR), labels=("foo", "bar")),
        THREE,
        [
            on("node-a", "foo"),
            on("node-a", "foo", "bar"),
            on("node-b", "foo"),
            on("node-y", "foo"),
            on("node-y", "foo", "bar"),
            on("node-y", "foo"),
            on("node-y", "foo", "bar"),
        ],
        [
            ({"zone1": 3, "zone2": 4}, pairs(("zone1", 3), ("zone2", 4))),
            ({"node-a": 1, "node-b": 0, "node-y": 2}, pairs(("node-b", 0), ("node-a", 1))),
        ],
    ),
    (
        "two spreadConstraints, and with podAffinity",
        incoming(
            spread(1, "zone", HARD, FOO),
            spread(1, "node", HARD, FOO),
            affinity=required_node_affinity(expr("node", "NotIn", "node-x")),
        ),
        FOUR,
        PODS_7,
        [
            ({"zone1": 3, "zone2": 4}, pairs(("zone1", 3), ("zone2", 4))),
            ({"node-a": 2, "node-b": 1, "node-y": 4}, pairs(("node-b", 1), ("node-a", 2))),
        ],
    ),
    (
        "TpKeyToDomainsNum is calculated when MinDomains is enabled",
        incoming(spread(1, "zone", HARD, FOO), spread(1, "node", HARD, FOO)),
        FOUR,
        PODS_7,
        [
            ({"zone1": 3, "zone2": 4}, pairs(("zone1", 3), ("zone2", 4))),
            (
                {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4},
                pairs(("node-x", 0), ("node-b", 1)),
            ),
        ],
    ),
    (
        "NodeAffinityPolicy honored with labelSelectors",
        incoming(spread(1, "node", HARD, BAR), node_selector={"foo": ""}),
        NODE_C3,
        PODS_C3,
        [({"node-a": 1, "node-b": 2}, pairs(("node-a", 1), ("node-b", 2)))],
    ),
    (
        "NodeAffinityPolicy ignored with labelSelectors",
        incoming(spread(1, "node", HARD, BAR, None, "Ignore"), node_selector={"foo": ""}),
        NODE_C3,
        PODS_C3,
        [({"node-a": 1, "node-b": 2, "node-c": 0}, pairs(("node-c", 0), ("node-a", 1)))],
    ),
    (
        "NodeAffinityPolicy honored with nodeAffinity",
        incoming(
            spread(1, "node", HARD, BAR), affinity=required_node_affinity(expr("foo", "In", ""))
        ),
        NODE_C3,
        PODS_C3,
        [({"node-a": 1, "node-b": 2}, pairs(("node-a", 1), ("node-b", 2)))],
    ),
    (
        "NodeAffinityPolicy ignored with nodeAffinity",
        incoming(
            spread(1, "node", HARD, BAR, None, "Ignore"),
            affinity=required_node_affinity(expr("foo", "In", "")),
        ),
        NODE_C3,
        PODS_C3,
        [({"node-a": 1, "node-b": 2, "node-c": 0}, pairs(("node-c", 0), ("node-a", 1)))],
    ),
    (
        "NodeTaintsPolicy ignored",
        incoming(spread(1, "node", HARD, BAR)),
        TAINTED_C3,
        PODS_C3,
        [({"node-a": 1, "node-b": 2, "node-c": 0}, pairs(("node-c", 0), ("node-a", 1)))],
    ),
    (
        "NodeTaintsPolicy honored",
        incoming(spread(1, "node", HARD, BAR, None, None, "Honor")),
        TAINTED_C3,
        PODS_C3,
        [({"node-a": 1, "node-b": 2}, pairs(("node-a", 1), ("node-b", 2)))],
    ),
    (
        "NodeTaintsPolicy honored with tolerated taints",
        incoming(spread(1, "node", HARD, BAR, None, None, "Honor"), tolerations=[TOLERATE]),
        TAINTED_C3,
        PODS_C3,
        [({"node-a": 1, "node-b": 2, "node-c": 0}, pairs(("node-c", 0), ("node-a", 1)))],
    ),
    (
        "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore",
        incoming(
            spread(1, "zone", HARD, FOO),
            spread(1, "node", HARD, FOO, None, "Ignore"),
            node_selector={"foo": ""},
        ),
        [zn("node-a", "zone1", foo=""), zn("node-b", "zone1"), zn("node-x", "zone2", foo="")],
        [on("node-b", "foo"), on("node-b", "foo"), on("node-x", "foo")],
        [
            ({"zone1": 0, "zone2": 1}, pairs(("zone1", 0), ("zone2", 1))),
            ({"node-a": 0, "node-b": 2, "node-x": 1}, pairs(("node-a", 0), ("node-x", 1))),
        ],
    ),
    (
        "two node inclusion Constraints, zone: honor/honor, node: honor/ignore",
        incoming(spread(1, "zone", HARD, FOO, None, None, "Honor"), spread(1, "node", HARD, FOO)),
        [
            zn("node-a", "zone1", foo=""),
            make_node("node-b", labels={"zone": "zone1", "node": "node-b"}, taints=[TAINT]),
            zn("node-x", "zone2", foo=""),
        ],
        [on("node-b", "foo"), on("node-b", "foo"), on("node-x", "foo")],
        [
            ({"zone1": 0, "zone2": 1}, pairs(("zone1", 0), ("zone2", 1))),
            ({"node-a": 0, "node-b": 2, "node-x": 1}, pairs(("node-a", 0), ("node-x", 1))),
        ],
    ),
    (
        "two node inclusion Constraints, zone: honor/ignore, node: honor/ignore",
        incoming(
            spread(1, "zone", HARD, FOO), spread(1, "node", HARD, FOO), node_selector={"foo": ""}
        ),
        [
            zn("node-a", "zone1"),
            make_node(
                "node-b", labels={"zone": "zone1", "node": "node-b", "foo": ""}, taints=[TAINT]
            ),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2"),
        ],
        [on("node-a", "foo"), on("node-a", "foo"), on("node-x", "foo"), on("node-y", "foo")],
        [
            ({"zone1": 0, "zone2": 1}, pairs(("zone1", 0), ("zone2", 1))),
            ({"node-b": 0, "node-x": 1}, pairs(("node-b", 0), ("node-x", 1))),
        ],
    ),
    (
        "two node inclusion Constraints, zone: ignore/ignore, node: honor/honor",
        incoming(
            spread(1, "zone", HARD, FOO, None, "Ignore"),
            spread(1, "node", HARD, FOO, None, None, "Honor"),
            node_selector={"foo": ""},
        ),
        [
            zn("node-a", "zone1"),
            make_node(
                "node-b", labels={"zone": "zone1", "node": "node-b", "foo": ""}, taints=[TAINT]
            ),
            zn("node-x", "zone2", foo=""),
            zn("node-y", "zone2", foo=""),
        ],
        [
            on("node-a", "foo"),
            on("node-a", "foo"),
            on("node-x", "foo"),
            on("node-x", "foo"),
            on("node-y", "foo"),
        ],
        [
            ({"zone1": 2, "zone2": 3}, pairs(("zone1", 2), ("zone2", 3))),
            ({"node-x": 2, "node-y": 1}, pairs(("node-y", 1), ("node-x", 2))),
        ],
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty",
        make_pod(
            "p",
            labels={"foo": "", "bar": "a"},
            spread_constraints=[spread(1, "zone", HARD, FOO, None, None, None, ["bar"])],
        ),
        FOUR,
        [
            on("node-a", "foo"),
            make_pod(node_name="node-a", labels={"foo": "", "bar": "a"}),
            on("node-b", "foo"),
            make_pod(node_name="node-y", labels={"foo": "", "bar": "a"}),
            on("node-y", "bar"),
        ],
        [({"zone1": 1, "zone2": 1}, pairs(("zone2", 1), ("zone1", 1)))],
    ),
    (
        "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty",
        make_pod(
            "p",
            labels={"foo": "a"},
            spread_constraints=[spread(1, "zone", HARD, {}, None, None, None, ["foo"])],
        ),
        FOUR,
        FOO_A_5,
        [({"zone1": 3, "zone2": 2}, pairs(("zone2", 2), ("zone1", 3)))],
    ),
    (
        "key in matchLabelKeys is ignored when LabelSelector is nil",
        incoming(spread(1, "zone", HARD, None, None, None, None, ["bar"])),
        FOUR,
        FOO_A_5,
        [({"zone1": 0, "zone2": 0}, pairs(("zone2", 0), ("zone1", 0)))],
    ),
    (
        "key in matchLabelKeys is ignored when it isn't exist in pod.labels",
        incoming(spread(1, "zone", HARD, FOO, None, None, None, ["bar"])),
        FOUR,
        FOO_A_5,
        [({"zone1": 3, "zone2": 2}, pairs(("zone2", 2), ("zone1", 3)))],
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "pods", "want"),
    [pytest.param(*case[1:], id=case[0]) for case in PRE_FILTER_STATE_CASES],
)
def test_pre_filter_state(
    pod: PodView, nodes: list[NodeView], pods: list[PodView], want: Any
) -> None:
    for _, state, status in both_states(pod, nodes, pods):
        assert status.is_success
        assert summary(state.read(PRE_FILTER_STATE_KEY)) == want


def test_pre_filter_skips_pod_without_constraints() -> None:
    pod = make_pod("p", labels={"foo": ""})
    for _, _, status in both_states(pod, [zn("node-a", "zone1")], []):
        assert status.is_skip


DEFAULTS_NODE_RACK = (
    DefaultConstraint(3, "node", HARD),
    DefaultConstraint(2, "node", SOFT),
    DefaultConstraint(5, "rack", HARD),
)


@pytest.mark.parametrize(
    ("pod", "defaults", "objs", "want_keys"),
    [
        pytest.param(
            make_pod("p", labels={"foo": "bar", "baz": "kar"}),
            DEFAULTS_NODE_RACK,
            (service({"foo": "bar"}),),
            [(3, "node"), (5, "rack")],
            id="default constraints and a service",
        ),
        pytest.param(
            make_pod("p", labels={"foo": "bar"}),
            (DefaultConstraint(3, "node", HARD),),
            (service({"baz": "kep"}),),
            None,
            id="default constraints and a service that doesn't match",
        ),
        pytest.param(
            make_pod(
                "p",
                labels={"foo": "bar", "baz": "tar"},
                spread_constraints=[
                    spread(1, "zone", HARD, match_labels(baz="tar")),
                    spread(2, "planet", SOFT, match_labels(fot="rok")),
                ],
            ),
            (DefaultConstraint(2, "node", HARD),),
            (service({"foo": "bar"}),),
            [(1, "zone")],
            id="default constraints and a service, but pod has constraints",
        ),
        pytest.param(
            make_pod("p", labels={"foo": "bar"}),
            (DefaultConstraint(2, "node", SOFT),),
            (service({"foo": "bar"}),),
            None,
            id="default soft constraints and a service",
        ),
    ],
)
def test_pre_filter_state_default_constraints(
    pod: PodView,
    defaults: tuple[DefaultConstraint, ...],
    objs: tuple[dict[str, Any], ...],
    want_keys: list[tuple[int, str]] | None,
) -> None:
    for _, state, status in both_states(pod, [], [], defaults, objs):
        if want_keys is None:
            assert status.is_skip
            continue
        assert status.is_success
        s: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
        assert [(c.max_skew, c.topology_key) for c in s.constraints] == want_keys
        assert summary(s) == [({}, UNSET)] * len(want_keys)


# -- TestSingleConstraint / TestMultipleConstraints ---------------------------------------

S, U, R = "Success", "Unschedulable", "UnschedulableAndUnresolvable"
WANT_STATUS = {S: OK, U: NOT_MATCH, R: MISSING}
PODS_2103 = [on("node-a", "foo"), on("node-a", "foo"), on("node-b", "foo")] + [
    on("node-y", "foo") for _ in range(3)
]

FILTER_CASES: list[tuple[str, PodView, list[NodeView], list[PodView], list[str]]] = [
    ("no existing pods", incoming(spread(1, "zone", HARD, FOO)), FOUR, [], [S, S, S, S]),
    (
        "no existing pods, incoming pod doesn't match itself",
        incoming(spread(1, "zone", HARD, BAR)),
        FOUR,
        [],
        [S, S, S, S],
    ),
    (
        "existing pods in a different namespace do not count",
        incoming(spread(1, "zone", HARD, FOO)),
        FOUR,
        [
            on("node-a", "foo", ns="ns1"),
            on("node-a", "foo", ns="ns2"),
            on("node-x", "foo"),
            on("node-y", "foo"),
        ],
        [S, S, U, U],
    ),
    (
        "pods spread across zones as 3/3, all nodes fit",
        incoming(spread(1, "zone", HARD, FOO)),
        FOUR,
        PODS_2103,
        [S, S, S, S],
    ),
    (
        "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
        incoming(spread(1, "zone", HARD, FOO)),
        [
            zn("node-a", "zone1"),
            make_node("node-b", labels={"zon": "zone1", "node": "node-b"}),
            zn("node-x", "zone2"),
            zn("node-y", "zone2"),
        ],
        [on("node-a", "foo"), on("node-b", "foo"), on("node-x", "foo"), on("node-y", "foo")],
        [S, R, U, U],
    ),
    (
        "pod cannot be scheduled as all nodes don't have label 'rack'",
        incoming(spread(1, "rack", HARD, FOO)),
        [zn("node-a", "zone1"), zn("node-x", "zone2")],
        [],
        [R, R],
    ),
    (
        "pods spread across nodes as 2/1/0/3, only node-x fits",
        incoming(spread(1, "node", HARD, FOO)),
        FOUR,
        PODS_2103,
        [U, U, S, U],
    ),
    (
        "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
        incoming(spread(2, "node", HARD, FOO)),
        FOUR,
        PODS_2103,
        [U, S, S, U],
    ),
    (
        "pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
        incoming(spread(1, "node", HARD, FOO), labels=("bar",)),
        FOUR,
        PODS_2103,
        [U, S, S, U],
    ),
    (
        "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
        incoming(
            spread(1, "node", HARD, FOO),
            affinity=required_node_affinity(expr("node", "In", "node-a", "node-y")),
        ),
        FOUR,
        PODS_2103,
        [S, S, S, U],
    ),
    (
        "terminating Pods should be excluded",
        incoming(spread(1, "node", HARD, FOO)),
        [
            make_node("node-a", labels={"node": "node-a"}),
            make_node("node-b", labels={"node": "node-b"}),
        ],
        [
            make_pod(node_name="node-a", labels={"foo": ""}, terminating=True),
            on("node-b", "foo"),
        ],
        [S, U],
    ),
    (
        "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]",
        incoming(spread(1, "zone", HARD, FOO), spread(1, "node", HARD, FOO)),
        FOUR,
        PODS_2103,
        [U, U, S, U],
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "pods", "want"),
    [pytest.param(*case[1:], id=case[0]) for case in FILTER_CASES],
)
def test_filter(pod: PodView, nodes: list[NodeView], pods: list[PodView], want: list[str]) -> None:
    expected = [WANT_STATUS[w] for w in want]
    for plugin, state, status in both_states(pod, nodes, pods):
        assert status.is_success
        snapshot = plugin._handle.snapshot()  # type: ignore[union-attr]
        infos = snapshot.node_info_list
        assert [plugin.filter(state, pod, info) for info in infos] == expected
        table = snapshot.node_table()
        rows = np.arange(len(table), dtype=np.intp)
        verdict = plugin.filter_rows(state, pod, table, rows)
        assert verdict is not None
        got = [OK if ok else verdict.reject(row) for row, ok in enumerate(verdict.passed)]
        assert got == expected


# -- TestPreFilterStateAddPod / RemovePod (preemption) ------------------------------------


def test_add_pod_node_a_and_b_both_impact_current_min_match() -> None:
    pod = incoming(spread(1, "node", HARD, FOO))
    nodes = [zn("node-a", "zone1"), zn("node-b", "zone1")]
    for plugin, state, _ in both_states(pod, nodes, []):
        target = plugin._handle.snapshot().node_info_list[0]  # type: ignore[union-attr]
        added = make_pod(node_name="node-a", labels={"foo": ""})
        assert plugin.add_pod(state, pod, added, target).is_success
        assert summary(state.read(PRE_FILTER_STATE_KEY)) == [
            ({"node-a": 1, "node-b": 0}, pairs(("node-b", 0), ("node-a", 1)))
        ]
        assert plugin.remove_pod(state, pod, added, target).is_success
        assert summary(state.read(PRE_FILTER_STATE_KEY)) == [
            ({"node-a": 0, "node-b": 0}, pairs(("node-b", 0), ("node-a", 0)))
        ]


def test_add_pod_other_namespace_or_unmatched_labels_ignored() -> None:
    pod = incoming(spread(1, "zone", HARD, FOO), spread(1, "node", HARD, FOO))
    for plugin, state, _ in both_states(pod, FOUR, PODS_2103):
        before = summary(state.read(PRE_FILTER_STATE_KEY))
        target = plugin._handle.snapshot().node_info_list[2]  # type: ignore[union-attr]
        assert plugin.add_pod(state, pod, on("node-x", "foo", ns="ns1"), target).is_success
        assert plugin.add_pod(state, pod, on("node-x", "bar"), target).is_success
        assert summary(state.read(PRE_FILTER_STATE_KEY)) == before
        clone = state.clone()
        assert plugin.add_pod(clone, pod, on("node-x", "foo"), target).is_success
        assert summary(clone.read(PRE_FILTER_STATE_KEY)) == [
            ({"zone1": 3, "zone2": 4}, pairs(("zone1", 3), ("zone2", 4))),
            (
                {"node-a": 2, "node-b": 1, "node-x": 1, "node-y": 3},
                pairs(("node-b", 1), ("node-x", 1)),
            ),
        ]
        assert summary(state.read(PRE_FILTER_STATE_KEY)) == before


def test_filter_without_pre_filter_state_is_an_error() -> None:
    plugin, snapshot = plugin_for(FOUR, [])
    status = plugin.filter(CycleState(), incoming(), snapshot.node_info_list[0])
    assert status == Status.error('reading "PreFilterPodTopologySpread" from cycleState: not found')
