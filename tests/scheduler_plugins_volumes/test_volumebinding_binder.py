"""The volume binder: finding, assuming, writing and waiting for volume bindings.

Ported from upstream's pkg/scheduler/framework/plugins/volumebinding/binder_test.go:
TestFindPodVolumesWithoutProvisioning, TestFindPodVolumesWithProvisioning (each under the three
CSIDriver variants), TestAssumePodVolumes, TestRevertAssumedPodVolumes, TestBindAPIUpdate,
TestCheckBindings, TestBindPodVolumes, TestFindAssumeVolumes and TestCapacity, with the same
fixtures (makeTestPVC / makeTestPV / makeCapacity). Not ported: the CSI migration tests
(TestFindPodVolumesWithCSIMigration, TestCheckBindingsWithCSIMigration), since in-tree PVs are not
translated to CSI here, and TestGetEligibleNodes (upstream no longer narrows nodes in PreFilter).

The fake clientset and the PV controller's volume reactor are `FakeApiServer`; upstream's
informer caches are the `StorageObjects` stores (upstream's initVolumes / initClaims put the
cached objects there and the API objects in the reactor).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.api.objects import NodeView, PodView
from scheduler.api.storage import (
    BIND_COMPLETED_ANNOTATION,
    SELECTED_NODE_ANNOTATION,
    CSIStorageCapacityView,
    PersistentVolumeClaimView,
    PersistentVolumeView,
)
from scheduler.listers.storage_objects import StorageObjects
from scheduler.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    BindingError,
    BindingInfo,
    DynamicProvision,
    PodVolumes,
    VolumeBinder,
)
from scheduler.plugins.volumebinding.helpers import claim_key
from scheduler.testing import empty_dir_volume, ephemeral_volume, make_node, make_pod
from scheduler.testing.volumes import (
    IMMEDIATE,
    WAIT,
    FakeApiServer,
    make_capacity,
    make_class,
    make_csi_driver,
    make_pv,
    make_pvc,
)

PROVISIONER = "test-provisioner"
WAIT_CLASS = "waitClass"
IMMEDIATE_CLASS = "immediateClass"
WAIT_CLASS_WITH_PROVISIONER = "waitClassWithProvisioner"
TOPO_MISMATCH_CLASS = "topoMismatchClass"
NODE_LABEL_KEY = "nodeKey"
NODE_LABEL_VALUE = "node1"

UNBOUND, PREBOUND, BOUND, SELECTED_NODE = range(4)


def make_test_pvc(
    name: str, size: str, node: str, state: int, pv_name: str, version: str, klass: str
) -> PersistentVolumeClaimView:
    """binder_test.go's makeTestPVC: namespace testns, uid pvc-uid, Filesystem mode."""
    return make_pvc(
        name,
        klass,
        namespace="testns",
        uid="pvc-uid",
        resource_version=version,
        request=size,
        volume_mode="Filesystem",
        selected_node=node if state == SELECTED_NODE else None,
        bind_completed=state == BOUND,
        bound_pv=pv_name if state in (PREBOUND, BOUND) else "",
    )


def make_test_pv(
    name: str,
    node: str,
    capacity: str,
    version: str,
    bound_to: PersistentVolumeClaimView | None,
    klass: str,
) -> PersistentVolumeView:
    """binder_test.go's makeTestPV: Available, Filesystem, node affinity on nodeKey."""
    return make_pv(
        name,
        klass,
        resource_version=version,
        capacity=capacity,
        phase="Available",
        volume_mode="Filesystem",
        node_affinity={NODE_LABEL_KEY: [node]} if node else None,
        claim=bound_to,
    )


# PVCs for manual binding
unbound_pvc = make_test_pvc("unbound-pvc", "1G", "", UNBOUND, "", "1", WAIT_CLASS)
unbound_pvc2 = make_test_pvc("unbound-pvc2", "5G", "", UNBOUND, "", "1", WAIT_CLASS)
prebound_pvc = make_test_pvc("prebound-pvc", "1G", "", PREBOUND, "pv-node1a", "1", WAIT_CLASS)
prebound_pvc_node1a = make_test_pvc("unbound-pvc", "1G", "", PREBOUND, "pv-node1a", "1", WAIT_CLASS)
bound_pvc = make_test_pvc("bound-pvc", "1G", "", BOUND, "pv-bound", "1", WAIT_CLASS)
bound_pvc_node1a = make_test_pvc("unbound-pvc", "1G", "", BOUND, "pv-node1a", "1", WAIT_CLASS)
immediate_unbound_pvc = make_test_pvc(
    "immediate-unbound-pvc", "1G", "", UNBOUND, "", "1", IMMEDIATE_CLASS
)
immediate_bound_pvc = make_test_pvc(
    "immediate-bound-pvc", "1G", "", BOUND, "pv-bound-immediate", "1", IMMEDIATE_CLASS
)
# PVCs for dynamic provisioning
provisioned_pvc = make_test_pvc(
    "provisioned-pvc", "1Gi", "", UNBOUND, "", "1", WAIT_CLASS_WITH_PROVISIONER
)
provisioned_pvc2 = make_test_pvc(
    "provisioned-pvc2", "1Gi", "", UNBOUND, "", "1", WAIT_CLASS_WITH_PROVISIONER
)
provisioned_pvc_higher_version = make_test_pvc(
    "provisioned-pvc2", "1Gi", "", UNBOUND, "", "2", WAIT_CLASS_WITH_PROVISIONER
)
provisioned_pvc_bound = make_test_pvc(
    "provisioned-pvc", "1Gi", "", BOUND, "pv-bound", "1", WAIT_CLASS_WITH_PROVISIONER
)
no_provisioner_pvc = make_test_pvc("no-provisioner-pvc", "1Gi", "", UNBOUND, "", "1", WAIT_CLASS)
topo_mismatch_pvc = make_test_pvc(
    "topo-mismatch-pvc", "1Gi", "", UNBOUND, "", "1", TOPO_MISMATCH_CLASS
)
selected_node_pvc = make_test_pvc(
    "provisioned-pvc", "1Gi", NODE_LABEL_VALUE, SELECTED_NODE, "", "1", WAIT_CLASS_WITH_PROVISIONER
)

# PVs for manual binding
pv_node1a = make_test_pv("pv-node1a", "node1", "5G", "1", None, WAIT_CLASS)
pv_node1b = make_test_pv("pv-node1b", "node1", "10G", "1", None, WAIT_CLASS)
pv_node1c = make_test_pv("pv-node1b", "node1", "5G", "1", None, WAIT_CLASS)
pv_node2 = make_test_pv("pv-node2", "node2", "1G", "1", None, WAIT_CLASS)
pv_bound = make_test_pv("pv-bound", "node1", "1G", "1", bound_pvc, WAIT_CLASS)
pv_node1a_bound = make_test_pv("pv-node1a", "node1", "5G", "1", unbound_pvc, WAIT_CLASS)
pv_node1b_bound = make_test_pv("pv-node1b", "node1", "10G", "1", unbound_pvc2, WAIT_CLASS)
pv_node1b_bound_higher_version = make_test_pv(
    "pv-node1b", "node1", "10G", "2", unbound_pvc2, WAIT_CLASS
)
pv_bound_immediate = make_test_pv(
    "pv-bound-immediate", "node1", "1G", "1", immediate_bound_pvc, IMMEDIATE_CLASS
)
pv_bound_immediate_node2 = make_test_pv(
    "pv-bound-immediate", "node2", "1G", "1", immediate_bound_pvc, IMMEDIATE_CLASS
)

# GenericEphemeralVolume: the claim "test-pod-test-volume", owned by the pod or not.
POD_UID = "test-pod-uid"


