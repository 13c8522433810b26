"""VolumeZone, ported from upstream's
pkg/scheduler/framework/plugins/volumezone/volume_zone_test.go (TestSingleZone, TestMultiZone,
TestWithBinding, TestIsSchedulableAfterPersistentVolumeClaimAdded,
TestIsSchedulableAfterStorageClassAdded, TestIsSchedulableAfterPersistentVolumeChange): inputs
and expected statuses / hints.

As upstream's tests, every case runs PreFilter and then Filter on the same state whatever
PreFilter said (Filter reads the volumes itself when PreFilter left no state). The plugin runs
inside a Framework built from a Registry holding only its entry; where PreFilter succeeds the
framework's Filter and the row fast path must agree with the plugin's Filter.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest

from scheduler.api.objects import NodeView, PodView
from scheduler.api.storage import PersistentVolumeClaimView, PersistentVolumeView, StorageClassView
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.framework.interface import CycleState
from scheduler.framework.registry import Registry
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.framework.status import Code, Status
from scheduler.listers.cluster_objects import ClusterObjects
from scheduler.plugins.volumezone import (
    ERR_REASON_CONFLICT,
    NAME,
    PLUGIN_ENTRY,
    VolumeZone,
    label_zones_to_set,
)
from scheduler.queue.types import QueuedPodInfo
from scheduler.testing import RecordingClient, StaticNominator, make_node, make_pod

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"

SKIP = Status.skip()
CONFLICT = Status.unresolvable(ERR_REASON_CONFLICT)
QUEUE, QUEUE_SKIP = QueueingHint.QUEUE, QueueingHint.SKIP
WAIT = "WaitForFirstConsumer"


def pod_with_volume(pod: str, pvc: str) -> PodView:
    """Upstream's createPodWithVolume."""
    return make_pod(pod, uid=f"uid-{pod}", pvcs=[pvc])


def pv(name: str, labels: Mapping[str, str] | None = None) -> PersistentVolumeView:
    return PersistentVolumeView.from_dict(
        {"metadata": {"name": name, "resourceVersion": "1", "labels": dict(labels or {})}}
    )


def pvc(
    name: str, volume_name: str = "", class_name: str | None = None, namespace: str = "default"
) -> PersistentVolumeClaimView:
    spec: dict[str, Any] = {}
    if volume_name:
        spec["volumeName"] = volume_name
    if class_name is not None:
        spec["storageClassName"] = class_name
    return PersistentVolumeClaimView.from_dict(
        {"metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"}, "spec": spec}
    )


def storage_class(name: str, mode: str | None = None) -> StorageClassView:
    obj: dict[str, Any] = {"metadata": {"name": name, "resourceVersion": "1"}, "provisioner": "p"}
    if mode is not None:
        obj["volumeBindingMode"] = mode
    return StorageClassView.from_dict(obj)


@dataclass
class Harness:
    framework: Framework
    plugin: VolumeZone


def build(objects: Iterable[Any], nodes: Iterable[NodeView] = ()) -> Harness:
    registry = Registry()
    registry.register(PLUGIN_ENTRY)
    snapshot = Snapshot.from_node_infos(NodeInfo(node) for node in nodes)
    cluster = ClusterObjects()
    cluster.storage.add(*objects)
    deps = HandleDeps(
        snapshot=lambda: snapshot,
        client=RecordingClient(),
        nominator=StaticNominator(),
        cluster_objects=cluster,
        rng=random.Random(1),
    )
    enabled = {"preFilter": [(NAME, 0)], "filter": [(NAME, 0)]}
    framework = Framework.build("default-scheduler", registry, enabled, {}, deps)
    plugin = framework.plugins[NAME]
    assert isinstance(plugin, VolumeZone)
    return Harness(framework, plugin)


def run(harness: Harness, pod: PodView, node: NodeView) -> tuple[Status, Status]:
    """Upstream's loop: PreFilter, then Filter on the same state regardless."""
    info = NodeInfo(node)
    state = CycleState()
    _, pre_filter = harness.plugin.pre_filter(state, pod, [info])
    filter_status = harness.plugin.filter(state, pod, info)

    # The framework agrees: Skip puts the plugin in skip_filter_plugins; on success the
    # framework's Filter and the rows fast path give the plugin's Filter status.
    fw_state = CycleState()
    _, fw_status, _ = harness.framework.run_pre_filter_plugins(fw_state, pod, [info])
    if pre_filter.is_skip:
        assert fw_status.is_success and NAME in fw_state.skip_filter_plugins
    elif pre_filter.code == Code.ERROR:
        assert fw_status.message == f'running PreFilter plugin "{NAME}": {pre_filter.message}'
    else:
        assert fw_status == pre_filter
    if pre_filter.is_success:
        assert harness.framework.run_filter_plugins(fw_state, pod, info) == filter_status
        table = Snapshot.from_node_infos([info]).node_table()
        verdict = harness.plugin.filter_rows(fw_state, pod, table, np.arange(1, dtype=np.intp))
        assert verdict is not None
        assert (Status.OK if verdict.passed[0] else verdict.reject(0)) == filter_status
    return pre_filter, filter_status


