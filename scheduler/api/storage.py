"""Slotted views of the storage objects the volume plugins read: PersistentVolumeClaims,
PersistentVolumes, StorageClasses, CSINodes, CSIDrivers and CSIStorageCapacities.

Each view keeps its decoded JSON (`raw`) for what is rarely read, and precomputes what the
plugins read on every pod that uses volumes. A malformed object raises MalformedObject naming
the field (the informer logs and skips it). Defaults follow upstream's API defaulting and
storage helpers (k8s.io/component-helpers/storage/volume).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apimachinery.labels import LabelSelector
from apimachinery.quantity import value
from scheduler.api.errors import MalformedObject
from scheduler.api.fields import as_bool, as_int, as_list, as_mapping, as_str, as_str_map
from scheduler.api.selectors import NodeSelector

# volume.beta.kubernetes.io/storage-class: read before spec.storageClassName, as upstream's
# GetPersistentVolumeClaimClass / GetPersistentVolumeClass do.
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER_ANNOTATION = "pv.kubernetes.io/bound-by-controller"
STORAGE_PROVISIONER_ANNOTATION = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER_ANNOTATION = "volume.beta.kubernetes.io/storage-provisioner"
PROVISIONED_BY_ANNOTATION = "pv.kubernetes.io/provisioned-by"

VOLUME_BINDING_IMMEDIATE = "Immediate"
VOLUME_BINDING_WAIT = "WaitForFirstConsumer"
FILESYSTEM = "Filesystem"


def _meta(obj: Any, kind: str) -> Mapping[str, Any]:
    return as_mapping(as_mapping(obj, kind).get("metadata"), "metadata")


def _quantity(raw: Any, path: str) -> int | None:
    """A quantity's whole value (bytes for storage), None when absent."""
    if raw is None:
        return None
    if not isinstance(raw, str | int):
        raise MalformedObject(f"{path}: expected a quantity, got {type(raw).__name__}")
    try:
        return value(str(raw))
    except ValueError as err:
        raise MalformedObject(f"{path}: {err}") from None


