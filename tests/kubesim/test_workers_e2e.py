"""`aiosched cluster --workers 2` as processes: named in ps, a front-end killed with -9 under
load is started again and loses no acknowledged write, and a killed store takes its front-ends
with it (they exit, never hang) while the next start finds every acknowledged write."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import aiohttp
import pytest

from tests.kubesim import test_durability as durability

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"

pytestmark = pytest.mark.e2e


def start(
    data_dir: Path, kubeconfig: Path, workers: int = 2
) -> tuple[subprocess.Popen[bytes], str, str]:
    quiet = ("--no-controllers", "--no-storage-controllers")
    return durability.start(data_dir, kubeconfig, "--workers", str(workers), *quiet)


def children(pid: int) -> dict[str, int]:
    """The processes `pid` started, by the name ps shows."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            name, rest = stat.read_text().split(" (", 1)[1].rsplit(")", 1)
            if int(rest.split()[1]) == pid:
                found[name] = int(stat.parent.name)
    return found


def alive(pid: int) -> bool:
    """Still running (a zombie has exited: it only waits for its parent to read its status)."""
    with contextlib.suppress(OSError, IndexError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return False


def name_of(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


async def wait_for(check: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.1)


async def list_names(url: str, token: str) -> set[str]:
    headers = {"Authorization": f"Bearer {token}"}
    async with aiohttp.ClientSession(url, headers=headers) as http, http.get(CONFIGMAPS) as r:
        assert r.status == 200
        return {cm["metadata"]["name"] for cm in (await r.json())["items"]}


async def test_killed_frontend_restarts_and_killed_store_loses_nothing(tmp_path: Path) -> None:
    data_dir, kubeconfig = tmp_path / "data", tmp_path / "kubeconfig"
    proc, url, token = start(data_dir, kubeconfig)
    try:
        assert name_of(proc.pid) == "kubesim-store"
        frontends = children(proc.pid)
        assert {"kubesim-api-1", "kubesim-api-2"} <= frontends.keys(), frontends
        acknowledged: list[str] = []
        headers = {"Authorization": f"Bearer {token}"}
        # a connection per request: the kernel hands them to either front-end
        connector = aiohttp.TCPConnector(force_close=True)
        async with aiohttp.ClientSession(url, headers=headers, connector=connector) as http:

            async def writer(worker: int) -> None:
                for i in range(25):
                    body = {"metadata": {"name": f"cm-{worker}-{i}"}}
                    with contextlib.suppress(aiohttp.ClientError):
                        async with http.post(CONFIGMAPS, json=body) as r:
                            if r.status == 201:
                                acknowledged.append(body["metadata"]["name"])

            async def killer() -> None:
                await wait_for(lambda: len(acknowledged) >= 20, 60)
                os.kill(frontends["kubesim-api-1"], signal.SIGKILL)

            await asyncio.gather(*(writer(w) for w in range(8)), killer())
        assert len(acknowledged) >= 60
        # started again, under its name
        killed = frontends["kubesim-api-1"]
        await wait_for(lambda: children(proc.pid).get("kubesim-api-1") not in (None, killed), 60)
        assert set(acknowledged) <= await list_names(url, token)
        survivors = children(proc.pid).values()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # the front-ends see the store's stream end and exit
        await wait_for(lambda: not any(alive(pid) for pid in survivors), 20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # the log the store journaled, replayed (as by any layout: one process is the quickest start)
    proc, url, token = start(data_dir, kubeconfig, workers=1)
    try:
        assert set(acknowledged) <= await list_names(url, token)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