def _generic_pvc(owned: bool) -> PersistentVolumeClaimView:
    return make_pvc(
        "test-pod-test-volume",
        IMMEDIATE_CLASS,
        namespace="testns",
        uid="pvc-uid",
        request="1G",
        volume_mode="Filesystem",
        bound_pv="pv-bound",
        bind_completed=True,
        owner_uid=POD_UID if owned else "",
    )


conflicting_generic_pvc = _generic_pvc(False)
correct_generic_pvc = _generic_pvc(True)
pv_bound_generic = make_test_pv("pv-bound", "node1", "1G", "1", correct_generic_pvc, WAIT_CLASS)

node1 = make_node("node1", labels={NODE_LABEL_KEY: "node1"})
node2 = make_node("node2", labels={NODE_LABEL_KEY: "node2"})
node1_no_labels = make_node("node1")

# csiCapacity objects (all named "net": a later one replaces an earlier one, as upstream's)
network_attached_capacity = make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, {}, "1Gi")
node1_capacity = make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, {NODE_LABEL_KEY: "node1"}, "1Gi")
node2_capacity = make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, {NODE_LABEL_KEY: "node2"}, "1Gi")


def pod_with(
    claims: Sequence[PersistentVolumeClaimView] = (),
    *,
    ephemeral: Sequence[str] = (),
    empty_dir: bool = False,
) -> PodView:
    return make_pod(
        "test-pod",
        namespace="testns",
        uid=POD_UID,
        node_name="node1",
        pvcs=[c.name for c in claims],
        volumes=[
            *(ephemeral_volume(name) for name in ephemeral),
            *([empty_dir_volume()] if empty_dir else []),
        ],
    )


def with_selected_node(pvc: PersistentVolumeClaimView, node: str) -> PersistentVolumeClaimView:
    """pvcSetSelectedNode / addProvisionAnn."""
    raw = copy.deepcopy(dict(pvc.raw))
    raw["metadata"].setdefault("annotations", {})[SELECTED_NODE_ANNOTATION] = node
    return PersistentVolumeClaimView.from_dict(raw)


def add_provision_ann(pvc: PersistentVolumeClaimView) -> PersistentVolumeClaimView:
    return with_selected_node(pvc, NODE_LABEL_VALUE)


def with_empty_annotations(pvc: PersistentVolumeClaimView) -> PersistentVolumeClaimView:
    raw = copy.deepcopy(dict(pvc.raw))
    raw["metadata"]["annotations"] = {}
    return PersistentVolumeClaimView.from_dict(raw)


def without_claim_uid(pv: PersistentVolumeView) -> PersistentVolumeView:
    raw = copy.deepcopy(dict(pv.raw))
    raw["spec"]["claimRef"].pop("uid", None)
    return PersistentVolumeView.from_dict(raw)


def bound_to(pvc: PersistentVolumeClaimView, pv_name: str) -> PersistentVolumeClaimView:
    """The claim as the PV controller leaves it: volumeName and bind-completed."""
    raw = copy.deepcopy(dict(pvc.raw))
    raw["spec"]["volumeName"] = pv_name
    raw["metadata"].setdefault("annotations", {})[BIND_COMPLETED_ANNOTATION] = "yes"
    return PersistentVolumeClaimView.from_dict(raw)


def binding(pvc: PersistentVolumeClaimView, pv: PersistentVolumeView) -> BindingInfo:
    return BindingInfo(pvc, pv)


def _content(obj: Any) -> Any:
    """An object's JSON without its resourceVersion (the cache may hold a newer version)."""
    raw = copy.deepcopy(dict(obj.raw))
    raw.get("metadata", {}).pop("resourceVersion", None)
    return raw


@dataclass
class Env:
    """newTestBinder: the four storage classes, an API server, the nodes and the pods."""

    nodes: Sequence[NodeView] = (node1,)
    bind_timeout: float = 10.0
    storage: StorageObjects = field(default_factory=StorageObjects)
    pods: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.storage.add(
            make_class(
                WAIT_CLASS_WITH_PROVISIONER,
                WAIT,
                PROVISIONER,
                [{NODE_LABEL_KEY: [NODE_LABEL_VALUE, "reference-value"]}],
            ),
            make_class(IMMEDIATE_CLASS, IMMEDIATE),
            make_class(WAIT_CLASS, WAIT, "kubernetes.io/no-provisioner"),
            make_class(
                TOPO_MISMATCH_CLASS, WAIT, PROVISIONER, [{NODE_LABEL_KEY: ["reference-value"]}]
            ),
        )
        self.server = FakeApiServer(self.storage)
        by_name = {node.name: node for node in self.nodes}
        self.binder = VolumeBinder(
            self.storage,
            self.server,
            by_name.get,
            self.bind_timeout,
            poll_interval=0.01,
            pod_exists=lambda pod: pod.key in self.pods,
        )

    def init_volumes(
        self,
        cached: Sequence[PersistentVolumeView],
        api: Sequence[PersistentVolumeView] | None = None,
    ) -> None:
        for pv in cached:
            self.storage.volumes.on_add(pv)
        for pv in api or ():
            self.server.set_api(pv)

    def init_claims(
        self,
        cached: Sequence[PersistentVolumeClaimView],
        api: Sequence[PersistentVolumeClaimView] | None = None,
    ) -> None:
        for pvc in cached:
            self.storage.claims.on_add(pvc)
        for pvc in api or ():
            self.server.set_api(pvc)

    def assume(
        self,
        bindings: Sequence[BindingInfo] | None,
        provisions: Sequence[PersistentVolumeClaimView] | None,
    ) -> None:
        for b in bindings or ():
            self.binder.pv_cache.assume(b.pv)
        for pvc in provisions or ():
            self.binder.pvc_cache.assume(pvc)

    def find(self, pod: PodView, node: NodeView = node1) -> tuple[PodVolumes, list[str]]:
        """binder_test.go's findPodVolumes."""
        claims = self.binder.get_pod_volume_claims(pod)
        if claims.unbound_claims_immediate:
            raise BindingError("pod has unbound immediate PersistentVolumeClaims")
        return self.binder.find_pod_volumes(pod, claims, node)

    def validate_assume(
        self, bindings: Sequence[BindingInfo], provisions: Sequence[PersistentVolumeClaimView]
    ) -> None:
        for b in bindings:
            pv = self.binder.pv_cache.get(b.pv.name)
            assert pv.claim_ref is not None, b.pv.name
            assert (pv.claim_ref.name, pv.claim_ref.namespace) == (b.pvc.name, b.pvc.namespace)
        for pvc in provisions:
            cached = self.binder.pvc_cache.get(claim_key(pvc))
            assert cached.annotations.get(SELECTED_NODE_ANNOTATION) == NODE_LABEL_VALUE

    def validate_cache_restored(
        self, bindings: Sequence[BindingInfo], provisions: Sequence[PersistentVolumeClaimView]
    ) -> None:
        for b in bindings:
            if b.pv.name in self.storage.volumes.by_key:
                assert self.binder.pv_cache.get(b.pv.name) is self.binder.pv_cache.get_api(
                    b.pv.name
                )
        for pvc in provisions:
            cached = self.binder.pvc_cache.get(claim_key(pvc))
            assert cached.annotations.get(SELECTED_NODE_ANNOTATION, "") == ""


def _provision_names(volumes: PodVolumes) -> list[str] | None:
    if volumes.dynamic_provisions is None:
        return None
    return [p.pvc.name for p in volumes.dynamic_provisions]


def _binding_pairs(volumes: PodVolumes) -> list[tuple[str, str]] | None:
    if volumes.static_bindings is None:
        return None
    return [(b.pvc.name, b.pv.name) for b in volumes.static_bindings]


# -- TestFindPodVolumesWithoutProvisioning ----------------------------------------------------

