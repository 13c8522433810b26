"""Property of the --workers layout: random writes sent at once through two front-ends (each a
replica of the store, connected to it as kubesim-api-N processes are) never share a
resourceVersion, every watcher on either front-end sees the events in resourceVersion order and
rebuilds the store's final state, and both replicas end equal to the store."""

from __future__ import annotations

import asyncio
import random
import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim import errors, persistence
from kubesim.api import NAMESPACES, PODS, Api
from kubesim.frontend import consistently
from kubesim.replica import ReplicaStore
from kubesim.store import Store, request_committed
from tests.kubesim.test_watch_property import OPS, apply, replay
from tests.kubesim.workers_harness import StoreSide


async def _write(api: Api, replica: ReplicaStore, op: str, name: str, value: int) -> int | None:
    """The resourceVersion the client is told, or None if nothing was written."""
    try:
        answer = await consistently(replica, lambda: apply(api, op, name, value))
    except errors.ApiError as exc:
        assert exc.code in (404, 409, 422), exc.status()
        return None
    if (
        not request_committed.get()
        or not isinstance(answer, dict)
        or answer.get("kind") == "Status"
    ):
        return None  # nothing written (an update that changes nothing answers the stored object)
    return int(answer["metadata"]["resourceVersion"])


async def run(ops: tuple[list[Any], list[Any]], journaled: bool, data_dir: Path) -> None:
    store = Store(history_size=1000)
    wal = persistence.open_data_dir(data_dir, store) if journaled else None
    await store.put(NAMESPACES.key, {"metadata": {"name": "default"}}, None)
    side = StoreSide(store, "token")
    frontends = [await side.connect() for _ in range(2)]
    apis = [Api(f.replica, rng=random.Random(i)) for i, f in enumerate(frontends)]
    watchers = [
        f.replica.watch(PODS.key, "default", None, f.replica.resource_version) for f in frontends
    ]
    try:

        async def client(index: int) -> list[int]:
            told = []
            for op, name, value in ops[index]:
                rv = await _write(apis[index], frontends[index].replica, op, name, value)
                if rv is not None:
                    told.append(rv)
            return told

        told = await asyncio.gather(client(0), client(1))
        # no two acknowledged writes share a resourceVersion, across front-ends
        everything = told[0] + told[1]
        assert len(everything) == len(set(everything))
        for frontend in frontends:
            await frontend.replica.sync()
        final = {o["metadata"]["name"]: o for o in store.items(PODS.key, "default")}
        for frontend, watcher in zip(frontends, watchers, strict=True):
            replica_items = frontend.replica.items(PODS.key, "default")
            assert {o["metadata"]["name"]: o for o in replica_items} == final
            # each watcher sees the events in resourceVersion order, ending as the store
            seen = await replay(watcher)
            assert seen == final
    finally:
        await side.close()
        if wal is not None:
            await wal.drain()
            wal.close()


@settings(max_examples=25, deadline=None)
@given(ops=st.tuples(OPS, OPS), journaled=st.booleans())
def test_two_frontends_never_share_a_resource_version(
    ops: tuple[list[Any], list[Any]], journaled: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(ops, journaled, Path(tmp) / "data"))


class HeldJournal:
    """A journal whose appends become durable only when the test says so."""

    def __init__(self) -> None:
        self.pending: list[asyncio.Future[None]] = []

    def append(self, records: list[bytes]) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.pending.append(future)
        return future

    def reserve(self, rv: int) -> int:
        return rv + 1000


async def test_a_front_end_started_during_a_write_gets_only_durable_state() -> None:
    store = Store(history_size=100)
    journal = HeldJournal()
    store.attach_journal(journal)

    async def durable(write: Any) -> None:
        task = asyncio.ensure_future(write)
        await asyncio.sleep(0)
        store.on_durable(1)
        journal.pending.pop().set_result(None)
        await task

    await durable(store.put(NAMESPACES.key, {"metadata": {"name": "default"}}, None))
    pod = {"metadata": {"name": "a", "namespace": "default"}, "spec": {}}
    writing = asyncio.ensure_future(store.put(PODS.key, pod, None))
    await asyncio.sleep(0)
    assert store.get(PODS.key, "default", "a") is not None  # applied, not yet durable
    side = StoreSide(store, "token")
    try:
        frontend = await side.connect()
        replica = frontend.replica
        assert replica.get(PODS.key, "default", "a") is None
        assert replica.get(NAMESPACES.key, "", "default") is not None
        assert replica.resource_version == store.published_resource_version == 1
        watcher = replica.watch(PODS.key, None, None, replica.resource_version)
        store.on_durable(1)
        journal.pending.pop().set_result(None)
        await writing
        await replica.sync()
        assert replica.get(PODS.key, "default", "a") == store.get(PODS.key, "default", "a")
        lines = await watcher.next_batch()
        assert [orjson.loads(line)["type"] for line in lines] == ["ADDED"]
    finally:
        await side.close()
