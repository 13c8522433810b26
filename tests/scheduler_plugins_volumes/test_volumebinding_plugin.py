"""The VolumeBinding plugin: PreFilter, Filter, Reserve / Unreserve, PreBind, queueing hints.

Ported from upstream's pkg/scheduler/framework/plugins/volumebinding/volume_binding_test.go
(TestVolumeBinding: PreFilter status and state, Filter status per node; its PreScore and Score
expectations are in test_volumebinding_score.py; the
"all bound with local volumes" case no longer narrows the nodes in PreFilter, as current
upstream's PreFilter returns no PreFilterResult) and the queueing hint tests of the same file
(TestIsSchedulableAfterCSINodeChange, ...PersistentVolumeClaimChange, ...StorageClassChange,
...CSIStorageCapacityChange, ...CSIDriverChange), keeping the cases current upstream's hints
decide the same way. Reserve / PreBind / Unreserve expectations per case are added here
(volume_binding.go's Reserve, PreBind, Unreserve over binder.go).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.api.objects import NodeView, PodView
from scheduler.api.storage import (
    SELECTED_NODE_ANNOTATION,
    PersistentVolumeClaimView,
    PersistentVolumeView,
)
from scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Code, Status
from scheduler.plugins.volumebinding import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    STATE_KEY,
    VolumeBinder,
    VolumeBinding,
    decode_volume_binding_args,
)
from scheduler.plugins.volumebinding.hints import (
    MIGRATED_PLUGINS_ANNOTATION,
    schedulable_after_csi_driver_change,
    schedulable_after_csi_node_change,
    schedulable_after_csi_storage_capacity_change,
    schedulable_after_pvc_change,
    schedulable_after_storage_class_change,
)
from scheduler.plugins.volumebinding.plugin import VolumeBindingState
from scheduler.testing import (
    FakeHandle,
    ListSnapshot,
    csi_volume,
    empty_dir_volume,
    ephemeral_volume,
    make_pod,
    node_infos,
)
from scheduler.testing.volumes import (
    HOSTNAME_LABEL,
    IMMEDIATE,
    WAIT,
    FakeApiServer,
    hostname_node,
    make_capacity,
    make_class,
    make_csi_driver,
    make_csi_node,
    make_pv,
    make_pvc,
)

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.SKIP

IMMEDIATE_SC = "immediate-sc"
WAIT_SC = "wait-sc"
WAIT_HDD_SC = "wait-hdd-sc"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


def pvc(name: str, klass: str, **kwargs: Any) -> PersistentVolumeClaimView:
    """test_utils.go's makePVC (namespace default)."""
    return make_pvc(name, klass, **kwargs)


def bound_pvc(name: str, klass: str, pv: str, **kwargs: Any) -> PersistentVolumeClaimView:
    """makePVC(...).withBoundPV(pv): volumeName and the bind-completed annotation."""
    return make_pvc(name, klass, bound_pv=pv, bind_completed=True, **kwargs)


def pv(name: str, klass: str, **kwargs: Any) -> PersistentVolumeView:
    return make_pv(name, klass, **kwargs)


def local_pv(name: str, klass: str, capacity: str, node: str) -> PersistentVolumeView:
    return make_pv(
        name, klass, phase="Available", capacity=capacity, node_affinity={HOSTNAME_LABEL: [node]}
    )


def zonal_pv(name: str, capacity: str, region: str, zone: str) -> PersistentVolumeView:
    return make_pv(
        name,
        WAIT_SC,
        phase="Available",
        capacity=capacity,
        node_affinity={REGION: [region], ZONE: [zone]},
    )


def zonal_node(name: str, region: str, zone: str) -> NodeView:
    return hostname_node(name, {REGION: region, ZONE: zone})


@dataclass
class Case:
    pod: PodView
    nodes: Sequence[NodeView]
    pvcs: Sequence[PersistentVolumeClaimView] = ()
    pvs: Sequence[PersistentVolumeView] = ()
    pre_filter: Status = field(default_factory=lambda: Status.OK)
    # State after PreFilter: bound claims, delayed claims, PVs by class (names).
    bound: Sequence[str] = ()
    delayed: Sequence[str] = ()
    volumes_by_class: dict[str, list[str]] = field(default_factory=dict)
    filters: Sequence[Status] = ()
    # Added here: what Filter chose on each node that passed (claim → PV; claims to provision).
    chosen: dict[str, dict[str, str]] = field(default_factory=dict)


def unresolvable(*reasons: str) -> Status:
    return Status.unresolvable(*reasons)


OK = Status.OK