CSI_DRIVERS = {
    "no CSIDriver": None,
    "CSIDriver with capacity tracking": True,
    "CSIDriver without capacity tracking": False,
}


@dataclass
class FindScenario:
    pvs: Sequence[PersistentVolumeView] = ()
    pod_pvcs: Sequence[PersistentVolumeClaimView] = ()
    cache_pvcs: Sequence[PersistentVolumeClaimView] | None = None
    pod: PodView | None = None
    expected_bindings: list[tuple[str, str]] | None = None
    expected_provisions: list[str] | None = None
    reasons: Sequence[str] = ()
    should_fail: bool = False
    needs_capacity: bool = False


WITHOUT_PROVISIONING = {
    "no-volumes": FindScenario(pod=pod_with()),
    "no-pvcs": FindScenario(pod=pod_with(empty_dir=True)),
    "pvc-not-found": FindScenario(cache_pvcs=[], pod_pvcs=[bound_pvc], should_fail=True),
    "bound-pvc": FindScenario(pod_pvcs=[bound_pvc], pvs=[pv_bound]),
    "bound-pvc,pv-not-exists": FindScenario(
        pod_pvcs=[bound_pvc], reasons=[ERR_REASON_PV_NOT_EXIST]
    ),
    "prebound-pvc": FindScenario(pod_pvcs=[prebound_pvc], pvs=[pv_node1a_bound], should_fail=True),
    "unbound-pvc,pv-same-node": FindScenario(
        pod_pvcs=[unbound_pvc],
        pvs=[pv_node2, pv_node1a, pv_node1b],
        expected_bindings=[("unbound-pvc", "pv-node1a")],
    ),
    "unbound-pvc,pv-different-node": FindScenario(
        pod_pvcs=[unbound_pvc], pvs=[pv_node2], reasons=[ERR_REASON_BIND_CONFLICT]
    ),
    "two-unbound-pvcs": FindScenario(
        pod_pvcs=[unbound_pvc, unbound_pvc2],
        pvs=[pv_node1a, pv_node1b],
        expected_bindings=[("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")],
    ),
    "two-unbound-pvcs,order-by-size": FindScenario(
        pod_pvcs=[unbound_pvc2, unbound_pvc],
        pvs=[pv_node1a, pv_node1b],
        expected_bindings=[("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")],
    ),
    "two-unbound-pvcs,partial-match": FindScenario(
        pod_pvcs=[unbound_pvc, unbound_pvc2],
        pvs=[pv_node1a],
        expected_bindings=[("unbound-pvc", "pv-node1a")],
        reasons=[ERR_REASON_BIND_CONFLICT],
    ),
    "one-bound,one-unbound": FindScenario(
        pod_pvcs=[unbound_pvc, bound_pvc],
        pvs=[pv_bound, pv_node1a],
        expected_bindings=[("unbound-pvc", "pv-node1a")],
    ),
    "one-bound,one-unbound,no-match": FindScenario(
        pod_pvcs=[unbound_pvc, bound_pvc],
        pvs=[pv_bound, pv_node2],
        reasons=[ERR_REASON_BIND_CONFLICT],
    ),
    "one-prebound,one-unbound": FindScenario(
        pod_pvcs=[unbound_pvc, prebound_pvc], pvs=[pv_node1a, pv_node1b], should_fail=True
    ),
    "immediate-bound-pvc": FindScenario(pod_pvcs=[immediate_bound_pvc], pvs=[pv_bound_immediate]),
    "immediate-bound-pvc-wrong-node": FindScenario(
        pod_pvcs=[immediate_bound_pvc],
        pvs=[pv_bound_immediate_node2],
        reasons=[ERR_REASON_NODE_CONFLICT],
    ),
    "immediate-unbound-pvc": FindScenario(pod_pvcs=[immediate_unbound_pvc], should_fail=True),
    "immediate-unbound-pvc,delayed-mode-bound": FindScenario(
        pod_pvcs=[immediate_unbound_pvc, bound_pvc], pvs=[pv_bound], should_fail=True
    ),
    "immediate-unbound-pvc,delayed-mode-unbound": FindScenario(
        pod_pvcs=[immediate_unbound_pvc, unbound_pvc], should_fail=True
    ),
    "generic-ephemeral,no-pvc": FindScenario(
        pod=pod_with(ephemeral=["no-such-pvc"]), should_fail=True
    ),
    "generic-ephemeral,with-pvc": FindScenario(
        pod=pod_with(ephemeral=["test-volume"]),
        cache_pvcs=[correct_generic_pvc],
        pvs=[pv_bound_generic],
    ),
    "generic-ephemeral,wrong-pvc": FindScenario(
        pod=pod_with(ephemeral=["test-volume"]),
        cache_pvcs=[conflicting_generic_pvc],
        pvs=[pv_bound_generic],
        should_fail=True,
    ),
}

WITH_PROVISIONING = {
    "one-provisioned": FindScenario(
        pod_pvcs=[provisioned_pvc], expected_provisions=["provisioned-pvc"], needs_capacity=True
    ),
    "two-unbound-pvcs,one-matched,one-provisioned": FindScenario(
        pod_pvcs=[unbound_pvc, provisioned_pvc],
        pvs=[pv_node1a],
        expected_bindings=[("unbound-pvc", "pv-node1a")],
        expected_provisions=["provisioned-pvc"],
        needs_capacity=True,
    ),
    "one-bound,one-provisioned": FindScenario(
        pod_pvcs=[bound_pvc, provisioned_pvc],
        pvs=[pv_bound],
        expected_provisions=["provisioned-pvc"],
        needs_capacity=True,
    ),
    "one-binding,one-selected-node": FindScenario(
        pod_pvcs=[bound_pvc, selected_node_pvc],
        pvs=[pv_bound],
        expected_provisions=["provisioned-pvc"],
        needs_capacity=True,
    ),
    "immediate-unbound-pvc": FindScenario(pod_pvcs=[immediate_unbound_pvc], should_fail=True),
    "one-immediate-bound,one-provisioned": FindScenario(
        pod_pvcs=[immediate_bound_pvc, provisioned_pvc],
        pvs=[pv_bound_immediate],
        expected_provisions=["provisioned-pvc"],
        needs_capacity=True,
    ),
    "invalid-provisioner": FindScenario(
        pod_pvcs=[no_provisioner_pvc], reasons=[ERR_REASON_BIND_CONFLICT]
    ),
    "volume-topology-unsatisfied": FindScenario(
        pod_pvcs=[topo_mismatch_pvc], reasons=[ERR_REASON_BIND_CONFLICT]
    ),
}


def _run_find(scenario: FindScenario, capacity_tracking: bool | None) -> None:
    env = Env()
    env.init_volumes(scenario.pvs)
    if capacity_tracking is not None:
        env.storage.add(make_csi_driver(PROVISIONER, capacity_tracking))
    env.init_claims(scenario.pod_pvcs if scenario.cache_pvcs is None else scenario.cache_pvcs)
    pod = scenario.pod or pod_with(scenario.pod_pvcs)
    reasons = list(scenario.reasons)
    provisions = scenario.expected_provisions
    if scenario.needs_capacity and capacity_tracking:
        # Without CSIStorageCapacity objects, provisioning is blocked.
        reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        provisions = None
    if scenario.should_fail:
        with pytest.raises(BindingError):
            env.find(pod)
        return
    volumes, got_reasons = env.find(pod)
    assert sorted(got_reasons) == sorted(reasons)
    assert _binding_pairs(volumes) == scenario.expected_bindings
    assert _provision_names(volumes) == provisions


@pytest.mark.parametrize("driver", CSI_DRIVERS)
@pytest.mark.parametrize("name", WITHOUT_PROVISIONING)
def test_find_pod_volumes_without_provisioning(driver: str, name: str) -> None:
    _run_find(WITHOUT_PROVISIONING[name], CSI_DRIVERS[driver])


