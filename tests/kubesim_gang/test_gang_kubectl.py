"""`aiosched cluster --feature-gates WorkloadWithJob=true` as a real process, read with kubectl:
workloads and podgroups are served (discovery, the NAME/AGE table), a Job gets its Workload and
PodGroup, a PodGroup applied from YAML is validated and defaulted, and `kubectl explain` reads
the hand-written OpenAPI."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from processes import Kubectl, start_cluster, stopping, wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl"),
]

POD_GROUP = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: gang-of-four}
spec:
  schedulingPolicy:
    gang: {minCount: 4}
  schedulingConstraints:
    topology: [{key: topology.kubernetes.io/zone}]
"""
JOB = """
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  parallelism: 2
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
"""


def test_kubectl_serves_workloads_and_pod_groups(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, 0, 1, "--feature-gates", "WorkloadWithJob=true")
    kubectl = Kubectl(tmp_path)
    with stopping(cluster):
        kubectl.apply(POD_GROUP)
        kubectl.apply(JOB)
        wait_until(
            lambda: "train-pgt-0" in kubectl("get", "podgroups"),
            timeout=10,
            what="the Job's PodGroup",
        )
        shown = kubectl("get", "workloads.scheduling.k8s.io,podgroups.scheduling.k8s.io")
        lines = [line.split() for line in shown.splitlines() if line.strip()]
        assert lines.count(["NAME", "AGE"]) == 2, shown
        names = [line[0] for line in lines if line != ["NAME", "AGE"]]
        assert "podgroup.scheduling.k8s.io/gang-of-four" in names, shown
        assert any(n.startswith("workload.scheduling.k8s.io/train-") for n in names), shown
        assert (
            kubectl("get", "podgroup", "gang-of-four", "-o", "jsonpath={.spec.disruptionMode}")
            == '{"single":{}}'
        )
        resources = kubectl("api-resources", "--api-group", "scheduling.k8s.io")
        assert "podgroups" in resources and "workloads" in resources, resources
        explained = kubectl("explain", "podgroup.spec.schedulingPolicy.gang")
        assert "minCount" in explained, explained
        bad = POD_GROUP.replace("minCount: 4", "minCount: -1").replace("gang-of-four", "bad")
        refused = subprocess.run(
            ["kubectl", "apply", "-f", "-"],
            input=bad,
            env=kubectl.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert refused.returncode != 0
        assert (
            "spec.schedulingPolicy.gang.minCount: Invalid value: -1: must be greater than "
            "or equal to 1" in refused.stderr
        ), refused.stderr
        shown = kubectl("get", "podgroups")
        assert "bad" not in shown.split(), shown
        # Priority admission fills a PodGroup's spec.priority from its priorityClassName.
        kubectl.apply(
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
            "metadata: {name: gang-high}\nvalue: 4242\n---\n"
            + POD_GROUP.replace("gang-of-four", "classy")
            + "  priorityClassName: gang-high\n"
        )
        assert kubectl("get", "podgroup", "classy", "-o", "jsonpath={.spec.priority}") == "4242"
