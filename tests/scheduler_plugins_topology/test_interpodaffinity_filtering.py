"""InterPodAffinity PreFilter / Filter, ported from upstream's
pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go
(TestRequiredAffinitySingleNode, TestRequiredAffinityMultipleNodes, TestPreFilterDisabled,
TestPreFilterStateAddRemovePod, TestPreFilterStateClone,
TestGetTPMapMatchingIncomingAffinityAntiAffinity): inputs and expected statuses / counts.

Every case runs both ways: PreFilter on the snapshot's own node list (the NodeTable fast path,
with Filter checked per node and through filter_rows) and on a copied list (the reference
per-pod path).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler.api.objects import NodeView, PodView
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code, Status
from scheduler.plugins.interpodaffinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
    InterPodAffinity,
    InterPodAffinityArgs,
)
from scheduler.plugins.interpodaffinity.state import PreFilterState
from scheduler.testing import (
    FakeHandle,
    MakePod,
    cluster_with_namespaces,
    expr,
    make_node,
    make_snapshot,
    pod_affinity,
    term,
)

NS = ""  # upstream's defaultNamespace
NAMESPACES = {
    "subteam1.team1": {"team": "team1"},
    "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"},
    "subteam2.team2": {"team": "team2"},
}

AFF = Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
ANTI = Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
EXISTING = Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
SKIP = Status.skip()


def run_filter(
    pod: PodView,
    pods: list[PodView],
    nodes: list[NodeView],
    namespaces: dict[str, dict[str, str]] | None,
    fast: bool,
) -> tuple[Status, list[Status]]:
    """PreFilter status and, when it succeeded, Filter's status per node. On the fast path
    filter_rows must agree with filter for every node."""
    snapshot = make_snapshot(nodes, pods)
    plugin = InterPodAffinity(
        InterPodAffinityArgs(), FakeHandle(snapshot, cluster_with_namespaces(namespaces))
    )
    state = CycleState()
    listed = snapshot.node_info_list if fast else list(snapshot.node_info_list)
    _, status = plugin.pre_filter(state, pod, listed)
    if not status.is_success:
        return status, []
    statuses = [plugin.filter(state, pod, info) for info in snapshot.node_info_list]
    if fast:
        table = snapshot.node_table()
        rows = np.arange(len(table), dtype=np.intp)[::-1].copy()
        verdict = plugin.filter_rows(state, pod, table, rows)
        assert verdict is not None
        for position, row in enumerate(rows.tolist()):
            by_rows = Status.OK if verdict.passed[position] else verdict.reject(row)
            assert by_rows == statuses[row], table.names[row]
    return status, statuses


POD = MakePod().labels({"service": "securityscan"}).node("node1").obj()
LABELS1 = {"region": "r1", "zone": "z11"}
LABEL2 = {"security": "S1"}
NODE1 = make_node("node1", labels=LABELS1)


def _ns_selector(team: str) -> dict[str, Any]:
    return {"matchExpressions": [expr("team", "In", team)]}


def _in_term(topology_key: str, **kwargs: Any) -> dict[str, Any]:
    return term(topology_key, expr("service", "In", "securityscan", "value2"), **kwargs)


# (name, pod, existing pods, want PreFilter status or None for success, want Filter status)
SINGLE_NODE: list[tuple[str, PodView, list[PodView], Status | None, Status]] = [
    (
        "no required pod affinity scheduling rules, no existing pods",
        MakePod().obj(),
        [],
        SKIP,
        Status.OK,
    ),
    (
        "satisfies required PodAffinity with In operator that matches the existing pod",
        MakePod()
        .namespace(NS)
        .labels(LABEL2)
        .pod_affinity_in("service", "region", ["securityscan", "value2"])
        .obj(),
        [POD],
        None,
        Status.OK,
    ),
    (
        "satisfies required PodAffinity with NotIn operator that matches the existing pod",
        MakePod()
        .namespace(NS)
        .labels(LABEL2)
        .pod_affinity_not_in("service", "region", ["securityscan3", "value3"])
        .obj(),
        [POD],
        None,
        Status.OK,
    ),
    (
        "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
        MakePod()
        .namespace(NS)
        .labels(LABEL2)
        .affinity(pod_affinity(required=[_in_term("", namespaces=["DiffNameSpace"])]))
        .obj(),
        [MakePod().namespace("ns").label("service", "securityscan").node("node1").obj()],
        None,
        AFF,
    ),
    (
        "Doesn't satisfy the PodAffinity because of unmatching labelSelector",
        MakePod()
        .namespace(NS)
        .labels({"service": "securityscan"})
        .pod_affinity_in("service", "", ["antivirusscan", "value2"])
        .obj(),
        [POD],
        None,
        AFF,
    ),
    (
        "satisfies the PodAffinity with different label Operators in multiple terms",
        MakePod()
        .namespace(NS)
        .labels(LABEL2)
        .affinity(
            pod_affinity(
                required=[
                    term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                    term(
                        "region",
                        expr("service", "In", "securityscan"),
                        expr("service", "NotIn", "WrongValue"),
                    ),
                ]
            )
        )
        .obj(),
        [POD],
        None,
        Status.OK,
    ),
    (
        "matchExpressions are ANDed: one requirement doesn't match",
        MakePod()
        .namespace(NS)
        .labels(LABEL2)
        .affinity(
            pod_affinity(
                required=[
                    term("region", expr("service", "Exists"), expr("wrongkey", "DoesNotExist")),
                    term(
                        "region",
                        expr("service", "In", "securityscan2"),
                        expr("service", "NotIn", "WrongValue"),
                    ),
                ]
            )
        )
        .obj(),
        [POD],
        None,
        AFF,
    ),
    (
        "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
        MakePod()
        .namespace(NS)
        .labels(LABEL2)
        .pod_affinity_in("service", "region", ["securityscan", "value2"])
        .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"])
        .obj(),
        [POD],
        None,
        Status.OK,
    ),
    (
        "satisfies PodAffinity, PodAntiAffinity and PodAntiAffinity symmetry",
        MakePod()
        .namespace(NS)
        .labels(LABEL2)
        .pod_affinity_in("service", "region", ["securityscan", "value2"])
        .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"])
        .obj(),
        [
            MakePod()
            .namespace(NS)
            .node("node1")
            .labels({"service": "securityscan"})
            .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"])
            .obj()
        ],
        None,
        Status.OK,
    ),
    (
        "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity",
        MakePod()
        .namespace(NS)
        .labels(LABEL2)
        .pod_affinity_in("service", "region", ["securityscan", "value2"])
        .pod_anti_affinity_in("service", "zone", ["securityscan", "value2"])
        .obj(),
        [POD],
        None,
        ANTI,
    ),
    (
        "satisfies PodAffinity and PodAntiAffinity but not PodAntiAffinity symmetry",
        MakePod()
        .namespace(NS)
        .labels({"service": "securityscan"})
        .pod_affinity_in("service", "region", ["securityscan", "value2"])
        .pod_anti_affinity_in("service", "node", ["antivirusscan", "value2"])
        .obj(),
        [
            MakePod()
            .namespace(NS)
            .labels({"service": "securityscan"})
            .node("node1")
            .pod_anti_affinity_in("service", "zone", ["securityscan", "value2"])
            .obj()
        ],
        None,
        EXISTING,
    ),
    (
        "pod matches its own Label in PodAffinity and that matches the existing pod Labels",
        MakePod()
        .namespace(NS)
        .labels({"service": "securityscan"})
        .pod_affinity_not_in("service", "region", ["securityscan", "value2"])
        .obj(),
        [MakePod().label("service", "securityscan").node("node2").obj()],
        None,
        AFF,
    ),
    (
        "existing pod's anti-affinity respected without own anti-affinity: violated",
        MakePod().labels({"service": "securityscan"}).obj(),
        [
            MakePod()
            .namespace(NS)
            .node("node1")
            .labels({"service": "securityscan"})
            .pod_anti_affinity_in("service", "zone", ["securityscan", "value2"])
            .obj()
        ],
        None,
        EXISTING,
    ),
    (
        "existing pod's anti-affinity respected without own anti-affinity: satisfied",
        MakePod().labels({"service": "securityscan"}).obj(),
        [
            MakePod()
            .namespace(NS)
            .node("node1")
            .labels({"service": "securityscan"})
            .pod_anti_affinity_not_in("service", "zone", ["securityscan", "value2"])
            .obj()
        ],
        SKIP,
        Status.OK,
    ),
    (
        "satisfies existing pod's anti-affinity but the existing pod violates the incoming's",
        MakePod()
        .namespace(NS)
        .labels({"service": "securityscan"})
        .pod_anti_affinity_exists("service", "region")
        .pod_anti_affinity_exists("security", "region")
        .obj(),
        [
            MakePod()
            .namespace(NS)
            .node("node1")
            .labels(LABEL2)
            .pod_anti_affinity_exists("security", "zone")
            .obj()
        ],
        None,
        ANTI,
    ),
    (
        "PodAntiAffinity symmetry check a1: partial match on AffinityTerms",
        MakePod()
        .namespace(NS)
        .labels({"service": "securityscan"})
        .pod_anti_affinity_exists("service", "zone")
        .pod_anti_affinity_exists("security", "zone")
        .obj(),
        [
            MakePod()
            .namespace(NS)
            .node("node1")
            .labels(LABEL2)
            .pod_anti_affinity_exists("security", "zone")
            .obj()
        ],
        None,
        ANTI,
    ),
    (
        "PodAntiAffinity symmetry check a2: partial match on AffinityTerms",
        MakePod().namespace(NS).labels(LABEL2).pod_anti_affinity_exists("security", "zone").obj(),
        [
            MakePod()
            .namespace(NS)
            .node("node1")
            .labels({"service": "securityscan"})
            .pod_anti_affinity_exists("service", "zone")
            .pod_anti_affinity_exists("security", "zone")
            .obj()
        ],
        None,
        EXISTING,
    ),
    (
        "PodAntiAffinity symmetry check b1: partial match on AffinityTerms",
        MakePod()
        .namespace(NS)
        .labels({"abc": "", "xyz": ""})
        .pod_anti_affinity_exists("abc", "zone")
        .pod_anti_affinity_exists("def", "zone")
        .obj(),
        [
            MakePod()
            .namespace(NS)
            .node("node1")
            .labels({"def": "", "xyz": ""})
            .pod_anti_affinity_exists("abc", "zone")
            .pod_anti_affinity_exists("def", "zone")
            .obj()
        ],
        None,
        ANTI,
    ),
    (
        "PodAntiAffinity symmetry check b2: partial match on AffinityTerms",
        MakePod()
        .namespace(NS)
        .labels({"def": "", "xyz": ""})
        .pod_anti_affinity_exists("abc", "zone")
        .pod_anti_affinity_exists("def", "zone")
        .obj(),
        [
            MakePod()
            .namespace(NS)
            .node("node1")
            .labels({"abc": "", "xyz": ""})
            .pod_anti_affinity_exists("abc", "zone")
            .pod_anti_affinity_exists("def", "zone")
            .obj()
        ],
        None,
        ANTI,
    ),
    (
        "affinity with NamespaceSelector",
        MakePod()
        .namespace(NS)
        .labels(LABEL2)
        .affinity(
            pod_affinity(required=[_in_term("region", namespace_selector=_ns_selector("team1"))])
        )
        .obj(),
        [
            MakePod()
            .namespace("subteam1.team1")
            .labels({"service": "securityscan"})
            .node("node1")
            .obj()
        ],
        None,
        Status.OK,
    ),
    (
        "affinity with non-matching NamespaceSelector",
        MakePod()
        .namespace(NS)
        .labels(LABEL2)
        .affinity(
            pod_affinity(required=[_in_term("region", namespace_selector=_ns_selector("team1"))])
        )
        .obj(),
        [
            MakePod()
            .namespace("subteam1.team2")
            .labels({"service": "securityscan"})
            .node("node1")
            .obj()
        ],
        None,
        AFF,
    ),
    (
        "anti-affinity with matching NamespaceSelector",
        MakePod()
        .namespace("subteam1.team1")
        .labels(LABEL2)
        .affinity(
            pod_affinity(anti_required=[_in_term("zone", namespace_selector=_ns_selector("team1"))])
        )
        .obj(),
        [
            MakePod()
            .namespace("subteam2.team1")
            .labels({"service": "securityscan"})
            .node("node1")
            .obj()
        ],
        None,
        ANTI,
    ),
    (
        "anti-affinity with matching all NamespaceSelector",
        MakePod()
        .namespace("subteam1.team1")
        .labels(LABEL2)
        .affinity(pod_affinity(anti_required=[_in_term("zone", namespace_selector={})]))
        .obj(),
        [
            MakePod()
            .namespace("subteam2.team1")
            .labels({"service": "securityscan"})
            .node("node1")
            .obj()
        ],
        None,
        ANTI,
    ),
    (
        "anti-affinity with non-matching NamespaceSelector",
        MakePod()
        .namespace("subteam1.team1")
        .labels(LABEL2)
        .affinity(
            pod_affinity(anti_required=[_in_term("zone", namespace_selector=_ns_selector("team1"))])
        )
        .obj(),
        [
            MakePod()
            .namespace("subteam1.team2")
            .labels({"service": "securityscan"})
            .node("node1")
            .obj()
        ],
        None,
        Status.OK,
    ),
]


@pytest.mark.parametrize("fast", [True, False], ids=["table", "reference"])
@pytest.mark.parametrize(
    ("name", "pod", "pods", "want_pre_filter", "want_filter"),
    SINGLE_NODE,
    ids=[case[0] for case in SINGLE_NODE],
)
def test_required_affinity_single_node(
    name: str,
    pod: PodView,
    pods: list[PodView],
    want_pre_filter: Status | None,
    want_filter: Status,
    fast: bool,
) -> None:
    status, statuses = run_filter(pod, pods, [NODE1], NAMESPACES, fast)
    assert status == (want_pre_filter or Status.OK)
    if status.is_success:
        assert statuses == [want_filter]


BAD_VALUE = "{{.bad-value.}}"


@pytest.mark.parametrize(
    "pod",
    [
        MakePod()
        .namespace(NS)
        .labels({"service": "securityscan"})
        .pod_affinity_in("service", "region", [BAD_VALUE])
        .pod_affinity_in("service", "node", ["antivirusscan", "value2"])
        .obj(),
        MakePod()
        .namespace(NS)
        .labels({"service": "securityscan"})
        .pod_affinity_in("service", "region", ["foo"])
        .pod_affinity_in("service", "node", [BAD_VALUE])
        .obj(),
    ],
    ids=["invalid affinity label value", "invalid anti-affinity label value"],
)
def test_invalid_label_syntax_fails_pre_filter(pod: PodView) -> None:
    status, _ = run_filter(pod, [], [NODE1], NAMESPACES, True)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message.startswith("parsing pod: ")
    assert BAD_VALUE in status.message


RG_CHINA = {"region": "China"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}
RG_INDIA = {"region": "India"}


def _nodes(*specs: tuple[str, dict[str, str]]) -> list[NodeView]:
    return [make_node(name, labels=labels) for name, labels in specs]


def _abc(name: str, region: str, zone: str) -> tuple[str, dict[str, str]]:
    return (name, {"region": region, "zone": zone, "hostname": name})


# (name, pod, existing pods, nodes, want PreFilter status or None, want Filter statuses)
MULTIPLE_NODES: list[
    tuple[str, PodView, list[PodView], list[NodeView], Status | None, list[Status]]
] = [
    (
        "nodes sharing a topology value with a node holding a matching pod can take the pod",
        MakePod().namespace(NS).pod_affinity_in("foo", "region", ["bar"]).obj(),
        [MakePod("p1").node("node1").labels({"foo": "bar"}).obj()],
        _nodes(("node1", RG_CHINA), ("node2", RG_CHINA_AZ1), ("node3", RG_INDIA)),
        None,
        [Status.OK, Status.OK, AFF],
    ),
    (
        "the first pod of a collection with affinity to itself isn't blocked anywhere",
        MakePod()
        .namespace(NS)
        .labels({"foo": "bar", "service": "securityscan"})
        .pod_affinity_in("foo", "zone", ["bar"])
        .pod_affinity_in("service", "zone", ["securityscan"])
        .obj(),
        [MakePod("p1").node("nodeA").labels({"foo": "bar"}).obj()],
        _nodes(
            ("nodeA", {"zone": "az1", "hostname": "h1"}),
            ("nodeB", {"zone": "az2", "hostname": "h2"}),
        ),
        None,
        [Status.OK, Status.OK],
    ),
    (
        "the first pod of a collection only goes to nodes with the requested topology keys",
        MakePod()
        .namespace(NS)
        .labels({"foo": "bar", "service": "securityscan"})
        .pod_affinity_in("foo", "zone", ["bar"])
        .pod_affinity_in("service", "zone", ["securityscan"])
        .obj(),
        [MakePod("p1").node("nodeA").labels({"foo": "bar"}).obj()],
        _nodes(
            ("nodeA", {"zoneLabel": "az1", "hostname": "h1"}),
            ("nodeB", {"zoneLabel": "az2", "hostname": "h2"}),
        ),
        None,
        [AFF, AFF],
    ),
    (
        "anti-affinity blocks every node of the region holding a matching pod",
        MakePod().namespace(NS).pod_anti_affinity_in("foo", "region", ["abc"]).obj(),
        [MakePod().node("nodeA").labels({"foo": "abc"}).obj()],
        _nodes(
            ("nodeA", {"region": "r1", "hostname": "nodeA"}),
            ("nodeB", {"region": "r1", "hostname": "nodeB"}),
        ),
        None,
        [ANTI, ANTI],
    ),
    (
        "anti-affinity matches a pod when any term matches it",
        MakePod()
        .namespace(NS)
        .pod_anti_affinity_in("foo", "region", ["abc"])
        .pod_anti_affinity_in("service", "zone", ["securityscan"])
        .obj(),
        [MakePod().node("nodeA").labels({"foo": "abc", "service": "securityscan"}).obj()],
        _nodes(_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")),
        None,
        [ANTI, ANTI],
    ),
    (
        "anti-affinity: nodeA and nodeB blocked, nodeC (other region) fits",
        MakePod().namespace(NS).pod_anti_affinity_in("foo", "region", ["abc"]).obj(),
        [MakePod().node("nodeA").labels({"foo": "abc"}).obj()],
        _nodes(("nodeA", RG_CHINA), ("nodeB", RG_CHINA_AZ1), ("nodeC", RG_INDIA)),
        None,
        [ANTI, ANTI, Status.OK],
    ),
    (
        "anti-affinity: a pod with matching labels in another namespace doesn't count",
        MakePod()
        .namespace("NS1")
        .labels({"foo": "123"})
        .pod_anti_affinity_in("foo", "region", ["bar"])
        .obj(),
        [
            MakePod().node("nodeA").namespace("NS1").labels({"foo": "bar"}).obj(),
            MakePod()
            .node("nodeC")
            .namespace("NS2")
            .pod_anti_affinity_in("foo", "region", ["123"])
            .obj(),
        ],
        _nodes(("nodeA", RG_CHINA), ("nodeB", RG_CHINA_AZ1), ("nodeC", RG_INDIA)),
        None,
        [ANTI, ANTI, Status.OK],
    ),
    (
        "existing pod's anti-affinity term with a topology key no node has",
        MakePod().label("foo", "").obj(),
        [
            MakePod()
            .node("nodeA")
            .namespace(NS)
            .pod_anti_affinity_exists("foo", "invalid-node-label")
            .obj()
        ],
        _nodes(_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z1")),
        SKIP,
        [Status.OK, Status.OK],
    ),
    (
        "incoming pod's anti-affinity: the topology key must match too",
        MakePod()
        .node("nodeA")
        .namespace(NS)
        .pod_anti_affinity_exists("foo", "invalid-node-label")
        .obj(),
        [MakePod().node("nodeA").labels({"foo": ""}).obj()],
        _nodes(_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z1")),
        None,
        [Status.OK, Status.OK],
    ),
    (
        "existing pods' anti-affinity: the incoming pod violates each one's terms everywhere",
        MakePod().label("foo", "").label("bar", "").obj(),
        [
            MakePod().node("nodeA").namespace(NS).pod_anti_affinity_exists("foo", "zone").obj(),
            MakePod().node("nodeA").namespace(NS).pod_anti_affinity_exists("bar", "region").obj(),
        ],
        _nodes(_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")),
        None,
        [EXISTING, EXISTING],
    ),
    (
        "incoming pod's anti-affinity: violating one rule is enough",
        MakePod()
        .namespace(NS)
        .pod_anti_affinity_exists("foo", "zone")
        .pod_anti_affinity_exists("bar", "region")
        .obj(),
        [
            MakePod().node("nodeA").labels({"foo": ""}).obj(),
            MakePod().node("nodeB").labels({"bar": ""}).obj(),
        ],
        _nodes(_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")),
        None,
        [ANTI, ANTI],
    ),
    (
        "existing pod's anti-affinity: selector and topology key must both match (one bad key)",
        MakePod().label("foo", "").label("bar", "").obj(),
        [
            MakePod()
            .node("nodeA")
            .namespace(NS)
            .pod_anti_affinity_exists("foo", "invalid-node-label")
            .pod_anti_affinity_exists("bar", "zone")
            .obj()
        ],
        _nodes(_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")),
        None,
        [EXISTING, Status.OK],
    ),
    (
        "incoming pod's anti-affinity: selector and topology key must both match (one bad key)",
        MakePod()
        .namespace(NS)
        .pod_anti_affinity_exists("foo", "invalid-node-label")
        .pod_anti_affinity_exists("bar", "zone")
        .obj(),
        [MakePod("podA").node("nodeA").labels({"foo": "", "bar": ""}).obj()],
        _nodes(_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")),
        None,
        [ANTI, Status.OK],
    ),
    (
        "existing pod's anti-affinity: selector and topology key both match (valid keys)",
        MakePod().label("foo", "").label("bar", "").obj(),
        [
            MakePod()
            .namespace(NS)
            .node("nodeA")
            .pod_anti_affinity_exists("foo", "region")
            .pod_anti_affinity_exists("bar", "zone")
            .obj()
        ],
        _nodes(_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")),
        None,
        [EXISTING, EXISTING],
    ),
    (
        "incoming pod's anti-affinity: selector and topology key both match (valid keys)",
        MakePod()
        .namespace(NS)
        .pod_anti_affinity_exists("foo", "region")
        .pod_anti_affinity_exists("bar", "zone")
        .obj(),
        [MakePod().node("nodeA").labels({"foo": "", "bar": ""}).obj()],
        _nodes(_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")),
        None,
        [ANTI, ANTI],
    ),
    (
        "existing pods on nodeA and nodeB each have a term matching: only nodeC fits",
        MakePod().label("foo", "").label("bar", "").obj(),
        [
            MakePod()
            .node("nodeA")
            .namespace(NS)
            .pod_anti_affinity_exists("foo", "zone")
            .pod_anti_affinity_exists("labelA", "zone")
            .obj(),
            MakePod()
            .node("nodeB")
            .namespace(NS)
            .pod_anti_affinity_exists("bar", "zone")
            .pod_anti_affinity_exists("labelB", "zone")
            .obj(),
        ],
        _nodes(_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2"), _abc("nodeC", "r1", "z3")),
        None,
        [EXISTING, EXISTING, Status.OK],
    ),
    (
        "incoming pod's affinity: all terms match one pod, then topology keys are checked",
        MakePod()
        .namespace(NS)
        .pod_affinity_exists("foo", "region")
        .pod_affinity_exists("bar", "zone")
        .obj(),
        [MakePod("pod1").labels({"foo": "", "bar": ""}).node("nodeA").obj()],
        _nodes(_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z1")),
        None,
        [Status.OK, Status.OK],
    ),
    (
        "incoming pod's affinity: the terms must be satisfied by the same pod",
        MakePod()
        .namespace(NS)
        .pod_affinity_exists("foo", "region")
        .pod_affinity_exists("bar", "zone")
        .obj(),
        [
            MakePod("pod1").node("nodeA").namespace(NS).labels({"foo": ""}).obj(),
            MakePod("pod2").node("nodeB").namespace(NS).labels({"bar": ""}).obj(),
        ],
        _nodes(_abc("nodeA", "r1", "z1"), _abc("nodeB", "r1", "z2")),
        None,
        [AFF, AFF],
    ),
]


@pytest.mark.parametrize("fast", [True, False], ids=["table", "reference"])
@pytest.mark.parametrize(
    ("name", "pod", "pods", "nodes", "want_pre_filter", "want_filters"),
    MULTIPLE_NODES,
    ids=[case[0] for case in MULTIPLE_NODES],
)
def test_required_affinity_multiple_nodes(
    name: str,
    pod: PodView,
    pods: list[PodView],
    nodes: list[NodeView],
    want_pre_filter: Status | None,
    want_filters: list[Status],
    fast: bool,
) -> None:
    status, statuses = run_filter(pod, pods, nodes, {"NS1": {}}, fast)
    assert status == (want_pre_filter or Status.OK)
    if status.is_success:
        assert statuses == want_filters


def test_pre_filter_disabled() -> None:
    snapshot = make_snapshot([make_node("node1")])
    plugin = InterPodAffinity(InterPodAffinityArgs(), FakeHandle(snapshot))
    status = plugin.filter(CycleState(), MakePod().obj(), snapshot.node_info_list[0])
    assert status.code == Code.ERROR
    assert status.message == f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'
    table = snapshot.node_table()
    assert plugin.filter_rows(CycleState(), MakePod().obj(), table, np.arange(1)) is None


LABEL_1 = {"region": "r1", "zone": "z11"}
LABEL_2 = {"region": "r1", "zone": "z12"}
LABEL_3 = {"region": "r2", "zone": "z21"}
SELECTOR1 = {"foo": "bar"}
ANTI_FOO_BAR = pod_affinity(anti_required=[term("region", expr("foo", "In", "bar"))])
_COMPLEX_TERMS = [
    term("region", expr("foo", "In", "bar", "buzz")),
    term("zone", expr("service", "NotIn", "bar", "security", "test")),
]
ANTI_COMPLEX = pod_affinity(anti_required=_COMPLEX_TERMS)
AFFINITY_COMPLEX = pod_affinity(required=_COMPLEX_TERMS)
ADD_REMOVE_NODES = _nodes(("nodeA", LABEL_1), ("nodeB", LABEL_2), ("nodeC", LABEL_3))

# (name, pending pod, existing pods, added pod, want anti-affinity counts, want affinity counts)
ADD_REMOVE: list[tuple[str, PodView, list[PodView], PodView, dict[Any, int], dict[Any, int]]] = [
    (
        "anti-affinity terms are updated after adding and removing a pod",
        MakePod("pending").labels(SELECTOR1).affinity(ANTI_FOO_BAR).obj(),
        [
            MakePod("p1").labels(SELECTOR1).node("nodeA").obj(),
            MakePod("p2").node("nodeC").affinity(ANTI_FOO_BAR).obj(),
        ],
        MakePod("addedPod").labels(SELECTOR1).node("nodeB").affinity(ANTI_FOO_BAR).obj(),
        {("region", "r1"): 2},
        {},
    ),
    (
        "complex anti-affinity terms are updated after adding and removing a pod",
        MakePod("pending").labels(SELECTOR1).affinity(ANTI_COMPLEX).obj(),
        [
            MakePod("p1").labels(SELECTOR1).node("nodeA").obj(),
            MakePod("p2").node("nodeC").affinity(ANTI_FOO_BAR).obj(),
        ],
        MakePod("addedPod").labels(SELECTOR1).node("nodeA").affinity(ANTI_COMPLEX).obj(),
        {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1},
        {},
    ),
    (
        "affinity and anti-affinity are updated after adding and removing a pod",
        MakePod("pending").labels(SELECTOR1).affinity(AFFINITY_COMPLEX).obj(),
        [
            MakePod("p1").labels(SELECTOR1).node("nodeA").obj(),
            MakePod("p2").node("nodeC").affinity({**ANTI_FOO_BAR, **AFFINITY_COMPLEX}).obj(),
        ],
        MakePod("addedPod").labels(SELECTOR1).node("nodeA").affinity(ANTI_COMPLEX).obj(),
        {},
        {("region", "r1"): 2, ("zone", "z11"): 2},
    ),
]


def _pre_filter_state(
    pending: PodView, pods: list[PodView], fast: bool
) -> tuple[InterPodAffinity, CycleState, PreFilterState, Any]:
    snapshot = make_snapshot(ADD_REMOVE_NODES, pods)
    plugin = InterPodAffinity(InterPodAffinityArgs(), FakeHandle(snapshot))
    state = CycleState()
    listed = snapshot.node_info_list if fast else list(snapshot.node_info_list)
    _, status = plugin.pre_filter(state, pending, listed)
    assert status.is_success, status
    return plugin, state, state.read(PRE_FILTER_STATE_KEY), snapshot


@pytest.mark.parametrize("fast", [True, False], ids=["table", "reference"])
@pytest.mark.parametrize(
    ("name", "pending", "existing", "added", "want_anti", "want_affinity"),
    ADD_REMOVE,
    ids=[case[0] for case in ADD_REMOVE],
)
def test_pre_filter_state_add_remove_pod(
    name: str,
    pending: PodView,
    existing: list[PodView],
    added: PodView,
    want_anti: dict[Any, int],
    want_affinity: dict[Any, int],
    fast: bool,
) -> None:
    _, _, all_pods_state, _ = _pre_filter_state(pending, [*existing, added], fast)
    plugin, cycle_state, state, snapshot = _pre_filter_state(pending, existing, fast)
    original = state.clone()
    node_info = snapshot.get(added.node_name)
    assert plugin.add_pod(cycle_state, pending, added, node_info).is_success
    assert state.anti_affinity_counts == want_anti
    assert state.affinity_counts == want_affinity
    assert state.same_counts(all_pods_state)
    assert plugin.remove_pod(cycle_state, pending, added, node_info).is_success
    assert state.same_counts(original)


def test_add_pod_without_pre_filter_state() -> None:
    snapshot = make_snapshot([make_node("n")])
    plugin = InterPodAffinity(InterPodAffinityArgs(), FakeHandle(snapshot))
    pod = MakePod().obj()
    status = plugin.add_pod(CycleState(), pod, pod, snapshot.node_info_list[0])
    assert status.code == Code.ERROR


def test_pre_filter_state_clone() -> None:
    source = PreFilterState(
        MakePod().obj(),
        (),
        (),
        None,
        existing_anti_affinity_counts={("name", "node1"): 1, ("name", "node2"): 1},
        affinity_counts={("name", "nodeA"): 1, ("name", "nodeC"): 2},
        anti_affinity_counts={("name", "nodeN"): 3, ("name", "nodeM"): 1},
    )
    clone = source.clone()
    assert clone is not source
    assert clone.same_counts(source)
    clone.affinity_counts[("name", "nodeA")] = 5
    assert source.affinity_counts[("name", "nodeA")] == 1
    # CycleState.clone clones the value.
    cycle_state = CycleState()
    cycle_state.write(PRE_FILTER_STATE_KEY, source)
    copied = cycle_state.clone().read(PRE_FILTER_STATE_KEY)
    assert copied is not source and copied.same_counts(source)


def _normal(*labels: str) -> PodView:
    builder = MakePod("normal").node("nodeA")
    for label in labels:
        builder.label(label, "")
    return builder.obj()


HOST_A = [make_node("nodeA", labels={"hostname": "nodeA"})]

# (name, existing pods, pod, want affinity counts, want anti-affinity counts)
INCOMING: list[tuple[str, list[PodView], PodView, dict[Any, int], dict[Any, int]]] = [
    ("nil test", [], MakePod("aaa-normal").obj(), {}, {}),
    (
        "incoming pod without affinity/anti-affinity causes a no-op",
        [_normal("aaa")],
        MakePod("aaa-normal").obj(),
        {},
        {},
    ),
    (
        "no pod has label that violates incoming pod's affinity and anti-affinity",
        [_normal("bbb")],
        MakePod("aaa-anti")
        .pod_affinity_exists("aaa", "hostname")
        .pod_anti_affinity_exists("aaa", "hostname")
        .obj(),
        {},
        {},
    ),
    (
        "existing pod matches incoming pod's affinity and anti-affinity - single term case",
        [_normal("aaa")],
        MakePod("affi-antiaffi")
        .pod_affinity_exists("aaa", "hostname")
        .pod_anti_affinity_exists("aaa", "hostname")
        .obj(),
        {("hostname", "nodeA"): 1},
        {("hostname", "nodeA"): 1},
    ),
    (
        "existing pod matches incoming pod's affinity and anti-affinity - multiple terms case",
        [_normal("aaa", "bbb")],
        MakePod("affi-antiaffi")
        .pod_affinity_exists("aaa", "hostname")
        .pod_affinity_exists("bbb", "hostname")
        .pod_anti_affinity_exists("aaa", "hostname")
        .obj(),
        {("hostname", "nodeA"): 2},  # one for each term
        {("hostname", "nodeA"): 1},
    ),
    (
        "existing pod doesn't match incoming pod's affinity but matches anti-affinity",
        [_normal("aaa")],
        MakePod("affi-antiaffi")
        .pod_affinity_exists("aaa", "hostname")
        .pod_affinity_exists("bbb", "hostname")
        .pod_anti_affinity_exists("aaa", "hostname")
        .pod_anti_affinity_exists("bbb", "hostname")
        .obj(),
        {},
        {("hostname", "nodeA"): 1},
    ),
    (
        "anti-affinity with more than one term - existing pod violates partial term - case 1",
        [_normal("aaa", "bbb")],
        MakePod("anaffi-antiaffiti")
        .pod_affinity_exists("aaa", "hostname")
        .pod_affinity_exists("ccc", "hostname")
        .pod_anti_affinity_exists("aaa", "hostname")
        .pod_anti_affinity_exists("ccc", "hostname")
        .obj(),
        {},
        {("hostname", "nodeA"): 1},
    ),
    (
        "anti-affinity with more than one term - existing pod violates partial term - case 2",
        [_normal("bbb")],
        MakePod("affi-antiaffi")
        .pod_affinity_exists("aaa", "hostname")
        .pod_affinity_exists("bbb", "hostname")
        .pod_anti_affinity_exists("aaa", "hostname")
        .pod_anti_affinity_exists("bbb", "hostname")
        .obj(),
        {},
        {("hostname", "nodeA"): 1},
    ),
]


@pytest.mark.parametrize("fast", [True, False], ids=["table", "reference"])
@pytest.mark.parametrize(
    ("name", "existing", "pod", "want_affinity", "want_anti"),
    INCOMING,
    ids=[case[0] for case in INCOMING],
)
def test_incoming_affinity_anti_affinity_counts(
    name: str,
    existing: list[PodView],
    pod: PodView,
    want_affinity: dict[Any, int],
    want_anti: dict[Any, int],
    fast: bool,
) -> None:
    snapshot = make_snapshot(HOST_A, existing)
    plugin = InterPodAffinity(InterPodAffinityArgs(), FakeHandle(snapshot))
    state = CycleState()
    listed = snapshot.node_info_list if fast else list(snapshot.node_info_list)
    _, status = plugin.pre_filter(state, pod, listed)
    if status.is_skip:
        assert want_affinity == {} and want_anti == {}
        return
    pre_filter: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
    assert pre_filter.affinity_counts == want_affinity
    assert pre_filter.anti_affinity_counts == want_anti


def test_terminating_pods_count() -> None:
    """Upstream counts every pod in the NodeInfo, terminating ones included."""
    existing = [MakePod().node("nodeA").label("aaa", "").terminating().obj()]
    pod = MakePod().pod_anti_affinity_exists("aaa", "hostname").obj()
    for fast in (True, False):
        status, statuses = run_filter(pod, existing, HOST_A, None, fast)
        assert status.is_success
        assert statuses == [ANTI]
