"""NodeVolumeLimits, ported from upstream's
pkg/scheduler/framework/plugins/nodevolumelimits/csi_test.go (TestCSILimits, TestCSILimitsQHint,
TestCSILimitsAddedPVCQHint): inputs and expected statuses / hints.

Not ported: the cases that need in-tree volume translation (migrationEnabled: in-tree PVs,
inline in-tree volumes, in-tree provisioners), which this port leaves out, and the cases about
VolumeAttachments (vaCount, TestCSILimitsDeletedVolumeAttachmentQHint), which the scheduler
does not watch. "should not count non-migratable in-tree volumes" is kept: a hostPath PV is
never counted.

Upstream's fake listers name resources in the plural ("persistentvolumeclaims"); the real
client-go listers, which this port follows, use the singular.

The plugin runs inside a Framework built from a Registry holding only its entry, over a real
Snapshot and StorageObjects; the framework's Filter and the row fast path must agree with the
plugin's Filter.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest

from scheduler.api.objects import PodView
from scheduler.api.storage import (
    CSIDriverView,
    CSINodeView,
    PersistentVolumeClaimView,
    PersistentVolumeView,
    StorageClassView,
)
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.framework.interface import CycleState
from scheduler.framework.registry import Registry
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.framework.status import Code, Status
from scheduler.listers.cluster_objects import ClusterObjects
from scheduler.plugins.nodevolumelimits import (
    ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED,
    NAME,
    PLUGIN_ENTRY,
    NodeVolumeLimits,
)
from scheduler.queue.types import QueuedPodInfo
from scheduler.testing import RecordingClient, StaticNominator, make_node, make_node_info, make_pod

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
HOSTPATH_IN_TREE = "kubernetes.io/hostpath"
SC_NAME = "csi-sc"
NODE = "node-for-max-pd-test-1"

SKIP = Status.skip()
EXCEEDED = Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
QUEUE, QUEUE_SKIP = QueueingHint.QUEUE, QueueingHint.SKIP


def claim(
    name: str,
    *,
    namespace: str = "default",
    volume_name: str = "",
    class_name: str | None = None,
    owner_uid: str | None = None,
    owner_name: str = "",
) -> PersistentVolumeClaimView:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "resourceVersion": "1"}
    if owner_uid is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": owner_name,
                "uid": owner_uid,
                "controller": True,
            }
        ]
    spec: dict[str, Any] = {}
    if volume_name:
        spec["volumeName"] = volume_name
    if class_name is not None:
        spec["storageClassName"] = class_name
    return PersistentVolumeClaimView.from_dict({"metadata": meta, "spec": spec})


def fake_pvs(driver_names: Sequence[str]) -> list[PersistentVolumeView]:
    """getFakeCSIPVLister("csi", drivers...): csi-<driver>-<0..3>, CSI ones unless the driver
    is an in-tree plugin name."""
    pvs = []
    for driver in driver_names:
        for j in range(4):
            handle = f"csi-{driver}-{j}"
            spec: dict[str, Any] = {"csi": {"driver": driver, "volumeHandle": handle}}
            if driver == HOSTPATH_IN_TREE:
                spec = {"hostPath": {"path": "/tmp"}}
            pvs.append(
                PersistentVolumeView.from_dict(
                    {"metadata": {"name": handle, "resourceVersion": "1"}, "spec": spec}
                )
            )
    return pvs


def fake_pvcs(driver_names: Sequence[str]) -> list[PersistentVolumeClaimView]:
    """getFakeCSIPVCLister("csi", "csi-sc", drivers...)."""
    pvcs = [
        claim(f"csi-{driver}-{j}", volume_name=f"csi-{driver}-{j}")
        for driver in driver_names
        for j in range(4)
    ]
    pvcs.append(claim("csi-4", class_name=SC_NAME))
    pvcs.append(claim("csi-5"))
    # A claim with a missing PV but an available class.
    pvcs.append(claim("csi-6", class_name=SC_NAME, volume_name="missing-in-action"))
    return pvcs


def csi_node(limit_source: str, limit: int, driver_names: Sequence[str]) -> CSINodeView | None:
    """getNodeWithPodAndVolumeLimits's CSINode ("no-csi-driver": one listing no driver)."""
    if limit_source not in ("csinode", "csinode-with-no-limit", "no-csi-driver"):
        return None
    drivers = []
    for driver in driver_names if limit_source != "no-csi-driver" else ():
        entry: dict[str, Any] = {"name": driver, "nodeID": NODE}
        if limit_source == "csinode":
            entry["allocatable"] = {"count": limit}
        drivers.append(entry)
    return CSINodeView.from_dict(
        {"metadata": {"name": NODE, "resourceVersion": "1"}, "spec": {"drivers": drivers}}
    )


