"""A front-end's replica of the store (`--workers N`): reads served locally, writes sent to the
store process as compare-and-swap commits.

The replica holds only what the store made durable (it is fed by the store's stream of durable
events), so no answer or watch of a front-end can show a write a crash could undo. It keeps its
own watch history from that stream, in resourceVersion order, and serves watches from it.
Before a request is served, `sync()` asks the store for its newest durable resourceVersion and
the replica reaches it: a client that wrote through one front-end then reads through another
sees its write (kube-apiserver's consistent reads from its watch cache do the same).
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
from typing import Any

import orjson

from kubesim import errors, ipc, json_limits
from kubesim.meta import Obj
from kubesim.store import Store, request_committed
from kubesim.watch import Event

# set when a commit of the current request lost its compare-and-swap: the request is computed
# again over the caught-up replica (frontend.consistent_middleware), as kube-apiserver retries
# its updates against etcd
replica_stale: contextvars.ContextVar[bool] = contextvars.ContextVar("replica_stale", default=False)


class StoreGone(Exception):
    """The store process closed the connection: this front-end must exit."""


class ReplicaStore(Store):
    def __init__(self, history_size: int) -> None:
        super().__init__(history_size=history_size)
        self._outbox: ipc.Outbox | None = None
        self._ids = itertools.count(1)
        self._requests: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._asked: asyncio.Future[dict[str, Any]] | None = None  # the rv question on the wire
        self._next: asyncio.Future[dict[str, Any]] | None = None  # its waiters' question

    # ---- the stream --------------------------------------------------------------------------
    @staticmethod
    async def read_hello(reader: asyncio.StreamReader) -> Any:
        """The store's first message: the settings every front-end serves with."""
        return await ReplicaStore._expect(reader, "hello")

    async def attach(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Load the store's snapshot; `follow` then applies the stream that continues it."""
        self._outbox = ipc.Outbox(writer)
        while True:
            message = await self._expect(reader, "objects", "ready")
            if "ready" in message:
                self.set_resource_version(int(message["ready"]))
                return
            for key, obj in message["objects"]:
                self.load(key, obj)

    @staticmethod
    async def _expect(reader: asyncio.StreamReader, *kinds: str) -> Any:
        message = await ipc.read_message(reader)
        if message is None:
            raise StoreGone("the store closed the connection while a front-end started")
        if not isinstance(message, dict) or not any(kind in message for kind in kinds):
            raise ipc.ProtocolError(f"expected {' or '.join(kinds)}, got {message!r:.200}")
        return message[kinds[0]] if len(kinds) == 1 else message

    async def follow(self, reader: asyncio.StreamReader) -> None:
        """Apply the store's events and answers until it closes the connection."""
        try:
            while (message := await ipc.read_message(reader)) is not None:
                if isinstance(message, bytes):
                    for header, obj in ipc.event_records(message):
                        self._apply_record(orjson.loads(header), obj)
                    continue
                if "rv" in message:  # everything up to it came before this answer
                    self._advance(int(message["rv"]))
                waiter = self._requests.pop(message.get("re"), None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(message)
        finally:
            for waiter in self._requests.values():
                if not waiter.done():
                    waiter.set_exception(StoreGone("the store process is gone"))
            self._requests.clear()

    def _apply_record(self, record: dict[str, Any], encoded: bytes) -> None:
        rv, key = int(record["rv"]), record["k"]
        if encoded:
            obj = orjson.loads(encoded)
            meta = obj["metadata"]
            namespace = meta.get("namespace", "")
            old = self.get(key, namespace, meta["name"])
            self.load(key, obj)
            kind = "ADDED" if old is None else "MODIFIED"
            event = Event(kind, obj, old, rv, namespace, encoded)
        else:
            namespace = record["ns"]
            old = self.get(key, namespace, record["n"])
            if old is None:  # cannot happen with one ordered stream; keep the counter right
                self._advance(rv)
                return
            self.unload(key, namespace, record["n"])
            gone = {**old, "metadata": {**old["metadata"], "resourceVersion": str(rv)}}
            event = Event("DELETED", gone, old, rv, namespace)
        self._rv = rv
        self._publish(key, event)

    def _advance(self, rv: int) -> None:
        """The store answered with `rv`: no event up to it is missing (the undone writes of a
        failed disk never come), so the replica is current up to it."""
        if rv > self._published_rv:
            self._rv = self._published_rv = rv

    def items_at(self, key: str, namespace: str | None, rv: int) -> list[Obj] | None:
        """Objects as they were at resourceVersion `rv`, sorted as items(); None if the watch
        history no longer reaches back to it. Serves a list's later pages on another front-end
        than the first, as etcd serves them at the list's revision."""
        log = self._logs.get(key)
        oldest = log.oldest_valid_rv if log is not None else self._start_rv
        if rv < oldest or rv > self._published_rv:
            return None
        state = {
            (o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
            for o in self.items(key, namespace)
        }
        for event in reversed(log.history if log is not None else ()):
            if event.rv <= rv:
                break
            if namespace is not None and event.namespace != namespace:
                continue
            place = (event.namespace, event.obj["metadata"]["name"])
            if event.old is None:
                state.pop(place, None)
            else:
                state[place] = event.old
        return [state[place] for place in sorted(state)]

    # ---- requests to the store ---------------------------------------------------------------
    async def _request(self, message: dict[str, Any]) -> dict[str, Any]:
        outbox = self._outbox
        if outbox is None or outbox.closed:
            raise errors.internal("the store process is not reachable")
        request_id = next(self._ids)
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._requests[request_id] = waiter
        outbox.send({**message, "id": request_id})
        try:
            answer = await waiter
        except StoreGone as exc:
            raise errors.internal(str(exc)) from exc
        error = answer.get("error")
        if error is not None:
            raise errors.ApiError(
                int(error["code"]), error["reason"], error["message"], error.get("details")
            )
        return answer

    async def sync(self) -> None:
        """Wait until the replica holds every write the store made durable before this call.

        Concurrent callers share questions: one on the wire, and one more for everyone who
        came after it was sent (its answer could predate their requests)."""
        if self._asked is None:
            self._asked = question = self._ask()
        else:
            if self._next is None:
                self._next = asyncio.get_running_loop().create_future()
            question = self._next
        await asyncio.shield(question)

    def _ask(self) -> asyncio.Future[dict[str, Any]]:
        task = asyncio.ensure_future(self._request({"op": "rv"}))
        task.add_done_callback(self._answered)
        return task

    def _answered(self, done: asyncio.Future[dict[str, Any]]) -> None:
        self._asked = None
        waiting, self._next = self._next, None
        if waiting is None:
            return
        self._asked = question = self._ask()

        def relay(answered: asyncio.Future[dict[str, Any]]) -> None:
            if waiting.done():
                return
            if answered.cancelled():
                waiting.cancel()
            elif (exc := answered.exception()) is not None:
                waiting.set_exception(exc)
            else:
                waiting.set_result(answered.result())

        question.add_done_callback(relay)

    async def commit(self, changes: list[tuple[str, Obj | None, Obj | None]]) -> list[Event]:
        """Send (key, new, old) changes to the store, each conditional on `old` being still the
        stored version (or the name being free); raises 409 Conflict, marking the request stale,
        if another write got there first."""
        json_limits.check_storable(changes)  # refused here, not after a round trip
        wire = []
        for key, new, old in changes:
            meta = (new if new is not None else old or {})["metadata"]
            replaced = None if old is None else old["metadata"].get("resourceVersion")
            wire.append([key, new, replaced, meta.get("namespace", ""), meta["name"]])
        answer = await self._request({"op": "commit", "changes": wire})
        if answer.get("stale"):
            replica_stale.set(True)
            key, new, old = changes[0]
            name = ((new or old or {}).get("metadata") or {}).get("name", "")
            raise errors.ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {key} "{name}": the object has been '
                "modified; please apply your changes to the latest version and try again",
                {"name": name, "kind": key},
            )
        request_committed.set(True)
        events = []
        for (_key, new, old), rv in zip(changes, answer["ok"], strict=True):
            # the stream brought these events ahead of the answer; the caller gets its own
            # objects stamped, as Store.commit stamps them
            if new is not None:
                meta = new["metadata"]
                meta["resourceVersion"] = str(rv)
                kind = "ADDED" if old is None else "MODIFIED"
                events.append(Event(kind, new, old, rv, meta.get("namespace", "")))
            else:
                assert old is not None
                meta = old["metadata"]
                gone = {**old, "metadata": {**meta, "resourceVersion": str(rv)}}
                events.append(Event("DELETED", gone, old, rv, meta.get("namespace", "")))
        return events

    async def ready(self) -> None:
        """Tell the store this front-end serves (the store announces the cluster after all)."""
        await self._request({"op": "ready"})

    async def control_node(self, name: str, action: str) -> bool:
        answer = await self._request({"op": "node", "name": name, "action": action})
        return bool(answer["ok"])
