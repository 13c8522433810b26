"""The PersistentVolume controller's binder, plus the provisioning step of a simulated driver.

Ported from upstream pkg/controller/volume/persistentvolume/pv_controller.go (syncClaim,
syncUnboundClaim, syncBoundClaim, syncVolume, bind, unbindVolume, reclaimVolume) and, for
provisioning, kubernetes-csi/external-provisioner. Every sync reads the current objects and
writes only what differs, so running one twice, or after a restart, changes nothing more.

Simplified: no events are recorded, a volume and its claim are bound in one atomic commit
(upstream: four writes, each retried), and a released volume with policy Delete is deleted
whatever its plugin (the simulated backend has nothing to clean up).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

from kubesim import defaults, errors
from kubesim.api import Api
from kubesim.meta import Obj, new_uid, rfc3339
from kubesim.resources import RESOURCES
from kubesim.storage.index import VolumeIndex
from kubesim.storage.matching import best_volume, satisfies
from kubesim.storage.objects import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    CLASSES,
    NODES,
    PVCS,
    PVS,
    WAIT_FOR_FIRST_CONSUMER,
    ClaimKey,
    annotations_of,
    claim_class,
    claim_key,
    claim_ref,
    claim_ref_key,
    class_unset,
    deleting,
    is_bound_to_claim,
    name_of,
    reference_to,
    requested_storage,
    spec,
    status,
    uid_of,
    with_changes,
)
from kubesim.storage.provisioner import provisioned_volume, volume_name

log = logging.getLogger(__name__)

PV_RESOURCE = next(r for r in RESOURCES if r.key == PVS)
Change = tuple[str, Obj | None, Obj | None]
IN_TREE_PREFIX = "kubernetes.io/"  # in-tree plugins: the PV controller hands them to no one


class Binder:
    """Binds claims to volumes, provisions for simulated provisioners, reclaims volumes."""

    def __init__(
        self,
        api: Api,
        volumes: VolumeIndex,
        provisioners: frozenset[str],
        enqueue_claim: Callable[[ClaimKey], None],
    ) -> None:
        self.api = api
        self.store = api.store
        self.volumes = volumes
        self.provisioners = provisioners
        self.enqueue_claim = enqueue_claim

    # ---- claims ------------------------------------------------------------------------------
    async def sync_claim(self, key: ClaimKey) -> None:
        claim = self.store.get(PVCS, *key)
        if claim is None or deleting(claim):
            return
        if ANN_BIND_COMPLETED in annotations_of(claim):
            await self._sync_bound_claim(claim)
        else:
            await self._sync_unbound_claim(claim)

    async def _sync_unbound_claim(self, claim: Obj) -> None:
        class_name = claim_class(claim)
        storage_class = self.store.get(CLASSES, "", class_name) if class_name else None
        delay = (storage_class or {}).get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER
        wanted = spec(claim).get("volumeName")
        if wanted:
            volume = self.store.get(PVS, "", str(wanted))
            if volume is not None and (
                is_bound_to_claim(volume, claim)
                or (claim_ref(volume) is None and satisfies(volume, claim))
            ):
                await self._bind(volume, claim)
            else:  # missing, unfit or someone else's: wait for it
                await self._set_claim_status(claim, "Pending", None)
            return
        offered = self._offered(class_name, requested_storage(claim))
        volume = best_volume(claim, self._prebound(claim), offered, delay_binding=delay)
        if volume is not None:
            await self._bind(volume, claim)
            return
        if class_unset(claim):
            # no volume for a claim without a class: it gets the default class now, if there is
            # one (retroactive default StorageClass assignment, upstream since 1.28)
            default = defaults.default_storage_class(self.store.items(CLASSES))
            if default is not None:
                await self._commit(
                    [(PVCS, with_changes(claim, spec_set={"storageClassName": default}), claim)]
                )
                return
        if (
            class_name
            and storage_class is not None
            and (not delay or ANN_SELECTED_NODE in annotations_of(claim))
        ):
            await self._provision(claim, storage_class)
        else:  # no class to provision from, or WaitForFirstConsumer without a node yet
            await self._set_claim_status(claim, "Pending", None)

    async def _sync_bound_claim(self, claim: Obj) -> None:
        wanted = str(spec(claim).get("volumeName") or "")
        volume = self.store.get(PVS, "", wanted) if wanted else None
        if volume is None:
            await self._set_claim_status(claim, "Lost", None)
            return
        ref = claim_ref(volume)
        if ref is None or str(ref.get("uid") or "") == uid_of(claim):
            await self._bind(volume, claim)  # repairs a half-done binding, else writes nothing
        else:
            await self._set_claim_status(claim, "Lost", None)

    def _prebound(self, claim: Obj) -> Iterator[Obj]:
        for name in self.volumes.by_claim.get(claim_key(claim), ()):
            volume = self.store.get(PVS, "", name)
            if volume is not None:
                yield volume

    def _offered(self, class_name: str, request: Fraction) -> Iterator[Obj]:
        for name in self.volumes.offered(class_name, request):
            volume = self.store.get(PVS, "", name)
            if volume is not None:
                yield volume

    # ---- binding -----------------------------------------------------------------------------
    async def _bind(self, volume: Obj, claim: Obj) -> None:
        """Volume first, then claim, as upstream's bind(); one commit, only if something moves."""
        new_volume = volume
        ref = claim_ref(volume) or {}
        if (claim_ref_key(volume), ref.get("uid")) != (claim_key(claim), uid_of(claim)):
            new_volume = with_changes(new_volume, spec_set={"claimRef": reference_to(claim)})
        if not is_bound_to_claim(volume, claim) and ANN_BOUND_BY_CONTROLLER not in annotations_of(
            volume
        ):
            new_volume = with_changes(new_volume, annotations_set={ANN_BOUND_BY_CONTROLLER: "yes"})
        new_volume = self._with_phase(new_volume, "Bound")
        new_claim = claim
        name = name_of(volume)
        if spec(claim).get("volumeName") != name:
            new_claim = with_changes(new_claim, spec_set={"volumeName": name})
            if ANN_BOUND_BY_CONTROLLER not in annotations_of(claim):
                new_claim = with_changes(
                    new_claim, annotations_set={ANN_BOUND_BY_CONTROLLER: "yes"}
                )
        if ANN_BIND_COMPLETED not in annotations_of(claim):
            new_claim = with_changes(new_claim, annotations_set={ANN_BIND_COMPLETED: "yes"})
        new_claim = self._claim_with_status(new_claim, "Bound", volume)
        changes: list[Change] = []
        if new_volume is not volume:
            changes.append((PVS, new_volume, volume))
        if new_claim is not claim:
            changes.append((PVCS, new_claim, claim))
        if changes:
            log.debug("binding PersistentVolume %s to claim %s/%s", name, *claim_key(claim))
            await self._commit(changes)

    def _claim_with_status(self, claim: Obj, phase: str, volume: Obj | None) -> Obj:
        """updateClaimStatus: the phase, and the volume's modes and capacity (none unbound)."""
        current = status(claim)
        wanted: dict[str, Any] = {
            k: v for k, v in current.items() if k not in ("accessModes", "capacity")
        }
        wanted["phase"] = phase
        if volume is not None:
            volume_spec = spec(volume)
            if "accessModes" in volume_spec:
                wanted["accessModes"] = volume_spec["accessModes"]
            if "capacity" in volume_spec:
                wanted["capacity"] = volume_spec["capacity"]
        if wanted == current:
            return claim
        return {**claim, "metadata": dict(claim["metadata"]), "status": wanted}

    async def _set_claim_status(self, claim: Obj, phase: str, volume: Obj | None) -> None:
        new = self._claim_with_status(claim, phase, volume)
        if new is not claim:
            await self._commit([(PVCS, new, claim)])

    def _with_phase(self, volume: Obj, phase: str) -> Obj:
        if status(volume).get("phase") == phase:
            return volume
        stamp = rfc3339(self.api.clock())
        return with_changes(volume, status_set={"phase": phase, "lastPhaseTransitionTime": stamp})

    # ---- provisioning ------------------------------------------------------------------------
    async def _provision(self, claim: Obj, storage_class: Obj) -> None:
        """provisionClaim: hand the claim to its class's provisioner (annotation); when that is
        one we simulate, create the volume, which the next sync of the claim binds."""
        provisioner = storage_class.get("provisioner")
        new_claim = self._claim_with_status(claim, "Pending", None)
        if not isinstance(provisioner, str) or not provisioner:
            await self._commit_if_changed(claim, new_claim, [])
            return
        simulated = provisioner in self.provisioners
        if simulated or not provisioner.startswith(IN_TREE_PREFIX):
            wanted = dict.fromkeys(
                (ANN_STORAGE_PROVISIONER, ANN_BETA_STORAGE_PROVISIONER), provisioner
            )
            if any(annotations_of(claim).get(k) != v for k, v in wanted.items()):
                new_claim = with_changes(new_claim, annotations_set=wanted)
        created: list[Change] = []
        if simulated and self.store.get(PVS, "", volume_name(claim)) is None:
            volume = self._new_volume(claim, storage_class, provisioner)
            if volume is not None:
                created.append((PVS, volume, None))
        await self._commit_if_changed(claim, new_claim, created)

    def _new_volume(self, claim: Obj, storage_class: Obj, provisioner: str) -> Obj | None:
        node: Obj | None = None
        node_name = annotations_of(claim).get(ANN_SELECTED_NODE)
        if node_name:
            node = self.store.get(NODES, "", str(node_name))
            if node is None:
                log.warning(
                    "not provisioning claim %s/%s: selected node %s does not exist",
                    *claim_key(claim),
                    node_name,
                )
                return None
        volume = provisioned_volume(claim, storage_class, provisioner, node)
        volume["metadata"]["uid"] = new_uid(self.api.rng)
        volume["metadata"]["creationTimestamp"] = rfc3339(self.api.clock())
        volume["metadata"]["generation"] = 1
        log.debug(
            "provisioned PersistentVolume %s for claim %s/%s", name_of(volume), *claim_key(claim)
        )
        return volume

    async def _commit_if_changed(self, claim: Obj, new_claim: Obj, more: list[Change]) -> None:
        changes = ([(PVCS, new_claim, claim)] if new_claim is not claim else []) + more
        if changes:
            await self._commit(changes)

    # ---- volumes -----------------------------------------------------------------------------
    async def sync_volume(self, name: str) -> None:
        volume = self.store.get(PVS, "", name)
        if volume is None or deleting(volume):
            return
        ref = claim_ref(volume)
        key = claim_ref_key(volume)
        if ref is None or key is None:
            await self._set_phase(volume, "Available")
            return
        if not ref.get("uid"):  # pre-bound by a user: the claim's sync binds it
            await self._set_phase(volume, "Available")
            self.enqueue_claim(key)
            return
        claim = self.store.get(PVCS, *key)
        if claim is not None and uid_of(claim) != str(ref.get("uid")):
            claim = None  # deleted and made again under the same name
        if claim is None:
            if status(volume).get("phase") not in ("Released", "Failed"):
                volume = await self._set_phase(volume, "Released")
            await self._reclaim(volume)
            return
        bound_to = str(spec(claim).get("volumeName") or "")
        if not bound_to:
            self.enqueue_claim(key)  # binding not complete: the claim's sync finishes it
        elif bound_to == name:
            await self._set_phase(volume, "Bound")
        elif (
            ANN_PROVISIONED_BY in annotations_of(volume)
            and spec(volume).get("persistentVolumeReclaimPolicy") == "Delete"
        ):  # provisioned for a claim that got bound elsewhere: not needed
            volume = await self._set_phase(volume, "Released")
            await self._reclaim(volume)
        else:
            await self._unbind(volume)

    async def _set_phase(self, volume: Obj, phase: str) -> Obj:
        new = self._with_phase(volume, phase)
        if new is volume:
            return volume
        return (await self._commit([(PVS, new, volume)]))[0]

    async def _unbind(self, volume: Obj) -> None:
        """unbindVolume: forget a binding the controller made; keep a user's pre-binding."""
        if ANN_BOUND_BY_CONTROLLER in annotations_of(volume):
            new_spec = {k: v for k, v in spec(volume).items() if k != "claimRef"}
            new_annotations = {
                k: v for k, v in annotations_of(volume).items() if k != ANN_BOUND_BY_CONTROLLER
            }
            new_meta = {**volume["metadata"], "annotations": new_annotations}
            new_meta["generation"] = int(new_meta.get("generation") or 0) + 1
            new = {**volume, "metadata": new_meta, "spec": new_spec}
        else:
            ref = {k: v for k, v in (claim_ref(volume) or {}).items() if k != "uid"}
            new = with_changes(volume, spec_set={"claimRef": ref})
        await self._commit([(PVS, self._with_phase(new, "Available"), volume)])

    async def _reclaim(self, volume: Obj) -> None:
        policy = spec(volume).get("persistentVolumeReclaimPolicy") or "Retain"
        if policy == "Delete":
            log.debug("deleting released PersistentVolume %s", name_of(volume))
            try:
                await self.api.delete(
                    PV_RESOURCE, "", name_of(volume), {"preconditions": {"uid": uid_of(volume)}}
                )
            except errors.ApiError as exc:
                if exc.code not in (404, 409):  # gone, or replaced: nothing left to reclaim
                    raise
        elif policy == "Recycle":  # the deprecated scrubber: the volume is offered again
            new_spec = {k: v for k, v in spec(volume).items() if k != "claimRef"}
            new = {**volume, "metadata": dict(volume["metadata"]), "spec": new_spec}
            await self._commit([(PVS, self._with_phase(new, "Available"), volume)])

    async def _commit(self, changes: list[Change]) -> list[Obj]:
        events = await self.store.commit(changes)
        return [event.obj for event in events]