@dataclass
class Harness:
    framework: Framework
    plugin: NodeVolumeLimits
    snapshot: Snapshot


def build(
    nodes: Iterable[NodeInfo], objects: Iterable[Any], gates: dict[str, bool] | None = None
) -> Harness:
    registry = Registry()
    registry.register(PLUGIN_ENTRY)
    snapshot = Snapshot.from_node_infos(nodes)
    cluster = ClusterObjects()
    cluster.storage.add(*objects)
    deps = HandleDeps(
        snapshot=lambda: snapshot,
        client=RecordingClient(),
        nominator=StaticNominator(),
        cluster_objects=cluster,
        rng=random.Random(1),
        feature_gates=gates or {},
    )
    enabled = {"preFilter": [(NAME, 0)], "filter": [(NAME, 0)]}
    framework = Framework.build("default-scheduler", registry, enabled, {}, deps)
    plugin = framework.plugins[NAME]
    assert isinstance(plugin, NodeVolumeLimits)
    return Harness(framework, plugin, snapshot)


def node_info(pods: Iterable[PodView], name: str = NODE) -> NodeInfo:
    return make_node_info(make_node(name), pods)


def run(harness: Harness, pod: PodView) -> tuple[Status, Status | None]:
    """(PreFilter status, Filter status on the snapshot's one node, or None when skipped),
    checking that the framework and the row fast path agree with the plugin."""
    info = harness.snapshot.list()[0]
    state = CycleState()
    _, pre_filter = harness.plugin.pre_filter(state, pod, harness.snapshot.list())
    fw_state = CycleState()
    _, fw_status, _ = harness.framework.run_pre_filter_plugins(
        fw_state, pod, harness.snapshot.list()
    )
    if pre_filter.is_skip:
        assert fw_status.is_success and NAME in fw_state.skip_filter_plugins
        return pre_filter, None
    assert fw_status == pre_filter
    status = harness.plugin.filter(state, pod, info)
    # Without PreFilter's state Filter reads the volumes itself, to the same answer.
    assert harness.plugin.filter(CycleState(), pod, info) == status
    framework_status = harness.framework.run_filter_plugins(fw_state, pod, info)
    if status.code == Code.ERROR:
        assert framework_status.message == f'running "{NAME}" filter plugin: {status.message}'
    else:
        assert framework_status == status
    table = harness.snapshot.node_table()
    verdict = harness.plugin.filter_rows(fw_state, pod, table, np.arange(1, dtype=np.intp))
    assert verdict is not None
    assert (Status.OK if verdict.passed[0] else verdict.reject(0)) == status
    return pre_filter, status


