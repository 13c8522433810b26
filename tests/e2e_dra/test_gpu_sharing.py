"""GPUs shared by capacity end to end: `aiosched cluster --nodes 1 --dra-devices 2
--dra-sharing` (the simulated driver publishes two shareable GPUs with 80Gi of memory and 1000
of compute each) and `aiosched run` with the default profile, driven with kubectl.

Each pod's claim asks for half a GPU (memory 40Gi, compute 500): four pods fit on the two
GPUs, two on each; the fifth waits with upstream's message until one of them goes.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from manifests import PAUSE, to_yaml
from processes import Kubectl, start_cluster, start_scheduler, stopping, wait_until

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""
DRIVER = "gpu.kubesim.io"
HALF_GPU = {"memory": "40Gi", "compute": "500"}

HALF_GPU_TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "half-gpu"},
    "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": DRIVER, "capacity": {"requests": HALF_GPU}}}]}}},
}  # fmt: skip


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": PAUSE, "resources": {
                "requests": {"cpu": "100m", "memory": "64Mi"}, "claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "half-gpu"}],
        },
    }  # fmt: skip


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    workdir: Path = tmp_path_factory.mktemp("dra-sharing")
    cluster = start_cluster(workdir, 0, 1, "--dra-devices", "2", "--dra-sharing")
    with stopping(cluster):
        kubectl = Kubectl(workdir)
        wait_until(lambda: len(kubectl.json("resourceslices")["items"]) == 1, what="the slice")
        with stopping(start_scheduler(workdir, CONFIG)):
            yield kubectl


def _phase(kubectl: Kubectl, pod: str) -> str:
    return str(kubectl.json("pod", pod)["status"].get("phase") or "")


def _claim_of(kubectl: Kubectl, pod: str) -> dict[str, Any]:
    statuses = kubectl.json("pod", pod).get("status", {}).get("resourceClaimStatuses") or []
    found: dict[str, Any] = kubectl.json("resourceclaim", statuses[0]["resourceClaimName"])
    return found


def _rejection(kubectl: Kubectl, pod: str) -> str:
    for cond in kubectl.json("pod", pod).get("status", {}).get("conditions", []):
        if cond["type"] == "PodScheduled" and cond["status"] == "False":
            return str(cond.get("message", ""))
    return ""


def test_four_pods_share_two_gpus_by_capacity_and_the_fifth_waits(kubectl: Kubectl) -> None:
    published = kubectl.json("resourceslices")["items"][0]["spec"]["devices"]
    assert [d.get("allowMultipleAllocations") for d in published] == [True, True]
    kubectl.apply(to_yaml(HALF_GPU_TEMPLATE))
    names = [f"half-{i}" for i in range(5)]
    kubectl.apply(to_yaml(*(_pod(n) for n in names)))

    def running() -> list[str]:
        return [n for n in names if _phase(kubectl, n) == "Running"]

    bound = wait_until(lambda: len(running()) == 4 and running(), timeout=40.0,
                       what="four pods running")  # fmt: skip
    (waiting,) = set(names) - set(bound)
    message = wait_until(lambda: _rejection(kubectl, waiting), what=f"{waiting} rejected")
    assert message.startswith("0/1 nodes are available: 1 cannot allocate all claims."), message

    per_device: collections.Counter[str] = collections.Counter()
    share_ids = set()
    for name in bound:
        (result,) = _claim_of(kubectl, name)["status"]["allocation"]["devices"]["results"]
        assert result["consumedCapacity"] == HALF_GPU
        share_ids.add(result["shareID"])
        per_device[result["device"]] += 1
    assert per_device == {"gpu-0": 2, "gpu-1": 2}
    assert len(share_ids) == 4

    kubectl("delete", "pod", bound[0], "--wait=true", "--grace-period=0", "--force")
    wait_until(lambda: _phase(kubectl, waiting) == "Running", timeout=30.0,
               what=f"{waiting} running once a share was freed")  # fmt: skip
    kubectl("delete", "pod", *names, "--wait=true", "--grace-period=0", "--force", check=False)
