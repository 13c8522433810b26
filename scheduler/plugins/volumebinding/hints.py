"""VolumeBinding queueing hints.

Upstream: pkg/scheduler/framework/plugins/volumebinding/volume_binding.go
(isSchedulableAfterPersistentVolumeClaimChange, isSchedulableAfterStorageClassChange,
isSchedulableAfterCSINodeChange, isSchedulableAfterCSIStorageCapacityChange,
isSchedulableAfterCSIDriverChange). The objects are the views of scheduler.api.storage (raw
dicts are parsed); anything unexpected answers Queue, as upstream's hint errors do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from scheduler.api.objects import PodView
from scheduler.api.storage import (
    CSIDriverView,
    CSINodeView,
    CSIStorageCapacityView,
    PersistentVolumeClaimView,
    StorageClassView,
)
from scheduler.framework.events import QueueingHint
from scheduler.plugins.volumebinding.helpers import volume_limit

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.SKIP

# v1.MigratedPluginsAnnotationKey
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"

V = TypeVar("V")


def _view(obj: Any, cls: type[V]) -> V | None:
    if isinstance(obj, cls):
        return obj
    if isinstance(obj, Mapping):
        try:
            parsed: V = cls.from_dict(obj)  # type: ignore[attr-defined]
        except ValueError:
            return None
        return parsed
    return None


def schedulable_after_pvc_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    """A claim of the pod (same namespace, a claim or generic ephemeral volume of the pod) was
    added or updated: nearly every such change may help."""
    claim = _view(new, PersistentVolumeClaimView)
    if claim is None or not isinstance(pod, PodView):
        return QUEUE
    if pod.namespace != claim.namespace:
        return SKIP
    return QUEUE if claim.name in pod.pvc_names else SKIP


def schedulable_after_storage_class_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    """A new class, or a change of allowedTopologies (the binding mode cannot change)."""
    if old is None:
        return QUEUE
    old_class = _view(old, StorageClassView)
    new_class = _view(new, StorageClassView)
    if old_class is None or new_class is None:
        return QUEUE
    # Semantic.DeepEqual: a missing list equals an empty one.
    before = old_class.raw.get("allowedTopologies") or []
    after = new_class.raw.get("allowedTopologies") or []
    return QUEUE if before != after else SKIP


def schedulable_after_csi_node_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    """A new CSINode, or a change of its migrated-plugins annotation."""
    if old is None:
        return QUEUE
    old_node = _view(old, CSINodeView)
    new_node = _view(new, CSINodeView)
    if old_node is None or new_node is None:
        return QUEUE
    before = old_node.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
    after = new_node.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
    return QUEUE if before != after else SKIP


def schedulable_after_csi_storage_capacity_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    """A new capacity, or a larger volume limit (maximumVolumeSize, else capacity)."""
    new_capacity = _view(new, CSIStorageCapacityView)
    if new_capacity is None:
        return QUEUE
    if old is None:
        return QUEUE
    old_capacity = _view(old, CSIStorageCapacityView)
    if old_capacity is None:
        return QUEUE
    old_limit, new_limit = volume_limit(old_capacity), volume_limit(new_capacity)
    if new_limit is not None and (old_limit is None or new_limit > old_limit):
        return QUEUE
    return SKIP


def schedulable_after_csi_driver_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    """A driver one of the pod's inline CSI volumes uses stopped tracking capacity."""
    old_driver = _view(old, CSIDriverView)
    new_driver = _view(new, CSIDriverView)
    if old_driver is None or new_driver is None or not isinstance(pod, PodView):
        return QUEUE
    spec = pod.raw.get("spec")
    volumes = spec.get("volumes") if isinstance(spec, Mapping) else None
    for volume in volumes if isinstance(volumes, list) else ():
        csi = volume.get("csi") if isinstance(volume, Mapping) else None
        if not isinstance(csi, Mapping) or csi.get("driver") != new_driver.name:
            continue
        if old_driver.storage_capacity and not new_driver.storage_capacity:
            return QUEUE
    return SKIP