# TestCSILimits' pods
RUNNING_POD = make_pod(pvcs=["csi-ebs.csi.aws.com-3"])
PENDING_VOLUME_POD = make_pod(pvcs=["csi-4"])
# A different pod than PENDING_VOLUME_POD, but using the same unbound PVC.
UNBOUND_PVC_POD2 = make_pod(pvcs=["csi-4"])
MISSING_PV_POD = make_pod(pvcs=["csi-6"])
NO_SC_PVC_POD = make_pod(pvcs=["csi-5"])
GCE_TWO_VOL_POD = make_pod(pvcs=["csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2"])
CSI_EBS_ONE_VOL_POD = make_pod(pvcs=["csi-ebs.csi.aws.com-0"])
CSI_EBS_TWO_VOL_POD = make_pod(pvcs=["csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2"])
IN_TREE_NON_MIGRATABLE_ONE_VOL_POD = make_pod(pvcs=["csi-kubernetes.io/hostpath-0"])
EPHEMERAL_VOLUME_POD = make_pod(
    "abc", namespace="test", uid="12345", volumes=[{"name": "xyz", "ephemeral": {}}]
)
EPHEMERAL_CLAIM = claim(
    "abc-xyz", namespace="test", class_name=SC_NAME, owner_uid="12345", owner_name="abc"
)
CONFLICTING_CLAIM = claim("abc-xyz", namespace="test", class_name=SC_NAME)
EPHEMERAL_TWO_VOLUME_POD = make_pod(
    "abc",
    namespace="test",
    uid="12345II",
    volumes=[{"name": "x", "ephemeral": {}}, {"name": "y", "ephemeral": {}}],
)
EPHEMERAL_CLAIM_X = claim(
    "abc-x", namespace="test", class_name=SC_NAME, owner_uid="12345II", owner_name="abc"
)
EPHEMERAL_CLAIM_Y = claim(
    "abc-y", namespace="test", class_name=SC_NAME, owner_uid="12345II", owner_name="abc"
)
CONFIGMAP = {"name": "cm", "configMap": {}}
SECRET = {"name": "s", "secret": {}}
ONLY_CONFIGMAP_AND_SECRET_VOL_POD = make_pod(volumes=[CONFIGMAP, SECRET])
PVC_POD_WITH_CONFIGMAP_AND_SECRET = make_pod(
    volumes=[
        CONFIGMAP,
        SECRET,
        {"name": "p", "persistentVolumeClaim": {"claimName": "csi-ebs.csi.aws.com-0"}},
    ]
)
EPHEMERAL_POD_WITH_CONFIGMAP_AND_SECRET = make_pod(
    "abc", namespace="test", volumes=[CONFIGMAP, SECRET, {"name": "xyz", "ephemeral": {}}]
)
# client-go's PVC lister says "persistentvolumeclaim" (upstream's fake: "persistentvolumeclaims").
EPHEMERAL_MISSING = Status.unresolvable(
    'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found'
)


@dataclass(frozen=True)
class Case:
    new_pod: PodView
    existing: tuple[PodView, ...] = ()
    max_vols: int = 0
    driver_names: tuple[str, ...] = (EBS,)
    limit_source: str = "csinode"
    extra_claims: tuple[PersistentVolumeClaimView, ...] = ()
    want: Status = Status.OK
    want_pre_filter: Status = Status.OK