CASES: dict[str, Case] = {
    "pod has not pvcs": Case(
        pod=make_pod("pod-a"),
        nodes=[hostname_node("node-a")],
        pre_filter=Status.skip(),
    ),
    "all bound": Case(
        pod=make_pod("pod-a", pvcs=["pvc-a"]),
        nodes=[hostname_node("node-a")],
        pvcs=[bound_pvc("pvc-a", WAIT_SC, "pv-a")],
        pvs=[pv("pv-a", WAIT_SC, phase="Available")],
        bound=["pvc-a"],
        filters=[OK],
    ),
    "all bound with local volumes": Case(
        pod=make_pod("pod-a", pvcs=["pvc-a", "pvc-b"]),
        nodes=[hostname_node("node-a")],
        pvcs=[bound_pvc("pvc-a", WAIT_SC, "pv-a"), bound_pvc("pvc-b", WAIT_SC, "pv-b")],
        pvs=[
            pv("pv-a", WAIT_SC, phase="Bound", node_affinity={HOSTNAME_LABEL: ["node-a"]}),
            pv("pv-b", WAIT_SC, phase="Bound", node_affinity={HOSTNAME_LABEL: ["node-a"]}),
        ],
        bound=["pvc-a", "pvc-b"],
        filters=[OK],
    ),
    "PVC does not exist": Case(
        pod=make_pod("pod-a", pvcs=["pvc-a"]),
        nodes=[hostname_node("node-a")],
        pre_filter=unresolvable('persistentvolumeclaim "pvc-a" not found'),
    ),
    "Part of PVCs do not exist": Case(
        pod=make_pod("pod-a", pvcs=["pvc-a", "pvc-b"]),
        nodes=[hostname_node("node-a")],
        pvcs=[bound_pvc("pvc-a", WAIT_SC, "pv-a")],
        pre_filter=unresolvable('persistentvolumeclaim "pvc-b" not found'),
    ),
    "immediate claims not bound": Case(
        pod=make_pod("pod-a", pvcs=["pvc-a"]),
        nodes=[hostname_node("node-a")],
        pvcs=[pvc("pvc-a", IMMEDIATE_SC)],
        pre_filter=unresolvable("pod has unbound immediate PersistentVolumeClaims"),
    ),
    "unbound claims no matches": Case(
        pod=make_pod("pod-a", pvcs=["pvc-a"]),
        nodes=[hostname_node("node-a")],
        pvcs=[pvc("pvc-a", WAIT_SC)],
        delayed=["pvc-a"],
        volumes_by_class={WAIT_SC: []},
        filters=[unresolvable(ERR_REASON_BIND_CONFLICT)],
    ),
    "bound and unbound unsatisfied": Case(
        pod=make_pod("pod-a", pvcs=["pvc-a", "pvc-b"]),
        nodes=[hostname_node("node-a", {"foo": "barbar"})],
        pvcs=[bound_pvc("pvc-a", WAIT_SC, "pv-a"), pvc("pvc-b", WAIT_SC)],
        pvs=[pv("pv-a", WAIT_SC, phase="Available", node_affinity={"foo": ["bar"]})],
        bound=["pvc-a"],
        delayed=["pvc-b"],
        volumes_by_class={WAIT_SC: ["pv-a"]},
        filters=[unresolvable(ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT)],
    ),
    "pvc not found": Case(
        pod=make_pod("pod-a", pvcs=["pvc-a"]),
        nodes=[hostname_node("node-a")],
        pre_filter=unresolvable('persistentvolumeclaim "pvc-a" not found'),
    ),
    "pv not found": Case(
        pod=make_pod("pod-a", pvcs=["pvc-a"]),
        nodes=[hostname_node("node-a")],
        pvcs=[bound_pvc("pvc-a", WAIT_SC, "pv-a")],
        bound=["pvc-a"],
        filters=[unresolvable(ERR_REASON_PV_NOT_EXIST)],
    ),
    "pv not found claim lost": Case(
        pod=make_pod("pod-a", pvcs=["pvc-a"]),
        nodes=[hostname_node("node-a")],
        pvcs=[bound_pvc("pvc-a", WAIT_SC, "pv-a", phase="Lost")],
        pre_filter=unresolvable(
            'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'
        ),
    ),
    "local volumes with close capacity are preferred": Case(
        pod=make_pod("pod-a", pvcs=["pvc-a"]),
        nodes=[hostname_node("node-a"), hostname_node("node-b"), hostname_node("node-c")],
        pvcs=[pvc("pvc-a", WAIT_SC, request="50Gi")],
        pvs=[
            local_pv("pv-a-0", WAIT_SC, "200Gi", "node-a"),
            local_pv("pv-a-1", WAIT_SC, "200Gi", "node-a"),
            local_pv("pv-b-0", WAIT_SC, "100Gi", "node-b"),
            local_pv("pv-b-1", WAIT_SC, "100Gi", "node-b"),
        ],
        delayed=["pvc-a"],
        volumes_by_class={WAIT_SC: ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]},
        filters=[OK, OK, unresolvable(ERR_REASON_BIND_CONFLICT)],
        chosen={"node-a": {"pvc-a": "pv-a-0"}, "node-b": {"pvc-a": "pv-b-0"}},
    ),
    "local volumes with close capacity are preferred (multiple pvcs)": Case(
        pod=make_pod("pod-a", pvcs=["pvc-0", "pvc-1"]),
        nodes=[hostname_node("node-a"), hostname_node("node-b"), hostname_node("node-c")],
        pvcs=[pvc("pvc-0", WAIT_SC, request="50Gi"), pvc("pvc-1", WAIT_HDD_SC, request="100Gi")],
        pvs=[
            local_pv("pv-a-0", WAIT_SC, "200Gi", "node-a"),
            local_pv("pv-a-1", WAIT_SC, "200Gi", "node-a"),
            local_pv("pv-a-2", WAIT_HDD_SC, "200Gi", "node-a"),
            local_pv("pv-a-3", WAIT_HDD_SC, "200Gi", "node-a"),
            local_pv("pv-b-0", WAIT_SC, "100Gi", "node-b"),
            local_pv("pv-b-1", WAIT_SC, "100Gi", "node-b"),
            local_pv("pv-b-2", WAIT_HDD_SC, "100Gi", "node-b"),
            local_pv("pv-b-3", WAIT_HDD_SC, "100Gi", "node-b"),
        ],
        delayed=["pvc-0", "pvc-1"],
        volumes_by_class={
            WAIT_SC: ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"],
            WAIT_HDD_SC: ["pv-a-2", "pv-a-3", "pv-b-2", "pv-b-3"],
        },
        filters=[OK, OK, unresolvable(ERR_REASON_BIND_CONFLICT)],
        chosen={
            "node-a": {"pvc-0": "pv-a-0", "pvc-1": "pv-a-2"},
            "node-b": {"pvc-0": "pv-b-0", "pvc-1": "pv-b-2"},
        },
    ),
    # Also upstream's "zonal volumes with close capacity are preferred (custom shape)": the
    # shape only changes the scores, which are not ported.
    "zonal volumes with close capacity are preferred": Case(
        pod=make_pod("pod-a", pvcs=["pvc-a"]),
        nodes=[
            zonal_node("zone-a-node-a", "region-a", "zone-a"),
            zonal_node("zone-a-node-b", "region-a", "zone-a"),
            zonal_node("zone-b-node-a", "region-b", "zone-b"),
            zonal_node("zone-b-node-b", "region-b", "zone-b"),
            zonal_node("zone-c-node-a", "region-c", "zone-c"),
            zonal_node("zone-c-node-b", "region-c", "zone-c"),
        ],
        pvcs=[pvc("pvc-a", WAIT_SC, request="50Gi")],
        pvs=[
            zonal_pv("pv-a-0", "200Gi", "region-a", "zone-a"),
            zonal_pv("pv-a-1", "200Gi", "region-a", "zone-a"),
            zonal_pv("pv-b-0", "100Gi", "region-b", "zone-b"),
            zonal_pv("pv-b-1", "100Gi", "region-b", "zone-b"),
        ],
        delayed=["pvc-a"],
        volumes_by_class={WAIT_SC: ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]},
        filters=[
            OK,
            OK,
            OK,
            OK,
            unresolvable(ERR_REASON_BIND_CONFLICT),
            unresolvable(ERR_REASON_BIND_CONFLICT),
        ],
        chosen={
            "zone-a-node-a": {"pvc-a": "pv-a-0"},
            "zone-a-node-b": {"pvc-a": "pv-a-0"},
            "zone-b-node-a": {"pvc-a": "pv-b-0"},
            "zone-b-node-b": {"pvc-a": "pv-b-0"},
        },
    ),
}


