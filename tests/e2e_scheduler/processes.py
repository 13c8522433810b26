"""Start `aiosched cluster` and `aiosched run` as separate processes and drive them.

The tests talk to them the way users do: kubectl with the kubeconfig the cluster wrote, and
HTTP to the scheduler's /metrics and /readyz.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STARTUP_TIMEOUT = 30.0


def aiosched() -> list[str]:
    found = shutil.which("aiosched", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "scheduler.app.cli"]


@dataclass
class Process:
    proc: subprocess.Popen[bytes]
    log: Path
    url: str

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


# Every process started here, so that whatever a failed test left running is stopped when the
# test session (or its xdist worker) ends rather than taking CPU from the tests after it.
_STARTED: list[subprocess.Popen[bytes]] = []


@atexit.register
def _stop_leftovers() -> None:
    for proc in _STARTED:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


def start(args: Sequence[str], log: Path, pattern: str) -> Process:
    """Start a process and wait for a stdout line matching `pattern` (its group 1 is the URL)."""
    handle = log.open("wb")
    proc = subprocess.Popen(args, stdout=handle, stderr=subprocess.STDOUT)
    _STARTED[:] = [*(other for other in _STARTED if other.poll() is None), proc]
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        match = re.search(pattern, log.read_text(errors="replace"))
        if match:
            return Process(proc, log, match.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{args[:3]} did not start:\n{log.read_text(errors='replace')}")


def start_cluster(workdir: Path, port: int = 0, nodes: int = 0, *extra: str) -> Process:
    return start(
        [
            *aiosched(),
            "cluster",
            "--port",
            str(port),
            "--nodes",
            str(nodes),
            "--kubeconfig-out",
            str(workdir / "kubeconfig"),
            "--data-dir",
            str(workdir / "data"),
            *extra,
        ],
        workdir / f"cluster-{time.monotonic_ns()}.log",
        r"serving on (https?://[\d.]+:\d+)",
    )


def start_scheduler(workdir: Path, config: str, *extra: str) -> Process:
    config_path = workdir / "scheduler-config.yaml"
    if not config_path.exists():
        config_path.write_text(config)
    return start(
        [
            *aiosched(),
            "run",
            "--kubeconfig",
            str(workdir / "kubeconfig"),
            "--config",
            str(config_path),
            "--http-address",
            "127.0.0.1:0",
            "--insecure-http",  # the tests scrape /metrics without a token
            *extra,
        ],
        workdir / "scheduler.log",
        r"serving /metrics, .+? on (http://[\d.]+:\d+)",
    )


class Kubectl:
    def __init__(self, workdir: Path) -> None:
        self.kubeconfig = workdir / "kubeconfig"
        self.env = {**os.environ, "HOME": str(workdir / "home"), "KUBECONFIG": str(self.kubeconfig)}

    def __call__(self, *args: str, stdin: str | None = None, check: bool = True) -> str:
        result = subprocess.run(
            ["kubectl", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=60,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
        return result.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self("get", *args, "-o", "json"))

    def apply(self, manifest: str) -> str:
        return self("apply", "-f", "-", stdin=manifest)


def children_named(process: Process, prefix: str) -> dict[int, str]:
    """pid → name of `process`'s live children whose name (as the kernel keeps it: 15 bytes)
    starts with `prefix`: its API I/O workers (aiosched-io-), filter workers, trace export."""
    found: dict[int, str] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :]
        state, ppid = rest.split()[:2]
        if int(ppid) == process.proc.pid and name.startswith(prefix) and state != "Z":
            found[int(stat.parent.name)] = name
    return found


def wait_until(predicate: Any, timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.1)


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def cached_nodes(scheduler_url: str) -> int:
    """How many nodes the scheduler's cache held when it last set its cache-size gauge."""
    status, text = http_get(f"{scheduler_url}/metrics")
    if status != 200:
        return 0
    match = re.search(r'^scheduler_cache_size\{type="nodes"\} (\S+)$', text, re.M)
    return int(float(match.group(1))) if match else 0


def wait_nodes_cached(scheduler_url: str, count: int) -> None:
    """Wait until the scheduler's cache holds `count` nodes, so that pods created next see all
    of them at their first attempt (a pod's watch event could otherwise beat a node's)."""
    wait_until(lambda: cached_nodes(scheduler_url) >= count, what=f"{count} nodes in cache")


@contextlib.contextmanager
def stopping(*procs: Process) -> Iterator[None]:
    try:
        yield
    finally:
        for proc in procs:
            proc.stop()


@contextlib.contextmanager
def started(*starts: Callable[[], Process]) -> Iterator[list[Process]]:
    """Start each process in order and stop every one that started, the last first, also when
    a later one fails to start (a scheduler that does not come up must not leave its cluster
    running for the rest of the session)."""
    procs: list[Process] = []
    try:
        for start_one in starts:
            procs.append(start_one())
        yield procs
    finally:
        for proc in reversed(procs):
            proc.stop()


def node_manifest(name: str, cpu: str, memory: str = "32Gi", labels: str = "") -> str:
    return f"""
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}{labels}}}
status:
  capacity: {{cpu: "{cpu}", memory: {memory}, pods: "110"}}
  allocatable: {{cpu: "{cpu}", memory: {memory}, pods: "110"}}
---"""


def pod_manifest(name: str, cpu: str, extra_spec: str = "") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.9
    resources: {{requests: {{cpu: "{cpu}", memory: 100Mi}}}}
{extra_spec}
---"""
