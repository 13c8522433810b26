"""VolumeRestrictions, ported from upstream's
pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions_test.go
(TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts,
TestAccessModeConflicts, Test_isSchedulableAfterPodDeleted,
Test_isSchedulableAfterPersistentVolumeClaimChange): inputs and expected statuses / hints.

The plugin runs inside a Framework built from a Registry holding only its entry, over a real
Snapshot and StorageObjects, so PreFilter → Filter run as in the scheduler (Skip puts it in
skip_filter_plugins; filter_rows must agree with filter on every node).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest

from scheduler.api.objects import PodView
from scheduler.api.storage import PersistentVolumeClaimView
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.framework.interface import CycleState
from scheduler.framework.registry import Registry
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.framework.status import Code, Status
from scheduler.listers.cluster_objects import ClusterObjects
from scheduler.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
    NAME,
    PLUGIN_ENTRY,
    PRE_FILTER_STATE_KEY,
    VolumeRestrictions,
)
from scheduler.queue.types import QueuedPodInfo
from scheduler.testing import RecordingClient, StaticNominator, make_node, make_node_info, make_pod

SKIP = Status.skip()
DISK_CONFLICT = Status.unschedulable(ERR_REASON_DISK_CONFLICT)
RWOP_CONFLICT = Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
QUEUE, QUEUE_SKIP = QueueingHint.QUEUE, QueueingHint.SKIP


def make_claim(name: str, access_modes: Sequence[str], namespace: str = "default") -> Any:
    return PersistentVolumeClaimView.from_dict(
        {
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"},
            "spec": {"accessModes": list(access_modes)},
        }
    )


@dataclass
class Harness:
    framework: Framework
    plugin: VolumeRestrictions
    snapshot: Snapshot


def build(pods: Iterable[PodView] = (), claims: Iterable[Any] = ()) -> Harness:
    """A framework with VolumeRestrictions at PreFilter and Filter; `pods` run on node-1
    (upstream's cache.NewSnapshot(existingPods, existingNodes))."""
    registry = Registry()
    registry.register(PLUGIN_ENTRY)
    node_info = make_node_info(make_node("node-1"), pods)
    snapshot = Snapshot.from_node_infos([node_info])
    objects = ClusterObjects()
    objects.storage.add(*claims)
    deps = HandleDeps(
        snapshot=lambda: snapshot,
        client=RecordingClient(),
        nominator=StaticNominator(),
        cluster_objects=objects,
        rng=random.Random(1),
    )
    enabled = {"preFilter": [(NAME, 0)], "filter": [(NAME, 0)]}
    framework = Framework.build("default-scheduler", registry, enabled, {}, deps)
    plugin = framework.plugins[NAME]
    assert isinstance(plugin, VolumeRestrictions)
    return Harness(framework, plugin, snapshot)


def node_info_of(pods: Iterable[PodView]) -> NodeInfo:
    """framework.NewNodeInfo(pods...), on a node named node-1."""
    return make_node_info(make_node("node-1"), pods)


def run(harness: Harness, pod: PodView, node_info: NodeInfo) -> tuple[Status, Status | None]:
    """(PreFilter status, Filter status or None when PreFilter did not succeed), the way the
    framework runs them; the plugin's own PreFilter status must agree."""
    state = CycleState()
    _, own, _ = harness.framework.run_pre_filter_plugins(state, pod, harness.snapshot.list())
    direct_state = CycleState()
    _, direct = harness.plugin.pre_filter(direct_state, pod, harness.snapshot.list())
    if direct.is_skip:
        assert own.is_success and NAME in state.skip_filter_plugins
        return direct, None
    assert own == direct
    if not direct.is_success:
        return direct, None
    status = harness.plugin.filter(state, pod, node_info)
    assert harness.framework.run_filter_plugins(state, pod, node_info) == status
    # The row fast path agrees with Filter.
    table = Snapshot.from_node_infos([node_info]).node_table()
    rows = np.arange(len(table), dtype=np.intp)
    verdict = harness.plugin.filter_rows(state, pod, table, rows)
    assert verdict is not None
    by_rows = Status.OK if verdict.passed[0] else verdict.reject(0)
    assert by_rows == status
    return direct, status


def gce(pd_name: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "v", "gcePersistentDisk": {"pdName": pd_name, "readOnly": read_only}}


def aws(volume_id: str) -> dict[str, Any]:
    return {"name": "v", "awsElasticBlockStore": {"volumeID": volume_id}}


def rbd(monitors: list[str], pool: str = "foo", image: str = "bar") -> dict[str, Any]:
    return {
        "name": "v",
        "rbd": {"monitors": monitors, "pool": pool, "image": image, "fsType": "ext4"},
    }


def iscsi(iqn: str, read_only: bool = False) -> dict[str, Any]:
    return {
        "name": "v",
        "iscsi": {
            "targetPortal": "127.0.0.1:3260",
            "iqn": iqn,
            "fsType": "ext4",
            "lun": 0,
            "readOnly": read_only,
        },
    }


NO_RESTRICTION = {"name": "volume with no restriction"}

# (kind, volState, volState2) of TestGCEDiskConflicts, TestAWSDiskConflicts,
# TestRBDDiskConflicts and TestISCSIDiskConflicts.
DISKS = {
    "gce": (gce("foo"), gce("bar")),
    "aws": (aws("foo"), aws("bar")),
    "rbd": (rbd(["a", "b"]), rbd(["c", "d"])),
    "iscsi": (
        iscsi("iqn.2016-12.server:storage.target01"),
        iscsi("iqn.2017-12.server:storage.target01"),
    ),
}


@pytest.mark.parametrize("kind", sorted(DISKS))
@pytest.mark.parametrize(
    ("name", "pod_volume", "node_volumes", "want_pre_filter", "want_filter"),
    [
        ("nothing", None, [], SKIP, None),
        ("one state", None, ["state"], SKIP, None),
        ("same state", "state", ["state"], Status.OK, DISK_CONFLICT),
        ("different state", "state2", ["state"], Status.OK, Status.OK),
    ],
)
def test_disk_conflicts(
    kind: str,
    name: str,
    pod_volume: str | None,
    node_volumes: list[str],
    want_pre_filter: Status,
    want_filter: Status | None,
) -> None:
    state, state2 = DISKS[kind]
    volumes = {"state": state, "state2": state2}
    pod = make_pod(volumes=[volumes[pod_volume]] if pod_volume else [])
    existing = [make_pod(volumes=[volumes[v]]) for v in node_volumes]
    harness = build(existing)
    assert run(harness, pod, node_info_of(existing)) == (want_pre_filter, want_filter)


def test_pod_with_a_volume_that_has_no_restrictions_is_skipped() -> None:
    # TestGCEDiskConflicts "pod with a volume that doesn't have restrictions".
    harness = build()
    assert run(harness, make_pod(volumes=[NO_RESTRICTION]), node_info_of([])) == (SKIP, None)


@pytest.mark.parametrize(
    ("name", "pod_volume", "existing_volume", "conflict"),
    [
        # Upstream's isVolumeConflict rules beyond the ported tables.
        ("gce both read-only", gce("foo", True), gce("foo", True), False),
        ("gce one read-only", gce("foo", True), gce("foo"), True),
        ("aws read-only still conflicts", aws("foo"), aws("foo"), True),
        ("iscsi both read-only", iscsi("q", True), iscsi("q", True), False),
        ("rbd overlapping monitors", rbd(["a", "b"]), rbd(["b", "c"]), True),
        ("rbd other pool", rbd(["a"], pool="p1"), rbd(["a"], pool="p2"), False),
        ("rbd other image", rbd(["a"], image="i1"), rbd(["a"], image="i2"), False),
        ("rbd default pool", rbd(["a"], pool=""), rbd(["a"], pool="rbd"), True),
        ("different kinds", gce("foo"), aws("foo"), False),
    ],
)
def test_conflict_rules(
    name: str, pod_volume: dict[str, Any], existing_volume: dict[str, Any], conflict: bool
) -> None:
    existing = [make_pod(volumes=[existing_volume])]
    harness = build(existing)
    _, status = run(harness, make_pod(volumes=[pod_volume]), node_info_of(existing))
    assert status == (DISK_CONFLICT if conflict else Status.OK)


# TestAccessModeConflicts
POD_WITH_ONE_PVC = make_pod(
    "pod-with-one-pvc", namespace="default", pvcs=["claim-with-rwop-1"], node_name="node-1"
)
POD_WITH_TWO_PVCS = make_pod(
    "pod-with-two-pvcs",
    namespace="default",
    pvcs=["claim-with-rwop-1", "claim-with-rwop-2"],
    node_name="node-1",
)
POD_WITH_ONE_CONFLICT = make_pod(
    "pod-with-one-conflict", namespace="default", pvcs=["claim-with-rwop-1"], node_name="node-1"
)
POD_WITH_TWO_CONFLICTS = make_pod(
    "pod-with-two-conflicts",
    namespace="default",
    pvcs=["claim-with-rwop-1", "claim-with-rwop-2"],
    node_name="node-1",
)
POD_WITH_RWX = make_pod(
    "pod-with-rwx", namespace="default", pvcs=["claim-with-rwx"], node_name="node-1"
)
RWOP_1 = make_claim("claim-with-rwop-1", ["ReadWriteOncePod"])
RWOP_2 = make_claim("claim-with-rwop-2", ["ReadWriteOncePod"])
RWX = make_claim("claim-with-rwx", ["ReadWriteMany"])


@pytest.mark.parametrize(
    ("name", "pod", "existing", "claims", "want_pre_filter", "want_filter"),
    [
        ("nothing", make_pod(), [], [], SKIP, None),
        (
            "failed to get PVC",
            POD_WITH_ONE_PVC,
            [],
            [],
            # client-go's PVC lister names the resource in the singular.
            Status.unresolvable('persistentvolumeclaim "claim-with-rwop-1" not found'),
            None,
        ),
        ("no access mode conflict", POD_WITH_ONE_PVC, [POD_WITH_RWX], [RWOP_1, RWX], SKIP, None),
        (
            "access mode conflict, unschedulable",
            POD_WITH_ONE_CONFLICT,
            [POD_WITH_ONE_PVC, POD_WITH_RWX],
            [RWOP_1, RWX],
            Status.OK,
            RWOP_CONFLICT,
        ),
        (
            "two conflicts, unschedulable",
            POD_WITH_TWO_CONFLICTS,
            [POD_WITH_TWO_PVCS, POD_WITH_RWX],
            [RWOP_1, RWOP_2, RWX],
            Status.OK,
            RWOP_CONFLICT,
        ),
    ],
)
def test_access_mode_conflicts(
    name: str,
    pod: PodView,
    existing: list[PodView],
    claims: list[Any],
    want_pre_filter: Status,
    want_filter: Status | None,
) -> None:
    harness = build(existing, claims)
    assert run(harness, pod, node_info_of(existing)) == (want_pre_filter, want_filter)
    if want_pre_filter.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        # The framework stops at once and names the plugin.
        _, status, _ = harness.framework.run_pre_filter_plugins(
            CycleState(), pod, harness.snapshot.list()
        )
        assert status.plugin == NAME


def test_read_write_once_pod_count_follows_added_and_removed_pods() -> None:
    """AddPod / RemovePod (preemption's dry runs): removing the user frees the claim on every
    node; adding one back conflicts again, and a clone keeps its own count."""
    harness = build([POD_WITH_ONE_PVC], [RWOP_1])
    state = CycleState()
    _, status = harness.plugin.pre_filter(state, POD_WITH_ONE_CONFLICT, harness.snapshot.list())
    assert status.is_success
    info = harness.snapshot.list()[0]
    assert harness.plugin.filter(state, POD_WITH_ONE_CONFLICT, info) == RWOP_CONFLICT
    extensions = harness.plugin.pre_filter_extensions()
    assert extensions is not None
    copy = state.clone()
    assert extensions.remove_pod(copy, POD_WITH_ONE_CONFLICT, POD_WITH_ONE_PVC, info).is_success
    assert harness.plugin.filter(copy, POD_WITH_ONE_CONFLICT, info) == Status.OK
    assert harness.plugin.filter(state, POD_WITH_ONE_CONFLICT, info) == RWOP_CONFLICT
    assert extensions.add_pod(copy, POD_WITH_ONE_CONFLICT, POD_WITH_ONE_PVC, info).is_success
    assert harness.plugin.filter(copy, POD_WITH_ONE_CONFLICT, info) == RWOP_CONFLICT
    # Through the framework, as preemption calls them.
    fw = harness.framework
    copy2 = state.clone()
    assert fw.run_pre_filter_extension_remove_pod(
        copy2, POD_WITH_ONE_CONFLICT, POD_WITH_ONE_PVC, info
    ).is_success
    assert fw.run_filter_plugins(copy2, POD_WITH_ONE_CONFLICT, info) == Status.OK


def test_extensions_without_pre_filter_state_err() -> None:
    harness = build()
    pod = make_pod(volumes=[gce("foo")])
    info = node_info_of([])
    want = Status.error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
    assert harness.plugin.add_pod(CycleState(), pod, pod, info) == want
    assert harness.plugin.filter(CycleState(), pod, info) == want
    # The disk check still runs first, as upstream's Filter does it before reading state.
    taken = node_info_of([make_pod(volumes=[gce("foo")])])
    assert harness.plugin.filter(CycleState(), pod, taken) == DISK_CONFLICT


@pytest.mark.parametrize(
    ("name", "raw_volumes", "field", "read_on_nodes"),
    [
        ("volume not an object", ["oops"], "spec.volumes[0]", True),
        (
            "gce source not an object",
            [{"name": "v", "gcePersistentDisk": 3}],
            "spec.volumes[0].gcePersistentDisk",
            True,
        ),
        (
            "rbd monitors not a list",
            [{"name": "v", "rbd": {"monitors": "a", "image": "i"}}],
            "spec.volumes[0].rbd.monitors",
            True,
        ),
        (
            "claim name not a string",
            [{"name": "v", "persistentVolumeClaim": {"claimName": 7}}],
            "spec.volumes[0].persistentVolumeClaim.claimName",
            # Filter reads only the disks of pods on the node.
            False,
        ),
    ],
)
def test_malformed_volumes_give_an_error_naming_the_field(
    name: str, raw_volumes: list[Any], field: str, read_on_nodes: bool
) -> None:
    harness = build()
    good = make_pod("p", namespace="default", volumes=[gce("foo")])
    raw = {**good.raw, "spec": {**good.raw["spec"], "volumes": raw_volumes}}
    bad = replace(good, raw=raw)
    _, status = harness.plugin.pre_filter(CycleState(), bad, harness.snapshot.list())
    assert status.code == Code.ERROR and field in status.message
    # An existing pod with malformed volumes errs on its node only, naming the pod.
    info = node_info_of([bad.with_node("node-1")])
    state = CycleState()
    assert harness.plugin.pre_filter(state, good, harness.snapshot.list())[1].is_success
    status = harness.plugin.filter(state, good, info)
    if read_on_nodes:
        assert status.code == Code.ERROR and f"pod default/p: {field}" in status.message
    else:
        assert status == Status.OK


def test_pods_without_volumes_cost_nothing_at_filter() -> None:
    harness = build([make_pod(volumes=[gce("foo")])])
    state = CycleState()
    _, status, _ = harness.framework.run_pre_filter_plugins(
        state, make_pod(), harness.snapshot.list()
    )
    assert status.is_success and NAME in state.skip_filter_plugins
    assert harness.framework.per_node_filters(state) == []


# -- queueing hints ----------------------------------------------------------------------

POD_DELETE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
PVC_ADD = ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD, "PvcAdd")


