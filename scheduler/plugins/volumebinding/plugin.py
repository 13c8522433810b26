"""VolumeBinding (PreFilter, Filter, PreScore, Score, Reserve, PreBind, EnqueueExtensions).

Upstream: pkg/scheduler/framework/plugins/volumebinding/volume_binding.go, with the binder of
binder.go (see binder.py). PreFilter skips pods without claims and sorts the pod's claims; Filter
finds, per node, the PVs to bind and the claims to provision; Reserve assumes them in the
binder's assume caches so later pods see them taken; PreBind writes them and waits for the PV
controller; Unreserve reverts the assumptions.

PreScore / Score: storage-capacity scoring (scorer.py) under the StorageCapacityScoring gate
(beta, on by default since v1.37); with it off PreScore answers Skip, as upstream's nil scorer.

The plugin is built before its handle is ready (the runtime passes the framework it is still
constructing), so the binder is created on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.api.errors import MalformedObject
from scheduler.cache.rows import Rows, RowVerdict, all_rows_pass
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from scheduler.framework.interface import CycleState, Handle, PreFilterResult, SignFragment
from scheduler.framework.runtime import batch as signers
from scheduler.framework.status import Status
from scheduler.plugins.volume_helpers import pod_claims, volume_is_for_pod
from scheduler.plugins.volumebinding.args import (
    DEFAULT_SHAPE,
    STORAGE_CAPACITY_SCORING,
    STORAGE_CAPACITY_SCORING_DEFAULT,
    VolumeBindingArgs,
    validate_volume_binding_args,
)
from scheduler.plugins.volumebinding.binder import (
    BindingError,
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
)
from scheduler.plugins.volumebinding.helpers import CLAIM_LOST
from scheduler.plugins.volumebinding.hints import (
    schedulable_after_csi_driver_change,
    schedulable_after_csi_node_change,
    schedulable_after_csi_storage_capacity_change,
    schedulable_after_pvc_change,
    schedulable_after_storage_class_change,
)
from scheduler.plugins.volumebinding.scorer import (
    VolumeCapacityScorer,
    build_scorer,
    class_resources,
)

if TYPE_CHECKING:
    from scheduler.api.objects import NodeView, PodView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.cache.node_table import IntArray, NodeTable

NAME = "VolumeBinding"
# Upstream's stateKey is the plugin name.
STATE_KEY = NAME

UNBOUND_IMMEDIATE_CLAIMS = "pod has unbound immediate PersistentVolumeClaims"


class VolumeBindingState:
    """What PreFilter learns and Filter / Reserve / PreBind add (upstream's stateData).

    `claims` is None for a pod without claims. Clones share the state, as upstream's Clone
    returns the same pointer: Filter on a cloned state (preemption's dry runs) records into the
    one map Reserve reads."""

    __slots__ = ("all_bound", "claims", "has_scored_volumes", "pod_volumes_by_node")

    def __init__(self, claims: PodVolumeClaims | None) -> None:
        self.all_bound = False
        self.claims = claims
        self.pod_volumes_by_node: dict[str, PodVolumes] = {}
        # Whether Filter left, on some node, volumes storage-capacity scoring reads (static
        # bindings, or provisions with a CSIStorageCapacity): else Score is 0 everywhere.
        self.has_scored_volumes = False

    def clone(self) -> VolumeBindingState:
        return self


class VolumeBinding:
    name = NAME

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Feasibility and scoring read the volumes but ConfigMaps, Secrets (upstream SignPod)."""
        return [signers.volumes_fragment(pod)], Status.OK

    def __init__(self, args: VolumeBindingArgs | None, handle: Handle) -> None:
        args = args or VolumeBindingArgs()
        gates = getattr(handle, "feature_gates", None) or {}
        scoring = bool(gates.get(STORAGE_CAPACITY_SCORING, STORAGE_CAPACITY_SCORING_DEFAULT))
        if scoring and not args.shape:
            # SetDefaults_VolumeBindingArgs (args built here, not decoded).
            args = VolumeBindingArgs(args.bind_timeout_seconds, DEFAULT_SHAPE, args.shape_given)
        # Decoded under aiosched's default gates (check-config); held to the running ones here,
        # as upstream's New validates with the plugin's features.
        validate_volume_binding_args(args, storage_capacity_scoring=scoring)
        self.args = args
        self._handle = handle
        self._binder: VolumeBinder | None = None
        # Upstream's scorer: nil (PreScore skips) with the gate off.
        self._scorer: VolumeCapacityScorer | None = (
            build_scorer(args.shape) if scoring and args.shape else None
        )

    @property
    def binder(self) -> VolumeBinder:
        if self._binder is None:
            handle = self._handle
            self._binder = VolumeBinder(
                handle.cluster_objects.storage,
                handle.client,
                self._node,
                float(self.args.bind_timeout_seconds),
                pod_exists=handle.pod_exists,
            )
        return self._binder

    @binder.setter
    def binder(self, binder: VolumeBinder) -> None:
        """Tests inject a binder with their own client, clock of polls and timeout."""
        self._binder = binder

    def _node(self, name: str) -> NodeView | None:
        info = self._handle.snapshot().get(name)
        return None if info is None else info.node

    # PreFilter

    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Skip for a pod without claims; reject a pod whose claims are missing, lost, being
        deleted, not its own (ephemeral), or unbound in Immediate mode."""
        if not pod.pvc_names:
            state.write(STATE_KEY, VolumeBindingState(None))
            return None, Status.skip()
        try:
            problem = self._pod_claims_problem(pod)
            if problem is not None:
                return None, Status.unresolvable(problem)
            claims = self.binder.get_pod_volume_claims(pod)
        except BindingError as err:
            return None, Status.error(str(err))
        except MalformedObject as err:
            return None, Status.error(f"reading volumes: {err}")
        if claims.unbound_claims_immediate:
            # The PV controller binds those; the claim's update brings the pod back.
            return None, Status.unresolvable(UNBOUND_IMMEDIATE_CLAIMS)
        state.write(STATE_KEY, VolumeBindingState(claims))
        return None, Status.OK

    def _pod_claims_problem(self, pod: PodView) -> str | None:
        """Upstream's podHasPVCs errors."""
        storage = self._handle.cluster_objects.storage
        for pod_claim in pod_claims(pod):
            pvc = storage.claim(pod.namespace, pod_claim.name)
            if pvc is None:
                if pod_claim.ephemeral:
                    # Normal right after the pod is created.
                    return (
                        "waiting for ephemeral volume controller to create the "
                        f'persistentvolumeclaim "{pod_claim.name}"'
                    )
                return f'persistentvolumeclaim "{pod_claim.name}" not found'
            if pvc.phase == CLAIM_LOST:
                return (
                    f'persistentvolumeclaim "{pvc.name}" bound to non-existent '
                    f'persistentvolume "{pvc.volume_name}"'
                )
            if pvc.deleting:
                return f'persistentvolumeclaim "{pvc.name}" is being deleted'
            if pod_claim.ephemeral:
                problem = volume_is_for_pod(pod, pvc)
                if problem is not None:
                    return problem
        return None

    def pre_filter_extensions(self) -> None:
        return None

    # Filter

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        """Bound claims' PVs must fit the node; unbound claims need an available PV that fits
        or a class that can provision for the node (with room, where capacity is tracked)."""
        data = _read(state)
        if data is None:
            return _not_found()
        if data.claims is None:
            return Status.OK
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        try:
            volumes, reasons = self.binder.find_pod_volumes(pod, data.claims, node)
        except BindingError as err:
            return Status.error(str(err))
        except MalformedObject as err:
            return Status.error(f"reading volumes: {err}")
        if reasons:
            return Status.unresolvable(*reasons)
        data.pod_volumes_by_node[node.name] = volumes
        if not data.has_scored_volumes:
            data.has_scored_volumes = bool(volumes.static_bindings) or any(
                p.node_capacity is not None for p in volumes.dynamic_provisions or ()
            )
        return Status.OK

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict | None:
        """`filter` over table rows when no node can differ: every claim is bound to a PV that
        exists and has no node affinity (scheduler_perf's volume shapes, network storage).
        Reserve then finds no per-node volumes and notes all claims bound, as upstream's
        AssumePodVolumes decides for a pod with nothing to bind. Otherwise per node."""
        data = _read(state)
        if data is None or data.claims is None:
            return None
        claims = data.claims
        if claims.unbound_claims_delay_binding or claims.unbound_claims_immediate:
            return None
        if not self.binder.bound_volumes_fit_every_node(claims.bound_claims):
            return None
        return RowVerdict(all_rows_pass(len(rows)), _never_rejected)

    # PreScore / Score

    def pre_score(self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]) -> Status:
        """Skip without storage-capacity scoring; else score (0 on nodes without volumes)."""
        if self._scorer is None:
            return Status.skip()
        if _read(state) is None:
            return _not_found()
        return Status.OK

    def score(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> tuple[int, Status]:
        scorer = self._scorer
        if scorer is None:
            return 0, Status.OK
        data = _read(state)
        if data is None:
            return 0, _not_found()
        volumes = data.pod_volumes_by_node.get(node_info.node_name)
        if volumes is None:
            return 0, Status.OK
        return scorer(class_resources(volumes)), Status.OK

    def score_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> IntArray | None:
        """Zero on every row when Filter left no volume the scorer reads on any node (a pod
        without claims, or whose claims are all bound); else node by node."""
        data = _read(state)
        if data is None or self._scorer is None or data.has_scored_volumes:
            return None
        return np.zeros(len(rows), dtype=np.int64)

    def score_extensions(self) -> None:
        return None

    # Reserve / Unreserve

    def reserve(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        """Assume the node's bindings and provisionings so later pods see them taken."""
        data = _read(state)
        if data is None:
            return _not_found()
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is None:
            # A pod without claims.
            data.all_bound = True
            return Status.OK
        try:
            data.all_bound = self.binder.assume_pod_volumes(pod, node_name, volumes)
        except BindingError as err:
            return Status.error(str(err))
        return Status.OK

    def unreserve(self, state: CycleState, pod: PodView, node_name: str) -> None:
        """Revert the assumptions; nothing to do when there are none."""
        data = _read(state)
        if data is None:
            return
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is not None:
            self.binder.revert_assumed_pod_volumes(volumes)

    # PreBind

    def pre_bind_pre_flight(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        """Upstream's PreBindPreFlight: Skip when every claim is bound (PreBind has nothing to
        write), an error when Filter left no volumes for the node."""
        data = _read(state)
        if data is None:
            return _not_found()
        if data.all_bound:
            return Status.skip()
        if node_name not in data.pod_volumes_by_node:
            # errNoPodVolumeForNode, as PreBind words it
            return Status.error(f'no pod volume found for node "{node_name}"')
        return Status.OK

    async def pre_bind(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        """Write the bindings and provisionings and wait until the PV controller has bound every
        claim; an error (or the bind timeout) sends the pod back to be scheduled again."""
        data = _read(state)
        if data is None:
            return _not_found()
        if data.all_bound:
            return Status.OK
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is None:
            return Status.error(f'no pod volume found for node "{node_name}"')
        try:
            await self.binder.bind_pod_volumes(pod, node_name, volumes)
        except BindingError as err:
            return Status.error(str(err))
        return Status.OK

    # EnqueueExtensions

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        update = ActionType.UPDATE
        add = ActionType.ADD
        return (
            # A missing or misconfigured class (allowedTopologies) may be fixed.
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, add | update),
                schedulable_after_storage_class_change,
            ),
            # Claims are bound to volumes: any change of either may help.
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, add | update),
                schedulable_after_pvc_change,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME, add | update)),
            # Node labels decide PV node affinity and the class's allowed topologies.
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, add | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, add | update),
                schedulable_after_csi_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_DRIVER, update),
                schedulable_after_csi_driver_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_STORAGE_CAPACITY, add | update),
                schedulable_after_csi_storage_capacity_change,
            ),
        )


def _read(state: CycleState) -> VolumeBindingState | None:
    try:
        data: Any = state.read(STATE_KEY)
    except KeyError:
        return None
    return data if isinstance(data, VolumeBindingState) else None


def _not_found() -> Status:
    # Upstream's getStateData returns CycleState's ErrNotFound as is.
    return Status.error("not found")


def _never_rejected(row: int) -> Status:
    raise AssertionError("every row passed")