# -- TestSingleZone ------------------------------------------------------------------------

SINGLE_ZONE_OBJECTS = [
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", {BETA_REGION: "us-west1"}),
    pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_Stable_3", {ZONE: "us-west1-a", REGION: "us-west1-a"}),
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_2", "Vol_2"),
    pvc("PVC_3", "Vol_3"),
    pvc("PVC_4", "Vol_not_exist"),
    pvc("PVC_Stable_1", "Vol_Stable_1"),
    pvc("PVC_Stable_2", "Vol_Stable_2"),
    pvc("PVC_Stable_3", "Vol_Stable_3"),
]


@pytest.mark.parametrize(
    ("name", "pod", "node_labels", "want_pre_filter", "want_filter"),
    [
        (
            "pod without volume",
            make_pod("pod_1", uid="uid-pod_1"),
            {BETA_ZONE: "us-west1-a"},
            SKIP,
            Status.OK,
        ),
        ("node without labels", pod_with_volume("pod_1", "PVC_1"), {}, Status.OK, Status.OK),
        (
            "beta zone label matched",
            pod_with_volume("pod_1", "PVC_1"),
            {BETA_ZONE: "us-west1-a", "uselessLabel": "none"},
            Status.OK,
            Status.OK,
        ),
        (
            "beta region label matched",
            pod_with_volume("pod_1", "PVC_2"),
            {BETA_REGION: "us-west1", "uselessLabel": "none"},
            Status.OK,
            Status.OK,
        ),
        (
            "beta region label doesn't match",
            pod_with_volume("pod_1", "PVC_2"),
            {BETA_REGION: "no_us-west1", "uselessLabel": "none"},
            Status.OK,
            CONFLICT,
        ),
        (
            "beta zone label doesn't match",
            pod_with_volume("pod_1", "PVC_1"),
            {BETA_ZONE: "no_us-west1-a", "uselessLabel": "none"},
            Status.OK,
            CONFLICT,
        ),
        (
            "zone label matched",
            pod_with_volume("pod_1", "PVC_Stable_1"),
            {ZONE: "us-west1-a", "uselessLabel": "none"},
            Status.OK,
            Status.OK,
        ),
        (
            "region label matched",
            pod_with_volume("pod_1", "PVC_Stable_2"),
            {REGION: "us-west1", "uselessLabel": "none"},
            Status.OK,
            Status.OK,
        ),
        (
            "region label doesn't match",
            pod_with_volume("pod_1", "PVC_Stable_2"),
            {REGION: "no_us-west1", "uselessLabel": "none"},
            Status.OK,
            CONFLICT,
        ),
        (
            "zone label doesn't match",
            pod_with_volume("pod_1", "PVC_Stable_1"),
            {ZONE: "no_us-west1-a", "uselessLabel": "none"},
            Status.OK,
            CONFLICT,
        ),
        (
            "pv with zone and region, node with only zone",
            pod_with_volume("pod_1", "PVC_Stable_3"),
            {ZONE: "us-west1-a"},
            Status.OK,
            CONFLICT,
        ),
        (
            "pv with zone,node with beta zone",
            pod_with_volume("pod_1", "PVC_Stable_1"),
            {BETA_ZONE: "us-west1-a"},
            Status.OK,
            CONFLICT,
        ),
        (
            "pv with beta label,node with ga label, matched",
            pod_with_volume("pod_1", "PVC_1"),
            {ZONE: "us-west1-a"},
            Status.OK,
            Status.OK,
        ),
        (
            "pv with beta label,node with ga label, don't match",
            pod_with_volume("pod_1", "PVC_1"),
            {ZONE: "us-west1-b"},
            Status.OK,
            CONFLICT,
        ),
    ],
)
def test_single_zone(
    name: str,
    pod: PodView,
    node_labels: dict[str, str],
    want_pre_filter: Status,
    want_filter: Status,
) -> None:
    harness = build(SINGLE_ZONE_OBJECTS)
    assert run(harness, pod, make_node("host1", labels=node_labels)) == (
        want_pre_filter,
        want_filter,
    )