CSI_LIMITS = {
    "fits when node volume limit >= new pods CSI volume": Case(
        CSI_EBS_ONE_VOL_POD, (RUNNING_POD, CSI_EBS_TWO_VOL_POD), 4
    ),
    "doesn't when node volume limit <= pods CSI volume": Case(
        CSI_EBS_ONE_VOL_POD, (RUNNING_POD, CSI_EBS_TWO_VOL_POD), 2, want=EXCEEDED
    ),
    "should when driver does not support volume limits": Case(
        CSI_EBS_ONE_VOL_POD,
        (RUNNING_POD, CSI_EBS_TWO_VOL_POD),
        2,
        limit_source="csinode-with-no-limit",
    ),
    # should count pending PVCs
    "count pending PVCs towards volume limit <= pods CSI volume": Case(
        CSI_EBS_ONE_VOL_POD, (PENDING_VOLUME_POD, CSI_EBS_TWO_VOL_POD), 2, want=EXCEEDED
    ),
    # two same pending PVCs should be counted as 1
    "count multiple pending pvcs towards volume limit >= pods CSI volume": Case(
        CSI_EBS_ONE_VOL_POD, (PENDING_VOLUME_POD, UNBOUND_PVC_POD2, CSI_EBS_TWO_VOL_POD), 4
    ),
    # should count PVCs with invalid PV name but valid SC
    "should count PVCs with invalid PV name but valid SC": Case(
        CSI_EBS_ONE_VOL_POD, (MISSING_PV_POD, CSI_EBS_TWO_VOL_POD), 2, want=EXCEEDED
    ),
    # don't count a volume which has storageclass missing
    "don't count pvcs with missing SC towards volume limit": Case(
        CSI_EBS_ONE_VOL_POD, (RUNNING_POD, NO_SC_PVC_POD), 2
    ),
    # don't count multiple volume types
    "count pvcs with the same type towards volume limit": Case(
        CSI_EBS_ONE_VOL_POD,
        (GCE_TWO_VOL_POD, CSI_EBS_TWO_VOL_POD),
        2,
        (EBS, GCE),
        want=EXCEEDED,
    ),
    "don't count pvcs with different type towards volume limit": Case(
        GCE_TWO_VOL_POD, (CSI_EBS_TWO_VOL_POD, RUNNING_POD), 2, (EBS, GCE)
    ),
    "should not count non-migratable in-tree volumes": Case(
        IN_TREE_NON_MIGRATABLE_ONE_VOL_POD, (CSI_EBS_TWO_VOL_POD,), 2, (HOSTPATH_IN_TREE, EBS)
    ),
    # ephemeral volumes
    "ephemeral volume missing": Case(
        EPHEMERAL_VOLUME_POD, limit_source="csinode-with-no-limit", want=EPHEMERAL_MISSING
    ),
    "ephemeral volume not owned": Case(
        EPHEMERAL_VOLUME_POD,
        limit_source="csinode-with-no-limit",
        extra_claims=(CONFLICTING_CLAIM,),
        want=Status.error("PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"),
    ),
    "ephemeral volume unbound": Case(
        EPHEMERAL_VOLUME_POD,
        limit_source="csinode-with-no-limit",
        extra_claims=(EPHEMERAL_CLAIM,),
    ),
    "ephemeral doesn't when node volume limit <= pods CSI volume": Case(
        EPHEMERAL_VOLUME_POD,
        (RUNNING_POD, CSI_EBS_TWO_VOL_POD),
        2,
        extra_claims=(EPHEMERAL_CLAIM,),
        want=EXCEEDED,
    ),
    "ephemeral doesn't when node volume limit <= pods ephemeral CSI volume": Case(
        CSI_EBS_ONE_VOL_POD,
        (RUNNING_POD, EPHEMERAL_TWO_VOLUME_POD),
        2,
        extra_claims=(EPHEMERAL_CLAIM_X, EPHEMERAL_CLAIM_Y),
        want=EXCEEDED,
    ),
    # (upstream's "ephemeral disabled" variant: the gate is gone, the answer is the same)
    "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent "
    "volume, ephemeral disabled": Case(
        CSI_EBS_ONE_VOL_POD,
        (RUNNING_POD, EPHEMERAL_VOLUME_POD, CSI_EBS_TWO_VOL_POD),
        3,
        extra_claims=(EPHEMERAL_CLAIM,),
        want=EXCEEDED,
    ),
    "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent "
    "volume": Case(
        CSI_EBS_ONE_VOL_POD,
        (RUNNING_POD, EPHEMERAL_VOLUME_POD, CSI_EBS_TWO_VOL_POD),
        3,
        extra_claims=(EPHEMERAL_CLAIM,),
        want=EXCEEDED,
    ),
    "persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume": Case(
        CSI_EBS_ONE_VOL_POD,
        (RUNNING_POD, EPHEMERAL_VOLUME_POD, CSI_EBS_TWO_VOL_POD),
        5,
        extra_claims=(EPHEMERAL_CLAIM,),
    ),
    "skip Filter when the pod only uses secrets and configmaps": Case(
        ONLY_CONFIGMAP_AND_SECRET_VOL_POD, max_vols=2, want_pre_filter=SKIP
    ),
    "don't skip Filter when the pod has pvcs": Case(PVC_POD_WITH_CONFIGMAP_AND_SECRET, max_vols=2),
    "don't skip Filter when the pod has ephemeral volumes": Case(
        EPHEMERAL_POD_WITH_CONFIGMAP_AND_SECRET,
        limit_source="csinode-with-no-limit",
        want=EPHEMERAL_MISSING,
    ),
}


