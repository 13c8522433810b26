"""ImageLocality and NodeResourcesBalancedAllocation, ported from upstream's
pkg/scheduler/framework/plugins/imagelocality/image_locality_test.go and
pkg/scheduler/framework/plugins/noderesources/balanced_allocation_test.go (v1.36's table: the
improvement in balance the pod brings, with v1.33's Skip for best-effort pods)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from row_answers import score_rows_of

from scheduler.api.objects import NodeView, PodView
from scheduler.cache.cache import Cache
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.interface import CycleState
from scheduler.framework.registry import ArgsError
from scheduler.framework.status import Code
from scheduler.plugins.balancedallocation import (
    PLUGIN_ENTRY as BALANCED_ENTRY,
)
from scheduler.plugins.balancedallocation import (
    NodeResourcesBalancedAllocation,
)
from scheduler.plugins.imagelocality import ImageLocality
from scheduler.testing import MakeNode, MakePod, make_node, make_pod

MB = 1024 * 1024
Obj = dict[str, Any]


@dataclass
class SnapshotHandle:
    """The one Handle method these plugins use."""

    snap: Snapshot

    def snapshot(self) -> Snapshot:
        return self.snap


def snapshot_of(nodes: Sequence[NodeView], pods: Sequence[PodView] = ()) -> Snapshot:
    cache = Cache()
    for node in nodes:
        cache.add_node(node)
    for pod in pods:
        cache.add_pod(pod)
    return cache.update_snapshot()


def scores_of(plugin: Any, pod: PodView, snap: Snapshot, *, rows: bool) -> list[int]:
    state = CycleState()
    infos = snap.list()
    if rows:
        return score_rows_of(plugin, state, pod, infos)
    out = []
    for info in infos:
        value, status = plugin.score(state, pod, info)
        assert status.is_success
        out.append(value)
    return out


# --- ImageLocality ---


def image_pod(*images: str, init: Sequence[str] = ()) -> PodView:
    """Pod "p" with a container per image and an init container per `init` image."""
    built = MakePod("p", "default").uid("uid-p")
    for image in images:
        built.container(image=image)
    for image in init:
        built.init_container(image=image)
    return built.obj()


def image_node(name: str, images: Sequence[tuple[Sequence[str], int]]) -> NodeView:
    """A node holding these images, each (its names, its size in bytes)."""
    built = MakeNode(name)
    for names, size in images:
        built.image(names, size)
    return built.obj()


NODE_40_300_2000 = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10 = [(["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)]
NODE_600_40_900 = [
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/40:latest"], 40 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_300_600_900 = [
    (["gcr.io/300:latest"], 300 * MB),
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_4000_30 = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
NODE_20_30_40 = [
    (["gcr.io/20:latest"], 20 * MB),
    (["gcr.io/30:latest"], 30 * MB),
    (["gcr.io/40:latest"], 40 * MB),
]

IMAGE_CASES: list[tuple[str, PodView, list[list[tuple[list[str], int]]], list[int]]] = [
    (
        "two images spread on two nodes, prefer the larger image one",
        image_pod("gcr.io/40", "gcr.io/250"),
        [NODE_40_300_2000, NODE_250_10],
        [0, 5],
    ),
    (
        "two images on one node, prefer this node",
        image_pod("gcr.io/40", "gcr.io/300"),
        [NODE_40_300_2000, NODE_250_10],
        [7, 0],
    ),
    (
        "if exceed limit, use limit",
        image_pod("gcr.io/4000", "gcr.io/10"),
        [NODE_4000_30, NODE_250_10],
        [100, 0],
    ),
    (
        "if exceed limit, use limit (with node which has no images present)",
        image_pod("gcr.io/4000", "gcr.io/10"),
        [NODE_4000_30, NODE_250_10, []],
        [66, 0, 0],
    ),
    (
        "pod with multiple large images, node2 is preferred",
        image_pod("gcr.io/300", "gcr.io/600", "gcr.io/900"),
        [NODE_600_40_900, NODE_300_600_900, []],
        [32, 36, 0],
    ),
    (
        "pod with multiple small images",
        image_pod("gcr.io/30", "gcr.io/40"),
        [NODE_20_30_40, NODE_4000_30],
        [1, 0],
    ),
    (
        "include InitContainers: two images spread on two nodes, prefer the larger image one",
        image_pod("gcr.io/30", init=["gcr.io/300"]),
        [NODE_40_300_2000, NODE_20_30_40],
        [6, 0],
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "node_images", "want"), IMAGE_CASES, ids=[c[0][:60] for c in IMAGE_CASES]
)
@pytest.mark.parametrize("rows", [False, True], ids=["per-node", "rows"])
def test_image_locality(
    name: str, pod: PodView, node_images: list[Any], want: list[int], rows: bool
) -> None:
    snap = snapshot_of([image_node(f"node{i}", imgs) for i, imgs in enumerate(node_images)])
    plugin = ImageLocality(None, SnapshotHandle(snap))  # type: ignore[arg-type]
    assert scores_of(plugin, pod, snap, rows=rows) == want


def test_image_locality_without_handle_is_an_error() -> None:
    snap = snapshot_of([image_node("n", [])])
    _value, status = ImageLocality().score(CycleState(), image_pod("x"), snap.list()[0])
    assert status.code == Code.ERROR


# --- NodeResourcesBalancedAllocation ---


def res_pod(*containers: Mapping[str, str], node_name: str = "", uid: str = "uid-p") -> PodView:
    """Pod "p-<uid>" with a container per map of requests."""
    return make_pod(f"p-{uid}", uid=uid, containers=containers, node_name=node_name)


def res_node(name: str, milli_cpu: int, memory: int, gpu: int | None = None) -> NodeView:
    allocatable = {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": "110"}
    if gpu is not None:
        allocatable["nvidia.com/gpu"] = str(gpu)
    return make_node(name, allocatable)


def cpu_and_memory(node_name: str = "", uid: str = "a") -> PodView:
    return res_pod(
        {"cpu": "1000m", "memory": "2000"},
        {"cpu": "2000m", "memory": "3000"},
        node_name=node_name,
        uid=uid,
    )


def cpu_only(node_name: str = "", uid: str = "b") -> PodView:
    return res_pod(
        {"cpu": "1000m", "memory": "0"},
        {"cpu": "2000m", "memory": "0"},
        node_name=node_name,
        uid=uid,
    )


MEMORY_ONLY = res_pod({"cpu": "0", "memory": "2000"}, {"cpu": "0", "memory": "3000"})
CPU_MEM_GPU_ON_NODE1 = res_pod(
    {"cpu": "1000m", "memory": "2000"},
    {"cpu": "2000m", "memory": "3000", "nvidia.com/gpu": "3"},
    node_name="node1",
    uid="gpu",
)
BEST_EFFORT = res_pod()
WITH_GPU = {"resources": [{"name": "cpu"}, {"name": "memory"}, {"name": "nvidia.com/gpu"}]}

# (name, pod, nodes, existing pods, args, want scores or None when PreScore skips, run PreScore)
BALANCED_CASES: list[tuple[Any, ...]] = [
    (
        "nothing scheduled, nothing requested: best-effort pods skip in PreScore",
        BEST_EFFORT,
        [res_node("node1", 4000, 10000), res_node("node2", 4000, 10000)],
        [],
        None,
        None,
        True,
    ),
    (
        # Balance without -> with the pod: node1 100 -> 87, node2 100 -> 100.
        "nothing scheduled, resources requested, differently sized nodes",
        cpu_and_memory(),
        [res_node("node1", 4000, 10000), res_node("node2", 6000, 10000)],
        [],
        None,
        [68, 75],
        True,
    ),
    (
        "no resources requested, pods scheduled with resources: best-effort pods skip",
        BEST_EFFORT,
        [res_node("node1", 10000, 20000), res_node("node2", 10000, 20000)],
        [
            cpu_only("node1", "e1"),
            cpu_only("node1", "e2"),
            cpu_only("node2", "e3"),
            cpu_and_memory("node2", "e4"),
        ],
        None,
        None,
        True,
    ),
    (
        # node1 85 -> 82, node2 97 -> 95.
        "resources requested, pods scheduled with resources",
        cpu_and_memory(),
        [res_node("node1", 10000, 20000), res_node("node2", 10000, 20000)],
        [cpu_only("node1", "e1"), cpu_and_memory("node2", "e2")],
        None,
        [73, 74],
        True,
    ),
    (
        "resources requested, pods scheduled with resources, differently sized nodes",
        cpu_and_memory(),
        [res_node("node1", 10000, 20000), res_node("node2", 10000, 50000)],
        [cpu_only("node1", "e1"), cpu_and_memory("node2", "e2")],
        None,
        [73, 70],  # node1 85 -> 82, node2 90 -> 80
        True,
    ),
    (
        # node1 75 -> 50, node2 100 -> 75.
        "requested resources at node capacity",
        cpu_only(),
        [res_node("node1", 6000, 10000), res_node("node2", 6000, 10000)],
        [cpu_only("node1", "e1"), cpu_and_memory("node2", "e2")],
        None,
        [62, 62],
        True,
    ),
    (
        # Node1: cpu 3000/3500, memory 5000/40000, gpu 3 -> 4/8 (69 -> 70); node2: gpu 0 -> 1/8
        # (62 -> 65).
        "include scalar resource on a node for balanced resource allocation",
        res_pod({"memory": "0", "nvidia.com/gpu": "1"}),
        [res_node("node1", 3500, 40000, gpu=8), res_node("node2", 3500, 40000, gpu=8)],
        [cpu_and_memory("node2", "e1"), CPU_MEM_GPU_ON_NODE1],
        WITH_GPU,
        [75, 76],
        True,
    ),
    (
        # The pod does not request the GPU, so it is left out on node1 too: 100 -> 63 on both.
        "node without the scalar resource should skip the scalar resource",
        cpu_and_memory(),
        [res_node("node1", 3500, 40000, gpu=8), res_node("node2", 3500, 40000)],
        [],
        WITH_GPU,
        [56, 56],
        True,
    ),
    (
        "resources requested, pods scheduled with resources if PreScore not called",
        cpu_and_memory(),
        [res_node("node1", 10000, 20000), res_node("node2", 10000, 20000)],
        [cpu_only("node1", "e1"), cpu_and_memory("node2", "e2")],
        None,
        [73, 74],
        False,
    ),
    (
        # node1 50 -> 100 (the pod evens it out), node2 100 -> 50.
        "resources requested, nodes to reach min/max score",
        MEMORY_ONLY,
        [res_node("node1", 3000, 5000), res_node("node2", 3000, 5000)],
        [cpu_only("node1", "e1")],
        None,
        [100, 50],
        True,
    ),
    (
        "best-effort pod scores 0 when PreScore was not called",
        BEST_EFFORT,
        [res_node("node1", 4000, 10000)],
        [],
        None,
        [0],
        False,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "nodes", "existing", "args", "want", "run_pre_score"),
    BALANCED_CASES,
    ids=[c[0][:60] for c in BALANCED_CASES],
)
@pytest.mark.parametrize("rows", [False, True], ids=["per-node", "rows"])
def test_balanced_allocation(
    name: str,
    pod: PodView,
    nodes: list[NodeView],
    existing: list[PodView],
    args: Obj | None,
    want: list[int] | None,
    run_pre_score: bool,
    rows: bool,
) -> None:
    plugin = NodeResourcesBalancedAllocation(BALANCED_ENTRY.decode(args))
    snap = snapshot_of(nodes, existing)
    infos = snap.list()
    state = CycleState()
    if run_pre_score:
        status = plugin.pre_score(state, pod, infos)
        assert status.code == (Code.SKIP if want is None else Code.SUCCESS)
        if want is None:
            return
    if rows:
        values = score_rows_of(plugin, state, pod, infos)
    else:
        values = []
        for info in infos:
            value, status = plugin.score(state, pod, info)
            assert status.is_success
            values.append(value)
    assert values == want


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        (
            {"resources": [{"name": "cpu"}, {"name": "cpu"}]},
            "resources[1].name",
            'Duplicate value: "cpu"',
        ),
        (
            {"resources": [{"name": "cpu", "weight": 2}]},
            "resources[0].weight",
            "Invalid value: 2: must be 1",
        ),
        ({"unknown": 1}, "unknown", "unknown field"),
    ],
)
def test_balanced_allocation_args_errors(raw: Obj, path: str, message: str) -> None:
    with pytest.raises(ArgsError) as caught:
        BALANCED_ENTRY.decode(raw)
    assert (caught.value.path, caught.value.message) == (path, message)


def test_balanced_allocation_args_defaults() -> None:
    args = BALANCED_ENTRY.decode(None)
    assert [(r.name, r.weight) for r in args.resources] == [("cpu", 1), ("memory", 1)]
    args = BALANCED_ENTRY.decode({"resources": [{"name": "nvidia.com/gpu", "weight": 0}]})
    assert [(r.name, r.weight) for r in args.resources] == [("nvidia.com/gpu", 1)]
