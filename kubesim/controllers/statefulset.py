"""StatefulSets: pods name-0..N-1 with stable identities, created in order (OrderedReady: the
next only once every earlier one is Running and Ready; Parallel: all at once), removed from the
highest ordinal, with PVCs from volumeClaimTemplates named <template>-<set>-<ordinal> (which
kubesim/storage binds and provisions).

Upstream: pkg/controller/statefulset/stateful_set_control.go (updateStatefulSet, monotonic
ordering) and stateful_set_utils.go (getPersistentVolumeClaimName, updateIdentity,
updateStorage, the statefulset.kubernetes.io/pod-name and apps.kubernetes.io/pod-index labels).
Rolling replacement of pods whose template changed is not simulated.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesim import errors, events
from kubesim.api import Api
from kubesim.controllers import common as c
from kubesim.controllers.deployment import template_hash
from kubesim.controllers.manager import Due, Key
from kubesim.meta import Obj
from kubesim.patch import copy_json
from kubesim.watch import Event

STATEFULSETS = "apps/statefulsets"
PVCS = "persistentvolumeclaims"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_HASH = "controller-revision-hash"


def _ordinal(set_name: str, pod: Obj) -> int | None:
    suffix = c.name(pod).removeprefix(f"{set_name}-")
    return int(suffix) if suffix.isdigit() and c.name(pod) != suffix else None


class StatefulSetController:
    name = "StatefulSet"
    watches: tuple[str, ...] = (STATEFULSETS, c.PODS)
    owned_only: tuple[str, ...] = (c.PODS,)

    def __init__(self, api: Api) -> None:
        self.api = api

    def on_event(self, key: str, event: Event) -> Iterable[Due]:
        if key == STATEFULSETS:
            return (
                []
                if event.type == "DELETED"
                else [(event.namespace, event.obj["metadata"]["name"], 0.0)]
            )
        owner = c.owned_by(event.obj, "StatefulSet")
        return [] if owner is None else [(event.namespace, owner, 0.0)]

    def initial(self) -> Iterable[Key]:
        return [
            (s["metadata"].get("namespace", ""), s["metadata"]["name"])
            for s in self.api.store.items(STATEFULSETS)
        ]

    async def sync(self, namespace: str, name: str) -> Iterable[Due]:
        sts = self.api.store.get(STATEFULSETS, namespace, name)
        if sts is None or c.deleting(sts):
            return []
        spec = c.spec(sts)
        replicas = c.int_field(spec, "replicas", 1)
        revision = f"{name}-{template_hash(spec.get('template') or {})}"
        parallel = spec.get("podManagementPolicy") == "Parallel"
        pods: dict[int, Obj] = {}
        for pod in c.controlled_pods(self.api, sts):
            ordinal = _ordinal(name, pod)
            if ordinal is not None:
                pods[ordinal] = pod
        for ordinal in range(replicas):
            member: Obj | None = pods.get(ordinal)
            if member is not None and c.terminal(member) and not c.deleting(member):
                await self._delete(sts, member)  # a failed/succeeded one is recreated
                member = None
                if not parallel:
                    break
            if member is None:
                if c.deleting(pods.get(ordinal, {"metadata": {}})):
                    break  # wait for the old incarnation to go
                await self._create(sts, ordinal, revision)
                if not parallel:
                    break
                continue
            if not parallel and not (
                c.status(member).get("phase") == "Running" and c.ready(member)
            ):
                break  # OrderedReady: the next waits for this one
        condemned = sorted((o for o in pods if o >= replicas), reverse=True)
        for ordinal in condemned:
            condemned_pod = pods[ordinal]
            if not c.deleting(condemned_pod):
                await self._delete(sts, condemned_pod)
            if not parallel:
                break  # one at a time, from the highest ordinal
        await self._write_status(sts, replicas, revision)
        return []

    async def _create(self, sts: Obj, ordinal: int, revision: str) -> None:
        set_name = c.name(sts)
        pod_name = f"{set_name}-{ordinal}"
        ref = c.new_controller_ref(sts, "apps/v1", "StatefulSet")
        pod = c.pod_from_template(
            sts,
            ref,
            pod_name,
            generate=False,
            extra_labels={
                POD_NAME_LABEL: pod_name,
                POD_INDEX_LABEL: str(ordinal),
                REVISION_HASH: revision,
            },
        )
        pod_spec: dict[str, Any] = pod["spec"]
        pod_spec["hostname"] = pod_name
        if c.spec(sts).get("serviceName"):
            pod_spec["subdomain"] = c.spec(sts)["serviceName"]
        volumes = [v for v in pod_spec.get("volumes") or [] if isinstance(v, dict)]
        for template in c.spec(sts).get("volumeClaimTemplates") or []:
            if not isinstance(template, dict):
                raise c.Malformed("volumeClaimTemplates holds a non-object")
            claim_name = f"{(template.get('metadata') or {}).get('name')}-{set_name}-{ordinal}"
            if await self._ensure_claim(sts, template, claim_name):
                await self._event(
                    sts,
                    "SuccessfulCreate",
                    f"create Claim {claim_name} Pod {pod_name} in StatefulSet {set_name} success",
                )
            volume_name = (template.get("metadata") or {}).get("name")
            volumes = [v for v in volumes if v.get("name") != volume_name]
            volumes.append(
                {"name": volume_name, "persistentVolumeClaim": {"claimName": claim_name}}
            )
        if volumes:
            pod_spec["volumes"] = volumes
        try:
            created = await c.create(self.api, c.PODS, pod)
        except errors.ApiError as exc:
            await self._event(
                sts,
                "FailedCreate",
                f"create Pod {pod_name} in StatefulSet {set_name} failed error: {exc.message}",
                events.WARNING,
            )
            raise
        if created is not None:
            await self._event(
                sts,
                "SuccessfulCreate",
                f"create Pod {pod_name} in StatefulSet {set_name} successful",
            )

    async def _delete(self, sts: Obj, pod: Obj) -> None:
        if await c.delete(self.api, c.PODS, pod):
            await self._event(
                sts,
                "SuccessfulDelete",
                f"delete Pod {c.name(pod)} in StatefulSet {c.name(sts)} successful",
            )

    async def _event(
        self, sts: Obj, reason: str, message: str, event_type: str = events.NORMAL
    ) -> None:
        """StatefulPodControl.recordPodEvent / recordClaimEvent (stateful_pod_control.go)."""
        await c.record(
            self.api,
            events.STATEFULSET_CONTROLLER,
            sts,
            "StatefulSet",
            "apps/v1",
            event_type,
            reason,
            message,
        )

    async def _ensure_claim(self, sts: Obj, template: dict[str, Any], claim_name: str) -> bool:
        """Whether the claim was created now."""
        namespace = sts["metadata"].get("namespace", "")
        if self.api.store.get(PVCS, namespace, claim_name) is not None:
            return False  # claims outlive their pods (whenScaled/whenDeleted: Retain by default)
        template_meta = template.get("metadata") or {}
        labels = {
            **(template_meta.get("labels") or {}),
            **(c.selector_of(sts).get("matchLabels") or {}),
        }
        return None is not await c.create(
            self.api,
            PVCS,
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": claim_name,
                    "namespace": namespace,
                    "labels": labels,
                    **(
                        {"annotations": template_meta["annotations"]}
                        if template_meta.get("annotations")
                        else {}
                    ),
                },
                "spec": copy_json(template.get("spec") or {}),
            },
        )

    async def _write_status(self, sts: Obj, replicas: int, revision: str) -> None:
        pods = [p for p in c.controlled_pods(self.api, sts) if c.active(p)]
        ready = sum(1 for p in pods if c.ready(p))
        current = sum(
            1 for p in pods if (p["metadata"].get("labels") or {}).get(REVISION_HASH) == revision
        )
        new_status = {
            **c.status(sts),
            "observedGeneration": sts["metadata"].get("generation", 1),
            "replicas": len(pods),
            "readyReplicas": ready,
            "currentReplicas": current,
            "updatedReplicas": current,
            "availableReplicas": ready,
            "currentRevision": revision,
            "updateRevision": revision,
            "collisionCount": 0,
        }
        await c.write_status(self.api, STATEFULSETS, sts, new_status)