def objects_for(case: Case) -> list[Any]:
    objects: list[Any] = [*fake_pvs(case.driver_names), *fake_pvcs(case.driver_names)]
    objects.extend(case.extra_claims)
    objects.append(
        StorageClassView.from_dict(
            {
                "metadata": {"name": SC_NAME, "resourceVersion": "1"},
                "provisioner": case.driver_names[0],
            }
        )
    )
    node = csi_node(case.limit_source, case.max_vols, case.driver_names)
    if node is not None:
        objects.append(node)
    return objects


@pytest.mark.parametrize("name", list(CSI_LIMITS))
def test_csi_limits(name: str) -> None:
    case = CSI_LIMITS[name]
    harness = build([node_info(case.existing)], objects_for(case))
    want_filter = None if case.want_pre_filter.is_skip else case.want
    assert run(harness, case.new_pod) == (case.want_pre_filter, want_filter)


def test_no_csi_node_means_no_limit() -> None:
    """A node without a CSINode object has no limits (limitSource "")."""
    case = Case(CSI_EBS_ONE_VOL_POD, (RUNNING_POD, CSI_EBS_TWO_VOL_POD), 1, limit_source="")
    harness = build([node_info(case.existing)], objects_for(case))
    assert run(harness, case.new_pod) == (Status.OK, Status.OK)


def test_volume_shared_with_a_pod_on_the_node_counts_once() -> None:
    """The new pod's volume is already attached for another pod: it takes no new slot."""
    case = Case(RUNNING_POD, (RUNNING_POD, CSI_EBS_TWO_VOL_POD), 3)
    new_pod = make_pod(pvcs=["csi-ebs.csi.aws.com-3"])
    harness = build([node_info(case.existing)], objects_for(case))
    assert run(harness, new_pod) == (Status.OK, Status.OK)


def test_inline_csi_and_in_tree_volumes_are_not_counted() -> None:
    """Inline `csi:` volumes are not attached through the controller (upstream does not count
    them); inline in-tree volumes would need CSI migration, left out: both are skipped."""
    pod = make_pod(
        volumes=[
            {"name": "i", "csi": {"driver": EBS}},
            {"name": "a", "awsElasticBlockStore": {"volumeID": "aws-inline1"}},
        ]
    )
    case = Case(pod, (CSI_EBS_TWO_VOL_POD,), 1)
    harness = build([node_info(case.existing)], objects_for(case))
    assert run(harness, pod) == (SKIP, None)


def test_filter_rows_over_many_nodes() -> None:
    """Nodes without a CSINode (or without limits) pass without looking at their pods; the
    others are checked one by one."""
    case = Case(CSI_EBS_ONE_VOL_POD, max_vols=2)
    objects = objects_for(case)
    # node-a: full; node-b: room left; node-c: no CSINode.
    for name in ("node-a", "node-b"):
        node = csi_node("csinode", 2, (EBS,))
        assert node is not None
        objects.append(replace(node, name=name))
    nodes = [
        node_info([make_pod(pvcs=["csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2"])], "node-a"),
        node_info([make_pod(pvcs=["csi-ebs.csi.aws.com-1"])], "node-b"),
        node_info([CSI_EBS_TWO_VOL_POD, RUNNING_POD], "node-c"),
    ]
    harness = build(nodes, objects)
    state = CycleState()
    _, status = harness.plugin.pre_filter(state, CSI_EBS_ONE_VOL_POD, harness.snapshot.list())
    assert status.is_success
    table = harness.snapshot.node_table()
    rows = np.arange(len(table), dtype=np.intp)[::-1].copy()
    verdict = harness.plugin.filter_rows(state, CSI_EBS_ONE_VOL_POD, table, rows)
    assert verdict is not None
    got = {
        table.names[row]: Status.OK if verdict.passed[i] else verdict.reject(row)
        for i, row in enumerate(rows.tolist())
    }
    want = {
        info.node_name: harness.plugin.filter(state, CSI_EBS_ONE_VOL_POD, info)
        for info in harness.snapshot.list()
    }
    assert got == want == {"node-a": EXCEEDED, "node-b": Status.OK, "node-c": Status.OK}


