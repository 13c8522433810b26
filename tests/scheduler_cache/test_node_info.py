"""NodeInfo bookkeeping; cases after upstream's framework/types_test.go (TestNewNodeInfo,
TestNodeInfoAddPod, TestNodeInfoRemovePod) and host port conflict rules (HostPortInfo tests)."""

from __future__ import annotations

import pytest
from cache_builders import make_node, make_pod

from scheduler.api.objects import HostPort, Resource
from scheduler.cache.node_info import Generations, NodeInfo, UsedPorts

ANTI = {
    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "x"}]}
}
AFFINITY = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}


def test_add_and_remove_pods() -> None:
    generations = Generations()
    info = NodeInfo(make_node("n1"), generations=generations)
    assert info.allocatable == Resource(4000, 8 * 2**30, 0, 110)
    p1 = make_pod("1", "n1", cpu="500m", memory="1Gi", host_ports=(80,), claims=("c1",))
    p2 = make_pod("2", "n1", cpu=None, claims=("c1", "c2"), affinity=ANTI)
    p3 = make_pod("3", "n1", affinity=AFFINITY)
    before = info.generation
    for pod in (p1, p2, p3):
        info.add_pod(pod)
    assert info.generation > before and info.generation == generations.current
    assert info.requested == Resource(600, 2**30)
    # p2 has no cpu request: 100m by default for scoring; memory defaults for p1? no, 1Gi given.
    assert info.non_zero_requested == Resource(700, 2**30 + 2 * 200 * 2**20)
    assert info.used_ports.as_set() == {("0.0.0.0", "TCP", 80)}
    assert info.pvc_ref_counts == {"ns/c1": 2, "ns/c2": 1}
    assert [p.uid for p in info.pods_with_affinity] == ["2", "3"]
    assert [p.uid for p in info.pods_with_required_anti_affinity] == ["2"]

    info.remove_pod(p1)
    info.remove_pod(p2)
    assert [p.uid for p in info.pods] == ["3"]
    assert info.requested == Resource(100)
    assert info.non_zero_requested == Resource(100, 200 * 2**20)
    assert len(info.used_ports) == 0
    assert info.pvc_ref_counts == {}
    assert [p.uid for p in info.pods_with_affinity] == ["3"]
    assert info.pods_with_required_anti_affinity == []
    with pytest.raises(KeyError):
        info.remove_pod(p1)


def test_remove_uses_the_stored_version() -> None:
    info = NodeInfo(make_node("n1"))
    info.add_pod(make_pod("1", "n1", cpu="1"))
    info.remove_pod(make_pod("1", "n1", cpu="2", version="2"))
    assert info.requested == Resource()


def test_snapshot_is_independent() -> None:
    info = NodeInfo(make_node("n1"), [make_pod("1", "n1", host_ports=(80,))])
    copy = info.snapshot()
    copy.add_pod(make_pod("2", "n1", host_ports=(81,)))
    copy.remove_pod(make_pod("1", "n1"))
    assert [p.uid for p in info.pods] == ["1"]
    assert info.requested == Resource(100)
    assert info.used_ports.as_set() == {("0.0.0.0", "TCP", 80)}
    assert copy.used_ports.as_set() == {("0.0.0.0", "TCP", 81)}


@pytest.mark.parametrize(
    ("existing", "wanted", "conflict"),
    [
        ([], [HostPort("0.0.0.0", "TCP", 80)], False),
        ([HostPort("0.0.0.0", "TCP", 80)], [HostPort("0.0.0.0", "TCP", 80)], True),
        ([HostPort("0.0.0.0", "TCP", 80)], [HostPort("127.0.0.1", "TCP", 80)], True),
        ([HostPort("127.0.0.1", "TCP", 80)], [HostPort("0.0.0.0", "TCP", 80)], True),
        ([HostPort("127.0.0.1", "TCP", 80)], [HostPort("127.0.0.2", "TCP", 80)], False),
        ([HostPort("127.0.0.1", "TCP", 80)], [HostPort("127.0.0.1", "UDP", 80)], False),
        ([HostPort("127.0.0.1", "TCP", 80)], [HostPort("127.0.0.1", "TCP", 81)], False),
        ([HostPort("", "", 80)], [HostPort("10.0.0.1", "TCP", 80)], True),  # defaults
        ([HostPort("0.0.0.0", "TCP", 80)], [HostPort("0.0.0.0", "TCP", 0)], False),
        (
            [HostPort("127.0.0.1", "TCP", 80), HostPort("127.0.0.1", "UDP", 53)],
            [HostPort("127.0.0.2", "TCP", 80), HostPort("0.0.0.0", "UDP", 53)],
            True,
        ),
    ],
)
def test_ports_conflict(existing: list[HostPort], wanted: list[HostPort], conflict: bool) -> None:
    info = NodeInfo(make_node("n1"))
    for port in existing:
        info.used_ports.add(port)
    assert info.ports_conflict(wanted) is conflict


def test_used_ports_count_users() -> None:
    ports = UsedPorts()
    port = HostPort("0.0.0.0", "TCP", 80)
    ports.add(port)
    ports.add(port)
    ports.remove(port)
    assert ports.conflicts(port)
    ports.remove(port)
    assert not ports.conflicts(port)


def test_node_removal_keeps_pods() -> None:
    info = NodeInfo(make_node("n1"), [make_pod("1", "n1")])
    info.remove_node()
    assert info.node is None and info.node_name == ""
    assert [p.uid for p in info.pods] == ["1"]


def test_removal_keeps_the_order_of_the_other_pods() -> None:
    """Pods are kept by uid (issue 22: no walk of the node's pods per removal); `pods` keeps
    the order pods were added in, as the list did, and a re-added pod goes last."""
    pods = [make_pod(f"p{i}") for i in range(6)]
    info = NodeInfo(make_node("n"), pods)
    snapshot = info.snapshot()
    info.remove_pod(pods[2])
    info.remove_pod(pods[0])
    assert info.num_pods == 4
    assert [p.uid for p in info.pods] == ["p1", "p3", "p4", "p5"]
    info.add_pod(pods[0])
    assert [p.uid for p in info.pods] == ["p1", "p3", "p4", "p5", "p0"]
    assert [p.uid for p in snapshot.pods] == [f"p{i}" for i in range(6)]  # a copy
    snapshot.remove_pod(pods[5])  # a copy can change too, without touching the cache's
    assert snapshot.num_pods == 5 and info.num_pods == 5
    assert [p.uid for p in info.pods] == ["p1", "p3", "p4", "p5", "p0"]
    with pytest.raises(KeyError):
        info.remove_pod(pods[2])
    with pytest.raises(ValueError, match="already on node"):
        info.add_pod(pods[1])
