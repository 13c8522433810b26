"""PersistentVolume / claim helpers the binder uses, ported from upstream's
k8s.io/component-helpers/storage/volume (helpers.go, pv_helpers.go: CheckNodeAffinity,
FindMatchingVolume, GetBindVolumeToClaim, IsVolumeBoundToClaim, CheckAccessModes,
CheckVolumeModeMismatches), k8s.io/component-helpers/storage/ephemeral (VolumeIsForPod),
pkg/apis/core/v1/helper (MatchTopologySelectorTerms) and the capacity helpers of
pkg/scheduler/framework/plugins/volumebinding/binder.go (volumeLimit, capacitySufficient,
nodeHasAccess).

Everything reads the slotted views of scheduler.api.storage; the few fields they do not
precompute (owner references, volumeAttributesClassName, whether a storage request is set) are
read from `raw` defensively.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scheduler.api.storage import (
    BIND_COMPLETED_ANNOTATION,
    BOUND_BY_CONTROLLER_ANNOTATION,
    CSIStorageCapacityView,
    PersistentVolumeClaimView,
    PersistentVolumeView,
    TopologySelectorTerm,
)

# The provisioner name of storage classes that cannot provision (upstream's
# volume.NotSupportedProvisioner).
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
VOLUME_AVAILABLE = "Available"
CLAIM_LOST = "Lost"


def claim_key(claim: PersistentVolumeClaimView) -> str:
    """Upstream's getPVCName: "namespace/name"."""
    return f"{claim.namespace}/{claim.name}"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _spec(obj: PersistentVolumeClaimView | PersistentVolumeView) -> Mapping[str, Any]:
    return _mapping(_mapping(obj.raw).get("spec"))


def _meta(obj: PersistentVolumeClaimView | PersistentVolumeView) -> Mapping[str, Any]:
    return _mapping(_mapping(obj.raw).get("metadata"))


def has_storage_request(claim: PersistentVolumeClaimView) -> bool:
    """Whether spec.resources.requests has a "storage" entry at all."""
    requests = _mapping(_mapping(_spec(claim).get("resources")).get("requests"))
    return requests.get("storage") is not None


def volume_attributes_class(obj: PersistentVolumeClaimView | PersistentVolumeView) -> str:
    name = _spec(obj).get("volumeAttributesClassName")
    return name if isinstance(name, str) else ""


def is_pvc_fully_bound(claim: PersistentVolumeClaimView) -> bool:
    """Upstream's isPVCFullyBound: a volume name and the bind-completed annotation."""
    return bool(claim.volume_name) and BIND_COMPLETED_ANNOTATION in claim.annotations


# -- node affinity ---------------------------------------------------------------------------


def check_node_affinity(pv: PersistentVolumeView, node_labels: Mapping[str, str]) -> str | None:
    """Why the PV's required node affinity rejects a node with these labels, or None.

    Upstream's CheckNodeAffinity matches a node that has only labels (no name), so matchFields
    on metadata.name see "". Terms that fail to parse are skipped; when no term matches, their
    errors are the answer, else "no matching NodeSelectorTerms".
    """
    selector = pv.node_affinity
    if selector is None:
        return None
    if selector.matches(node_labels, ""):
        return None
    errors = selector.parse_errors
    if len(errors) == 1:
        return errors[0]
    if errors:
        return "[" + ", ".join(errors) + "]"
    return "no matching NodeSelectorTerms"


def match_topology_selector_terms(
    terms: Iterable[TopologySelectorTerm], labels: Mapping[str, str]
) -> bool:
    """Upstream's MatchTopologySelectorTerms: no terms match everything; a term without
    expressions, or with an expression without values, selects nothing."""
    terms = tuple(terms)
    if not terms:
        return True
    for term in terms:
        if not term.requirements or any(not values for _, values in term.requirements):
            continue
        if term.matches(labels):
            return True
    return False


# -- binding a volume to a claim ---------------------------------------------------------------


def is_volume_bound_to_claim(pv: PersistentVolumeView, claim: PersistentVolumeClaimView) -> bool:
    """Pre-bound or bound to this claim: same name and namespace, and the same UID when the
    claimRef has one."""
    ref = pv.claim_ref
    if ref is None:
        return False
    if ref.name != claim.name or ref.namespace != claim.namespace:
        return False
    return not ref.uid or ref.uid == claim.uid