@dataclass
class Setup:
    handle: FakeHandle
    plugin: VolumeBinding
    server: FakeApiServer


def setup(
    nodes: Sequence[NodeView],
    pvcs: Sequence[PersistentVolumeClaimView] = (),
    pvs: Sequence[PersistentVolumeView] = (),
    *,
    extra: Sequence[Any] = (),
    bind_timeout: float = 5.0,
) -> Setup:
    """The classes of volume_binding_test.go (immediate-sc, wait-sc, wait-hdd-sc: no
    provisioner) plus `extra` objects, and a plugin whose binder talks to a fake API server."""
    handle = FakeHandle(ListSnapshot(node_infos(nodes)))
    storage = handle.storage
    storage.add(
        make_class(IMMEDIATE_SC, IMMEDIATE),
        make_class(WAIT_SC, WAIT),
        make_class(WAIT_HDD_SC, WAIT),
        *pvcs,
        *pvs,
        *extra,
    )
    server = FakeApiServer(storage)
    handle.client = server
    plugin = VolumeBinding(decode_volume_binding_args({"bindTimeoutSeconds": 300}), handle)  # type: ignore[arg-type]
    plugin.binder = VolumeBinder(
        storage,
        server,
        lambda name: next((n for n in nodes if n.name == name), None),
        bind_timeout,
        poll_interval=0.01,
    )
    return Setup(handle, plugin, server)


@pytest.mark.parametrize("name", CASES)
def test_volume_binding(name: str) -> None:
    case = CASES[name]
    env = setup(case.nodes, case.pvcs, case.pvs)
    plugin = env.plugin
    state = CycleState()
    result, status = plugin.pre_filter(state, case.pod, node_infos(case.nodes))
    assert result is None
    assert status == case.pre_filter
    if not status.is_success:
        if status.is_skip:
            # The state is written: Reserve finds nothing to do, PreBind neither.
            assert plugin.reserve(state, case.pod, case.nodes[0].name) == OK
            assert asyncio.run(plugin.pre_bind(state, case.pod, case.nodes[0].name)) == OK
            assert env.server.requests == []
        return
    data = state.read(STATE_KEY)
    assert isinstance(data, VolumeBindingState)
    assert data.claims is not None
    assert [c.name for c in data.claims.bound_claims] == list(case.bound)
    assert [c.name for c in data.claims.unbound_claims_delay_binding] == list(case.delayed)
    assert data.claims.unbound_claims_immediate == []
    assert {
        klass: sorted(p.name for p in pvs)
        for klass, pvs in data.claims.unbound_volumes_delay_binding.items()
    } == case.volumes_by_class
    assert data.pod_volumes_by_node == {}
    for info, want in zip(node_infos(case.nodes), case.filters, strict=True):
        got = plugin.filter(state, case.pod, info)
        assert got == want, info.node_name
        assert got.code == want.code
    for node_name, claims in case.chosen.items():
        volumes = data.pod_volumes_by_node[node_name]
        assert volumes.static_bindings is not None
        assert {b.pvc.name: b.pv.name for b in volumes.static_bindings} == claims
    passed = [n.name for n, s in zip(case.nodes, case.filters, strict=True) if s.is_success]
    assert sorted(data.pod_volumes_by_node) == sorted(passed)
    _reserve_and_pre_bind(env, state, case, passed)