@pytest.mark.parametrize("driver", CSI_DRIVERS)
@pytest.mark.parametrize("name", WITH_PROVISIONING)
def test_find_pod_volumes_with_provisioning(driver: str, name: str) -> None:
    _run_find(WITH_PROVISIONING[name], CSI_DRIVERS[driver])


@pytest.mark.parametrize(
    ("pod_pvcs", "message"),
    [
        (
            [],
            'error getting PVC "testns/bound-pvc": could not find v1.PersistentVolumeClaim '
            '"testns/bound-pvc"',
        ),
    ],
)
def test_get_pod_volume_claims_missing_claim_message(
    pod_pvcs: list[PersistentVolumeClaimView], message: str
) -> None:
    env = Env()
    env.init_claims(pod_pvcs)
    with pytest.raises(BindingError) as info:
        env.binder.get_pod_volume_claims(pod_with([bound_pvc]))
    assert str(info.value) == message


def test_wrong_generic_ephemeral_claim_message() -> None:
    env = Env()
    env.init_claims([conflicting_generic_pvc])
    with pytest.raises(BindingError) as info:
        env.binder.get_pod_volume_claims(pod_with(ephemeral=["test-volume"]))
    assert str(info.value) == (
        "PVC testns/test-pod-test-volume was not created for pod testns/test-pod (pod is not owner)"
    )


def test_selected_node_elsewhere_is_a_bind_conflict() -> None:
    # FindPodVolumes' fast path: a claim already being provisioned for another node.
    env = Env()
    env.init_claims([with_selected_node(provisioned_pvc, "node2")])
    volumes, reasons = env.find(pod_with([provisioned_pvc]))
    assert reasons == [ERR_REASON_BIND_CONFLICT]
    assert volumes == PodVolumes(None, None)


# -- TestAssumePodVolumes / TestRevertAssumedPodVolumes ------------------------------------------


@dataclass
class AssumeScenario:
    pod_pvcs: Sequence[PersistentVolumeClaimView]
    pvs: Sequence[PersistentVolumeView]
    bindings: list[BindingInfo] | None = None
    provisions: list[DynamicProvision] | None = None
    should_fail: bool = False
    expected_all_bound: bool = False
    expected_bindings: list[BindingInfo] | None = None
    expected_provisions: list[PersistentVolumeClaimView] | None = None


ASSUME = {
    "all-bound": AssumeScenario([bound_pvc], [pv_bound], expected_all_bound=True),
    "one-binding": AssumeScenario(
        [unbound_pvc],
        [pv_node1a],
        bindings=[binding(unbound_pvc, pv_node1a)],
        expected_bindings=[binding(unbound_pvc, pv_node1a_bound)],
        expected_provisions=[],
    ),
    "two-bindings": AssumeScenario(
        [unbound_pvc, unbound_pvc2],
        [pv_node1a, pv_node1b],
        bindings=[binding(unbound_pvc, pv_node1a), binding(unbound_pvc2, pv_node1b)],
        expected_bindings=[
            binding(unbound_pvc, pv_node1a_bound),
            binding(unbound_pvc2, pv_node1b_bound),
        ],
        expected_provisions=[],
    ),
    "pv-already-bound": AssumeScenario(
        [unbound_pvc],
        [pv_node1a_bound],
        bindings=[binding(unbound_pvc, pv_node1a_bound)],
        expected_bindings=[binding(unbound_pvc, pv_node1a_bound)],
        expected_provisions=[],
    ),
    "tmpupdate-failed": AssumeScenario(
        [unbound_pvc],
        [pv_node1a],
        bindings=[binding(unbound_pvc, pv_node1a), binding(unbound_pvc2, pv_node1b)],
        should_fail=True,
    ),
    "one-binding, one-pvc-provisioned": AssumeScenario(
        [unbound_pvc, provisioned_pvc],
        [pv_node1a],
        bindings=[binding(unbound_pvc, pv_node1a)],
        provisions=[DynamicProvision(provisioned_pvc)],
        expected_bindings=[binding(unbound_pvc, pv_node1a_bound)],
        expected_provisions=[selected_node_pvc],
    ),
    "one-binding, one-provision-tmpupdate-failed": AssumeScenario(
        [unbound_pvc, provisioned_pvc_higher_version],
        [pv_node1a],
        bindings=[binding(unbound_pvc, pv_node1a)],
        provisions=[DynamicProvision(provisioned_pvc2)],
        should_fail=True,
    ),
}


@pytest.mark.parametrize("name", ASSUME)
def test_assume_pod_volumes(name: str) -> None:
    scenario = ASSUME[name]
    env = Env()
    env.init_claims(scenario.pod_pvcs)
    env.init_volumes(scenario.pvs)
    pod = pod_with(scenario.pod_pvcs)
    volumes = PodVolumes(
        [BindingInfo(b.pvc, b.pv) for b in scenario.bindings] if scenario.bindings else None,
        list(scenario.provisions) if scenario.provisions else None,
    )
    provision_claims = [p.pvc for p in scenario.provisions or ()]
    if scenario.should_fail:
        with pytest.raises(BindingError):
            env.binder.assume_pod_volumes(pod, "node1", volumes)
        env.validate_cache_restored(scenario.bindings or (), provision_claims)
        return
    all_bound = env.binder.assume_pod_volumes(pod, "node1", volumes)
    assert all_bound is scenario.expected_all_bound
    if all_bound:
        return
    expected_bindings = scenario.expected_bindings or []
    expected_claims = scenario.expected_provisions or []
    env.validate_assume(expected_bindings, expected_claims)
    assert volumes.static_bindings is not None and volumes.dynamic_provisions is not None
    assert [(b.pvc.name, _content(b.pv)) for b in volumes.static_bindings] == [
        (b.pvc.name, _content(b.pv)) for b in expected_bindings
    ]
    assert [_content(p.pvc) for p in volumes.dynamic_provisions] == [
        _content(c) for c in expected_claims
    ]


def test_assume_failure_message() -> None:
    env = Env()
    env.init_claims([unbound_pvc])
    env.init_volumes([pv_node1a])
    volumes = PodVolumes([binding(unbound_pvc, pv_node1a), binding(unbound_pvc2, pv_node1b)], None)
    with pytest.raises(BindingError) as info:
        env.binder.assume_pod_volumes(pod_with([unbound_pvc]), "node1", volumes)
    assert str(info.value) == 'could not find v1.PersistentVolume "pv-node1b"'
    # The first binding's assumption was reverted.
    assert env.binder.pv_cache.get("pv-node1a") is pv_node1a


def test_revert_assumed_pod_volumes() -> None:
    env = Env()
    pod_pvcs = [unbound_pvc, provisioned_pvc]
    env.init_claims(pod_pvcs)
    env.init_volumes([pv_node1a])
    bindings = [binding(unbound_pvc, pv_node1a)]
    volumes = PodVolumes(list(bindings), [DynamicProvision(provisioned_pvc)])
    assert env.binder.assume_pod_volumes(pod_with(pod_pvcs), "node1", volumes) is False
    env.validate_assume([binding(unbound_pvc, pv_node1a_bound)], [selected_node_pvc])
    env.binder.revert_assumed_pod_volumes(volumes)
    env.validate_cache_restored(bindings, [provisioned_pvc])


