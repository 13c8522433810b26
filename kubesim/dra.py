"""The simulated DRA driver `gpu.kubesim.io`: its DeviceClass and one ResourceSlice per node.

A real DRA driver runs a kubelet plugin on each node that publishes the node's devices in a
ResourceSlice (pool named after the node, ownerReference to the Node), and its deployment
ships a DeviceClass selecting the driver. kubesim does both for every node in the store when
--dra-devices N > 0: N devices gpu-0 ... gpu-(N-1) with attributes `model` (string) and `index`
(int) and capacity `memory`. Models are given round-robin by the number a node's name ends in
(--dra-models a100,h100: node-0 a100, node-1 h100, node-2 a100, ...), or per node by the node
label MODEL_LABEL, which wins. A slice follows its node: it is written when the node appears,
rewritten (pool generation + 1) when the node's model changes, and deleted with the node.

With --dra-binding-delay SECONDS each device has a binding condition (`gpu.kubesim.io/attached`,
and the failure condition `gpu.kubesim.io/attach-failed`): once a claim's allocation names the
device, the driver sets the condition True in the claim's `status.devices` that many seconds
later, as a driver attaching a device over a fabric would; the scheduler waits in PreBind.

With --dra-sharing each device allows multiple allocations (DRAConsumableCapacity): claims
share it by capacity. It publishes `memory` (whole Gi, at least 1Gi) and `compute` (1000 =
the whole GPU, in steps of 1); a request that names neither takes the whole of both, so a claim
without capacity requests still gets a GPU to itself.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from dataclasses import dataclass
from typing import Any

from kubesim.api import Api
from kubesim.background import BackgroundTasks
from kubesim.meta import Obj, new_uid, rfc3339
from kubesim.watch import Event

log = logging.getLogger(__name__)

DRIVER_NAME = "gpu.kubesim.io"
DEVICE_CLASS_NAME = DRIVER_NAME
MODEL_LABEL = "gpu.kubesim.io/model"  # a node label naming its devices' model
NODES = "nodes"
DEVICE_CLASSES = "resource.k8s.io/deviceclasses"
RESOURCE_SLICES = "resource.k8s.io/resourceslices"


@dataclass(frozen=True, slots=True)
class DraOptions:
    # devices per node; 0: no driver at all (nothing published)
    devices: int = 0
    # models assigned round-robin over the nodes in name order (a node label overrides)
    models: tuple[str, ...] = ("a100",)
    # each device's capacity `memory`
    memory: str = "80Gi"
    # devices shared by capacity (allowMultipleAllocations, capacity with request policies)
    sharing: bool = False
    # devices with binding conditions, which the driver sets this many seconds after a
    # claim's allocation names them (None: no binding conditions)
    binding_delay: float | None = None


#: With binding conditions: what the driver reports once a device is attached, and the
#: condition that would say it failed.
BINDING_CONDITION = f"{DRIVER_NAME}/attached"
BINDING_FAILURE_CONDITION = f"{DRIVER_NAME}/attach-failed"
CLAIMS = "resource.k8s.io/resourceclaims"


#: With sharing, the `compute` capacity of one whole device.
COMPUTE_PER_DEVICE = "1000"


def device_class() -> Obj:
    """The driver's DeviceClass: every device of gpu.kubesim.io."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS_NAME},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER_NAME}"'}}]},
    }


def node_index(node_name: str) -> int:
    """node-7 -> 7: the trailing number of a node's name (stable as nodes come and go); a name
    without one gets a stable number of its own."""
    digits = node_name[len(node_name.rstrip("0123456789")) :]
    return int(digits) if digits else zlib.crc32(node_name.encode())


def slice_name(node_name: str) -> str:
    return f"{node_name}-{DRIVER_NAME}"


