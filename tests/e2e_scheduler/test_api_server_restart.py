"""A flapping API server: kill -9 it while bindings are in flight, restart it from its data dir.

Every pod must end up bound exactly once, and the scheduler process must ride it out.
"""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import pytest
from processes import (
    Kubectl,
    node_manifest,
    pod_manifest,
    start_cluster,
    start_scheduler,
    stopping,
    wait_until,
)

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""
PODS = 120


def test_scheduler_survives_api_server_restart(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    port = int(re.sub(r".*:", "", cluster.url))
    scheduler = start_scheduler(tmp_path, CONFIG)
    kubectl = Kubectl(tmp_path)
    with stopping(scheduler):
        kubectl.apply(node_manifest("a", "64") + node_manifest("b", "64"))
        kubectl.apply("".join(pod_manifest(f"p-{i}", "100m") for i in range(PODS)))
        time.sleep(0.3)  # some bindings done, some in flight, some pods still queued
        cluster.stop(signal.SIGKILL)
        time.sleep(1.0)  # the scheduler sees refused connections for a while
        restarted = start_cluster(tmp_path, port=port)
        with stopping(restarted):

            def all_bound() -> bool:
                pods = kubectl.json("pods")["items"]
                return len(pods) == PODS and all(p["spec"].get("nodeName") for p in pods)

            wait_until(all_bound, timeout=60, what="every pod bound after the restart")
            assert scheduler.proc.poll() is None, scheduler.log.read_text()
            pods = kubectl.json("pods")["items"]
            # Bound exactly once: the PodScheduled condition is True for each, with one binding.
            for pod in pods:
                conditions = {c["type"]: c for c in pod["status"].get("conditions", [])}
                assert conditions["PodScheduled"]["status"] == "True", pod["metadata"]["name"]