def csi_driver(name: str, prevent_if_missing: bool) -> CSIDriverView:
    spec = {"preventPodSchedulingIfMissing": True} if prevent_if_missing else {}
    return CSIDriverView.from_dict(
        {"metadata": {"name": name, "resourceVersion": "1"}, "spec": spec}
    )


NOT_INSTALLED = Status.unschedulable(f"{EBS} CSI driver is not installed on the node")


@pytest.mark.parametrize(
    ("enabled", "limit_source", "limit", "driver_present", "prevent", "want"),
    [
        # csi_test.go TestVolumeLimitScalingGate
        pytest.param(True, "no-csi-driver", 0, True, False, Status.OK, id="driver not opted in"),
        pytest.param(
            True, "no-csi-driver", 0, True, True, NOT_INSTALLED, id="opted in, not installed"
        ),
        pytest.param(False, "no-csi-driver", 0, True, True, Status.OK, id="gate disabled"),
        pytest.param(True, "csinode", 2, True, True, Status.OK, id="installed within limit"),
        pytest.param(True, "no-csi-driver", 0, False, False, Status.OK, id="no CSIDriver object"),
        # Not in upstream's table: no CSINode at all is "not installed" too.
        pytest.param(True, "", 0, True, True, NOT_INSTALLED, id="no CSINode"),
    ],
)
def test_volume_limit_scaling_gate(
    enabled: bool, limit_source: str, limit: int, driver_present: bool, prevent: bool, want: Status
) -> None:
    case = Case(make_pod(pvcs=["csi-ebs.csi.aws.com-0"]), max_vols=limit, limit_source=limit_source)
    objects = objects_for(case)
    if driver_present:
        objects.append(csi_driver(EBS, prevent))
    harness = build([node_info(())], objects, {"VolumeLimitScaling": enabled})
    assert run(harness, case.new_pod) == (Status.OK, want)


def test_volume_limit_scaling_rows_check_every_node_for_an_opted_in_driver() -> None:
    """With an opted-in driver the row path checks nodes without limits too."""
    case = Case(CSI_EBS_ONE_VOL_POD, max_vols=2, limit_source="")
    objects = [*objects_for(case), csi_driver(EBS, True)]
    listed = csi_node("csinode-with-no-limit", 0, (EBS,))
    assert listed is not None
    objects.append(replace(listed, name="has-driver"))
    harness = build([node_info((), "has-driver"), node_info((), "bare")], objects)
    state = CycleState()
    _, status = harness.plugin.pre_filter(state, CSI_EBS_ONE_VOL_POD, harness.snapshot.list())
    assert status.is_success
    table = harness.snapshot.node_table()
    rows = np.arange(len(table), dtype=np.intp)
    verdict = harness.plugin.filter_rows(state, CSI_EBS_ONE_VOL_POD, table, rows)
    assert verdict is not None
    got = {
        table.names[row]: Status.OK if verdict.passed[i] else verdict.reject(row)
        for i, row in enumerate(rows.tolist())
    }
    assert got == {"has-driver": Status.OK, "bare": NOT_INSTALLED}


def test_existing_pod_with_an_unowned_ephemeral_claim_errs() -> None:
    """Upstream returns filterAttachableVolumes' error for pods on the node too."""
    case = Case(CSI_EBS_ONE_VOL_POD, (EPHEMERAL_VOLUME_POD,), 2, extra_claims=(CONFLICTING_CLAIM,))
    harness = build([node_info(case.existing)], objects_for(case))
    _, status = run(harness, case.new_pod)
    assert status == Status.error(
        "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"
    )


def test_missing_claim_of_an_existing_pod_is_ignored() -> None:
    case = Case(CSI_EBS_ONE_VOL_POD, (make_pod(pvcs=["gone"]), CSI_EBS_TWO_VOL_POD), 3)
    harness = build([node_info(case.existing)], objects_for(case))
    assert run(harness, case.new_pod) == (Status.OK, Status.OK)


