"""Deployments: Deployment -> ReplicaSets (pod-template-hash) -> pods, rolling updates with
maxSurge/maxUnavailable, Recreate, scaling, revision history for `kubectl rollout undo`, and the
status `kubectl rollout status` reads.

Upstream: pkg/controller/deployment/{sync.go,rolling.go,recreate.go,progress.go} and
pkg/controller/deployment/util/deployment_util.go (annotations, NewRSNewReplicas,
ResolveFenceposts, conditions and their reasons/messages).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from kubesim import events
from kubesim.api import Api
from kubesim.controllers import common as c
from kubesim.controllers.manager import Due, Key
from kubesim.meta import rfc3339
from kubesim.patch import copy_json
from kubesim.watch import Event

DEPLOYMENTS = "apps/deployments"
REPLICASETS = "apps/replicasets"
HASH_LABEL = "pod-template-hash"  # appsv1.DefaultDeploymentUniqueLabelKey
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
# annotations a Deployment does not copy to its ReplicaSets (deployment_util.skipCopyAnnotation)
_NOT_COPIED = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        REVISION_HISTORY,
        DESIRED_REPLICAS,
        MAX_REPLICAS,
        "deprecated.deployment.rollback.to",
    }
)
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand


def template_hash(template: dict[str, Any], collision_count: int = 0) -> str:
    """controller.ComputeHash: FNV-32a of the template (here its canonical JSON, upstream its
    spew dump), encoded with rand.SafeEncodeString."""
    data = orjson.dumps(template, option=orjson.OPT_SORT_KEYS)
    if collision_count:
        data += str(collision_count).encode()
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE_ALPHABET[int(d) % len(_SAFE_ALPHABET)] for d in str(value))


def _without_hash(template: dict[str, Any]) -> dict[str, Any]:
    # a null (creationTimestamp: null, as kubectl writes templates) is Go's zero value
    meta = {k: v for k, v in (template.get("metadata") or {}).items() if v is not None}
    labels = dict(meta.get("labels") or {})
    labels.pop(HASH_LABEL, None)
    meta["labels"] = labels
    return {**template, "metadata": meta}


def equal_ignore_hash(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return _without_hash(a) == _without_hash(b)


def revision_of(rs: dict[str, Any]) -> int:
    try:
        return int((rs["metadata"].get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def _replicas(rs: dict[str, Any]) -> int:
    return c.int_field(c.spec(rs), "replicas", 0)


def _stat(rs: dict[str, Any], key: str) -> int:
    value = c.status(rs).get(key) or 0
    return value if isinstance(value, int) else 0


def _condition(
    kind: str, flag: str, reason: str, message: str, now: str, old: list[dict[str, Any]]
) -> dict[str, Any]:
    previous = next((x for x in old if x.get("type") == kind), None)
    transition = now
    if previous is not None and previous.get("status") == flag:
        transition = previous.get("lastTransitionTime", now)
    return {
        "type": kind,
        "status": flag,
        "lastUpdateTime": now,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    }


class DeploymentController:
    name = "Deployment"
    watches: tuple[str, ...] = (DEPLOYMENTS, REPLICASETS)
    owned_only: tuple[str, ...] = (REPLICASETS,)

    def __init__(self, api: Api) -> None:
        self.api = api

    def on_event(self, key: str, event: Event) -> Iterable[Due]:
        if key == DEPLOYMENTS:
            return (
                []
                if event.type == "DELETED"
                else [(event.namespace, event.obj["metadata"]["name"], 0.0)]
            )
        owner = c.owned_by(event.obj, "Deployment")
        return [] if owner is None else [(event.namespace, owner, 0.0)]

    def initial(self) -> Iterable[Key]:
        return [
            (d["metadata"].get("namespace", ""), d["metadata"]["name"])
            for d in self.api.store.items(DEPLOYMENTS)
        ]

    def _owned(self, d: dict[str, Any]) -> list[dict[str, Any]]:
        d_uid = c.uid(d)
        sets = [
            rs
            for rs in self.api.store.items(REPLICASETS, d["metadata"].get("namespace", ""))
            if (c.controller_ref(rs) or {}).get("uid") == d_uid
        ]
        return sorted(
            sets, key=lambda rs: (rs["metadata"].get("creationTimestamp", ""), c.name(rs))
        )

    async def sync(self, namespace: str, name: str) -> Iterable[Due]:
        d = self.api.store.get(DEPLOYMENTS, namespace, name)
        if d is None or c.deleting(d):
            return []
        spec = c.spec(d)
        template = spec.get("template")
        if not isinstance(template, dict):
            raise c.Malformed("spec.template is missing")
        c.selector_of(d)
        sets = self._owned(d)
        new_rs = next(
            (rs for rs in sets if equal_ignore_hash(c.spec(rs).get("template") or {}, template)),
            None,
        )
        old_sets = [rs for rs in sets if rs is not new_rs]
        paused = bool(spec.get("paused"))
        if not paused:
            new_rs = await self._ensure_new_rs(d, new_rs, old_sets)
            if (spec.get("strategy") or {}).get("type") == "Recreate":
                await self._recreate(d, new_rs, old_sets)
            else:
                await self._rolling(d, new_rs, old_sets)
        elif new_rs is not None and not any(_replicas(rs) for rs in old_sets):
            await self._scale(new_rs, c.int_field(spec, "replicas", 1), d)
        await self._cleanup(d)
        d = self.api.store.get(DEPLOYMENTS, namespace, name) or d
        sets = self._owned(d)
        new_rs = next(
            (rs for rs in sets if equal_ignore_hash(c.spec(rs).get("template") or {}, template)),
            None,
        )
        await self._write_status(d, new_rs, sets)
        return []

    # ---- the new ReplicaSet -----------------------------------------------------------------
    def _rs_annotations(
        self, d: dict[str, Any], revision: int, base: dict[str, Any]
    ) -> dict[str, Any]:
        replicas = c.int_field(c.spec(d), "replicas", 1)
        surge, _ = self._fenceposts(d)
        copied = {
            k: v
            for k, v in (d["metadata"].get("annotations") or {}).items()
            if k not in _NOT_COPIED
        }
        annotations = {
            **base,
            **copied,
            REVISION: str(revision),
            DESIRED_REPLICAS: str(replicas),
            MAX_REPLICAS: str(replicas + surge),
        }
        old_revision = base.get(REVISION)
        if old_revision and old_revision != str(revision):  # a rollback reuses an old set
            history = [h for h in str(base.get(REVISION_HISTORY, "")).split(",") if h]
            annotations[REVISION_HISTORY] = ",".join([*history, old_revision])
        return annotations

    async def _ensure_new_rs(
        self, d: dict[str, Any], new_rs: dict[str, Any] | None, old_sets: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        revision = max((revision_of(rs) for rs in old_sets), default=0) + 1
        if new_rs is not None:
            if revision_of(new_rs) < revision:
                annotations = self._rs_annotations(
                    d, revision, new_rs["metadata"].get("annotations") or {}
                )
                new_rs = (
                    await c.write_meta(self.api, REPLICASETS, new_rs, {"annotations": annotations})
                    or new_rs
                )
            await self._set_revision(d, revision_of(new_rs))
            return new_rs
        spec = c.spec(d)
        template = copy_json(spec["template"])
        collisions = int(c.status(d).get("collisionCount") or 0)
        pod_hash = template_hash(template, collisions)
        template_meta = template.setdefault("metadata", {})
        template_meta["labels"] = {**(template_meta.get("labels") or {}), HASH_LABEL: pod_hash}
        selector = copy_json(c.selector_of(d))
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: pod_hash}
        rs_spec = {
            "replicas": self._new_replicas(d, None, old_sets),
            "minReadySeconds": c.int_field(spec, "minReadySeconds", 0),
            "selector": selector,
            "template": template,
        }
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{c.name(d)}-{pod_hash}",
                "namespace": d["metadata"].get("namespace", ""),
                "labels": {**(template_meta.get("labels") or {})},
                "annotations": self._rs_annotations(d, revision, {}),
                "ownerReferences": [c.new_controller_ref(d, "apps/v1", "Deployment")],
            },
            "spec": rs_spec,
        }
        created = await c.create(self.api, REPLICASETS, rs)
        if created is None:  # the name is taken by a set not ours: hash again (collisionCount)
            await c.write_status(
                self.api, DEPLOYMENTS, d, {**c.status(d), "collisionCount": collisions + 1}
            )
            return None
        if rs_spec["replicas"] > 0:  # getNewReplicaSet (sync.go)
            await self._event(
                d, f"Scaled up replica set {c.name(created)} from 0 to {rs_spec['replicas']}"
            )
        await self._set_revision(d, revision)
        return created

    async def _set_revision(self, d: dict[str, Any], revision: int) -> None:
        current = self.api.store.get(DEPLOYMENTS, d["metadata"].get("namespace", ""), c.name(d))
        if current is None:
            return
        annotations = current["metadata"].get("annotations") or {}
        if annotations.get(REVISION) != str(revision):
            await self.api.store.put(
                DEPLOYMENTS,
                {
                    **current,
                    "metadata": {
                        **current["metadata"],
                        "annotations": {**annotations, REVISION: str(revision)},
                    },
                },
                current,
            )

    # ---- strategies --------------------------------------------------------------------------
    def _fenceposts(self, d: dict[str, Any]) -> tuple[int, int]:
        """ResolveFenceposts: (maxSurge rounded up, maxUnavailable rounded down; never both 0)."""
        spec = c.spec(d)
        strategy = spec.get("strategy") or {}
        if strategy.get("type") == "Recreate":
            return 0, 0
        rolling = strategy.get("rollingUpdate") or {}
        replicas = c.int_field(spec, "replicas", 1)
        surge = c.scaled_value(rolling.get("maxSurge", "25%"), replicas, True)
        unavailable = c.scaled_value(rolling.get("maxUnavailable", "25%"), replicas, False)
        if surge == 0 and unavailable == 0:
            unavailable = 1
        return surge, unavailable

    def _new_replicas(
        self, d: dict[str, Any], new_rs: dict[str, Any] | None, old_sets: list[dict[str, Any]]
    ) -> int:
        """NewRSNewReplicas."""
        replicas = c.int_field(c.spec(d), "replicas", 1)
        if (c.spec(d).get("strategy") or {}).get("type") == "Recreate":
            return replicas
        surge, _ = self._fenceposts(d)
        current_new = _replicas(new_rs) if new_rs is not None else 0
        total = current_new + sum(_replicas(rs) for rs in old_sets)
        max_total = replicas + surge
        if total >= max_total:
            return current_new
        return current_new + min(max_total - total, max(0, replicas - current_new))

    async def _scale(self, rs: dict[str, Any], replicas: int, d: dict[str, Any]) -> None:
        current = self.api.store.get(REPLICASETS, rs["metadata"].get("namespace", ""), c.name(rs))
        if current is None or c.uid(current) != c.uid(rs):
            return
        annotations = dict(current["metadata"].get("annotations") or {})
        wanted = c.int_field(c.spec(d), "replicas", 1)
        annotations[DESIRED_REPLICAS] = str(wanted)
        annotations[MAX_REPLICAS] = str(wanted + self._fenceposts(d)[0])
        if _replicas(current) == replicas and annotations == current["metadata"].get("annotations"):
            return
        old_replicas = _replicas(current)
        await self.api.update(
            c.resource(REPLICASETS),
            current["metadata"].get("namespace", ""),
            c.name(current),
            {
                **current,
                "metadata": {**current["metadata"], "annotations": annotations},
                "spec": {**c.spec(current), "replicas": replicas},
            },
        )
        if old_replicas != replicas:  # scaleReplicaSet (sync.go)
            direction = "up" if old_replicas < replicas else "down"
            await self._event(
                d,
                f"Scaled {direction} replica set {c.name(current)} from "
                f"{old_replicas} to {replicas}",
            )

    async def _event(self, d: dict[str, Any], message: str) -> None:
        await c.record(
            self.api,
            events.DEPLOYMENT_CONTROLLER,
            d,
            "Deployment",
            "apps/v1",
            events.NORMAL,
            "ScalingReplicaSet",
            message,
        )

    async def _rolling(
        self, d: dict[str, Any], new_rs: dict[str, Any] | None, old_sets: list[dict[str, Any]]
    ) -> None:
        """rolloutRolling: reconcileNewReplicaSet, then reconcileOldReplicaSets."""
        replicas = c.int_field(c.spec(d), "replicas", 1)
        if new_rs is None:
            return
        if not any(_replicas(rs) for rs in old_sets):
            await self._scale(new_rs, replicas, d)  # nothing to roll: plain scaling
            return
        if _replicas(new_rs) > replicas:
            await self._scale(new_rs, replicas, d)
        elif _replicas(new_rs) < replicas:
            await self._scale(new_rs, self._new_replicas(d, new_rs, old_sets), d)
        new_rs = (
            self.api.store.get(REPLICASETS, new_rs["metadata"].get("namespace", ""), c.name(new_rs))
            or new_rs
        )
        _, max_unavailable = self._fenceposts(d)
        all_sets = [new_rs, *old_sets]
        all_pods = sum(_replicas(rs) for rs in all_sets)
        min_available = replicas - max_unavailable
        new_unavailable = _replicas(new_rs) - _stat(new_rs, "availableReplicas")
        max_scaled_down = all_pods - min_available - new_unavailable
        if max_scaled_down <= 0:
            return
        # cleanupUnhealthyReplicas: old sets' unavailable pods go first
        for rs in old_sets:
            if max_scaled_down <= 0:
                break
            unhealthy = _replicas(rs) - _stat(rs, "availableReplicas")
            if unhealthy <= 0:
                continue
            cut = min(unhealthy, max_scaled_down)
            await self._scale(rs, _replicas(rs) - cut, d)
            max_scaled_down -= cut
        # scaleDownOldReplicaSetsForRollingUpdate: then available ones, down to minAvailable
        fresh = [
            self.api.store.get(REPLICASETS, rs["metadata"].get("namespace", ""), c.name(rs))
            for rs in all_sets
        ]
        live = [rs for rs in fresh if rs is not None]
        available = sum(_stat(rs, "availableReplicas") for rs in live)
        if available <= min_available:
            return
        remaining = available - min_available
        for rs in (x for x in live if c.uid(x) != c.uid(new_rs)):
            if remaining <= 0:
                break
            cut = min(_replicas(rs), remaining)
            if cut:
                await self._scale(rs, _replicas(rs) - cut, d)
                remaining -= cut

    async def _recreate(
        self, d: dict[str, Any], new_rs: dict[str, Any] | None, old_sets: list[dict[str, Any]]
    ) -> None:
        """rolloutRecreate: old sets to 0, wait until their pods are gone, then the new one."""
        for rs in old_sets:
            if _replicas(rs):
                await self._scale(rs, 0, d)
        if any(_stat(rs, "replicas") for rs in old_sets):
            return
        namespace = d["metadata"].get("namespace", "")
        old_uids = {c.uid(rs) for rs in old_sets}
        if any(
            (c.controller_ref(p) or {}).get("uid") in old_uids
            for p in self.api.store.items(c.PODS, namespace)
            if not c.terminal(p)
        ):
            return
        if new_rs is not None:
            await self._scale(new_rs, c.int_field(c.spec(d), "replicas", 1), d)

    async def _cleanup(self, d: dict[str, Any]) -> None:
        """cleanupDeployment: old sets scaled to 0 beyond revisionHistoryLimit, oldest first."""
        limit = c.int_field(c.spec(d), "revisionHistoryLimit", 10)
        template = c.spec(d).get("template") or {}
        idle = [
            rs
            for rs in self._owned(d)
            if not equal_ignore_hash(c.spec(rs).get("template") or {}, template)
            and _replicas(rs) == 0
            and _stat(rs, "replicas") == 0
            and not c.deleting(rs)
        ]
        idle.sort(key=revision_of)
        for rs in idle[: max(0, len(idle) - limit)]:
            await c.delete(self.api, REPLICASETS, rs, {"propagationPolicy": "Background"})

    # ---- status ------------------------------------------------------------------------------
    async def _write_status(
        self, d: dict[str, Any], new_rs: dict[str, Any] | None, sets: list[dict[str, Any]]
    ) -> None:
        spec = c.spec(d)
        replicas = c.int_field(spec, "replicas", 1)
        _, max_unavailable = self._fenceposts(d)
        available = sum(_stat(rs, "availableReplicas") for rs in sets)
        updated = _stat(new_rs, "replicas") if new_rs is not None else 0
        total = sum(_stat(rs, "replicas") for rs in sets)
        old = c.status(d)
        old_conditions = [x for x in old.get("conditions") or [] if isinstance(x, dict)]
        now = self.api.clock()
        stamp = rfc3339(now)
        if available >= replicas - max_unavailable:
            available_condition = _condition(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
                stamp,
                old_conditions,
            )
        else:
            available_condition = _condition(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
                stamp,
                old_conditions,
            )
        rs_name = c.name(new_rs) if new_rs is not None else ""
        complete = (
            new_rs is not None
            and updated == replicas
            and total == replicas
            and available >= replicas
        )
        if complete:
            progressing = (
                "NewReplicaSetAvailable",
                f'ReplicaSet "{rs_name}" has successfully progressed.',
            )
        elif spec.get("paused"):
            progressing = ("DeploymentPaused", "Deployment is paused")
        else:
            progressing = ("ReplicaSetUpdated", f'ReplicaSet "{rs_name}" is progressing.')
        progressing_condition = _condition(
            "Progressing",
            "True" if not spec.get("paused") else "Unknown",
            *progressing,
            stamp,
            old_conditions,
        )
        conditions = []
        for new_condition in (available_condition, progressing_condition):
            previous = next(
                (x for x in old_conditions if x.get("type") == new_condition["type"]), None
            )
            if previous is not None and all(
                previous.get(k) == new_condition[k] for k in ("status", "reason", "message")
            ):
                conditions.append(previous)  # unchanged: keep its times, write nothing
            else:
                conditions.append(new_condition)
        new_status: dict[str, Any] = {
            "observedGeneration": d["metadata"].get("generation", 1),
            "replicas": total,
            "updatedReplicas": updated,
            "readyReplicas": sum(_stat(rs, "readyReplicas") for rs in sets),
            "availableReplicas": available,
            "unavailableReplicas": max(replicas - available, 0),
            "conditions": conditions,
        }
        if old.get("collisionCount"):
            new_status["collisionCount"] = old["collisionCount"]
        await c.write_status(self.api, DEPLOYMENTS, d, new_status)
