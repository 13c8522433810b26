"""NodeInfo's shared pod log (issue 22) against plain lists: every NodeInfo, the cache's and
the copies snapshots and preemption take, sees the pods a list copied at the same moment would,
in the same order and the same versions, whatever is added, removed, swapped for a newer
version (replace_pod), copied and compacted afterwards."""

from __future__ import annotations

from typing import Any

from cache_builders import make_node, make_pod
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cache.node_info import NodeInfo

UIDS = [f"u{i}" for i in range(12)]

op = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 3), st.sampled_from(UIDS)),
    st.tuples(st.just("remove"), st.integers(0, 3), st.sampled_from(UIDS)),
    st.tuples(st.just("replace"), st.integers(0, 3), st.sampled_from(UIDS)),
    st.tuples(st.just("copy"), st.integers(0, 3), st.integers(1, 3)),
    st.tuples(st.just("read"), st.integers(0, 3), st.none()),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(op, max_size=120))
def test_every_copy_sees_the_pods_a_list_copy_would(ops: list[tuple[Any, ...]]) -> None:
    cache_side = NodeInfo(make_node("n"))
    infos: dict[int, NodeInfo] = {0: cache_side}
    models: dict[int, list[tuple[str, str]]] = {0: []}  # (uid, resourceVersion) in order
    pods = {uid: make_pod(uid, "n") for uid in UIDS}

    def seen(info: NodeInfo) -> list[tuple[str, str]]:
        return [(p.uid, p.resource_version) for p in info.pods]

    for step, (kind, which, arg) in enumerate(ops):
        info = infos.get(which)
        if info is None:
            continue
        model = models[which]
        held = next((entry for entry in model if entry[0] == arg), None)
        if kind == "add" and held is None:
            info.add_pod(pods[arg])
            model.append((arg, pods[arg].resource_version))
        elif kind == "remove" and held is not None:
            info.remove_pod(pods[arg])
            model.remove(held)
        elif kind == "replace" and held is not None:
            newer = pods[arg] = make_pod(arg, "n", version=f"v{step}")
            assert info.replace_pod(newer)
            model.remove(held)
            model.append((arg, newer.resource_version))  # where remove + add would put it
        elif kind == "copy":
            target = infos.get(arg)
            if target is None or arg == which:
                target = infos[arg] = NodeInfo.__new__(NodeInfo)
            info.copy_into(target)
            models[arg] = list(model)
        elif kind == "read":
            assert seen(info) == model
        for index, other in infos.items():
            assert other.num_pods == len(models[index])
    for index, info in infos.items():
        assert seen(info) == models[index]
        assert info.requested.milli_cpu == 100 * len(models[index])


def test_a_view_counting_differently_is_not_swapped_in() -> None:
    info = NodeInfo(make_node("n"))
    info.add_pod(make_pod("a", "n", cpu="100m"))
    generation = info.generation
    for other in (
        make_pod("a", "n", cpu="200m", version="2"),
        make_pod("a", "n", host_ports=(80,), version="2"),
        make_pod("a", "n", claims=("c",), version="2"),
        make_pod("a", "n", affinity={"podAffinity": {}}, version="2"),
        make_pod("a", "other", version="2"),
        make_pod("b", "n"),
    ):
        assert not info.replace_pod(other)
    assert info.generation == generation
    assert [(p.uid, p.resource_version) for p in info.pods] == [("a", "1")]


def test_the_log_is_compacted_and_old_copies_keep_theirs() -> None:
    info = NodeInfo(make_node("n"))
    pods = [make_pod(f"p{i}", "n") for i in range(200)]
    for pod in pods:
        info.add_pod(pod)
    before = info.snapshot()
    for pod in pods[:150]:
        info.remove_pod(pod)
        info.add_pod(pod)  # removed and added again, as a binding's confirmation does
    for pod in pods[:190]:
        info.remove_pod(pod)
    assert info._log_len - info.num_pods <= info.num_pods // 16  # compacted on the way
    assert [p.uid for p in info.pods] == [f"p{i}" for i in range(190, 200)]
    assert [p.uid for p in before.pods] == [f"p{i}" for i in range(200)]


def test_a_node_with_few_pods_keeps_no_removed_view() -> None:
    """A removed view is garbage once no copy holds the old log (5000 nodes of a few pods each
    must not keep their pods' earlier views)."""
    info = NodeInfo(make_node("n"))
    first, second = make_pod("a", "n"), make_pod("a", "n", version="2")
    info.add_pod(first)
    info.add_pod(make_pod("b", "n"))
    info.remove_pod(first)
    info.add_pod(second)
    assert first not in info._log_pods and info._log_len == info.num_pods == 2
