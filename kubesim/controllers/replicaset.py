"""ReplicaSets and ReplicationControllers: create and delete pods to the replica count.

Upstream: pkg/controller/replicaset/replica_set.go (manageReplicas, slowStartBatch,
getPodsToDelete) and replica_set_utils.go (calculateStatus); the ReplicationController manager
is the same code over a map selector.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from kubesim import events
from kubesim.api import Api
from kubesim.controllers import common as c
from kubesim.controllers.manager import Due, Key
from kubesim.watch import Event

BURST_REPLICAS = 500  # upstream's burstReplicas: creations/deletions per sync
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


class ReplicaSetController:
    def __init__(self, api: Api, key: str = "apps/replicasets") -> None:
        self.api = api
        self.key = key
        self.kind = "ReplicaSet" if key == "apps/replicasets" else "ReplicationController"
        self.api_version = "apps/v1" if self.kind == "ReplicaSet" else "v1"
        self.name = self.kind
        # the EventSource of upstream's recorder (NewReplicaSetController / NewReplicationManager)
        self.component = (
            events.REPLICASET_CONTROLLER
            if self.kind == "ReplicaSet"
            else events.REPLICATION_CONTROLLER
        )
        self.watches: tuple[str, ...] = (key, c.PODS)
        self.owned_only: tuple[str, ...] = (c.PODS,)

    def on_event(self, key: str, event: Event) -> Iterable[Due]:
        if key == self.key:
            meta = event.obj["metadata"]
            return (
                [] if event.type == "DELETED" else [(meta.get("namespace", ""), meta["name"], 0.0)]
            )
        owner = c.owned_by(event.obj, self.kind)
        if owner is None and event.old is not None:
            owner = c.owned_by(event.old, self.kind)
        return [] if owner is None else [(event.namespace, owner, 0.0)]

    def initial(self) -> Iterable[Key]:
        return [
            (o["metadata"].get("namespace", ""), o["metadata"]["name"])
            for o in self.api.store.items(self.key)
        ]

    def _selector(self, owner: dict[str, Any]) -> dict[str, Any]:
        selector = c.spec(owner).get("selector")
        if self.kind == "ReplicationController":
            return {"matchLabels": selector} if isinstance(selector, dict) and selector else {}
        if not isinstance(selector, dict):
            raise c.Malformed("spec.selector is not an object")
        return selector

    async def sync(self, namespace: str, name: str) -> Iterable[Due]:
        owner = self.api.store.get(self.key, namespace, name)
        if owner is None:
            return []
        selector = self._selector(owner)
        pods = [p for p in c.controlled_pods(self.api, owner) if c.selects(selector, p)]
        if not c.deleting(owner):
            await self._adopt(owner, selector, pods)
            await self._manage(owner, pods)
            pods = [p for p in c.controlled_pods(self.api, owner) if c.selects(selector, p)]
        return await self._update_status(owner, pods)

    async def _adopt(
        self, owner: dict[str, Any], selector: dict[str, Any], pods: list[dict[str, Any]]
    ) -> None:
        """Claim orphan pods the selector matches (ControllerRefManager.ClaimPods)."""
        ref = c.new_controller_ref(owner, self.api_version, self.kind)
        for pod in self.api.store.items(c.PODS, owner["metadata"].get("namespace", "")):
            if c.controller_ref(pod) is None and c.active(pod) and c.selects(selector, pod):
                adopted = await c.write_meta(
                    self.api, c.PODS, pod, {"ownerReferences": [*c.owner_refs(pod), ref]}
                )
                if adopted is not None:
                    pods.append(adopted)

    async def _manage(self, owner: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        wanted = c.int_field(c.spec(owner), "replicas", 1)
        live = [p for p in pods if c.active(p)]
        diff = len(live) - wanted
        if diff < 0:
            ref = c.new_controller_ref(owner, self.api_version, self.kind)
            prefix = f"{c.name(owner)}-"
            for _ in range(min(-diff, BURST_REPLICAS)):
                pod = c.pod_from_template(owner, ref, prefix, generate=True)
                await c.create_pod(
                    self.api, self.component, owner, self.kind, self.api_version, pod
                )
        elif diff > 0:
            for pod in pods_to_delete(live, min(diff, BURST_REPLICAS)):
                await c.delete_pod(
                    self.api, self.component, owner, self.kind, self.api_version, pod
                )

    async def _update_status(
        self, owner: dict[str, Any], pods: list[dict[str, Any]]
    ) -> Iterable[Due]:
        spec = c.spec(owner)
        min_ready = c.int_field(spec, "minReadySeconds", 0)
        now = self.api.clock()
        live = [p for p in pods if c.active(p)]
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        ready = available = labeled = 0
        recheck: float | None = None
        for pod in live:
            labels = pod["metadata"].get("labels") or {}
            if all(labels.get(k) == v for k, v in template_labels.items()):
                labeled += 1
            if c.ready(pod):
                ready += 1
                wait = c.available_in(pod, min_ready, now)
                if wait == 0:
                    available += 1
                elif wait is not None:
                    recheck = wait if recheck is None else min(recheck, wait)
        old = c.status(owner)
        new_status = {
            **old,
            "replicas": len(live),
            "fullyLabeledReplicas": labeled,
            "readyReplicas": ready,
            "availableReplicas": available,
            "observedGeneration": owner["metadata"].get("generation", 1),
        }
        await c.write_status(self.api, self.key, owner, new_status)
        if recheck is None:
            return []
        return [(owner["metadata"].get("namespace", ""), c.name(owner), recheck + 0.01)]


def pods_to_delete(pods: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """The `count` pods upstream deletes first (ActivePodsWithRanks): unscheduled before
    scheduled, pending before running, not ready before ready, more pods of the set on the same
    node first, then the newest."""
    per_node = Counter((p.get("spec") or {}).get("nodeName") or "" for p in pods)

    def rank(pod: dict[str, Any]) -> tuple[Any, ...]:
        node = (pod.get("spec") or {}).get("nodeName") or ""
        phase = c.status(pod).get("phase", "Pending")
        created = str(pod["metadata"].get("creationTimestamp") or "")
        return (
            bool(node),
            _PHASE_RANK.get(phase, 1),
            c.ready(pod),
            -per_node[node] if node else 0,
            _negated(created),
        )

    return sorted(pods, key=rank)[:count]


def _negated(timestamp: str) -> tuple[int, ...]:
    """Sorts newer RFC 3339 timestamps first."""
    return tuple(-ord(ch) for ch in timestamp)
