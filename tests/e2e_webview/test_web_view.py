"""The web view in a real browser: headless Chromium (Debian's `chromium`, which .ci/run
installs) loads /debug/view from `aiosched run` against `aiosched cluster --nodes 3`, runs the
page's script against /debug/view/state, and the DOM it builds shows the nodes filled by the
pods bound there, the queue sizes, the pending pod's reason from its last explain, and the
recent attempts with their extension points and trace links. The screenshot is kept as a test
artifact: under tmp_path, and copied to $AIOSCHED_TEST_ARTIFACTS (default: .artifacts/ at the
repository root, ignored by git)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import ssl
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from processes import (
    Kubectl,
    aiosched,
    http_get,
    pod_manifest,
    start,
    start_cluster,
    start_scheduler,
    stopping,
    wait_nodes_cached,
    wait_until,
)

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""
TRACE_UI = "http://localhost:16686/trace/{trace_id}"
CHROMIUM = next(
    (found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))), None
)


def chromium(profile: Path, *args: str) -> str:
    """Run headless Chromium once; what it prints on stdout (the DOM with --dump-dom)."""
    result = subprocess.run(
        [
            CHROMIUM or "chromium",
            "--headless",
            "--no-sandbox",  # root in CI containers
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={profile}",
            # the page fetches its state at once; virtual time waits for that fetch
            "--virtual-time-budget=5000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def state(url: str) -> dict[str, Any]:
    status, body = http_get(url + "/debug/view/state")
    assert status == 200, body
    data: dict[str, Any] = json.loads(body)
    return data


def settled(seen: dict[str, Any]) -> dict[str, Any] | None:
    """The state once web-1 and web-2 are bound and huge has failed an attempt."""
    bound = {a["pod"]["name"] for a in seen["attempts"] if a["result"] == "scheduled"}
    return seen if seen["pending"] and bound == {"web-1", "web-2"} else None


def artifacts_dir() -> Path:
    return Path(os.environ.get("AIOSCHED_TEST_ARTIFACTS") or REPO / ".artifacts")


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium)")
def test_the_web_view_shows_nodes_queue_pending_pods_and_attempts(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, 0, 3)
    with stopping(cluster):
        scheduler = start_scheduler(
            tmp_path,
            CONFIG,
            "--trace-ui-url",
            TRACE_UI,
            "--otel-exporter",
            "console",  # traced attempts: timings per extension point and trace ids
        )
        with stopping(scheduler):
            url = scheduler.url
            wait_nodes_cached(url, 3)
            kubectl = Kubectl(tmp_path)
            kubectl.apply(
                pod_manifest("web-1", "1500m")
                + pod_manifest("web-2", "1")
                + pod_manifest("huge", "640")
            )
            seen = wait_until(lambda: settled(state(url)), what="two pods bound and one pending")
            dom = chromium(tmp_path / "profile", "--dump-dom", url + "/debug/view")
            (tmp_path / "web-view.html").write_text(dom)
            screenshot = tmp_path / "web-view.png"
            chromium(
                tmp_path / "profile",
                f"--screenshot={screenshot}",
                "--window-size=1280,1000",
                url + "/debug/view",
            )

    text = html.unescape(re.sub(r"<[^>]+>", " ", dom))
    # nodes: a box each, filled by the requests of the pods bound there
    names = [node["name"] for node in seen["nodes"]]
    assert len(names) == 3
    for name in names:
        assert f'data-node="{name}"' in dom, name
    assert "(3)" in text  # the node count in the section title
    assert re.search(r"cpu (1500m|1|2\.5)/4", text), text  # a box with a bound pod's cpu
    # the queue sizes: the unschedulable pod counted
    counters = dict(re.findall(r'id="queue-(\w+)"><b>(\d+)</b>', dom))
    assert set(counters) == {"active", "backoff", "unschedulable", "gated"}
    assert int(counters["unschedulable"]) + int(counters["backoff"]) == 1
    # the pending pod and the reason its last explain gives
    assert 'data-pod="default/huge"' in dom
    assert "0/3 nodes are available: 3 Insufficient cpu." in text
    assert "NodeResourcesFit: Insufficient cpu" in text
    # recent attempts with their extension points and links into the trace UI
    assert "scheduled → node-" in text
    assert re.search(r"Filter \d+\.\d\d · ", text)
    links = re.findall(r'href="http://localhost:16686/trace/([0-9a-f]{32})"', dom)
    assert len(links) >= 3, links
    # the screenshot, kept
    data = screenshot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000
    kept = artifacts_dir()
    kept.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(screenshot, kept / "web-view.png")


def https_get(url: str, token: str | None = None) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    unverified = ssl._create_unverified_context()  # the scheduler's self-signed certificate
    try:
        with urllib.request.urlopen(request, timeout=10, context=unverified) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@dataclass
class SecureScheduler:
    """`aiosched cluster --nodes 2` with deploy/kubernetes's RBAC, service account tokens
    "reader" (aiosched:metrics-reader) and "nobody", and `aiosched run` on its secure port."""

    workdir: Path
    kubectl: Kubectl
    tokens: dict[str, str]
    url: str


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureScheduler]:
    tmp_path = tmp_path_factory.mktemp("secure")
    cluster = start_cluster(tmp_path, 0, 2)
    with stopping(cluster):
        kubectl = Kubectl(tmp_path)
        kubectl("apply", "-f", str(REPO / "deploy" / "kubernetes" / "rbac.yaml"))
        tokens = {}
        for account in ("reader", "nobody"):
            kubectl("create", "serviceaccount", account)
            tokens[account] = kubectl("create", "token", account).strip()
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
            yield SecureScheduler(tmp_path, kubectl, tokens, scheduler.url)


def test_on_the_secure_port_the_web_view_wants_what_debug_wants(secure: SecureScheduler) -> None:
    """deploy/kubernetes's aiosched:metrics-reader (get on /debug/*) reads the page and its
    state; no token is 401, a token without that role 403, as for /debug/explain."""
    tokens = secure.tokens
    for path in ("/debug/view", "/debug/view/state"):
        url = secure.url + path
        assert https_get(url)[0] == 401
        assert https_get(url, tokens["nobody"])[0] == 403
        status, body = https_get(url, tokens["reader"])
        assert status == 200, body
    assert json.loads(body)["queue"] == {
        "active": 0,
        "backoff": 0,
        "unschedulable": 0,
        "gated": 0,
    }


#: A network-attached device pool every node reaches (allNodes), one of its devices claimed.
DRA_OBJECTS = """
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: net.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "net.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: fabric}
spec:
  driver: net.example.com
  pool: {name: fabric, generation: 1, resourceSliceCount: 1}
  allNodes: true
  devices: [{name: nic-0}, {name: nic-1}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: nic}
