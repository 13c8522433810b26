"""--data-dir: acknowledged writes survive kill -9; a failed disk write changes nothing."""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

from kubesim.embedded import EmbeddedCluster

ROOT = Path(__file__).resolve().parents[2]


def start(
    data_dir: Path, kubeconfig: Path, *flags: str
) -> tuple[subprocess.Popen[bytes], str, str]:
    """Run `kubesim.cli` (plain http: these checks are about storage, not transport)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubesim.cli",
            "--port",
            "0",
            "--data-dir",
            str(data_dir),
            "--kubeconfig-out",
            str(kubeconfig),
            "--nodes",
            "1",
            "--insecure-http",
            *flags,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    if not line.startswith("kubesim: serving on http://127.0.0.1:") or (
        f"(kubeconfig {kubeconfig})" not in line
    ):
        proc.kill()  # not left running after the test
        proc.wait()
        raise AssertionError(f"unexpected first line: {line!r}")
    doc = yaml.safe_load(kubeconfig.read_text())
    return proc, doc["clusters"][0]["cluster"]["server"], doc["users"][0]["user"]["token"]


async def test_acknowledged_writes_survive_kill_9(tmp_path: Path) -> None:
    data_dir, kubeconfig = tmp_path / "data", tmp_path / "kubeconfig"
    proc, url, token = start(data_dir, kubeconfig)
    headers = {"Authorization": f"Bearer {token}"}
    path = "/api/v1/namespaces/default/configmaps"
    try:
        async with aiohttp.ClientSession(url, headers=headers) as http:

            async def create(i: int) -> str:
                body = {"metadata": {"name": f"cm{i}"}, "data": {"i": str(i)}}
                async with http.post(path, json=body) as r:
                    assert r.status == 201
                    return str((await r.json())["metadata"]["resourceVersion"])

            rvs = await asyncio.gather(*(create(i) for i in range(50)))
            async with http.delete(f"{path}/cm7") as r:
                assert r.status == 200
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    proc, url, token = start(data_dir, kubeconfig)
    try:
        async with aiohttp.ClientSession(url, headers={"Authorization": f"Bearer {token}"}) as http:
            async with http.get(path) as r:
                listed = await r.json()
            names = {cm["metadata"]["name"] for cm in listed["items"]}
            assert names == {f"cm{i}" for i in range(50)} - {"cm7"}
            assert int(listed["metadata"]["resourceVersion"]) > max(int(rv) for rv in rvs)
            async with http.get("/api/v1/nodes") as r:
                assert len((await r.json())["items"]) == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


async def test_failed_disk_write_answers_500_and_changes_nothing(tmp_path: Path) -> None:
    async with EmbeddedCluster(data_dir=tmp_path / "data") as cluster:
        wal: Any = cluster.cluster._wal

        def full(data: bytes) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        headers = {"Authorization": f"Bearer {cluster.token}"}
        path = "/api/v1/namespaces/default/configmaps"
        connector = aiohttp.TCPConnector(ssl=cluster.client_ssl())
        async with aiohttp.ClientSession(cluster.url, headers=headers, connector=connector) as http:
            async with http.post(path, json={"metadata": {"name": "kept"}}) as r:
                assert r.status == 201
            wal._write = full
            async with http.post(path, json={"metadata": {"name": "lost"}}) as r:
                body = orjson.loads(await r.read())
            assert r.status == 500
            assert body["reason"] == "InternalError"
            assert "No space left on device" in body["message"]
            async with http.get(path) as r:
                names = [cm["metadata"]["name"] for cm in (await r.json())["items"]]
            assert names == ["kept"]
