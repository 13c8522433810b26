"""kube-scheduler's debug pages on a real `aiosched run` against a real `aiosched cluster`:
/configz follows a reload, /debug/flags/v changes the verbosity at run time, /statusz and /flagz
answer in text and structured JSON; on the secure port they need what upstream's RBAC grants
(deploy/kubernetes's aiosched:metrics-reader reads /statusz and /flagz, changing the verbosity
needs ``put`` on /debug/flags/v)."""

from __future__ import annotations

import json
import ssl
import urllib.request
from pathlib import Path

import pytest
from processes import (
    Kubectl,
    aiosched,
    http_get,
    start,
    start_cluster,
    start_scheduler,
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


def request(
    url: str, method: str = "GET", data: bytes | None = None, **headers: str
) -> tuple[int, str]:
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10, context=UNVERIFIED) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_debug_pages_of_a_running_scheduler(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    with stopping(cluster):
        scheduler = start_scheduler(tmp_path, CONFIG)
        with stopping(scheduler):
            url = scheduler.url
            log = (tmp_path / "scheduler.log").read_text()
            assert (
                "aiosched: serving /metrics, /healthz, /livez, /readyz, /configz, /statusz, "
                "/flagz, /debug on http://" in log
            )

            status, body = http_get(url + "/configz")
            config = json.loads(body)["componentconfig"]
            assert status == 200 and config["PodMaxBackoffSeconds"] == 10
            config_path = tmp_path / "scheduler-config.yaml"
            config_path.write_text(CONFIG + "podMaxBackoffSeconds: 30\n")

            def reloaded() -> bool:
                body = http_get(url + "/configz")[1]
                return bool(json.loads(body)["componentconfig"]["PodMaxBackoffSeconds"] == 30)

            wait_until(reloaded, what="/configz to show the reloaded file")

            status, body = http_get(url + "/statusz")
            assert status == 200 and body.startswith("\nkube-scheduler statusz\n")
            status, body = request(
                url + "/statusz", Accept="application/json;v=v1beta1;g=config.k8s.io;as=Statusz"
            )
            assert json.loads(body)["paths"] == [
                "/configz",
                "/flagz",
                "/healthz",
                "/livez",
                "/metrics",
                "/readyz",
            ]
            status, body = request(
                url + "/flagz", Accept="application/json;v=v1beta1;g=config.k8s.io;as=Flagz"
            )
            flags = json.loads(body)["flags"]
            assert flags["insecure-http"] == "true" and flags["v"] == "0"

            # V(3) lines ("Attempting to schedule pod") appear only after raising -v at run time
            assert request(url + "/debug/flags/v", "PUT", b"4") == (
                200,
                "successfully set klog.logging.verbosity to 4\n",
            )
            kubectl = Kubectl(tmp_path)
            kubectl("create", "namespace", "zpages")
            kubectl.apply(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: zpages}\n"
                "spec: {containers: [{name: c, image: i}]}\n"
            )
            wait_until(
                lambda: any(
                    "Attempting to schedule pod" in line and "zpages/p" in line
                    for line in (tmp_path / "scheduler.log").read_text().splitlines()
                ),
                what="a V(3) line about the new pod",
            )


def test_the_secure_port_authorizes_the_pages(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    with stopping(cluster):
        kubectl = Kubectl(tmp_path)
        kubectl("apply", "-f", str(REPO / "deploy" / "kubernetes" / "rbac.yaml"))
        kubectl("create", "serviceaccount", "reader")
        token = kubectl("create", "token", "reader").strip()
        kubectl(
            "create",
            "clusterrolebinding",
            "reader-aiosched",
            "--clusterrole=aiosched:metrics-reader",
            "--serviceaccount=default:reader",
        )
        config = tmp_path / "config.yaml"
        config.write_text(CONFIG)
        scheduler = start(
            [
                *aiosched(),
                "run",
                "--kubeconfig",
                str(tmp_path / "kubeconfig"),
                "--config",
                str(config),
                "--secure-port=0",
            ],
            tmp_path / "secure.log",
            r"serving /metrics, .+? on (https://[\d.]+:\d+)",
        )
        with stopping(scheduler):
            url = scheduler.url
            bearer = {"Authorization": f"Bearer {token}"}
            for path in ("/configz", "/statusz", "/flagz"):
                assert request(url + path)[0] == 401, path
            assert request(url + "/statusz", **bearer)[0] == 200
            assert request(url + "/flagz", **bearer)[0] == 200
            assert request(url + "/configz", **bearer)[0] == 403  # not a monitoring path
            status, body = request(url + "/debug/flags/v", "PUT", b"3", **bearer)
            assert status == 403
            assert 'cannot put path "/debug/flags/v"' in json.loads(body)["message"]
            kubectl.apply(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"
                "metadata: {name: verbosity}\n"
                "rules: [{nonResourceURLs: [/debug/flags/v], verbs: [put]}]\n"
            )
            kubectl(
                "create",
                "clusterrolebinding",
                "reader-verbosity",
                "--clusterrole=verbosity",
                "--serviceaccount=default:reader",
            )
            wait_until(  # the denial is cached for 10 s, as upstream's DenyCacheTTL
                lambda: request(url + "/debug/flags/v", "PUT", b"3", **bearer)[0] == 200,
                timeout=30,
                what="the verbosity PUT to be allowed",
            )