def _access_modes(spec: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(
        as_str(mode, f"spec.accessModes[{i}]")
        for i, mode in enumerate(as_list(spec.get("accessModes"), "spec.accessModes"))
    )


def _class_name(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> str:
    annotations = as_str_map(meta.get("annotations"), "metadata.annotations")
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return as_str(spec.get("storageClassName"), "spec.storageClassName")


@dataclass(frozen=True, slots=True)
class ClaimRef:
    namespace: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaimView:
    namespace: str
    name: str
    uid: str
    resource_version: str
    annotations: Mapping[str, str]
    labels: Mapping[str, str]
    volume_name: str  # spec.volumeName: the PV it is (being) bound to
    storage_class_name: str
    access_modes: tuple[str, ...]
    requested_storage: int  # spec.resources.requests.storage, bytes (0 when absent)
    volume_mode: str
    selector: LabelSelector | None
    phase: str
    deleting: bool
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> PersistentVolumeClaimView:
        meta = _meta(obj, "persistentvolumeclaim")
        spec = as_mapping(obj.get("spec"), "spec")
        status = as_mapping(obj.get("status"), "status")
        resources = as_mapping(spec.get("resources"), "spec.resources")
        requests = as_mapping(resources.get("requests"), "spec.resources.requests")
        raw_selector = spec.get("selector")
        return PersistentVolumeClaimView(
            namespace=as_str(meta.get("namespace"), "metadata.namespace", "default"),
            name=as_str(meta.get("name"), "metadata.name"),
            uid=as_str(meta.get("uid"), "metadata.uid"),
            resource_version=as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            annotations=as_str_map(meta.get("annotations"), "metadata.annotations"),
            labels=as_str_map(meta.get("labels"), "metadata.labels"),
            volume_name=as_str(spec.get("volumeName"), "spec.volumeName"),
            storage_class_name=_class_name(meta, spec),
            access_modes=_access_modes(spec),
            requested_storage=_quantity(requests.get("storage"), "spec.resources.requests.storage")
            or 0,
            volume_mode=as_str(spec.get("volumeMode"), "spec.volumeMode", FILESYSTEM),
            selector=(
                None
                if raw_selector is None
                else LabelSelector.from_dict(
                    as_mapping(raw_selector, "spec.selector"), "spec.selector"
                )
            ),
            phase=as_str(status.get("phase"), "status.phase", "Pending"),
            deleting=meta.get("deletionTimestamp") is not None,
            raw=obj,
        )


@dataclass(frozen=True, slots=True)
class PersistentVolumeView:
    name: str
    resource_version: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    storage_class_name: str
    capacity: int  # spec.capacity.storage, bytes
    access_modes: tuple[str, ...]
    volume_mode: str
    node_affinity: NodeSelector | None  # spec.nodeAffinity.required; None = any node
    claim_ref: ClaimRef | None
    phase: str
    csi_driver: str  # spec.csi.driver ("" for other volume sources)
    csi_volume_handle: str
    deleting: bool
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return self.name

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> PersistentVolumeView:
        meta = _meta(obj, "persistentvolume")
        spec = as_mapping(obj.get("spec"), "spec")
        status = as_mapping(obj.get("status"), "status")
        capacity = as_mapping(spec.get("capacity"), "spec.capacity")
        affinity = as_mapping(spec.get("nodeAffinity"), "spec.nodeAffinity")
        required = affinity.get("required")
        raw_ref = spec.get("claimRef")
        claim_ref = None
        if raw_ref is not None:
            ref = as_mapping(raw_ref, "spec.claimRef")
            claim_ref = ClaimRef(
                as_str(ref.get("namespace"), "spec.claimRef.namespace"),
                as_str(ref.get("name"), "spec.claimRef.name"),
                as_str(ref.get("uid"), "spec.claimRef.uid"),
            )
        csi = as_mapping(spec.get("csi"), "spec.csi")
        return PersistentVolumeView(
            name=as_str(meta.get("name"), "metadata.name"),
            resource_version=as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            labels=as_str_map(meta.get("labels"), "metadata.labels"),
            annotations=as_str_map(meta.get("annotations"), "metadata.annotations"),
            storage_class_name=_class_name(meta, spec),
            capacity=_quantity(capacity.get("storage"), "spec.capacity.storage") or 0,
            access_modes=_access_modes(spec),
            volume_mode=as_str(spec.get("volumeMode"), "spec.volumeMode", FILESYSTEM),
            node_affinity=(
                None
                if required is None
                else NodeSelector.from_dict(
                    as_mapping(required, "spec.nodeAffinity.required"),
                    "spec.nodeAffinity.required",
                )
            ),
            claim_ref=claim_ref,
            phase=as_str(status.get("phase"), "status.phase", "Pending"),
            csi_driver=as_str(csi.get("driver"), "spec.csi.driver"),
            csi_volume_handle=as_str(csi.get("volumeHandle"), "spec.csi.volumeHandle"),
            deleting=meta.get("deletionTimestamp") is not None,
            raw=obj,
        )


@dataclass(frozen=True, slots=True)
class TopologySelectorTerm:
    """One term of a StorageClass's allowedTopologies: every key must have one of its values."""

    requirements: tuple[tuple[str, frozenset[str]], ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(key) in values for key, values in self.requirements)


@dataclass(frozen=True, slots=True)
class StorageClassView:
    name: str
    resource_version: str
    provisioner: str
    volume_binding_mode: str
    allowed_topologies: tuple[TopologySelectorTerm, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return self.name

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> StorageClassView:
        meta = _meta(obj, "storageclass")
        terms: list[TopologySelectorTerm] = []
        raw_terms = as_list(obj.get("allowedTopologies"), "allowedTopologies")
        for i, raw_term in enumerate(raw_terms):
            path = f"allowedTopologies[{i}].matchLabelExpressions"
            term = as_mapping(raw_term, f"allowedTopologies[{i}]")
            requirements = []
            for j, expr in enumerate(as_list(term.get("matchLabelExpressions"), path)):
                expr = as_mapping(expr, f"{path}[{j}]")
                values = as_list(expr.get("values"), f"{path}[{j}].values")
                requirements.append(
                    (
                        as_str(expr.get("key"), f"{path}[{j}].key"),
                        frozenset(as_str(v, f"{path}[{j}].values") for v in values),
                    )
                )
            terms.append(TopologySelectorTerm(tuple(requirements)))
        return StorageClassView(
            name=as_str(meta.get("name"), "metadata.name"),
            resource_version=as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            provisioner=as_str(obj.get("provisioner"), "provisioner"),
            volume_binding_mode=as_str(
                obj.get("volumeBindingMode"), "volumeBindingMode", VOLUME_BINDING_IMMEDIATE
            ),
            allowed_topologies=tuple(terms),
            raw=obj,
        )


@dataclass(frozen=True, slots=True)
class CSINodeDriver:
    name: str
    node_id: str
    topology_keys: tuple[str, ...]
    allocatable_count: int | None  # spec.drivers[*].allocatable.count; None = no limit


@dataclass(frozen=True, slots=True)
class CSINodeView:
    name: str
    resource_version: str
    drivers: Mapping[str, CSINodeDriver]
    annotations: Mapping[str, str]
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return self.name

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> CSINodeView:
        meta = _meta(obj, "csinode")
        spec = as_mapping(obj.get("spec"), "spec")
        drivers: dict[str, CSINodeDriver] = {}
        for i, raw in enumerate(as_list(spec.get("drivers"), "spec.drivers")):
            path = f"spec.drivers[{i}]"
            driver = as_mapping(raw, path)
            allocatable = as_mapping(driver.get("allocatable"), f"{path}.allocatable")
            count = allocatable.get("count")
            name = as_str(driver.get("name"), f"{path}.name")
            drivers[name] = CSINodeDriver(
                name,
                as_str(driver.get("nodeID"), f"{path}.nodeID"),
                tuple(
                    as_str(k, f"{path}.topologyKeys")
                    for k in as_list(driver.get("topologyKeys"), f"{path}.topologyKeys")
                ),
                None if count is None else as_int(count, f"{path}.allocatable.count"),
            )
        return CSINodeView(
            name=as_str(meta.get("name"), "metadata.name"),
            resource_version=as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            drivers=drivers,
            annotations=as_str_map(meta.get("annotations"), "metadata.annotations"),
            raw=obj,
        )


@dataclass(frozen=True, slots=True)
class CSIDriverView:
    name: str
    resource_version: str
    attach_required: bool  # defaults to true
    storage_capacity: bool  # defaults to false
    raw: Mapping[str, Any] = field(repr=False, compare=False)
    # spec.preventPodSchedulingIfMissing (v1.35+, read under the VolumeLimitScaling gate):
    # a node whose CSINode does not list the driver cannot run its volumes.
    prevent_pod_scheduling_if_missing: bool = False

    @property
    def key(self) -> str:
        return self.name

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> CSIDriverView:
        meta = _meta(obj, "csidriver")
        spec = as_mapping(obj.get("spec"), "spec")
        return CSIDriverView(
            name=as_str(meta.get("name"), "metadata.name"),
            resource_version=as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            attach_required=as_bool(spec.get("attachRequired"), "spec.attachRequired", True),
            storage_capacity=as_bool(spec.get("storageCapacity"), "spec.storageCapacity"),
            raw=obj,
            prevent_pod_scheduling_if_missing=as_bool(
                spec.get("preventPodSchedulingIfMissing"), "spec.preventPodSchedulingIfMissing"
            ),
        )


@dataclass(frozen=True, slots=True)
class CSIStorageCapacityView:
    namespace: str
    name: str
    resource_version: str
    storage_class_name: str
    node_topology: LabelSelector | None  # None: no node has access
    capacity: int | None
    maximum_volume_size: int | None
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> CSIStorageCapacityView:
        meta = _meta(obj, "csistoragecapacity")
        topology = obj.get("nodeTopology")
        return CSIStorageCapacityView(
            namespace=as_str(meta.get("namespace"), "metadata.namespace", "default"),
            name=as_str(meta.get("name"), "metadata.name"),
            resource_version=as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            storage_class_name=as_str(obj.get("storageClassName"), "storageClassName"),
            node_topology=(
                None
                if topology is None
                else LabelSelector.from_dict(as_mapping(topology, "nodeTopology"), "nodeTopology")
            ),
            capacity=_quantity(obj.get("capacity"), "capacity"),
            maximum_volume_size=_quantity(obj.get("maximumVolumeSize"), "maximumVolumeSize"),
            raw=obj,
        )