def test_find_assume_volumes() -> None:
    # TestFindAssumeVolumes: after Reserve, finding again picks the same (now assumed) PV.
    env = Env()
    env.init_volumes([pv_node2, pv_node1a, pv_node1c])
    env.init_claims([unbound_pvc])
    pod = pod_with([unbound_pvc])
    volumes, reasons = env.find(pod)
    assert reasons == []
    assert env.binder.assume_pod_volumes(pod, "node1", volumes) is False
    assert volumes.static_bindings is not None
    env.validate_assume(volumes.static_bindings, [])
    expected = [(b.pvc.name, b.pv) for b in volumes.static_bindings]
    for _ in range(50):
        again, reasons = env.find(pod)
        assert reasons == []
        assert again.static_bindings is not None
        assert [(b.pvc.name, b.pv) for b in again.static_bindings] == expected


def test_assumed_volume_is_taken_for_other_claims() -> None:
    # The point of the assume cache: a PV assumed for one pod is not offered to the next.
    env = Env()
    env.init_volumes([pv_node1a])
    other = make_test_pvc("other-pvc", "1G", "", UNBOUND, "", "1", WAIT_CLASS)
    env.init_claims([unbound_pvc, other])
    volumes, _ = env.find(pod_with([unbound_pvc]))
    env.binder.assume_pod_volumes(pod_with([unbound_pvc]), "node1", volumes)
    second = make_pod("second", namespace="testns", pvcs=["other-pvc"])
    _, reasons = env.find(second)
    assert reasons == [ERR_REASON_BIND_CONFLICT]
    env.binder.revert_assumed_pod_volumes(volumes)
    again, reasons = env.find(second)
    assert reasons == []
    assert _binding_pairs(again) == [("other-pvc", "pv-node1a")]


# -- TestBindAPIUpdate ---------------------------------------------------------------------------


@dataclass
class ApiUpdateScenario:
    bindings: list[BindingInfo] | None = None
    cached_pvs: Sequence[PersistentVolumeView] = ()
    api_pvs: Sequence[PersistentVolumeView] | None = None
    provisioned: list[PersistentVolumeClaimView] | None = None
    cached_pvcs: Sequence[PersistentVolumeClaimView] = ()
    api_pvcs: Sequence[PersistentVolumeClaimView] | None = None
    should_fail: bool = False
    expected_pvs: Sequence[PersistentVolumeView] = ()
    expected_api_pvs: Sequence[PersistentVolumeView] | None = None
    expected_pvcs: Sequence[PersistentVolumeClaimView] = ()
    expected_api_pvcs: Sequence[PersistentVolumeClaimView] | None = None


API_UPDATE = {
    "nothing-to-bind-nil": ApiUpdateScenario(should_fail=True),
    "nothing-to-bind-bindings-nil": ApiUpdateScenario(provisioned=[], should_fail=True),
    "nothing-to-bind-provisionings-nil": ApiUpdateScenario(bindings=[], should_fail=True),
    "nothing-to-bind-empty": ApiUpdateScenario(bindings=[], provisioned=[]),
    "one-binding": ApiUpdateScenario(
        bindings=[binding(unbound_pvc, pv_node1a_bound)],
        cached_pvs=[pv_node1a],
        expected_pvs=[pv_node1a_bound],
        provisioned=[],
    ),
    "two-bindings": ApiUpdateScenario(
        bindings=[binding(unbound_pvc, pv_node1a_bound), binding(unbound_pvc2, pv_node1b_bound)],
        cached_pvs=[pv_node1a, pv_node1b],
        expected_pvs=[pv_node1a_bound, pv_node1b_bound],
        provisioned=[],
    ),
    "api-already-updated": ApiUpdateScenario(
        bindings=[binding(unbound_pvc, pv_node1a_bound)],
        cached_pvs=[pv_node1a_bound],
        expected_pvs=[pv_node1a_bound],
        provisioned=[],
    ),
    "api-update-failed": ApiUpdateScenario(
        bindings=[binding(unbound_pvc, pv_node1a_bound), binding(unbound_pvc2, pv_node1b_bound)],
        cached_pvs=[pv_node1a, pv_node1b],
        api_pvs=[pv_node1a, pv_node1b_bound_higher_version],
        expected_pvs=[pv_node1a_bound, pv_node1b],
        expected_api_pvs=[pv_node1a_bound, pv_node1b_bound_higher_version],
        provisioned=[],
        should_fail=True,
    ),
    "one-provisioned-pvc": ApiUpdateScenario(
        bindings=[],
        provisioned=[add_provision_ann(provisioned_pvc)],
        cached_pvcs=[provisioned_pvc],
        expected_pvcs=[add_provision_ann(provisioned_pvc)],
    ),
    "provision-api-update-failed": ApiUpdateScenario(
        bindings=[],
        provisioned=[add_provision_ann(provisioned_pvc), add_provision_ann(provisioned_pvc2)],
        cached_pvcs=[provisioned_pvc, provisioned_pvc2],
        api_pvcs=[provisioned_pvc, provisioned_pvc_higher_version],
        expected_pvcs=[add_provision_ann(provisioned_pvc), provisioned_pvc2],
        expected_api_pvcs=[add_provision_ann(provisioned_pvc), provisioned_pvc_higher_version],
        should_fail=True,
    ),
    "binding-succeed, provision-api-update-failed": ApiUpdateScenario(
        bindings=[binding(unbound_pvc, pv_node1a_bound)],
        cached_pvs=[pv_node1a],
        expected_pvs=[pv_node1a_bound],
        provisioned=[add_provision_ann(provisioned_pvc), add_provision_ann(provisioned_pvc2)],
        cached_pvcs=[provisioned_pvc, provisioned_pvc2],
        api_pvcs=[provisioned_pvc, provisioned_pvc_higher_version],
        expected_pvcs=[add_provision_ann(provisioned_pvc), provisioned_pvc2],
        expected_api_pvcs=[add_provision_ann(provisioned_pvc), provisioned_pvc_higher_version],
        should_fail=True,
    ),
}


@pytest.mark.parametrize("name", API_UPDATE)
async def test_bind_api_update(name: str) -> None:
    scenario = API_UPDATE[name]
    env = Env()
    pod = make_pod("test-pod", namespace="testns", node_name="node1")
    env.init_volumes(scenario.cached_pvs, scenario.api_pvs)
    env.init_claims(scenario.cached_pvcs, scenario.api_pvcs)
    env.assume(scenario.bindings, scenario.provisioned)
    bindings = [BindingInfo(b.pvc, b.pv) for b in scenario.bindings or ()]
    if scenario.should_fail:
        with pytest.raises(BindingError):
            await env.binder.bind_api_update(
                pod,
                bindings if scenario.bindings is not None else None,
                list(scenario.provisioned) if scenario.provisioned is not None else None,
            )
    else:
        await env.binder.bind_api_update(pod, bindings, list(scenario.provisioned or ()))
    # The cache (which the informer may have updated to a newer version) and the API objects.
    for pv in scenario.expected_pvs:
        assert _content(env.binder.pv_cache.get(pv.name)) == _content(pv)
    api_pvs = scenario.expected_api_pvs or scenario.expected_pvs
    for pv in api_pvs:
        assert _content(env.server.api_object("persistentvolumes", pv.name)) == _content(pv)
    for pvc in scenario.expected_pvcs:
        assert _content(env.binder.pvc_cache.get(claim_key(pvc))) == _content(pvc)
    api_pvcs = scenario.expected_api_pvcs or scenario.expected_pvcs
    for pvc in api_pvcs:
        got = env.server.api_object("persistentvolumeclaims", claim_key(pvc))
        assert _content(got) == _content(pvc)