@pytest.mark.parametrize(
    ("name", "volumes", "field"),
    [
        ("volume not an object", [3], "spec.volumes[0]"),
        (
            "claim not an object",
            [{"persistentVolumeClaim": []}],
            "spec.volumes[0].persistentVolumeClaim",
        ),
        (
            "claim name not a string",
            [{"persistentVolumeClaim": {"claimName": 1}}],
            "spec.volumes[0].persistentVolumeClaim.claimName",
        ),
        ("ephemeral volume without a name", [{"ephemeral": {}, "name": 5}], "spec.volumes[0].name"),
    ],
)
def test_malformed_volumes_give_an_error_naming_the_field(
    name: str, volumes: list[Any], field: str
) -> None:
    case = Case(CSI_EBS_ONE_VOL_POD, max_vols=2)
    good = make_pod("p", namespace="default", pvcs=["csi-ebs.csi.aws.com-0"])
    bad = replace(good, raw={**good.raw, "spec": {**good.raw["spec"], "volumes": volumes}})
    harness = build([node_info([bad.with_node(NODE)])], objects_for(case))
    _, status = harness.plugin.pre_filter(CycleState(), bad, harness.snapshot.list())
    assert status.code == Code.ERROR and field in status.message
    # A pod on the node with malformed volumes: an error on that node, naming the pod.
    _, status = run(harness, good)
    assert status is not None and status.code == Code.ERROR
    assert status.message.startswith(f"pod default/p: {field}")


def test_malformed_owner_references_of_an_ephemeral_claim() -> None:
    bad_claim = PersistentVolumeClaimView.from_dict(
        {
            "metadata": {
                "name": "abc-xyz",
                "namespace": "test",
                "resourceVersion": "1",
                "ownerReferences": "nope",
            },
            "spec": {"storageClassName": SC_NAME},
        }
    )
    case = Case(EPHEMERAL_VOLUME_POD, max_vols=2, extra_claims=(bad_claim,))
    harness = build([node_info([])], objects_for(case))
    _, status = run(harness, EPHEMERAL_VOLUME_POD)
    assert status is not None and status.code == Code.ERROR
    assert "metadata.ownerReferences" in status.message


# -- queueing hints ----------------------------------------------------------------------

POD_DELETE = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
PVC_ADD = ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD, "PvcAdd")
CSI_NODE_ADD = ClusterEvent(EventResource.CSI_NODE, ActionType.ADD, "CSINodeAdd")
CSI_NODE_UPDATE = ClusterEvent(EventResource.CSI_NODE, ActionType.UPDATE, "CSINodeUpdate")


def hint(pod: PodView, event: ClusterEvent, old: Any, new: Any) -> QueueingHint:
    """The framework's answer for a pod NodeVolumeLimits rejected."""
    harness = build([], [])
    info = QueuedPodInfo(pod=pod, timestamp=0.0, attempts=1, unschedulable_plugins={NAME})
    return harness.framework.queueing_hint(info, event, old, new)


POD_EBS = make_pod(pvcs=["csi-ebs.csi.aws.com-2"])


@pytest.mark.parametrize(
    ("name", "deleted", "want"),
    [
        # TestCSILimitsQHint
        (
            "return a Queue when a deleted pod has a PVC",
            make_pod(pvcs=["placeholder"], node_name=NODE),
            QUEUE,
        ),
        (
            "return a Queue when a deleted pod has a inline migratable volume",
            make_pod(volumes=[{"name": "a", "awsElasticBlockStore": {}}], node_name=NODE),
            QUEUE,
        ),
        (
            "return a QueueSkip when a deleted pod doesn't have any volume",
            make_pod(node_name=NODE),
            QUEUE_SKIP,
        ),
        (
            "return a QueueSkip when a deleted pod is not scheduled.",
            make_pod(pvcs=["csi-ebs.csi.aws.com-0"]),
            QUEUE_SKIP,
        ),
        # Beyond the ported table: a generic ephemeral volume counts, a configMap does not.
        (
            "ephemeral volume",
            make_pod(volumes=[{"name": "e", "ephemeral": {}}], node_name=NODE),
            QUEUE,
        ),
        ("only a configMap", make_pod(volumes=[CONFIGMAP], node_name=NODE), QUEUE_SKIP),
        ("not a pod", "not-a-pod", QUEUE),
    ],
)
def test_hint_after_pod_deleted(name: str, deleted: Any, want: QueueingHint) -> None:
    assert hint(POD_EBS, POD_DELETE, deleted, None) == want


