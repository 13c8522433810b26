"""The volume binder: which PVs a pod's claims can bind to on a node, which claims must be
provisioned there, assuming those choices in memory, and carrying them out in PreBind.

Upstream: pkg/scheduler/framework/plugins/volumebinding/binder.go (GetPodVolumeClaims,
FindPodVolumes, AssumePodVolumes, RevertAssumedPodVolumes, BindPodVolumes, bindAPIUpdate,
checkBindings, checkBoundClaims, findMatchingVolumes, checkVolumeProvisions,
hasEnoughCapacity). Error messages and reasons are upstream's.

Not ported: the in-tree → CSI translation of PVs (tryTranslatePVToCSI) for nodes whose CSINode
says an in-tree plugin migrated; PVs are checked with their own node affinity. Upstream's check
that the pod still exists while waiting (its pod lister) runs only when a `pod_exists` callable
is given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.errors import MalformedObject
from scheduler.api.objects import NodeView, PodView
from scheduler.api.storage import (
    SELECTED_NODE_ANNOTATION,
    CSIStorageCapacityView,
    PersistentVolumeClaimView,
    PersistentVolumeView,
    StorageClassView,
)
from scheduler.framework.api_client import ApiClient
from scheduler.listers.storage_objects import StorageObjects
from scheduler.plugins.volume_helpers import pod_claims, volume_is_for_pod
from scheduler.plugins.volumebinding.assume_cache import (
    PV_DESCRIPTION,
    PVC_DESCRIPTION,
    AssumeCache,
    AssumeCacheError,
    NotFoundError,
    parse_resource_version,
)
from scheduler.plugins.volumebinding.helpers import (
    CLAIM_LOST,
    NOT_SUPPORTED_PROVISIONER,
    capacity_sufficient,
    check_node_affinity,
    claim_key,
    find_matching_volume,
    get_bind_volume_to_claim,
    has_storage_request,
    is_pvc_fully_bound,
    match_topology_selector_terms,
    node_has_access,
    with_annotation,
)

# Upstream's ConflictReasons, in the order FindPodVolumes reports them.
# binder.go's ErrReasonNodeConflict (v1.36; "had volume node affinity conflict" before).
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)

# The upstream binder polls the API objects every second while it waits.
DEFAULT_POLL_INTERVAL = 1.0

__all__ = [
    "CLAIM_LOST",
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "BindingError",
    "BindingInfo",
    "DynamicProvision",
    "PodVolumeClaims",
    "PodVolumes",
    "VolumeBinder",
]


class BindingError(Exception):
    """A binder operation failed; the message is upstream's error text."""


@dataclass(slots=True)
class BindingInfo:
    """A claim and the PV chosen for it (after Reserve: the PV with its claimRef set)."""

    pvc: PersistentVolumeClaimView
    pv: PersistentVolumeView


@dataclass(slots=True)
class DynamicProvision:
    """A claim to provision on the node; `node_capacity` is the CSIStorageCapacity that made
    room for it, when capacity is tracked (only storage-capacity scoring reads it)."""

    pvc: PersistentVolumeClaimView
    node_capacity: CSIStorageCapacityView | None = None


@dataclass(slots=True)
class PodVolumes:
    """What one node needs for the pod. Filter leaves an empty list as None (upstream
    normalises empty to nil); Reserve sets lists, which PreBind requires."""

    static_bindings: list[BindingInfo] | None = None
    dynamic_provisions: list[DynamicProvision] | None = None


@dataclass(slots=True)
class PodVolumeClaims:
    """The pod's claims by state, and the PVs of the classes of its unbound delayed claims."""

    bound_claims: list[PersistentVolumeClaimView] = field(default_factory=list)
    unbound_claims_delay_binding: list[PersistentVolumeClaimView] = field(default_factory=list)
    unbound_claims_immediate: list[PersistentVolumeClaimView] = field(default_factory=list)
    unbound_volumes_delay_binding: dict[str, list[PersistentVolumeView]] = field(
        default_factory=dict
    )