def hint(pod: PodView, event: ClusterEvent, old: Any, new: Any) -> QueueingHint:
    """The framework's answer for a pod VolumeRestrictions rejected."""
    harness = build()
    info = QueuedPodInfo(pod=pod, timestamp=0.0, attempts=1, unschedulable_plugins={NAME})
    return harness.framework.queueing_hint(info, event, old, new)


@pytest.mark.parametrize(
    ("name", "pod", "deleted", "want"),
    [
        # Test_isSchedulableAfterPodDeleted
        (f"queue-new-object-{kind}disk-conflict", vols[0], vols[0], QUEUE)
        for kind, vols in DISKS.items()
    ]
    + [
        (f"skip-new-object-{kind}disk-no-conflict", vols[0], vols[1], QUEUE_SKIP)
        for kind, vols in DISKS.items()
    ]
    + [
        ("queue-has-same-claim", "claim-rwop", "claim-rwop", QUEUE),
        ("skip-no-same-claim", "claim-1-rwop", "claim-2-rwop", QUEUE_SKIP),
    ],
)
def test_hint_after_pod_deleted(name: str, pod: Any, deleted: Any, want: QueueingHint) -> None:
    def as_pod(name: str, spec: Any) -> PodView:
        if isinstance(spec, str):
            return make_pod(name, pvcs=[spec])
        return make_pod(name, volumes=[spec])

    assert hint(as_pod("pod1", pod), POD_DELETE, as_pod("pod2", deleted), None) == want


