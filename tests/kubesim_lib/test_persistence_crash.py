"""--data-dir keeps etcd's guarantees across a crash between a write and its fsync.

The crash is injected with an fsync that blocks (the process "dies" before its record is on
disk); the data directory a crash would leave is the log's durable prefix. Checked, as a client
sees them over HTTP: a read never shows a write before it is durable, no acknowledged write is
lost, resourceVersions after recovery lie above every one handed out, and a watch resumed from a
resourceVersion a client saw continues exactly or answers 410 Gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from kubesim import persistence
from kubesim.embedded import EmbeddedCluster

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
PENDING = 0.3  # how long a read must stay unanswered while the write it could see is not durable


class CrashBeforeFsync:
    """os.fsync until armed; then the next fsync blocks until released, and then either
    succeeds or fails with `error` (a disk that filled up meanwhile)."""

    def __init__(self) -> None:
        self.armed = False
        self.entered = threading.Event()
        self._release = threading.Event()
        self.error: OSError | None = None

    def __call__(self, fd: int) -> None:
        if self.armed:
            self.armed = False
            self.entered.set()
            self._release.wait(10)
            if self.error is not None:
                raise self.error
        os.fsync(fd)

    async def wait_entered(self) -> None:
        for _ in range(500):
            if self.entered.is_set():
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the write never reached fsync")

    def release(self) -> None:
        self._release.set()


def crash_image(data_dir: Path, image: Path, wal: persistence.WriteAheadLog) -> None:
    """The directory as a crash leaves it in the worst case: records not fsynced are gone."""
    shutil.copytree(data_dir, image)
    os.truncate(image / persistence.WAL, wal.durable_size)


def embedded(data_dir: Path) -> EmbeddedCluster:
    return EmbeddedCluster(data_dir=data_dir, tls=False, controllers=False, csi_driver=False)


@contextlib.asynccontextmanager
async def client(cluster: EmbeddedCluster) -> AsyncIterator[aiohttp.ClientSession]:
    headers = {"Authorization": f"Bearer {cluster.token}"}
    async with aiohttp.ClientSession(cluster.url, headers=headers) as http:
        yield http


async def create(http: aiohttp.ClientSession, name: str) -> tuple[int, Any]:
    async with http.post(CONFIGMAPS, json={"metadata": {"name": name}}) as r:
        return r.status, orjson.loads(await r.read())


async def get(http: aiohttp.ClientSession, path: str) -> tuple[int, Any]:
    async with http.get(path) as r:
        return r.status, orjson.loads(await r.read())


async def watch_lines(http: aiohttp.ClientSession, query: str) -> list[Any]:
    """Every line of a watch that ends after one second."""
    async with http.get(f"{CONFIGMAPS}?watch=1&timeoutSeconds=1{query}") as r:
        return [orjson.loads(line) for line in (await r.read()).splitlines() if line]


def names(listed: Any) -> set[str]:
    return {item["metadata"]["name"] for item in listed["items"]}


def rv_of(obj: Any) -> int:
    return int(obj["metadata"]["resourceVersion"])


async def test_a_crash_before_fsync_undoes_nothing_a_client_saw(tmp_path: Path) -> None:
    disk = CrashBeforeFsync()
    data_dir, image = tmp_path / "data", tmp_path / "image"
    # every resourceVersion assigned before the crash image, including those answered only after
    # it (the disk comes back in this process): none may be assigned again after recovery
    seen: list[int] = []
    async with embedded(data_dir) as cluster, client(cluster) as http:
        wal = cluster.cluster._wal
        assert wal is not None
        wal.fsync = disk
        for i in range(3):
            status, obj = await create(http, f"acked{i}")
            assert status == 201
            seen.append(rv_of(obj))
        durable = max(seen)  # the crash image holds everything up to here

        disk.armed = True
        unacked = asyncio.create_task(create(http, "unacked"))
        await disk.wait_entered()
        reads = [
            asyncio.create_task(get(http, f"{CONFIGMAPS}/unacked")),
            asyncio.create_task(get(http, CONFIGMAPS)),
            asyncio.create_task(watch_lines(http, "")),
        ]
        done, _ = await asyncio.wait([unacked, *reads], timeout=PENDING)
        assert not done, "answered before the write it could see was durable"
        crash_image(data_dir, image, wal)

        disk.release()  # the disk comes back in this process: the reads answer, with the write
        status, obj = await unacked
        assert status == 201
        seen.append(rv_of(obj))
        (got, _), (listed, body), events = await asyncio.gather(*reads)
        assert got == 200
        assert listed == 200 and "unacked" in names(body)
        seen.append(rv_of(body))
        assert {e["object"]["metadata"]["name"] for e in events} == names(body)
        seen.extend(rv_of(e["object"]) for e in events)

    async with embedded(image) as cluster, client(cluster) as http:
        status, listed = await get(http, CONFIGMAPS)
        assert names(listed) == {"acked0", "acked1", "acked2"}  # nothing lost, nothing unacked
        status, after = await create(http, "after")
        assert status == 201
        assert rv_of(after) > max(seen), "a resourceVersion was handed out twice"
        for rv in sorted(set(seen)):
            events = await watch_lines(http, f"&resourceVersion={rv}")
            gone = (
                bool(events) and events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410
            )
            if rv > durable:  # a version the crash undid can never continue
                assert gone, (rv, events)
            else:
                assert gone or [e["object"]["metadata"]["name"] for e in events] == ["after"]


async def test_a_full_disk_fails_the_write_and_unblocks_every_reader(tmp_path: Path) -> None:
    disk = CrashBeforeFsync()
    disk.error = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    loop_errors: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, ctx: loop_errors.append(ctx))
    async with embedded(tmp_path / "data") as cluster, client(cluster) as http:
        wal = cluster.cluster._wal
        assert wal is not None
        wal.fsync = disk
        status, kept = await create(http, "kept")
        assert status == 201

        disk.armed = True
        lost = asyncio.create_task(create(http, "lost"))
        await disk.wait_entered()
        listing = asyncio.create_task(get(http, CONFIGMAPS))
        watch = asyncio.create_task(watch_lines(http, ""))
        await asyncio.sleep(PENDING)
        disk.release()

        status, body = await lost
        assert (status, body["reason"]) == (500, "InternalError")
        assert "No space left on device" in body["message"]
        status, listed = await listing  # computed again over what is on disk
        assert (status, names(listed)) == (200, {"kept"})
        assert all(e["object"]["metadata"]["name"] != "lost" for e in await watch)
        assert (await create(http, "later"))[0] == 201  # not stuck once the disk has room
        status, listed = await get(http, CONFIGMAPS)
        assert names(listed) == {"kept", "later"}
        resumed = await watch_lines(http, f"&resourceVersion={rv_of(kept)}")
        assert [e["object"]["metadata"]["name"] for e in resumed] == ["later"]
    assert not loop_errors


async def test_a_failing_subscriber_delays_no_later_write(tmp_path: Path) -> None:
    async with embedded(tmp_path / "data") as cluster, client(cluster) as http:
        failures = iter([RuntimeError("subscriber bug")])

        def flaky(key: str, event: Any) -> None:
            error = next(failures, None)
            if error is not None:
                raise error

        cluster.cluster.store.add_listener(flaky)
        async with asyncio.timeout(5):  # before the fix, the first write was never answered
            status, first = await create(http, "first")
            assert status == 201
            watch = asyncio.create_task(watch_lines(http, f"&resourceVersion={rv_of(first)}"))
            await asyncio.sleep(0.1)
            assert (await create(http, "second"))[0] == 201
            events = await watch
        assert [e["object"]["metadata"]["name"] for e in events] == ["second"]


async def test_data_files_an_older_kubesim_left_0644_are_made_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    async with embedded(data_dir) as cluster, client(cluster) as http:
        assert (await create(http, "cm"))[0] == 201
    files = [data_dir / persistence.SNAPSHOT, data_dir / persistence.WAL, data_dir / "token"]
    for path in files:
        path.chmod(0o644)
    async with embedded(data_dir) as cluster, client(cluster) as http:
        assert (await create(http, "cm2"))[0] == 201
        assert {path.name: path.stat().st_mode & 0o777 for path in files} == {
            path.name: 0o600 for path in files
        }


async def test_the_data_dir_kubesim_creates_is_private_and_so_is_every_file(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "new" / "data"
    async with embedded(data_dir) as cluster, client(cluster) as http:
        assert (await create(http, "cm"))[0] == 201
    assert os.stat(data_dir).st_mode & 0o777 == 0o700
    modes = {path.name: path.stat().st_mode & 0o777 for path in data_dir.iterdir()}
    assert {persistence.SNAPSHOT, persistence.WAL, persistence.RESERVED, "token"} <= set(modes)
    assert set(modes.values()) == {0o600}, modes


async def test_a_resource_version_ceiling_the_disk_refuses_fails_the_write_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(persistence, "RESERVE_BLOCK", 0)  # every write raises the ceiling
    async with embedded(tmp_path / "data") as cluster, client(cluster) as http:
        wal = cluster.cluster._wal
        assert wal is not None
        assert (await create(http, "kept"))[0] == 201

        def full(rv: int) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(wal, "reserve", full)
        status, body = await create(http, "refused")
        assert status == 500 and "No space left on device" in body["message"]
        monkeypatch.undo()
        status, listed = await get(http, CONFIGMAPS)
        assert (status, names(listed)) == (200, {"kept"})
        assert (await create(http, "later"))[0] == 201
