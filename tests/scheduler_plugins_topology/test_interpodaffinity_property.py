"""InterPodAffinity: the NodeTable fast paths agree with the reference per-pod paths.

The reference paths walk pods as upstream's
pkg/scheduler/framework/plugins/interpodaffinity/filtering.go and scoring.go do. On random
small clusters (nodes with some of the zone / region / hostname labels, pods with random
labels, namespaces, terminating flags and affinity terms), for random incoming pods:
- PreFilter gives the same status and counts on the snapshot's own list (fast) and on a copy
  (reference), and AddPod / RemovePod keep the counts equal to a PreFilter run with the pod
  present / absent;
- Filter gives the same status per node from either state, and filter_rows agrees with it;
- PreScore gives the same status and topology score on a Snapshot (fast) and a plain lister
  (reference); Score, score_rows, NormalizeScore and normalize_rows agree.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.api.objects import NodeView, PodView
from scheduler.framework.interface import CycleState, NodeScore
from scheduler.plugins.interpodaffinity import (
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    InterPodAffinity,
    InterPodAffinityArgs,
)
from scheduler.testing import (
    FakeHandle,
    MakePod,
    cluster_with_namespaces,
    expr,
    make_list_snapshot,
    make_node,
    make_snapshot,
    pod_affinity,
    term,
    weighted,
)

NAMESPACES = {"ns1": {"team": "t1"}, "ns2": {"team": "t2"}, "ns3": {}}
POD_NAMESPACES = ["ns1", "ns2", "ns3", "ns4"]  # ns4 has no Namespace object
TOPOLOGY_KEYS = ["zone", "region", "hostname", "rack"]  # no node has "rack"
LABEL_KEYS = ["app", "tier"]
LABEL_VALUES = ["a", "b", ""]

Obj = dict[str, Any]


@st.composite
def selectors(draw: st.DrawFn) -> Obj | None:
    kind = draw(st.sampled_from(["none", "everything", "labels", "labels", "exprs", "exprs"]))
    if kind == "none":
        return None
    if kind == "everything":
        return {}
    if kind == "labels":
        return {"matchLabels": {draw(st.sampled_from(LABEL_KEYS)): draw(st.sampled_from("ab"))}}
    exprs: list[Obj] = []
    for _ in range(draw(st.integers(1, 2))):
        key = draw(st.sampled_from(LABEL_KEYS))
        operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]))
        values = draw(st.lists(st.sampled_from(LABEL_VALUES), min_size=1, max_size=2, unique=True))
        exprs.append(expr(key, operator, *(values if operator in ("In", "NotIn") else ())))
    return {"matchExpressions": exprs}


@st.composite
def affinity_terms(draw: st.DrawFn) -> Obj:
    selector = draw(selectors())
    out = term(draw(st.sampled_from(TOPOLOGY_KEYS)), no_selector=True)
    if selector is not None:
        out["labelSelector"] = selector
    namespaces = draw(
        st.sampled_from(["own", "own", "own", "list", "selector", "all", "list+selector"])
    )
    if namespaces in ("list", "list+selector"):
        out["namespaces"] = draw(
            st.lists(st.sampled_from(POD_NAMESPACES), min_size=1, max_size=2, unique=True)
        )
    if namespaces in ("selector", "list+selector"):
        team = draw(st.sampled_from(["t1", "t2"]))
        out["namespaceSelector"] = {"matchLabels": {"team": team}}
    if namespaces == "all":
        out["namespaceSelector"] = {}
    return out


@st.composite
def spec_affinities(draw: st.DrawFn) -> Obj:
    def some(strategy: Any) -> list[Obj]:
        return draw(st.lists(strategy, max_size=2))

    weighted_terms = st.builds(weighted, st.integers(1, 100), affinity_terms())
    return pod_affinity(
        required=some(affinity_terms()),
        preferred=some(weighted_terms),
        anti_required=some(affinity_terms()),
        anti_preferred=some(weighted_terms),
    )


@st.composite
def pods(draw: st.DrawFn, node_names: list[str], sibling_of: PodView | None = None) -> PodView:
    """A pod; with `sibling_of`, often one of its replicas (same namespace and labels)."""
    if sibling_of is not None and draw(st.booleans()):
        builder = MakePod().namespace(sibling_of.namespace).labels(sibling_of.labels)
    else:
        builder = MakePod().namespace(draw(st.sampled_from([*POD_NAMESPACES, "ns1", "ns1"])))
        for key in LABEL_KEYS:
            if draw(st.booleans()):
                builder.label(key, draw(st.sampled_from("ab")))
    if node_names:
        builder.node(draw(st.sampled_from(node_names)))
        if draw(st.integers(0, 9)) == 0:
            builder.terminating()
    if draw(st.booleans()):
        builder.affinity(draw(spec_affinities()))
    return builder.obj()


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[NodeView], list[PodView], PodView, PodView]:
    """(nodes, existing pods, incoming pod, one more existing pod for AddPod)."""
    nodes: list[NodeView] = []
    for index in range(draw(st.integers(1, 6))):
        name = f"node{index}"
        labels: dict[str, str] = {}
        if draw(st.integers(0, 4)):
            labels["zone"] = draw(st.sampled_from(["z1", "z2", "z3"]))
        if draw(st.integers(0, 3)):
            labels["region"] = draw(st.sampled_from(["r1", "r2"]))
        if draw(st.integers(0, 5)):
            labels["hostname"] = name
        nodes.append(make_node(name, labels=labels))
    names = [node.name for node in nodes]
    incoming = draw(pods([]))
    existing = draw(st.lists(pods(names, incoming), max_size=12))
    extra = draw(pods(names, incoming))
    return nodes, existing, incoming, extra


def _plugin(snapshot: Any, args: InterPodAffinityArgs) -> InterPodAffinity:
    return InterPodAffinity(args, FakeHandle(snapshot, cluster_with_namespaces(NAMESPACES)))


def _pre_filter(
    nodes: list[NodeView], existing: list[PodView], incoming: PodView, fast: bool
) -> tuple[InterPodAffinity, Any, CycleState, Any]:
    snapshot = make_snapshot(nodes, existing)
    plugin = _plugin(snapshot, InterPodAffinityArgs())
    state = CycleState()
    listed = snapshot.node_info_list if fast else list(snapshot.node_info_list)
    _, status = plugin.pre_filter(state, incoming, listed)
    return plugin, snapshot, state, status


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_pre_filter_and_filter_paths_agree(
    cluster: tuple[list[NodeView], list[PodView], PodView, PodView],
) -> None:
    nodes, existing, incoming, extra = cluster
    plugin, snapshot, fast_state, fast_status = _pre_filter(nodes, existing, incoming, True)
    _, _, ref_state, ref_status = _pre_filter(nodes, existing, incoming, False)
    assert fast_status == ref_status
    if not fast_status.is_success:
        return
    # The row path first, while the fast state still holds its counts as arrays only.
    table = snapshot.node_table()
    rows = np.arange(len(table), dtype=np.intp)[::-1].copy()
    verdict = plugin.filter_rows(fast_state, incoming, table, rows)
    fast_counts = fast_state.read(PRE_FILTER_STATE_KEY)
    ref_counts = ref_state.read(PRE_FILTER_STATE_KEY)
    again = CycleState()  # a second cycle on the same table gives the same counts
    assert plugin.pre_filter(again, incoming, snapshot.node_info_list)[1].is_success
    assert again.read(PRE_FILTER_STATE_KEY).same_counts(fast_counts)
    assert fast_counts.existing_anti_affinity_counts == ref_counts.existing_anti_affinity_counts
    assert fast_counts.affinity_counts == ref_counts.affinity_counts
    assert fast_counts.anti_affinity_counts == ref_counts.anti_affinity_counts

    infos = snapshot.node_info_list
    statuses = [plugin.filter(fast_state, incoming, info) for info in infos]
    assert statuses == [plugin.filter(ref_state, incoming, info) for info in infos]
    assert verdict is not None
    for position, row in enumerate(rows.tolist()):
        if verdict.passed[position]:
            assert statuses[row].is_success
        else:
            assert verdict.reject(row) == statuses[row]

    # AddPod / RemovePod against PreFilter with the extra pod present.
    _, _, with_extra, status = _pre_filter(nodes, [*existing, extra], incoming, True)
    node_info = snapshot.get(extra.node_name)
    cloned = fast_state.clone()
    counts = cloned.read(PRE_FILTER_STATE_KEY)
    assert plugin.add_pod(cloned, incoming, extra, node_info).is_success
    if status.is_success:
        assert counts.same_counts(with_extra.read(PRE_FILTER_STATE_KEY))
    assert plugin.remove_pod(cloned, incoming, extra, node_info).is_success
    assert counts.same_counts(fast_counts)
    # The clone was independent of the original state.
    assert fast_state.read(PRE_FILTER_STATE_KEY) is fast_counts


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.integers(0, 3), st.booleans())
def test_pre_score_and_score_paths_agree(
    cluster: tuple[list[NodeView], list[PodView], PodView, PodView],
    hard_weight: int,
    ignore_preferred: bool,
) -> None:
    nodes, existing, incoming, _ = cluster
    args = InterPodAffinityArgs(hard_weight, ignore_preferred)
    snapshot = make_snapshot(nodes, existing)
    lister = make_list_snapshot(nodes, existing)
    fast_plugin, ref_plugin = _plugin(snapshot, args), _plugin(lister, args)
    fast_state, ref_state = CycleState(), CycleState()
    fast_status = fast_plugin.pre_score(fast_state, incoming, snapshot.node_info_list)
    ref_status = ref_plugin.pre_score(ref_state, incoming, lister.list())
    assert fast_status == ref_status
    if not fast_status.is_success:
        return
    # Score over rows and its normalization first, while the fast state holds arrays only.
    table = snapshot.node_table()
    rows = np.arange(len(table), dtype=np.intp)
    by_rows = fast_plugin.score_rows(fast_state, incoming, table, rows)
    assert by_rows is not None
    normalized_rows = fast_plugin.normalize_rows(fast_state, incoming, by_rows).tolist()
    fast_scores = fast_state.read(PRE_SCORE_STATE_KEY).topology_score
    assert fast_scores == ref_state.read(PRE_SCORE_STATE_KEY).topology_score

    raw: list[int] = []
    for info in snapshot.node_info_list:
        value, status = fast_plugin.score(fast_state, incoming, info)
        assert status.is_success
        ref_value, _ = ref_plugin.score(ref_state, incoming, lister.get(info.node_name))
        assert value == ref_value
        raw.append(value)
    assert by_rows.tolist() == raw
    scores = [
        NodeScore(info.node_name, value) for info, value in zip(table.infos, raw, strict=True)
    ]
    assert fast_plugin.normalize_score(fast_state, incoming, scores).is_success
    normalized = [s.score for s in scores]
    assert all(0 <= s <= 100 for s in normalized)
    assert normalized_rows == normalized
