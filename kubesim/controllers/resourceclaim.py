"""The resourceclaim controller, as kube-controller-manager runs it.

Upstream: pkg/controller/resourceclaim/controller.go. For a pod it creates the ResourceClaims of
its `resourceClaimTemplateName` entries (generateName `<pod>-<entry>-`, the pod as controlling
owner, the pod-claim-name annotation, the template's labels, annotations and spec), records them
in `pod.status.resourceClaimStatuses`, and reserves allocated claims for pods that are already
on a node (syncPod, handleClaim). For a claim it drops `status.reservedFor` entries of pods that
are gone, replaced or done, clears the allocation once nobody uses a claim the scheduler
allocated (it carries the builtin finalizer), and deletes a generated claim whose pod is done
(syncClaim). Generated claims of deleted pods go with the garbage collector (owner references).

Items carry their kind in the manager's namespace slot: "pod <ns>" or "claim <ns>".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesim import errors
from kubesim.api import Api
from kubesim.controllers import common as c
from kubesim.controllers.manager import Due, Key
from kubesim.meta import Obj
from kubesim.patch import copy_json
from kubesim.watch import Event

CLAIMS = "resource.k8s.io/resourceclaims"
TEMPLATES = "resource.k8s.io/resourceclaimtemplates"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
# set by the scheduler on the claims it allocates; lets this controller deallocate them
BUILTIN_FINALIZER = "resource.kubernetes.io/delete-protection"
RESERVED_FOR_MAX_SIZE = 256
_MAX_BASE_LEN = 57  # room for the API server's 5 random characters within 63


def _slot(kind: str, namespace: str) -> str:
    return f"{kind} {namespace}"


def claim_name_for(pod: Obj, entry: dict[str, Any]) -> tuple[str | None, bool, bool]:
    """resourceclaim.Name: (claim name or None, whether the claim must be owned by the pod,
    whether it is known at all). A template entry's claim is known once recorded in
    pod.status.resourceClaimStatuses (a recorded null name: no claim is needed)."""
    if entry.get("resourceClaimName"):
        return str(entry["resourceClaimName"]), False, True
    if entry.get("resourceClaimTemplateName"):
        for status in c.status(pod).get("resourceClaimStatuses") or []:
            if isinstance(status, dict) and status.get("name") == entry.get("name"):
                name = status.get("resourceClaimName")
                return (str(name) if name else None), True, True
        return None, True, False
    return None, False, True


def pod_claim_entries(pod: Obj) -> list[dict[str, Any]]:
    claims = (pod.get("spec") or {}).get("resourceClaims") or []
    return [entry for entry in claims if isinstance(entry, dict)]


def pod_done(pod: Obj) -> bool:
    """isPodDone: it is certain that none of its containers runs or ever will."""
    return c.terminal(pod) or (c.deleting(pod) and not (pod.get("spec") or {}).get("nodeName"))


def owning_pod(claim: Obj) -> tuple[str, str]:
    """(name, uid) of the pod a claim was generated for; ("", "") if none."""
    for ref in c.owner_refs(claim):
        if ref.get("controller") and ref.get("apiVersion") == "v1" and ref.get("kind") == "Pod":
            return str(ref.get("name") or ""), str(ref.get("uid") or "")
    return "", ""


def _generate_name(pod_name: str, entry_name: str) -> str:
    generate_name = f"{pod_name}-{entry_name}-"
    if len(generate_name) > _MAX_BASE_LEN:  # truncate both, proportionally (as upstream)
        total = len(generate_name)
        generate_name = (
            pod_name[: len(pod_name) * _MAX_BASE_LEN // total]
            + "-"
            + entry_name[: len(entry_name) * _MAX_BASE_LEN // total]
        )
    return generate_name


class ResourceClaimController:
    name = "ResourceClaim"
    watches: tuple[str, ...] = (c.PODS, CLAIMS)
    owned_only: tuple[str, ...] = ()

    def __init__(self, api: Api) -> None:
        self.api = api

    # ---- events ------------------------------------------------------------------------------
    def on_event(self, key: str, event: Event) -> Iterable[Due]:
        obj = event.obj
        namespace = obj["metadata"].get("namespace", "")
        if key == CLAIMS:
            if event.type == "DELETED":
                return [(_slot("pod", namespace), name, 0.0) for name in self._users(obj)]
            due: list[Due] = [(_slot("claim", namespace), obj["metadata"]["name"], 0.0)]
            due += [(_slot("pod", namespace), name, 0.0) for name in self._users(obj)]
            return due
        entries = (obj.get("spec") or {}).get("resourceClaims")
        if not entries:
            return ()  # a pod without claims: nothing to do (most pods; kept cheap)
        due = []
        if event.type != "DELETED":
            due.append((_slot("pod", namespace), obj["metadata"]["name"], 0.0))
        if event.type == "DELETED" or pod_done(obj):
            for claim in self._claims_of(obj):
                due.append((_slot("claim", namespace), claim, 0.0))
        return due

    def _claims_of(self, pod: Obj) -> list[str]:
        """The claims a pod uses, and those generated for it."""
        names = {
            name for entry in pod_claim_entries(pod) if (name := claim_name_for(pod, entry)[0])
        }
        pod_uid = c.uid(pod)
        for claim in self.api.store.items(CLAIMS, pod["metadata"].get("namespace", "")):
            if owning_pod(claim)[1] == pod_uid:
                names.add(c.name(claim))
        return sorted(names)

    def _users(self, claim: Obj) -> list[str]:
        """Pods that reference this claim by name or have it recorded in their status."""
        claim_name = c.name(claim)
        users = []
        for pod in self.api.store.items(c.PODS, claim["metadata"].get("namespace", "")):
            if any(claim_name_for(pod, entry)[0] == claim_name for entry in pod_claim_entries(pod)):
                users.append(c.name(pod))
        return users

    def initial(self) -> Iterable[Key]:
        work: list[Key] = []
        for pod in self.api.store.items(c.PODS):
            if pod_claim_entries(pod):
                work.append((_slot("pod", pod["metadata"].get("namespace", "")), c.name(pod)))
        for claim in self.api.store.items(CLAIMS):
            work.append((_slot("claim", claim["metadata"].get("namespace", "")), c.name(claim)))
        return work

    async def sync(self, namespace: str, name: str) -> Iterable[Due]:
        kind, _, namespace = namespace.partition(" ")
        if kind == "pod":
            await self._sync_pod(namespace, name)
        else:
            await self._sync_claim(namespace, name)
        return []

    # ---- pods (syncPod, handleClaim) ---------------------------------------------------------
    async def _sync_pod(self, namespace: str, name: str) -> None:
        pod = self.api.store.get(c.PODS, namespace, name)
        if pod is None or c.deleting(pod):
            return
        new_statuses: dict[str, str] = {}
        for entry in pod_claim_entries(pod):
            created = await self._handle_claim(pod, entry)
            if created is not None:
                new_statuses[str(entry.get("name"))] = created
        if new_statuses:
            pod = await self._record_statuses(pod, new_statuses)
            if pod is None:
                return
        if not (pod.get("spec") or {}).get("nodeName"):
            return  # the scheduler reserves the claims of the pods it binds
        for entry in pod_claim_entries(pod):
            claim_name, check_owner, _ = claim_name_for(pod, entry)
            if not claim_name:
                continue
            claim = self.api.store.get(CLAIMS, namespace, claim_name)
            if claim is None or (check_owner and owning_pod(claim)[1] != c.uid(pod)):
                continue
            status = c.status(claim)
            reserved = status.get("reservedFor") or []
            if (
                status.get("allocation") is not None
                and len(reserved) < RESERVED_FOR_MAX_SIZE
                and not any(r.get("uid") == c.uid(pod) for r in reserved if isinstance(r, dict))
            ):
                await self._write_claim_status(
                    claim,
                    {
                        **status,
                        "reservedFor": [
                            *reserved,
                            {"resource": "pods", "name": c.name(pod), "uid": c.uid(pod)},
                        ],
                    },
                )

    async def _handle_claim(self, pod: Obj, entry: dict[str, Any]) -> str | None:
        """The name of a claim newly created (or found orphaned) for a template entry; None when
        nothing is to be recorded."""
        namespace = pod["metadata"].get("namespace", "")
        claim_name, _, known = claim_name_for(pod, entry)
        template_name = entry.get("resourceClaimTemplateName")
        if not template_name:
            return None
        if known:
            if claim_name is None:
                return None  # recorded as not needed
            existing = self.api.store.get(CLAIMS, namespace, claim_name)
            if existing is not None and owning_pod(existing)[1] == c.uid(pod):
                return None  # created already
        claim = self._find_generated(pod, str(entry.get("name")))
        if claim is None:
            template = self.api.store.get(TEMPLATES, namespace, str(template_name))
            if template is None:
                raise c.Malformed(
                    f"PodResourceClaim {entry.get('name')}: resource claim "
                    f'template "{template_name}" not found'
                )
            template_spec = c.spec(template)
            template_meta = template_spec.get("metadata") or {}
            annotations = {
                **(template_meta.get("annotations") or {}),
                POD_CLAIM_NAME_ANNOTATION: str(entry.get("name")),
            }
            meta: dict[str, Any] = {
                "generateName": _generate_name(c.name(pod), str(entry.get("name"))),
                "namespace": namespace,
                "ownerReferences": [c.new_controller_ref(pod, "v1", "Pod")],
                "annotations": annotations,
            }
            if template_meta.get("labels"):
                meta["labels"] = dict(template_meta["labels"])
            body = {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": meta,
                "spec": copy_json(template_spec.get("spec") or {}),
            }
            claim = await self.api.create(c.resource(CLAIMS), namespace, body)
        return c.name(claim)

    def _find_generated(self, pod: Obj, entry_name: str) -> Obj | None:
        """findPodResourceClaim: a claim owned by the pod with the entry's annotation (created
        before the pod status could record it)."""
        pod_uid = c.uid(pod)
        for claim in self.api.store.items(CLAIMS, pod["metadata"].get("namespace", "")):
            annotations = claim["metadata"].get("annotations") or {}
            if (
                owning_pod(claim)[1] == pod_uid
                and annotations.get(POD_CLAIM_NAME_ANNOTATION) == entry_name
            ):
                return claim
        return None

    async def _record_statuses(self, pod: Obj, new: dict[str, str]) -> Obj | None:
        """pod.status.resourceClaimStatuses merged by name (upstream applies them)."""
        current = self.api.store.get(c.PODS, pod["metadata"].get("namespace", ""), c.name(pod))
        if current is None or c.uid(current) != c.uid(pod):
            return None
        status = dict(c.status(current))
        statuses = [
            s
            for s in status.get("resourceClaimStatuses") or []
            if isinstance(s, dict) and s.get("name") not in new
        ]
        statuses += [
            {"name": entry, "resourceClaimName": claim} for entry, claim in sorted(new.items())
        ]
        status["resourceClaimStatuses"] = statuses
        stored: Obj = await self.api.store.put(
            c.PODS, {**current, "metadata": dict(current["metadata"]), "status": status}, current
        )
        return stored

    # ---- claims (syncClaim) ------------------------------------------------------------------
    async def _sync_claim(self, namespace: str, name: str) -> None:
        claim = self.api.store.get(CLAIMS, namespace, name)
        if claim is None:
            return
        status = c.status(claim)
        reserved = [r for r in status.get("reservedFor") or [] if isinstance(r, dict)]
        valid = [r for r in reserved if not self._stale(namespace, r)]
        finalizers = list(claim["metadata"].get("finalizers") or [])
        builtin = BUILTIN_FINALIZER in finalizers
        if len(valid) < len(reserved):
            new_status = {**status, "reservedFor": valid}
            if not valid:
                new_status.pop("reservedFor")
                if builtin:  # allocated by the scheduler: "deallocate" by clearing it
                    new_status.pop("allocation", None)
            claim = await self._write_claim_status(claim, new_status)
            if claim is None:
                return
            if builtin and c.status(claim).get("allocation") is None:
                kept = [f for f in finalizers if f != BUILTIN_FINALIZER]
                claim = await c.write_meta(self.api, CLAIMS, claim, {"finalizers": kept or None})
                if claim is None:
                    return
        elif builtin and c.deleting(claim) and not valid:
            if status.get("allocation") is not None:
                cleared = {k: v for k, v in status.items() if k != "allocation"}
                claim = await self._write_claim_status(claim, cleared)
                if claim is None:
                    return
            kept = [f for f in finalizers if f != BUILTIN_FINALIZER]
            claim = await c.write_meta(self.api, CLAIMS, claim, {"finalizers": kept or None})
            if claim is None:
                return
        if not valid:
            pod_name, pod_uid = owning_pod(claim)
            if pod_name:
                pod = self.api.store.get(c.PODS, namespace, pod_name)
                if pod is not None and (c.uid(pod) != pod_uid or pod_done(pod)):
                    await c.delete(self.api, CLAIMS, claim)

    def _stale(self, namespace: str, ref: dict[str, Any]) -> bool:
        """A reservedFor entry of a pod that is gone, replaced or done."""
        if ref.get("apiGroup") or ref.get("resource") != "pods":
            return False  # upstream errors on other consumers; kubesim keeps them
        pod = self.api.store.get(c.PODS, namespace, str(ref.get("name") or ""))
        return pod is None or c.uid(pod) != ref.get("uid") or pod_done(pod)

    async def _write_claim_status(self, claim: Obj, status: dict[str, Any]) -> Obj | None:
        """PUT resourceclaims/{name}/status (validated as upstream); None if the claim changed
        or went meanwhile."""
        body = {**claim, "metadata": dict(claim["metadata"]), "status": status}
        if not status:
            body.pop("status")
        try:
            result: Obj = await self.api.update(
                c.resource(CLAIMS),
                claim["metadata"]["namespace"],
                c.name(claim),
                body,
                subresource="status",
            )
        except errors.ApiError as exc:
            if exc.code in (404, 409):
                return None
            raise
        return result