def _reserve_and_pre_bind(env: Setup, state: CycleState, case: Case, passed: list[str]) -> None:
    """Reserve on the first node that passed: assume the chosen PVs; a pod whose claims are
    all bound needs no PreBind. PreBind writes the PVs and waits for the PV controller;
    Unreserve reverts."""
    if not passed:
        return
    plugin, data = env.plugin, state.read(STATE_KEY)
    node = passed[0]
    chosen = case.chosen.get(node, {})
    assert plugin.reserve(state, case.pod, node) == OK
    assert data.all_bound is (not chosen)
    cache = plugin.binder.pv_cache
    for claim, pv_name in chosen.items():
        assumed = cache.get(pv_name)
        assert assumed.claim_ref is not None and assumed.claim_ref.name == claim
    if not chosen:
        assert asyncio.run(plugin.pre_bind(state, case.pod, node)) == OK
        assert env.server.requests == []
        return

    async def bind_and_complete() -> Status:
        async def controller() -> None:
            await asyncio.sleep(0.02)
            for claim, pv_name in chosen.items():
                env.server.complete_binding(f"default/{claim}", pv_name)

        status, _ = await asyncio.gather(plugin.pre_bind(state, case.pod, node), controller())
        return status

    assert asyncio.run(bind_and_complete()) == OK
    assert sorted(path for _, path, _ in env.server.requests) == sorted(
        f"/api/v1/persistentvolumes/{pv_name}" for pv_name in chosen.values()
    )
    # Unreserve after a failure later in the binding cycle: nothing assumed is left.
    plugin.unreserve(state, case.pod, node)
    for pv_name in chosen.values():
        assert cache.get(pv_name) is cache.get_api(pv_name)


# -- PreFilter details ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claims", "pod", "message"),
    [
        # podHasPVCs: a generic ephemeral volume's claim not created yet
        (
            [],
            make_pod("pod-a", volumes=[ephemeral_volume("vol")]),
            "waiting for ephemeral volume controller to create the persistentvolumeclaim "
            '"pod-a-vol"',
        ),
        # ... created for another pod
        (
            [bound_pvc("pod-a-vol", WAIT_SC, "pv-a", owner_uid="someone-else")],
            make_pod("pod-a", uid="uid-a", volumes=[ephemeral_volume("vol")]),
            "PVC default/pod-a-vol was not created for pod default/pod-a (pod is not owner)",
        ),
        # a claim being deleted
        (
            [bound_pvc("pvc-a", WAIT_SC, "pv-a", deleting=True)],
            make_pod("pod-a", pvcs=["pvc-a"]),
            'persistentvolumeclaim "pvc-a" is being deleted',
        ),
        # a claim without class is in Immediate mode
        (
            [make_pvc("pvc-a")],
            make_pod("pod-a", pvcs=["pvc-a"]),
            "pod has unbound immediate PersistentVolumeClaims",
        ),
        # so is one whose class does not exist
        (
            [pvc("pvc-a", "no-such-class")],
            make_pod("pod-a", pvcs=["pvc-a"]),
            "pod has unbound immediate PersistentVolumeClaims",
        ),
        # and one pre-bound to a PV the PV controller has not bound yet
        (
            [pvc("pvc-a", WAIT_SC, bound_pv="pv-a")],
            make_pod("pod-a", pvcs=["pvc-a"]),
            "pod has unbound immediate PersistentVolumeClaims",
        ),
    ],
)
def test_pre_filter_rejections(
    claims: list[PersistentVolumeClaimView], pod: PodView, message: str
) -> None:
    env = setup([hostname_node("node-a")], claims)
    _, status = env.plugin.pre_filter(CycleState(), pod, [])
    assert status == unresolvable(message)
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_pre_filter_owned_ephemeral_claim() -> None:
    claim = bound_pvc("pod-a-vol", WAIT_SC, "pv-a", owner_uid="uid-a")
    env = setup([hostname_node("node-a")], [claim], [pv("pv-a", WAIT_SC)])
    state = CycleState()
    _, status = env.plugin.pre_filter(
        state, make_pod("pod-a", uid="uid-a", volumes=[ephemeral_volume("vol")]), []
    )
    assert status == OK
    assert [c.name for c in state.read(STATE_KEY).claims.bound_claims] == ["pod-a-vol"]


def test_missing_state() -> None:
    env = setup([hostname_node("node-a")])
    pod = make_pod("pod-a", pvcs=["pvc-a"])
    state = CycleState()
    (info,) = node_infos([hostname_node("node-a")])
    assert env.plugin.filter(state, pod, info) == Status.error("not found")
    assert env.plugin.reserve(state, pod, "node-a") == Status.error("not found")
    assert asyncio.run(env.plugin.pre_bind(state, pod, "node-a")) == Status.error("not found")
    env.plugin.unreserve(state, pod, "node-a")  # nothing to revert, no error


