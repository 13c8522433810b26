"""NodeName and NodePorts, ported from upstream's
pkg/scheduler/framework/plugins/nodename/node_name_test.go and
pkg/scheduler/framework/plugins/nodeports/node_ports_test.go (inputs and expected statuses)."""

from __future__ import annotations

from typing import Any

import pytest
from row_answers import filter_rows_of

from scheduler.api.objects import NodeView, PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.framework.events import ActionType, EventResource, QueueingHint
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code, Status
from scheduler.plugins.nodename import ERR_REASON as NODE_NAME_REASON
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.nodeports import ERR_REASON as PORTS_REASON
from scheduler.plugins.nodeports import NodePorts
from scheduler.testing import MakePod, make_node


def pod(node_name: str = "", *ports: str, uid: str = "uid-p", nominated: str = "") -> PodView:
    """A pod with one container using host ports given as "PROTO/IP/PORT" (upstream's newPod)."""
    container_ports = []
    for text in ports:
        protocol, ip, number = text.split("/")
        container_ports.append({"protocol": protocol, "hostIP": ip, "hostPort": int(number)})
    built = MakePod(f"pod-{uid}", "default").uid(uid).container(ports=container_ports)
    if node_name:
        built.node(node_name)
    if nominated:
        built.nominated(nominated)
    return built.obj()


def node(name: str) -> NodeView:
    return make_node(name)


def info_with(*pods: PodView, name: str = "m1") -> NodeInfo:
    return NodeInfo(node(name), pods)


# --- NodeName (node_name_test.go) ---

NODE_NAME_CASES = [
    ("no host specified", "", "foo", None),
    ("host matches", "foo", "foo", None),
    ("host doesn't match", "bar", "foo", Status.unresolvable(NODE_NAME_REASON)),
]


@pytest.mark.parametrize(
    ("name", "pod_node", "node_name", "want"), NODE_NAME_CASES, ids=[c[0] for c in NODE_NAME_CASES]
)
def test_node_name_filter(name: str, pod_node: str, node_name: str, want: Status | None) -> None:
    plugin = NodeName()
    the_pod = pod(pod_node)
    info = NodeInfo(node(node_name))
    got = plugin.filter(CycleState(), the_pod, info)
    assert got == (want or Status.OK)
    assert got.code == (want.code if want else Code.SUCCESS)
    assert filter_rows_of(plugin, CycleState(), the_pod, [info]) == [want]


def test_node_name_filter_without_node_is_an_error() -> None:
    assert NodeName().filter(CycleState(), pod("x"), NodeInfo()).code == Code.ERROR


@pytest.mark.parametrize(
    ("pod_node", "added", "want"),
    [
        ("", "n1", QueueingHint.QUEUE),
        ("n1", "n1", QueueingHint.QUEUE),
        ("n1", "n2", QueueingHint.SKIP),
    ],
)
def test_node_name_hint(pod_node: str, added: str, want: QueueingHint) -> None:
    (registered,) = NodeName().events_to_register()
    assert registered.event.resource == EventResource.NODE
    assert registered.event.action == ActionType.ADD
    assert registered.hint is not None
    assert registered.hint(pod(pod_node), None, node(added)) == want


# --- NodePorts (node_ports_test.go TestNodePorts) ---

UNSCHED = Status.unschedulable(PORTS_REASON)
PORT_CASES: list[tuple[str, tuple[str, ...], tuple[str, ...], Status | None]] = [
    ("other port", ("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/9090",), None),
    ("same udp port", ("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/8080",), UNSCHED),
    ("same tcp port", ("TCP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), UNSCHED),
    ("different host ip", ("TCP/127.0.0.1/8080",), ("TCP/127.0.0.2/8080",), None),
    ("different protocol", ("UDP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), None),
    (
        "second udp port conflict",
        ("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        ("UDP/127.0.0.1/8080",),
        UNSCHED,
    ),
    (
        "first tcp port conflict",
        ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"),
        UNSCHED,
    ),
    (
        "first tcp port conflict due to 0.0.0.0 hostIP",
        ("TCP/0.0.0.0/8001",),
        ("TCP/127.0.0.1/8001",),
        UNSCHED,
    ),
    (
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        ("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        ("TCP/127.0.0.1/8001",),
        UNSCHED,
    ),
    (
        "second tcp port conflict to 0.0.0.0 hostIP",
        ("TCP/127.0.0.1/8001",),
        ("TCP/0.0.0.0/8001",),
        UNSCHED,
    ),
    ("second different protocol", ("UDP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), None),
    (
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        ("UDP/127.0.0.1/8001",),
        ("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"),
        UNSCHED,
    ),
]


@pytest.mark.parametrize(
    ("name", "wanted", "existing", "want"), PORT_CASES, ids=[c[0] for c in PORT_CASES]
)
def test_node_ports_filter(
    name: str, wanted: tuple[str, ...], existing: tuple[str, ...], want: Status | None
) -> None:
    plugin = NodePorts()
    the_pod = pod("m1", *wanted)
    info = info_with(pod("m1", *existing, uid="existing"))
    state = CycleState()
    result, pre_status = plugin.pre_filter(state, the_pod, [info])
    assert result is None and pre_status.is_success
    got = plugin.filter(state, the_pod, info)
    assert got == (want or Status.OK)
    assert filter_rows_of(plugin, state, the_pod, [info]) == [want]


def test_node_ports_skips_pods_without_host_ports() -> None:
    # "skip filter": a pod with no ports makes PreFilter answer Skip.
    result, status = NodePorts().pre_filter(CycleState(), pod(), [])
    assert result is None and status.code == Code.SKIP


def test_node_ports_filter_without_prefilter_is_an_error() -> None:
    status = NodePorts().filter(CycleState(), pod("", "TCP/0.0.0.0/80"), info_with())
    assert status.code == Code.ERROR
    assert status.message == 'reading "PreFilterNodePorts" from cycleState: not found'


def test_node_ports_events() -> None:
    pod_event, node_event = NodePorts().events_to_register()
    assert (pod_event.event.resource, pod_event.event.action) == (
        EventResource.POD,
        ActionType.DELETE,
    )
    assert (node_event.event.resource, node_event.event.action) == (
        EventResource.NODE,
        ActionType.ADD,
    )
    assert node_event.hint is None


# Test_isSchedulableAfterPodDeleted (podWithHostPort: host port 8080, TCP, any address).
HINT_CASES: list[tuple[str, Any, QueueingHint]] = [
    ("backoff-wrong-old-object", "not-a-pod", QueueingHint.QUEUE),
    ("skip-queue-on-unscheduled", pod("", uid="old"), QueueingHint.SKIP),
    ("skip-queue-on-non-hostport", pod("fake-node", uid="old"), QueueingHint.SKIP),
    (
        "skip-queue-on-unrelated-hostport",
        pod("fake-node", "TCP//8081", uid="old"),
        QueueingHint.SKIP,
    ),
    ("queue-on-released-hostport", pod("fake-node", "TCP//8080", uid="old"), QueueingHint.QUEUE),
    (
        "queue-on-nominated-pod-releasing-hostport",
        pod("", "TCP//8080", uid="old", nominated="n1"),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(("name", "old", "want"), HINT_CASES, ids=[c[0] for c in HINT_CASES])
def test_node_ports_pod_deleted_hint(name: str, old: Any, want: QueueingHint) -> None:
    pod_event, _ = NodePorts().events_to_register()
    assert pod_event.hint is not None
    assert pod_event.hint(pod("", "TCP//8080"), old, None) == want
