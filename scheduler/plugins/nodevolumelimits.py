"""NodeVolumeLimits (PreFilter, Filter, EnqueueExtensions): a node must be able to attach the
pod's CSI volumes without exceeding each driver's attach limit.

Upstream: pkg/scheduler/framework/plugins/nodevolumelimits/csi.go (the CSILimits plugin,
queueing hints enabled). A driver's limit is its CSINode entry's `allocatable.count` (a node
without a CSINode, or a driver without a count, has no limit). Volumes are counted by unique
"<driver>/<volume handle>", so a volume shared by pods on the node counts once:

- a claim (persistentVolumeClaim, or a generic ephemeral volume's "<pod>-<volume>" claim,
  which must be controlled by the pod) bound to a CSI PV counts as the PV's driver and
  volume handle;
- an unbound claim, or one whose PV is missing, counts under its StorageClass's provisioner
  with a handle made of a random per-plugin prefix and the claim's namespace / name, so all
  pods using one pending claim count it once; no class, or a missing class, is not counted.

For the pod being scheduled a missing claim fails every node with UnschedulableAndUnresolvable
("looking up PVC ns/name: ..."); for pods already on the node it is ignored. Exceeding a limit
rejects the node with "node(s) exceed max volume count" (Unschedulable). PreFilter skips pods
without claims, so Filter costs nothing for them.

With the VolumeLimitScaling gate (beta and on by default since v1.37), a node whose CSINode
does not list a driver of the pod's new volumes is rejected with "<driver> CSI driver is not
installed on the node" (Unschedulable) when that driver's CSIDriver sets
preventPodSchedulingIfMissing; a driver without a CSIDriver object is let through.

Queueing: a new CSINode always queues; a CSINode update queues when a driver's allocatable
count went up or away (upstream's isSchedulableAfterCSINodeUpdated, for the mutable counts of
MutableCSINodeAllocatableCount); a deleted pod queues when it was on a node and used a claim,
a generic ephemeral volume or an inline migratable volume; a new claim queues when the pod
uses it.

Left out, and so never counted:
- in-tree volume translation (CSI migration): in-tree PVs (awsElasticBlockStore, gcePersistentDisk,
  ...), inline in-tree volumes and classes with an in-tree provisioner ("kubernetes.io/aws-ebs",
  ...) are counted upstream under their CSI driver when the node has migrated the plugin;
  here they count as upstream counts them when migration is off, i.e. not at all;
- VolumeAttachment objects (recent upstream also counts attachments to the node that no pod
  accounts for): the scheduler keeps no VolumeAttachment informer;
- inline CSI volumes (`csi:` in spec.volumes) are not counted, as upstream does not count them
  (they are not attached through the controller).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.api.errors import MalformedObject
from scheduler.api.objects import PodView
from scheduler.api.storage import CSINodeView, PersistentVolumeClaimView
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
    INLINE_MIGRATABLE_SOURCES,
    MIGRATABLE_IN_TREE_PLUGINS,
    PodClaim,
    claim_not_found,
    claim_of,
    has_volumes,
    hint_for_claim_event,
    pod_claims,
    pod_volumes,
    volume_is_for_pod,
)

# pkg/scheduler's features at v1.37: beta, on by default (alpha and off in v1.35-v1.36).
VOLUME_LIMIT_SCALING = "VolumeLimitScaling"
VOLUME_LIMIT_SCALING_DEFAULT = True

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.interface import PreFilterExtensions
    from scheduler.listers.storage_objects import StorageObjects

NAME = "NodeVolumeLimits"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

# "<driver>/<volume handle>" → driver.
Volumes = dict[str, str]
_MAX_CACHED_PODS = 20_000  # bounds what the cache keeps alive of deleted pods


class _Failure(Exception):
    """A status to return from Filter (upstream's error return of filterAttachableVolumes)."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


def volume_limits(csi_node: CSINodeView | None) -> dict[str, int]:
    """Upstream's getVolumeLimits: each driver's allocatable count from the CSINode."""
    if csi_node is None:
        return {}
    return {
        driver.name: driver.allocatable_count
        for driver in csi_node.drivers.values()
        if driver.allocatable_count is not None
    }


class NodeVolumeLimits:
    name = NAME

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Feasibility reads the volumes, not ConfigMaps or Secrets (upstream SignPod)."""
        return [signers.volumes_fragment(pod)], Status.OK

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle
        gates = getattr(handle, "feature_gates", None) or {}
        self._volume_limit_scaling = bool(
            gates.get(VOLUME_LIMIT_SCALING, VOLUME_LIMIT_SCALING_DEFAULT)
        )
        # Handles of unbound claims must not collide with real volume handles.
        self._random_prefix = secrets.token_hex(16)
        self._exceeded = Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        # The claims of the pods already on nodes, by pod object (a new version of a pod is a
        # new object): Filter counts every pod on each node it checks, for every pod with
        # volumes, and reading spec.volumes each time was most of its cost.
        self._claims_by_pod: dict[int, tuple[PodView, list[PodClaim]]] = {}

    def _claims_of(self, pod: PodView) -> list[PodClaim]:
        cached = self._claims_by_pod.get(id(pod))
        if cached is not None and cached[0] is pod:
            return cached[1]
        claims = pod_claims(pod)
        if len(self._claims_by_pod) >= _MAX_CACHED_PODS:
            self._claims_by_pod.clear()
        self._claims_by_pod[id(pod)] = (pod, claims)
        return claims

    def _storage(self) -> StorageObjects:
        if self._handle is None:
            raise _Failure(Status.error("NodeVolumeLimits needs a framework handle"))
        return self._handle.cluster_objects.storage

    # PreFilter

    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not has_volumes(pod):
            return None, Status.skip()
        try:
            if not pod_claims(pod):
                # Only claims can be counted here (inline in-tree volumes need CSI migration).
                return None, Status.skip()
        except MalformedObject as err:
            return None, Status.error(str(err))
        # The pod's own volumes do not depend on the node (no migration): read them once.
        state.write(PRE_FILTER_STATE_KEY, self._new_volumes(pod))
        return None, Status.OK

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def _new_volumes(self, pod: PodView) -> Volumes | Status:
        try:
            volumes: Volumes = {}
            self._attachable_volumes(pod, True, volumes)
            return volumes
        except _Failure as failure:
            return failure.status
        except MalformedObject as err:
            return Status.error(str(err))

    # Filter

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        if not has_volumes(pod):
            return Status.OK
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        new_volumes: Volumes | Status
        try:
            new_volumes = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            new_volumes = self._new_volumes(pod)
        if isinstance(new_volumes, Status):
            return new_volumes
        if not new_volumes:
            return Status.OK
        try:
            csi_node = self._storage().csi_node(node.name)
            if self._volume_limit_scaling:
                missing = self._driver_missing(new_volumes, csi_node)
                if missing is not None:
                    return Status.unschedulable(
                        f"{missing} CSI driver is not installed on the node"
                    )
            limits = volume_limits(csi_node)
            if not limits:
                return Status.OK
            attached: Volumes = {}
            for existing in node_info.pods:
                if has_volumes(existing):
                    try:
                        self._attachable_volumes(existing, False, attached)
                    except MalformedObject as err:
                        return Status.error(f"pod {existing.key}: {err}")
        except _Failure as failure:
            return failure.status
        attached_count: dict[str, int] = {}
        for driver in attached.values():
            attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for unique_name, driver in new_volumes.items():
            # A volume already attached for another pod is not attached again.
            if unique_name not in attached:
                new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return self._exceeded
        return Status.OK

    def _opted_in_drivers(self, new_volumes: Volumes) -> set[str]:
        """The drivers of `new_volumes` whose CSIDriver sets preventPodSchedulingIfMissing."""
        storage = self._storage()
        opted_in = set()
        for driver in new_volumes.values():
            csi_driver = storage.csi_driver(driver)
            if csi_driver is not None and csi_driver.prevent_pod_scheduling_if_missing:
                opted_in.add(driver)
        return opted_in

    def _driver_missing(self, new_volumes: Volumes, csi_node: CSINodeView | None) -> str | None:
        """Upstream's checkCSIDriverOnNode over the new volumes (VolumeLimitScaling): the
        first opted-in driver the node's CSINode does not list, in the volumes' order."""
        opted_in = self._opted_in_drivers(new_volumes)
        for driver in new_volumes.values():
            if driver in opted_in and (csi_node is None or driver not in csi_node.drivers):
                return driver
        return None

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict | None:
        """Only nodes whose CSINode sets a limit are checked (on their pods); the others
        pass, and a failure to read the pod's own volumes rejects every node alike."""
        try:
            new_volumes: Volumes | Status = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            return None
        if isinstance(new_volumes, Status):
            return verdict_with_status(np.zeros(len(rows), dtype=np.bool_), new_volumes)
        if self._handle is None:
            return None
        if self._volume_limit_scaling and new_volumes:
            try:
                if self._opted_in_drivers(new_volumes):
                    # Every node must list the driver: each is checked.
                    return verdict_per_node(
                        self.filter, state, pod, table, rows, np.ones(len(rows), dtype=np.bool_)
                    )
            except _Failure:
                return None
        csi_nodes = self._handle.cluster_objects.storage.csi_nodes.by_key
        names = table.names
        infos = table.infos
        check = np.fromiter(
            (
                infos[row].node is None
                or (bool(new_volumes) and bool(volume_limits(csi_nodes.get(names[row]))))
                for row in rows.tolist()
            ),
            dtype=np.bool_,
            count=len(rows),
        )
        return verdict_per_node(self.filter, state, pod, table, rows, check)

    # Counting

    def _attachable_volumes(self, pod: PodView, new_pod: bool, result: Volumes) -> None:
        """Upstream's filterAttachableVolumes: add the pod's countable volumes to `result`.
        Raises _Failure with the status Filter returns."""
        storage = self._storage()
        for claim in self._claims_of(pod) if not new_pod else pod_claims(pod):
            if not claim.name:
                raise _Failure(Status.error("PersistentVolumeClaim had no name"))
            pvc = storage.claim(pod.namespace, claim.name)
            if pvc is None:
                if new_pod:
                    # The pod cannot run without the claim: it waits for the claim to exist.
                    raise _Failure(
                        Status.unresolvable(
                            f"looking up PVC {pod.namespace}/{claim.name}: "
                            f"{claim_not_found(claim.name)}"
                        )
                    )
                continue  # not counted: it may not belong to the running pod
            if claim.ephemeral:
                error = volume_is_for_pod(pod, pvc)
                if error is not None:
                    raise _Failure(Status.error(error))
            driver, handle = self._csi_driver_info(storage, pvc)
            if not driver or not handle:
                continue
            result[f"{driver}/{handle}"] = driver

    def _csi_driver_info(
        self, storage: StorageObjects, claim: PersistentVolumeClaimView
    ) -> tuple[str, str]:
        """Upstream's getCSIDriverInfo (without in-tree translation)."""
        if not claim.volume_name:
            return self._csi_driver_info_from_class(storage, claim)
        pv = storage.volume(claim.volume_name)
        if pv is None:
            # Deleted, or the claim is pre-bound to a PV not created yet: count by class.
            return self._csi_driver_info_from_class(storage, claim)
        # A non-CSI PV would need translation (CSI migration): not counted.
        return pv.csi_driver, pv.csi_volume_handle

    def _csi_driver_info_from_class(
        self, storage: StorageObjects, claim: PersistentVolumeClaimView
    ) -> tuple[str, str]:
        """Upstream's getCSIDriverInfoFromSC: the provisioner and a handle unique to the
        claim."""
        class_name = claim.storage_class_name
        if not class_name:
            # Immediate binding: the claim must be bound before the pod is scheduled.
            return "", ""
        storage_class = storage.storage_class(class_name)
        if storage_class is None:
            return "", ""
        provisioner = storage_class.provisioner
        if provisioner in MIGRATABLE_IN_TREE_PLUGINS:
            return "", ""  # needs CSI migration
        return provisioner, f"{self._random_prefix}-{claim.namespace}/{claim.name}"

    # Queueing

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            # Always Queue: any new CSINode may have room (a new node has nothing attached).
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_NODE, ActionType.ADD)),
            # A driver's allocatable count may change (MutableCSINodeAllocatableCount).
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, ActionType.UPDATE),
                self._schedulable_after_csi_node_updated,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                self._schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self._schedulable_after_claim_added,
            ),
        )

    @staticmethod
    def _schedulable_after_pod_deleted(pod: Any, old: Any, new: Any) -> QueueingHint:
        if not isinstance(old, PodView):
            return QueueingHint.QUEUE
        if not has_volumes(old):
            return QueueingHint.SKIP
        if not old.node_name:
            return QueueingHint.SKIP  # it had nothing attached anywhere
        try:
            for index, volume in enumerate(pod_volumes(old)):
                if claim_of(old, volume, f"spec.volumes[{index}]") is not None:
                    return QueueingHint.QUEUE
                if any(volume.get(key) is not None for key in INLINE_MIGRATABLE_SOURCES):
                    return QueueingHint.QUEUE
        except MalformedObject:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def _schedulable_after_claim_added(pod: Any, old: Any, new: Any) -> QueueingHint:
        return hint_for_claim_event(
            pod, None, new, lambda p: (claim.name for claim in pod_claims(p))
        )

    @staticmethod
    def _schedulable_after_csi_node_updated(pod: Any, old: Any, new: Any) -> QueueingHint:
        """Queue when a driver's limit went up (or away)."""
        if not isinstance(old, CSINodeView) or not isinstance(new, CSINodeView):
            return QueueingHint.QUEUE
        before, after = volume_limits(old), volume_limits(new)
        for driver, limit in before.items():
            now = after.get(driver)
            if now is None or now > limit:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP


PLUGIN_ENTRY = PluginEntry(NAME, NodeVolumeLimits)
