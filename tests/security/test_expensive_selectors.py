"""A DRA selector under upstream's cost limit but slow to evaluate here (three nested `all()`
macros over a 20-element list: about a second per device in cel-python) cannot hold the
scheduler's event loop: it is evaluated on a worker thread while its pod waits, and meanwhile
a probe pod without claims binds within 2 s, /healthz answers within 1 s and the scheduler
keeps its Lease. The pod with the claim is then bound where evaluating inline would have put
it (the selector is true for every device).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from processes import wait_until
from security_harness import (
    HEALTHZ_SECONDS,
    PROBE_BIND_SECONDS,
    Cluster,
    nested_all,
)

pytestmark = pytest.mark.e2e

DRIVER = "gpu.kubesim.io"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture(scope="module")
def cluster(elected_cluster: Cluster) -> Cluster:
    return elected_cluster  # two nodes with one GPU each: two devices to evaluate on


def claim(name: str, expression: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": DRIVER,
            "selectors": [{"cel": {"expression": expression}}],
        }}]}},
    }  # fmt: skip


def pod_with_claim(name: str, claim_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                            "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
        },
    }  # fmt: skip


def node_of(cluster: Cluster, name: str) -> str:
    status, pod = cluster.api.call("GET", f"{PODS}/{name}")
    assert status == 200, pod
    return str(pod["spec"].get("nodeName") or "")


def test_an_expensive_selector_does_not_hold_the_loop(cluster: Cluster) -> None:
    leader = cluster.leader()
    status, answer = cluster.api.call("POST", CLAIMS, claim("nested", nested_all(3)))
    assert status == 201, answer
    status, answer = cluster.api.call("POST", PODS, pod_with_claim("nested", "nested"))
    assert status == 201, answer
    healthz: list[float] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            healthz.append(cluster.healthz_seconds())
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        probes = [cluster.probe_bind_seconds() for _ in range(2)]
        waited_while_probing = node_of(cluster, "nested") == ""
        wait_until(lambda: node_of(cluster, "nested") != "", timeout=120)
    finally:
        stop.set()
        watcher.join()
    assert waited_while_probing, "the selector was evaluated before the probes: no contention"
    assert max(probes) < PROBE_BIND_SECONDS, probes
    assert max(healthz) < HEALTHZ_SECONDS, max(healthz)
    status, allocated = cluster.api.call("GET", f"{CLAIMS}/nested")
    assert status == 200, allocated
    results = allocated["status"]["allocation"]["devices"]["results"]
    assert [(r["driver"], r["device"]) for r in results] == [(DRIVER, "gpu-0")]
    cluster.assert_healthy(leader)
