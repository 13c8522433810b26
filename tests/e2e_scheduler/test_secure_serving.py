"""The secure port of a real `aiosched run` against a real `aiosched cluster`, as kube-scheduler's:

HTTPS with a certificate it generates, /healthz, /livez and /readyz open, /metrics and /debug
only for a bearer token that the API server authenticates (TokenReview) and allows to GET the
path (SubjectAccessReview): deploy/kubernetes's aiosched:metrics-reader ClusterRole, bound with
kubectl; `aiosched explain` reaches it with --token; --authorization-kubeconfig sends the access
reviews elsewhere; --insecure-http serves plain HTTP.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from processes import (
    Kubectl,
    aiosched,
    http_get,
    pod_manifest,
    start,
    start_cluster,
    stopping,
    wait_until,
)

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""
UNVERIFIED = ssl._create_unverified_context()


def https_get(url: str, token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10, context=UNVERIFIED) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def token_for(kubectl: Kubectl, account: str) -> str:
    kubectl("create", "serviceaccount", account)
    return kubectl("create", "token", account).strip()


def run_scheduler(tmp_path: Path, name: str, *extra: str) -> Any:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    return start(
        [
            *aiosched(),
            "run",
            "--kubeconfig",
            str(tmp_path / "kubeconfig"),
            "--config",
            str(config),
            "--secure-port=0",
            *extra,
        ],
        tmp_path / f"{name}.log",
        r"serving /metrics, .+? on (https?://[\d.]+:\d+)",
    )


def test_the_secure_port_checks_tokens_with_the_api_server(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    with stopping(cluster):
        kubectl = Kubectl(tmp_path)
        kubectl("apply", "-f", str(REPO / "deploy" / "kubernetes" / "rbac.yaml"))
        reader, nobody = token_for(kubectl, "reader"), token_for(kubectl, "nobody")
        kubectl(
            "create",
            "clusterrolebinding",
            "reader-aiosched",
            "--clusterrole=aiosched:metrics-reader",
            "--serviceaccount=default:reader",
        )
        scheduler = run_scheduler(tmp_path, "secure")
        with stopping(scheduler):
            url = scheduler.url
            assert url.startswith("https://127.0.0.1:")
            line = (tmp_path / "secure.log").read_text()
            assert "(TLS, self-signed certificate; /metrics and /debug need a bearer token" in line

            # the certificate it generated: self-signed, for 127.0.0.1
            pem = ssl.get_server_certificate(("127.0.0.1", int(url.rsplit(":", 1)[1])))
            cert = x509.load_pem_x509_certificate(pem.encode())
            assert cert.issuer == cert.subject
            trusted = ssl.create_default_context(cadata=pem)
            with urllib.request.urlopen(f"{url}/healthz", context=trusted) as answer:
                assert answer.read() == b"ok"

            for path in ("/healthz", "/livez"):
                assert https_get(url + path)[0] == 200, path
            # ready once its informers have synced, which may take a moment after start-up
            wait_until(lambda: https_get(url + "/readyz?verbose")[0] == 200, what="ready")
            status, body = https_get(url + "/metrics")
            assert (status, json.loads(body)["message"]) == (401, "Unauthorized")
            assert https_get(url + "/metrics", "not-a-token")[0] == 401
            status, body = https_get(url + "/metrics", nobody)
            assert status == 403
            assert json.loads(body)["message"] == (
                'forbidden: User "system:serviceaccount:default:nobody" cannot get path "/metrics"'
            )
            status, text = https_get(url + "/metrics", reader)
            assert status == 200 and "scheduler_schedule_attempts_total" in text
            assert https_get(url + "/debug/explain/default/none", nobody)[0] == 403
            assert https_get(url + "/debug/explain/default/none", reader)[0] == 404  # allowed

            # aiosched explain, over HTTPS with the token
            kubectl.apply(pod_manifest("huge", "1000"))
            address = url.removeprefix("https://")
            explain = [*aiosched(), "explain", "default/huge", "--http-address", address]

            def explained() -> subprocess.CompletedProcess[str]:
                return subprocess.run(
                    [*explain, "--token", reader, "--insecure-skip-tls-verify"],
                    capture_output=True,
                    text=True,
                    timeout=30,
                )

            result = wait_until(lambda: (r := explained()).returncode == 0 and r, what="explain")
            assert "unschedulable" in result.stdout
            no_kubeconfig = {**os.environ, "KUBECONFIG": str(tmp_path / "absent")}
            refused = subprocess.run(
                [*explain, "--insecure-skip-tls-verify"],
                capture_output=True,
                text=True,
                timeout=30,
                env=no_kubeconfig,
            )
            assert refused.returncode == 1
            assert "needs a bearer token the API server knows (--token" in refused.stderr
            forbidden = subprocess.run(
                [*explain, "--token", nobody, "--insecure-skip-tls-verify"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert forbidden.returncode == 1
            assert "a token or RoleBinding created just now works within 10 s" in forbidden.stderr
            # without --token: the kubeconfig user's bearer token, as kubectl and view send it
            reader_config = tmp_path / "reader.kubeconfig"
            reader_config.write_text(
                (tmp_path / "kubeconfig").read_text().replace(cluster_token(tmp_path), reader)
            )
            by_kubeconfig = subprocess.run(
                [*explain, "--kubeconfig", str(reader_config), "--insecure-skip-tls-verify"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert by_kubeconfig.returncode == 0, by_kubeconfig.stderr
            assert "unschedulable" in by_kubeconfig.stdout
            small = tmp_path / "small.yaml"
            small.write_text(pod_manifest("small", "1").rstrip().removesuffix("---"))
            what_if = subprocess.run(
                [
                    *aiosched(),
                    "what-if",
                    str(small),
                    "--http-address",
                    address,
                    "--insecure-skip-tls-verify",
                ],
                capture_output=True,
                text=True,
                timeout=30,
                env={**os.environ, "KUBECONFIG": str(reader_config)},
            )
            assert what_if.returncode == 1  # the reader may get, not post, /debug/what-if
            assert "a token allowed to post /debug/what-if" in what_if.stderr
            untrusted = subprocess.run(
                [*explain, "--token", reader], capture_output=True, text=True, timeout=30
            )
            assert untrusted.returncode == 1
            assert "--insecure-skip-tls-verify" in untrusted.stderr


def test_authorization_kubeconfig_and_insecure_http(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    with stopping(cluster):
        kubectl = Kubectl(tmp_path)
        kubectl("apply", "-f", str(REPO / "deploy" / "kubernetes" / "rbac.yaml"))
        reader = token_for(kubectl, "reader")
        kubectl(
            "create",
            "clusterrolebinding",
            "reader-aiosched",
            "--clusterrole=aiosched:metrics-reader",
            "--serviceaccount=default:reader",
        )
        # access reviews through an identity that may not create them: every one fails, so
        # even an allowed token is refused (500), never let through
        powerless = token_for(kubectl, "powerless")
        limited = tmp_path / "powerless.kubeconfig"
        limited.write_text(
            (tmp_path / "kubeconfig").read_text().replace(cluster_token(tmp_path), powerless)
        )
        scheduler = run_scheduler(tmp_path, "delegated", f"--authorization-kubeconfig={limited}")
        with stopping(scheduler):
            status, body = https_get(scheduler.url + "/metrics", reader)
            assert status == 500
            assert "subjectaccessreviews.authorization.k8s.io is forbidden" in body
            assert https_get(scheduler.url + "/healthz")[0] == 200

        plain = run_scheduler(tmp_path, "plain", "--insecure-http")
        with stopping(plain):
            assert plain.url.startswith("http://")
            assert (
                "(plain HTTP, no authentication: --insecure-http)"
                in (tmp_path / "plain.log").read_text()
            )
            status, text = http_get(plain.url + "/metrics")
            assert status == 200 and "scheduler_schedule_attempts_total" in text


def cluster_token(tmp_path: Path) -> str:
    config = yaml.safe_load((tmp_path / "kubeconfig").read_text())
    return str(config["users"][0]["user"]["token"])