def test_pre_bind_without_volumes_for_the_node() -> None:
    env = setup([hostname_node("node-a")], [pvc("pvc-a", WAIT_SC)])
    pod = make_pod("pod-a", pvcs=["pvc-a"])
    state = CycleState()
    env.plugin.pre_filter(state, pod, [])
    state.read(STATE_KEY).all_bound = False
    status = asyncio.run(env.plugin.pre_bind(state, pod, "node-x"))
    assert status == Status.error('no pod volume found for node "node-x"')


def test_clone_shares_the_state() -> None:
    # stateData.Clone returns itself: Filter on a cloned state (preemption) records for Reserve.
    data = VolumeBindingState(None)
    state = CycleState()
    state.write(STATE_KEY, data)
    assert state.clone().read(STATE_KEY) is data


# -- Reserve / PreBind / Unreserve across pods ---------------------------------------------


def test_assumed_volume_is_not_offered_to_the_next_pod() -> None:
    node = hostname_node("node-a")
    claims = [pvc("pvc-1", WAIT_SC), pvc("pvc-2", WAIT_SC), pvc("pvc-3", WAIT_SC)]
    pvs = [
        local_pv("pv-small", WAIT_SC, "1Gi", "node-a"),
        local_pv("pv-large", WAIT_SC, "10Gi", "node-a"),
    ]
    env = setup([node], claims, pvs)
    plugin = env.plugin
    (info,) = node_infos([node])
    states = []
    for i in (1, 2, 3):
        pod = make_pod(f"pod-{i}", pvcs=[f"pvc-{i}"])
        state = CycleState()
        assert plugin.pre_filter(state, pod, [info])[1] == OK
        states.append((pod, state, plugin.filter(state, pod, info)))
        if states[-1][2].is_success:
            assert plugin.reserve(state, pod, "node-a") == OK
    assert [s for _, _, s in states] == [OK, OK, unresolvable(ERR_REASON_BIND_CONFLICT)]
    picked = [
        state.read(STATE_KEY).pod_volumes_by_node["node-a"].static_bindings[0].pv.name
        for _, state, status in states
        if status.is_success
    ]
    assert picked == ["pv-small", "pv-large"]
    # The first pod's binding fails later: Unreserve makes its PV available again.
    pod, state, _ = states[0]
    plugin.unreserve(state, pod, "node-a")
    third, _, _ = states[2]
    retry = CycleState()
    plugin.pre_filter(retry, third, [info])
    assert plugin.filter(retry, third, info) == OK
    assert retry.read(STATE_KEY).pod_volumes_by_node["node-a"].static_bindings[0].pv.name == (
        "pv-small"
    )


def _provisioning_setup(**kwargs: Any) -> tuple[Setup, PodView, CycleState]:
    node = hostname_node("node-a")
    env = setup(
        [node],
        [pvc("pvc-a", "fast", request="1Gi")],
        extra=[make_class("fast", WAIT, "csi.example.com")],
        **kwargs,
    )
    pod = make_pod("pod-a", pvcs=["pvc-a"])
    state = CycleState()
    assert env.plugin.pre_filter(state, pod, [])[1] == OK
    assert env.plugin.filter(state, pod, node_infos([node])[0]) == OK
    assert env.plugin.reserve(state, pod, "node-a") == OK
    return env, pod, state


async def test_pre_bind_provisions_and_waits() -> None:
    env, pod, state = _provisioning_setup()
    # Reserve assumed the claim selected for the node.
    assumed = env.plugin.binder.pvc_cache.get("default/pvc-a")
    assert assumed.annotations[SELECTED_NODE_ANNOTATION] == "node-a"

    async def provisioner() -> None:
        await asyncio.sleep(0.02)
        env.server.provision("default/pvc-a", "pvc-a-pv", {HOSTNAME_LABEL: ["node-a"]})

    status, _ = await asyncio.gather(env.plugin.pre_bind(state, pod, "node-a"), provisioner())
    assert status == OK
    ((method, path, body),) = env.server.requests
    assert (method, path) == ("PUT", "/api/v1/namespaces/default/persistentvolumeclaims/pvc-a")
    assert body["metadata"]["annotations"][SELECTED_NODE_ANNOTATION] == "node-a"


async def test_pre_bind_provisioning_failure() -> None:
    # A provisioner that fails removes the selected-node annotation.
    env, pod, state = _provisioning_setup()

    async def provisioner() -> None:
        await asyncio.sleep(0.02)
        claim = env.handle.storage.claim("default", "pvc-a")
        assert claim is not None
        raw = dict(claim.raw)
        raw["metadata"] = {**raw["metadata"], "annotations": {"other": "x"}}
        env.server.put(PersistentVolumeClaimView.from_dict(raw))

    status, _ = await asyncio.gather(env.plugin.pre_bind(state, pod, "node-a"), provisioner())
    assert status == Status.error('binding volumes: provisioning failed for PVC "pvc-a"')
    assert status.code == Code.ERROR


async def test_pre_bind_claim_deleted() -> None:
    env, pod, state = _provisioning_setup()

    async def delete() -> None:
        await asyncio.sleep(0.02)
        claim = env.handle.storage.claim("default", "pvc-a")
        assert claim is not None
        env.server.delete(claim)

    status, _ = await asyncio.gather(env.plugin.pre_bind(state, pod, "node-a"), delete())
    assert status == Status.error(
        "binding volumes: failed to check provisioning pvc: could not find "
        'v1.PersistentVolumeClaim "default/pvc-a"'
    )