async def test_bind_api_update_messages() -> None:
    env = Env()
    pod = make_pod("test-pod", namespace="testns")
    with pytest.raises(BindingError) as info:
        await env.binder.bind_api_update(pod, None, [])
    assert str(info.value) == 'failed to get cached bindings for pod "testns/test-pod"'
    with pytest.raises(BindingError) as info:
        await env.binder.bind_api_update(pod, [], None)
    assert str(info.value) == 'failed to get cached claims to provision for pod "testns/test-pod"'
    env.init_volumes([pv_node1a], [pv_node1b_bound_higher_version])
    env.init_volumes([pv_node1b])
    env.assume([binding(unbound_pvc2, pv_node1b_bound)], [])
    with pytest.raises(BindingError) as info:
        await env.binder.bind_api_update(pod, [binding(unbound_pvc2, pv_node1b_bound)], [])
    assert str(info.value) == (
        'Operation cannot be fulfilled on persistentvolumes "pv-node1b": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )
    # The failed binding's assumption is reverted.
    assert env.binder.pv_cache.get("pv-node1b") is pv_node1b


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            (500, {"kind": "Status", "message": "etcd is down"}),
            'persistentvolumes "pv-node1a": etcd is down',
        ),
        ((503, None), 'persistentvolumes "pv-node1a": HTTP 503'),
        (
            (200, ["not", "an", "object"]),
            'persistentvolumes "pv-node1a": malformed response: expected an object',
        ),
        (
            (200, {"metadata": {"name": 5}}),
            'persistentvolumes "pv-node1a": malformed response: '
            "metadata.name: expected a string, got int",
        ),
    ],
)
async def test_bind_api_update_names_the_object(reply: tuple[int, Any], message: str) -> None:
    env = Env()
    env.init_volumes([pv_node1a])
    env.server.failures["/api/v1/persistentvolumes/pv-node1a"] = reply
    env.assume([binding(unbound_pvc, pv_node1a_bound)], [])
    with pytest.raises(BindingError) as info:
        await env.binder.bind_api_update(make_pod("p"), [binding(unbound_pvc, pv_node1a_bound)], [])
    assert str(info.value) == message
    assert env.binder.pv_cache.get("pv-node1a") is pv_node1a


async def test_bind_api_update_transport_error() -> None:
    class Broken:
        async def request(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
            raise ConnectionResetError("connection reset by peer")

    env = Env()
    env.init_volumes([pv_node1a])
    env.binder.client = Broken()
    with pytest.raises(BindingError) as info:
        await env.binder.bind_api_update(make_pod("p"), [binding(unbound_pvc, pv_node1a_bound)], [])
    assert str(info.value) == 'persistentvolumes "pv-node1a": connection reset by peer'


async def test_bind_api_update_request_bodies() -> None:
    # bindAPIUpdate PUTs the bound PV (claimRef, bound-by-controller) and the claim with the
    # selected-node annotation.
    env = Env()
    env.init_volumes([pv_node1a])
    env.init_claims([provisioned_pvc])
    claim = add_provision_ann(provisioned_pvc)
    env.assume([binding(unbound_pvc, pv_node1a_bound)], [claim])
    await env.binder.bind_api_update(
        make_pod("p"), [binding(unbound_pvc, pv_node1a_bound)], [claim]
    )
    (m1, p1, b1), (m2, p2, b2) = env.server.requests
    assert (m1, p1) == ("PUT", "/api/v1/persistentvolumes/pv-node1a")
    assert b1["spec"]["claimRef"]["name"] == "unbound-pvc"
    assert b1["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert (m2, p2) == ("PUT", "/api/v1/namespaces/testns/persistentvolumeclaims/provisioned-pvc")
    assert b2["metadata"]["annotations"][SELECTED_NODE_ANNOTATION] == "node1"


# -- TestCheckBindings -----------------------------------------------------------------------------


@dataclass
class CheckScenario:
    init_pvs: Sequence[PersistentVolumeView] = ()
    init_pvcs: Sequence[PersistentVolumeClaimView] = ()
    bindings: list[BindingInfo] | None = None
    provisioned: list[PersistentVolumeClaimView] | None = None
    api_pvs: Sequence[PersistentVolumeView] = ()
    api_pvcs: Sequence[PersistentVolumeClaimView] = ()
    delete_pvs: bool = False
    delete_pvcs: bool = False
    should_fail: bool = False
    expected_bound: bool = False
    message: str = ""


CHECK = {
    "nothing-to-bind-nil": CheckScenario(should_fail=True),
    "nothing-to-bind-bindings-nil": CheckScenario(provisioned=[], should_fail=True),
    "nothing-to-bind-provisionings-nil": CheckScenario(bindings=[], should_fail=True),
    "nothing-to-bind": CheckScenario(bindings=[], provisioned=[], expected_bound=True),
    "binding-bound": CheckScenario(
        bindings=[binding(unbound_pvc, pv_node1a_bound)],
        provisioned=[],
        init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a],
        expected_bound=True,
    ),
    "binding-prebound": CheckScenario(
        bindings=[binding(unbound_pvc, pv_node1a_bound)],
        provisioned=[],
        init_pvs=[pv_node1a_bound],
        init_pvcs=[prebound_pvc_node1a],
    ),
    "binding-unbound": CheckScenario(
        bindings=[binding(unbound_pvc, pv_node1a_bound)],
        provisioned=[],
        init_pvs=[pv_node1a_bound],
        init_pvcs=[unbound_pvc],
    ),
    "binding-pvc-not-exists": CheckScenario(
        bindings=[binding(unbound_pvc, pv_node1a_bound)],
        provisioned=[],
        init_pvs=[pv_node1a_bound],
        should_fail=True,
        message="failed to check binding: could not find v1.PersistentVolumeClaim "
        '"testns/unbound-pvc"',
    ),
    "binding-pv-not-exists": CheckScenario(
        bindings=[binding(unbound_pvc, pv_node1a_bound)],
        provisioned=[],
        init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a],
        delete_pvs=True,
        should_fail=True,
        message='failed to check binding: could not find v1.PersistentVolume "pv-node1a"',
    ),
    "binding-claimref-nil": CheckScenario(
        bindings=[binding(unbound_pvc, pv_node1a_bound)],
        provisioned=[],
        init_pvs=[pv_node1a],
        init_pvcs=[bound_pvc_node1a],
        api_pvs=[pv_node1a],
        api_pvcs=[bound_pvc_node1a],
        should_fail=True,
        message='ClaimRef got reset for pv "pv-node1a"',
    ),
    "binding-claimref-uid-empty": CheckScenario(
        bindings=[binding(unbound_pvc, pv_node1a_bound)],
        provisioned=[],
        init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a],
        api_pvs=[without_claim_uid(pv_node1a_bound)],
        api_pvcs=[bound_pvc_node1a],
        should_fail=True,
        message='ClaimRef got reset for pv "pv-node1a"',
    ),
    "binding-one-bound,one-unbound": CheckScenario(
        bindings=[binding(unbound_pvc, pv_node1a_bound), binding(unbound_pvc2, pv_node1b_bound)],
        provisioned=[],
        init_pvs=[pv_node1a_bound, pv_node1b_bound],
        init_pvcs=[bound_pvc_node1a, unbound_pvc2],
    ),
    "provisioning-pvc-bound": CheckScenario(
        bindings=[],
        provisioned=[add_provision_ann(provisioned_pvc)],
        init_pvs=[pv_bound],
        init_pvcs=[provisioned_pvc_bound],
        api_pvcs=[add_provision_ann(provisioned_pvc_bound)],
        expected_bound=True,
    ),
    "provisioning-pvc-unbound": CheckScenario(
        bindings=[],
        provisioned=[add_provision_ann(provisioned_pvc)],
        init_pvcs=[add_provision_ann(provisioned_pvc)],
    ),
    "provisioning-pvc-not-exists": CheckScenario(
        bindings=[],
        provisioned=[add_provision_ann(provisioned_pvc)],
        init_pvcs=[provisioned_pvc],
        delete_pvcs=True,
        should_fail=True,
        message="failed to check provisioning pvc: could not find v1.PersistentVolumeClaim "
        '"testns/provisioned-pvc"',
    ),
    "provisioning-pvc-annotations-nil": CheckScenario(
        bindings=[],
        provisioned=[add_provision_ann(provisioned_pvc)],
        init_pvcs=[provisioned_pvc],
        api_pvcs=[provisioned_pvc],
        should_fail=True,
        message='selectedNode annotation reset for PVC "provisioned-pvc"',
    ),
    "provisioning-pvc-selected-node-dropped": CheckScenario(
        bindings=[],
        provisioned=[add_provision_ann(provisioned_pvc)],
        init_pvcs=[provisioned_pvc],
        api_pvcs=[with_empty_annotations(provisioned_pvc)],
        should_fail=True,
        message='provisioning failed for PVC "provisioned-pvc"',
    ),
    "provisioning-pvc-selected-node-wrong-node": CheckScenario(
        init_pvcs=[provisioned_pvc],
        bindings=[],
        provisioned=[add_provision_ann(provisioned_pvc)],
        api_pvcs=[with_selected_node(provisioned_pvc, "wrong-node")],
        should_fail=True,
        message='provisioning failed for PVC "provisioned-pvc"',
    ),
    "binding-bound-provisioning-unbound": CheckScenario(
        bindings=[binding(unbound_pvc, pv_node1a_bound)],
        provisioned=[add_provision_ann(provisioned_pvc)],
        init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a, add_provision_ann(provisioned_pvc)],
    ),
    "tolerate-provisioning-pvc-bound-pv-not-found": CheckScenario(
        init_pvs=[pv_node1a],
        init_pvcs=[provisioned_pvc],
        bindings=[],
        provisioned=[add_provision_ann(provisioned_pvc)],
        api_pvcs=[add_provision_ann(provisioned_pvc_bound)],
        delete_pvs=True,
    ),
}