def get_bind_volume_to_claim(
    pv: PersistentVolumeView, claim: PersistentVolumeClaimView
) -> tuple[PersistentVolumeView, bool]:
    """(the PV bound to the claim, whether that changed it): spec.claimRef points at the claim
    and, when the binding is new, pv.kubernetes.io/bound-by-controller is "yes".

    Raises MalformedObject when the PV's JSON cannot take the change."""
    should_set_bound_by_controller = not is_volume_bound_to_claim(pv, claim)
    raw = dict(pv.raw)
    meta = dict(_meta(pv))
    spec = dict(_spec(pv))
    dirty = False
    ref = pv.claim_ref
    target = (claim.name, claim.namespace, claim.uid)
    if ref is None or (ref.name, ref.namespace, ref.uid) != target:
        # reference.GetReference(scheme, claim): kind and apiVersion from the scheme.
        claim_ref: dict[str, Any] = {
            "kind": "PersistentVolumeClaim",
            "namespace": claim.namespace,
            "name": claim.name,
            "uid": claim.uid,
            "apiVersion": "v1",
            "resourceVersion": claim.resource_version,
        }
        spec["claimRef"] = {k: v for k, v in claim_ref.items() if v}
        dirty = True
    if should_set_bound_by_controller and BOUND_BY_CONTROLLER_ANNOTATION not in pv.annotations:
        meta["annotations"] = {**pv.annotations, BOUND_BY_CONTROLLER_ANNOTATION: "yes"}
        dirty = True
    raw["metadata"] = meta
    raw["spec"] = spec
    return PersistentVolumeView.from_dict(raw), dirty


def with_annotation(
    claim: PersistentVolumeClaimView, key: str, value: str
) -> PersistentVolumeClaimView:
    """A copy of the claim with one more annotation (metav1.SetMetaDataAnnotation)."""
    raw = dict(claim.raw)
    meta = dict(_meta(claim))
    meta["annotations"] = {**claim.annotations, key: value}
    raw["metadata"] = meta
    return PersistentVolumeClaimView.from_dict(raw)


def check_access_modes(claim: PersistentVolumeClaimView, pv: PersistentVolumeView) -> bool:
    """The PV offers every access mode the claim asks for."""
    offered = set(pv.access_modes)
    return all(mode in offered for mode in claim.access_modes)


def find_matching_volume(
    claim: PersistentVolumeClaimView,
    volumes: Iterable[PersistentVolumeView],
    node_labels: Mapping[str, str],
    excluded: Mapping[str, PersistentVolumeView] | set[str],
) -> PersistentVolumeView | None:
    """Upstream's FindMatchingVolume on the scheduler path (a node is given; the
    VolumeAttributesClass feature, GA, on): a PV pre-bound to the claim if its node affinity
    fits (else no match at all), otherwise the smallest available PV of the claim's class that
    is big enough, of the same volume mode and attributes class, not being deleted, matching
    the claim's selector, the node and the claim's access modes."""
    requested = claim.requested_storage
    requested_class = claim.storage_class_name
    claim_vac = volume_attributes_class(claim)
    smallest: PersistentVolumeView | None = None
    for pv in volumes:
        if pv.name in excluded:
            continue
        bound_to_claim = is_volume_bound_to_claim(pv, claim)
        if pv.claim_ref is not None and not bound_to_claim:
            continue
        if pv.capacity < requested:
            continue
        if claim.volume_mode != pv.volume_mode:
            continue
        if claim_vac != volume_attributes_class(pv):
            continue
        if pv.deleting:
            continue
        affinity_fits = check_node_affinity(pv, node_labels) is None
        if bound_to_claim:
            # A pre-bound PV whose affinity does not fit means the claim cannot use this node.
            return pv if affinity_fits else None
        if pv.phase != VOLUME_AVAILABLE:
            # Volumes not yet Available are likely to fail binding with API conflicts.
            continue
        if claim.selector is not None and not claim.selector.matches(pv.labels):
            continue
        if pv.storage_class_name != requested_class:
            continue
        if not affinity_fits:
            continue
        if not check_access_modes(claim, pv):
            continue
        if smallest is None or smallest.capacity > pv.capacity:
            smallest = pv
    return smallest


# -- storage capacity ------------------------------------------------------------------------------


def volume_limit(capacity: CSIStorageCapacityView) -> int | None:
    """maximumVolumeSize when set (it is more precise), else capacity."""
    if capacity.maximum_volume_size is not None:
        return capacity.maximum_volume_size
    return capacity.capacity


def capacity_sufficient(capacity: CSIStorageCapacityView, size: int) -> bool:
    limit = volume_limit(capacity)
    return limit is not None and limit >= size


def node_has_access(node_labels: Mapping[str, str], capacity: CSIStorageCapacityView) -> bool:
    """A capacity without nodeTopology is available nowhere; else its selector decides."""
    if capacity.node_topology is None:
        return False
    return capacity.node_topology.matches(node_labels)
