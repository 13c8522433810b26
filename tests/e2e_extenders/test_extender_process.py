"""`aiosched cluster`, `aiosched run --config` with an extenders section and the example
extender (examples/extender/server.py) as three real processes, driven with kubectl."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from processes import (
    Kubectl,
    node_manifest,
    pod_manifest,
    start,
    start_cluster,
    start_scheduler,
    started,
    wait_nodes_cached,
    wait_until,
)

pytestmark = pytest.mark.e2e

SERVER = Path(__file__).resolve().parents[2] / "examples" / "extender" / "server.py"


def config(extender_url: str) -> str:
    return f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {{leaderElect: false}}
extenders:
- urlPrefix: {extender_url}
  filterVerb: filter
  prioritizeVerb: prioritize
  weight: 5
  bindVerb: bind
  httpTimeout: 10s
"""


def _condition(pod: dict[str, Any]) -> dict[str, Any]:
    for cond in pod.get("status", {}).get("conditions", []):
        if cond["type"] == "PodScheduled":
            return dict(cond)
    return {}


def test_example_extender_filters_prioritizes_and_binds(tmp_path: Path) -> None:
    extender_started = partial(
        start,
        [
            sys.executable,
            str(SERVER),
            "--port",
            "0",
            "--prefix",
            "/scheduler",
            "--kubeconfig",
            str(tmp_path / "kubeconfig"),
        ],
        tmp_path / "extender.log",
        r"extender: serving on (http://[\d.]+:\d+/scheduler)",
    )
    kubectl = Kubectl(tmp_path)
    with (
        started(partial(start_cluster, tmp_path), extender_started) as (_, extender),
        started(partial(start_scheduler, tmp_path, config(extender.url))) as (scheduler,),
    ):
        allowed = ", extender.example/allowed: 'yes'"
        kubectl.apply(
            node_manifest("n1", "8", labels=allowed + ", extender.example/score: '3'")
            + node_manifest("n2", "8", labels=allowed + ", extender.example/score: '9'")
            + node_manifest("n3", "8", labels=", disk: ssd")
        )
        wait_nodes_cached(scheduler.url, 3)
        pods = "".join(pod_manifest(f"web-{i}", "500m") for i in range(3))
        pods += pod_manifest("ssd", "500m", "  nodeSelector: {disk: ssd}")
        kubectl.apply(pods)

        def bound() -> dict[str, str] | None:
            items = kubectl.json("pods")["items"]
            nodes = {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in items}
            return nodes if all(n for name, n in nodes.items() if name != "ssd") else None

        nodes = wait_until(bound, what="web pods bound")
        # n3 lacks the label (filter); n2 scores 9 against n1's 3 (prioritize, weight 5).
        assert {nodes[f"web-{i}"] for i in range(3)} == {"n2"}
        assert nodes["ssd"] == ""
        # The extender bound them (its log says so), not the DefaultBinder.
        log = extender.log.read_text()
        for i in range(3):
            assert f"extender: bound default/web-{i} to n2" in log

        cond = wait_until(lambda: _condition(kubectl.json("pod", "ssd")), what="ssd condition")
        assert cond["reason"] == "Unschedulable"
        assert cond["message"].startswith(
            "0/3 nodes are available: 1 node(s) didn't have label extender.example/allowed, "
            "2 node(s) didn't match Pod's node affinity/selector."
        ), cond["message"]

        # The label arrives: a node update is an event that brings the pod back.
        kubectl("label", "node", "n3", "extender.example/allowed=yes")
        wait_until(
            lambda: kubectl.json("pod", "ssd")["spec"].get("nodeName") == "n3",
            timeout=10,
            what="ssd bound to n3",
        )