@pytest.mark.parametrize("name", CHECK)
def test_check_bindings(name: str) -> None:
    scenario = CHECK[name]
    env = Env()
    pod = make_pod("test-pod", namespace="testns", node_name="node1")
    env.pods.add(pod.key)
    env.init_volumes(scenario.init_pvs)
    env.init_claims(scenario.init_pvcs)
    env.assume(scenario.bindings, scenario.provisioned)
    if scenario.delete_pvs:
        for pv in scenario.init_pvs:
            env.server.delete(pv)
    else:
        for pv in scenario.api_pvs:
            env.server.put(pv)
    if scenario.delete_pvcs:
        for pvc in scenario.init_pvcs:
            env.server.delete(pvc)
    else:
        for pvc in scenario.api_pvcs:
            env.server.put(pvc)
    if scenario.should_fail:
        with pytest.raises(BindingError) as info:
            env.binder.check_bindings(pod, "node1", scenario.bindings, scenario.provisioned)
        if scenario.message:
            assert str(info.value) == scenario.message
        return
    bound = env.binder.check_bindings(pod, "node1", scenario.bindings, scenario.provisioned)
    assert bound is scenario.expected_bound


def test_check_bindings_waits_for_the_informer() -> None:
    # "Because we updated PV in apiserver, skip if API object is older".
    env = Env()
    pod = make_pod("test-pod", namespace="testns")
    env.pods.add(pod.key)
    env.init_volumes([pv_node1a])
    env.init_claims([bound_pvc_node1a])
    ours = make_pv("pv-node1a", WAIT_CLASS, resource_version="5", claim=unbound_pvc)
    assert env.binder.check_bindings(pod, "node1", [binding(unbound_pvc, ours)], []) is False


@pytest.mark.parametrize(
    ("nodes", "pods", "message"),
    [
        ((), {"testns/test-pod"}, 'failed to get node "node1": node "node1" not found'),
        (
            (node1,),
            set(),
            'pod does not exist any more: pod "test-pod" not found',
        ),
        (
            (node1_no_labels,),
            {"testns/test-pod"},
            'pv "pv-node1a" node affinity doesn\'t match node "node1": no matching '
            "NodeSelectorTerms",
        ),
    ],
)
def test_check_bindings_messages(nodes: Sequence[NodeView], pods: set[str], message: str) -> None:
    env = Env(nodes=nodes)
    env.pods.update(pods)
    env.init_volumes([pv_node1a_bound])
    env.init_claims([bound_pvc_node1a])
    pod = make_pod("test-pod", namespace="testns")
    with pytest.raises(BindingError) as info:
        env.binder.check_bindings(pod, "node1", [binding(unbound_pvc, pv_node1a_bound)], [])
    assert str(info.value) == message


# -- TestBindPodVolumes ----------------------------------------------------------------------------

Delay = Callable[[Env, PodView], None]


def _bind_claim(name: str, pv_name: str) -> Delay:
    def delay(env: Env, pod: PodView) -> None:
        env.server.complete_binding(f"testns/{name}", pv_name)

    return delay


def _provision(env: Env, pod: PodView) -> None:
    env.server.provision("testns/provisioned-pvc", "dynamic-pv", {NODE_LABEL_KEY: ["node1"]})


def _delete_pod(env: Env, pod: PodView) -> None:
    env.pods.discard(pod.key)


def _delete_claim(env: Env, pod: PodView) -> None:
    pvc = env.storage.claims.get("testns/unbound-pvc")
    assert pvc is not None
    env.server.delete(pvc)


@dataclass
class BindScenario:
    bindings_nil: bool = False
    nodes: Sequence[NodeView] = (node1,)
    init_pvs: Sequence[PersistentVolumeView] = ()
    init_pvcs: Sequence[PersistentVolumeClaimView] = ()
    binding: BindingInfo | None = None
    claim_to_provision: PersistentVolumeClaimView | None = None
    api_pv: PersistentVolumeView | None = None
    api_pvc: PersistentVolumeClaimView | None = None
    delay: Delay | None = None
    should_fail: bool = False
    message: str = ""


BIND = {
    "nothing-to-bind-nil": BindScenario(bindings_nil=True, nodes=(), should_fail=True),
    "nothing-to-bind-empty": BindScenario(),
    "already-bound": BindScenario(
        binding=binding(unbound_pvc, pv_node1a_bound),
        init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a],
    ),
    "binding-static-pv-succeeds-after-time": BindScenario(
        init_pvs=[pv_node1a],
        init_pvcs=[unbound_pvc],
        binding=binding(unbound_pvc, pv_node1a_bound),
        delay=_bind_claim("unbound-pvc", "pv-node1a"),
    ),
    "binding-dynamic-pv-succeeds-after-time": BindScenario(
        claim_to_provision=with_selected_node(provisioned_pvc, "node1"),
        init_pvcs=[provisioned_pvc],
        delay=_provision,
    ),
    "bound-by-pv-controller-before-bind": BindScenario(
        init_pvs=[pv_node1a],
        init_pvcs=[unbound_pvc],
        binding=binding(unbound_pvc, pv_node1a_bound),
        api_pv=pv_node1a_bound,
        api_pvc=bound_pvc_node1a,
        should_fail=True,  # bindAPIUpdate fails: API conflict
    ),
    "pod-deleted-after-time": BindScenario(
        binding=binding(unbound_pvc, pv_node1a_bound),
        init_pvs=[pv_node1a],
        init_pvcs=[unbound_pvc],
        delay=_delete_pod,
        should_fail=True,
        message='binding volumes: pod does not exist any more: pod "test-pod" not found',
    ),
    "binding-times-out": BindScenario(
        binding=binding(unbound_pvc, pv_node1a_bound),
        init_pvs=[pv_node1a],
        init_pvcs=[unbound_pvc],
        should_fail=True,
        message="binding volumes: context deadline exceeded",
    ),
    "binding-fails": BindScenario(
        binding=binding(unbound_pvc2, pv_node1b_bound),
        init_pvs=[pv_node1b],
        init_pvcs=[unbound_pvc2],
        should_fail=True,
    ),
    "check-fails": BindScenario(
        binding=binding(unbound_pvc, pv_node1a_bound),
        init_pvs=[pv_node1a],
        init_pvcs=[unbound_pvc],
        delay=_delete_claim,
        should_fail=True,
        message="binding volumes: failed to check binding: could not find "
        'v1.PersistentVolumeClaim "testns/unbound-pvc"',
    ),
    "node-affinity-fails": BindScenario(
        binding=binding(unbound_pvc, pv_node1a_bound),
        init_pvs=[pv_node1a_bound],
        init_pvcs=[bound_pvc_node1a],
        nodes=(node1_no_labels,),
        should_fail=True,
        message='binding volumes: pv "pv-node1a" node affinity doesn\'t match node "node1": '
        "no matching NodeSelectorTerms",
    ),
    "node-affinity-fails-dynamic-provisioning": BindScenario(
        init_pvs=[pv_node1a, pv_node2],
        init_pvcs=[selected_node_pvc],
        claim_to_provision=selected_node_pvc,
        nodes=(node1, node2),
        delay=_bind_claim("provisioned-pvc", "pv-node2"),
        should_fail=True,
        message='binding volumes: pv "pv-node2" node affinity doesn\'t match node "node1": '
        "no matching NodeSelectorTerms",
    ),
}