# -- TestMultiZone -------------------------------------------------------------------------

MULTI_ZONE_OBJECTS = [
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", {BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {ZONE: "us-west1-c__us-west1-a"}),
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_2", "Vol_2"),
    pvc("PVC_3", "Vol_3"),
    pvc("PVC_4", "Vol_not_exist"),
    pvc("PVC_Stable_1", "Vol_Stable_1"),
    pvc("PVC_Stable_2", "Vol_Stable_2"),
]


@pytest.mark.parametrize(
    ("name", "pod", "node_labels", "want_filter"),
    [
        ("node without labels", pod_with_volume("pod_1", "PVC_3"), {}, Status.OK),
        (
            "beta zone label matched",
            pod_with_volume("pod_1", "PVC_3"),
            {BETA_ZONE: "us-west1-a", "uselessLabel": "none"},
            Status.OK,
        ),
        (
            "beta zone label doesn't match",
            pod_with_volume("pod_1", "PVC_1"),
            {BETA_ZONE: "us-west1-b", "uselessLabel": "none"},
            CONFLICT,
        ),
        (
            "zone label matched",
            pod_with_volume("pod_1", "PVC_Stable_2"),
            {ZONE: "us-west1-a", "uselessLabel": "none"},
            Status.OK,
        ),
        (
            "zone label doesn't match",
            pod_with_volume("pod_1", "PVC_Stable_1"),
            {ZONE: "us-west1-b", "uselessLabel": "none"},
            CONFLICT,
        ),
    ],
)
def test_multi_zone(
    name: str, pod: PodView, node_labels: dict[str, str], want_filter: Status
) -> None:
    harness = build(MULTI_ZONE_OBJECTS)
    assert run(harness, pod, make_node("host1", labels=node_labels)) == (Status.OK, want_filter)


# -- TestWithBinding -----------------------------------------------------------------------

BINDING_OBJECTS = [
    storage_class("Class_Immediate"),  # no volumeBindingMode, as upstream's fake class
    storage_class("Class_Wait", WAIT),
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_NoSC", class_name="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", class_name="Class_Wait"),
    pvc("PVC_ImmediateSC", class_name="Class_Immediate"),
]
NO_NAMES = Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
# client-go's StorageClass lister names the resource in the singular (upstream's fake lister
# says "storageclasses.storage.k8s.io").
NO_CLASS = Status.unresolvable('storageclass.storage.k8s.io "Class_0" not found')
MODE_NOT_SET = Status.unresolvable('VolumeBindingMode not set for StorageClass "Class_Immediate"')


@pytest.mark.parametrize(
    ("name", "claim", "want_pre_filter", "want_filter"),
    [
        ("label zone failure domain matched", "PVC_1", Status.OK, Status.OK),
        ("unbound volume empty storage class", "PVC_EmptySC", NO_NAMES, NO_NAMES),
        ("unbound volume no storage class", "PVC_NoSC", NO_CLASS, NO_CLASS),
        ("unbound volume immediate binding mode", "PVC_ImmediateSC", MODE_NOT_SET, MODE_NOT_SET),
        ("unbound volume wait binding mode", "PVC_WaitSC", SKIP, Status.OK),
    ],
)
def test_with_binding(name: str, claim: str, want_pre_filter: Status, want_filter: Status) -> None:
    harness = build(BINDING_OBJECTS)
    node = make_node("host1", labels={BETA_ZONE: "us-west1-a", "uselessLabel": "none"})
    assert run(harness, pod_with_volume("pod_1", claim), node) == (want_pre_filter, want_filter)


@pytest.mark.parametrize(
    ("name", "claim", "objects", "want"),
    [
        # The errors of upstream's getPVbyPod the ported tables do not reach.
        (
            "missing claim",
            "PVC_X",
            [],
            Status.unresolvable('persistentvolumeclaim "PVC_X" not found'),
        ),
        (
            "bound to a missing volume",
            "PVC_4",
            [pvc("PVC_4", "Vol_not_exist")],
            Status.unresolvable('persistentvolume "Vol_not_exist" not found'),
        ),
        (
            "unbound with an Immediate class",
            "PVC_I",
            [pvc("PVC_I", class_name="fast"), storage_class("fast", "Immediate")],
            Status.unresolvable("PersistentVolume had no name"),
        ),
        ("claim without a name", "", [], Status.unresolvable("PersistentVolumeClaim had no name")),
    ],
)
def test_pre_filter_errors(name: str, claim: str, objects: list[Any], want: Status) -> None:
    harness = build(objects)
    assert run(
        harness, pod_with_volume("pod_1", claim), make_node("host1", labels={ZONE: "z"})
    ) == (want, want)
    # The framework stops at the rejection and names the plugin.
    _, status, _ = harness.framework.run_pre_filter_plugins(
        CycleState(), pod_with_volume("pod_1", claim), []
    )
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and status.plugin == NAME


