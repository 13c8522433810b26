"""VolumeRestrictions (PreFilter with AddPod / RemovePod, Filter, EnqueueExtensions).

Upstream: pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go (queueing
hints enabled). Two checks:

- In-tree disk conflicts: a GCE PD or an ISCSI volume may be mounted by several pods on a node
  only if all mount it read-only; an AWS EBS volume by one pod only; an RBD image (a common
  monitor, the same pool and image) only read-only. Rejects with "node(s) had no available
  disk" (Unschedulable).
- ReadWriteOncePod: PreFilter counts the pod's ReadWriteOncePod claims that some pod in the
  snapshot already uses; Filter rejects every node while that count is above zero
  (Unschedulable, so preempting the user may help; AddPod / RemovePod keep the count right
  during preemption's dry runs). A claim of the pod that does not exist fails PreFilter with
  UnschedulableAndUnresolvable.

PreFilter returns Skip when the pod has no disk to check and no ReadWriteOncePod conflict, so
Filter costs nothing for pods without volumes. As upstream, only persistentVolumeClaim volumes
are looked at for ReadWriteOncePod (generic ephemeral volumes are not), and a pod added or
removed during preemption counts by claim name alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.api.errors import MalformedObject
from scheduler.api.objects import PodView
from scheduler.cache.node_table import NodeTable
from scheduler.cache.rows import Rows, RowVerdict, verdict_per_node, verdict_with_status
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import CycleState, Handle, PreFilterResult, SignFragment
from scheduler.framework.registry import PluginEntry
from scheduler.framework.runtime import batch as signers
from scheduler.framework.status import Status
from scheduler.plugins.volume_helpers import (
    READ_WRITE_ONCE_POD,
    DiskVolume,
    any_disk_conflict,
    claim_not_found,
    disk_volumes,
    has_volumes,
    hint_for_claim_event,
    persistent_claim_names,
    pod_disks_conflict,
)

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.interface import PreFilterExtensions

NAME = "VolumeRestrictions"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
# volume_restrictions.go's ErrReasonReadWriteOncePodConflict (v1.36).
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already "
    "in-use by another pod"
)


class PreFilterState:
    """The pod's disks, its ReadWriteOncePod claim names, and how many of those claims pods
    in the snapshot (plus added, minus removed ones) use."""

    __slots__ = ("conflicting_refs", "disks", "rwop_claims")

    def __init__(
        self, disks: tuple[DiskVolume, ...], rwop_claims: frozenset[str], conflicting_refs: int
    ) -> None:
        self.disks = disks
        self.rwop_claims = rwop_claims
        self.conflicting_refs = conflicting_refs

    def clone(self) -> PreFilterState:
        return PreFilterState(self.disks, self.rwop_claims, self.conflicting_refs)

    def update_with_pod(self, pod: PodView, sign: int) -> None:
        """Upstream's updateWithPod: count the pod's claims (by name) among ours."""
        if not self.rwop_claims or not has_volumes(pod):
            return
        self.conflicting_refs += sign * sum(
            1 for name in persistent_claim_names(pod) if name in self.rwop_claims
        )


class VolumeRestrictions:
    name = NAME

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Feasibility reads the volumes, not ConfigMaps or Secrets (upstream SignPod)."""
        return [signers.volumes_fragment(pod)], Status.OK

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle
        self._disk_conflict = Status.unschedulable(ERR_REASON_DISK_CONFLICT)
        self._rwop_conflict = Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)

    # PreFilter

    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not has_volumes(pod):
            return None, Status.skip()
        try:
            disks = disk_volumes(pod)
            claim_names = persistent_claim_names(pod)
        except MalformedObject as err:
            return None, Status.error(str(err))
        rwop: set[str] = set()
        if claim_names:
            if self._handle is None:
                return None, Status.error("VolumeRestrictions needs a framework handle")
            storage = self._handle.cluster_objects.storage
            for claim_name in claim_names:
                claim = storage.claim(pod.namespace, claim_name)
                if claim is None:
                    return None, Status.unresolvable(claim_not_found(claim_name))
                if READ_WRITE_ONCE_POD in claim.access_modes:
                    rwop.add(claim.name)
        conflicting = 0
        if rwop:
            used = self._pvc_used_by_pods(nodes)
            # At most one pod can use a ReadWriteOncePod claim.
            conflicting = sum(1 for name in rwop if used(f"{pod.namespace}/{name}"))
        if not disks and conflicting == 0:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(disks, frozenset(rwop), conflicting))
        return None, Status.OK

    def _pvc_used_by_pods(self, nodes: Sequence[NodeInfo]) -> Callable[[str], bool]:
        """The snapshot's IsPVCUsedByPods; over `nodes` for a lister that has none."""
        assert self._handle is not None
        snapshot = self._handle.snapshot()
        used: Callable[[str], bool] | None = getattr(snapshot, "is_pvc_used_by_pods", None)
        if used is not None:
            return used
        return {key for info in snapshot.list() for key in info.pvc_ref_counts}.__contains__

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: PodView, pod_to_add: PodView, node_info: NodeInfo
    ) -> Status:
        return self._update(state, pod_to_add, 1)

    def remove_pod(
        self,
        state: CycleState,
        pod_to_schedule: PodView,
        pod_to_remove: PodView,
        node_info: NodeInfo,
    ) -> Status:
        return self._update(state, pod_to_remove, -1)

    @staticmethod
    def _update(state: CycleState, pod: PodView, sign: int) -> Status:
        try:
            data: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            return _state_missing()
        try:
            data.update_with_pod(pod, sign)
        except MalformedObject as err:
            return Status.error(f"pod {pod.key}: {err}")
        return Status.OK

    # Filter

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        data: PreFilterState | None
        try:
            data = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            data = None
        try:
            disks = data.disks if data is not None else disk_volumes(pod)
            if disks and pod_disks_conflict(disks, node_info.pods):
                return self._disk_conflict
        except MalformedObject as err:
            return Status.error(str(err))
        if data is None:
            return _state_missing()
        if data.conflicting_refs > 0:
            return self._rwop_conflict
        return Status.OK

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict | None:
        """Disks are compared on nodes that run pods; the ReadWriteOncePod verdict is the
        same for every node."""
        try:
            data: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            return None  # per node: every row errs
        if not data.disks:
            passed = np.full(len(rows), data.conflicting_refs == 0, dtype=np.bool_)
            return verdict_with_status(passed, self._rwop_conflict)
        if data.conflicting_refs > 0:
            return verdict_per_node(self.filter, state, pod, table, rows)
        return verdict_per_node(self.filter, state, pod, table, rows, table.pod_count[rows] > 0)

    # Queueing

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            # Volumes are immutable, so only a deleted pod releases a disk or a claim.
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                self._schedulable_after_pod_deleted,
            ),
            # Always Queue: a new node runs no pod.
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
            # A claim the pod uses was missing (its access modes must be known).
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self._schedulable_after_claim_added,
            ),
        )

    @staticmethod
    def _schedulable_after_claim_added(pod: Any, old: Any, new: Any) -> QueueingHint:
        return hint_for_claim_event(pod, None, new, persistent_claim_names)

    @staticmethod
    def _schedulable_after_pod_deleted(pod: Any, old: Any, new: Any) -> QueueingHint:
        if not isinstance(pod, PodView) or not isinstance(old, PodView):
            return QueueingHint.QUEUE
        if old.namespace != pod.namespace:
            return QueueingHint.SKIP
        try:
            # The deleted pod held a disk the pod conflicts with.
            wanted = disk_volumes(pod)
            if wanted and any_disk_conflict(wanted, disk_volumes(old)):
                return QueueingHint.QUEUE
            # Or it used one of the pod's claims (maybe a ReadWriteOncePod one: upstream does
            # not look the claim up, to keep hints cheap).
            claims = set(persistent_claim_names(pod))
            if claims and any(name in claims for name in persistent_claim_names(old)):
                return QueueingHint.QUEUE
        except MalformedObject:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP


def _state_missing() -> Status:
    return Status.error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')


PLUGIN_ENTRY = PluginEntry(NAME, VolumeRestrictions)