spec:
  devices:
    requests:
    - name: nic
      exactly: {deviceClassName: net.example.com}
---"""


def reader_kubeconfig(secure: SecureScheduler) -> Path:
    """The cluster's kubeconfig with the reader service account's token as its user."""
    doc = yaml.safe_load((secure.workdir / "kubeconfig").read_text())
    for user in doc["users"]:
        user["user"] = {"token": secure.tokens["reader"]}
    path = secure.workdir / "reader-kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium)")
def test_aiosched_view_opens_the_secure_port_in_a_browser(
    secure: SecureScheduler, tmp_path: Path
) -> None:
    """`aiosched view` forwards the browser's requests with the kubeconfig user's token (the
    scheduler reviews it each time); the page shows untraced attempts' extension-point
    timings and the allNodes slice's devices on every node, the claimed one allocated."""
    secure.kubectl.apply(
        DRA_OBJECTS
        + pod_manifest("dra-pod", "100m", "  resourceClaims: [{name: nic, resourceClaimName: nic}]")
        + pod_manifest("plain", "100m")
    )
    host_port = secure.url.removeprefix("https://")
    proxy = start(
        [
            *aiosched(),
            "view",
            "--http-address",
            host_port,
            "--insecure-skip-tls-verify",
            "--kubeconfig",
            str(reader_kubeconfig(secure)),
        ],
        tmp_path / "view.log",
        r"open (http://127\.0\.0\.1:\d+)/debug/view",
    )
    with stopping(proxy):

        def ready() -> dict[str, Any] | None:
            seen = state(proxy.url)
            bound = {a["pod"]["name"] for a in seen["attempts"] if a["result"] == "scheduled"}
            devices = [node.get("devices", {}).get("allocated") for node in seen["nodes"]]
            return seen if {"dra-pod", "plain"} <= bound and devices == [1, 1] else None

        seen = wait_until(ready, what="both pods bound, the claimed device allocated")
        dom = chromium(tmp_path / "profile", "--dump-dom", proxy.url + "/debug/view")
        (tmp_path / "web-view-secure.html").write_text(dom)
        screenshot = tmp_path / "web-view-secure.png"
        chromium(
            tmp_path / "profile",
            f"--screenshot={screenshot}",
            "--window-size=1280,900",
            proxy.url + "/debug/view",
        )
    log = (tmp_path / "view.log").read_text()
    assert secure.tokens["reader"] not in log  # the token is never printed

    text = html.unescape(re.sub(r"<[^>]+>", " ", dom))
    # untraced attempts (no tracing configured) still show their extension-point timings
    attempts = {a["pod"]["name"]: a for a in seen["attempts"]}
    assert "traceId" not in attempts["plain"]
    points = {p["point"] for p in attempts["plain"]["extensionPoints"]}
    assert {"PreFilter", "Filter", "Bind"} <= points, points
    assert re.search(r"PreFilter \d+\.\d\d · ", text), text
    assert '<span class="dim">no timings</span>' not in dom
    # the allNodes slice's devices on both node boxes, the claimed one allocated
    for node in seen["nodes"]:
        assert node["devices"]["total"] == 2
    marks = re.findall(
        r'<i class="dev([^"]*)" data-device="net\.example\.com/fabric/(nic-\d)"', dom
    )
    assert len(marks) == 4, marks
    allocated = {name for classes, name in marks if "allocated" in classes}
    assert len(allocated) == 1 and all("shared" in classes for classes, _ in marks)
    assert re.search(r"devices 1/2", text)
    data = screenshot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000
    kept = artifacts_dir()
    kept.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(screenshot, kept / "web-view-secure.png")
