"""Durability for --data-dir: a snapshot plus a write-ahead log with group commit.

Layout: DIR/snapshot.json ({"rv": N, "objects": {key: [obj, ...]}}) and DIR/wal.log (one JSON
record per line, see store.record_bytes). A write is acknowledged only after its record is
fsynced; records queued while a flush is in progress share the next fsync. At start the snapshot
and log are replayed (a torn last line, as kill -9 leaves, is dropped) and compacted into a new
snapshot, and the counter continues from the highest resourceVersion seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from pathlib import Path

import orjson

from kubesim.store import Store

SNAPSHOT = "snapshot.json"
WAL = "wal.log"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replay(data_dir: Path, store: Store) -> int:
    """Load snapshot + log into `store`; returns the last resourceVersion."""
    rv = 0
    snapshot = data_dir / SNAPSHOT
    if snapshot.exists():
        doc = orjson.loads(snapshot.read_bytes())
        rv = int(doc["rv"])
        for key, objs in doc["objects"].items():
            for obj in objs:
                store.load(key, obj)
    wal = data_dir / WAL
    if wal.exists():
        for line in wal.read_bytes().split(b"\n"):
            if not line:
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                break  # torn tail: never acknowledged
            if record["rv"] <= rv:
                continue
            rv = record["rv"]
            if "o" in record:
                store.load(record["k"], record["o"])
            else:
                store.unload(record["k"], record["ns"], record["n"])
    store.set_resource_version(rv)
    return rv


def write_snapshot(data_dir: Path, store: Store) -> None:
    """Atomically replace the snapshot with the store's contents and empty the log."""
    objects: dict[str, list[object]] = {}
    for key, obj in store.iter_all():
        objects.setdefault(key, []).append(obj)
    tmp = data_dir / (SNAPSHOT + ".tmp")
    with open(tmp, "wb") as f:
        f.write(orjson.dumps({"rv": store.resource_version, "objects": objects}))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, data_dir / SNAPSHOT)
    with open(data_dir / WAL, "wb") as f:
        os.fsync(f.fileno())
    _fsync_dir(data_dir)


class WriteAheadLog:
    """Appends records with one fsync per batch; see Store.commit for the callbacks' contract."""

    def __init__(
        self,
        path: Path,
        on_durable: Callable[[int], None],
        on_failed: Callable[[], None],
    ) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._size = os.fstat(self._fd).st_size
        self._on_durable = on_durable
        self._on_failed = on_failed
        self._queue: list[tuple[list[bytes], asyncio.Future[None]]] = []
        self._flushing = False
        self._tasks: set[asyncio.Task[None]] = set()
        self.fsyncs = 0

    def append(self, records: list[bytes]) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((records, future))
        if not self._flushing:
            self._flushing = True
            task = asyncio.get_running_loop().create_task(self._flush_loop())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return future

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)

    async def _flush_loop(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                data = b"".join(b"".join(r + b"\n" for r in records) for records, _ in batch)
                try:
                    await asyncio.to_thread(self._write, data)
                except OSError as exc:
                    self._fail(batch, exc)
                    continue
                self._size += len(data)
                self.fsyncs += 1
                self._on_durable(sum(len(records) for records, _ in batch))
                for _, future in batch:
                    if not future.done():
                        future.set_result(None)
        finally:
            self._flushing = False

    def _fail(self, batch: list[tuple[list[bytes], asyncio.Future[None]]], exc: OSError) -> None:
        # cut any partial write so the log holds only acknowledged records
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self._size)
        failed, self._queue = batch + self._queue, []
        self._on_failed()
        for _, future in failed:
            if not future.done():
                future.set_exception(OSError(exc.errno, exc.strerror or str(exc)))

    async def drain(self) -> None:
        """Wait until every queued record is written (or failed). A write still in flight after
        close() would land in whichever file next reuses the descriptor number, such as the
        snapshot or log of a cluster restarted in the same process."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def close(self) -> None:
        os.close(self._fd)


def open_data_dir(data_dir: Path, store: Store) -> WriteAheadLog:
    """Replay, compact and attach a fresh log to `store`."""
    data_dir.mkdir(parents=True, exist_ok=True)
    replay(data_dir, store)
    write_snapshot(data_dir, store)
    wal = WriteAheadLog(data_dir / WAL, store.on_durable, store.on_failed)
    store.attach_journal(wal)
    return wal