async def test_pre_bind_times_out() -> None:
    env, pod, state = _provisioning_setup(bind_timeout=0.1)
    status = await env.plugin.pre_bind(state, pod, "node-a")
    assert status == Status.error("binding volumes: context deadline exceeded")


async def test_pre_bind_api_error_names_the_object_and_unreserve_reverts() -> None:
    env, pod, state = _provisioning_setup()
    env.server.failures["/api/v1/namespaces/default/persistentvolumeclaims/pvc-a"] = (
        403,
        {"kind": "Status", "message": "forbidden: no write access"},
    )
    status = await env.plugin.pre_bind(state, pod, "node-a")
    assert status == Status.error('persistentvolumeclaims "pvc-a": forbidden: no write access')
    cache = env.plugin.binder.pvc_cache
    assert cache.get("default/pvc-a") is cache.get_api("default/pvc-a")
    env.plugin.unreserve(state, pod, "node-a")
    assert SELECTED_NODE_ANNOTATION not in cache.get("default/pvc-a").annotations


# -- Filter: provisioning ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("klass", "extra", "want"),
    [
        # kubernetes.io/no-provisioner cannot provision
        (make_class("local", WAIT, "kubernetes.io/no-provisioner"), (), ERR_REASON_BIND_CONFLICT),
        # allowedTopologies the node is not in
        (
            make_class("zonal", WAIT, "csi.example.com", [{ZONE: ["zone-b"]}]),
            (),
            ERR_REASON_BIND_CONFLICT,
        ),
        # a term without values selects nothing
        (make_class("zonal", WAIT, "csi.example.com", [{ZONE: []}]), (), ERR_REASON_BIND_CONFLICT),
        # allowedTopologies the node is in
        (make_class("zonal", WAIT, "csi.example.com", [{ZONE: ["zone-a", "zone-b"]}]), (), None),
        # a driver that tracks capacity, without room for the claim
        (
            make_class("tracked", WAIT, "csi.example.com"),
            (
                make_csi_driver("csi.example.com", True),
                make_capacity("cap", "tracked", {ZONE: "zone-a"}, "1Gi"),
            ),
            ERR_REASON_NOT_ENOUGH_SPACE,
        ),
        # ... with room
        (
            make_class("tracked", WAIT, "csi.example.com"),
            (
                make_csi_driver("csi.example.com", True),
                make_capacity("cap", "tracked", {ZONE: "zone-a"}, "10Gi"),
            ),
            None,
        ),
    ],
)
def test_filter_dynamic_provisioning(klass: Any, extra: Sequence[Any], want: str | None) -> None:
    node = hostname_node("node-a", {ZONE: "zone-a"})
    claim = pvc("pvc-a", klass.name, request="5Gi")
    env = setup([node], [claim], extra=[klass, *extra])
    pod = make_pod("pod-a", pvcs=["pvc-a"])
    state = CycleState()
    assert env.plugin.pre_filter(state, pod, [])[1] == OK
    status = env.plugin.filter(state, pod, node_infos([node])[0])
    assert status == (OK if want is None else unresolvable(want))


@pytest.mark.parametrize(
    ("claim", "volume", "fits"),
    [
        # class, capacity, access modes, volume mode, selector, attributes class, deletion
        (pvc("c", WAIT_SC, request="1Gi"), local_pv("v", WAIT_SC, "1Gi", "node-a"), True),
        (pvc("c", WAIT_SC, request="2Gi"), local_pv("v", WAIT_SC, "1Gi", "node-a"), False),
        (pvc("c", WAIT_SC), local_pv("v", WAIT_HDD_SC, "1Gi", "node-a"), False),
        (pvc("c", WAIT_SC), local_pv("v", WAIT_SC, "1Gi", "node-b"), False),
        (
            pvc("c", WAIT_SC, access_modes=["ReadWriteMany"]),
            make_pv("v", WAIT_SC, phase="Available", access_modes=["ReadWriteOnce"]),
            False,
        ),
        (
            pvc("c", WAIT_SC, access_modes=["ReadWriteOnce"]),
            make_pv(
                "v", WAIT_SC, phase="Available", access_modes=["ReadWriteOnce", "ReadOnlyMany"]
            ),
            True,
        ),
        (pvc("c", WAIT_SC, volume_mode="Block"), make_pv("v", WAIT_SC, phase="Available"), False),
        (
            pvc("c", WAIT_SC, selector={"matchLabels": {"tier": "gold"}}),
            make_pv("v", WAIT_SC, phase="Available", labels={"tier": "gold"}),
            True,
        ),
        (
            pvc("c", WAIT_SC, selector={"matchLabels": {"tier": "gold"}}),
            make_pv("v", WAIT_SC, phase="Available", labels={"tier": "silver"}),
            False,
        ),
        (
            pvc("c", WAIT_SC, extra_spec={"volumeAttributesClassName": "fast"}),
            make_pv("v", WAIT_SC, phase="Available"),
            False,
        ),
        (pvc("c", WAIT_SC), make_pv("v", WAIT_SC, phase="Available", deleting=True), False),
        (pvc("c", WAIT_SC), make_pv("v", WAIT_SC, phase="Pending"), False),
        # claimed by another claim
        (
            pvc("c", WAIT_SC),
            make_pv("v", WAIT_SC, phase="Available", claim=pvc("o", WAIT_SC)),
            False,
        ),
    ],
)
def test_filter_static_matching(
    claim: PersistentVolumeClaimView, volume: PersistentVolumeView, fits: bool
) -> None:
    # component-helpers' FindMatchingVolume on the scheduler path (wait-sc cannot provision).
    node = hostname_node("node-a")
    env = setup([node], [claim], [volume])
    pod = make_pod("pod-a", pvcs=[claim.name])
    state = CycleState()
    assert env.plugin.pre_filter(state, pod, [])[1] == OK
    status = env.plugin.filter(state, pod, node_infos([node])[0])
    assert status == (OK if fits else unresolvable(ERR_REASON_BIND_CONFLICT))


