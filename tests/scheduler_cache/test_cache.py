"""Cache and snapshot behaviour; scenarios after upstream's internal/cache/cache_test.go
(TestAssumePodScheduled, TestAddPodWillConfirm, TestExpirePod, TestForgetPod,
TestNodeOperators, TestSchedulerCache_UpdateSnapshot) and node_tree_test.go."""

from __future__ import annotations

import pytest
from cache_builders import make_node, make_pod

from scheduler.api.objects import Resource
from scheduler.cache.cache import Cache, CacheError
from scheduler.cache.node_info import ImageStateSummary
from scheduler.cache.node_tree import NodeTree
from scheduler.cache.snapshot import Snapshot


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def requested_cpu(cache: Cache, node: str) -> int:
    info = cache.get_node_info(node)
    assert info is not None
    return info.requested.milli_cpu


def test_assumed_pod_counts_until_confirmed() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    pod = make_pod("1", "n1", cpu="1")
    cache.assume_pod(pod)
    assert cache.is_assumed_pod(pod) and requested_cpu(cache, "n1") == 1000
    cache.finish_binding(pod)
    cache.add_pod(make_pod("1", "n1", cpu="1", version="2"))  # the watch confirms it
    assert not cache.is_assumed_pod(pod)
    assert requested_cpu(cache, "n1") == 1000 and cache.pod_count() == 1
    got = cache.get_pod("1")
    assert got is not None and got.resource_version == "2"
    with pytest.raises(CacheError, match="wasn't assumed"):
        cache.forget_pod(pod)


def test_forget_undoes_assume() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    pod = make_pod("1", "n1", cpu="1")
    cache.assume_pod(pod)
    with pytest.raises(CacheError, match="is in the cache"):
        cache.assume_pod(pod)
    with pytest.raises(CacheError, match="was assumed on n1 but assigned to n2"):
        cache.forget_pod(make_pod("1", "n2"))
    cache.forget_pod(pod)
    assert requested_cpu(cache, "n1") == 0 and cache.get_pod(pod) is None
    cache.assume_pod(pod)  # can be assumed again after forgetting


def test_assume_requires_a_node() -> None:
    with pytest.raises(CacheError):
        Cache().assume_pod(make_pod("1"))


def test_confirmation_on_another_node_moves_the_pod() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    cache.add_node(make_node("n2"))
    cache.assume_pod(make_pod("1", "n1", cpu="1"))
    cache.add_pod(make_pod("1", "n2", cpu="1"))
    assert requested_cpu(cache, "n1") == 0 and requested_cpu(cache, "n2") == 1000


@pytest.mark.parametrize(
    ("ttl", "finish", "advance", "expired"),
    [
        (None, True, 1e6, False),  # upstream default: assumed pods never expire
        (30.0, True, 10, False),
        (30.0, True, 31, True),
        (30.0, False, 1e6, False),  # binding not finished: never expires
    ],
)
def test_assumed_pod_expiry(ttl: float | None, finish: bool, advance: float, expired: bool) -> None:
    clock = FakeClock()
    cache = Cache(ttl=ttl, clock=clock)
    cache.add_node(make_node("n1"))
    pod = make_pod("1", "n1", cpu="1")
    cache.assume_pod(pod)
    if finish:
        cache.finish_binding(pod)
    clock.now += advance
    gone = cache.cleanup_expired_assumed_pods()
    assert [p.uid for p in gone] == (["1"] if expired else [])
    assert requested_cpu(cache, "n1") == (0 if expired else 1000)


def test_pods_on_unknown_nodes_wait_for_the_node() -> None:
    cache = Cache()
    cache.add_pod(make_pod("1", "later", cpu="1"))
    snapshot = cache.update_snapshot(Snapshot())
    assert snapshot.get("later") is None and len(snapshot.list()) == 0
    assert cache.node_count() == 0 and cache.pod_count() == 1
    cache.add_node(make_node("later"))
    cache.update_snapshot(snapshot)
    info = snapshot.get("later")
    assert info is not None and info.requested == Resource(1000)


def test_node_removal_keeps_pods_until_they_go() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    pod = make_pod("1", "n1", cpu="1")
    cache.add_pod(pod)
    snapshot = cache.update_snapshot(Snapshot())
    assert cache.remove_node("n1")
    assert not cache.remove_node("n1")
    cache.update_snapshot(snapshot)
    assert snapshot.get("n1") is None and snapshot.list() == []
    assert cache.get_node_info("n1") is not None
    cache.add_node(make_node("n1", version="2"))  # it comes back: the pod is still there
    cache.update_snapshot(snapshot)
    info = snapshot.get("n1")
    assert info is not None and [p.uid for p in info.pods] == ["1"]
    cache.remove_node("n1")
    cache.remove_pod(pod)
    assert cache.get_node_info("n1") is None


def test_terminal_and_unbound_pods() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    cache.add_pod(make_pod("1", "n1"))
    cache.update_pod(make_pod("1", "n1", phase="Succeeded", version="2"))
    assert cache.pod_count() == 0
    cache.add_pod(make_pod("2"))  # unbound: not the cache's business
    assert cache.pod_count() == 0
    assert not cache.remove_pod(make_pod("3", "n1"))


