"""`aiosched what-if` for a whole gang against `aiosched cluster` + `aiosched run --feature-gates
GenericWorkload=true,GangScheduling=true`: a PodGroup of 4 and its Pods (one 3-CPU member per
4-CPU node) on 3 nodes is not placeable and names the member that blocks the quorum; once a
fourth node is added every member has a node. Nothing is created or bound either time."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from processes import (
    Kubectl,
    aiosched,
    node_manifest,
    pod_manifest,
    start_cluster,
    start_scheduler,
    stopping,
    wait_nodes_cached,
)

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: GangScheduling
"""
GATES = "GenericWorkload=true,GangScheduling=true"
GANG = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: train}
spec:
  schedulingPolicy: {gang: {minCount: 4}}
---""" + pod_manifest("worker", "3", "  schedulingGroup: {podGroupName: train}")


def _what_if(address: str, path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*aiosched(), "what-if", str(path), "--replicas", "4", *args,
         "--http-address", address, "--insecure-http"],
        capture_output=True,
        text=True,
        timeout=30,
    )  # fmt: skip


def test_group_what_if_names_the_blocking_member_then_places_all(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    with stopping(cluster):
        kubectl = Kubectl(tmp_path)
        scheduler = start_scheduler(tmp_path, CONFIG, "--feature-gates", GATES)
        with stopping(scheduler):
            address = scheduler.url.removeprefix("http://")
            kubectl.apply("".join(node_manifest(f"n{i}", "4") for i in range(3)))
            wait_nodes_cached(scheduler.url, 3)
            gang = tmp_path / "gang.yaml"
            gang.write_text(GANG)

            result = _what_if(address, gang, "-o", "json")
            assert result.returncode == 0, result.stderr
            group = json.loads(result.stdout)["podGroup"]
            assert group["quorumPlaceable"] is False
            assert group["message"] == "minCount (4) cannot be satisfied: 3 scheduled, 0 remaining"
            assert group["blockingMember"]["pod"] == "worker-3"
            assert group["blockingMember"]["message"] == (
                "0/3 nodes are available: 3 Insufficient cpu."
            )
            fitted = {m["pod"]: m.get("node") for m in group["members"] if m["result"] == "fitted"}
            assert sorted(fitted.values()) == ["n0", "n1", "n2"]

            text = _what_if(address, gang)
            assert text.returncode == 0, text.stderr
            assert "Blocking the quorum: worker-3: 0/3 nodes are available" in text.stdout

            kubectl.apply(node_manifest("n3", "4"))
            wait_nodes_cached(scheduler.url, 4)
            result = _what_if(address, gang, "-o", "json")
            assert result.returncode == 0, result.stderr
            answer = json.loads(result.stdout)
            group = answer["podGroup"]
            assert group["quorumPlaceable"] is True
            assert answer["result"] == "schedulable"
            nodes = {m["pod"]: m["node"] for m in group["members"]}
            assert sorted(nodes) == [f"worker-{i}" for i in range(4)]
            assert sorted(nodes.values()) == ["n0", "n1", "n2", "n3"]
            # What-if created nothing: no pod, no PodGroup.
            assert kubectl.json("pods")["items"] == []
            assert kubectl.json("podgroups.scheduling.k8s.io")["items"] == []