def make_claim(name: str, namespace: str) -> PersistentVolumeClaimView:
    return claim(name, namespace=namespace)


@pytest.mark.parametrize(
    ("name", "pod", "added", "want"),
    [
        # TestCSILimitsAddedPVCQHint
        (
            "a pod isn't in the same namespace as an added PVC",
            make_pod(namespace="ns1"),
            make_claim("", "ns2"),
            QUEUE_SKIP,
        ),
        (
            "a pod is in the same namespace as an added PVC",
            make_pod(namespace="ns1", pvcs=["pvc1"]),
            make_claim("pvc1", "ns1"),
            QUEUE,
        ),
        (
            "a pod has an ephemeral volume related to an added PVC",
            make_pod("pod1", namespace="ns1", volumes=[{"name": "ephemeral", "ephemeral": {}}]),
            make_claim("pod1-ephemeral", "ns1"),
            QUEUE,
        ),
        (
            "a pod doesn't have the same PVC as an added PVC",
            make_pod(namespace="ns1", pvcs=["pvc1"]),
            make_claim("pvc2", "ns1"),
            QUEUE_SKIP,
        ),
        (
            "a pod doesn't have any PVC attached",
            make_pod(namespace="ns1"),
            make_claim("pvc2", "ns1"),
            QUEUE_SKIP,
        ),
    ],
)
def test_hint_after_claim_added(
    name: str, pod: PodView, added: PersistentVolumeClaimView, want: QueueingHint
) -> None:
    assert hint(pod, PVC_ADD, None, added) == want


def limits_node(**counts: int | None) -> CSINodeView:
    drivers = []
    for driver, count in counts.items():
        entry: dict[str, Any] = {"name": driver, "nodeID": NODE}
        if count is not None:
            entry["allocatable"] = {"count": count}
        drivers.append(entry)
    return CSINodeView.from_dict(
        {"metadata": {"name": NODE, "resourceVersion": "1"}, "spec": {"drivers": drivers}}
    )


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        # Upstream's isSchedulableAfterCSINodeUpdated (MutableCSINodeAllocatableCount):
        # Queue when a driver's allocatable count went up.
        ("count increased", limits_node(a=1), limits_node(a=2), QUEUE),
        ("count unchanged", limits_node(a=2, b=1), limits_node(a=2, b=1), QUEUE_SKIP),
        ("count decreased", limits_node(a=2), limits_node(a=1), QUEUE_SKIP),
        ("limit removed", limits_node(a=1), limits_node(a=None), QUEUE),
        ("driver gone", limits_node(a=1), limits_node(), QUEUE),
        ("new driver with a limit", limits_node(), limits_node(a=3), QUEUE_SKIP),
        ("unexpected objects", "x", limits_node(), QUEUE),
    ],
)
def test_hint_after_csi_node_updated(name: str, old: Any, new: Any, want: QueueingHint) -> None:
    assert hint(POD_EBS, CSI_NODE_UPDATE, old, new) == want


@pytest.mark.parametrize(
    ("event", "want"),
    [
        # Always Queue: any new CSINode may have room.
        (CSI_NODE_ADD, QUEUE),
        (ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeAdd"), QUEUE_SKIP),
        (ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD), QUEUE_SKIP),
        (ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.UPDATE), QUEUE_SKIP),
    ],
)
def test_registered_events(event: ClusterEvent, want: QueueingHint) -> None:
    assert hint(POD_EBS, event, None, limits_node(a=1)) == want