async def _later(delay: Callable[[], None]) -> None:
    await asyncio.sleep(0.05)  # after bindAPIUpdate, while the binder waits
    delay()


@pytest.mark.parametrize("name", BIND)
async def test_bind_pod_volumes(name: str) -> None:
    scenario = BIND[name]
    env = Env(nodes=scenario.nodes, bind_timeout=0.5)
    pod = make_pod("test-pod", namespace="testns", node_name="node1")
    env.pods.add(pod.key)
    bindings: list[BindingInfo] = []
    provisions: list[DynamicProvision] = []
    if not scenario.bindings_nil:
        if scenario.binding is not None:
            bindings = [BindingInfo(scenario.binding.pvc, scenario.binding.pv)]
        if scenario.claim_to_provision is not None:
            provisions = [DynamicProvision(scenario.claim_to_provision)]
        env.init_volumes(scenario.init_pvs)
        env.init_claims(scenario.init_pvcs)
        env.assume(bindings, [p.pvc for p in provisions])
    if scenario.api_pv is not None:
        env.server.put(scenario.api_pv)
    if scenario.api_pvc is not None:
        env.server.put(scenario.api_pvc)
    tasks: list[Awaitable[None]] = []
    if scenario.delay is not None:
        delay = scenario.delay
        tasks.append(_later(lambda: delay(env, pod)))
    volumes = PodVolumes(bindings, provisions)

    async def bind() -> BindingError | None:
        try:
            await env.binder.bind_pod_volumes(pod, "node1", volumes)
        except BindingError as err:
            return err
        return None

    error, *_ = await asyncio.gather(bind(), *tasks)
    if scenario.should_fail:
        assert error is not None
        if scenario.message:
            assert str(error) == scenario.message
    else:
        assert error is None


async def test_bind_timeout_zero_fails_at_once() -> None:
    # PollUntilContextTimeout with a zero timeout: the context is done before the first poll.
    env = Env(bind_timeout=0)
    pod = make_pod("test-pod", namespace="testns")
    with pytest.raises(BindingError) as info:
        await env.binder.bind_pod_volumes(pod, "node1", PodVolumes([], []))
    assert str(info.value) == "binding volumes: context deadline exceeded"


async def test_wait_is_event_driven() -> None:
    # The binder re-checks on the informer's events, not only on its poll interval.
    env = Env(bind_timeout=5)
    env.binder.poll_interval = 60.0
    pod = make_pod("test-pod", namespace="testns")
    env.pods.add(pod.key)
    env.init_volumes([pv_node1a])
    env.init_claims([unbound_pvc])
    b = binding(unbound_pvc, pv_node1a_bound)
    env.assume([b], [])
    loop = asyncio.get_running_loop()
    start = loop.time()
    await asyncio.gather(
        env.binder.bind_pod_volumes(pod, "node1", PodVolumes([b], [])),
        _later(lambda: env.server.complete_binding("testns/unbound-pvc", "pv-node1a")),
    )
    assert loop.time() - start < 5
    # Listeners are removed once the wait is over.
    assert not env.storage.claims._listeners and not env.storage.volumes._listeners


# -- TestCapacity -------------------------------------------------------------------------


@dataclass
class CapacityScenario:
    capacities: Sequence[CSIStorageCapacityView] = ()
    expected_capacity: CSIStorageCapacityView | None = None
    reasons: Sequence[str] = ()


CAPACITY = {
    "network-attached": CapacityScenario([network_attached_capacity], network_attached_capacity),
    "local-storage": CapacityScenario([node1_capacity], node1_capacity),
    "multiple": CapacityScenario(
        [network_attached_capacity, node2_capacity, node1_capacity], node1_capacity
    ),
    "no-storage": CapacityScenario(reasons=[ERR_REASON_NOT_ENOUGH_SPACE]),
    "wrong-node": CapacityScenario(
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, {NODE_LABEL_KEY: "node2"}, "1Gi")],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "wrong-storage-class": CapacityScenario(
        [make_capacity("net", WAIT_CLASS, {NODE_LABEL_KEY: "node1"}, "1Gi")],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "insufficient-storage": CapacityScenario(
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, {NODE_LABEL_KEY: "node1"}, "1Mi")],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "insufficient-volume-size": CapacityScenario(
        [
            make_capacity(
                "net", WAIT_CLASS_WITH_PROVISIONER, {NODE_LABEL_KEY: "node1"}, "1Gi", "1Mi"
            )
        ],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "zero-storage": CapacityScenario(
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, {NODE_LABEL_KEY: "node1"}, "0Mi")],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "zero-volume-size": CapacityScenario(
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, {NODE_LABEL_KEY: "node1"}, "", "0Mi")],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    "nil-storage": CapacityScenario(
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, {NODE_LABEL_KEY: "node1"})],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
    # Not in upstream's table: a capacity without nodeTopology is reachable from no node.
    "no-topology": CapacityScenario(
        [make_capacity("net", WAIT_CLASS_WITH_PROVISIONER, None, "1Gi")],
        reasons=[ERR_REASON_NOT_ENOUGH_SPACE],
    ),
}


@pytest.mark.parametrize("opt_in", [True, False])
@pytest.mark.parametrize("name", CAPACITY)
def test_capacity(name: str, opt_in: bool) -> None:
    scenario = CAPACITY[name]
    # The driver has the feature enabled, but may not opt in.
    env = Env()
    env.storage.add(make_csi_driver(PROVISIONER, opt_in), *scenario.capacities)
    env.init_claims([provisioned_pvc])
    volumes, reasons = env.find(pod_with([provisioned_pvc]))
    expected_reasons = list(scenario.reasons) if opt_in else []
    assert reasons == expected_reasons
    if expected_reasons:
        assert volumes.dynamic_provisions is None
        return
    assert volumes.dynamic_provisions is not None
    (provision,) = volumes.dynamic_provisions
    assert provision.pvc is provisioned_pvc
    assert provision.node_capacity is (scenario.expected_capacity if opt_in else None)


def test_capacity_without_storage_request_is_not_checked() -> None:
    env = Env()
    env.storage.add(make_csi_driver(PROVISIONER, True))
    claim = make_pvc("no-request", WAIT_CLASS_WITH_PROVISIONER, namespace="testns")
    env.init_claims([claim])
    volumes, reasons = env.find(make_pod("test-pod", namespace="testns", pvcs=["no-request"]))
    assert reasons == []
    assert _provision_names(volumes) == ["no-request"]
