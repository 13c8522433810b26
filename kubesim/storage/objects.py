"""Storage keys, annotations and tolerant accessors for PVs, PVCs and StorageClasses.

Objects come from users through an API server that validates little of them, so every accessor
copes with missing or ill-typed fields; a quantity that does not parse raises Malformed, which
the controllers log and skip.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from apimachinery.quantity import parse_quantity
from kubesim.meta import Obj

PVS = "persistentvolumes"
PVCS = "persistentvolumeclaims"
CLASSES = "storage.k8s.io/storageclasses"
CSINODES = "storage.k8s.io/csinodes"
CSIDRIVERS = "storage.k8s.io/csidrivers"
NODES = "nodes"

# pkg/controller/volume/persistentvolume/util (annotations the PV controller reads and writes)
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"

WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
FILESYSTEM = "Filesystem"
HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"

ClaimKey = tuple[str, str]  # (namespace, name)


class Malformed(ValueError):
    """An object the controllers cannot act on; logged and skipped."""


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def meta(obj: Obj) -> dict[str, Any]:
    return as_dict(obj.get("metadata"))


def spec(obj: Obj) -> dict[str, Any]:
    return as_dict(obj.get("spec"))


def status(obj: Obj) -> dict[str, Any]:
    return as_dict(obj.get("status"))


def annotations_of(obj: Obj) -> dict[str, Any]:
    return as_dict(meta(obj).get("annotations"))


def name_of(obj: Obj) -> str:
    return str(meta(obj).get("name") or "")


def uid_of(obj: Obj) -> str:
    return str(meta(obj).get("uid") or "")


def deleting(obj: Obj) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def claim_key(claim: Obj) -> ClaimKey:
    return str(meta(claim).get("namespace") or ""), name_of(claim)


def claim_ref(volume: Obj) -> dict[str, Any] | None:
    ref = spec(volume).get("claimRef")
    return ref if isinstance(ref, dict) else None


def claim_ref_key(volume: Obj) -> ClaimKey | None:
    ref = claim_ref(volume)
    if ref is None:
        return None
    return str(ref.get("namespace") or ""), str(ref.get("name") or "")


def claim_class(claim: Obj) -> str:
    """The beta annotation, else spec.storageClassName; "" for none (upstream
    GetPersistentVolumeClaimClass)."""
    beta = annotations_of(claim).get(ANN_BETA_STORAGE_CLASS)
    if isinstance(beta, str):
        return beta
    return str(spec(claim).get("storageClassName") or "")


def class_unset(claim: Obj) -> bool:
    """No class asked for at all (nil, not ""): what the default class is given to."""
    return spec(claim).get("storageClassName") is None and (
        ANN_BETA_STORAGE_CLASS not in annotations_of(claim)
    )


def volume_class(volume: Obj) -> str:
    beta = annotations_of(volume).get(ANN_BETA_STORAGE_CLASS)
    if isinstance(beta, str):
        return beta
    return str(spec(volume).get("storageClassName") or "")


def volume_mode(obj: Obj) -> str:
    return str(spec(obj).get("volumeMode") or FILESYSTEM)


def access_modes(obj: Obj) -> frozenset[str]:
    return frozenset(str(mode) for mode in as_list(spec(obj).get("accessModes")))


def _quantity(value: Any, what: str) -> Fraction:
    try:
        return parse_quantity(value)
    except (ValueError, TypeError) as exc:
        raise Malformed(f"{what} {value!r}: {exc}") from exc


def requested_storage(claim: Obj) -> Fraction:
    """spec.resources.requests.storage; none asked for counts as 0 (any volume is big enough)."""
    requests = as_dict(as_dict(spec(claim).get("resources")).get("requests"))
    value = requests.get("storage")
    return Fraction(0) if value is None else _quantity(value, "storage request")


def volume_capacity(volume: Obj) -> Fraction:
    value = as_dict(spec(volume).get("capacity")).get("storage")
    if value is None:
        raise Malformed("no spec.capacity.storage")
    return _quantity(value, "capacity")


def is_bound_to_claim(volume: Obj, claim: Obj) -> bool:
    """The PV's claimRef names this claim (and, once set, its uid): IsVolumeBoundToClaim."""
    ref = claim_ref(volume)
    if ref is None or claim_ref_key(volume) != claim_key(claim):
        return False
    ref_uid = str(ref.get("uid") or "")
    return not ref_uid or ref_uid == uid_of(claim)


def reference_to(claim: Obj) -> dict[str, Any]:
    """The claimRef a binding writes: v1.GetReference of the claim, resourceVersion included."""
    claim_meta = meta(claim)
    return {
        "kind": "PersistentVolumeClaim",
        "namespace": claim_meta.get("namespace", ""),
        "name": claim_meta.get("name", ""),
        "uid": claim_meta.get("uid", ""),
        "apiVersion": "v1",
        "resourceVersion": claim_meta.get("resourceVersion", ""),
    }


def with_changes(
    obj: Obj,
    *,
    annotations_set: dict[str, str] | None = None,
    spec_set: dict[str, Any] | None = None,
    status_set: dict[str, Any] | None = None,
) -> Obj:
    """A new version of a stored object (never mutated: readers share it) with fields set."""
    new_meta = dict(meta(obj))
    new = {**obj, "metadata": new_meta}
    if annotations_set:
        new_meta["annotations"] = {**annotations_of(obj), **annotations_set}
    if spec_set:
        new["spec"] = {**spec(obj), **spec_set}
        new_meta["generation"] = int(new_meta.get("generation") or 0) + 1
    if status_set:
        new["status"] = {**status(obj), **status_set}
    return new