NodeLookup = Callable[[str], NodeView | None]
PodExists = Callable[[PodView], bool]


class VolumeBinder:
    """Upstream's volumeBinder over the informer-fed `StorageObjects`, with its own PV and PVC
    assume caches."""

    def __init__(
        self,
        storage: StorageObjects,
        client: ApiClient | None,
        node_lookup: NodeLookup,
        bind_timeout: float,
        *,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        pod_exists: PodExists | None = None,
    ) -> None:
        self.storage = storage
        self.client = client
        self.node_lookup = node_lookup
        self.bind_timeout = bind_timeout
        self.poll_interval = poll_interval
        self.pod_exists = pod_exists
        self.pv_cache: AssumeCache[PersistentVolumeView] = AssumeCache(
            storage.volumes, PV_DESCRIPTION
        )
        self.pvc_cache: AssumeCache[PersistentVolumeClaimView] = AssumeCache(
            storage.claims, PVC_DESCRIPTION
        )

    # -- PreFilter ---------------------------------------------------------------------------

    def get_pod_volume_claims(self, pod: PodView) -> PodVolumeClaims:
        """The pod's claims split into bound, unbound with delayed binding (the scheduler binds
        those) and unbound immediate or pre-bound ones (the PV controller should have bound
        those already), plus the PVs of each delayed claim's class."""
        claims = PodVolumeClaims()
        for pod_claim in pod_claims(pod):
            bound, pvc = self._is_volume_bound(pod, pod_claim.name, pod_claim.ephemeral)
            if bound:
                claims.bound_claims.append(pvc)
            elif self._is_delay_binding_mode(pvc) and not pvc.volume_name:
                claims.unbound_claims_delay_binding.append(pvc)
            else:
                # Immediate binding, or pre-bound to a PV: should have been bound already.
                claims.unbound_claims_immediate.append(pvc)
        if claims.unbound_claims_delay_binding:
            by_class = claims.unbound_volumes_delay_binding
            for pvc in claims.unbound_claims_delay_binding:
                by_class.setdefault(pvc.storage_class_name, [])
            # One pass over the (assumed or informer's) PVs for all the classes needed.
            for pv in self.pv_cache.list():
                volumes = by_class.get(pv.storage_class_name)
                if volumes is not None:
                    volumes.append(pv)
        return claims

    def _is_volume_bound(
        self, pod: PodView, claim_name: str, ephemeral: bool
    ) -> tuple[bool, PersistentVolumeClaimView]:
        key = f"{pod.namespace}/{claim_name}"
        try:
            pvc = self.pvc_cache.get(key)
        except NotFoundError as err:
            raise BindingError(f'error getting PVC "{key}": {err}') from None
        if ephemeral:
            problem = volume_is_for_pod(pod, pvc)
            if problem is not None:
                raise BindingError(problem)
        return is_pvc_fully_bound(pvc), pvc

    def _is_delay_binding_mode(self, pvc: PersistentVolumeClaimView) -> bool:
        """Upstream's IsDelayBindingMode: a claim without class, or whose class is missing, is
        in immediate mode."""
        if not pvc.storage_class_name:
            return False
        storage_class = self.storage.storage_class(pvc.storage_class_name)
        if storage_class is None:
            return False
        return storage_class.volume_binding_mode == "WaitForFirstConsumer"

    def are_pod_volumes_bound(self, pod: PodView) -> bool:
        try:
            return all(
                self._is_volume_bound(pod, claim.name, claim.ephemeral)[0]
                for claim in pod_claims(pod)
            )
        except (BindingError, MalformedObject):
            return False

    # -- Filter ------------------------------------------------------------------------------

    def find_pod_volumes(
        self, pod: PodView, claims: PodVolumeClaims, node: NodeView
    ) -> tuple[PodVolumes, list[str]]:
        """(what the node needs for the pod, why it cannot run it); BindingError when
        something is wrong beyond this node."""
        bound_satisfied = True
        unbound_satisfied = True
        sufficient_storage = True
        bound_pvs_found = True
        static: list[BindingInfo] | None = None
        dynamic: list[DynamicProvision] | None = None
        if claims.bound_claims:
            bound_satisfied, bound_pvs_found = self._check_bound_claims(claims.bound_claims, node)
        if claims.unbound_claims_delay_binding:
            to_match: list[PersistentVolumeClaimView] = []
            to_provision: list[PersistentVolumeClaimView] = []
            selected_elsewhere = False
            for claim in claims.unbound_claims_delay_binding:
                selected = claim.annotations.get(SELECTED_NODE_ANNOTATION)
                if selected is None:
                    to_match.append(claim)
                elif selected != node.name:
                    # Already being provisioned for another node: fast path.
                    selected_elsewhere = True
                    break
                else:
                    to_provision.append(claim)
            if selected_elsewhere:
                unbound_satisfied = False
            else:
                if to_match:
                    unbound_satisfied, static, unmatched = self._find_matching_volumes(
                        to_match, claims.unbound_volumes_delay_binding, node
                    )
                    to_provision.extend(unmatched)
                if to_provision:
                    unbound_satisfied, sufficient_storage, dynamic = self._check_volume_provisions(
                        to_provision, node
                    )
        reasons = []
        if not bound_satisfied:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_satisfied:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not sufficient_storage:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not bound_pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return PodVolumes(static or None, dynamic or None), reasons

    def _check_bound_claims(
        self, claims: list[PersistentVolumeClaimView], node: NodeView
    ) -> tuple[bool, bool]:
        """(node affinity of every bound PV fits, every bound PV exists)."""
        for pvc in claims:
            try:
                pv = self.pv_cache.get(pvc.volume_name)
            except NotFoundError:
                return True, False
            if check_node_affinity(pv, node.labels) is not None:
                return False, True
        return True, True

    def bound_volumes_fit_every_node(self, claims: list[PersistentVolumeClaimView]) -> bool:
        """Whether `_check_bound_claims` passes on any node whatever its labels: every bound
        PV exists and has no node affinity."""
        for pvc in claims:
            try:
                pv = self.pv_cache.get(pvc.volume_name)
            except NotFoundError:
                return False
            if pv.node_affinity is not None:
                return False
        return True

    def _find_matching_volumes(
        self,
        claims: list[PersistentVolumeClaimView],
        volumes_by_class: Mapping[str, list[PersistentVolumeView]],
        node: NodeView,
    ) -> tuple[bool, list[BindingInfo], list[PersistentVolumeClaimView]]:
        """(every claim matched, the bindings, the claims left for provisioning). Claims are
        matched smallest request first, each to the smallest PV that fits."""
        chosen: dict[str, PersistentVolumeView] = {}
        bindings: list[BindingInfo] = []
        unmatched: list[PersistentVolumeClaimView] = []
        found = True
        for pvc in sorted(claims, key=lambda claim: claim.requested_storage):
            pvs = volumes_by_class.get(pvc.storage_class_name, ())
            pv = find_matching_volume(pvc, pvs, node.labels, chosen)
            if pv is None:
                unmatched.append(pvc)
                found = False
                continue
            # A chosen PV must not be chosen again for another claim of the pod.
            chosen[pv.name] = pv
            bindings.append(BindingInfo(pvc, pv))
        return found, bindings, unmatched

    def _check_volume_provisions(
        self, claims: list[PersistentVolumeClaimView], node: NodeView
    ) -> tuple[bool, bool, list[DynamicProvision] | None]:
        """(every claim can be provisioned for the node, there is room for them, the
        provisionings); the first claim that fails decides."""
        provisions: list[DynamicProvision] = []
        for claim in claims:
            class_name = claim.storage_class_name
            if not class_name:
                raise BindingError(f'no class for claim "{claim_key(claim)}"')
            storage_class = self.storage.storage_class(class_name)
            if storage_class is None:
                raise BindingError(f'failed to find storage class "{class_name}"')
            provisioner = storage_class.provisioner
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, None
            if not match_topology_selector_terms(storage_class.allowed_topologies, node.labels):
                return False, True, None
            sufficient, capacity = self._has_enough_capacity(
                provisioner, claim, storage_class, node
            )
            if not sufficient:
                return True, False, None
            provisions.append(DynamicProvision(claim, capacity))
        return True, True, provisions

    def _has_enough_capacity(
        self,
        provisioner: str,
        claim: PersistentVolumeClaimView,
        storage_class: StorageClassView,
        node: NodeView,
    ) -> tuple[bool, CSIStorageCapacityView | None]:
        """Only CSI drivers that opt in (CSIDriver spec.storageCapacity) are checked: some
        CSIStorageCapacity of the class that the node can reach must fit the request."""
        if not has_storage_request(claim):
            return True, None
        driver = self.storage.csi_driver(provisioner)
        if driver is None or not driver.storage_capacity:
            return True, None
        size = claim.requested_storage
        for capacity in self.storage.capacities.list():
            if (
                capacity.storage_class_name == storage_class.name
                and capacity_sufficient(capacity, size)
                and node_has_access(node.labels, capacity)
            ):
                return True, capacity
        return False, None

    # -- Reserve / Unreserve ---------------------------------------------------------------------

    def assume_pod_volumes(self, pod: PodView, node_name: str, volumes: PodVolumes) -> bool:
        """Assume the chosen PVs bound to their claims and the claims to provision selected
        for the node; True when every claim is bound already (nothing to do)."""
        if self.are_pod_volumes_bound(pod):
            return True
        new_bindings: list[BindingInfo] = []
        for binding in volumes.static_bindings or ():
            try:
                new_pv, dirty = get_bind_volume_to_claim(binding.pv, binding.pvc)
                if dirty:
                    self.pv_cache.assume(new_pv)
            except (AssumeCacheError, MalformedObject) as err:
                self._revert_pvs(new_bindings)
                raise BindingError(str(err)) from None
            new_bindings.append(BindingInfo(binding.pvc, new_pv))
        new_provisions: list[DynamicProvision] = []
        for provision in volumes.dynamic_provisions or ():
            try:
                claim = with_annotation(provision.pvc, SELECTED_NODE_ANNOTATION, node_name)
                self.pvc_cache.assume(claim)
            except (AssumeCacheError, MalformedObject) as err:
                self._revert_pvs(new_bindings)
                self._revert_pvcs(p.pvc for p in new_provisions)
                raise BindingError(str(err)) from None
            new_provisions.append(DynamicProvision(claim))
        volumes.static_bindings = new_bindings
        volumes.dynamic_provisions = new_provisions
        return False

    def revert_assumed_pod_volumes(self, volumes: PodVolumes) -> None:
        self._revert_pvs(volumes.static_bindings or ())
        self._revert_pvcs(p.pvc for p in volumes.dynamic_provisions or ())

    def _revert_pvs(self, bindings: Any) -> None:
        for binding in bindings:
            self.pv_cache.restore(binding.pv.name)

    def _revert_pvcs(self, claims: Any) -> None:
        for claim in claims:
            self.pvc_cache.restore(claim_key(claim))

    # -- PreBind ---------------------------------------------------------------------------------

    async def bind_pod_volumes(self, pod: PodView, node_name: str, volumes: PodVolumes) -> None:
        """Write the assumed bindings and provisionings, then wait (up to the bind timeout)
        until the PV controller has bound every claim; BindingError if it fails."""
        bindings = volumes.static_bindings
        claims = (
            None
            if volumes.dynamic_provisions is None
            else [provision.pvc for provision in volumes.dynamic_provisions]
        )
        await self.bind_api_update(pod, bindings, claims)
        try:
            await self._wait_until_bound(pod, node_name, bindings, claims)
        except BindingError as err:
            raise BindingError(f"binding volumes: {err}") from None

    async def _wait_until_bound(
        self,
        pod: PodView,
        node_name: str,
        bindings: list[BindingInfo] | None,
        claims: list[PersistentVolumeClaimView] | None,
    ) -> None:
        """Check on every change of a claim or volume the informers deliver, and at least
        every poll interval, until bound, a check fails or the timeout passes."""
        if self.bind_timeout <= 0:
            raise BindingError("context deadline exceeded")
        changed = asyncio.Event()

        def on_change(old: Any, new: Any) -> None:
            changed.set()

        unsubscribe = (
            self.storage.claims.subscribe(on_change),
            self.storage.volumes.subscribe(on_change),
        )
        try:
            async with asyncio.timeout(self.bind_timeout):
                while not self.check_bindings(pod, node_name, bindings, claims):
                    try:
                        async with asyncio.timeout(self.poll_interval):
                            await changed.wait()
                    except TimeoutError:
                        pass
                    changed.clear()
        except TimeoutError:
            raise BindingError("context deadline exceeded") from None
        finally:
            for cancel in unsubscribe:
                cancel()

    async def bind_api_update(
        self,
        pod: PodView,
        bindings: list[BindingInfo] | None,
        claims: list[PersistentVolumeClaimView] | None,
    ) -> None:
        """PUT each bound PV and each claim to provision; on failure the assumptions not yet
        written are reverted (those written stay until the informer catches up)."""
        pod_name = f"{pod.namespace}/{pod.name}"
        if bindings is None:
            raise BindingError(f'failed to get cached bindings for pod "{pod_name}"')
        if claims is None:
            raise BindingError(f'failed to get cached claims to provision for pod "{pod_name}"')
        bound = provisioned = 0
        try:
            for binding in bindings:
                binding.pv = await self._update(
                    f"/api/v1/persistentvolumes/{binding.pv.name}",
                    "persistentvolumes",
                    binding.pv.name,
                    _body(binding.pv.raw, "PersistentVolume"),
                    PersistentVolumeView.from_dict,
                )
                bound += 1
            for i, claim in enumerate(claims):
                claims[i] = await self._update(
                    f"/api/v1/namespaces/{claim.namespace}/persistentvolumeclaims/{claim.name}",
                    "persistentvolumeclaims",
                    claim.name,
                    _body(claim.raw, "PersistentVolumeClaim"),
                    PersistentVolumeClaimView.from_dict,
                )
                provisioned += 1
        finally:
            if bound < len(bindings):
                self._revert_pvs(bindings[bound:])
            if provisioned < len(claims):
                self._revert_pvcs(claims[provisioned:])

    async def _update(
        self,
        path: str,
        resource: str,
        name: str,
        body: Mapping[str, Any],
        parse: Callable[[Mapping[str, Any]], Any],
    ) -> Any:
        if self.client is None:
            raise BindingError(f'{resource} "{name}": no API client')
        try:
            status, answer = await self.client.request("PUT", path, body=body)
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as err:  # transport errors: the update failed
            raise BindingError(f'{resource} "{name}": {err}') from None
        if not 200 <= status < 300:
            raise BindingError(_api_error(status, answer, resource, name))
        if not isinstance(answer, Mapping):
            raise BindingError(f'{resource} "{name}": malformed response: expected an object')
        try:
            return parse(answer)
        except MalformedObject as err:
            raise BindingError(f'{resource} "{name}": malformed response: {err}') from None

    def check_bindings(
        self,
        pod: PodView,
        node_name: str,
        bindings: list[BindingInfo] | None,
        claims: list[PersistentVolumeClaimView] | None,
    ) -> bool:
        """True when every PV and claim operated on is bound; BindingError when the binding
        must be retried from scratch. Reads the informer's objects, never assumed ones: those
        may be assumed again by later pods, the API objects are shared with the PV controller
        and the provisioners."""
        pod_name = f"{pod.namespace}/{pod.name}"
        if bindings is None:
            raise BindingError(f'failed to get cached bindings for pod "{pod_name}"')
        if claims is None:
            raise BindingError(f'failed to get cached claims to provision for pod "{pod_name}"')
        node = self.node_lookup(node_name)
        if node is None:
            raise BindingError(f'failed to get node "{node_name}": node "{node_name}" not found')
        if self.pod_exists is not None and not self.pod_exists(pod):
            # When the pod is deleted, binding is cancelled.
            raise BindingError(f'pod does not exist any more: pod "{pod.name}" not found')
        for binding in bindings:
            try:
                pv = self.pv_cache.get_api(binding.pv.name)
                pvc = self.pvc_cache.get_api(claim_key(binding.pvc))
            except NotFoundError as err:
                raise BindingError(f"failed to check binding: {err}") from None
            if _newer(binding.pv, pv, PV_DESCRIPTION):
                # We updated the PV; wait until the informer has the update.
                return False
            reason = check_node_affinity(pv, node.labels)
            if reason is not None:
                raise BindingError(
                    f'pv "{pv.name}" node affinity doesn\'t match node "{node.name}": {reason}'
                )
            if pv.claim_ref is None or not pv.claim_ref.uid:
                # The PV controller's unbindVolume dropped the claimRef.
                raise BindingError(f'ClaimRef got reset for pv "{pv.name}"')
            if not is_pvc_fully_bound(pvc):
                return False
        for claim in claims:
            try:
                pvc = self.pvc_cache.get_api(claim_key(claim))
            except NotFoundError as err:
                raise BindingError(f"failed to check provisioning pvc: {err}") from None
            if _newer(claim, pvc, PVC_DESCRIPTION):
                return False
            if _annotations_unset(pvc):
                raise BindingError(f'selectedNode annotation reset for PVC "{pvc.name}"')
            if pvc.annotations.get(SELECTED_NODE_ANNOTATION, "") != node_name:
                # A provisioner that fails removes the annotation to have the pod rescheduled.
                raise BindingError(f'provisioning failed for PVC "{pvc.name}"')
            if pvc.volume_name:
                provisioned_pv = self.storage.volume(pvc.volume_name)
                if provisioned_pv is None:
                    # Maybe not seen yet; if it was deleted, the claim gets unbound.
                    return False
                reason = check_node_affinity(provisioned_pv, node.labels)
                if reason is not None:
                    raise BindingError(
                        f'pv "{provisioned_pv.name}" node affinity doesn\'t match node '
                        f'"{node.name}": {reason}'
                    )
            if not is_pvc_fully_bound(pvc):
                return False
        return True


def _newer(ours: Any, informers: Any, description: str) -> bool:
    """Whether the object we wrote is newer than the informer's (an unparsable version
    compares equal)."""
    try:
        return parse_resource_version(ours, description, "") > parse_resource_version(
            informers, description, ""
        )
    except AssumeCacheError:
        return False


def _annotations_unset(pvc: PersistentVolumeClaimView) -> bool:
    meta = pvc.raw.get("metadata")
    return not isinstance(meta, Mapping) or meta.get("annotations") is None


def _body(raw: Mapping[str, Any], kind: str) -> dict[str, Any]:
    body = dict(raw)
    body.setdefault("apiVersion", "v1")
    body.setdefault("kind", kind)
    return body


def _api_error(status: int, answer: Any, resource: str, name: str) -> str:
    """The API server's message (a Status names the object), else the HTTP status."""
    message = answer.get("message") if isinstance(answer, Mapping) else None
    if not isinstance(message, str) or not message:
        message = f"HTTP {status}"
    if name not in message:
        message = f'{resource} "{name}": {message}'
    return message