# -- queueing hints --------------------------------------------------------------------------------


def test_events_to_register() -> None:
    env = setup([hostname_node("node-a")])
    registered = {
        e.event.resource: (e.event.action, e.hint) for e in env.plugin.events_to_register()
    }
    add, update = ActionType.ADD, ActionType.UPDATE
    assert registered == {
        EventResource.STORAGE_CLASS: (add | update, schedulable_after_storage_class_change),
        EventResource.PERSISTENT_VOLUME_CLAIM: (add | update, schedulable_after_pvc_change),
        EventResource.PERSISTENT_VOLUME: (add | update, None),
        EventResource.NODE: (add | ActionType.UPDATE_NODE_LABEL, None),
        EventResource.CSI_NODE: (add | update, schedulable_after_csi_node_change),
        EventResource.CSI_DRIVER: (update, schedulable_after_csi_driver_change),
        EventResource.CSI_STORAGE_CAPACITY: (
            add | update,
            schedulable_after_csi_storage_capacity_change,
        ),
    }
    # The storage informers' events (StorageObjects' KeyedStore labels) are covered.
    pv_update = ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.UPDATE, "PvUpdate")
    assert any(pv_update.matches(e.event) for e in env.plugin.events_to_register())
    pvc_delete = ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.DELETE, "PvcDelete")
    assert not any(pvc_delete.matches(e.event) for e in env.plugin.events_to_register())


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        # "pod has no pvc or ephemeral volumes"
        (
            make_pod("pod-a", volumes=[empty_dir_volume()]),
            pvc("pvc-b", "sc-a"),
            pvc("pvc-b", "sc-a"),
            SKIP,
        ),
        # "pod has a newly added pvc"
        (make_pod("pod-a", pvcs=["pvc-a", "pvc-b"]), None, pvc("pvc-b", "sc-b"), QUEUE),
        # "pod has pvcs with changed status.phase"
        (
            make_pod("pod-a", pvcs=["pvc-a", "pvc-b"]),
            pvc("pvc-a", "sc-b", phase="Pending"),
            pvc("pvc-a", "sc-b", phase="Bound"),
            QUEUE,
        ),
        # "pod has ephemeral volume with changed status.phase"
        (
            make_pod("pod-a", volumes=[ephemeral_volume("ephemeral-a")]),
            pvc("pod-a-ephemeral-a", "sc-a", phase="Pending"),
            pvc("pod-a-ephemeral-a", "sc-a", phase="Bound"),
            QUEUE,
        ),
        # "pod has pvcs with changed annotations" / "... changed spec"
        (
            make_pod("pod-a", pvcs=["pvc-a", "pvc-b"]),
            pvc("pvc-b", "sc-a", annotations={"volume.beta.kubernetes.io/sample-ann": "1"}),
            pvc("pvc-b", "sc-a", annotations={"volume.beta.kubernetes.io/sample-ann": "2"}),
            QUEUE,
        ),
        (
            make_pod("pod-a", pvcs=["pvc-a", "pvc-b"]),
            pvc("pvc-b", "sc-a", access_modes=["ReadWriteOnce"]),
            pvc("pvc-b", "sc-a", access_modes=["ReadWriteOncePod"]),
            QUEUE,
        ),
        # a claim of another namespace, a claim the pod does not use
        (
            make_pod("pod-a", pvcs=["pvc-a"]),
            None,
            pvc("pvc-a", "sc-a", namespace="other"),
            SKIP,
        ),
        (make_pod("pod-a", pvcs=["pvc-a"]), None, pvc("pvc-z", "sc-a"), SKIP),
        # "type conversion error"
        (make_pod("pod-a", pvcs=["pvc-a"]), object(), object(), QUEUE),
        # raw JSON is read as a claim
        (make_pod("pod-a", pvcs=["pvc-a"]), None, dict(pvc("pvc-a", "sc-a").raw), QUEUE),
    ],
)
def test_pvc_change_hint(pod: PodView, old: Any, new: Any, want: QueueingHint) -> None:
    assert schedulable_after_pvc_change(pod, old, new) == want


