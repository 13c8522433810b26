"""PersistentVolume and PersistentVolumeClaim validation (what volume binding reads).

Ported from upstream's pkg/apis/core/validation/validation.go (ValidatePersistentVolumeSpec,
validateVolumeNodeAffinity, ValidatePersistentVolumeClaimSpec), with its field paths and messages.
Volume-source internals beyond the required path of hostPath/local are not checked.
"""

from __future__ import annotations

import json
import math
import posixpath
from collections.abc import Mapping
from typing import Any

from apimachinery.quantity import parse_canonical
from apimachinery.validation import is_dns1123_subdomain
from kubesim.validation_fields import (
    NOT_POSITIVE,
    Cause,
    forbidden,
    invalid,
    invalid_each,
    not_supported,
    required,
)
from kubesim.validation_scheduling import validate_label_selector, validate_node_selector

ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
_RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
_VOLUME_MODES = ("Block", "Filesystem")
# Volume sources in the order ValidatePersistentVolumeSpec checks them: the first one found is
# the volume's type, each later one is refused (flexVolume is counted but never refused), on the
# path shown (upstream names cephfs "cephFS" there).
_SOURCES = (
    ("hostPath", "hostPath"), ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"), ("glusterfs", "glusterfs"),
    ("flocker", "flocker"), ("nfs", "nfs"), ("rbd", "rbd"), ("quobyte", "quobyte"),
    ("cephfs", "cephFS"), ("iscsi", "iscsi"), ("cinder", "cinder"), ("fc", "fc"),
    ("flexVolume", ""), ("azureFile", "azureFile"), ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"), ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"), ("scaleIO", "scaleIO"), ("local", "local"),
    ("storageos", "storageos"), ("csi", "csi"),
)  # fmt: skip


def _access_modes(modes: Any, path: str, empty_detail: str) -> list[Cause]:
    modes = modes if isinstance(modes, list) else []
    if not modes:
        return [required(path, empty_detail)]
    causes = [not_supported(path, mode, ACCESS_MODES) for mode in modes if mode not in ACCESS_MODES]
    if "ReadWriteOncePod" in modes and any(mode != "ReadWriteOncePod" for mode in modes):
        causes.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return causes


def _positive_quantity(value: Any, path: str) -> list[Cause]:
    """ValidatePositiveQuantityValue; unparsable values are the decoder's 400, not checked here."""
    try:
        amount, text, _ = parse_canonical(value)
    except (ValueError, TypeError):
        return []
    return [] if amount > 0 else [invalid(path, text, NOT_POSITIVE)]


def _class_name(spec: Mapping[str, Any], path: str) -> list[Cause]:
    name = spec.get("storageClassName")
    if not isinstance(name, str) or not name:
        return []
    return invalid_each(path, name, is_dns1123_subdomain(name))


def _volume_mode(spec: Mapping[str, Any], path: str) -> list[Cause]:
    mode = spec.get("volumeMode")
    if mode is None or mode in _VOLUME_MODES:
        return []
    return [not_supported(path, mode, _VOLUME_MODES)]


def _volume_sources(spec: Mapping[str, Any], has_affinity: bool) -> list[Cause]:
    causes: list[Cause] = []
    count = 0
    for key, shown in _SOURCES:
        source = spec.get(key)
        if source is None:
            continue
        if count and shown:
            causes.append(forbidden(f"spec.{shown}", "may not specify more than 1 volume type"))
            continue
        count += 1
        if key in ("hostPath", "local") and isinstance(source, Mapping) and not source.get("path"):
            causes.append(required(f"spec.{key}.path"))
        if key == "local" and not has_affinity:
            causes.append(required("spec.nodeAffinity", "Local volume requires node affinity"))
    if not count:
        causes.append(required("spec", "must specify a volume type"))
    host_path = spec.get("hostPath")
    if (
        isinstance(host_path, Mapping)
        and posixpath.normpath(str(host_path.get("path") or ".")) in ("/", "//")
        and spec.get("persistentVolumeReclaimPolicy") == "Recycle"
    ):
        causes.append(
            forbidden(
                "spec.persistentVolumeReclaimPolicy",
                "may not be 'recycle' for a hostPath mount of '/'",
            )
        )
    return causes


def _node_affinity(spec: Mapping[str, Any]) -> tuple[bool, list[Cause]]:
    """validateVolumeNodeAffinity: (whether one is given, its errors)."""
    affinity = spec.get("nodeAffinity")
    if not isinstance(affinity, Mapping):
        return False, []
    selector = affinity.get("required")
    if not isinstance(selector, Mapping):
        return True, [
            required("spec.nodeAffinity.required", "must specify required node constraints")
        ]
    return True, validate_node_selector(selector, "spec.nodeAffinity.required")


def validate_persistent_volume(pv: Mapping[str, Any]) -> list[Cause]:
    spec = pv.get("spec")
    if not isinstance(spec, Mapping):
        spec = {}
    causes = _access_modes(spec.get("accessModes"), "spec.accessModes", "")
    capacity = spec.get("capacity")
    capacity = capacity if isinstance(capacity, Mapping) else {}
    if not capacity:
        causes.append(required("spec.capacity"))
    if "storage" not in capacity or len(capacity) > 1:
        shown = json.dumps(dict(capacity), separators=(",", ":"), sort_keys=True)
        causes.append(
            Cause(
                "spec.capacity",
                "FieldValueNotSupported",
                f'Unsupported value: {shown}: supported values: "storage"',
            )
        )
    for name, value in capacity.items():
        path = f"spec.capacity[{name}]"
        try:
            amount, text, _ = parse_canonical(value)
        except (ValueError, TypeError):
            continue
        if amount < 0:
            causes.append(invalid(path, math.ceil(amount), "must be a valid resource quantity"))
        if amount <= 0:
            causes.append(invalid(path, text, NOT_POSITIVE))
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in _RECLAIM_POLICIES:
        causes.append(
            not_supported("spec.persistentVolumeReclaimPolicy", policy, _RECLAIM_POLICIES)
        )
    has_affinity, affinity_causes = _node_affinity(spec)
    causes += affinity_causes
    causes += _volume_sources(spec, has_affinity)
    causes += _class_name(spec, "spec.storageClassName")
    causes += _volume_mode(spec, "spec.volumeMode")
    return causes


def validate_persistent_volume_claim(pvc: Mapping[str, Any]) -> list[Cause]:
    spec = pvc.get("spec")
    if not isinstance(spec, Mapping):
        spec = {}
    modes = _access_modes(
        spec.get("accessModes"), "spec.accessModes", "at least 1 access mode is required"
    )
    # upstream reports a missing access mode before the selector, an unsupported one after it
    missing = [cause for cause in modes if cause.reason == "FieldValueRequired"]
    causes = missing + validate_label_selector(spec.get("selector"), "spec.selector")
    causes += [cause for cause in modes if cause not in missing]
    resources = spec.get("resources")
    requests = resources.get("requests") if isinstance(resources, Mapping) else None
    storage = requests.get("storage") if isinstance(requests, Mapping) else None
    if storage is None:
        causes.append(required("spec.resources[storage]"))
    else:
        causes += _positive_quantity(storage, "spec.resources[storage]")
    causes += _class_name(spec, "spec.storageClassName")
    causes += _volume_mode(spec, "spec.volumeMode")
    return causes
