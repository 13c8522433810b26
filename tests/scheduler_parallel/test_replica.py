"""A filter worker's replica equals the scheduler's cache: the changes ReplicatedCache records,
replayed in order (from the start, or after a bootstrap taken at any point), rebuild the same
snapshot: the same nodes in the same order, the same pods (assumed ones included) on each, the
same requested resources. No process is started here; the workers run this same replay."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cache.cache import Cache, CacheError
from scheduler.cache.snapshot import Snapshot
from scheduler.parallel import replica
from scheduler.parallel.replica import ReplicatedCache
from scheduler.testing import MakePod, make_node

NODES = [f"n{i}" for i in range(6)]
ZONES = ("z1", "z2", "")


def _node(name: str, zone: str, cpu: int) -> Any:
    labels = {"topology.kubernetes.io/zone": zone} if zone else {}
    return make_node(name, {"cpu": str(cpu), "memory": "4Gi", "pods": "10"}, labels=labels)


def _pod(number: int, node: str, cpu: int, phase: str = "Running") -> Any:
    pod = MakePod().name(f"p{number}").uid(f"p{number}").namespace("default")
    return pod.container({"cpu": f"{cpu}00m"}).node(node).phase(phase).obj()


operations = st.lists(
    st.tuples(
        st.sampled_from(["add_node", "update_node", "remove_node", "add_pod", "update_pod",
                         "remove_pod", "assume", "forget", "terminal", "bootstrap"]),
        st.integers(0, len(NODES) - 1),
        st.integers(0, 7),
        st.sampled_from(ZONES),
        st.integers(1, 4),
    ),
    max_size=60,
)  # fmt: skip


def _view(cache: Cache) -> list[tuple[str, list[str], int]]:
    snapshot = cache.update_snapshot(Snapshot())
    return [
        (info.node_name, sorted(p.uid for p in info.pods), info.requested.milli_cpu)
        for info in snapshot.node_info_list
    ]


@settings(max_examples=80, deadline=None)
@given(operations)
def test_replayed_changes_rebuild_the_cache(ops: list[tuple[str, int, int, str, int]]) -> None:
    cache = ReplicatedCache()
    cache.changes = []
    from_start = Cache()
    bootstrapped: Cache | None = None
    nodes: dict[str, Any] = {}
    pods: dict[int, Any] = {}
    for op, node_index, number, zone, cpu in ops:
        name = NODES[node_index]
        try:
            if op in ("add_node", "update_node"):
                node = _node(name, zone, cpu)
                if op == "update_node" and name in nodes:
                    cache.update_node(nodes[name], node)
                else:
                    cache.add_node(node)
                nodes[name] = node
            elif op == "remove_node":
                cache.remove_node(name)
                nodes.pop(name, None)
            elif op in ("add_pod", "update_pod", "terminal"):
                pod = _pod(number, name, cpu, "Succeeded" if op == "terminal" else "Running")
                if op == "update_pod" and number in pods:
                    cache.update_pod(pods[number], pod)
                else:
                    cache.add_pod(pod)
                pods[number] = pod
            elif op == "remove_pod" and number in pods:
                cache.remove_pod(pods.pop(number))
            elif op == "assume":
                pod = _pod(number, name, cpu)
                cache.assume_pod(pod)
                pods[number] = pod
            elif op == "forget" and number in pods:
                cache.forget_pod(pods[number])
                pods.pop(number)
            elif op == "bootstrap":
                replica.apply(from_start, replica.encode(cache.changes))
                cache.changes.clear()  # a new worker's bootstrap reflects everything so far
                bootstrapped = Cache()
                changes, order = cache.bootstrap()
                replica.apply(bootstrapped, replica.encode(changes))
                assert [n for n, _, _ in _view(bootstrapped)] == order
        except CacheError:
            pass  # refused (assume twice, forget of a bound pod): nothing changed or recorded
    pending = replica.encode(cache.changes)
    replica.apply(from_start, pending)
    expected = _view(cache)
    assert _view(from_start) == expected
    if bootstrapped is not None:
        replica.apply(bootstrapped, pending)
        assert _view(bootstrapped) == expected
    assert (from_start.pod_count(), from_start.assumed_pod_count()) == (
        cache.pod_count(),
        cache.assumed_pod_count(),
    )
