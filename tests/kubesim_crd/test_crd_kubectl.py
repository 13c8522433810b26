"""scheduler-plugins' PodGroup CRD through `aiosched cluster` and kubectl, as its users apply it:
the CRD from its published manifest, a PodGroup created, its status written through the status
subresource, and `kubectl get podgroups` (and its short name) showing the CRD's columns."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from processes import Kubectl, start_cluster, stopping, wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl"),
]

CRD = (Path(__file__).parent / "podgroup_crd.yaml").read_text()
# kubesim also serves scheduling.k8s.io's own PodGroups, and kubectl resolves a bare "podgroups"
# to that built-in group first (as on any API server serving both): the CRD's resource is named
# in full here, and by its short names where the test is about them.
PODGROUPS = "podgroups.scheduling.x-k8s.io"
PODGROUP = """
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: training}
spec:
  minMember: 4
  scheduleTimeoutSeconds: 10
  minResources: {cpu: "3", nvidia.com/gpu: 4}
"""


def refused(kubectl: Kubectl, manifest: str) -> str:
    """kubectl apply's error output for a manifest the server refuses."""
    with pytest.raises(AssertionError) as failure:
        kubectl.apply(manifest)
    return str(failure.value)


def test_podgroup_crd_applied_and_served_to_kubectl(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, 0, 0)
    kubectl = Kubectl(tmp_path)
    with stopping(cluster):
        assert "created" in kubectl.apply(CRD)
        established = kubectl(
            "get",
            "crd",
            "podgroups.scheduling.x-k8s.io",
            "-o",
            "jsonpath={.status.conditions[?(@.type=='Established')].status}",
        )
        assert established == "True"
        assert "podgroup.scheduling.x-k8s.io/training created" in kubectl.apply(PODGROUP)
        # a field the schema does not know: kubectl's strict field validation refuses it
        unknown = refused(kubectl, PODGROUP.replace("minMember: 4", "minMember: 4\n  extra: 1"))
        assert 'unknown field "spec.extra"' in unknown, unknown
        wrong = refused(kubectl, PODGROUP.replace("minMember: 4", "minMember: four"))
        assert (
            'spec.minMember: Invalid value: "string": spec.minMember in body must be of '
            'type integer: "string"'
        ) in wrong, wrong

        status = {"status": {"phase": "Running", "running": 4, "succeeded": 0, "failed": 0}}
        kubectl(
            "patch",
            PODGROUPS,
            "training",
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps(status),
        )
        # the status subresource ignores spec, the main resource ignores status
        kubectl(
            "patch",
            "pg",
            "training",
            "--type=merge",
            "-p",
            json.dumps({"spec": {"minMember": 5}, "status": {"phase": "Failed"}}),
        )
        shown = kubectl("get", PODGROUPS)
        lines = [line.split() for line in shown.splitlines() if line.strip()]
        assert lines[0] == [
            "NAME",
            "PHASE",
            "MINMEMBER",
            "RUNNING",
            "SUCCEEDED",
            "FAILED",
            "AGE",
        ], shown
        assert lines[1][:6] == ["training", "Running", "5", "4", "0", "0"], shown
        assert kubectl("get", "pg", "training", "-o", "jsonpath={.metadata.generation}") == "2"
        wait_until(
            lambda: "training" in kubectl("get", "pgs", "-A"), timeout=5, what="the short name"
        )
        listed = json.loads(
            kubectl("get", PODGROUPS, "--field-selector", "metadata.name=training", "-o", "json")
        )
        assert [pg["metadata"]["name"] for pg in listed["items"]] == ["training"]

        kubectl("delete", "crd", "podgroups.scheduling.x-k8s.io")
        # kubectl's cached discovery may still name the resource: the server answers 404 then
        with pytest.raises(AssertionError, match=r"NotFound|doesn't have a resource type"):
            kubectl("get", PODGROUPS)
