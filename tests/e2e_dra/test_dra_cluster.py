"""DRA end to end on one cluster: `aiosched cluster --nodes 1 --dra-devices 2 --dra-sharing`
(the simulated driver publishes two shareable GPUs with 80Gi of memory and 1000 of compute
each) and `aiosched run` with the default profile, driven with kubectl.

- Sharing by capacity: each pod's claim asks for half a GPU (memory 40Gi, compute 500); four
  pods fit on the two GPUs, two on each; the fifth waits with upstream's message until one of
  them goes.
- An extended resource backed by a DeviceClass: a pod asking for `example.com/gpu: 1` gets a
  whole GPU through a claim the scheduler creates for it.
- Binding conditions (`--dra-binding-delay 1`): every device must be attached before a pod
  using it binds; the driver sets the condition a second after the allocation, and the
  scheduler waits in PreBind (polling every 5 s, as upstream) with the claim allocated and
  reserved and the pod not yet bound.
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
    cluster = start_cluster(
        workdir, 0, 1, "--dra-devices", "2", "--dra-sharing", "--dra-binding-delay", "1"
    )
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


EXTENDED_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "example-gpu"},
    "spec": {
        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
        "extendedResourceName": "example.com/gpu",
    },
}


def test_an_extended_resource_is_served_by_a_device_class(kubectl: Kubectl) -> None:
    kubectl.apply(to_yaml(EXTENDED_CLASS))
    gpu = {"example.com/gpu": "1"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "wants-example-gpu"},
        "spec": {"containers": [{"name": "c", "image": PAUSE, "resources": {
            "requests": {"cpu": "100m", **gpu}, "limits": gpu}}]},
    }  # fmt: skip
    kubectl.apply(to_yaml(pod))
    wait_until(lambda: _phase(kubectl, "wants-example-gpu") == "Running", timeout=30.0,
               what="the pod running")  # fmt: skip
    obj = kubectl.json("pod", "wants-example-gpu")
    status = obj["status"]["extendedResourceClaimStatus"]
    assert status["requestMappings"] == [
        {"containerName": "c", "resourceName": "example.com/gpu",
         "requestName": "container-0-request-1"}
    ]  # fmt: skip
    name = status["resourceClaimName"]
    assert name.startswith("wants-example-gpu-extended-resources-")
    claim = kubectl.json("resourceclaim", name)
    assert claim["metadata"]["annotations"] == {
        "resource.kubernetes.io/extended-resource-claim": "true"
    }
    assert claim["metadata"]["ownerReferences"][0]["uid"] == obj["metadata"]["uid"]
    assert claim["spec"]["devices"]["requests"] == [{"name": "container-0-request-1", "exactly": {
        "deviceClassName": "example-gpu", "allocationMode": "ExactCount", "count": 1}}]  # fmt: skip
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    # a claim that names no capacity takes all of a shareable GPU
    assert result["consumedCapacity"] == {"memory": "80Gi", "compute": "1000"}
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [obj["metadata"]["uid"]]
    kubectl("delete", "pod", "wants-example-gpu", "--wait=true", "--grace-period=0", "--force")


def test_a_pod_waits_in_prebind_until_its_devices_are_attached(kubectl: Kubectl) -> None:
    kubectl.apply(to_yaml(_pod("attach-me")))
    claim = wait_until(
        lambda: (kubectl.json("pod", "attach-me").get("status", {}).get("resourceClaimStatuses")
                 and _claim_of(kubectl, "attach-me").get("status", {}).get("allocation")
                 and _claim_of(kubectl, "attach-me")),
        timeout=30.0, what="the claim allocated",
    )  # fmt: skip
    pod = kubectl.json("pod", "attach-me")
    assert not pod["spec"].get("nodeName")  # waiting in PreBind, not bound
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert result["bindingConditions"] == ["gpu.kubesim.io/attached"]
    assert result["bindingFailureConditions"] == ["gpu.kubesim.io/attach-failed"]
    assert claim["status"]["allocation"]["allocationTimestamp"]
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [pod["metadata"]["uid"]]
    wait_until(lambda: _phase(kubectl, "attach-me") == "Running", timeout=30.0,
               what="attach-me running once attached")  # fmt: skip
    (device,) = _claim_of(kubectl, "attach-me")["status"]["devices"]
    assert [(c["type"], c["status"]) for c in device["conditions"]] == [
        ("gpu.kubesim.io/attached", "True")
    ]
    kubectl("delete", "pod", "attach-me", "--wait=true", "--grace-period=0", "--force")
