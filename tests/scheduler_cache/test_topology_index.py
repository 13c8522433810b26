"""The NodeTable's matching-pod counts and topology columns (scheduler/cache/topology_index.py)
against a direct count over every pod, through incremental row refreshes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from apimachinery.labels import LabelSelector
from scheduler.api.objects import NodeView, PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.node_table import NodeTable

NAMESPACES = ("a", "b")
LABELS = st.dictionaries(st.sampled_from(("app", "tier")), st.sampled_from(("x", "y")), max_size=2)


def node(name: str, zone: str | None) -> NodeView:
    labels = {"zone": zone} if zone is not None else {}
    return NodeView.from_dict({"metadata": {"name": name, "labels": labels}})


def pod(uid: int, namespace: str, labels: dict[str, str], terminating: bool) -> PodView:
    meta: dict[str, Any] = {"name": f"p{uid}", "namespace": namespace, "uid": f"u{uid}"}
    meta["labels"] = labels
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return PodView.from_dict({"metadata": meta, "spec": {"containers": [], "nodeName": "n"}})


POD = st.tuples(st.sampled_from(NAMESPACES), LABELS, st.booleans())
SELECTOR = st.one_of(
    st.just(LabelSelector.nothing()),
    LABELS.map(lambda labels: LabelSelector.from_dict({"matchLabels": labels})),
)


def brute_counts(
    infos: list[NodeInfo], namespaces: frozenset[str] | None, selector: LabelSelector, term: bool
) -> list[int]:
    return [
        sum(
            1
            for p in info.pods
            if (term or p.deletion_timestamp is None)
            and (namespaces is None or p.namespace in namespaces)
            and selector.matches(p.labels)
        )
        for info in infos
    ]


@settings(max_examples=60, deadline=None)
@given(
    zones=st.lists(st.sampled_from(("z1", "z2", None)), min_size=1, max_size=5),
    placements=st.lists(st.tuples(st.integers(0, 4), POD), max_size=12),
    removals=st.lists(st.integers(0, 11), max_size=4),
    selector=SELECTOR,
    namespaces=st.sampled_from((None, frozenset({"a"}), frozenset({"a", "b"}))),
    include_terminating=st.booleans(),
)
def test_counts_match_a_direct_count_through_refreshes(
    zones: list[str | None],
    placements: list[tuple[int, tuple[str, dict[str, str], bool]]],
    removals: list[int],
    selector: LabelSelector,
    namespaces: frozenset[str] | None,
    include_terminating: bool,
) -> None:
    infos = [NodeInfo(node(f"n{i}", zone)) for i, zone in enumerate(zones)]
    table = NodeTable(infos)
    groups = table.pod_groups()  # built before the pods arrive: refreshes must keep it right
    column = table.topology("zone")
    placed: list[tuple[int, PodView]] = []
    for uid, (row, (namespace, labels, terminating)) in enumerate(placements):
        row %= len(infos)
        view = pod(uid, namespace, labels, terminating)
        infos[row].add_pod(view)
        placed.append((row, view))
        table.refresh([infos[row].node_name])
    for index in removals:
        if index < len(placed):
            row, view = placed[index]
            if any(p.uid == view.uid for p in infos[row].pods):
                infos[row].remove_pod(view)
                table.refresh([infos[row].node_name])
    counts = groups.counts(namespaces, selector, include_terminating=include_terminating)
    want = brute_counts(infos, namespaces, selector, include_terminating)
    assert counts.tolist() == want
    # a fresh table agrees with the incrementally kept one
    fresh = NodeTable(infos).pod_groups()
    assert (
        fresh.counts(namespaces, selector, include_terminating=include_terminating).tolist() == want
    )
    # per-zone sums
    per_zone: dict[str, int] = {}
    for info, count in zip(infos, want, strict=True):
        zone = info.node.labels.get("zone") if info.node else None
        if zone is not None:
            per_zone[zone] = per_zone.get(zone, 0) + count
    sums = column.sums(counts)
    assert {
        column.values[i]: int(v) for i, v in enumerate(sums) if column.values[i] in per_zone
    } == per_zone


def test_topology_column_follows_label_changes() -> None:
    info = NodeInfo(node("n0", "z1"))
    table = NodeTable([info, NodeInfo(node("n1", None))])
    column = table.topology("zone")
    assert column.ids.tolist() == [0, -1]
    info.set_node(node("n0", "z2"))
    table.refresh(["n0"])
    assert [column.values[i] for i in column.ids.tolist() if i >= 0] == ["z2"]


def _anti_affinity_pod(uid: int, key: str, weight: int | None) -> PodView:
    term = {"topologyKey": key, "labelSelector": {"matchLabels": {"app": "x"}}}
    section: dict[str, Any]
    if weight is None:
        section = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    else:
        preferred = [{"weight": weight, "podAffinityTerm": term}]
        section = {"preferredDuringSchedulingIgnoredDuringExecution": preferred}
    spec = {"containers": [], "nodeName": "n", "affinity": {"podAntiAffinity": section}}
    return PodView.from_dict({"metadata": {"name": f"p{uid}", "uid": f"u{uid}"}, "spec": spec})


@settings(max_examples=40, deadline=None)
@given(
    placements=st.lists(
        st.tuples(
            st.integers(0, 2), st.sampled_from(("zone", "host")), st.sampled_from((None, 1, 5))
        ),
        max_size=10,
    ),
    removals=st.lists(st.integers(0, 9), max_size=4),
)
def test_term_groups_count_each_distinct_term_per_row_through_refreshes(
    placements: list[tuple[int, str, int | None]], removals: list[int]
) -> None:
    from scheduler.cache.topology_index import PREFERRED_ANTI_AFFINITY, REQUIRED_ANTI_AFFINITY

    infos = [NodeInfo(node(f"n{i}", "z")) for i in range(3)]
    table = NodeTable(infos)
    groups = table.term_groups()
    placed = []
    for uid, (row, key, weight) in enumerate(placements):
        view = _anti_affinity_pod(uid, key, weight)
        infos[row].add_pod(view)
        placed.append((row, view))
        table.refresh([infos[row].node_name])
    for index in sorted(set(removals), reverse=True):
        if index < len(placed):
            row, view = placed.pop(index)
            infos[row].remove_pod(view)
            table.refresh([infos[row].node_name])

    def want(kind_required: bool) -> dict[tuple[str, int], list[int]]:
        out: dict[tuple[str, int], list[int]] = {}
        for row, view in placed:
            info = view.pod_affinity
            terms = (
                [(t, 0) for t in info.required_anti_affinity]
                if kind_required
                else [(w.term, w.weight) for w in info.preferred_anti_affinity]
            )
            for term, weight in terms:
                out.setdefault((term.topology_key, weight), [0, 0, 0])[row] += 1
        return out

    for kind, required in ((REQUIRED_ANTI_AFFINITY, True), (PREFERRED_ANTI_AFFINITY, False)):
        got = {
            (term.topology_key, weight): per_row.tolist()
            for term, weight, per_row in groups.of_kind(kind)
        }
        assert got == want(required)
