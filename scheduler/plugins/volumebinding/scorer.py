"""Storage-capacity scoring: how full the pod's volumes would leave a node's storage.

Upstream: pkg/scheduler/framework/plugins/volumebinding/scorer.go (buildScorerFunction) and
volume_binding.go's Score (the classes' requested and capacity bytes), behind the
StorageCapacityScoring gate (beta, on by default since v1.37). Per storage class, the
utilization requested * 100 / capacity goes through the args' shape (a broken linear function,
scores scaled from 0-10 to 0-100); the node's score is the classes' mean, rounded as Go's
math.Round. With static bindings on the node, their PVs are scored (the claim's request against
the PV's capacity); else the claims to provision, against the capacity the node's
CSIStorageCapacity reports for their class.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from scheduler.framework.interface import MAX_NODE_SCORE
from scheduler.plugins.noderesources.scoring import _go_round, broken_linear_function
from scheduler.plugins.volumebinding.args import MAX_CUSTOM_PRIORITY_SCORE, UtilizationShapePoint
from scheduler.plugins.volumebinding.binder import PodVolumes

MAX_UTILIZATION = 100


@dataclass(slots=True)
class StorageResource:
    """Requested and capacity bytes of one storage class on one node."""

    requested: int = 0
    capacity: int = 0


# Storage class → its resource on the node (upstream's classResourceMap).
ClassResources = Mapping[str, StorageResource]
VolumeCapacityScorer = Callable[[ClassResources], int]


def build_scorer(shape: Sequence[UtilizationShapePoint]) -> VolumeCapacityScorer:
    """buildScorerFunction over the args' shape (its scores scaled to MaxNodeScore)."""
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = broken_linear_function([(p.utilization, p.score * scale) for p in shape])

    def class_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(MAX_UTILIZATION)
        return raw(requested * MAX_UTILIZATION // capacity)  # both >= 0: Go's division

    def score(classes: ClassResources) -> int:
        # Every class weighs the same (upstream: "in alpha stage").
        if not classes:
            return 0
        total = sum(class_score(r.requested, r.capacity) for r in classes.values())
        return _go_round(total / len(classes))

    return score


def class_resources(volumes: PodVolumes) -> dict[str, StorageResource]:
    """volume_binding.go Score's grouping of the node's volumes by storage class."""
    classes: dict[str, StorageResource] = {}
    if volumes.static_bindings:
        for binding in volumes.static_bindings:
            resource = classes.setdefault(binding.pv.storage_class_name, StorageResource())
            resource.requested += binding.pvc.requested_storage
            resource.capacity += binding.pv.capacity
        return classes
    for provision in volumes.dynamic_provisions or ():
        node_capacity = provision.node_capacity
        if node_capacity is None:
            continue
        resource = classes.setdefault(provision.pvc.storage_class_name, StorageResource())
        # Not +=: two claims of one class on a node share its one capacity.
        resource.capacity = node_capacity.capacity or 0
        resource.requested += provision.pvc.requested_storage
    return classes
