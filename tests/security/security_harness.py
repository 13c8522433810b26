"""What the attacks of tests/security need: a real `aiosched cluster` and a real `aiosched run`
on its secure port with leader election, a client for the API server that uses the admin
token of the kubeconfig, and the checks every attack ends with: the scheduler still leads and
binds a probe pod within PROBE_BIND_SECONDS, /healthz answers within HEALTHZ_SECONDS, and the
scheduler's peak memory stays under a bound.
"""

from __future__ import annotations

import itertools
import json
import ssl
import time
import urllib.error
import urllib.request
from base64 import b64decode
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from processes import Process, aiosched, start, start_cluster, stopping

PROBE_BIND_SECONDS = 2.0
HEALTHZ_SECONDS = 1.0
UNVERIFIED = ssl._create_unverified_context()
#: Short leader-election periods: a Lease renewal starved for RENEW_DEADLINE loses leadership,
#: so an attack that delays renewals shows within seconds.
ELECTED = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 500ms
"""
_probes = itertools.count()


class Api:
    """The API server, reached with the kubeconfig's admin token and CA."""

    def __init__(self, kubeconfig: Path) -> None:
        config = yaml.safe_load(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self.url = str(cluster["server"])
        self.token = str(config["users"][0]["user"]["token"])
        ca = cluster.get("certificate-authority-data")
        self.context = ssl.create_default_context(cadata=b64decode(ca).decode()) if ca else None

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        token: str | None = None,
        raw: bytes | None = None,
        timeout: float = 30,
    ) -> tuple[int, Any]:
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {token or self.token}"}
        if data is not None:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=self.context) as answer:
                status, text = answer.status, answer.read()
        except urllib.error.HTTPError as exc:
            status, text = exc.code, exc.read()
        try:
            return int(status), json.loads(text)
        except ValueError:
            return int(status), text.decode(errors="replace")


@dataclass
class Cluster:
    """`aiosched cluster` and `aiosched run` (secure port, elected) sharing `workdir`."""

    workdir: Path
    kubesim: Process
    scheduler: Process
    api: Api

    @property
    def config(self) -> Path:
        return self.workdir / "config.yaml"

    def https(
        self,
        path: str,
        *,
        method: str = "GET",
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 10,
    ) -> tuple[int, bytes]:
        request = urllib.request.Request(
            self.scheduler.url + path, data=body, method=method, headers=headers or {}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=UNVERIFIED) as answer:
                return int(answer.status), answer.read()
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read()

    def healthz_seconds(self) -> float:
        began = time.monotonic()
        status, body = self.https("/healthz", timeout=30)
        assert (status, body) == (200, b"ok")
        return time.monotonic() - began

    def probe_bind_seconds(self, timeout: float = 30.0) -> float:
        """How long a fresh pod takes from its creation to its binding."""
        name = f"probe-{next(_probes)}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]},
        }
        began = time.monotonic()
        status, answer = self.api.call("POST", "/api/v1/namespaces/default/pods", pod)
        assert status == 201, answer
        while time.monotonic() - began < timeout:
            status, found = self.api.call("GET", f"/api/v1/namespaces/default/pods/{name}")
            if status == 200 and found["spec"].get("nodeName"):
                return time.monotonic() - began
            time.sleep(0.05)
        raise AssertionError(f"{name} not bound within {timeout}s")

    def leader(self) -> str:
        status, lease = self.api.call(
            "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"
        )
        assert status == 200, lease
        return str(lease["spec"].get("holderIdentity") or "")

    def peak_rss_bytes(self) -> int:
        """The scheduler's peak resident memory so far (VmHWM)."""
        status = Path(f"/proc/{self.scheduler.proc.pid}/status").read_text()
        kib = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))
        return int(kib) * 1024

    def assert_healthy(self, leader: str) -> None:
        """The checks every attack ends with."""
        assert self.scheduler.proc.poll() is None, self.log()
        assert self.healthz_seconds() < HEALTHZ_SECONDS
        assert self.leader() == leader
        assert self.probe_bind_seconds() < PROBE_BIND_SECONDS
        assert "leader election lost" not in self.log()

    def log(self) -> str:
        return (self.workdir / "scheduler.log").read_text(errors="replace")


def running_cluster(
    workdir: Path, config: str = ELECTED, *extra: str, cluster_flags: tuple[str, ...] = ()
) -> Any:
    """A generator for a module fixture: yields a Cluster once the scheduler leads and binds.
    `extra` goes to `aiosched run`, `cluster_flags` to `aiosched cluster` (2 nodes)."""
    kubesim = start_cluster(workdir, 0, 2, *cluster_flags)
    with stopping(kubesim):
        (workdir / "config.yaml").write_text(config)
        scheduler = start(
            [
                *aiosched(),
                "run",
                "--kubeconfig",
                str(workdir / "kubeconfig"),
                "--config",
                str(workdir / "config.yaml"),
                "--secure-port=0",
                *extra,
            ],
            workdir / "scheduler.log",
            r"serving /metrics, .+? on (https?://[\d.]+:\d+)",
        )
        with stopping(scheduler):
            cluster = Cluster(workdir, kubesim, scheduler, Api(workdir / "kubeconfig"))
            cluster.probe_bind_seconds()  # leads, has synced, binds
            yield cluster


def nested_all(levels: int) -> str:
    """A DRA selector of `levels` nested all() macros over a 20-element list: estimated cost
    17,261 for 3 levels, 6,905,261 for 5 (over CELSelectorExpressionMaxCost)."""
    twenty = "[" + ", ".join(str(i) for i in range(20)) + "]"
    expression = "true"
    for level in range(levels):
        expression = f"{twenty}.all(x{level}, {expression})"
    return expression
