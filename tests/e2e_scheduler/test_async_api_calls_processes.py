"""`aiosched run --feature-gates SchedulerAsyncAPICalls=true --api-workers 1`: the dispatcher
decides what is sent, the API I/O worker sends it; a user sees the same pods bound and the same
PodScheduled=False as with the gate off, and the dispatcher's metrics."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

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

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""


def test_gate_on_through_an_api_worker(tmp_path: Path) -> None:
    gate_on = ("--feature-gates", "SchedulerAsyncAPICalls=true", "--api-workers", "1")
    kubectl = Kubectl(tmp_path)
    with started(
        partial(start_cluster, tmp_path), partial(start_scheduler, tmp_path, CONFIG, *gate_on)
    ) as (_, scheduler):
        kubectl.apply(node_manifest("n2", "2"))
        wait_nodes_cached(scheduler.url, 1)
        kubectl.apply(pod_manifest("small", "1") + pod_manifest("huge", "16"))
        kubectl("wait", "--for=condition=PodScheduled", "pod/small", "--timeout=30s")
        kubectl("wait", "--for=condition=PodScheduled=false", "pod/huge", "--timeout=30s")
        huge = kubectl.json("pod", "huge")
        (condition,) = [c for c in huge["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert condition["reason"] == "Unschedulable"
        assert condition["message"] == (
            "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        )

        def executed() -> dict[str, float]:
            _, text = http_get(f"{scheduler.url}/metrics")
            pattern = (
                r"^scheduler_async_api_call_execution_total"
                r'\{call_type="(\w+)",result="success"\} (\S+)$'
            )
            return {m[0]: float(m[1]) for m in re.findall(pattern, text, re.M)}

        counts = wait_until(lambda: len(executed()) == 2 and executed(), what="both call types")
        assert counts["pod_binding"] == 1
        assert counts["pod_status_patch"] >= 1
