"""Record a trace from a live cluster's watch streams (`aiosched record`).

Informers (the scheduler's own list+watch, scheduler/client/informers.py) follow Nodes,
DeviceClasses, ResourceSlices, ResourceClaims and Pods. What was there when recording started
arrives at 0 s; a pod created later arrives when it was first seen; a pod deleted, or finished
(Succeeded or Failed), departs then. Nodes, classes and slices are written as last seen;
pods and claims as first seen, without status and without their node: the replay places them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.client.informers import Informer, ResourceWatch
from scheduler.client.rest import KubeClient
from scheduler.lab.trace import ARRIVAL_ANNOTATION, DEPARTURE_ANNOTATION

#: (kind, apiVersion, list+watch path, optional: a cluster without it records none)
WATCHED = (
    ("Node", "v1", "/api/v1/nodes", False),
    ("DeviceClass", "resource.k8s.io/v1", "/apis/resource.k8s.io/v1/deviceclasses", True),
    ("ResourceSlice", "resource.k8s.io/v1", "/apis/resource.k8s.io/v1/resourceslices", True),
    ("ResourceClaim", "resource.k8s.io/v1", "/apis/resource.k8s.io/v1/resourceclaims", True),
    ("Pod", "v1", "/api/v1/pods", False),
)
#: The most pods one recording keeps (memory stays bounded on a huge cluster).
MAX_PODS = 1_000_000
_FINISHED = ("Succeeded", "Failed")
_DROPPED_META = ("resourceVersion", "uid", "managedFields", "creationTimestamp", "generation")


@dataclass(slots=True)
class _Seen:
    raw: dict[str, Any]

    @property
    def resource_version(self) -> str:
        return str((self.raw.get("metadata") or {}).get("resourceVersion", ""))


def _clean(
    raw: Mapping[str, Any], kind: str, api_version: str, keep_status: bool
) -> dict[str, Any]:
    obj = {key: value for key, value in raw.items() if keep_status or key != "status"}
    meta = {k: v for k, v in (raw.get("metadata") or {}).items() if k not in _DROPPED_META}
    obj.update(kind=kind, apiVersion=api_version, metadata=meta)
    if kind == "Pod":
        obj["spec"] = {k: v for k, v in (raw.get("spec") or {}).items() if k != "nodeName"}
    return obj


@dataclass
class _Kind:
    """One watched kind: the objects in the trace, by namespace/name."""

    kind: str
    api_version: str
    clock: Callable[[], float]
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    arrivals: dict[str, float] = field(default_factory=dict)
    departures: dict[str, float] = field(default_factory=dict)
    dropped: int = 0

    @property
    def is_workload(self) -> bool:
        return self.kind in ("Pod", "ResourceClaim")

    def _key(self, seen: _Seen) -> str:
        meta = seen.raw.get("metadata") or {}
        return f"{meta.get('namespace') or ''}/{meta.get('name')}"

    def on_add(self, seen: _Seen) -> None:
        key = self._key(seen)
        if self.is_workload and key in self.objects:
            return  # a relist: what was first seen stays
        if self.kind == "Pod" and len(self.objects) >= MAX_PODS:
            self.dropped += 1
            return
        self.objects[key] = _clean(seen.raw, self.kind, self.api_version, not self.is_workload)
        self.arrivals[key] = self.clock()
        self.on_update(seen, seen)

    def on_update(self, old: _Seen, new: _Seen) -> None:
        key = self._key(new)
        if not self.is_workload:
            self.objects[key] = _clean(new.raw, self.kind, self.api_version, True)
        elif self.kind == "Pod" and (new.raw.get("status") or {}).get("phase") in _FINISHED:
            self.departures.setdefault(key, self.clock())

    def on_delete(self, seen: _Seen) -> None:
        key = self._key(seen)
        if self.is_workload:
            self.departures.setdefault(key, self.clock())
        else:
            self.objects.pop(key, None)


class Recording:
    """Informers for every watched kind; `objects()` is the trace so far."""

    def __init__(self, client: KubeClient, clock: Callable[[], float] | None = None) -> None:
        started = time.monotonic()
        self._clock = clock or (lambda: time.monotonic() - started)
        self.kinds = [_Kind(kind, version, self._since_synced) for kind, version, _, _ in WATCHED]
        self._synced_at: float | None = None
        self.informers = [
            Informer(client, ResourceWatch(path), lambda raw, _: _Seen(dict(raw)), kind,
                     name=kind.kind, optional=optional)
            for kind, (_, _, path, optional) in zip(self.kinds, WATCHED, strict=True)
        ]  # fmt: skip

    def _since_synced(self) -> float:
        # What the first lists bring arrives at 0: time starts once every kind is listed.
        if self._synced_at is None:
            return 0.0
        return round(max(0.0, self._clock() - self._synced_at), 3)

    async def run(
        self,
        duration: float | None,
        stop: asyncio.Event,
        on_synced: Callable[[], None] = lambda: None,
    ) -> None:
        """Record until `duration` seconds after every kind is listed (then `on_synced` is
        called), or until `stop` is set."""
        tasks = [asyncio.create_task(informer.run()) for informer in self.informers]
        try:
            for informer in self.informers:
                await informer.synced.wait()
            self._synced_at = self._clock()
            on_synced()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), duration)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def objects(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for kind in self.kinds:
            for key, obj in kind.objects.items():
                if kind.kind == "Pod":
                    meta = obj["metadata"]
                    annotations = dict(meta.get("annotations") or {})
                    annotations[ARRIVAL_ANNOTATION] = str(kind.arrivals.get(key, 0.0))
                    if key in kind.departures:
                        annotations[DEPARTURE_ANNOTATION] = str(kind.departures[key])
                    meta["annotations"] = annotations
                out.append(obj)
        return out
