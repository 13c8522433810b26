"""Benchmark kubesim alone: what a scheduler asks of it per pod, with three watchers.

    python -m bench.kubesim_bench [--pods 4000] [--concurrency 64] [--bare]   (JSON on stdout)

Per pod, as `aiosched bench` drives it: a create, a bind, the scheduler's Scheduled Event
(events.k8s.io/v1) and the simulated kubelet turning it Running (with its own container Events),
while three watchers of the pods read every change. Each phase runs alone and is timed;
`pods_per_s` is the pods over the three phases' time together (until the watchers have seen all),
and `server_cpu_s` / `server_cpu_ms_per_pod` the CPU kubesim spent, all its processes together.
`--bare` starts kubesim as `aiosched bench` does, without controllers (and so without the
kubelet's container Events).

The server runs in its own process pinned to one core (as the API server of scheduler_perf runs
apart from the scheduler); the load generator is pinned to the last core when there is more than
one. `--workers N` (N > 1) starts kubesim's store with N API processes, which may use every core
but the load generator's (both, on two cores). The CPU figures count the server's child
processes too, and `server_cpu_ms_per_pod_by_process` gives each by name (kubesim-store,
kubesim-api-1, ...).
`--server-path DIR` runs the server from another checkout (DIR first on its PYTHONPATH):
alternate runs of two trees so.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import random
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
EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _pin(core: int) -> None:
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setaffinity(0, {core})


def _pin_all(cores: set[int]) -> None:
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setaffinity(0, cores)


def _cores() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]


def start_server(
    kubeconfig: Path,
    nodes: int,
    data_dir: Path | None,
    server_path: Path | None = None,
    bare: bool = False,
    workers: int | None = None,
) -> subprocess.Popen[bytes]:
    cores = _cores()
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
    if bare:  # the cluster `aiosched bench` starts (bench/runner.py): no controllers
        args += ["--no-storage-controllers", "--no-controllers"]
    if data_dir is not None:
        args += ["--data-dir", str(data_dir)]
    if workers is not None:  # not passed otherwise: a --server-path tree may predate the flag
        args += ["--workers", str(workers)]
    env = dict(os.environ)
    if server_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(server_path), env.get("PYTHONPATH")]))
    # one process: the first core; several: every core but the load generator's (on two
    # cores, both: the server's processes then share the load generator's core)
    if not workers or workers == 1:
        server_cores = set(cores[:1])
    else:
        server_cores = set(cores[:-1] if len(cores) > 2 else cores)
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        env=env,
        preexec_fn=lambda: _pin_all(server_cores),
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    if len(cores) > 1:
        _pin(cores[-1])
    return proc


def _process_tree(root: int) -> list[int]:
    """`root` and its descendants (Linux /proc; just `root` elsewhere)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = entry.read_text().rsplit(")", 1)[1].split()
            parents.setdefault(int(fields[1]), []).append(int(entry.parent.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(parents.get(pid, []))
    return tree


def cpu_by_process(root: int) -> dict[str, float]:
    """User + system CPU seconds so far of `root` and its descendants, by process name
    (kubesim-store, kubesim-api-1, ...; Linux /proc, empty elsewhere)."""
    seconds: dict[str, float] = {}
    for pid in _process_tree(root):
        with contextlib.suppress(OSError, ValueError, IndexError):
            name, rest = Path(f"/proc/{pid}/stat").read_text().split(" (", 1)[1].rsplit(")", 1)
            fields = rest.split()
            ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
            seconds[name] = seconds.get(name, 0.0) + ticks / _TICKS
    return seconds


def cpu_seconds(root: int) -> float:
    """User + system CPU of `root` and its descendants so far (0 where /proc is missing)."""
    return sum(cpu_by_process(root).values())


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


def scheduled_event_body(i: int, nodes: int) -> bytes:
    """The Event a scheduler writes for a bound pod (as scheduler/client/recorder.py does)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    return orjson.dumps(
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": f"pod-{i}.bench{i:08x}", "namespace": "default"},
            "eventTime": now,
            "reportingController": "default-scheduler",
            "reportingInstance": "default-scheduler-bench",
            "action": "Binding",
            "reason": "Scheduled",
            "regarding": {"kind": "Pod", "namespace": "default", "name": f"pod-{i}"},
            "note": f"Successfully assigned default/pod-{i} to node-{i % nodes}",
            "type": "Normal",
        }
    )


async def _run_parallel(
    http: aiohttp.ClientSession, requests: list[tuple[str, bytes]], concurrency: int, code: int
) -> float:
    queue = iter(requests)
    failures: list[tuple[int, str]] = []

    async def worker() -> None:
        for path, body in queue:
            async with http.post(path, data=body) as r:
                text = await r.read()
                if r.status != code:
                    failures.append((r.status, text[:200].decode(errors="replace")))

    start = time.perf_counter()
    async with anyio.create_task_group() as workers:
        for _ in range(concurrency):
            workers.start_soon(worker)
    elapsed = time.perf_counter() - start
    if failures:
        status, text = failures[0]
        raise RuntimeError(f"{len(failures)} requests failed, e.g. HTTP {status}: {text}")
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
    url: str,
    token: str,
    ca_pem: bytes,
    pods: int,
    nodes: int,
    concurrency: int,
    server_pid: int | None = None,
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
        by_process = cpu_by_process(server_pid) if server_pid is not None else {}
        client_cpu = time.process_time()
        async with anyio.create_task_group() as watchers:
            for _ in range(3):
                watchers.start_soon(_watch, http, rv, expected, finished, counts)
            await asyncio.sleep(0.2)
            started = time.perf_counter()
            creates = [(PODS, pod_body(i)) for i in range(pods)]
            create_s = await _run_parallel(http, creates, concurrency, 201)
            binds = [(f"{PODS}/pod-{i}/binding", binding_body(i, nodes)) for i in range(pods)]
            bind_s = await _run_parallel(http, binds, concurrency, 201)
            events = [(EVENTS, scheduled_event_body(i, nodes)) for i in range(pods)]
            event_s = await _run_parallel(http, events, concurrency, 201)
            # the watchers have two minutes more to see every event
            watchers.cancel_scope.deadline = anyio.current_time() + 120
        if watchers.cancel_scope.cancelled_caught:
            raise TimeoutError
        watch_s = max(finished) - started
        after = cpu_by_process(server_pid) if server_pid is not None else {}
        # a process started meanwhile (a front-end started again) counts from zero
        spent = {name: after[name] - by_process.get(name, 0.0) for name in sorted(after)}
        server_cpu = sum(spent.values())
        client_cpu = time.process_time() - client_cpu
    return {
        "pods": pods,
        "nodes": nodes,
        "concurrency": concurrency,
        "creates_per_s": round(pods / create_s, 1),
        "binds_per_s": round(pods / bind_s, 1),
        "events_per_s": round(pods / event_s, 1),
        "pods_per_s": round(pods / watch_s, 1),
        "watchers": 3,
        "watch_events_delivered": sum(counts),
        "watch_events_per_s": round(sum(counts) / watch_s, 1),
        "server_cpu_s": round(server_cpu, 2),
        "server_cpu_ms_per_pod": round(1000 * server_cpu / pods, 3),
        "server_cpu_ms_per_pod_by_process": {
            name: round(1000 * cpu / pods, 3) for name, cpu in spent.items()
        },
        "client_cpu_s": round(client_cpu, 2),
    }


async def measure_store(pods: int) -> dict[str, Any]:
    """The store alone, in this process: per pod the four writes a scheduled pod makes (create,
    bind, Scheduled Event, Running), each published to three watchers whose lines are drained,
    as the watch handlers drain them. No HTTP, no validation: what a process that only orders
    writes and fans them out would spend (docs/kubesim-performance.md)."""
    from kubesim.meta import new_uid
    from kubesim.store import Store

    store = Store(history_size=100_000)
    rng = random.Random(1)
    watchers = [store.watch("pods", None, None, 0) for _ in range(3)]
    template = orjson.loads(pod_body(0))
    template["metadata"]["namespace"] = "default"
    template["status"] = {"phase": "Pending", "qosClass": "Burstable"}
    started = time.process_time()
    for i in range(pods):
        meta = {**template["metadata"], "name": f"pod-{i}", "uid": new_uid(rng)}
        created = await store.put("pods", {**template, "metadata": meta}, None)
        spec = {**created["spec"], "nodeName": f"node-{i % 100}"}
        bound = await store.put(
            "pods", {**created, "metadata": dict(created["metadata"]), "spec": spec}, created
        )
        event = orjson.loads(scheduled_event_body(i, 100))
        await store.put("events", event, None)
        status = {**bound["status"], "phase": "Running"}
        await store.put(
            "pods", {**bound, "metadata": dict(bound["metadata"]), "status": status}, bound
        )
        for watcher in watchers:
            await watcher.next_batch()
    cpu = time.process_time() - started
    return {
        "pods": pods,
        "store_only": True,
        "watchers": 3,
        "store_cpu_us_per_pod": round(1e6 * cpu / pods, 1),
        "pods_per_cpu_s": round(pods / cpu),
    }


async def measure_ipc(messages: int) -> dict[str, Any]:
    """What one commit would cost to pass between processes: a created pod sent as a
    length-prefixed JSON message over a Unix socket and answered with it (64 in flight), both
    ends in this process, so the CPU is both sides' together (docs/kubesim-performance.md)."""
    pod = orjson.loads(pod_body(0))

    def frame(payload: bytes) -> bytes:
        return len(payload).to_bytes(4, "big") + payload

    async def read_message(reader: asyncio.StreamReader) -> Any:
        size = int.from_bytes(await reader.readexactly(4), "big")
        return orjson.loads(await reader.readexactly(size))

    async def store_side(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(messages):
            message = await read_message(reader)
            writer.write(frame(orjson.dumps({"rv": 6, "object": message["new"]})))
        await writer.drain()
        writer.close()

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "store.sock")
        server = await asyncio.start_unix_server(store_side, path)
        reader, writer = await asyncio.open_unix_connection(path)
        started = time.process_time()
        sent = answered = 0
        while answered < messages:
            while sent < messages and sent - answered < 64:
                commit = {"op": "commit", "key": "pods", "new": pod, "old_rv": 5}
                writer.write(frame(orjson.dumps(commit)))
                sent += 1
            await read_message(reader)
            answered += 1
        cpu = time.process_time() - started
        writer.close()
        server.close()
        await server.wait_closed()
    return {
        "messages": messages,
        "ipc_only": True,
        "cpu_us_per_round_trip": round(1e6 * cpu / messages, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.kubesim_bench")
    parser.add_argument("--pods", type=int, default=4000)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--data-dir", action="store_true", help="measure with --data-dir (fsync)")
    parser.add_argument(
        "--bare",
        action="store_true",
        help="run kubesim as `aiosched bench` does: no controllers, so no kubelet Events either",
    )
    parser.add_argument(
        "--server-path",
        type=Path,
        help="run the server from this checkout (put first on its PYTHONPATH)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        help="start kubesim with --workers N (default: not passed, kubesim's own default)",
    )
    parser.add_argument(
        "--store-only",
        action="store_true",
        help="measure kubesim's store alone in this process (no server, no HTTP)",
    )
    parser.add_argument(
        "--ipc-only",
        action="store_true",
        help="measure a commit's round trip over a Unix socket in this process (--pods of them)",
    )
    args = parser.parse_args(argv)
    if args.ipc_only:
        result = asyncio.run(measure_ipc(args.pods))
        sys.stdout.write(orjson.dumps(result).decode() + "\n")
        return 0
    if args.store_only:
        result = asyncio.run(measure_store(args.pods))
        sys.stdout.write(orjson.dumps(result).decode() + "\n")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        data_dir = Path(tmp) / "data" if args.data_dir else None
        proc = start_server(
            kubeconfig, args.nodes, data_dir, args.server_path, args.bare, args.workers
        )
        try:
            doc = yaml.safe_load(kubeconfig.read_text())
            url = doc["clusters"][0]["cluster"]["server"]
            token = doc["users"][0]["user"]["token"]
            ca_pem = base64.b64decode(doc["clusters"][0]["cluster"]["certificate-authority-data"])
            result = asyncio.run(
                measure(url, token, ca_pem, args.pods, args.nodes, args.concurrency, proc.pid)
            )
        finally:
            proc.terminate()
            proc.wait(10)
    result["data_dir"] = args.data_dir
    result["bare"] = args.bare
    result["workers"] = args.workers
    sys.stdout.write(orjson.dumps(result).decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
