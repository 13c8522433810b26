"""Lt / Gt tolerations with `aiosched run --embedded --feature-gates
TaintTolerationComparisonOperators=true` (one process, so one start-up: the gate reaches both
the embedded API server's validation and TaintToleration): a pod that asks for nodes whose SLA
taint is above a threshold lands on the one node that has it, a pod whose threshold no node
reaches stays pending in upstream's words, and the API server refuses a value that is not a
canonical integer, as kube-apiserver does with the gate.

The same scheduler runs with PodLevelResources and InPlacePodLevelResourcesVerticalScaling off
(gates of its own, the API server keeping spec.resources): a pod whose pod-level requests no
node could hold is placed by its containers' requests, as kube-scheduler does with them off."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from manifests import node, pod, taint, to_yaml, toleration, tolerations
from processes import Kubectl, aiosched, start, stopping, wait_until

pytestmark = pytest.mark.e2e

SLA = "example.com/sla"
NODES = (
    node("n-sla-800", "4", "8Gi", {}, [taint(SLA, "800", "NoSchedule")]),
    node("n-sla-950", "4", "8Gi", {}, [taint(SLA, "950", "NoSchedule")]),
)


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    workdir: Path = tmp_path_factory.mktemp("toleration-operators")
    embedded = start(
        [
            *aiosched(),
            "run",
            "--embedded",
            "--cluster-port",
            "0",
            "--nodes",
            "0",
            "--kubeconfig-out",
            str(workdir / "kubeconfig"),
            "--http-address",
            "127.0.0.1:0",
            "--insecure-http",
            "--leader-elect=false",
            "--feature-gates",
            "TaintTolerationComparisonOperators=true,PodLevelResources=false,"
            "InPlacePodLevelResourcesVerticalScaling=false",
        ],
        workdir / "embedded.log",
        r"serving /metrics, .+? on (http://[\d.]+:\d+)",
    )
    with stopping(embedded):
        kubectl = Kubectl(workdir)
        kubectl.apply(to_yaml(*NODES))
        yield kubectl


def needing_sla_above(name: str, threshold: str) -> dict[str, Any]:
    return pod(name, **tolerations(toleration(SLA, "Gt", threshold, "NoSchedule")))


def _decided(kubectl: Kubectl, name: str) -> dict[str, Any] | None:
    obj: dict[str, Any] = kubectl.json("pod", name)
    if obj["spec"].get("nodeName"):
        return obj
    conditions = obj.get("status", {}).get("conditions", [])
    rejected = any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions)
    return obj if rejected else None


def test_gt_toleration_picks_the_node_above_the_threshold(kubectl: Kubectl) -> None:
    kubectl.apply(to_yaml(needing_sla_above("gold", "900"), needing_sla_above("platinum", "990")))
    gold = wait_until(lambda: _decided(kubectl, "gold"), what="gold decided")
    assert gold["spec"]["nodeName"] == "n-sla-950"
    platinum = wait_until(lambda: _decided(kubectl, "platinum"), what="platinum decided")
    assert platinum["spec"].get("nodeName", "") == ""
    (scheduled,) = [c for c in platinum["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled["message"] == (
        "0/2 nodes are available: 2 node(s) had untolerated taint(s). no new claims to "
        "deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for "
        "scheduling."
    )


def test_api_server_refuses_a_non_canonical_threshold(kubectl: Kubectl) -> None:
    # JSON, not YAML: kubectl's YAML reads an unquoted 0900 as a number
    with pytest.raises(AssertionError) as refused:
        kubectl.apply(json.dumps(needing_sla_above("bad", "0900")))
    assert (
        'spec.tolerations[0].value: Invalid value: "0900": must be a valid decimal integer in '
        "canonical form" in str(refused.value)
    )
    assert kubectl("get", "pod", "bad", "--ignore-not-found") == ""


def test_pod_level_requests_are_ignored_with_the_gate_off(kubectl: Kubectl) -> None:
    big = pod(
        "pod-level-8-cpus",
        cpu="100m",
        memory="64Mi",
        resources={"requests": {"cpu": "8", "memory": "64Mi"}},
        **tolerations(toleration(SLA, "Exists", effect="NoSchedule")),
    )
    kubectl.apply(to_yaml(big))
    placed = wait_until(lambda: _decided(kubectl, "pod-level-8-cpus"), what="placed")
    assert placed["spec"]["resources"]["requests"]["cpu"] == "8"  # kept by the API server
    assert placed["spec"]["nodeName"] in ("n-sla-800", "n-sla-950")  # 4 cpus each
