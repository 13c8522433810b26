"""The reliability suite: real processes, real kill -9, and the invariants a user relies on.

- kubesim (`aiosched cluster --data-dir`) is killed with SIGKILL five times while pods are being
  created and bound, and restarted from its data dir on the same port each time;
- the scheduler is killed with SIGKILL while bindings are in flight, and a new one takes over;
- two schedulers elect a leader; the leader is killed with SIGKILL and the other takes over;
- the scheduler's API I/O worker processes are killed with SIGKILL while bindings are in flight,
  and the scheduler replaces them and carries on.

After each, every invariant holds:
- no pod whose creation the API server acknowledged (201) is lost;
- no pod is bound twice (the node a pod was seen on never changes);
- no node holds more CPU requests than its allocatable CPU;
- every pod is eventually bound, or Pending with a PodScheduled=False condition saying why.

Run on its own with `pytest -m reliability`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import ssl
import sys
import threading
import time
import urllib.error
import urllib.request
from base64 import b64decode
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

_PROCESSES = str(Path(__file__).resolve().parents[1] / "e2e_scheduler")
if _PROCESSES not in sys.path:
    sys.path.insert(0, _PROCESSES)

from processes import (  # noqa: E402
    Kubectl,
    Process,
    children_named,
    http_get,
    node_manifest,
    start_cluster,
    start_scheduler,
    stopping,
    wait_until,
)

pytestmark = [pytest.mark.e2e, pytest.mark.reliability]

NODES = 6
NODE_CPU_MILLIS = 2000
POD_CPU_MILLIS = 100  # 6 nodes x 2 CPU hold 120 pods: some of the pods below must stay Pending

SINGLE = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""
ELECTED = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  leaseDuration: 2s
  renewDeadline: 1500ms
  retryPeriod: 200ms
"""


class ApiClient:
    """Creates pods over HTTP with the kubeconfig's token and CA, remembering which creations
    the server acknowledged."""

    def __init__(self, kubeconfig: Path) -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self.url = str(cluster["server"])
        self.token = str(config["users"][0]["user"]["token"])
        ca = cluster.get("certificate-authority-data")
        self.context = ssl.create_default_context(cadata=b64decode(ca).decode()) if ca else None

    def create_pod(self, name: str) -> int:
        """The HTTP status of one create, or 0 when the server could not be reached."""
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": f"{POD_CPU_MILLIS}m"}},
                    }
                ]
            },
        }
        request = urllib.request.Request(
            f"{self.url}/api/v1/namespaces/default/pods",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=5, context=self.context) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)
        except OSError:
            return 0


@dataclass
class Load:
    """A thread that creates `total` pods at a steady rate, retrying each until it is answered."""

    client: ApiClient
    total: int
    per_second: float
    acknowledged: set[str] = field(default_factory=set)
    refused: dict[str, int] = field(default_factory=dict)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for index in range(self.total):
            name = f"load-{index}"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                status = self.client.create_pod(name)
                if status == 201:
                    self.acknowledged.add(name)
                    break
                if status == 409:  # stored before a crash, its answer lost: exists, not acked
                    break
                if status not in (0, 429, 500, 503, 504):
                    self.refused[name] = status
                    break
                time.sleep(0.1)
            time.sleep(1 / self.per_second)

    def wait(self, timeout: float = 120) -> None:
        assert self._thread is not None
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the load did not finish"


@dataclass
class Watcher:
    """Polls the pods and remembers the first node each pod was seen bound to."""

    kubectl: Kubectl
    first_node: dict[str, str] = field(default_factory=dict)
    rebound: list[str] = field(default_factory=list)

    def poll(self) -> list[dict[str, Any]]:
        try:
            pods: list[dict[str, Any]] = self.kubectl.json("pods")["items"]
        except AssertionError:  # the API server is down right now
            return []
        for pod in pods:
            name, node = pod["metadata"]["name"], pod["spec"].get("nodeName")
            if not node:
                continue
            seen = self.first_node.setdefault(name, node)
            if seen != node:
                self.rebound.append(f"{name}: {seen} then {node}")
        return pods

    @contextlib.contextmanager
    def polling(self, interval: float = 0.3) -> Iterator[None]:
        stop = threading.Event()

        def loop() -> None:
            while not stop.is_set():
                self.poll()
                stop.wait(interval)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(10)


def _cpu_millis(quantity: str) -> int:
    return int(quantity[:-1]) if quantity.endswith("m") else int(float(quantity) * 1000)


def _settled(pods: list[dict[str, Any]]) -> bool:
    """Every pod bound, or Pending as Unschedulable with the scheduler's reason on it.

    A pending pod marked SchedulerError is not settled: its bind failed (an I/O worker or the
    API server went away mid-call) and it waits in backoff for another attempt, which may bind
    it into the slot its failed bind left free."""
    for pod in pods:
        if pod["spec"].get("nodeName"):
            continue
        conditions = {c["type"]: c for c in pod.get("status", {}).get("conditions", [])}
        scheduled = conditions.get("PodScheduled")
        if (
            not scheduled
            or scheduled["status"] != "False"
            or scheduled.get("reason") != "Unschedulable"
            or not scheduled.get("message")
        ):
            return False
    return True


