"""In-memory object storage with one monotonic resourceVersion, watch history and fan-out.

Stored objects are treated as immutable: a write stores a new dict and never mutates one that
readers, watch history or list snapshots may still hold. That is what lets reads and events
share objects without deep copies.

With a journal (--data-dir), a write is applied in memory at once (so the next write sees it and
resourceVersions stay ordered), acknowledged only once fsynced, and published to watchers in
resourceVersion order when its batch is durable. If the disk fails, every write not yet durable is
rolled back, newest first, so memory again equals what is on disk.

Clients never see a write a crash could undo, as etcd's readers: a request's answer waits in
settle() until everything it could have read is durable (persistence.durable_reads_middleware),
and a watch that starts with the current state holds its first lines until that state is durable.
Every resourceVersion handed out lies below a ceiling the journal reserved on disk beforehand, so
after kill -9 the counter resumes above anything a client may have seen.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from kubesim import errors, json_limits
from kubesim.watch import Event, Predicate, Render, Watcher

Obj = dict[str, Any]
logger = logging.getLogger(__name__)

# True once the current request (its task) committed a durable write: its own answer then needs
# no settle(), so writers do not wait for each other's batches (see durable_reads_middleware)
request_committed: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "request_committed", default=False
)

# Watch history kept per resource type. The SchedulingBasic workload (5000 nodes, 10,000 pods each
# created, bound and turned Running) makes about 30k pod events in its minute while 5000 node
# leases renew every 10 s (30k lease events, kept apart): 100k per type lets a scheduler's pod
# watch resume from any resourceVersion of the run instead of relisting on 410. Measured: about
# 260 MB resident for that whole run, history included.
DEFAULT_HISTORY = 100_000


class Journal(Protocol):
    def append(self, records: list[bytes]) -> asyncio.Future[None]: ...

    def reserve(self, rv: int) -> int:
        """Durably record a ceiling of at least `rv` for resourceVersions; returns it."""
        ...


@dataclass(slots=True)
class _ResourceLog:
    history: deque[Event]
    oldest_valid_rv: int  # a watch may start at any RV >= this one
    watchers: set[Watcher] = field(default_factory=set)


class StoreListener(Protocol):
    def __call__(self, key: str, event: Event) -> None: ...


def record_bytes(key: str, event: Event) -> bytes:
    """The journal line for one event (see persistence.replay)."""
    if event.type == "DELETED":
        meta = event.obj["metadata"]
        return orjson.dumps(
            {"rv": event.rv, "k": key, "ns": meta.get("namespace", ""), "n": meta["name"]}
        )
    return b'{"rv":%d,"k":%s,"o":%s}' % (event.rv, orjson.dumps(key), event.object_bytes())


class Store:
    def __init__(self, history_size: int = DEFAULT_HISTORY, watcher_buffer: int = 100_000) -> None:
        self._objects: dict[str, dict[str, dict[str, Obj]]] = {}
        self._logs: dict[str, _ResourceLog] = {}
        self._history_size = history_size
        # a watch from the oldest retained resourceVersion must hold all of history and more
        self._watcher_buffer = max(watcher_buffer, 2 * history_size)
        self._rv = 0
        self._published_rv = 0
        self._start_rv = 0
        self._journal: Journal | None = None
        self._reserved_rv = sys.maxsize  # no journal: nothing to survive a crash
        self._pending: deque[tuple[str, Event]] = deque()
        self._settle_waiters: deque[tuple[int, asyncio.Future[None]]] = deque()
        self._held_watchers: list[Watcher] = []
        self._listeners: list[StoreListener] = []

    # ---- setup -------------------------------------------------------------------------------
    def attach_journal(self, journal: Journal) -> None:
        self._journal = journal
        self._reserved_rv = self._rv  # the first write reserves

    def load(self, key: str, obj: Obj) -> None:
        """Put a recovered object without an event (replay at start)."""
        meta = obj["metadata"]
        self._objects.setdefault(key, {}).setdefault(meta.get("namespace", ""), {})[
            meta["name"]
        ] = obj

    def unload(self, key: str, namespace: str, name: str) -> None:
        self._objects.get(key, {}).get(namespace, {}).pop(name, None)

    def set_resource_version(self, rv: int) -> None:
        """After replay: continue the counter from `rv` (at least the last one a client could
        have seen); older history is gone, so watches from before it answer 410."""
        self._rv = self._published_rv = self._start_rv = rv
        for log in self._logs.values():
            log.oldest_valid_rv = rv

    def add_listener(self, listener: StoreListener) -> None:
        """In-process subscribers (simulated nodes) called for every published event."""
        self._listeners.append(listener)

    # ---- reads -------------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        return self._rv

    @property
    def published_resource_version(self) -> int:
        """Every write up to this one is durable (or was rolled back after a disk failure)."""
        return self._published_rv

    async def settle(self) -> None:
        """Wait until every write applied so far is durable: an answer computed from the
        current state may then be sent. Raises 500 if the disk failed and they were undone."""
        rv = self._rv
        if rv <= self._published_rv:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._settle_waiters.append((rv, waiter))
        await waiter

    def get(self, key: str, namespace: str, name: str) -> Obj | None:
        by_ns = self._objects.get(key)
        if by_ns is None:
            return None
        names = by_ns.get(namespace)
        return None if names is None else names.get(name)

    def items(self, key: str, namespace: str | None = None) -> list[Obj]:
        """Objects sorted by (namespace, name), as etcd's key order."""
        by_ns = self._objects.get(key, {})
        if namespace is not None:
            names = by_ns.get(namespace, {})
            return [names[n] for n in sorted(names)]
        return [by_ns[ns][n] for ns in sorted(by_ns) for n in sorted(by_ns[ns])]

    def iter_all(self) -> Iterator[tuple[str, Obj]]:
        for key, by_ns in self._objects.items():
            for names in by_ns.values():
                for obj in names.values():
                    yield key, obj

    def items_at(self, key: str, namespace: str | None, rv: int) -> list[Obj] | None:
        """Objects as they were at resourceVersion `rv`, for a list's later page made by another
        API process; None: one process keeps each list it paged itself (Api._snapshots)."""
        return None

    def durable_objects(self) -> list[tuple[str, Obj]]:
        """Every object as of the newest durable resourceVersion (writes still waiting for their
        fsync undone): what a front-end's replica starts from, the stream continuing it."""
        undone: dict[tuple[str, str, str], Obj | None] = {}
        for key, event in reversed(self._pending):  # the oldest pending write's `old` wins
            meta = event.obj["metadata"]
            undone[(key, meta.get("namespace", ""), meta["name"])] = event.old
        objects = [
            (key, obj)
            for key, obj in self.iter_all()
            if (key, obj["metadata"].get("namespace", ""), obj["metadata"]["name"]) not in undone
        ]
        objects.extend((place[0], old) for place, old in undone.items() if old is not None)
        return objects

    def count(self, key: str, namespace: str | None = None) -> int:
        by_ns = self._objects.get(key, {})
        if namespace is not None:
            return len(by_ns.get(namespace, {}))
        return sum(len(names) for names in by_ns.values())

    # ---- writes ------------------------------------------------------------------------------
    def _log(self, key: str) -> _ResourceLog:
        log = self._logs.get(key)
        if log is None:
            # no log yet means no event for this resource since start: all of it is retained
            log = _ResourceLog(deque(), self._start_rv)
            self._logs[key] = log
        return log

    def _apply(self, key: str, new: Obj | None, old: Obj | None) -> Event:
        """Apply one change in memory, stamping the next resourceVersion on `new`."""
        self._rv += 1
        rv = self._rv
        if new is not None:
            meta = new["metadata"]
            meta["resourceVersion"] = str(rv)
            namespace = meta.get("namespace", "")
            self._objects.setdefault(key, {}).setdefault(namespace, {})[meta["name"]] = new
            return Event("ADDED" if old is None else "MODIFIED", new, old, rv, namespace)
        assert old is not None
        meta = old["metadata"]
        namespace = meta.get("namespace", "")
        by_ns = self._objects[key]
        names = by_ns[namespace]
        del names[meta["name"]]
        if not names:
            del by_ns[namespace]
        # the DELETED event carries the last state with a new resourceVersion, as upstream
        gone = {**old, "metadata": {**meta, "resourceVersion": str(rv)}}
        return Event("DELETED", gone, old, rv, namespace)

    async def commit(self, changes: list[tuple[str, Obj | None, Obj | None]]) -> list[Event]:
        """Apply (key, new, old) changes atomically: new=None deletes old, old=None creates."""
        json_limits.check_storable(changes)  # nothing stored that cannot be served back
        return await self.commit_checked(changes)

    async def commit_checked(
        self, changes: list[tuple[str, Obj | None, Obj | None]]
    ) -> list[Event]:
        """commit() of changes the caller already found storable (a front-end, --workers)."""
        if self._journal is None:
            return self.commit_now(changes)
        if self._rv + len(changes) > self._reserved_rv:
            self._reserve(self._rv + len(changes))
        events = [(key, self._apply(key, new, old)) for key, new, old in changes]
        self._pending.extend(events)
        try:
            await self._journal.append([record_bytes(key, event) for key, event in events])
        except OSError as exc:
            raise _disk_failed(exc) from exc
        request_committed.set(True)
        return [event for _, event in events]

    @property
    def journaled(self) -> bool:
        return self._journal is not None

    def commit_now(self, changes: list[tuple[str, Obj | None, Obj | None]]) -> list[Event]:
        """commit_checked() without a journal, where nothing is waited for: the store process
        answers a front-end's commit without a task of its own."""
        assert self._journal is None
        events = [(key, self._apply(key, new, old)) for key, new, old in changes]
        for key, event in events:
            self._publish(key, event)
        return [event for _, event in events]

    def _reserve(self, rv: int) -> None:
        """Raise the on-disk ceiling before handing out `rv`; refused (500) if the disk is."""
        assert self._journal is not None
        try:
            self._reserved_rv = self._journal.reserve(rv)
        except OSError as exc:
            raise _disk_failed(exc) from exc

    async def put(self, key: str, new: Obj, old: Obj | None) -> Obj:
        return (await self.commit([(key, new, old)]))[0].obj

    async def delete(self, key: str, old: Obj) -> Obj:
        return (await self.commit([(key, None, old)]))[0].obj

    def on_durable(self, count: int) -> None:
        """Journal callback: the oldest `count` pending events are on disk; publish them, then
        release the answers and watches that waited for them."""
        for _ in range(count):
            key, event = self._pending.popleft()
            try:
                self._publish(key, event)
            except Exception:  # one bad subscriber must not stall every later write
                logger.exception("publishing %s resourceVersion %d failed", key, event.rv)
        durable = self._published_rv
        waiters = self._settle_waiters
        while waiters and waiters[0][0] <= durable:
            waiter = waiters.popleft()[1]
            if not waiter.done():
                waiter.set_result(None)
        if self._held_watchers:
            held = self._held_watchers
            self._held_watchers = [w for w in held if w.after_rv > durable and not w.closed]
            for watcher in held:
                if watcher.after_rv <= durable:
                    watcher.release()

    def on_failed(self, exc: OSError) -> None:
        """Journal callback: nothing pending reached disk; undo it all, newest first. Answers
        and watches that could have seen it fail; the undone resourceVersions stay unused."""
        while self._pending:
            key, event = self._pending.pop()
            meta = event.obj["metadata"]
            namespace, name = meta.get("namespace", ""), meta["name"]
            if event.old is None:
                self.unload(key, namespace, name)
            else:
                self.load(key, event.old)
        self._published_rv = self._rv  # memory equals disk again
        while self._settle_waiters:
            waiter = self._settle_waiters.popleft()[1]
            if not waiter.done():
                waiter.set_exception(_disk_failed(exc))
        for watcher in self._held_watchers:
            watcher.close()  # its initial state held undone writes: the client re-watches
        self._held_watchers = []

    def _publish(self, key: str, event: Event) -> None:
        self._published_rv = event.rv
        log = self._log(key)
        history = log.history
        if len(history) >= self._history_size:
            log.oldest_valid_rv = history.popleft().rv
        history.append(event)
        for watcher in log.watchers:
            watcher.offer(event)
        if log.watchers:
            log.watchers = {w for w in log.watchers if not w.closed}
        for listener in self._listeners:
            listener(key, event)

    # ---- watch -------------------------------------------------------------------------------
    def watch(
        self,
        key: str,
        namespace: str | None,
        predicate: Predicate | None,
        since: int | None,
        render: Render | None = None,
    ) -> Watcher:
        """Start a watch: since=None sends the current state as ADDED first, else history after it.

        Raises 410 Expired if events after `since` are no longer retained. `render` converts
        stored objects for a resource served as a view of this key's storage.
        """
        log = self._log(key)
        if since is None:
            watcher = Watcher(namespace, predicate, self._rv, self._watcher_buffer, render)
            if self._rv > self._published_rv:  # the state below holds writes not yet durable
                watcher.hold()
                self._held_watchers.append(watcher)
            for obj in self.items(key, namespace):
                if predicate is None or predicate(obj):
                    watcher.push_line(Event("ADDED", obj, None, 0, "").view_line(render), 0)
        else:
            if since < log.oldest_valid_rv:
                raise errors.too_old_resource_version(since, log.oldest_valid_rv)
            watcher = Watcher(namespace, predicate, since, self._watcher_buffer, render)
            for event in log.history:
                watcher.offer(event)
        log.watchers.add(watcher)
        return watcher

    def stop_watch(self, key: str, watcher: Watcher) -> None:
        watcher.close()
        self._log(key).watchers.discard(watcher)


def _disk_failed(exc: OSError) -> errors.ApiError:
    return errors.internal(f"writing to the data directory failed: {exc}")
