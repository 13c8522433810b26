"""The Events kubesim's in-process components write, and the API server's event TTL.

kube-controller-manager's controllers and the kubelet report what they do as core/v1 Events
through client-go's tools/record recorder (NewRecorder(scheme, EventSource{Component, Host})),
not the events.k8s.io/v1 one the scheduler uses. That recorder's makeEvent/generateEvent
(staging/src/k8s.io/client-go/tools/record/event.go) writes:

- name ``<involved object name>.<UnixNano in hex>``, in the object's namespace (``default`` for
  cluster-scoped objects such as Nodes);
- ``source`` {component, host} and, since client-go 1.30, ``reportingComponent`` = component and
  ``reportingInstance`` = host;
- ``firstTimestamp`` = ``lastTimestamp`` = now (seconds), ``count`` 1, no ``eventTime``.

``EventRecorder`` writes exactly that straight into the store, as the simulated kubelets write
pods' status, so an event costs one store write and never a request. Upstream's correlator
aggregates a burst of similar events into one with a growing count; kubesim's components write
an event per action (a pod created, a replica set scaled), never in loops that repeat, so none is
needed here, and ``EventTTL`` keeps the store bounded as kube-apiserver's ``--event-ttl``
(default 1 h) does: each event is deleted that long after its last write.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubesim.background import BackgroundTasks
from kubesim.meta import Obj, new_uid, rfc3339
from kubesim.store import Store
from kubesim.watch import Event

log = logging.getLogger(__name__)

EVENTS = "events"
DEFAULT_EVENT_TTL = 3600.0  # kube-apiserver --event-ttl

NORMAL = "Normal"
WARNING = "Warning"

# EventSource.Component of each upstream recorder kubesim imitates (the NewRecorder calls in
# pkg/controller/*/ and pkg/kubelet; kube-controller-manager names in cmd/.../names)
DEPLOYMENT_CONTROLLER = "deployment-controller"
REPLICASET_CONTROLLER = "replicaset-controller"
REPLICATION_CONTROLLER = "replication-controller"
STATEFULSET_CONTROLLER = "statefulset-controller"
DAEMONSET_CONTROLLER = "daemonset-controller"
JOB_CONTROLLER = "job-controller"
NODE_CONTROLLER = "node-controller"
TAINT_EVICTION_CONTROLLER = "taint-eviction-controller"
KUBELET = "kubelet"


def reference(obj: Obj, kind: str, api_version: str, field_path: str = "") -> dict[str, Any]:
    """reference.GetReference: the ObjectReference an event's involvedObject holds (kind and
    apiVersion from the scheme, i.e. the caller, not the object)."""
    meta = obj.get("metadata") or {}
    ref: dict[str, Any] = {
        "kind": kind,
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "apiVersion": api_version,
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    if field_path:
        ref["fieldPath"] = field_path
    return {k: v for k, v in ref.items() if v}


@dataclass(frozen=True, slots=True)
class Source:
    """core/v1 EventSource: the recorder's component and, for a kubelet, its node."""

    component: str
    host: str = ""


