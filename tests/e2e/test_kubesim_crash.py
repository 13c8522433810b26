"""kill -9 of `aiosched cluster --data-dir` under a stream of writes keeps etcd's guarantees.

While writers create ConfigMaps, a watcher and a lister record everything they are shown; then
the process is killed with SIGKILL and restarted from its data dir. Checked: every acknowledged
write survived, so did everything any reader was shown, nothing appeared that was never sent,
new resourceVersions lie above every one handed out, and a watch resumed from any of them
continues exactly or answers 410 Gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import yaml

_PROCESSES = str(Path(__file__).resolve().parents[1] / "e2e_scheduler")
if _PROCESSES not in sys.path:
    sys.path.insert(0, _PROCESSES)

from processes import Process, start_cluster  # noqa: E402

pytestmark = pytest.mark.e2e

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
WRITERS = 8
ACKED_BEFORE_KILL = 400
FLAGS = ("--insecure-http", "--no-controllers", "--no-storage-controllers")


@dataclass
class Observed:
    sent: set[str] = field(default_factory=set)  # creates attempted
    acked: set[str] = field(default_factory=set)  # creates answered 201
    shown: set[str] = field(default_factory=set)  # names any reader was shown
    rvs: set[int] = field(default_factory=set)  # every resourceVersion handed out


def session(workdir: Path, proc: Process) -> aiohttp.ClientSession:
    token = yaml.safe_load((workdir / "kubeconfig").read_text())["users"][0]["user"]["token"]
    return aiohttp.ClientSession(proc.url, headers={"Authorization": f"Bearer {token}"})


async def write(http: aiohttp.ClientSession, seen: Observed, writer: int) -> None:
    for i in range(100_000):
        name = f"w{writer}-{i}"
        seen.sent.add(name)
        async with http.post(CONFIGMAPS, json={"metadata": {"name": name}}) as r:
            if r.status == 201:
                seen.acked.add(name)
                seen.rvs.add(int((await r.json())["metadata"]["resourceVersion"]))


async def watch(http: aiohttp.ClientSession, seen: Observed) -> None:
    async with http.get(f"{CONFIGMAPS}?watch=1&allowWatchBookmarks=1") as r:
        async for line in r.content:
            event = orjson.loads(line)
            seen.rvs.add(int(event["object"]["metadata"]["resourceVersion"]))
            if event["type"] != "BOOKMARK":
                seen.shown.add(event["object"]["metadata"]["name"])


async def list_repeatedly(http: aiohttp.ClientSession, seen: Observed) -> None:
    while True:
        async with http.get(CONFIGMAPS) as r:
            listed = await r.json()
        seen.rvs.add(int(listed["metadata"]["resourceVersion"]))
        seen.shown.update(item["metadata"]["name"] for item in listed["items"])


async def load_then_kill(workdir: Path, proc: Process) -> Observed:
    seen = Observed()
    async with session(workdir, proc) as http:
        tasks = [asyncio.create_task(write(http, seen, w)) for w in range(WRITERS)]
        tasks += [
            asyncio.create_task(watch(http, seen)),
            asyncio.create_task(list_repeatedly(http, seen)),
        ]
        for _ in range(600):
            if len(seen.acked) >= ACKED_BEFORE_KILL:
                break
            await asyncio.sleep(0.02)
        proc.proc.send_signal(signal.SIGKILL)
        proc.proc.wait()
        for task in tasks:
            with contextlib.suppress(aiohttp.ClientError, asyncio.CancelledError):
                task.cancel()
                await task
    assert len(seen.acked) >= ACKED_BEFORE_KILL, "the load never got going"
    return seen


async def watch_from(http: aiohttp.ClientSession, rv: int) -> list[Any]:
    async with http.get(f"{CONFIGMAPS}?watch=1&timeoutSeconds=1&resourceVersion={rv}") as r:
        return [orjson.loads(line) for line in (await r.read()).splitlines() if line]


async def check_recovered(workdir: Path, proc: Process, seen: Observed) -> None:
    async with session(workdir, proc) as http:
        async with http.get(CONFIGMAPS) as r:
            present = {item["metadata"]["name"] for item in (await r.json())["items"]}
        assert seen.acked <= present, f"acknowledged but lost: {sorted(seen.acked - present)}"
        assert seen.shown <= present, f"shown, then undone: {sorted(seen.shown - present)}"
        assert present <= seen.sent
        async with http.post(CONFIGMAPS, json={"metadata": {"name": "after"}}) as r:
            assert r.status == 201
            after = int((await r.json())["metadata"]["resourceVersion"])
        assert after > max(seen.rvs), "a resourceVersion was handed out twice"
        ordered = sorted(seen.rvs)
        for rv in {ordered[0], ordered[len(ordered) // 2], ordered[-1]}:
            events = await watch_from(http, rv)
            gone = events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410
            resumed = [e["object"]["metadata"].get("name") for e in events] == ["after"]
            assert gone or resumed, (rv, events[:3])


async def test_kill_9_under_writes_loses_nothing_shown_and_reuses_no_resource_version(
    tmp_path: Path,
) -> None:
    proc = start_cluster(tmp_path, 0, 0, *FLAGS)
    try:
        seen = await load_then_kill(tmp_path, proc)
    finally:
        proc.stop(signal.SIGKILL)
    proc = start_cluster(tmp_path, 0, 0, *FLAGS)
    try:
        await check_recovered(tmp_path, proc, seen)
    finally:
        proc.stop()
