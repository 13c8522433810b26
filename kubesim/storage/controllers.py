"""kubesim's storage control loops: the PV binder and the simulated CSI driver, in one task.

What kube-controller-manager's PV controller, a CSI driver's external-provisioner and each
node's kubelet (CSINode) do in a real cluster. The controllers are level-triggered: store events
only name what to look at again (claims, volumes, nodes), and each sync acts on the objects as
they are now. At start every existing claim, volume and node is looked at once, which is all a
restart with --data-dir needs. Events of other resources (pods above all) cost one dict lookup.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from kubesim import errors
from kubesim.api import Api
from kubesim.background import BackgroundTasks
from kubesim.meta import Obj, labels_of, new_uid, rfc3339
from kubesim.storage import csi
from kubesim.storage.binder import Binder
from kubesim.storage.index import PendingClaims, VolumeIndex
from kubesim.storage.objects import (
    CLASSES,
    CSIDRIVERS,
    CSINODES,
    NODES,
    PVCS,
    PVS,
    WAIT_FOR_FIRST_CONSUMER,
    ClaimKey,
    Malformed,
    claim_key,
    claim_ref_key,
    name_of,
    spec,
    uid_of,
    volume_class,
)
from kubesim.watch import Event

log = logging.getLogger(__name__)

BATCH = 500  # items per worker round: CSINodes of a batch are written in one commit

CLAIM, VOLUME, NODE = "claim", "volume", "node"
Item = tuple[str, str, str]  # (kind, namespace, name)


@dataclass(frozen=True, slots=True)
class StorageOptions:
    # run the storage controllers at all (scheduler_perf's API server has none: the bench)
    enabled: bool = True
    # simulate the csi.kubesim.io driver: its CSIDriver, the default class, CSINodes, provisioning
    csi_driver: bool = True
    # CSINode allocatable.count (volumes attachable per node); 0 reports no limit
    attach_limit: int = 0
    # further provisioner names to provision for, as if their CSI drivers were installed
    extra_provisioners: tuple[str, ...] = ()
    # seconds between an event and the controllers acting on it
    delay: float = 0.0

    @property
    def provisioners(self) -> frozenset[str]:
        own = {csi.DRIVER_NAME} if self.csi_driver else set()
        return frozenset(own | set(self.extra_provisioners))


class StorageControllers:
    """Owns one worker task; bootstrap() before serving, start() after the initial nodes."""

    def __init__(self, api: Api, options: StorageOptions) -> None:
        self.api = api
        self.store = api.store
        self.options = options
        self.volumes = VolumeIndex()
        self.pending = PendingClaims()
        self.binder = Binder(api, self.volumes, options.provisioners, self._enqueue_claim)
        self._queue: deque[tuple[float, Item]] = deque()
        self._queued: set[Item] = set()
        self._wakeup = asyncio.Event()
        self._tasks = BackgroundTasks("storage controllers")
        self._busy = False
        self.synced = 0  # items looked at, for tests and curious operators
        self._handlers: dict[str, Callable[[Event], None]] = {
            PVCS: self._on_claim,
            PVS: self._on_volume,
            CLASSES: self._on_class,
        }
        if options.csi_driver:
            self._handlers[NODES] = self._on_node
            self._handlers[CSINODES] = self._on_csinode

    # ---- lifecycle ---------------------------------------------------------------------------
    async def bootstrap(self) -> None:
        """The driver's CSIDriver and the default class, unless they exist (users' win)."""
        if not self.options.enabled or not self.options.csi_driver:
            return
        for key, obj in ((CSIDRIVERS, csi.csi_driver()), (CLASSES, csi.default_storage_class())):
            if self.store.get(key, "", name_of(obj)) is None:
                await self.store.put(key, self._stamped(obj), None)

    async def start(self) -> None:
        """Index what is stored, look at all of it once, then follow events."""
        if not self.options.enabled:
            return
        self.store.add_listener(self._on_event)
        for volume in self.store.items(PVS):
            self.volumes.add(volume)
            self._enqueue(VOLUME, "", name_of(volume))
        for claim in self.store.items(PVCS):
            self.pending.add(claim)
            self._enqueue(CLAIM, *claim_key(claim))
        if self.options.csi_driver:
            for node in self.store.items(NODES):
                self._enqueue(NODE, "", name_of(node))
            for csinode in self.store.items(CSINODES):  # of nodes deleted while we were down
                self._enqueue(NODE, "", name_of(csinode))
        self._tasks.start_soon(self._work, name="storage controllers")

    async def stop(self) -> None:
        self._handlers = {}  # the store keeps its listeners: make ours inert
        await self._tasks.close()

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing being worked on."""
        return not self._queued and not self._busy

    def _stamped(self, obj: Obj) -> Obj:
        meta = obj["metadata"]
        meta["uid"] = new_uid(self.api.rng)
        meta["creationTimestamp"] = rfc3339(self.api.clock())
        if "spec" in obj:
            meta["generation"] = 1
        return obj

    # ---- events ------------------------------------------------------------------------------
    def _on_event(self, key: str, event: Event) -> None:
        handler = self._handlers.get(key)
        if handler is not None:
            try:
                handler(event)
            except Exception:  # raised here, it would fail the write that published the event
                log.exception("storage controllers: indexing a %s event failed", key)

    def _on_claim(self, event: Event) -> None:
        if event.old is not None:
            self.pending.remove(event.old)
        key = claim_key(event.obj)
        if event.type == "DELETED":
            for name in sorted(self.volumes.by_claim.get(key, ())):
                self._enqueue(VOLUME, "", name)  # Released, then reclaimed
            return
        self.pending.add(event.obj)
        self._enqueue(CLAIM, *key)

    def _on_volume(self, event: Event) -> None:
        old, new = event.old, event.obj
        if old is not None:
            self.volumes.remove(old)
        key = claim_ref_key(new)
        if event.type == "DELETED":
            if key is not None:
                self._enqueue(CLAIM, *key)  # a bound claim loses its volume
            return
        self.volumes.add(new)
        self._enqueue(VOLUME, "", name_of(new))
        if key is not None:
            self._enqueue(CLAIM, *key)
        elif old is None or claim_ref_key(old) is not None or _offer_changed(old, new):
            # a volume newly on offer: the claims of its class may bind to it now, unless the
            # class waits for a consumer (then only the scheduler picks unclaimed volumes)
            class_name = volume_class(new)
            storage_class = self.store.get(CLASSES, "", class_name) if class_name else None
            if (storage_class or {}).get("volumeBindingMode") != WAIT_FOR_FIRST_CONSUMER:
                for pending in self.pending.of_class(class_name):
                    self._enqueue(CLAIM, *pending)

    def _on_class(self, event: Event) -> None:
        # binding mode or provisioner may have changed; "" holds claims waiting for a default
        for class_name in {name_of(event.obj), ""}:
            for pending in self.pending.of_class(class_name):
                self._enqueue(CLAIM, *pending)

    def _on_node(self, event: Event) -> None:
        # a kubelet writes its CSINode when the driver registers: a later change of the node
        # (its labels included) changes nothing, only its coming and going does
        if event.type != "MODIFIED":
            self._enqueue(NODE, "", name_of(event.obj))

    def _on_csinode(self, event: Event) -> None:
        if event.type == "DELETED":  # a kubelet writes its CSINode again
            self._enqueue(NODE, "", name_of(event.obj))

    def _enqueue_claim(self, key: ClaimKey) -> None:
        self._enqueue(CLAIM, *key)

    def _enqueue(self, kind: str, namespace: str, name: str) -> None:
        item = (kind, namespace, name)
        if item in self._queued:
            return  # the queued sync will read the newest state anyway
        self._queued.add(item)
        self._queue.append((asyncio.get_running_loop().time() + self.options.delay, item))
        self._wakeup.set()

    # ---- work --------------------------------------------------------------------------------
    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self._queue:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            wait = self._queue[0][0] - loop.time()
            if wait > 0:  # items are queued in due order: the head is due first
                await asyncio.sleep(wait)
            self._busy = True
            try:
                await self._sync_batch(self._take_due(loop.time()))
            finally:
                self._busy = False
            await asyncio.sleep(0)  # a long batch must not hold the API server up

    def _take_due(self, now: float) -> list[Item]:
        batch: list[Item] = []
        while self._queue and len(batch) < BATCH and self._queue[0][0] <= now:
            item = self._queue.popleft()[1]
            self._queued.discard(item)
            batch.append(item)
        return batch

    async def _sync_batch(self, batch: list[Item]) -> None:
        self.synced += len(batch)
        nodes = [name for kind, _, name in batch if kind == NODE]
        if nodes:
            await self._guarded(self._sync_csinodes(nodes), "CSINodes", "")
        for kind, namespace, name in batch:
            if kind == CLAIM:
                await self._guarded(
                    self.binder.sync_claim((namespace, name)), kind, name, namespace
                )
            elif kind == VOLUME:
                await self._guarded(self.binder.sync_volume(name), kind, name)

    async def _guarded(
        self, sync: Coroutine[Any, Any, None], kind: str, name: str, namespace: str = ""
    ) -> None:
        """Run one sync; a bad object or failed write is logged, never stops the loop."""
        shown = f"{namespace}/{name}" if namespace else name
        try:
            await sync
        except Malformed as exc:
            log.warning("storage controllers: skipping %s %s: %s", kind, shown, exc)
        except errors.ApiError as exc:
            log.warning("storage controllers: %s %s: %s", kind, shown, exc.message)
        except Exception:
            log.exception("storage controllers: syncing %s %s failed", kind, shown)

    # ---- CSINodes ----------------------------------------------------------------------------
    async def _sync_csinodes(self, names: list[str]) -> None:
        """Each node has our CSINode, and our CSINodes have nodes; one commit for the batch."""
        changes: list[tuple[str, Obj | None, Obj | None]] = []
        for name in names:
            node = self.store.get(NODES, "", name)
            current = self.store.get(CSINODES, "", name)
            owner = None if current is None else csi.owner_node_uid(current)
            if current is not None and owner is None:
                continue  # a user's CSINode: not ours to change
            if node is None:
                if current is not None:
                    changes.append((CSINODES, None, current))
                continue
            wanted = csi.csinode(node, self.options.attach_limit)
            if current is None:
                changes.append((CSINODES, self._stamped(wanted), None))
            elif owner != uid_of(node):  # the node was made again: so is its CSINode
                changes.append((CSINODES, None, current))
                changes.append((CSINODES, self._stamped(wanted), None))
            elif spec(current) != wanted["spec"]:
                meta = {**current["metadata"], **wanted["metadata"]}
                changes.append(
                    (CSINODES, {**current, "metadata": meta, "spec": wanted["spec"]}, current)
                )
        if changes:
            await self.store.commit(changes)


def _offer_changed(old: Obj, new: Obj) -> bool:
    """An unclaimed volume changed in what a claim matches on (not just its status)."""
    return spec(old) != spec(new) or labels_of(old) != labels_of(new)
