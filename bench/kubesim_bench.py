"""Benchmark kubesim alone: pod creates/s, binds/s, watch events/s delivered to 3 watchers.

    python -m bench.kubesim_bench [--pods 4000] [--concurrency 64]   (JSON on stdout)

The server runs in its own process pinned to one core (as the API server of scheduler_perf runs
apart from the scheduler); the load generator is pinned to another core when there is one.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import orjson
import yaml

PODS = "/api/v1/namespaces/default/pods"


def _pin(core: int) -> None:
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setaffinity(0, {core})


def start_server(kubeconfig: Path, nodes: int, data_dir: Path | None) -> subprocess.Popen[bytes]:
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]
    server_core = cores[0]
    args = [
        sys.executable,
        "-m",
        "kubesim.cli",
        "--port",
        "0",
        "--nodes",
        str(nodes),
        "--kubeconfig-out",
        str(kubeconfig),
        "--watch-history",
        "100000",
    ]
    if data_dir is not None:
        args += ["--data-dir", str(data_dir)]
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        preexec_fn=lambda: _pin(server_core),
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    if len(cores) > 1:
        _pin(cores[1])
    return proc


def pod_body(i: int) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"pod-{i}", "labels": {"app": "bench"}},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
                    }
                ],
            },
        }
    )


def binding_body(i: int, nodes: int) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": f"pod-{i}"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": f"node-{i % nodes}"},
        }
    )


async def _run_parallel(
    http: aiohttp.ClientSession, requests: list[tuple[str, bytes]], concurrency: int, code: int
) -> float:
    queue = iter(requests)
    failures: list[int] = []

    async def worker() -> None:
        for path, body in queue:
            async with http.post(path, data=body) as r:
                await r.read()
                if r.status != code:
                    failures.append(r.status)

    start = time.perf_counter()
    async with anyio.create_task_group() as workers:
        for _ in range(concurrency):
            workers.start_soon(worker)
    elapsed = time.perf_counter() - start
    if failures:
        raise RuntimeError(f"{len(failures)} requests failed, e.g. HTTP {failures[0]}")
    return elapsed


async def _watch(
    http: aiohttp.ClientSession, rv: str, expected: int, done: list[float], counts: list[int]
) -> None:
    count = 0
    params = {"watch": "1", "resourceVersion": rv}
    async with http.get(PODS, params=params, timeout=aiohttp.ClientTimeout(total=None)) as r:
        async for _line in r.content:
            count += 1
            if count >= expected:
                break
    done.append(time.perf_counter())
    counts.append(count)


async def measure(
    url: str, token: str, ca_pem: bytes, pods: int, nodes: int, concurrency: int
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    context = ssl.create_default_context(cadata=ca_pem.decode())
    connector = aiohttp.TCPConnector(limit=concurrency + 8, ssl=context)
    async with aiohttp.ClientSession(url, headers=headers, connector=connector) as http:
        async with http.get(PODS) as r:
            rv = (await r.json())["metadata"]["resourceVersion"]
        # create + bind + Running per pod: 3 events each
        expected = pods * 3
        finished: list[float] = []
        counts: list[int] = []
        async with anyio.create_task_group() as watchers:
            for _ in range(3):
                watchers.start_soon(_watch, http, rv, expected, finished, counts)
            await asyncio.sleep(0.2)
            started = time.perf_counter()
            creates = [(PODS, pod_body(i)) for i in range(pods)]
            create_s = await _run_parallel(http, creates, concurrency, 201)
            binds = [(f"{PODS}/pod-{i}/binding", binding_body(i, nodes)) for i in range(pods)]
            bind_s = await _run_parallel(http, binds, concurrency, 201)
            # the watchers have two minutes more to see every event
            watchers.cancel_scope.deadline = anyio.current_time() + 120
        if watchers.cancel_scope.cancelled_caught:
            raise TimeoutError
        watch_s = max(finished) - started
    return {
        "pods": pods,
        "nodes": nodes,
        "concurrency": concurrency,
        "creates_per_s": round(pods / create_s, 1),
        "binds_per_s": round(pods / bind_s, 1),
        "watchers": 3,
        "watch_events_delivered": sum(counts),
        "watch_events_per_s": round(sum(counts) / watch_s, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.kubesim_bench")
    parser.add_argument("--pods", type=int, default=4000)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--data-dir", action="store_true", help="measure with --data-dir (fsync)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        data_dir = Path(tmp) / "data" if args.data_dir else None
        proc = start_server(kubeconfig, args.nodes, data_dir)
        try:
            doc = yaml.safe_load(kubeconfig.read_text())
            url = doc["clusters"][0]["cluster"]["server"]
            token = doc["users"][0]["user"]["token"]
            ca_pem = base64.b64decode(doc["clusters"][0]["cluster"]["certificate-authority-data"])
            result = asyncio.run(
                measure(url, token, ca_pem, args.pods, args.nodes, args.concurrency)
            )
        finally:
            proc.terminate()
            proc.wait(10)
    result["data_dir"] = args.data_dir
    sys.stdout.write(orjson.dumps(result).decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
