"""NoExecute taint eviction: pods that do not tolerate a node's NoExecute taints are deleted,
those that tolerate them for tolerationSeconds are deleted when that time has run out.

Upstream: pkg/controller/tainteviction/taint_eviction.go (processPodOnNode,
getMinTolerationTime; the DisruptionTarget condition with reason DeletionByTaintManager).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesim import events
from kubesim.api import Api
from kubesim.controllers import common as c
from kubesim.controllers.manager import Due, Key
from kubesim.meta import Obj, parse_rfc3339, rfc3339
from kubesim.watch import Event


def _no_execute(node: Obj | None) -> list[dict[str, Any]]:
    if node is None:
        return []
    return [t for t in c.node_taints(node) if t.get("effect") == "NoExecute"]


def eviction_delay(
    pod: Obj, taints: list[dict[str, Any]], now: float, comparison_operators: bool = False
) -> float | None:
    """Seconds until the pod must go (0: now), None if it tolerates the taints forever
    (`comparison_operators`: the TaintTolerationComparisonOperators gate)."""
    tolerations = [
        t for t in (pod.get("spec") or {}).get("tolerations") or [] if isinstance(t, dict)
    ]
    if c.untolerated(taints, tolerations, ("NoExecute",), comparison_operators):
        return 0.0
    deadline: float | None = None
    for taint in taints:
        for toleration in tolerations:
            if not c.tolerates(toleration, taint, comparison_operators):
                continue
            seconds = toleration.get("tolerationSeconds")
            if seconds is None:
                continue
            try:
                added = parse_rfc3339(str(taint.get("timeAdded")))
            except ValueError:
                added = now
            ends = added + max(0, int(seconds))
            deadline = ends if deadline is None else min(deadline, ends)
    return None if deadline is None else max(0.0, deadline - now)


class TaintEvictionController:
    name = "TaintEviction"
    owned_only: tuple[str, ...] = ()
    watches: tuple[str, ...] = (c.NODES, c.PODS)

    def __init__(self, api: Api) -> None:
        self.api = api

    def on_event(self, key: str, event: Event) -> Iterable[Due]:
        if event.type == "DELETED":
            return []
        if key == c.NODES:
            taints = _no_execute(event.obj)
            if not taints or (event.old is not None and _no_execute(event.old) == taints):
                return []
            node = event.obj["metadata"]["name"]
            return [
                (f"pod {p['metadata'].get('namespace', '')}", p["metadata"]["name"], 0.0)
                for p in self.api.store.items(c.PODS)
                if (p.get("spec") or {}).get("nodeName") == node
            ]
        node_name = (event.obj.get("spec") or {}).get("nodeName")
        if not node_name or event.obj["metadata"].get("deletionTimestamp"):
            return []
        if not _no_execute(self.api.store.get(c.NODES, "", node_name)):
            return []
        return [(f"pod {event.namespace}", event.obj["metadata"]["name"], 0.0)]

    def initial(self) -> Iterable[Key]:
        tainted = {n["metadata"]["name"] for n in self.api.store.items(c.NODES) if _no_execute(n)}
        return [
            (f"pod {p['metadata'].get('namespace', '')}", p["metadata"]["name"])
            for p in self.api.store.items(c.PODS)
            if (p.get("spec") or {}).get("nodeName") in tainted
        ]

    async def sync(self, namespace: str, name: str) -> Iterable[Due]:
        namespace = namespace.removeprefix("pod ")
        pod = self.api.store.get(c.PODS, namespace, name)
        if pod is None or c.deleting(pod):
            return []
        node = self.api.store.get(c.NODES, "", str((pod.get("spec") or {}).get("nodeName")))
        taints = _no_execute(node)
        if not taints:
            return []
        now = self.api.clock()
        delay = eviction_delay(pod, taints, now, self.api.taint_comparison_operators)
        if delay is None:
            return []
        if delay > 0:
            return [(f"pod {namespace}", name, delay)]
        # deletePodHandler: emitPodDeletionEvent first, about a reference without a uid
        ref = {"apiVersion": "v1", "kind": "Pod", "name": name, "namespace": namespace}
        await self.api.events.record(
            events.Source(events.TAINT_EVICTION_CONTROLLER),
            ref,
            events.NORMAL,
            "TaintManagerEviction",
            f"Marking for deletion Pod {namespace}/{name}",
        )
        await self._mark_disruption(pod, now)
        await c.delete(self.api, c.PODS, pod)
        return []

    async def _mark_disruption(self, pod: Obj, now: float) -> None:
        status = c.status(pod)
        conditions = [
            x
            for x in status.get("conditions") or []
            if isinstance(x, dict) and x.get("type") != "DisruptionTarget"
        ]
        conditions.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "DeletionByTaintManager",
                "message": "Taint manager: deleting due to NoExecute taint",
                "lastTransitionTime": rfc3339(now),
            }
        )
        await c.write_status(self.api, c.PODS, pod, {**status, "conditions": conditions})
