"""Watches the pods of one namespace and notes when each is first seen bound to a node."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

import aiohttp

from bench.kubeapi import ApiError

Obj = dict[str, Any]


class PodSource(Protocol):
    async def get(self, path: str) -> Obj: ...

    def watch(self, path: str, resource_version: str) -> Any: ...


class PodTracker:
    """`run()` lists then watches (relisting on 410 Gone) until cancelled."""

    def __init__(
        self,
        api: PodSource,
        namespace: str,
        clock: Callable[[], float],
        on_bound: Callable[[str], None] | None = None,
    ) -> None:
        self._api = api
        self._on_bound = on_bound  # told each pod's name once, when first seen bound
        self._path = f"/api/v1/namespaces/{namespace}/pods"
        self._clock = clock
        self.bound_at: dict[str, float] = {}
        self._synced = asyncio.Event()
        self._reached = asyncio.Event()
        self._target: int | None = None

    @property
    def bound_count(self) -> int:
        return len(self.bound_at)

    async def wait_synced(self) -> None:
        await self._synced.wait()

    async def wait_for(self, count: int) -> None:
        self._target = count
        self._check_target()
        await self._reached.wait()

    def observe(self, pod: Obj) -> None:
        name = (pod.get("metadata") or {}).get("name")
        if name and name not in self.bound_at and (pod.get("spec") or {}).get("nodeName"):
            self.bound_at[name] = self._clock()
            if self._on_bound is not None:
                self._on_bound(name)
            self._check_target()

    def _check_target(self) -> None:
        if self._target is not None and len(self.bound_at) >= self._target:
            self._reached.set()

    async def _list(self) -> str:
        listed = await self._api.get(self._path)
        for pod in listed.get("items") or []:
            self.observe(pod)
        return str(listed["metadata"]["resourceVersion"])

    async def run(self) -> None:
        rv = await self._list()
        self._synced.set()
        while True:
            try:
                rv = await self._watch(rv)
            except ApiError as exc:
                if exc.status != 410:
                    raise
                rv = await self._list()
            except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError):
                await asyncio.sleep(0.1)  # reconnect from the last resourceVersion seen

    async def _watch(self, rv: str) -> str:
        """Consume one watch connection; returns the resourceVersion to resume from."""
        async for event in self._api.watch(self._path, rv):
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                raise ApiError(int(obj.get("code") or 500), "WATCH", self._path, b"")
            rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
            if kind in ("ADDED", "MODIFIED"):
                self.observe(obj)
        await asyncio.sleep(0.05)  # the server ended the watch; do not spin if it keeps doing so
        return rv
