"""Property: any interleaving of node / pod events, assume / finish / forget and snapshot
updates leaves the cache, and a snapshot updated incrementally along the way (and its NodeTable),
equal to a recomputation from scratch over the final set of objects.

Status updates of bound pods (a new view sharing the spec with the previous one, as the pod
informer parses them) take the cache's swap-in-place path; the table kept along the way must
still match one built afresh."""

from __future__ import annotations

from collections import Counter
from typing import Any

from cache_builders import make_node, make_pod, state_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.api.objects import NodeView, PodView
from scheduler.cache.cache import Cache, CacheError
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.node_table import NodeTable
from scheduler.cache.snapshot import Snapshot

NODES = ["n0", "n1", "n2", "n3"]
PODS = ["p0", "p1", "p2", "p3", "p4", "p5"]
ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{}]}}
AFFINITY = {"podAffinity": {}}
IMAGES = {"a:latest": 10, "b:latest": 20, "c:latest": 30}

node_variant = st.tuples(
    # a capacity past the table's exact limit (2**52 millicores) sends cycles per node
    st.sampled_from(["2", "4", "5000000000000"]),
    st.sampled_from([None, "z1", "z2"]),
    st.frozensets(st.sampled_from(sorted(IMAGES)), max_size=2),
)
pod_variant = st.tuples(
    st.sampled_from(["100m", "1", None]),
    st.sampled_from([(), (80,), (80, 443)]),
    st.sampled_from([(), ("c1",), ("c1", "c2")]),
    st.sampled_from([None, ANTI, AFFINITY]),
    st.sampled_from(["Running", "Running", "Succeeded"]),
)

operation = st.one_of(
    st.tuples(st.just("add_node"), st.sampled_from(NODES), node_variant),
    st.tuples(st.just("remove_node"), st.sampled_from(NODES)),
    st.tuples(st.just("add_pod"), st.sampled_from(PODS), st.sampled_from(NODES), pod_variant),
    st.tuples(st.just("remove_pod"), st.sampled_from(PODS)),
    st.tuples(st.just("status_update"), st.sampled_from(PODS)),
    st.tuples(st.just("assume"), st.sampled_from(PODS), st.sampled_from(NODES), pod_variant),
    st.tuples(st.just("finish"), st.sampled_from(PODS)),
    st.tuples(st.just("forget"), st.sampled_from(PODS)),
    st.tuples(st.just("snapshot")),
)


def build_node(
    name: str, variant: tuple[str, str | None, frozenset[str]], version: int
) -> NodeView:
    cpu, zone, images = variant
    return make_node(
        name, cpu=cpu, zone=zone, images={i: IMAGES[i] for i in images}, version=str(version)
    )


def build_pod(uid: str, node: str, variant: tuple[Any, ...], version: int) -> PodView:
    cpu, ports, claims, affinity, phase = variant
    return make_pod(
        uid,
        node,
        cpu=cpu,
        host_ports=ports,
        claims=claims,
        affinity=affinity,
        phase=phase,
        version=str(version),
    )


