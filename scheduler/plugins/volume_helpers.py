"""A pod's spec.volumes as the volume plugins read them (VolumeRestrictions, VolumeZone,
NodeVolumeLimits), and the lister errors they report.

PodView precomputes only the claim names (`pvc_names`, generic ephemeral claims included);
the plugins need to know which kind of volume each entry is, so they read `pod.raw` through
these helpers. Every reader raises MalformedObject naming the field it could not read; the
plugins turn that into an Error status.

Facts from upstream:
- k8s.io/component-helpers/storage/ephemeral (VolumeClaimName, VolumeIsForPod);
- pkg/apis/core/v1/defaults.go (SetDefaults_RBDVolumeSource: the pool defaults to "rbd");
- k8s.io/csi-translation-lib (the in-tree plugins whose inline volumes are migratable);
- client-go's generated listers, whose NotFound errors name the resource in the singular
  (`persistentvolumeclaim "x" not found`, `storageclass.storage.k8s.io "x" not found`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api.errors import MalformedObject
from scheduler.api.fields import as_bool, as_list, as_mapping, as_str
from scheduler.api.objects import PodView
from scheduler.api.storage import PersistentVolumeClaimView
from scheduler.framework.events import QueueingHint

PERSISTENT_VOLUME_CLAIM = "persistentVolumeClaim"
EPHEMERAL = "ephemeral"
GCE_PERSISTENT_DISK = "gcePersistentDisk"
AWS_ELASTIC_BLOCK_STORE = "awsElasticBlockStore"
RBD = "rbd"
ISCSI = "iscsi"
# The in-tree disks VolumeRestrictions checks for conflicts (upstream's needsRestrictionsCheck).
DISK_SOURCES = (GCE_PERSISTENT_DISK, AWS_ELASTIC_BLOCK_STORE, RBD, ISCSI)
# Volume sources of the in-tree plugins csi-translation-lib can migrate when used inline
# (IsInlineMigratable: AWS EBS, GCE PD, Azure Disk, Azure File, Cinder, vSphere, Portworx).
INLINE_MIGRATABLE_SOURCES = frozenset(
    {
        AWS_ELASTIC_BLOCK_STORE,
        GCE_PERSISTENT_DISK,
        "azureDisk",
        "azureFile",
        "cinder",
        "vsphereVolume",
        "portworxVolume",
    }
)
# Provisioner names of those in-tree plugins (IsMigratableIntreePluginByName).
MIGRATABLE_IN_TREE_PLUGINS = frozenset(
    {
        "kubernetes.io/aws-ebs",
        "kubernetes.io/gce-pd",
        "kubernetes.io/azure-disk",
        "kubernetes.io/azure-file",
        "kubernetes.io/cinder",
        "kubernetes.io/vsphere-volume",
        "kubernetes.io/portworx-volume",
    }
)
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
DEFAULT_RBD_POOL = "rbd"


# -- lister errors (client-go's errors.NewNotFound over the listers' resources) ------------


def claim_not_found(name: str) -> str:
    return f'persistentvolumeclaim "{name}" not found'


def volume_not_found(name: str) -> str:
    return f'persistentvolume "{name}" not found'


def class_not_found(name: str) -> str:
    return f'storageclass.storage.k8s.io "{name}" not found'


# -- reading spec.volumes -------------------------------------------------------------------


def has_volumes(pod: PodView) -> bool:
    """Whether spec.volumes has any entry (upstream's `len(pod.Spec.Volumes) != 0`)."""
    spec = pod.raw.get("spec")
    return isinstance(spec, Mapping) and bool(spec.get("volumes"))


def pod_volumes(pod: PodView) -> list[Mapping[str, Any]]:
    """spec.volumes, each checked to be an object."""
    spec = pod.raw.get("spec")
    if spec is None:
        return []
    raw = as_list(as_mapping(spec, "spec").get("volumes"), "spec.volumes")
    return [as_mapping(volume, f"spec.volumes[{i}]") for i, volume in enumerate(raw)]


def source(volume: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any] | None:
    """The volume source under `key` (None when the volume is of another kind)."""
    value = volume.get(key)
    if value is None:
        return None
    return as_mapping(value, f"{path}.{key}")


@dataclass(frozen=True, slots=True)
class PodClaim:
    """A claim a pod's volume uses: a persistentVolumeClaim, or the claim of a generic
    ephemeral volume ("<pod>-<volume>", upstream's ephemeral.VolumeClaimName)."""

    name: str
    ephemeral: bool


def claim_of(pod: PodView, volume: Mapping[str, Any], path: str) -> PodClaim | None:
    """The claim `volume` uses, or None for volumes of other kinds."""
    claim = source(volume, PERSISTENT_VOLUME_CLAIM, path)
    if claim is not None:
        claim_path = f"{path}.{PERSISTENT_VOLUME_CLAIM}.claimName"
        return PodClaim(as_str(claim.get("claimName"), claim_path), False)
    if source(volume, EPHEMERAL, path) is not None:
        return PodClaim(f"{pod.name}-{as_str(volume.get('name'), f'{path}.name')}", True)
    return None


def pod_claims(pod: PodView) -> list[PodClaim]:
    """The claims of the pod's persistentVolumeClaim and generic ephemeral volumes, in spec
    order."""
    claims: list[PodClaim] = []
    for index, volume in enumerate(pod_volumes(pod)):
        claim = claim_of(pod, volume, f"spec.volumes[{index}]")
        if claim is not None:
            claims.append(claim)
    return claims


def persistent_claim_names(pod: PodView) -> list[str]:
    """The claimName of every persistentVolumeClaim volume (ephemeral volumes excluded), in
    spec order, repeats kept."""
    names: list[str] = []
    for index, volume in enumerate(pod_volumes(pod)):
        claim = claim_of(pod, volume, f"spec.volumes[{index}]")
        if claim is not None and not claim.ephemeral:
            names.append(claim.name)
    return names


def volume_is_for_pod(pod: PodView, claim: PersistentVolumeClaimView) -> str | None:
    """Upstream's ephemeral.VolumeIsForPod: None when the pod controls the claim (a controller
    owner reference with the pod's uid, same namespace), else the error message."""
    meta = as_mapping(claim.raw.get("metadata"), "metadata")
    owner_uid = None
    path = "metadata.ownerReferences"
    for index, ref in enumerate(as_list(meta.get("ownerReferences"), path)):
        ref = as_mapping(ref, f"{path}[{index}]")
        if as_bool(ref.get("controller"), f"{path}[{index}].controller"):
            owner_uid = as_str(ref.get("uid"), f"{path}[{index}].uid")
            break
    if claim.namespace != pod.namespace or owner_uid is None or owner_uid != pod.uid:
        return (
            f"PVC {claim.namespace}/{claim.name} was not created for pod "
            f"{pod.namespace}/{pod.name} (pod is not owner)"
        )
    return None


# -- the in-tree disks VolumeRestrictions compares ------------------------------------------


@dataclass(frozen=True, slots=True)
class DiskVolume:
    """One GCE PD, AWS EBS, RBD or ISCSI volume: `name` is the PD name, the EBS volume ID,
    the RBD image or the ISCSI IQN."""

    source: str
    name: str
    read_only: bool
    monitors: frozenset[str] = frozenset()  # RBD only
    pool: str = ""  # RBD only

    def conflicts(self, other: DiskVolume) -> bool:
        """Upstream's isVolumeConflict for one pair of volumes."""
        if self.source != other.source or self.name != other.name:
            return False
        both_read_only = self.read_only and other.read_only
        if self.source == AWS_ELASTIC_BLOCK_STORE:
            # AWS EBS forbids any two pods mounting the same volume ID, read-only or not.
            return True
        if self.source == RBD:
            # The same image: a common monitor, the same pool and image name.
            return (
                not self.monitors.isdisjoint(other.monitors)
                and self.pool == other.pool
                and not both_read_only
            )
        # GCE PD and ISCSI: many read-only mounts are fine.
        return not both_read_only


def disk_volumes(pod: PodView) -> tuple[DiskVolume, ...]:
    """The pod's GCE PD, AWS EBS, RBD and ISCSI volumes, in spec order."""
    spec = pod.raw.get("spec")
    if spec is None:
        return ()
    raw = as_mapping(spec, "spec").get("volumes")
    if not raw:
        return ()
    disks: list[DiskVolume] = []
    for index, volume in enumerate(as_list(raw, "spec.volumes")):
        path = f"spec.volumes[{index}]"
        volume = as_mapping(volume, path)
        for key in DISK_SOURCES:
            if volume.get(key) is not None:
                disks.append(_disk(key, as_mapping(volume[key], f"{path}.{key}"), f"{path}.{key}"))
    return tuple(disks)


def _disk(key: str, src: Mapping[str, Any], path: str) -> DiskVolume:
    read_only = as_bool(src.get("readOnly"), f"{path}.readOnly")
    if key == GCE_PERSISTENT_DISK:
        return DiskVolume(key, as_str(src.get("pdName"), f"{path}.pdName"), read_only)
    if key == AWS_ELASTIC_BLOCK_STORE:
        return DiskVolume(key, as_str(src.get("volumeID"), f"{path}.volumeID"), read_only)
    if key == ISCSI:
        return DiskVolume(key, as_str(src.get("iqn"), f"{path}.iqn"), read_only)
    monitors = frozenset(
        as_str(monitor, f"{path}.monitors[{i}]")
        for i, monitor in enumerate(as_list(src.get("monitors"), f"{path}.monitors"))
    )
    return DiskVolume(
        key,
        as_str(src.get("image"), f"{path}.image"),
        read_only,
        monitors,
        as_str(src.get("pool"), f"{path}.pool") or DEFAULT_RBD_POOL,
    )


def any_disk_conflict(wanted: Sequence[DiskVolume], existing: Sequence[DiskVolume]) -> bool:
    """Whether any of `wanted` conflicts with any of `existing` (upstream's
    satisfyVolumeConflicts, negated, for one existing pod)."""
    return any(disk.conflicts(other) for disk in wanted for other in existing)


def pod_disks_conflict(wanted: Sequence[DiskVolume], pods: Sequence[PodView]) -> bool:
    """Whether any of `wanted` conflicts with a disk of one of `pods`. Raises
    MalformedObject (prefixed with the pod) when a pod's volumes cannot be read."""
    for other in pods:
        spec = other.raw.get("spec")
        if not isinstance(spec, Mapping) or not spec.get("volumes"):
            continue
        try:
            existing = disk_volumes(other)
        except MalformedObject as err:
            raise MalformedObject(f"pod {other.key}: {err}") from None
        if existing and any_disk_conflict(wanted, existing):
            return True
    return False


def hint_for_claim_event(
    pod: Any, old: Any, new: Any, claim_names: Callable[[PodView], Iterable[str]]
) -> QueueingHint:
    """The queueing hint of a PVC add or update for a plugin that rejected `pod` over its own
    claims (`claim_names`): Queue when the claim is one of them, Skip when it is another pod's
    (or another namespace's), Queue when the objects cannot be read (upstream's fallback)."""
    if not isinstance(pod, PodView) or not isinstance(new, PersistentVolumeClaimView):
        return QueueingHint.QUEUE
    if old is not None and not isinstance(old, PersistentVolumeClaimView):
        return QueueingHint.QUEUE
    if new.namespace != pod.namespace:
        return QueueingHint.SKIP
    try:
        names = set(claim_names(pod))
    except MalformedObject:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE if new.name in names else QueueingHint.SKIP
