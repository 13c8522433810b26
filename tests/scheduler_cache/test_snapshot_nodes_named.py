"""Property: the nodes a PreFilterResult names, looked up by name in the snapshot, are exactly
the nodes a walk over the snapshot's list keeps, in the same order (the order Filter visits
them, so scheduling decisions depend on it), as nodes come and go across zones."""

from __future__ import annotations

from cache_builders import make_node
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cache.cache import Cache
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.snapshot import Snapshot, nodes_named

NAMES = [f"n{i}" for i in range(12)]

step = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(NAMES), st.sampled_from([None, "z1", "z2", "z3"])),
    st.tuples(st.just("remove"), st.sampled_from(NAMES), st.none()),
    st.tuples(st.just("lookup"), st.frozensets(st.sampled_from([*NAMES, "absent"])), st.none()),
)


def walk(snapshot: Snapshot, names: frozenset[str]) -> list[NodeInfo]:
    """What the scheduling cycle did before: keep every listed node whose name is wanted."""
    return [info for info in snapshot.list() if info.node_name in names]


@settings(max_examples=200, deadline=None)
@given(st.lists(step, max_size=40))
def test_lookup_by_name_equals_walk_in_snapshot_order(steps: list[tuple]) -> None:
    cache = Cache()
    snapshot = Snapshot()
    present: set[str] = set()
    for kind, arg, zone in steps:
        if kind == "add":
            if arg in present:
                continue
            cache.add_node(make_node(arg, zone=zone))
            present.add(arg)
        elif kind == "remove":
            if arg not in present:
                continue
            cache.remove_node(make_node(arg))
            present.discard(arg)
        else:
            cache.update_snapshot(snapshot)
            got = nodes_named(snapshot, arg)
            assert got == walk(snapshot, arg)
            assert all(a is b for a, b in zip(got, walk(snapshot, arg), strict=True))


def test_a_swapped_node_list_is_indexed_again() -> None:
    """What-if and gang placement assign a narrower list for a while, then restore it."""
    snapshot = Snapshot.from_node_infos(NodeInfo(make_node(n)) for n in NAMES)
    full = snapshot.node_info_list
    assert [i.node_name for i in nodes_named(snapshot, {"n3", "n1"})] == ["n1", "n3"]
    snapshot.node_info_list = [full[5], full[1], full[3]]
    assert [i.node_name for i in nodes_named(snapshot, {"n3", "n5", "n7"})] == ["n5", "n3"]
    snapshot.node_info_list = full
    assert [i.node_name for i in nodes_named(snapshot, {"n7", "n5"})] == ["n5", "n7"]


def test_a_plain_lister_is_walked() -> None:
    class Lister:
        def __init__(self, infos: list[NodeInfo]) -> None:
            self.infos = infos

        def list(self) -> list[NodeInfo]:
            return self.infos

    infos = [NodeInfo(make_node(n)) for n in ("b", "a", "c")]
    assert [i.node_name for i in nodes_named(Lister(infos), {"c", "b"})] == ["b", "c"]
