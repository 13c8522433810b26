"""`aiosched run` and `aiosched cluster` as separate processes, driven with kubectl."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest
from processes import (
    Kubectl,
    http_get,
    node_manifest,
    pod_manifest,
    start_cluster,
    start_scheduler,
    started,
    wait_nodes_cached,
    wait_until,
)
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""


def _bound(kubectl: Kubectl) -> dict[str, str]:
    pods = kubectl.json("pods")["items"]
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in pods}


def _condition(pod: dict[str, Any]) -> dict[str, Any]:
    for cond in pod.get("status", {}).get("conditions", []):
        if cond["type"] == "PodScheduled":
            return dict(cond)
    return {}


def test_mixed_cluster_scheduled_as_kube_scheduler_would(tmp_path: Path) -> None:
    kubectl = Kubectl(tmp_path)
    with started(partial(start_cluster, tmp_path), partial(start_scheduler, tmp_path, CONFIG)) as (
        _,
        scheduler,
    ):
        kubectl.apply(
            node_manifest("n2", "2")
            + node_manifest("n4", "4")
            + node_manifest("n8", "8", labels=", disktype: ssd")
        )
        # "huge"'s first (and only) failure message must count all three nodes.
        wait_nodes_cached(scheduler.url, 3)
        pods = [pod_manifest(f"web-{i}", "1") for i in range(6)]
        pods.append(pod_manifest("ssd", "500m", "  nodeSelector: {disktype: ssd}"))
        pods.append(pod_manifest("huge", "16"))
        kubectl.apply("".join(pods))

        def all_but_huge_bound() -> dict[str, str] | None:
            bound = _bound(kubectl)
            return bound if all(node for name, node in bound.items() if name != "huge") else None

        bound = wait_until(all_but_huge_bound, what="schedulable pods bound")
        assert bound["ssd"] == "n8"
        assert bound["huge"] == ""
        huge = kubectl.json("pod", "huge")
        cond = wait_until(lambda: _condition(kubectl.json("pod", "huge")), what="condition")
        assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
        assert cond["message"] == (
            "0/3 nodes are available: 3 Insufficient cpu. "
            "no new claims to deallocate, "
            # More cpu than any node has (fit.go's Unresolvable): no preemption can help.
            "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        )
        assert huge["metadata"]["name"] == "huge"

        # A node that fits arrives: the pod is scheduled within seconds (not after 5 minutes).
        kubectl.apply(node_manifest("n32", "32"))
        wait_until(lambda: _bound(kubectl)["huge"] == "n32", timeout=5, what="huge on n32")

        status, text = http_get(f"{scheduler.url}/metrics")
        assert status == 200
        samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }
        scheduled = samples[
            (
                "scheduler_schedule_attempts_total",
                (("profile", "default-scheduler"), ("result", "scheduled")),
            )
        ]
        assert scheduled == 8
        assert http_get(f"{scheduler.url}/readyz")[0] == 200
