"""VolumeZone (PreFilter, Filter, EnqueueExtensions): the zone and region labels of the
PersistentVolumes a pod's claims are bound to must match the node's.

Upstream: pkg/scheduler/framework/plugins/volumezone/volume_zone.go (queueing hints enabled).
PreFilter reads, for every persistentVolumeClaim volume of the pod, the bound PV's labels
among topology.kubernetes.io/zone, topology.kubernetes.io/region and their legacy
failure-domain.beta.kubernetes.io/* forms (a value may list several zones joined by "__");
a claim that is missing, has no name, or is unbound without a WaitForFirstConsumer class fails
the pod with UnschedulableAndUnresolvable; unbound WaitForFirstConsumer claims are skipped
(VolumeBinding handles them). A pod with nothing to check is skipped, so Filter costs nothing
for pods without volumes.

Filter accepts a node with none of the four labels (a single-zone cluster); otherwise every PV
label must have a value on the node (the GA key is tried when the node lacks a beta one) that
is among the PV's values, or the node is rejected with "node(s) had no available volume zone"
(UnschedulableAndUnresolvable).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.api.errors import MalformedObject
from scheduler.api.objects import PodView
from scheduler.api.storage import (
    VOLUME_BINDING_WAIT,
    PersistentVolumeView,
    StorageClassView,
)
from scheduler.cache.node_table import NodeTable
from scheduler.cache.rows import Rows, RowVerdict
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
    claim_not_found,
    class_not_found,
    has_volumes,
    hint_for_claim_event,
    persistent_claim_names,
    volume_not_found,
)

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.interface import PreFilterExtensions

NAME = "VolumeZone"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"

LABEL_FAILURE_DOMAIN_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_TOPOLOGY_ZONE,
    LABEL_TOPOLOGY_REGION,
)
_GA_LABEL = {
    LABEL_FAILURE_DOMAIN_BETA_REGION: LABEL_TOPOLOGY_REGION,
    LABEL_FAILURE_DOMAIN_BETA_ZONE: LABEL_TOPOLOGY_ZONE,
}
# k8s.io/cloud-provider/volume: LabelMultiZoneDelimiter.
MULTI_ZONE_DELIMITER = "__"


@dataclass(frozen=True, slots=True)
class PVTopology:
    """One topology label of a bound PV: the key and the zones (or regions) it allows."""

    pv_name: str
    key: str
    values: frozenset[str]


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """volumehelpers.LabelZonesToSet: "a__b" → {a, b}; None when an entry is empty."""
    zones = set()
    for zone in value.split(MULTI_ZONE_DELIMITER):
        trimmed = zone.strip()
        if not trimmed:
            return None
        zones.add(trimmed)
    return frozenset(zones)


def pv_topologies(pv: PersistentVolumeView) -> list[PVTopology]:
    """Upstream's getPVTopologies: the PV's topology labels that parse (others are ignored)."""
    result: list[PVTopology] = []
    for key in TOPOLOGY_LABELS:
        value = pv.labels.get(key)
        if value is None:
            continue
        values = label_zones_to_set(value)
        if values is None:
            continue
        result.append(PVTopology(pv.name, key, values))
    return result


def node_fits(labels: Mapping[str, str], topologies: Sequence[PVTopology]) -> bool:
    """Filter's test for one node's labels."""
    if not any(key in labels for key in TOPOLOGY_LABELS):
        # No zone constraint on the node: a single-zone cluster whose nodes have no labels.
        return True
    for topology in topologies:
        value = labels.get(topology.key)
        if value is None:
            # A PV's beta label may match the node's GA label.
            value = labels.get(_GA_LABEL.get(topology.key, topology.key))
        if value is None or value not in topology.values:
            return False
    return True


class VolumeZone:
    name = NAME

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Feasibility reads the volumes, not ConfigMaps or Secrets (upstream SignPod)."""
        return [signers.volumes_fragment(pod)], Status.OK

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle = handle
        self._conflict = Status.unresolvable(ERR_REASON_CONFLICT)

    # PreFilter

    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not has_volumes(pod):
            return None, Status.skip()
        topologies = self._pv_topologies_of(pod)
        if isinstance(topologies, Status):
            return None, topologies
        if not topologies:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, tuple(topologies))
        return None, Status.OK

    def _pv_topologies_of(self, pod: PodView) -> list[PVTopology] | Status:
        """Upstream's getPVbyPod."""
        try:
            claim_names = persistent_claim_names(pod)
        except MalformedObject as err:
            return Status.error(str(err))
        if not claim_names:
            return []
        if self._handle is None:
            return Status.error("VolumeZone needs a framework handle")
        storage = self._handle.cluster_objects.storage
        topologies: list[PVTopology] = []
        for claim_name in claim_names:
            if not claim_name:
                return Status.unresolvable("PersistentVolumeClaim had no name")
            claim = storage.claim(pod.namespace, claim_name)
            if claim is None:
                return Status.unresolvable(claim_not_found(claim_name))
            pv_name = claim.volume_name
            if not pv_name:
                class_name = claim.storage_class_name
                if not class_name:
                    return Status.unresolvable(
                        "PersistentVolumeClaim had no pv name and storageClass name"
                    )
                storage_class = storage.storage_class(class_name)
                if storage_class is None:
                    return Status.unresolvable(class_not_found(class_name))
                if storage_class.raw.get("volumeBindingMode") is None:
                    # The API server defaults the mode; a class without one is not from it.
                    return Status.unresolvable(
                        f'VolumeBindingMode not set for StorageClass "{class_name}"'
                    )
                if storage_class.volume_binding_mode == VOLUME_BINDING_WAIT:
                    continue  # unbound: VolumeBinding picks a volume for the node
                return Status.unresolvable("PersistentVolume had no name")
            pv = storage.volume(pv_name)
            if pv is None:
                return Status.unresolvable(volume_not_found(pv_name))
            topologies.extend(pv_topologies(pv))
        return topologies

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    # Filter

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        if not has_volumes(pod):
            return Status.OK
        topologies: Sequence[PVTopology]
        try:
            topologies = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            # As upstream: without PreFilter's state, read the volumes here.
            computed = self._pv_topologies_of(pod)
            if isinstance(computed, Status):
                return computed
            topologies = computed
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        return Status.OK if node_fits(node.labels, topologies) else self._conflict

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict | None:
        """Labels are not in the table: each row is checked on its node."""
        try:
            topologies: Sequence[PVTopology] = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            return None
        infos = table.infos
        passed = np.fromiter(
            (
                (node := infos[row].node) is not None and node_fits(node.labels, topologies)
                for row in rows.tolist()
            ),
            dtype=np.bool_,
            count=len(rows),
        )
        rejected = self._conflict

        def reject(row: int) -> Status:
            return rejected if infos[row].node is not None else Status.error("node not found")

        return RowVerdict(passed, reject)

    # Queueing

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            # A new WaitForFirstConsumer class lets an unbound claim be skipped; the binding
            # mode is immutable, so updates are not registered.
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD),
                self._schedulable_after_storage_class_added,
            ),
            # A new node, or new zone labels on one (no hint, as upstream).
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            # A claim of the pod was created or bound.
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE
                ),
                self._schedulable_after_claim_change,
            ),
            # A new volume, or new topology labels on one.
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
                self._schedulable_after_volume_change,
            ),
        )

    @staticmethod
    def _schedulable_after_claim_change(pod: Any, old: Any, new: Any) -> QueueingHint:
        return hint_for_claim_event(pod, old, new, persistent_claim_names)

    @staticmethod
    def _schedulable_after_storage_class_added(pod: Any, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, StorageClassView):
            return QueueingHint.QUEUE
        if new.volume_binding_mode != VOLUME_BINDING_WAIT:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    @staticmethod
    def _schedulable_after_volume_change(pod: Any, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, PersistentVolumeView):
            return QueueingHint.QUEUE
        if old is None:
            return QueueingHint.QUEUE  # a new volume
        if not isinstance(old, PersistentVolumeView):
            return QueueingHint.QUEUE
        if pv_topologies(old) != pv_topologies(new):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP


PLUGIN_ENTRY = PluginEntry(NAME, VolumeZone)
