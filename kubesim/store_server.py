"""The store process's side of `--workers N`: serves each API front-end over a Unix socket.

Each front-end gets a snapshot of the durable state, then every durable event in
resourceVersion order (the journal's records, encoded once for all front-ends), and its
compare-and-swap commits answered after their fsync. Ordering, resourceVersions and the
write-ahead log stay this process's alone (store.py), so the guarantees are the store's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import orjson

from kubesim import errors, ipc
from kubesim.controllers.setup import KubeletSwitch
from kubesim.meta import Obj
from kubesim.store import Store
from kubesim.watch import Event

log = logging.getLogger(__name__)

# objects per snapshot message: small enough to keep each message a few MB
SNAPSHOT_CHUNK = 2000


class StoreServer:
    """Front-end connections over one Store; `serve` runs one connection until it ends."""

    def __init__(self, store: Store, hello: dict[str, Any], node_control: KubeletSwitch) -> None:
        self._store = store
        self._hello = hello
        self._node_control = node_control
        self._outboxes: set[ipc.Outbox] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        store.add_listener(self._on_event)

    def _on_event(self, key: str, event: Event) -> None:
        if not self._outboxes:
            return
        record = _record(key, event)
        for outbox in self._outboxes:
            outbox.event(record)

    async def serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        on_ready: Callable[[], None] = lambda: None,
    ) -> None:
        """One front-end's connection until it closes; `on_ready` once it serves the API."""
        outbox = ipc.Outbox(writer)
        store = self._store
        outbox.send({"hello": self._hello})
        # no await from here to the add below: the stream continues exactly where it ends
        objects = store.durable_objects()
        for start in range(0, len(objects), SNAPSHOT_CHUNK):
            outbox.send({"objects": objects[start : start + SNAPSHOT_CHUNK]})
        outbox.send({"ready": store.published_resource_version})
        self._outboxes.add(outbox)
        try:
            while (message := await ipc.read_message(reader)) is not None:
                op = message.get("op") if isinstance(message, dict) else None
                if op == "rv":  # the most frequent question needs no task of its own
                    rv = store.published_resource_version
                    outbox.send({"re": message.get("id"), "rv": rv})
                    continue
                if op == "commit" and not store.journaled:  # nothing to wait for: no task
                    outbox.send({"re": message.get("id"), **self._answer_now(message)})
                    continue
                if op == "ready":
                    on_ready()
                task = asyncio.create_task(self._answer(outbox, message))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except (ipc.ProtocolError, ConnectionError) as exc:
            log.warning("front-end connection failed: %s", exc)
        finally:
            self._outboxes.discard(outbox)
            writer.close()

    async def _answer(self, outbox: ipc.Outbox, message: Any) -> None:
        request_id = message.get("id") if isinstance(message, dict) else None
        try:
            answer = await self._handle(message)
        except errors.ApiError as exc:
            answer = {"error": exc.status()}
        except (TypeError, ValueError, KeyError, IndexError) as exc:
            log.exception("malformed request from a front-end")
            answer = {"error": errors.internal(f"malformed front-end request: {exc}").status()}
        outbox.send({"re": request_id, **answer})

    def _answer_now(self, message: dict[str, Any]) -> dict[str, Any]:
        """A commit to a store without a journal (applied and published at once)."""
        try:
            changes = self._resolve(message["changes"])
            if changes is None:  # no write waits for a disk: the winner is already streamed
                return {"stale": True, "rv": self._store.published_resource_version}
            return {"ok": [event.rv for event in self._store.commit_now(changes)]}
        except errors.ApiError as exc:
            return {"error": exc.status()}
        except (TypeError, ValueError, KeyError, IndexError) as exc:
            log.exception("malformed request from a front-end")
            return {"error": errors.internal(f"malformed front-end request: {exc}").status()}

    async def _handle(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message["op"]
        store = self._store
        if op == "rv":
            # every event up to it is already in this front-end's outbox, ahead of the answer
            return {"rv": store.published_resource_version}
        if op == "commit":
            return await self._commit(message["changes"])
        if op == "ready":
            return {"ok": True}
        if op == "node":
            return {"ok": await self._node_control(str(message["name"]), str(message["action"]))}
        raise ValueError(f"unknown operation {op!r}")

    def _resolve(self, wire: list[list[Any]]) -> list[tuple[str, Obj | None, Obj | None]] | None:
        """The compare-and-swap: the changes against the stored objects they replace, or None
        if another write got there first."""
        store = self._store
        changes: list[tuple[str, Obj | None, Obj | None]] = []
        for key, new, replaced, namespace, name in wire:
            current = store.get(key, namespace, name)
            current_rv = None if current is None else current["metadata"].get("resourceVersion")
            if current_rv != replaced:
                return None
            changes.append((key, new, current))
        return changes

    async def _commit(self, wire: list[list[Any]]) -> dict[str, Any]:
        store = self._store
        changes = self._resolve(wire)
        if changes is None:
            # once the write that got there first is durable (and so streamed ahead of this
            # answer) the front-end computes the request again over it
            await store.settle()
            return {"stale": True, "rv": store.published_resource_version}
        # the front-end checked them (json_limits) before sending: the store's one core is the
        # layout's bottleneck, so it does not walk each object a second time
        events = await store.commit_checked(changes)
        return {"ok": [event.rv for event in events]}


def _record(key: str, event: Event) -> bytes:
    """One event of the stream: the object's bytes are the ones the journal wrote."""
    if event.type == "DELETED":
        meta = event.obj["metadata"]
        header = {"rv": event.rv, "k": key, "ns": meta.get("namespace", ""), "n": meta["name"]}
        return ipc.event_record(orjson.dumps(header), b"")
    return ipc.event_record(
        b'{"rv":%d,"k":%s}' % (event.rv, orjson.dumps(key)), event.object_bytes()
    )