def resource_slice(node: Obj, model: str, options: DraOptions, generation: int = 1) -> Obj:
    """The ResourceSlice the driver's kubelet plugin publishes for `node`."""
    name = node["metadata"]["name"]
    devices: list[dict[str, Any]] = [
        {
            "name": f"gpu-{index}",
            "attributes": {"model": {"string": model}, "index": {"int": index}},
            "capacity": _shared_capacity(options)
            if options.sharing
            else {"memory": {"value": options.memory}},
            **({"allowMultipleAllocations": True} if options.sharing else {}),
            **(
                {
                    "bindingConditions": [BINDING_CONDITION],
                    "bindingFailureConditions": [BINDING_FAILURE_CONDITION],
                }
                if options.binding_delay is not None
                else {}
            ),
        }
        for index in range(options.devices)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "name": slice_name(name),
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": name,
                    "uid": node["metadata"].get("uid", ""),
                    "controller": True,
                }
            ],
        },
        "spec": {
            "driver": DRIVER_NAME,
            "nodeName": name,
            "pool": {"name": name, "generation": generation, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _shared_capacity(options: DraOptions) -> dict[str, Any]:
    """What a shareable GPU publishes: each capacity's default is all of it."""
    return {
        "memory": {
            "value": options.memory,
            "requestPolicy": {
                "default": options.memory,
                "validRange": {"min": "1Gi", "step": "1Gi"},
            },
        },
        "compute": {
            "value": COMPUTE_PER_DEVICE,
            "requestPolicy": {
                "default": COMPUTE_PER_DEVICE,
                "validRange": {"min": "1", "step": "1"},
            },
        },
    }


class SimulatedDriver:
    """Keeps the DeviceClass and each node's ResourceSlice; one task, level-triggered."""

    def __init__(self, api: Api, options: DraOptions) -> None:
        self.api = api
        self.store = api.store
        self.options = options
        self._pending: set[str] = set()
        self._wakeup = asyncio.Event()
        self._tasks = BackgroundTasks("dra driver")
        self._listening = False

    @property
    def enabled(self) -> bool:
        return self.options.devices > 0

    async def bootstrap(self) -> None:
        """The driver's DeviceClass, unless one of that name exists (a user's wins)."""
        if self.enabled and self.store.get(DEVICE_CLASSES, "", DEVICE_CLASS_NAME) is None:
            await self.store.put(DEVICE_CLASSES, self._stamped(device_class()), None)

    async def start(self) -> None:
        if not self.enabled:
            return
        self._listening = True
        self.store.add_listener(self._on_event)
        self._pending.update(n["metadata"]["name"] for n in self.store.items(NODES))
        for published in self.store.items(RESOURCE_SLICES):  # of nodes deleted while down
            if (published.get("spec") or {}).get("driver") == DRIVER_NAME:
                self._pending.add(str(published["spec"].get("nodeName") or ""))
        self._pending.discard("")
        self._wakeup.set()
        self._tasks.start_soon(self._work, name="dra driver")

    async def stop(self) -> None:
        self._listening = False  # the store keeps its listeners: make ours inert
        await self._tasks.close()

    @property
    def idle(self) -> bool:
        return not self._pending

    def _stamped(self, obj: Obj) -> Obj:
        meta = obj["metadata"]
        meta["uid"] = new_uid(self.api.rng)
        meta["creationTimestamp"] = rfc3339(self.api.clock())
        meta["generation"] = 1
        return obj

    def _on_event(self, key: str, event: Event) -> None:
        if key == CLAIMS and self._listening and self.options.binding_delay is not None:
            self._maybe_attach(event)
            return
        if key != NODES or not self._listening:
            return
        old_labels = ((event.old or {}).get("metadata") or {}).get("labels") or {}
        labels = event.obj["metadata"].get("labels") or {}
        if event.type != "MODIFIED" or old_labels.get(MODEL_LABEL) != labels.get(MODEL_LABEL):
            self._pending.add(event.obj["metadata"]["name"])
            self._wakeup.set()

    def _maybe_attach(self, event: Event) -> None:
        """A claim newly allocated one of our devices with binding conditions: attach it
        (set the condition in status.devices) after the configured delay."""
        if event.type == "DELETED":
            return
        allocation = (event.obj.get("status") or {}).get("allocation") or {}
        before = ((event.old or {}).get("status") or {}).get("allocation")
        if not allocation or before:
            return
        if not any(
            r.get("driver") == DRIVER_NAME and r.get("bindingConditions")
            for r in (allocation.get("devices") or {}).get("results") or []
        ):
            return
        meta = event.obj["metadata"]
        self._tasks.start_soon(
            self._attach,
            str(meta.get("namespace") or ""),
            str(meta["name"]),
            name="dra driver attach",
        )

    async def _attach(self, namespace: str, name: str) -> None:
        await asyncio.sleep(self.options.binding_delay or 0.0)
        current = self.store.get(CLAIMS, namespace, name)
        status = (current or {}).get("status") or {}
        allocation = status.get("allocation")
        if current is None or not allocation:
            return
        now = rfc3339(self.api.clock())
        devices = list(status.get("devices") or [])
        for result in (allocation.get("devices") or {}).get("results") or []:
            if result.get("driver") != DRIVER_NAME or not result.get("bindingConditions"):
                continue
            entry = {
                key: result[key]
                for key in ("driver", "pool", "device", "shareID")
                if result.get(key)
            }
            entry["conditions"] = [
                {
                    "type": kind,
                    "status": "True",
                    "reason": "Attached",
                    "message": "the simulated device is attached",
                    "lastTransitionTime": now,
                }
                for kind in result["bindingConditions"]
            ]
            devices = [
                d
                for d in devices
                if not all(d.get(k) == v for k, v in entry.items() if k != "conditions")
            ] + [entry]
        updated = {**current, "status": {**status, "devices": devices}}
        await self.store.commit([(CLAIMS, updated, current)])

    def model_of(self, node: Obj) -> str:
        labels = node["metadata"].get("labels") or {}
        if labels.get(MODEL_LABEL):
            return str(labels[MODEL_LABEL])
        models = self.options.models or ("a100",)
        return models[node_index(node["metadata"]["name"]) % len(models)]

    async def _work(self) -> None:
        while True:
            if not self._pending:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            batch = sorted(self._pending)
            self._pending.clear()
            try:
                await self._sync(batch)
            except Exception:  # one bad node must not stop the driver
                log.exception("dra driver: syncing the slices of %s failed", batch)
            await asyncio.sleep(0)

    async def _sync(self, node_names: list[str]) -> None:
        """Each node has its slice, and each of our slices its node: one commit."""
        changes: list[tuple[str, Obj | None, Obj | None]] = []
        for name in node_names:
            node = self.store.get(NODES, "", name)
            current = self.store.get(RESOURCE_SLICES, "", slice_name(name))
            if current is not None and (current.get("spec") or {}).get("driver") != DRIVER_NAME:
                continue  # someone else's object of that name
            if node is None:
                if current is not None:
                    changes.append((RESOURCE_SLICES, None, current))
                continue
            model = self.model_of(node)
            if current is None:
                wanted = resource_slice(node, model, self.options)
                changes.append((RESOURCE_SLICES, self._stamped(wanted), None))
                continue
            owner_uid = ((current["metadata"].get("ownerReferences") or [{}])[0]).get("uid")
            generation = int(((current.get("spec") or {}).get("pool") or {}).get("generation") or 1)
            if owner_uid != node["metadata"].get("uid"):  # the node was made again
                changes.append((RESOURCE_SLICES, None, current))
                changes.append(
                    (
                        RESOURCE_SLICES,
                        self._stamped(resource_slice(node, model, self.options)),
                        None,
                    )
                )
                continue
            wanted = resource_slice(node, model, self.options, generation)
            if wanted["spec"]["devices"] != current["spec"].get("devices"):
                spec = resource_slice(node, model, self.options, generation + 1)["spec"]
                meta = {
                    **current["metadata"],
                    "generation": int(current["metadata"].get("generation") or 1) + 1,
                }
                changes.append(
                    (RESOURCE_SLICES, {**current, "metadata": meta, "spec": spec}, current)
                )
        if changes:
            await self.store.commit(changes)