def test_hint_after_pod_deleted_in_another_namespace_skips() -> None:
    pod = make_pod("pod1", namespace="a", volumes=[gce("foo")])
    deleted = make_pod("pod2", namespace="b", volumes=[gce("foo")])
    assert hint(pod, POD_DELETE, deleted, None) == QUEUE_SKIP


POD_ONE_RWX = make_pod(
    "pod-with-one-pvc", namespace="default", pvcs=["claim-with-rwx-1"], node_name="node-1"
)
POD_TWO_RWX = make_pod(
    "pod-with-two-pvcs",
    namespace="default",
    pvcs=["claim-with-rwx-1", "claim-with-rwx-2"],
    node_name="node-1",
)
POD_OTHER_NAMESPACE = make_pod(
    "pod-with-one-pvc", namespace="kube-system", pvcs=["claim-with-rwx-1"], node_name="node-1"
)
PVC_1 = make_claim("claim-with-rwx-1", ["ReadWriteMany"])
PVC_2 = make_claim("claim-with-rwx-2", ["ReadWriteMany"])


@pytest.mark.parametrize(
    ("name", "pod", "new", "want"),
    [
        # Test_isSchedulableAfterPersistentVolumeClaimChange
        ("queue-new-object-pvc-belong-pod", POD_TWO_RWX, PVC_1, QUEUE),
        ("skip-new-object-unused", POD_ONE_RWX, PVC_2, QUEUE_SKIP),
        ("skip-nil-old-object", POD_ONE_RWX, PVC_2, QUEUE_SKIP),
        ("skip-new-object-not-belong-pod", POD_ONE_RWX, PVC_2, QUEUE_SKIP),
        ("skip-new-object-namespace-not-equal-pod", POD_OTHER_NAMESPACE, PVC_1, QUEUE_SKIP),
        # Not a PVC: Queue (upstream returns an error, which queues).
        ("unexpected object", POD_ONE_RWX, "not-a-pvc", QUEUE),
    ],
)
def test_hint_after_claim_added(name: str, pod: PodView, new: Any, want: QueueingHint) -> None:
    assert hint(pod, PVC_ADD, None, new) == want


@pytest.mark.parametrize(
    ("event", "want"),
    [
        (ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeAdd"), QUEUE),
        (ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL), QUEUE_SKIP),
        (ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.UPDATE), QUEUE_SKIP),
        (ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_LABEL), QUEUE_SKIP),
    ],
)
def test_registered_events(event: ClusterEvent, want: QueueingHint) -> None:
    """Node/Add always queues (no hint, queueing hints enabled); other events are not
    registered."""
    assert hint(make_pod(pvcs=["c"]), event, None, make_node("node-1")) == want


def test_reasons_are_upstreams_v136() -> None:
    """volume_restrictions.go's and binder.go's reasons as v1.36 words them."""
    from scheduler.plugins.volumebinding import ERR_REASON_NODE_CONFLICT

    assert ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT == (
        "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
        "already in-use by another pod"
    )
    assert ERR_REASON_NODE_CONFLICT == "node(s) didn't match PersistentVolume's node affinity"