def test_snapshot_copies_only_changed_nodes() -> None:
    cache = Cache()
    for name in ("n1", "n2", "n3"):
        cache.add_node(make_node(name))
    snapshot = cache.update_snapshot(Snapshot())
    before = {info.node_name: (info, info.generation) for info in snapshot.list()}
    cache.add_pod(make_pod("1", "n2", cpu="1"))
    cache.update_snapshot(snapshot)
    after = {info.node_name: info for info in snapshot.list()}
    for name in ("n1", "n3"):
        assert after[name].generation == before[name][1]
    assert after["n2"] is before["n2"][0]  # same object, updated in place
    assert after["n2"].generation > before["n2"][1]
    assert after["n2"].requested == Resource(1000)
    assert snapshot.generation == after["n2"].generation
    # The snapshot does not move while the cache does.
    cache.add_pod(make_pod("2", "n2", cpu="1"))
    assert after["n2"].requested == Resource(1000)


def test_snapshot_affinity_lists_and_pvcs() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    cache.add_node(make_node("n2"))
    snapshot = cache.update_snapshot(Snapshot())
    assert snapshot.have_pods_with_affinity_list() == []
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{}]}}
    pod = make_pod("1", "n2", affinity=anti, claims=("data",))
    cache.add_pod(pod)
    cache.update_snapshot(snapshot)
    assert [i.node_name for i in snapshot.have_pods_with_affinity_list()] == ["n2"]
    assert [i.node_name for i in snapshot.have_pods_with_required_anti_affinity_list()] == ["n2"]
    assert snapshot.is_pvc_used_by_pods("ns/data")
    cache.remove_pod(pod)
    cache.update_snapshot(snapshot)
    assert snapshot.have_pods_with_affinity_list() == []
    assert snapshot.have_pods_with_required_anti_affinity_list() == []
    assert not snapshot.is_pvc_used_by_pods("ns/data")


def test_snapshot_lists_nodes_round_robin_across_zones() -> None:
    cache = Cache()
    for name, zone in [
        ("a1", "a"),
        ("a2", "a"),
        ("a3", "a"),
        ("b1", "b"),
        ("c1", "c"),
        ("b2", "b"),
    ]:
        cache.add_node(make_node(name, zone=zone))
    snapshot = cache.update_snapshot(Snapshot())
    assert [i.node_name for i in snapshot.list()] == ["a1", "b1", "c1", "a2", "b2", "a3"]
    cache.remove_node("b1")
    cache.update_snapshot(snapshot)
    assert [i.node_name for i in snapshot.list()] == ["a1", "b2", "c1", "a2", "a3"]


@pytest.mark.parametrize(
    ("adds", "expected"),
    [
        ([], []),
        ([("n1", None)], ["n1"]),
        ([("n1", "z1"), ("n2", "z1"), ("n3", "z2")], ["n1", "n3", "n2"]),
        ([("n1", "z1"), ("n1", "z2"), ("n2", "z1")], ["n1", "n2"]),  # n1 moved zones
    ],
)
def test_node_tree(adds: list[tuple[str, str | None]], expected: list[str]) -> None:
    tree = NodeTree()
    for name, zone in adds:
        tree.add(name, {"topology.kubernetes.io/zone": zone} if zone else {})
    assert tree.list() == expected


def test_image_states_count_nodes() -> None:
    cache = Cache()
    cache.add_node(make_node("n1", images={"nginx:latest": 100}))
    snapshot = cache.update_snapshot(Snapshot())
    n1 = snapshot.get("n1")
    assert n1 is not None
    assert n1.image_states == {"nginx:latest": ImageStateSummary(100, 1)}
    cache.add_node(make_node("n2", images={"nginx:latest": 100, "redis:7": 50}))
    cache.update_snapshot(snapshot)
    assert n1.image_states["nginx:latest"].num_nodes == 2  # n1 itself did not change
    n2 = snapshot.get("n2")
    assert n2 is not None and n2.image_states["redis:7"] == ImageStateSummary(50, 1)
    cache.remove_node("n2")
    cache.update_snapshot(snapshot)
    assert n1.image_states["nginx:latest"].num_nodes == 1


def test_dump() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    cache.assume_pod(make_pod("1", "n1"))
    dump = cache.dump()
    assert set(dump.nodes) == {"n1"} and dump.assumed_pods == {"1"}
    assert cache.assumed_pod_count() == 1


def test_default_snapshot() -> None:
    cache = Cache()
    cache.add_node(make_node("n1"))
    assert cache.update_snapshot() is cache.update_snapshot()
    assert [i.node_name for i in cache.update_snapshot().list()] == ["n1"]


def test_update_with_old_and_new() -> None:
    cache = Cache()
    cache.add_node(make_node("n1", cpu="2"))
    cache.update_node(make_node("n1", cpu="2"), make_node("n1", cpu="8", version="2"))
    info = cache.get_node_info("n1")
    assert info is not None and info.allocatable.milli_cpu == 8000
    old = make_pod("1", "n1", cpu="1")
    cache.add_pod(old)
    cache.update_pod(old, make_pod("1", "n1", cpu="2", version="2"))
    assert requested_cpu(cache, "n1") == 2000
    cache.update_pod(make_pod("1", "n1"), make_pod("9", "n1", cpu="3"))  # recreated: new uid
    assert requested_cpu(cache, "n1") == 3000 and cache.pod_count() == 1