def test_ephemeral_volumes_are_not_read() -> None:
    """Only persistentVolumeClaim volumes are looked at (upstream's
    getPersistentVolumeClaimNameFromPod)."""
    base = make_pod("pod_1", uid="uid-pod_1")
    raw = {
        **base.raw,
        "spec": {**base.raw["spec"], "volumes": [{"name": "e", "ephemeral": {}}]},
    }
    harness = build([])
    assert run(harness, replace(base, raw=raw), make_node("host1", labels={ZONE: "z"})) == (
        SKIP,
        Status.OK,
    )


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("us-west1-a", {"us-west1-a"}),
        ("us-west1-c__us-west1-a", {"us-west1-c", "us-west1-a"}),
        (" a __ b ", {"a", "b"}),
        ("a____b", None),  # an empty entry: the label is ignored
        ("", None),
    ],
)
def test_label_zones_to_set(value: str, want: set[str] | None) -> None:
    assert label_zones_to_set(value) == (None if want is None else frozenset(want))


def test_unparsable_pv_label_is_ignored() -> None:
    harness = build([pv("Vol", {ZONE: "a____b"}), pvc("PVC", "Vol")])
    assert run(harness, pod_with_volume("p", "PVC"), make_node("host1", labels={ZONE: "b"})) == (
        SKIP,
        Status.OK,
    )


def test_malformed_volume_gives_an_error_naming_the_field() -> None:
    base = make_pod("pod_1", uid="uid-pod_1")
    raw = {**base.raw, "spec": {**base.raw["spec"], "volumes": [{"persistentVolumeClaim": 1}]}}
    harness = build([])
    pre_filter, filter_status = run(harness, replace(base, raw=raw), make_node("host1"))
    assert pre_filter.code == Code.ERROR
    assert "spec.volumes[0].persistentVolumeClaim" in pre_filter.message
    assert filter_status == pre_filter


def test_filter_over_many_nodes_matches_per_node() -> None:
    """The row fast path over a snapshot of several nodes."""
    nodes = [
        make_node("n1", labels={ZONE: "us-west1-a"}),
        make_node("n2", labels={ZONE: "us-west1-b"}),
        make_node("n3"),
        make_node("n4", labels={BETA_ZONE: "us-west1-c"}),
    ]
    harness = build(MULTI_ZONE_OBJECTS, nodes)
    pod = pod_with_volume("p", "PVC_Stable_2")
    snapshot = Snapshot.from_node_infos(NodeInfo(n) for n in nodes)
    state = CycleState()
    assert harness.plugin.pre_filter(state, pod, snapshot.list())[1].is_success
    table = snapshot.node_table()
    rows = np.arange(len(table), dtype=np.intp)[::-1].copy()
    verdict = harness.plugin.filter_rows(state, pod, table, rows)
    assert verdict is not None
    got = {
        table.names[row]: Status.OK if verdict.passed[i] else verdict.reject(row)
        for i, row in enumerate(rows.tolist())
    }
    want = {info.node_name: harness.plugin.filter(state, pod, info) for info in snapshot.list()}
    assert got == want == {"n1": Status.OK, "n2": CONFLICT, "n3": Status.OK, "n4": CONFLICT}


# -- queueing hints ----------------------------------------------------------------------

PVC_ADD = ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD, "PvcAdd")
PVC_UPDATE = ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.UPDATE, "PvcUpdate")
SC_ADD = ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD, "StorageClassAdd")
PV_ADD = ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD, "PvAdd")
PV_UPDATE = ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.UPDATE, "PvUpdate")