class EventRecorder:
    """client-go's core/v1 recorder writing into kubesim's store (see the module docstring)."""

    def __init__(self, store: Store, clock: Callable[[], float], rng: Any) -> None:
        self._store = store
        self._clock = clock
        self._rng = rng
        self._last_nanos = 0
        self.written = 0

    def _nanos(self) -> int:
        # UnixNano as upstream names events, kept strictly increasing: two events of one object
        # in the same clock tick must not share a name
        nanos = max(int(self._clock() * 1e9), self._last_nanos + 1)
        self._last_nanos = nanos
        return nanos

    def make(
        self, source: Source, ref: dict[str, Any], event_type: str, reason: str, message: str
    ) -> tuple[str, Obj, None]:
        """The (key, new, old) store change writing one event, for a caller's own commit."""
        nanos = self._nanos()
        now = rfc3339(nanos / 1e9)
        event_source = {"component": source.component}
        if source.host:
            event_source["host"] = source.host
        event: Obj = {
            "kind": "Event",
            "apiVersion": "v1",
            "metadata": {
                "name": f"{ref.get('name', '')}.{nanos:x}",
                "namespace": ref.get("namespace") or "default",
                "uid": new_uid(self._rng),
                "creationTimestamp": now,
            },
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "source": event_source,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": event_type,
            "eventTime": None,
            "reportingComponent": source.component,
            "reportingInstance": source.host,
        }
        return EVENTS, event, None

    async def record(
        self, source: Source, ref: dict[str, Any], event_type: str, reason: str, message: str
    ) -> None:
        """Write one event; a failure is logged, never raised, as upstream's recorder drops it."""
        await self.write([self.make(source, ref, event_type, reason, message)])

    async def write(self, changes: list[tuple[str, Obj, None]]) -> None:
        if not changes:
            return
        try:
            await self._store.commit(list(changes))
        except Exception as exc:  # an event lost must not fail the action it reports
            log.warning("writing %d event(s) failed: %s", len(changes), exc)
            return
        self.written += len(changes)


class EventTTL:
    """Deletes each Event `ttl` seconds after its last write, as etcd's lease on every event
    key does for kube-apiserver (pkg/registry/core/event/storage: TTLFunc = --event-ttl).

    A store listener notes every write in a heap by expiry; one task sleeps until the earliest,
    then deletes the events whose newest write is that old. Events found at start get a full TTL
    (the leases of a restarted kubesim are not kept).
    """

    def __init__(
        self, store: Store, ttl: float = DEFAULT_EVENT_TTL, clock: Callable[[], float] | None = None
    ) -> None:
        self._store = store
        self.ttl = ttl
        self._clock = clock or (lambda: asyncio.get_running_loop().time())
        # (expiry, namespace, name, resourceVersion of the write that set it)
        self._heap: list[tuple[float, str, str, str]] = []
        self._wakeup = asyncio.Event()
        self._tasks = BackgroundTasks("event ttl")
        self._listening = False
        self.expired = 0

    def start(self) -> None:
        if self.ttl <= 0:
            return
        self._listening = True
        self._store.add_listener(self._on_event)
        for event in self._store.items(EVENTS):
            self._note(event)
        self._tasks.start_soon(self._work, name="event ttl")

    async def stop(self) -> None:
        self._listening = False  # the store keeps its listeners: make ours inert
        await self._tasks.close()

    def _note(self, event: Obj) -> None:
        meta = event["metadata"]
        heapq.heappush(
            self._heap,
            (
                self._clock() + self.ttl,
                meta.get("namespace", ""),
                meta["name"],
                str(meta.get("resourceVersion", "")),
            ),
        )
        if len(self._heap) == 1:
            self._wakeup.set()

    def _on_event(self, key: str, event: Event) -> None:
        if key == EVENTS and self._listening and event.type != "DELETED":
            self._note(event.obj)

    async def expire_due(self) -> int:
        """Delete every event whose last write is `ttl` old; returns how many."""
        now = self._clock()
        gone: list[tuple[str, Obj | None, Obj | None]] = []
        while self._heap and self._heap[0][0] <= now:
            _, namespace, name, rv = heapq.heappop(self._heap)
            current = self._store.get(EVENTS, namespace, name)
            # a later write left its own, later entry: this one is stale
            if current is not None and current["metadata"].get("resourceVersion") == rv:
                gone.append((EVENTS, None, current))
        if gone:
            await self._store.commit(gone)
            self.expired += len(gone)
        return len(gone)

    async def _work(self) -> None:
        while True:
            if not self._heap:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            wait = self._heap[0][0] - self._clock()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            try:
                await self.expire_due()
            except Exception:
                log.exception("expiring events failed")
                await asyncio.sleep(1.0)
