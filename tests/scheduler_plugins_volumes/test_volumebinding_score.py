"""VolumeBinding's storage-capacity scoring (StorageCapacityScoring, beta, on by default since
v1.37): the scorer and PreScore / Score over Filter's volumes per node.

Ported from upstream's pkg/scheduler/framework/plugins/volumebinding/scorer_test.go
(TestScore) and volume_binding_test.go (TestVolumeBinding: the PreScore status and the scores
of its cases with and without the gate; its PreFilter and Filter expectations are ported in
test_volumebinding_plugin.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from scheduler.api.objects import NodeView, PodView
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.interface import CycleState
from scheduler.framework.registry import ArgsError
from scheduler.framework.status import Status
from scheduler.plugins.volumebinding import VolumeBinding, decode_volume_binding_args
from scheduler.plugins.volumebinding.args import UtilizationShapePoint
from scheduler.plugins.volumebinding.scorer import StorageResource, build_scorer
from scheduler.testing import FakeHandle, ListSnapshot, make_pod, node_infos
from scheduler.testing.volumes import (
    HOSTNAME_LABEL,
    WAIT,
    hostname_node,
    make_capacity,
    make_class,
    make_csi_driver,
    make_pv,
    make_pvc,
)

# volume_binding_test.go's defaultShapePoint (a test value, not the v1 default): fuller is better.
TEST_SHAPE = ((0, 0), (100, 10))
HDD, SSD = "hdd", "ssd"


def shape(*points: tuple[int, int]) -> tuple[UtilizationShapePoint, ...]:
    return tuple(UtilizationShapePoint(u, s) for u, s in points)


def resources(**classes: tuple[int, int]) -> dict[str, StorageResource]:
    return {name: StorageResource(req, cap) for name, (req, cap) in classes.items()}


@pytest.mark.parametrize(
    ("points", "classes", "want"),
    [
        # "default shape, single class"
        (TEST_SHAPE, resources(hdd=(0, 100)), 0),
        (TEST_SHAPE, resources(hdd=(30, 100)), 30),
        (TEST_SHAPE, resources(hdd=(50, 100)), 50),
        (TEST_SHAPE, resources(hdd=(100, 100)), 100),
        # "default shape, multiple classes"
        (TEST_SHAPE, resources(hdd=(0, 100), ssd=(0, 100)), 0),
        (TEST_SHAPE, resources(hdd=(0, 100), ssd=(30, 100)), 15),
        (TEST_SHAPE, resources(hdd=(30, 100), ssd=(30, 100)), 30),
        (TEST_SHAPE, resources(hdd=(30, 100), ssd=(60, 100)), 45),
        (TEST_SHAPE, resources(hdd=(50, 100), ssd=(50, 100)), 50),
        (TEST_SHAPE, resources(hdd=(50, 100), ssd=(100, 100)), 75),
        (TEST_SHAPE, resources(hdd=(100, 100), ssd=(100, 100)), 100),
        # "custom shape, multiple classes" (upstream gives its points in 0-100 already; here
        # they are the args' 0-10, scaled by ten as New does)
        (((50, 0), (80, 3), (100, 5)), resources(hdd=(0, 100), ssd=(0, 100)), 0),
        (((50, 0), (80, 3), (100, 5)), resources(hdd=(0, 100), ssd=(30, 100)), 0),
        (((50, 0), (80, 3), (100, 5)), resources(hdd=(30, 100), ssd=(30, 100)), 0),
        (((50, 0), (80, 3), (100, 5)), resources(hdd=(30, 100), ssd=(60, 100)), 5),
        (((50, 0), (80, 3), (100, 5)), resources(hdd=(50, 100), ssd=(100, 100)), 25),
        (((50, 0), (80, 3), (100, 5)), resources(hdd=(90, 100), ssd=(90, 100)), 40),
        (((50, 0), (80, 3), (100, 5)), resources(hdd=(100, 100), ssd=(100, 100)), 50),
        # no class: 0; a class without capacity or over it scores as full
        (TEST_SHAPE, {}, 0),
        (TEST_SHAPE, resources(hdd=(10, 0)), 100),
        (TEST_SHAPE, resources(hdd=(200, 100)), 100),
    ],
)
def test_scorer(
    points: Sequence[tuple[int, int]], classes: Mapping[str, StorageResource], want: int
) -> None:
    """TestScore."""
    assert build_scorer(shape(*points))(classes) == want


WAIT_SC = "wait-sc"
WAIT_HDD_SC = "wait-hdd-sc"
CAPACITY_SC = "wait-sc-with-storage-capacity"
DRIVER = "driver-with-storage-capacity"
NODE_KEY = "nodeKey"  # volume_binding_test.go's nodeLabelKey
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


def local_pv(name: str, klass: str, capacity: str, node: str) -> Any:
    return make_pv(
        name, klass, phase="Available", capacity=capacity, node_affinity={HOSTNAME_LABEL: [node]}
    )


def zonal_pv(name: str, capacity: str, region: str, zone: str) -> Any:
    affinity = {REGION: [region], ZONE: [zone]}
    return make_pv(name, WAIT_SC, phase="Available", capacity=capacity, node_affinity=affinity)


def zonal_nodes() -> list[NodeView]:
    return [
        hostname_node(f"zone-{z}-node-{n}", {REGION: f"region-{z}", ZONE: f"zone-{z}"})
        for z in "abc"
        for n in "ab"
    ]


def keyed_nodes(*names: str) -> list[NodeView]:
    return [hostname_node(name, {NODE_KEY: name}) for name in names]


def capacity(node: str, size: str) -> Any:
    return make_capacity(node, CAPACITY_SC, {NODE_KEY: node}, size)


def capacities(a: str, b: str, c: str) -> list[Any]:
    """The capacity of CAPACITY_SC on node-a, node-b and node-c."""
    return [capacity("node-a", a), capacity("node-b", b), capacity("node-c", c)]


THREE_KEYED = ("node-a", "node-b", "node-c")
DYNAMIC_10GI = make_pvc("pvc-dynamic", CAPACITY_SC, request="10Gi")


@dataclass
class Case:
    pod: PodView
    nodes: Sequence[NodeView]
    objects: Sequence[Any] = ()
    scoring: bool = True  # the StorageCapacityScoring gate
    # The args' shape (upstream's test sets it with the gate on only); None: the default.
    points: Sequence[tuple[int, int]] | None = TEST_SHAPE
    pre_score: Status = field(default_factory=lambda: Status.OK)
    scores: Sequence[int] = ()


ZONAL_PVS = [
    zonal_pv("pv-a-0", "200Gi", "region-a", "zone-a"),
    zonal_pv("pv-a-1", "200Gi", "region-a", "zone-a"),
    zonal_pv("pv-b-0", "100Gi", "region-b", "zone-b"),
    zonal_pv("pv-b-1", "100Gi", "region-b", "zone-b"),
]

CASES: dict[str, Case] = {
    "pod has not pvcs": Case(make_pod("pod-a"), [hostname_node("node-a")], scores=[0]),
    "pod has not pvcs (gate off)": Case(
        make_pod("pod-a"), [hostname_node("node-a")], scoring=False, pre_score=Status.skip()
    ),
    "all bound (gate off)": Case(
        make_pod("pod-a", pvcs=["pvc-a"]),
        [hostname_node("node-a")],
        [
            make_pvc("pvc-a", WAIT_SC, bound_pv="pv-a", bind_completed=True),
            make_pv("pv-a", WAIT_SC, phase="Available"),
        ],
        scoring=False,
        pre_score=Status.skip(),
    ),
    "local volumes with close capacity are preferred": Case(
        make_pod("pod-a", pvcs=["pvc-a"]),
        [hostname_node("node-a"), hostname_node("node-b"), hostname_node("node-c")],
        [
            make_pvc("pvc-a", WAIT_SC, request="50Gi"),
            local_pv("pv-a-0", WAIT_SC, "200Gi", "node-a"),
            local_pv("pv-a-1", WAIT_SC, "200Gi", "node-a"),
            local_pv("pv-b-0", WAIT_SC, "100Gi", "node-b"),
            local_pv("pv-b-1", WAIT_SC, "100Gi", "node-b"),
        ],
        scores=[25, 50, 0],
    ),
    "local volumes with close capacity are preferred (multiple pvcs)": Case(
        make_pod("pod-a", pvcs=["pvc-0", "pvc-1"]),
        [hostname_node("node-a"), hostname_node("node-b"), hostname_node("node-c")],
        [
            make_pvc("pvc-0", WAIT_SC, request="50Gi"),
            make_pvc("pvc-1", WAIT_HDD_SC, request="100Gi"),
            local_pv("pv-a-0", WAIT_SC, "200Gi", "node-a"),
            local_pv("pv-a-1", WAIT_SC, "200Gi", "node-a"),
            local_pv("pv-a-2", WAIT_HDD_SC, "200Gi", "node-a"),
            local_pv("pv-a-3", WAIT_HDD_SC, "200Gi", "node-a"),
            local_pv("pv-b-0", WAIT_SC, "100Gi", "node-b"),
            local_pv("pv-b-1", WAIT_SC, "100Gi", "node-b"),
            local_pv("pv-b-2", WAIT_HDD_SC, "100Gi", "node-b"),
            local_pv("pv-b-3", WAIT_HDD_SC, "100Gi", "node-b"),
        ],
        scores=[38, 75, 0],
    ),
    "zonal volumes with close capacity are preferred": Case(
        make_pod("pod-a", pvcs=["pvc-a"]),
        zonal_nodes(),
        [make_pvc("pvc-a", WAIT_SC, request="50Gi"), *ZONAL_PVS],
        scores=[25, 25, 50, 50, 0, 0],
    ),
    "zonal volumes with close capacity are preferred (custom shape)": Case(
        make_pod("pod-a", pvcs=["pvc-a"]),
        zonal_nodes(),
        [make_pvc("pvc-a", WAIT_SC, request="50Gi"), *ZONAL_PVS],
        points=((0, 0), (50, 3), (100, 5)),
        scores=[15, 15, 30, 30, 0, 0],
    ),
    "storage capacity score": Case(
        make_pod("pod-a", pvcs=["pvc-dynamic"]),
        keyed_nodes(*THREE_KEYED),
        [DYNAMIC_10GI, *capacities("100Gi", "50Gi", "10Gi")],
        scores=[10, 20, 100],
    ),
    "storage capacity score with static binds": Case(
        make_pod("pod-a", pvcs=["pvc-dynamic", "pvc-static"]),
        keyed_nodes(*THREE_KEYED),
        [
            DYNAMIC_10GI,
            make_pvc("pvc-static", WAIT_SC, request="50Gi"),
            *(local_pv(f"pv-static-{n[-1]}", WAIT_SC, "100Gi", n) for n in THREE_KEYED),
            *capacities("100Gi", "50Gi", "10Gi"),
        ],
        scores=[50, 50, 50],
    ),
    "dynamic provisioning with multiple PVCs of the same StorageClass": Case(
        make_pod("pod-a", pvcs=["pvc-dynamic-0", "pvc-dynamic-1"]),
        keyed_nodes("node-a"),
        [
            make_pvc("pvc-dynamic-0", CAPACITY_SC, request="50Gi"),
            make_pvc("pvc-dynamic-1", CAPACITY_SC, request="50Gi"),
            capacity("node-a", "100Gi"),
        ],
        scores=[100],
    ),
    "prefer node with least allocatable": Case(
        make_pod("pod-a", pvcs=["pvc-dynamic"]),
        keyed_nodes(*THREE_KEYED),
        [DYNAMIC_10GI, *capacities("100Gi", "20Gi", "10Gi")],
        scores=[10, 50, 100],
    ),
    # With the args' default shape (SetDefaults_VolumeBindingArgs: [{0, 10}, {100, 0}]).
    "prefer node with maximum allocatable": Case(
        make_pod("pod-a", pvcs=["pvc-dynamic"]),
        keyed_nodes(*THREE_KEYED),
        [DYNAMIC_10GI, *capacities("100Gi", "20Gi", "10Gi")],
        points=None,
        scores=[90, 50, 0],
    ),
}


def plugin_for(case: Case) -> VolumeBinding:
    """volume_binding_test.go's classes and CSIDriver, the case's objects, and the plugin
    under the case's gate (bindTimeoutSeconds 300)."""
    handle = FakeHandle(ListSnapshot(node_infos(case.nodes)))
    handle.storage.add(
        make_class("immediate-sc", "Immediate"),
        make_class(WAIT_SC, WAIT),
        make_class(WAIT_HDD_SC, WAIT),
        make_class(CAPACITY_SC, WAIT, DRIVER),
        make_csi_driver(DRIVER, True),
        *case.objects,
    )
    # The gates the framework's handle carries (FakeHandle has none: every gate at default).
    setattr(handle, "feature_gates", {"StorageCapacityScoring": case.scoring})  # noqa: B010
    raw: dict[str, Any] = {"bindTimeoutSeconds": 300}
    if case.scoring and case.points is not None:
        raw["shape"] = [{"utilization": u, "score": s} for u, s in case.points]
    args = decode_volume_binding_args(raw, storage_capacity_scoring=case.scoring)
    return VolumeBinding(args, handle)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", CASES)
