"""Node lifecycle: a node whose kubelet stops heartbeating turns Unknown and is tainted.

Upstream: pkg/controller/nodelifecycle/node_lifecycle_controller.go (monitorNodeHealth,
tryUpdateNodeHealth: after --node-monitor-grace-period without a lease renewal every condition
becomes Unknown, reason NodeStatusUnknown, "Kubelet stopped posting node status."; the
NoExecute taints `node.kubernetes.io/not-ready` / `unreachable` follow Ready False / Unknown, and
doNoScheduleTaintingPass adds their NoSchedule twins and `node.kubernetes.io/unschedulable` for a
cordoned node).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesim import events
from kubesim.api import Api
from kubesim.controllers import common as c
from kubesim.controllers.manager import Due, Key
from kubesim.controllers.options import ControllerOptions
from kubesim.meta import Obj, parse_rfc3339, rfc3339
from kubesim.watch import Event

LEASES = "coordination.k8s.io/leases"
LEASE_NAMESPACE = "kube-node-lease"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
MANAGED = frozenset({NOT_READY, UNREACHABLE, UNSCHEDULABLE})
MONITOR = "\x00monitor"  # the periodic health pass, queued as one more item


def _ready_status(node: Obj) -> str | None:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return str(condition.get("status"))
    return None


def wanted_taints(node: Obj, now: str) -> list[dict[str, Any]]:
    """The node's taints with the lifecycle ones set from its Ready condition and cordon."""
    current = c.node_taints(node)
    keep = [t for t in current if t.get("key") not in MANAGED]
    owned = {(t.get("key"), t.get("effect")): t for t in current if t.get("key") in MANAGED}
    wanted: list[tuple[str, str]] = []
    ready = _ready_status(node)
    if ready == "False":
        wanted += [(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")]
    elif ready == "Unknown":
        wanted += [(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")]
    if (node.get("spec") or {}).get("unschedulable"):
        wanted.append((UNSCHEDULABLE, "NoSchedule"))
    result = list(keep)
    for key, effect in wanted:
        taint = owned.get((key, effect)) or {"key": key, "effect": effect}
        if effect == "NoExecute" and "timeAdded" not in taint:
            taint = {**taint, "timeAdded": now}
        result.append(taint)
    return result


def _taint_set(taints: list[dict[str, Any]]) -> set[tuple[Any, Any]]:
    return {(t.get("key"), t.get("effect")) for t in taints}


class NodeLifecycleController:
    name = "NodeLifecycle"
    owned_only: tuple[str, ...] = ()
    watches: tuple[str, ...] = (c.NODES,)

    def __init__(self, api: Api, options: ControllerOptions) -> None:
        self.api = api
        self.grace = options.node_monitor_grace_period
        self.period = min(options.node_monitor_period, max(self.grace / 4, 0.05))
        self.started = api.clock()

    def on_event(self, key: str, event: Event) -> Iterable[Due]:
        if event.type == "DELETED":
            return []
        node = event.obj
        if _taint_set(wanted_taints(node, "")) != _taint_set(c.node_taints(node)):
            return [("", node["metadata"]["name"], 0.0)]
        return []

    def initial(self) -> Iterable[Key]:
        self.started = self.api.clock()
        return [
            ("", MONITOR),
            *(("", n["metadata"]["name"]) for n in self.api.store.items(c.NODES)),
        ]

    async def sync(self, namespace: str, name: str) -> Iterable[Due]:
        if name == MONITOR:
            await self._monitor()
            return [("", MONITOR, self.period)]
        node = self.api.store.get(c.NODES, "", name)
        if node is None:
            return []
        taints = wanted_taints(node, rfc3339(self.api.clock()))
        if _taint_set(taints) != _taint_set(c.node_taints(node)):
            spec = {**(node.get("spec") or {}), "taints": taints}
            if not taints:
                del spec["taints"]
            await self.api.store.put(
                c.NODES, {**node, "metadata": dict(node["metadata"]), "spec": spec}, node
            )
        return []

    def _last_heartbeat(self, node: Obj) -> float | None:
        lease = self.api.store.get(LEASES, LEASE_NAMESPACE, node["metadata"]["name"])
        times = []
        renew = ((lease or {}).get("spec") or {}).get("renewTime")
        if renew:
            times.append(str(renew))
        for condition in (node.get("status") or {}).get("conditions") or []:
            if (
                isinstance(condition, dict)
                and condition.get("type") == "Ready"
                and condition.get("lastHeartbeatTime")
            ):
                times.append(str(condition["lastHeartbeatTime"]))
        parsed = []
        for text in times:
            try:
                parsed.append(parse_rfc3339(text.split(".")[0].rstrip("Z") + "Z"))
            except ValueError:
                continue
        # probeTimestamp: a node is given the whole grace from when this controller first saw it
        return max([*parsed, self.started])

    async def _monitor(self) -> None:
        now = self.api.clock()
        for node in self.api.store.items(c.NODES):
            ready = _ready_status(node)
            if ready in (None, "Unknown"):
                continue  # never reported yet, or already marked
            last = self._last_heartbeat(node)
            if last is None or now - last <= self.grace:
                continue
            stamp = rfc3339(now)
            conditions = []
            for condition in (node.get("status") or {}).get("conditions") or []:
                if isinstance(condition, dict) and condition.get("type") in (
                    "Ready",
                    "MemoryPressure",
                    "DiskPressure",
                    "PIDPressure",
                ):
                    condition = {
                        **condition,
                        "status": "Unknown",
                        "reason": "NodeStatusUnknown",
                        "message": "Kubelet stopped posting node status.",
                        "lastTransitionTime": stamp,
                    }
                conditions.append(condition)
            status = {**(node.get("status") or {}), "conditions": conditions}
            await self.api.store.put(
                c.NODES, {**node, "metadata": dict(node["metadata"]), "status": status}, node
            )
            # RecordNodeStatusChange (pkg/controller/util/node): about the Node, in "default"
            name = node["metadata"]["name"]
            ref = {"kind": "Node", "name": name, "uid": c.uid(node), "apiVersion": "v1"}
            await self.api.events.record(
                events.Source(events.NODE_CONTROLLER),
                ref,
                events.NORMAL,
                "NodeNotReady",
                f"Node {name} status is now: NodeNotReady",
            )
