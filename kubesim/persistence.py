"""Durability for --data-dir: a snapshot plus a write-ahead log with group commit.

Layout: DIR/snapshot.json ({"rv": N, "objects": {key: [obj, ...]}}), DIR/wal.log (one JSON
record per line, see store.record_bytes) and DIR/rv.reserved (a resourceVersion ceiling). A write
is acknowledged, and visible to any reader, only after its record is fsynced; records queued while
a flush is in progress share the next fsync. At start the snapshot and log are replayed (a torn
last line, as kill -9 leaves, is dropped) and compacted into a new snapshot, and the counter
continues above both the highest resourceVersion replayed and the reserved ceiling, which was on
disk before any resourceVersion under it was handed out: none is ever used twice.

Every file is created 0600 (they hold every object, Secrets included) and the directory, when
kubesim creates it, 0700.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path

import orjson
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from kubesim import errors
from kubesim.background import BackgroundTasks
from kubesim.store import Store, request_committed

SNAPSHOT = "snapshot.json"
WAL = "wal.log"
RESERVED = "rv.reserved"
# resourceVersions reserved per fsync of rv.reserved: one small fsync per this many writes
RESERVE_BLOCK = 10_000
FILE_MODE = 0o600
DIR_MODE = 0o700

logger = logging.getLogger(__name__)


def prepare_data_dir(data_dir: Path) -> None:
    """Create the directory (0700) if it does not exist; an existing one keeps its mode."""
    data_dir.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)


def _open_private(path: Path, flags: int) -> int:
    """os.open creating 0600; an existing file (of an older kubesim) is tightened too."""
    fd = os.open(path, flags | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replay(data_dir: Path, store: Store) -> int:
    """Load snapshot + log into `store` and continue its counter above everything a client may
    have seen; returns that resourceVersion."""
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
    rv = max(rv, read_reserved(data_dir))
    store.set_resource_version(rv)
    return rv


def read_reserved(data_dir: Path) -> int:
    """The ceiling the last run reserved (0 if none)."""
    try:
        text = (data_dir / RESERVED).read_bytes().strip()
    except FileNotFoundError:
        return 0
    return int(text) if text.isdigit() else 0


def write_snapshot(data_dir: Path, store: Store) -> None:
    """Atomically replace the snapshot with the store's contents and empty the log."""
    objects: dict[str, list[object]] = {}
    for key, obj in store.iter_all():
        objects.setdefault(key, []).append(obj)
    tmp = data_dir / (SNAPSHOT + ".tmp")
    with os.fdopen(_open_private(tmp, os.O_WRONLY | os.O_TRUNC), "wb") as f:
        f.write(orjson.dumps({"rv": store.resource_version, "objects": objects}))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, data_dir / SNAPSHOT)
    fd = _open_private(data_dir / WAL, os.O_WRONLY | os.O_TRUNC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    _fsync_dir(data_dir)


class ReservedCeiling:
    """DIR/rv.reserved: a fixed-width number rewritten in place and fsynced before any
    resourceVersion up to it is handed out."""

    def __init__(self, path: Path) -> None:
        self._fd = _open_private(path, os.O_WRONLY)
        _fsync_dir(path.parent)

    def reserve(self, rv: int) -> int:
        ceiling = rv + RESERVE_BLOCK
        os.pwrite(self._fd, b"%020d\n" % ceiling, 0)
        os.fsync(self._fd)
        return ceiling

    def close(self) -> None:
        os.close(self._fd)


class WriteAheadLog:
    """Appends records with one fsync per batch; see Store.commit for the callbacks' contract.

    `fsync` is os.fsync; tests replace it to crash between a write and its fsync."""

    def __init__(
        self,
        path: Path,
        on_durable: Callable[[int], None],
        on_failed: Callable[[OSError], None],
        fsync: Callable[[int], None] = os.fsync,
    ) -> None:
        self._fd = _open_private(path, os.O_WRONLY | os.O_APPEND)
        self._size = os.fstat(self._fd).st_size
        self._ceiling = ReservedCeiling(path.parent / RESERVED)
        self._on_durable = on_durable
        self._on_failed = on_failed
        self.fsync = fsync
        self._queue: list[tuple[list[bytes], asyncio.Future[None]]] = []
        self._flushing = False
        self._tasks = BackgroundTasks("write-ahead log")
        self.fsyncs = 0

    @property
    def durable_size(self) -> int:
        """Bytes of the log known to be on disk."""
        return self._size

    def reserve(self, rv: int) -> int:
        return self._ceiling.reserve(rv)

    def append(self, records: list[bytes]) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((records, future))
        if not self._flushing:
            self._flushing = True
            self._tasks.start_soon(self._flush_loop, name="write-ahead log flush")
        return future

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self.fsync(self._fd)

    async def _flush_loop(self) -> None:
        """Never raises: every queued write ends acknowledged or failed, never left waiting."""
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                data = b"".join(b"".join(r + b"\n" for r in records) for records, _ in batch)
                try:
                    await asyncio.to_thread(self._write, data)
                except Exception as exc:  # ENOSPC, EIO, or a bug: fail the batch, never hang
                    self._fail(batch, exc)
                    continue
                self._size += len(data)
                self.fsyncs += 1
                try:
                    self._on_durable(sum(len(records) for records, _ in batch))
                except Exception:  # the records are durable: acknowledge them all the same
                    logger.exception("publishing a durable batch failed")
                for _, future in batch:
                    if not future.done():
                        future.set_result(None)
        finally:
            self._flushing = False

    def _fail(self, batch: list[tuple[list[bytes], asyncio.Future[None]]], exc: Exception) -> None:
        # cut any partial write so the log holds only acknowledged records
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self._size)
        failed, self._queue = batch + self._queue, []
        error = (
            OSError(exc.errno, exc.strerror or str(exc))
            if isinstance(exc, OSError)
            else OSError(f"{type(exc).__name__}: {exc}")
        )
        bug = None if isinstance(exc, OSError) else exc  # a disk error needs no traceback
        logger.error("writing to the data directory failed: %s", error, exc_info=bug)
        try:
            self._on_failed(error)
        except Exception:
            logger.exception("rolling back failed writes failed")
        for _, future in failed:
            if not future.done():
                future.set_exception(error)

    async def drain(self) -> None:
        """Wait until every queued record is written (or failed). A write still in flight after
        close() would land in whichever file next reuses the descriptor number, such as the
        snapshot or log of a cluster restarted in the same process."""
        await self._tasks.close(cancel=False)

    def close(self) -> None:
        os.close(self._fd)
        self._ceiling.close()


def open_data_dir(data_dir: Path, store: Store) -> WriteAheadLog:
    """Replay, compact and attach a fresh log to `store`."""
    prepare_data_dir(data_dir)
    replay(data_dir, store)
    write_snapshot(data_dir, store)
    wal = WriteAheadLog(data_dir / WAL, store.on_durable, store.on_failed)
    store.attach_journal(wal)
    return wal


def durable_reads_middleware(store: Store) -> Middleware:
    """Answers only what a crash cannot undo (etcd's reads): a response waits until every write
    applied when it was computed is durable. A request whose own write committed is already
    durable and skips the wait; a watch (already streaming) guards its own lines. A read computed
    over writes the disk then refused (and that were undone) is computed again."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        attempts = 2 if request.method in ("GET", "HEAD") else 1
        while True:
            request_committed.set(False)
            response = await handler(request)
            if response.prepared or (request_committed.get() and response.status < 400):
                return response
            try:
                await store.settle()
            except errors.ApiError as exc:
                attempts -= 1
                if attempts:
                    continue
                return web.json_response(exc.status(), status=exc.code)
            return response

    return middleware