def check_invariants(watcher: Watcher, load: Load | None, expected: int) -> dict[str, int]:
    """Wait until every pod is settled, then check the invariants; returns the figures."""
    pods = wait_until(
        lambda: (lambda ps: ps if len(ps) >= expected and _settled(ps) else None)(watcher.poll()),
        timeout=90,
        what="every pod bound or explained",
    )
    names = {p["metadata"]["name"] for p in pods}
    if load is not None:
        assert not load.refused, load.refused
        assert load.acknowledged <= names, f"acknowledged pods lost: {load.acknowledged - names}"
    assert not watcher.rebound, watcher.rebound
    used: dict[str, int] = {}
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if node:
            requests = pod["spec"]["containers"][0]["resources"]["requests"]
            used[node] = used.get(node, 0) + _cpu_millis(requests["cpu"])
    over = {node: millis for node, millis in used.items() if millis > NODE_CPU_MILLIS}
    assert not over, f"nodes over allocatable CPU: {over}"
    bound = sum(1 for p in pods if p["spec"].get("nodeName"))
    assert bound == min(len(pods), NODES * NODE_CPU_MILLIS // POD_CPU_MILLIS)
    return {"pods": len(pods), "bound": bound, "pending_explained": len(pods) - bound}


def add_nodes(kubectl: Kubectl) -> None:
    kubectl.apply(
        "".join(node_manifest(f"n{i}", str(NODE_CPU_MILLIS // 1000)) for i in range(NODES))
    )


def port_of(process: Process) -> int:
    return int(re.sub(r".*:", "", process.url))


def test_kubesim_killed_five_times_under_load(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    port = port_of(cluster)
    kubectl = Kubectl(tmp_path)
    add_nodes(kubectl)
    scheduler = start_scheduler(tmp_path, SINGLE)
    watcher = Watcher(kubectl)
    load = Load(ApiClient(tmp_path / "kubeconfig"), total=150, per_second=40)
    restarts = 0
    with stopping(scheduler), watcher.polling():
        load.start()
        for _ in range(5):
            time.sleep(0.6)
            cluster.stop(signal.SIGKILL)
            time.sleep(0.3)
            cluster = start_cluster(tmp_path, port=port)
            restarts += 1
        with stopping(cluster):
            load.wait()
            figures = check_invariants(watcher, load, expected=len(load.acknowledged))
            assert scheduler.proc.poll() is None, scheduler.log.read_text()
    print(
        f"reliability: {restarts} kubesim kill -9 restarts, {figures}, "
        f"{len(load.acknowledged)} creations acknowledged"
    )


def test_scheduler_killed_mid_binding(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    kubectl = Kubectl(tmp_path)
    add_nodes(kubectl)
    first = start_scheduler(tmp_path, SINGLE)
    watcher = Watcher(kubectl)
    load = Load(ApiClient(tmp_path / "kubeconfig"), total=150, per_second=300)
    with stopping(cluster), watcher.polling(interval=0.1):
        load.start()
        wait_until(lambda: watcher.first_node, timeout=30, what="a first binding")
        first.stop(signal.SIGKILL)
        bound_at_kill = len(watcher.first_node)
        second = start_scheduler(tmp_path, SINGLE)
        with stopping(second):
            load.wait()
            figures = check_invariants(watcher, load, expected=150)
    assert bound_at_kill < figures["bound"], "the kill did not land mid-run"
    print(f"reliability: scheduler killed after {bound_at_kill} bindings, {figures}")


def _leading(process: Process) -> bool:
    status, _ = http_get(f"{process.url}/readyz")
    return status == 200


def test_leader_killed_and_the_other_takes_over(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    kubectl = Kubectl(tmp_path)
    add_nodes(kubectl)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for name in ("a", "b"):
        (tmp_path / name / "kubeconfig").write_bytes((tmp_path / "kubeconfig").read_bytes())
    schedulers = [start_scheduler(tmp_path / name, ELECTED) for name in ("a", "b")]
    watcher = Watcher(kubectl)
    load = Load(ApiClient(tmp_path / "kubeconfig"), total=150, per_second=60)
    with stopping(cluster, *schedulers), watcher.polling(interval=0.1):
        leader = wait_until(
            lambda: next((s for s in schedulers if _leading(s)), None), what="a leader"
        )
        follower = next(s for s in schedulers if s is not leader)
        assert not _leading(follower)
        load.start()
        wait_until(lambda: len(watcher.first_node) >= 20, timeout=30, what="20 bindings")
        leader.stop(signal.SIGKILL)
        wait_until(lambda: _leading(follower), timeout=15, what="the follower to lead")
        load.wait()
        figures = check_invariants(watcher, load, expected=150)
    print(f"reliability: leader failover, {figures}")


def io_workers(process: Process, prefix: str = "aiosched-io-") -> dict[int, str]:
    """pid → process name of the scheduler's API I/O workers (its children named aiosched-io-N;
    with `prefix`, its children whose name starts with it)."""
    return children_named(process, prefix)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_api_io_workers_killed_under_load(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    kubectl = Kubectl(tmp_path)
    add_nodes(kubectl)
    scheduler = start_scheduler(tmp_path, SINGLE, "--api-workers", "2")
    watcher = Watcher(kubectl)
    load = Load(ApiClient(tmp_path / "kubeconfig"), total=150, per_second=150)
    killed: list[int] = []
    with stopping(cluster, scheduler), watcher.polling(interval=0.1):
        first = io_workers(scheduler)
        assert sorted(first.values()) == ["aiosched-io-0", "aiosched-io-1"], first
        load.start()
        for _ in range(2):  # one kill while bindings flow, one after its replacement came up
            wait_until(lambda: len(watcher.first_node) > 10 * (len(killed) + 1), timeout=30)
            pid = sorted(io_workers(scheduler))[0]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            wait_until(
                lambda: (
                    len(io_workers(scheduler)) == 2
                    and not set(killed) & io_workers(scheduler).keys()
                ),
                timeout=30,
                what="the killed worker's replacement",
            )
        load.wait()
        figures = check_invariants(watcher, load, expected=150)
        assert scheduler.proc.poll() is None, scheduler.log.read_text()
        # The workers write the events: each bound pod's Scheduled event is written, or counted
        # dropped because the worker holding it was killed; none is lost silently.
        bound = len(watcher.first_node)
        wait_until(
            lambda: sum(event_counts(scheduler).values()) >= bound,
            timeout=30,
            what=f"events for the {bound} bound pods written or counted",
        )
        counts = event_counts(scheduler)
        assert counts["written"] > 0 and set(counts) <= {"written", "worker_lost"}, counts
    log = scheduler.log.read_text(errors="replace")
    assert log.count("API I/O worker exited; starting another") == 2, log
    print(f"reliability: API I/O workers {killed} killed under load, {figures}")


def event_counts(scheduler: Process) -> dict[str, float]:
    """aiosched_events_written_total as "written", and each aiosched_events_dropped_total
    reason that is not zero."""
    _, text = http_get(f"{scheduler.url}/metrics")
    counts: dict[str, float] = {"written": 0.0}
    for match in re.finditer(r"^aiosched_events_written_total(?:\{\})? (\S+)$", text, re.M):
        counts["written"] += float(match.group(1))
    for match in re.finditer(
        r'^aiosched_events_dropped_total\{reason="(\w+)"\} (\S+)$', text, re.M
    ):
        if float(match.group(2)):
            counts[match.group(1)] = float(match.group(2))
    return counts


def filter_workers(process: Process) -> dict[int, str]:
    """pid → name of the scheduler's filter workers (children named aiosched-filter-N)."""
    return io_workers(process, "aiosched-filter")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_filter_workers_killed_under_load(tmp_path: Path) -> None:
    """parallelism 2 with every Filter pass split (--filter-fanout-min-ms 0): kill -9 of the
    filter worker while pods flow; the cycle filters the lost shard itself, a replacement
    starts (tests/scheduler_parallel/test_worker_lost.py: it serves, with the same decisions),
    and every pod is bound exactly once."""
    cluster = start_cluster(tmp_path)
    kubectl = Kubectl(tmp_path)
    add_nodes(kubectl)
    config = SINGLE + "parallelism: 2\n"
    scheduler = start_scheduler(tmp_path, config, "--filter-fanout-min-ms", "0")
    watcher = Watcher(kubectl)
    load = Load(ApiClient(tmp_path / "kubeconfig"), total=150, per_second=50)
    killed: list[int] = []
    with stopping(cluster, scheduler), watcher.polling(interval=0.1):
        load.start()
        # Killed early: pods keep coming for seconds after, so cycles need a replacement.
        wait_until(
            lambda: len(watcher.first_node) > 5 and len(filter_workers(scheduler)) == 1,
            timeout=60,
            what="a filter worker serving",
        )
        pid = next(iter(filter_workers(scheduler)))
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)
        wait_until(
            lambda: bool(filter_workers(scheduler).keys() - set(killed)),
            timeout=60,
            what="the killed filter worker's replacement",
        )
        load.wait()
        figures = check_invariants(watcher, load, expected=150)
        assert scheduler.proc.poll() is None, scheduler.log.read_text()
    log = scheduler.log.read_text(errors="replace")
    assert log.count("filter worker lost") >= 1, log
    print(f"reliability: filter workers {killed} killed under load, {figures}")