class Model:
    """The final set of objects, kept the simplest way."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeView] = {}
        self.pods: dict[str, PodView] = {}
        self.assumed: set[str] = set()

    def expected_node_infos(self) -> dict[str, NodeInfo]:
        infos: dict[str, NodeInfo] = {name: NodeInfo(node) for name, node in self.nodes.items()}
        for pod in self.pods.values():
            infos.setdefault(pod.node_name, NodeInfo()).add_pod(pod)
        return infos

    def image_counts(self) -> Counter[str]:
        return Counter(
            name for node in self.nodes.values() for image in node.images for name in image.names
        )


def add_bound_pod(cache: Cache, model: Model, pod: PodView) -> None:
    cache.add_pod(pod)
    model.assumed.discard(pod.uid)
    if pod.is_terminal:
        model.pods.pop(pod.uid, None)
    else:
        model.pods[pod.uid] = pod


def apply(cache: Cache, model: Model, op: tuple[Any, ...], version: int) -> None:
    kind = op[0]
    if kind == "add_node":
        node = build_node(op[1], op[2], version)
        cache.add_node(node)
        model.nodes[node.name] = node
    elif kind == "remove_node":
        assert cache.remove_node(op[1]) == (op[1] in model.nodes)
        model.nodes.pop(op[1], None)
    elif kind == "add_pod":
        add_bound_pod(cache, model, build_pod(op[1], op[2], op[3], version))
    elif kind == "status_update":  # the watch's next version: only the status changed
        old = model.pods.get(op[1])
        if old is None or not old.node_name:
            return
        meta = {**old.raw["metadata"], "resourceVersion": str(version)}
        status = {**old.raw.get("status", {}), "startTime": f"2026-01-01T00:00:{version % 60:02}Z"}
        pod = PodView.from_dict({**old.raw, "metadata": meta, "status": status}, previous=old)
        add_bound_pod(cache, model, pod)
    elif kind == "remove_pod":
        assert cache.remove_pod(make_pod(op[1])) == (op[1] in model.pods)
        model.pods.pop(op[1], None)
        model.assumed.discard(op[1])
    elif kind == "assume":
        pod = build_pod(op[1], op[2], op[3], version)
        if pod.uid in model.pods:
            try:
                cache.assume_pod(pod)
            except CacheError:
                return
            raise AssertionError("assuming a cached pod must fail")
        cache.assume_pod(pod)
        model.pods[pod.uid] = pod
        model.assumed.add(pod.uid)
    elif kind == "finish":
        if op[1] in model.pods:
            cache.finish_binding(model.pods[op[1]])
    elif kind == "forget":
        if op[1] in model.assumed:
            cache.forget_pod(model.pods.pop(op[1]))
            model.assumed.discard(op[1])
        elif op[1] in model.pods:
            try:
                cache.forget_pod(model.pods[op[1]])
            except CacheError:
                return
            raise AssertionError("forgetting a confirmed pod must fail")


def check_cache(cache: Cache, model: Model) -> None:
    expected = model.expected_node_infos()
    dump = cache.dump()
    assert {n: state_of(i) for n, i in dump.nodes.items()} == {
        n: state_of(i) for n, i in expected.items()
    }
    assert dump.assumed_pods == model.assumed
    assert cache.node_count() == len(model.nodes)
    assert cache.pod_count() == len(model.pods)
    assert cache.pod_count() == sum(len(info.pods) for info in dump.nodes.values())
    for uid, pod in model.pods.items():
        assert cache.get_pod(uid) == pod
        assert cache.is_assumed_pod(uid) == (uid in model.assumed)


_TABLE_COLUMNS = (
    "names", "alloc_cpu", "alloc_memory", "alloc_ephemeral", "alloc_pods", "req_cpu",
    "req_memory", "req_ephemeral", "nonzero_cpu", "nonzero_memory", "pod_count", "unschedulable",
    "no_schedule_taints", "prefer_no_schedule_taints", "used_ports", "inexact", "generation",
)  # fmt: skip


def check_table(snapshot: Snapshot) -> None:
    """The table refreshed along the way holds what one built from the snapshot now does."""
    kept, fresh = snapshot.node_table(), NodeTable(snapshot.list())
    for column in _TABLE_COLUMNS:
        assert list(getattr(kept, column)) == list(getattr(fresh, column)), column
    assert kept.image_node_counts == fresh.image_node_counts
    assert kept.exact == fresh.exact == (not fresh.inexact.any())
    for row in range(len(fresh)):
        assert kept.pod_groups()._row_groups[row] == fresh.pod_groups()._row_groups[row]
        assert kept.term_groups()._row_terms[row] == fresh.term_groups()._row_terms[row]


def check_snapshot(snapshot: Snapshot, model: Model) -> None:
    check_table(snapshot)
    expected = {n: i for n, i in model.expected_node_infos().items() if n in model.nodes}
    listed = [info.node_name for info in snapshot.list()]
    assert sorted(listed) == sorted(expected)
    assert set(snapshot.node_info_map) == set(expected)
    for name, info in expected.items():
        got = snapshot.get(name)
        assert got is not None and state_of(got) == state_of(info)
    assert {i.node_name for i in snapshot.have_pods_with_affinity_list()} == {
        n for n, i in expected.items() if i.pods_with_affinity
    }
    assert {i.node_name for i in snapshot.have_pods_with_required_anti_affinity_list()} == {
        n for n, i in expected.items() if i.pods_with_required_anti_affinity
    }
    assert snapshot.used_pvc_set == {k for i in expected.values() for k in i.pvc_ref_counts}
    counts = model.image_counts()
    for name, node in model.nodes.items():
        got = snapshot.get(name)
        assert got is not None
        assert {k: v.num_nodes for k, v in got.image_states.items()} == {
            image_name: counts[image_name] for image in node.images for image_name in image.names
        }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operation, max_size=40))
def test_cache_and_snapshot_match_recomputation(ops: list[tuple[Any, ...]]) -> None:
    cache = Cache()
    model = Model()
    snapshot = Snapshot()
    for version, op in enumerate(ops, start=1):
        if op[0] == "snapshot":
            cache.update_snapshot(snapshot)
            check_snapshot(snapshot, model)
        else:
            apply(cache, model, op, version)
    check_cache(cache, model)
    cache.update_snapshot(snapshot)
    check_snapshot(snapshot, model)
    # A fresh snapshot built in one go agrees with the incrementally updated one.
    fresh = cache.update_snapshot(Snapshot())
    assert [i.node_name for i in fresh.list()] == [i.node_name for i in snapshot.list()]


def test_a_table_is_exact_again_once_its_last_huge_node_shrinks() -> None:
    cache, snapshot = Cache(), Snapshot()
    cache.add_node(build_node("n0", ("2", None, frozenset()), 1))
    cache.add_node(build_node("n1", ("5000000000000", None, frozenset()), 2))
    cache.update_snapshot(snapshot)
    assert not snapshot.node_table().exact
    cache.update_node(
        build_node("n1", ("5000000000000", None, frozenset()), 2),
        build_node("n1", ("4", None, frozenset()), 3),
    )
    cache.update_snapshot(snapshot)
    assert snapshot.node_table().exact
    check_table(snapshot)