def hint(pod: PodView, event: ClusterEvent, old: Any, new: Any) -> QueueingHint:
    """The framework's answer for a pod VolumeZone rejected."""
    harness = build([])
    info = QueuedPodInfo(pod=pod, timestamp=0.0, attempts=1, unschedulable_plugins={NAME})
    return harness.framework.queueing_hint(info, event, old, new)


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"),
    [
        # TestIsSchedulableAfterPersistentVolumeClaimAdded
        ("error-wrong-new-object", pod_with_volume("pod_1", "PVC_1"), None, "not-a-pvc", QUEUE),
        (
            "pvc-was-added-but-pod-refers-no-pvc",
            make_pod("pod_1", uid="uid-pod_1"),
            None,
            pvc("PVC_1", "Vol_1"),
            QUEUE_SKIP,
        ),
        (
            "pvc-was-added-and-pod-was-bound-to-different-pvc",
            pod_with_volume("pod_1", "PVC_2"),
            None,
            pvc("PVC_1", "Vol_1"),
            QUEUE_SKIP,
        ),
        (
            "pvc-was-added-and-pod-was-bound-to-pvc-but-different-ns",
            pod_with_volume("pod_1", "PVC_1"),
            None,
            pvc("PVC_1", "Vol_1", namespace="ns1"),
            QUEUE_SKIP,
        ),
        (
            "pvc-was-added-and-pod-was-bound-to-the-pvc",
            pod_with_volume("pod_1", "PVC_1"),
            None,
            pvc("PVC_1", "Vol_1"),
            QUEUE,
        ),
        (
            "pvc-was-updated-and-pod-was-bound-to-the-pvc",
            pod_with_volume("pod_1", "PVC_1"),
            pvc("PVC_1"),
            pvc("PVC_1", "Vol_1"),
            QUEUE,
        ),
        (
            "pvc-was-updated-but-pod-refers-no-pvc",
            make_pod("pod_1", uid="uid-pod_1"),
            pvc("PVC_1"),
            pvc("PVC_1", "Vol_1"),
            QUEUE_SKIP,
        ),
    ],
)
def test_hint_after_claim_change(
    name: str, pod: PodView, old: Any, new: Any, want: QueueingHint
) -> None:
    event = PVC_ADD if old is None else PVC_UPDATE
    assert hint(pod, event, old, new) == want


@pytest.mark.parametrize(
    ("name", "new", "want"),
    [
        # TestIsSchedulableAfterStorageClassAdded
        ("error-wrong-new-object", "not-a-storageclass", QUEUE),
        ("sc-doesn't-have-volume-binding-mode", storage_class("SC_1"), QUEUE_SKIP),
        ("new-sc-is-wait-for-first-consumer-mode", storage_class("SC_1", WAIT), QUEUE),
    ],
)
def test_hint_after_storage_class_added(name: str, new: Any, want: QueueingHint) -> None:
    assert hint(pod_with_volume("pod_1", "PVC_1"), SC_ADD, None, new) == want


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        # TestIsSchedulableAfterPersistentVolumeChange
        ("error-wrong-new-object", None, "not-a-pv", QUEUE),
        ("error-wrong-old-object", "not-a-pv", pv("Vol_1"), QUEUE),
        ("new-pv-was-added", None, pv("Vol_1", {BETA_ZONE: "us-west1-b"}), QUEUE),
        (
            "pv-was-updated-and-changed-topology",
            pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
            pv("Vol_1", {BETA_ZONE: "us-west1-b"}),
            QUEUE,
        ),
        (
            "pv-was-updated-and-added-topology-label",
            pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
            pv("Vol_1", {BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            QUEUE,
        ),
        (
            "pv-was-updated-but-no-topology-is-changed",
            pv("Vol_1", {BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            pv("Vol_1", {BETA_ZONE: "us-west1-a", ZONE: "zone"}),
            QUEUE_SKIP,
        ),
    ],
)
def test_hint_after_volume_change(name: str, old: Any, new: Any, want: QueueingHint) -> None:
    event = PV_ADD if old is None else PV_UPDATE
    assert hint(pod_with_volume("pod_1", "PVC_1"), event, old, new) == want


@pytest.mark.parametrize(
    ("event", "want"),
    [
        (ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeAdd"), QUEUE),
        (ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL), QUEUE),
        # With queueing hints upstream drops UpdateNodeTaint (it was only for preCheck).
        (ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT), QUEUE_SKIP),
        (ClusterEvent(EventResource.STORAGE_CLASS, ActionType.UPDATE), QUEUE_SKIP),
        (ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE), QUEUE_SKIP),
    ],
)
def test_registered_events(event: ClusterEvent, want: QueueingHint) -> None:
    assert hint(pod_with_volume("pod_1", "PVC_1"), event, None, make_node("host1")) == want
