"""kube-scheduler's flags on a real `aiosched run` process, against a real `aiosched cluster`.

- the --leader-elect* family decides the Lease the scheduler takes (seen with kubectl);
- -v and --logging-format json shape the log; a deprecated flag logs why it is ignored;
- clientConnection.kubeconfig is used without --kubeconfig; --bind-address, --secure-port and
  --tls-* serve the endpoints over HTTPS; a second process on that port stops with one line;
- --master replaces the kubeconfig's server;
- removed flags and start-up problems end the command with one line and a non-zero status.
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import urllib.request
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from processes import (
    Kubectl,
    aiosched,
    http_get,
    node_manifest,
    pod_manifest,
    start,
    start_cluster,
    start_scheduler,
    started,
    stopping,
    wait_until,
)

from kubesim.tls import self_signed

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def lease(kubectl: Kubectl, namespace: str, name: str) -> dict[str, Any] | None:
    out = kubectl("get", "lease", name, "-n", namespace, "-o", "json", check=False)
    return json.loads(out) if out else None


def bound_to(kubectl: Kubectl, pod: str) -> str:
    return str(kubectl.json("pod", pod)["spec"].get("nodeName", ""))


def test_leader_elect_flags_choose_the_lease_and_logs_are_json(tmp_path: Path) -> None:
    scheduler_flags = (
        "--leader-elect=true",  # leaderElect: false in the file; the flags turn it on
        "--leader-elect-resource-name=second-scheduler",
        "--leader-elect-resource-namespace=default",
        "--leader-elect-lease-duration=7s",
        "--leader-elect-renew-deadline=5s",
        "--leader-elect-retry-period=1s",
        "--logging-format=json",
        "-v=3",
        "--kube-api-qps=80",
    )
    kubectl = Kubectl(tmp_path)
    with started(
        partial(start_cluster, tmp_path),
        partial(start_scheduler, tmp_path, CONFIG, *scheduler_flags),
    ) as (_, scheduler):
        held = wait_until(lambda: lease(kubectl, "default", "second-scheduler"), what="lease")
        spec = held["spec"]
        assert spec["holderIdentity"] and spec["leaseDurationSeconds"] == 7
        assert lease(kubectl, "kube-system", "kube-scheduler") is None  # not the default one
        wait_until(lambda: http_get(f"{scheduler.url}/readyz")[0] == 200, what="leader ready")

        kubectl.apply(node_manifest("n1", "4") + pod_manifest("web", "1"))
        wait_until(lambda: bound_to(kubectl, "web") == "n1", what="web bound")

    lines = scheduler.log.read_text().splitlines()
    entries = [json.loads(line) for line in lines if not line.startswith("aiosched: ")]
    assert entries and all({"ts", "level", "logger", "msg"} <= set(e) for e in entries)
    assert any(e.get("v") == 3 for e in entries)  # -v=3: per-attempt lines
    (warning,) = [e for e in entries if "--kube-api-qps" in e["msg"]]
    assert warning["level"] == "warning"
    assert "ignored when --config is given" in warning["msg"]


def test_config_kubeconfig_secure_port_tls_and_master(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    kubectl = Kubectl(tmp_path)
    cert = self_signed("127.0.0.1")
    (tmp_path / "tls.crt").write_bytes(cert.cert_pem)
    (tmp_path / "tls.key").write_bytes(cert.key_pem)
    config = tmp_path / "with-kubeconfig.yaml"
    config.write_text(CONFIG + f"clientConnection: {{kubeconfig: {tmp_path / 'kubeconfig'}}}\n")
    port = free_port()
    serving = [
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--tls-cert-file={tmp_path / 'tls.crt'}",
        f"--tls-private-key-file={tmp_path / 'tls.key'}",
    ]
    with stopping(cluster):
        kubectl.apply(node_manifest("n1", "4"))
        # No --kubeconfig: the configuration's clientConnection.kubeconfig is the cluster.
        first = start(
            [*aiosched(), "run", "--config", str(config), *serving],
            tmp_path / "first.log",
            r"serving /metrics, .+? on (https://[\d.]+:\d+) \(TLS, given certificate",
        )
        with stopping(first):
            assert first.url == f"https://127.0.0.1:{port}"
            trusted = ssl.create_default_context(cadata=cert.cert_pem.decode())
            with urllib.request.urlopen(f"{first.url}/healthz", context=trusted) as answer:
                assert answer.read() == b"ok"
            kubectl.apply(pod_manifest("via-config", "1"))
            wait_until(lambda: bound_to(kubectl, "via-config") == "n1", what="bound")

            # The same port again: one line, status 1.
            second = subprocess.run(
                [*aiosched(), "run", "--config", str(config), *serving],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert second.returncode == 1
            assert "Traceback" not in second.stderr
            assert second.stderr.splitlines()[-1] == (
                f"aiosched run: cannot serve /metrics and /healthz on 127.0.0.1:{port}: the port "
                "is already in use (another aiosched or kube-scheduler?); stop that process or "
                "choose another port with --secure-port (0 picks a free one)"
            )

        # --master wins over the kubeconfig's (wrong) server; its credentials still apply.
        # The feature gates of a v1.37 manifest, most unrelated to scheduling, one from a
        # later version: it starts, and /metrics says which gates are on.
        wrong = tmp_path / "wrong-server.kubeconfig"
        wrong.write_text(
            (tmp_path / "kubeconfig").read_text().replace(cluster.url, "https://127.0.0.1:1")
        )
        plain = tmp_path / "plain.yaml"
        plain.write_text(CONFIG)
        third = start(
            [*aiosched(), "run", "--config", str(plain), "--kubeconfig", str(wrong),
             "--master", cluster.url, "--secure-port=0", "--insecure-http",
             "--feature-gates=KubeletPSI=true,ContextualLogging=false,WatchListClient=false,"
             "OpportunisticBatching=false,GateFromALaterRelease=true"],
            tmp_path / "third.log",
            r"serving /metrics, .+? on (http://[\d.]+:\d+) \(plain HTTP",
        )  # fmt: skip
        with stopping(third):
            kubectl.apply(pod_manifest("via-master", "1"))
            wait_until(lambda: bound_to(kubectl, "via-master") == "n1", what="bound")
            status, metrics = http_get(f"{third.url}/metrics")
            assert status == 200
            for line in (
                'kubernetes_feature_enabled{name="OpportunisticBatching",stage="BETA"} 0.0',
                'kubernetes_feature_enabled{name="KubeletPSI",stage=""} 1.0',
                'kubernetes_feature_enabled{name="SchedulerQueueingHints",stage=""} 1.0',
                'kubernetes_feature_enabled{name="GangScheduling",stage="ALPHA"} 0.0',
            ):
                assert line in metrics.splitlines(), line
            assert "GateFromALaterRelease" not in metrics
            log = (tmp_path / "third.log").read_text()
            assert "unrecognized feature gate: GateFromALaterRelease" in log


def test_removed_flags_and_startup_errors_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("clusters: [oops\n")
    (tmp_path / "no-context.yaml").write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    port = free_port()
    (tmp_path / "unreachable.yaml").write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: k, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n"
        "users: [{name: u, user: {}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    cases = {
        ("--port=10251",): (
            2,
            "aiosched run: --port: kube-scheduler removed it in v1.24 (it had no effect since "
            "insecure serving went away in v1.23); use --secure-port",
        ),
        ("--kubeconfig", str(tmp_path / "missing")): (
            1,
            f"aiosched run: cannot read kubeconfig {tmp_path / 'missing'}: No such file or "
            "directory; pass --kubeconfig PATH (or set clientConnection.kubeconfig), or "
            "--master URL",
        ),
        ("--kubeconfig", str(tmp_path / "bad.yaml")): (
            1,
            f"aiosched run: kubeconfig {tmp_path / 'bad.yaml'} is not valid YAML at line 2 "
            "(expected ',' or ']', but got '<stream end>'); fix it or pass another with "
            "--kubeconfig",
        ),
        ("--kubeconfig", str(tmp_path / "no-context.yaml")): (
            1,
            f"aiosched run: kubeconfig {tmp_path / 'no-context.yaml'} has no current-context "
            "(contexts: none defined); run `kubectl config use-context NAME --kubeconfig "
            f"{tmp_path / 'no-context.yaml'}` or pass --context NAME",
        ),
        ("--kubeconfig", str(tmp_path / "unreachable.yaml")): (
            1,
            f"aiosched run: cannot reach the API server at http://127.0.0.1:{port} (Connection "
            "refused); check --master, --kubeconfig or clientConnection.kubeconfig, and that the "
            "API server is running",
        ),
        ("--otel-endpoint", "http://127.0.0.1:4318", "--otel-protocol", "http/json"): (
            1,
            "aiosched run: --otel-protocol http/json: the OpenTelemetry Python SDK has no "
            "OTLP/JSON exporter; supported: grpc (OTLP/gRPC, usually port 4317) and "
            "http/protobuf (OTLP/HTTP, usually port 4318)",
        ),
    }
    running = {
        argv: subprocess.Popen(
            [*aiosched(), "run", "--leader-elect=false", "--secure-port=0", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in cases
    }
    for argv, proc in running.items():
        _, stderr = proc.communicate(timeout=60)
        status, line = cases[argv]
        assert proc.returncode == status, stderr
        assert "Traceback" not in stderr
        assert stderr.splitlines()[-1] == line
