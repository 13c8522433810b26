"""PodTopologySpread: the NodeTable fast paths agree with upstream's per-pod algorithm
(pkg/scheduler/framework/plugins/podtopologyspread/filtering.go and scoring.go).

Random small clusters (zone / hostname / node labels, some missing, some tainted; existing pods
with random labels and namespaces, some terminating) and random incoming pods with random
constraints: PreFilter and PreScore state, every node's Filter verdict (per node and through
filter_rows), AddPod / RemovePod updates, Score (per node and score_rows) and NormalizeScore
must be the same both ways.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.api.objects import NodeView, PodView
from scheduler.framework.interface import CycleState, NodeScore
from scheduler.plugins.podtopologyspread import PodTopologySpread
from scheduler.plugins.podtopologyspread.args import (
    LIST_DEFAULTING,
    SYSTEM_DEFAULTING,
    DefaultConstraint,
    PodTopologySpreadArgs,
)
from scheduler.plugins.podtopologyspread.plugin import PRE_FILTER_STATE_KEY, PRE_SCORE_STATE_KEY
from scheduler.plugins.podtopologyspread.state import PreFilterState, PreScoreState
from scheduler.testing import (
    FakeHandle,
    ListSnapshot,
    cluster_objects,
    expr,
    make_node,
    make_pod,
    make_snapshot,
    required_node_affinity,
    service,
)

KEYS = ("zone", "kubernetes.io/hostname", "node", "topology.kubernetes.io/zone")
TAINTS = {
    "none": [],
    "noschedule": [{"key": "t", "value": "v", "effect": "NoSchedule"}],
    "noexecute": [{"key": "u", "value": "", "effect": "NoExecute"}],
    "prefer": [{"key": "t", "value": "v", "effect": "PreferNoSchedule"}],
}
SELECTORS: list[dict[str, Any] | None] = [
    None,
    {},
    {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
    {"matchLabels": {"app": "a"}},
    {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["b"]}]},
]


@st.composite
def nodes_strategy(draw: st.DrawFn) -> list[NodeView]:
    count = draw(st.integers(1, 8))
    nodes = []
    for index in range(count):
        name = f"n{index}"
        labels: dict[str, str] = {}
        zone = draw(st.sampled_from([None, "z1", "z2", "z3", ""]))
        if zone is not None:
            labels["zone"] = zone
            if draw(st.booleans()):
                labels["topology.kubernetes.io/zone"] = zone
        if draw(st.integers(0, 4)):
            labels["kubernetes.io/hostname"] = draw(st.sampled_from([name, name, "shared"]))
        if draw(st.booleans()):
            labels["node"] = draw(st.sampled_from([name, "r1", "r2"]))
        if draw(st.booleans()):
            labels["foo"] = draw(st.sampled_from(["1", "2"]))
        taints = TAINTS[draw(st.sampled_from(list(TAINTS)))]
        nodes.append(make_node(name, labels=labels, taints=taints))
    return nodes


@st.composite
def pods_strategy(draw: st.DrawFn, nodes: list[NodeView]) -> list[PodView]:
    pods = []
    for _ in range(draw(st.integers(0, 16))):
        labels: dict[str, str] = {}
        app = draw(st.sampled_from([None, "a", "b"]))
        if app is not None:
            labels["app"] = app
        if draw(st.booleans()):
            labels["tier"] = draw(st.sampled_from(["x", "y"]))
        pods.append(
            make_pod(
                node_name=draw(st.sampled_from(nodes)).name,
                namespace=draw(st.sampled_from(["default", "default", "other"])),
                labels=labels,
                terminating=draw(st.integers(0, 5)) == 0,
            )
        )
    return pods


@st.composite
def constraint_strategy(draw: st.DrawFn) -> dict[str, Any]:
    c: dict[str, Any] = {
        "maxSkew": draw(st.integers(1, 3)),
        "topologyKey": draw(st.sampled_from(KEYS)),
        "whenUnsatisfiable": draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"])),
    }
    selector = draw(st.sampled_from(SELECTORS))
    if selector is not None:
        c["labelSelector"] = selector
    if draw(st.booleans()):
        c["minDomains"] = draw(st.integers(1, 4))
    if draw(st.booleans()):
        c["nodeAffinityPolicy"] = draw(st.sampled_from(["Honor", "Ignore"]))
    if draw(st.booleans()):
        c["nodeTaintsPolicy"] = draw(st.sampled_from(["Honor", "Ignore"]))
    if draw(st.integers(0, 3)) == 0:
        c["matchLabelKeys"] = ["tier"]
    return c


@st.composite
def incoming_strategy(draw: st.DrawFn) -> PodView:
    labels: dict[str, str] = {}
    app = draw(st.sampled_from([None, "a", "b"]))
    if app is not None:
        labels["app"] = app
    if draw(st.booleans()):
        labels["tier"] = "x"
    constraints = draw(st.lists(constraint_strategy(), min_size=0, max_size=3))
    kw: dict[str, Any] = {}
    affinity = draw(st.sampled_from(["none", "selector", "in", "notin"]))
    if affinity == "selector":
        kw["node_selector"] = {"foo": "1"}
    elif affinity == "in":
        kw["affinity"] = required_node_affinity(expr("foo", "In", "1", "2"))
    elif affinity == "notin":
        kw["affinity"] = required_node_affinity(expr("node", "NotIn", "r1"))
    if draw(st.booleans()):
        kw["tolerations"] = [{"key": "t", "operator": "Exists"}]
    return make_pod("incoming", labels=labels, spread_constraints=constraints, **kw)


def prefilter_summary(s: PreFilterState) -> Any:
    return (
        s.constraints,
        s.tp_value_to_match_num,
        [p.pairs() for p in s.critical_paths],
        [s.min_match_num(i) for i in range(len(s.constraints))],
        s.domains,
    )


def prescore_summary(s: PreScoreState) -> Any:
    return (
        s.constraints,
        s.ignored_nodes,
        s.topology_value_to_pod_counts,
        s.topology_normalizing_weight,
    )


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_fast_paths_match_reference(data: st.DataObject) -> None:
    nodes = data.draw(nodes_strategy())
    pods = data.draw(pods_strategy(nodes))
    pod = data.draw(incoming_strategy())
    system = data.draw(st.booleans())
    if system:
        args = PodTopologySpreadArgs((), SYSTEM_DEFAULTING)
    else:
        args = PodTopologySpreadArgs(
            (
                DefaultConstraint(1, "zone", "DoNotSchedule"),
                DefaultConstraint(2, "node", "ScheduleAnyway"),
            ),
            LIST_DEFAULTING,
        )
    objs = cluster_objects(service({"app": "a"})) if data.draw(st.booleans()) else cluster_objects()

    snapshot = make_snapshot(nodes, pods)
    table = snapshot.node_table()
    infos = snapshot.node_info_list
    fast = PodTopologySpread(args, FakeHandle(snapshot, objs))
    ref = PodTopologySpread(args, FakeHandle(ListSnapshot(list(infos)), objs))

    # PreFilter
    fast_state, ref_state = CycleState(), CycleState()
    _, fast_status = fast.pre_filter(fast_state, pod, infos)
    _, ref_status = ref.pre_filter(ref_state, pod, list(infos))
    assert fast_status == ref_status
    if fast_status.is_success:
        fs: PreFilterState = fast_state.read(PRE_FILTER_STATE_KEY)
        rs: PreFilterState = ref_state.read(PRE_FILTER_STATE_KEY)
        # Filter per node and per row, before anything materialises the fast state's dicts.
        rows = np.arange(len(table), dtype=np.intp)
        verdict = fast.filter_rows(fast_state, pod, table, rows)
        assert verdict is not None
        for row, info in enumerate(infos):
            want = ref.filter(ref_state, pod, info)
            assert fast.filter(fast_state, pod, info) == want
            assert bool(verdict.passed[row]) == want.is_success
            if not want.is_success:
                assert verdict.reject(row) == want
        assert prefilter_summary(fs) == prefilter_summary(rs)
        # AddPod / RemovePod on clones.
        target = data.draw(st.sampled_from(infos))
        extra = data.draw(pods_strategy([target.node])) or [make_pod(node_name=target.node_name)]
        delta_pod = extra[0]
        method = data.draw(st.sampled_from(["add_pod", "remove_pod"]))
        fast_clone, ref_clone = fast_state.clone(), ref_state.clone()
        getattr(fast, method)(fast_clone, pod, delta_pod, target)
        getattr(ref, method)(ref_clone, pod, delta_pod, target)
        assert prefilter_summary(fast_clone.read(PRE_FILTER_STATE_KEY)) == prefilter_summary(
            ref_clone.read(PRE_FILTER_STATE_KEY)
        )
        assert prefilter_summary(fs) == prefilter_summary(rs)  # originals untouched
        verdict = fast.filter_rows(fast_clone, pod, table, rows)
        assert verdict is not None
        for row, info in enumerate(infos):
            want = ref.filter(ref_clone, pod, info)
            assert bool(verdict.passed[row]) == want.is_success

    # PreScore over a random subset of the nodes (in snapshot order).
    mask = data.draw(st.lists(st.booleans(), min_size=len(infos), max_size=len(infos)))
    filtered = [info for info, keep in zip(infos, mask, strict=True) if keep]
    if not filtered:
        return
    fast_state, ref_state = CycleState(), CycleState()
    fast_status = fast.pre_score(fast_state, pod, filtered)
    ref_status = ref.pre_score(ref_state, pod, filtered)
    assert fast_status == ref_status
    if not fast_status.is_success:
        return
    fps: PreScoreState = fast_state.read(PRE_SCORE_STATE_KEY)
    rps: PreScoreState = ref_state.read(PRE_SCORE_STATE_KEY)
    assert fps.rows is not None and rps.rows is None
    assert prescore_summary(fps) == prescore_summary(rps)
    want_scores = []
    for info in filtered:
        value, status = ref.score(ref_state, pod, info)
        assert status.is_success
        assert fast.score(fast_state, pod, info) == (value, status)
        want_scores.append(value)
    rows = np.array([table.row_of[info.node_name] for info in filtered], dtype=np.intp)
    for plugin, state in ((fast, fast_state), (ref, ref_state)):
        got = plugin.score_rows(state, pod, table, rows)
        assert got is not None
        assert got.tolist() == want_scores
        normalized = [
            NodeScore(info.node_name, s) for info, s in zip(filtered, want_scores, strict=True)
        ]
        assert plugin.normalize_score(state, pod, normalized).is_success
        assert plugin.normalize_rows(state, pod, got).tolist() == [s.score for s in normalized]