def test_pre_score_and_score(name: str) -> None:
    case = CASES[name]
    plugin = plugin_for(case)
    infos = node_infos(case.nodes)
    state = CycleState()
    _, status = plugin.pre_filter(state, case.pod, infos)
    if status.is_success:
        for info in infos:
            plugin.filter(state, case.pod, info)
    assert plugin.pre_score(state, case.pod, infos) == case.pre_score
    if not case.pre_score.is_success:
        return
    got = []
    for info in infos:
        score, score_status = plugin.score(state, case.pod, info)
        assert score_status.is_success
        got.append(score)
    assert got == list(case.scores)


def test_a_shape_is_refused_when_the_gate_is_off() -> None:
    """ValidateVolumeBindingArgsWithOptions in New: decoded under the default gates (on), the
    shape is refused by a process running with the gate off."""
    handle = FakeHandle()
    setattr(handle, "feature_gates", {"StorageCapacityScoring": False})  # noqa: B010
    args = decode_volume_binding_args({"shape": [{"utilization": 0, "score": 1}]})
    with pytest.raises(ArgsError, match="unexpected field `shape`"):
        VolumeBinding(args, handle)  # type: ignore[arg-type]
    # The default shape is no configuration of the user's: accepted, and nothing is scored.
    plugin = VolumeBinding(decode_volume_binding_args({}), handle)  # type: ignore[arg-type]
    assert plugin.pre_score(CycleState(), make_pod("p"), []) == Status.skip()


def test_score_rows_agree_with_score_for_a_pod_without_volumes() -> None:
    """The row path's zeros are the per-node scores when Filter left no volumes anywhere."""
    case = CASES["pod has not pvcs"]
    plugin = plugin_for(case)
    state = CycleState()
    plugin.pre_filter(state, case.pod, [])
    snapshot = Snapshot.from_node_infos(node_infos(keyed_nodes("n1", "n2", "n3")))
    table = snapshot.node_table()
    rows = np.arange(len(table), dtype=np.intp)
    got = plugin.score_rows(state, case.pod, table, rows)
    assert got is not None
    per_node = [plugin.score(state, case.pod, info)[0] for info in snapshot.list()]
    assert got.tolist() == per_node == [0, 0, 0]
    # With volumes on some node the row method declines: the per-node path answers.
    with_volumes = plugin_for(CASES["storage capacity score"])
    state = CycleState()
    pod = CASES["storage capacity score"].pod
    infos = node_infos(CASES["storage capacity score"].nodes)
    with_volumes.pre_filter(state, pod, infos)
    with_volumes.filter(state, pod, infos[0])
    assert with_volumes.score_rows(state, pod, table, rows) is None