def _topology(*values: str) -> list[dict[str, list[str]]]:
    return [{HOSTNAME_LABEL: list(values)}]


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        # "pod has no pvcs": nothing changed
        (make_class("sc-a"), make_class("sc-a"), SKIP),
        # "pod has pvc that references a newly added storage class"
        (None, make_class("sc-b"), QUEUE),
        # "pod has pvc volumes with changed storage class: AllowedTopologies"
        (
            make_class("sc-b", allowed_topologies=_topology("node1", "node2")),
            make_class("sc-b", allowed_topologies=_topology("node1", "node3")),
            QUEUE,
        ),
        (
            make_class("sc-b", allowed_topologies=_topology("node1")),
            make_class("sc-b"),
            QUEUE,
        ),
        # another field changed (the provisioner): not allowedTopologies
        (make_class("sc-b", provisioner="a"), make_class("sc-b", provisioner="b"), SKIP),
        # "type conversion error"
        (object(), object(), QUEUE),
    ],
)
def test_storage_class_change_hint(old: Any, new: Any, want: QueueingHint) -> None:
    pod = make_pod("pod-a", pvcs=["pvc-a", "pvc-b"])
    assert schedulable_after_storage_class_change(pod, old, new) == want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        # "CSINode added"
        (None, make_csi_node("node-a"), QUEUE),
        # "CSINode not changed"
        (make_csi_node("node-a"), make_csi_node("node-a"), SKIP),
        # "CSINode's migrated-plugins annotations is added"
        (
            make_csi_node("node-a", {"test": "a"}),
            make_csi_node("node-a", {"test": "a", MIGRATED_PLUGINS_ANNOTATION: "test1"}),
            QUEUE,
        ),
        # "CSINode's migrated-plugins annotation is updated"
        (
            make_csi_node("node-a", {MIGRATED_PLUGINS_ANNOTATION: "test1"}),
            make_csi_node("node-a", {MIGRATED_PLUGINS_ANNOTATION: "test1, test2"}),
            QUEUE,
        ),
        # "CSINode is updated but migrated-plugins annotation gets unchanged"
        (
            make_csi_node("node-a", {"test": "a", MIGRATED_PLUGINS_ANNOTATION: "test1"}),
            make_csi_node("node-a", {"test": "b", MIGRATED_PLUGINS_ANNOTATION: "test1"}),
            SKIP,
        ),
        # "CSINode is converted to unexpected type"
        (object(), object(), QUEUE),
    ],
)
def test_csi_node_change_hint(old: Any, new: Any, want: QueueingHint) -> None:
    assert schedulable_after_csi_node_change(make_pod("pod-a"), old, new) == want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        # "pod has pvcs with no CSIStorageCapacity changes"
        (make_capacity("cap-a", "sc-b", {}), make_capacity("cap-a", "sc-b", {}), SKIP),
        # "pod has pvc that references a newly added CSIStorageCapacity"
        (None, make_capacity("cap-a", "sc-b", {}), QUEUE),
        # "pod has ephemeral volume with changed CSIStorageCapacity.Capacity"
        (
            make_capacity("cap-a", "sc-a", {}, "1Gi"),
            make_capacity("cap-a", "sc-a", {}, "2Gi"),
            QUEUE,
        ),
        # "pod has pvcs with changed CSIStorageCapacity.MaximumVolumeSize"
        (
            make_capacity("cap-a", "sc-b", {}, "", "1Gi"),
            make_capacity("cap-a", "sc-b", {}, "", "2Gi"),
            QUEUE,
        ),
        # the limit shrank, or a larger capacity hides behind an unchanged maximumVolumeSize
        (
            make_capacity("cap-a", "sc-a", {}, "2Gi"),
            make_capacity("cap-a", "sc-a", {}, "1Gi"),
            SKIP,
        ),
        (
            make_capacity("cap-a", "sc-a", {}, "1Gi", "1Gi"),
            make_capacity("cap-a", "sc-a", {}, "5Gi", "1Gi"),
            SKIP,
        ),
        # "type conversion error"
        (object(), object(), QUEUE),
    ],
)
def test_csi_storage_capacity_change_hint(old: Any, new: Any, want: QueueingHint) -> None:
    pod = make_pod("pod-a", pvcs=["pvc-a", "pvc-b"])
    assert schedulable_after_csi_storage_capacity_change(pod, old, new) == want


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        # "pod has no CSIDriver"
        (
            make_pod("pod-a"),
            make_csi_driver("test1", True),
            make_csi_driver("test1", False),
            SKIP,
        ),
        # "CSIDriver's StorageCapacity gets disabled"
        (
            make_pod("pod-a", volumes=[csi_volume("test1", "csi0")]),
            make_csi_driver("test1", True),
            make_csi_driver("test1", False),
            QUEUE,
        ),
        (
            make_pod("pod-a", volumes=[csi_volume("test1", "csi0")]),
            make_csi_driver("test1", True),
            make_csi_driver("test1", None),
            QUEUE,
        ),
        # "CSIDriver's StorageCapacity gets enabled"
        (
            make_pod("pod-a", volumes=[csi_volume("test1", "csi0")]),
            make_csi_driver("test1", False),
            make_csi_driver("test1", True),
            SKIP,
        ),
        # "CSIDriver updates something else"
        (
            make_pod("pod-a", volumes=[csi_volume("test1", "csi0")]),
            make_csi_driver("test1", True),
            make_csi_driver("test1", True),
            SKIP,
        ),
        # another driver
        (
            make_pod("pod-a", volumes=[csi_volume("test2", "csi0")]),
            make_csi_driver("test1", True),
            make_csi_driver("test1", False),
            SKIP,
        ),
        # "CSIDriver is converted to unexpected type"
        (make_pod("pod-a", volumes=[csi_volume("test1", "csi0")]), object(), object(), QUEUE),
    ],
)
def test_csi_driver_change_hint(pod: PodView, old: Any, new: Any, want: QueueingHint) -> None:
    assert schedulable_after_csi_driver_change(pod, old, new) == want
