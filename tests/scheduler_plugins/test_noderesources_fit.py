"""NodeResourcesFit Filter, ported from upstream's
pkg/scheduler/framework/plugins/noderesources/fit_test.go (TestEnoughRequests and friends).

Upstream's node there is makeResources(10, 20, 32, 5, 20, 5): 10 milli-CPU, 20 bytes of
memory, 32 pods, 5 of extended resource "example.com/aaa", 20 of ephemeral storage, 5 hugepages.
Since v1.36 a request over the node's allocatable is UnschedulableAndUnresolvable (no
preemption can help): the cases in UNRESOLVABLE, as upstream's wantStatus says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code, Status
from scheduler.plugins.noderesources.args import decode_node_resources_fit_args
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.testing import make_node, make_node_info, make_pod

NODE_ALLOCATABLE = {
    "cpu": "10m",
    "memory": "20",
    "pods": "32",
    "example.com/aaa": "5",
    "ephemeral-storage": "20",
    "hugepages-2Mi": "5",
}


def req(cpu: int = 0, memory: int = 0, **scalar: int) -> dict[str, str]:
    out = {}
    if cpu:
        out["cpu"] = f"{cpu}m"
    if memory:
        out["memory"] = str(memory)
    for name, amount in scalar.items():
        out[name.replace("__", "/").replace("_", "-")] = str(amount)
    return out


EXT_A = "example.com__aaa"
EXT_B = "example.com__bbb"
KUBE_EXT = "kubernetes.io__something"

CASES: list[
    tuple[
        str,
        Sequence[Mapping[str, str]],
        Sequence[Mapping[str, str]],
        Mapping[str, str],
        tuple[str, ...],
    ]
] = [
    # name, pod containers, pod init containers, existing pod requests, expected reasons
    ("no resources requested always fits", [{}], [], req(10, 20), ()),
    (
        "too many resources fails",
        [req(1, 1)],
        [],
        req(10, 20),
        ("Insufficient cpu", "Insufficient memory"),
    ),
    (
        "too many resources fails due to init container cpu",
        [req(1, 1)],
        [req(3, 1)],
        req(8, 19),
        ("Insufficient cpu",),
    ),
    (
        "too many resources fails due to highest init container cpu",
        [req(1, 1)],
        [req(3, 1), req(2, 1)],
        req(8, 19),
        ("Insufficient cpu",),
    ),
    (
        "too many resources fails due to init container memory",
        [req(1, 1)],
        [req(1, 3)],
        req(9, 19),
        ("Insufficient memory",),
    ),
    (
        "init container fits because it's the max, not sum, of containers and init containers",
        [req(1, 1)],
        [req(1, 1)],
        req(9, 19),
        (),
    ),
    ("both resources fit", [req(1, 1)], [], req(5, 5), ()),
    ("one resource memory fits", [req(2, 1)], [], req(9, 5), ("Insufficient cpu",)),
    ("one resource cpu fits", [req(1, 2)], [], req(5, 19), ("Insufficient memory",)),
    ("equal edge case", [req(5, 1)], [], req(5, 19), ()),
    ("equal edge case for init container", [req(4, 1)], [req(5, 1)], req(5, 19), ()),
    ("extended resource fits", [req(**{EXT_A: 1})], [], req(), ()),
    ("extended resource fits for init container", [req()], [req(**{EXT_A: 1})], req(), ()),
    (
        "extended resource capacity enforced",
        [req(**{EXT_A: 10})],
        [],
        req(),
        ("Insufficient example.com/aaa",),
    ),
    (
        "extended resource capacity enforced for init container",
        [req()],
        [req(**{EXT_A: 10})],
        req(),
        ("Insufficient example.com/aaa",),
    ),
    (
        "extended resource allocatable enforced",
        [req(**{EXT_A: 1})],
        [],
        req(**{EXT_A: 5}),
        ("Insufficient example.com/aaa",),
    ),
    (
        "extended resource allocatable enforced for init container",
        [req()],
        [req(**{EXT_A: 1})],
        req(**{EXT_A: 5}),
        ("Insufficient example.com/aaa",),
    ),
    (
        "extended resource allocatable enforced for multiple containers",
        [req(1, 1, **{EXT_A: 3}), req(1, 1, **{EXT_A: 3})],
        [],
        req(**{EXT_A: 2}),
        ("Insufficient example.com/aaa",),
    ),
    (
        "extended resource allocatable enforced for multiple init containers",
        [req()],
        [req(1, 1, **{EXT_A: 6}), req(1, 1, **{EXT_A: 3})],
        req(**{EXT_A: 2}),
        ("Insufficient example.com/aaa",),
    ),
    (
        "extended resource allocatable admits multiple init containers",
        [req()],
        [req(**{EXT_A: 3}), req(**{EXT_A: 2})],
        req(**{EXT_A: 2}),
        (),
    ),
    (
        "extended resource allocatable enforced for unknown resource",
        [req(**{EXT_B: 1})],
        [],
        req(),
        ("Insufficient example.com/bbb",),
    ),
    (
        "extended resource allocatable enforced for unknown resource for init container",
        [req()],
        [req(1, 1, **{EXT_B: 1})],
        req(),
        ("Insufficient example.com/bbb",),
    ),
    (
        "kubernetes.io resource capacity enforced",
        [req(**{KUBE_EXT: 10})],
        [],
        req(),
        ("Insufficient kubernetes.io/something",),
    ),
    (
        "kubernetes.io resource capacity enforced for init container",
        [req()],
        [req(1, 1, **{KUBE_EXT: 10})],
        req(),
        ("Insufficient kubernetes.io/something",),
    ),
    (
        "hugepages resource capacity enforced for init container",
        [req()],
        [req(1, 1, hugepages_2Mi=10)],
        req(hugepages_2Mi=0),
        ("Insufficient hugepages-2Mi",),
    ),
    (
        "hugepages resource capacity enforced",
        [req(hugepages_2Mi=10)],
        [],
        req(hugepages_2Mi=0),
        ("Insufficient hugepages-2Mi",),
    ),
    (
        "hugepages resource allocatable enforced for multiple containers",
        [req(hugepages_2Mi=3), req(hugepages_2Mi=3)],
        [],
        req(hugepages_2Mi=2),
        ("Insufficient hugepages-2Mi",),
    ),
]


# The cases whose request exceeds the node's allocatable (fit.go's Unresolvable).
UNRESOLVABLE = frozenset(
    {
        "extended resource capacity enforced",
        "extended resource capacity enforced for init container",
        "extended resource allocatable enforced for multiple containers",
        "extended resource allocatable enforced for multiple init containers",
        "extended resource allocatable enforced for unknown resource",
        "extended resource allocatable enforced for unknown resource for init container",
        "kubernetes.io resource capacity enforced",
        "kubernetes.io resource capacity enforced for init container",
        "hugepages resource capacity enforced",
        "hugepages resource capacity enforced for init container",
        "hugepages resource allocatable enforced for multiple containers",
    }
)


def run_filter(
    plugin: NodeResourcesFit,
    containers: Sequence[Mapping[str, str]],
    init: Sequence[Mapping[str, str]],
    existing: Mapping[str, str],
    allocatable: Mapping[str, str] = NODE_ALLOCATABLE,
) -> Status:
    pod = make_pod(containers=containers, init_containers=init)
    node_info = make_node_info(make_node("node", allocatable), [make_pod(containers=[existing])])
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, [node_info])
    assert status.is_success
    return plugin.filter(state, pod, node_info)


@pytest.mark.parametrize(("name", "containers", "init", "existing", "reasons"), CASES)
def test_enough_requests(
    name: str,
    containers: Sequence[Mapping[str, str]],
    init: Sequence[Mapping[str, str]],
    existing: Mapping[str, str],
    reasons: tuple[str, ...],
) -> None:
    status = run_filter(NodeResourcesFit(None), containers, init, existing)
    if reasons:
        want = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if name in UNRESOLVABLE else Code.UNSCHEDULABLE
        assert status.code == want
        assert status.reasons == reasons
    else:
        assert status.is_success, status


@pytest.mark.parametrize(
    ("name", "args", "containers", "reasons"),
    [
        (
            "skip checking ignored extended resource",
            {"ignoredResources": ["example.com/bbb"]},
            [req(1, 1, **{EXT_B: 1})],
            (),
        ),
        (
            "skip checking ignored extended resource via resource groups",
            {"ignoredResourceGroups": ["example.com"]},
            [req(1, 1, **{EXT_B: 1})],
            (),
        ),
        (
            "resource groups don't ignore kubernetes.io resources",
            {"ignoredResourceGroups": ["kubernetes.io"]},
            [req(**{KUBE_EXT: 1})],
            ("Insufficient kubernetes.io/something",),
        ),
    ],
)
def test_ignored_resources(
    name: str,
    args: dict[str, list[str]],
    containers: Sequence[Mapping[str, str]],
    reasons: tuple[str, ...],
) -> None:
    plugin = NodeResourcesFit(decode_node_resources_fit_args(args))
    status = run_filter(plugin, containers, [], req())
    assert status.reasons == reasons
    assert status.is_success == (not reasons)


@pytest.mark.parametrize(
    ("name", "containers", "existing", "reasons"),
    [
        # fit_test.go TestNotEnoughRequests: a node holding `pods` pods admits no more.
        (
            "even without specified resources, predicate fails",
            [{}],
            req(10, 20),
            ("Too many pods",),
        ),
        (
            "even if both resources fit, predicate fails",
            [req(1, 1)],
            req(5, 5),
            ("Too many pods",),
        ),
        (
            "even for equal edge case, predicate fails",
            [req(5, 1)],
            req(5, 19),
            ("Too many pods",),
        ),
        (
            "all resources and the pod count are insufficient",
            [req(1, 1)],
            req(10, 20),
            ("Too many pods", "Insufficient cpu", "Insufficient memory"),
        ),
    ],
)
def test_not_enough_pods(
    name: str,
    containers: Sequence[Mapping[str, str]],
    existing: Mapping[str, str],
    reasons: tuple[str, ...],
) -> None:
    allocatable = {"cpu": "10m", "memory": "20", "pods": "1"}
    status = run_filter(NodeResourcesFit(None), containers, [], existing, allocatable)
    assert status.code == Code.UNSCHEDULABLE
    assert status.reasons == reasons


def test_storage_requests() -> None:
    # fit_test.go TestStorageRequests: ephemeral storage is enforced like cpu / memory.
    plugin = NodeResourcesFit(None)
    fits = run_filter(plugin, [{"ephemeral-storage": "10"}], [], {"ephemeral-storage": "5"})
    assert fits.is_success
    too_big = run_filter(plugin, [{"ephemeral-storage": "25"}], [], {})
    assert too_big.reasons == ("Insufficient ephemeral-storage",)
    # "storage ephemeral local storage request exceeds allocatable" (20 on the node).
    assert too_big.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    short = run_filter(plugin, [{"ephemeral-storage": "15"}], [], {"ephemeral-storage": "10"})
    assert (short.code, short.reasons) == (Code.UNSCHEDULABLE, ("Insufficient ephemeral-storage",))


@pytest.mark.parametrize(
    ("containers", "existing", "code", "reasons"),
    [
        # Over the node's 10m / 20 bytes: no preemption can make room.
        ([req(11, 1)], req(), Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient cpu",)),
        ([req(1, 21)], req(), Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("Insufficient memory",)),
        # One request resolvable, the other not: the node is unresolvable.
        (
            [req(2, 21)],
            req(9, 0),
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            ("Insufficient cpu", "Insufficient memory"),
        ),
        # Within allocatable, short only of what other pods hold.
        ([req(2, 1)], req(9, 0), Code.UNSCHEDULABLE, ("Insufficient cpu",)),
    ],
)
def test_request_over_allocatable_is_unresolvable(
    containers: Sequence[Mapping[str, str]],
    existing: Mapping[str, str],
    code: Code,
    reasons: tuple[str, ...],
) -> None:
    status = run_filter(NodeResourcesFit(None), containers, [], existing)
    assert (status.code, status.reasons) == (code, reasons)


def test_filter_without_pre_filter_is_an_error() -> None:
    node_info = make_node_info(make_node("node", NODE_ALLOCATABLE))
    status = NodeResourcesFit(None).filter(CycleState(), make_pod(), node_info)
    assert status.code == Code.ERROR
    assert "PreFilterNodeResourcesFit" in status.message
