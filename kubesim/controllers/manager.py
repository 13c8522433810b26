"""The owner of kubesim's workload controllers: one store listener, one queue, one task.

Each controller says which store keys it watches and, for each event, which of its objects to
sync (and when: a sync may be due later, e.g. when a toleration runs out). Nothing else runs on
an event, so events of kinds no controller watches (leases, bare pods' bookkeeping) cost one dict
lookup. On start every controller lists what it must reconcile from the stored state.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
from collections.abc import Iterable
from typing import Protocol

from kubesim import errors
from kubesim.api import Api
from kubesim.background import BackgroundTasks
from kubesim.controllers.common import Malformed
from kubesim.controllers.options import ControllerOptions
from kubesim.watch import Event

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (namespace, name) of what a controller syncs
Due = tuple[str, str, float]  # (namespace, name, delay in seconds)


class Controller(Protocol):
    name: str
    watches: tuple[str, ...]
    # keys whose objects concern this controller only when they have ownerReferences (the pods
    # of workload controllers): bare objects of those keys never reach on_event
    owned_only: tuple[str, ...]

    def on_event(self, key: str, event: Event) -> Iterable[Due]: ...

    def initial(self) -> Iterable[Key]: ...

    async def sync(self, namespace: str, name: str) -> Iterable[Due]:
        """Reconcile one object; returns syncs to run again later (e.g. a minReadySeconds)."""
        ...


class ControllerManager:
    def __init__(self, api: Api, options: ControllerOptions, controllers: list[Controller]) -> None:
        self.api = api
        self.options = options
        self.controllers = {c.name: c for c in controllers}
        self._by_key: dict[str, list[Controller]] = {}
        self._bare: dict[str, list[Controller]] = {}  # those that also hear unowned objects
        for controller in controllers:
            for key in controller.watches:
                self._by_key.setdefault(key, []).append(controller)
                if key not in controller.owned_only:
                    self._bare.setdefault(key, []).append(controller)
        self._heap: list[tuple[float, int, str, str, str]] = []
        self._due: dict[tuple[str, str, str], float] = {}
        self._seq = 0
        self._wakeup = asyncio.Event()
        self._tasks = BackgroundTasks("controller manager")
        self._listening = False
        self.synced = 0

    async def start(self) -> None:
        self._listening = True
        self.api.store.add_listener(self._on_event)
        for controller in self.controllers.values():
            for namespace, name in controller.initial():
                self.enqueue(controller.name, namespace, name, 0.0)
        self._tasks.start_soon(self._work, name="controller manager")

    async def stop(self) -> None:
        self._listening = False  # the store keeps its listeners: make ours inert
        await self._tasks.close()

    @property
    def idle(self) -> bool:
        loop = asyncio.get_running_loop()
        return not any(due <= loop.time() for due in self._due.values())

    # ---- events ------------------------------------------------------------------------------
    def _on_event(self, key: str, event: Event) -> None:
        controllers = self._by_key.get(key)
        if controllers is None or not self._listening:
            return
        old = event.old
        if not event.obj["metadata"].get("ownerReferences") and (
            old is None or not old["metadata"].get("ownerReferences")
        ):
            controllers = self._bare.get(key, [])
        for controller in controllers:
            try:
                for namespace, name, delay in controller.on_event(key, event):
                    self.enqueue(
                        controller.name, namespace, name, max(delay, self.options.sync_delay)
                    )
            except Exception:  # raised here, it would fail the write that published the event
                log.exception("controller %s: handling a %s event failed", controller.name, key)

    def enqueue(self, controller: str, namespace: str, name: str, delay: float) -> None:
        item = (controller, namespace, name)
        due = asyncio.get_running_loop().time() + delay
        queued = self._due.get(item)
        if queued is not None and queued <= due:
            return  # the queued sync reads the newest state anyway
        self._due[item] = due
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, controller, namespace, name))
        self._wakeup.set()

    # ---- work --------------------------------------------------------------------------------
    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self._heap:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            due, _, controller, namespace, name = self._heap[0]
            wait = due - loop.time()
            if wait > 0:
                self._wakeup.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await self._wakeup.wait()
                continue
            heapq.heappop(self._heap)
            item = (controller, namespace, name)
            if self._due.get(item) != due:
                continue  # superseded by an earlier entry
            del self._due[item]
            await self._sync(self.controllers[controller], namespace, name)
            await asyncio.sleep(0)  # a burst of syncs must not hold the API server up

    async def _sync(self, controller: Controller, namespace: str, name: str) -> None:
        shown = f"{namespace}/{name}" if namespace else name
        self.synced += 1
        try:
            for again_ns, again_name, delay in await controller.sync(namespace, name):
                self.enqueue(controller.name, again_ns, again_name, delay)
        except Malformed as exc:
            log.warning("controller %s: skipping %s: %s", controller.name, shown, exc)
        except errors.ApiError as exc:
            log.warning("controller %s: %s: %s", controller.name, shown, exc.message)
            self.enqueue(controller.name, namespace, name, 1.0)
        except Exception:
            log.exception("controller %s: syncing %s failed", controller.name, shown)
