"""Pod-level resources and in-place resize end to end: `aiosched cluster` (a v1.37 API server
and its simulated kubelet) and `aiosched run` as separate processes, driven with kubectl.

One node of 2 CPU. A pod whose pod-level resources ask for 8 CPU (its container names none)
stays Pending with NodeResourcesFit's reason. A running pod grown through
`kubectl patch --subresource resize` leaves no room for a second pod, which stays Pending;
shrinking it again frees the room, and the second pod is scheduled at once: the update that
scales a bound pod down (AssignedPodUpdatePodScaleDown) requeues it through NodeResourcesFit's
hint, long before the 5-minute flush of unschedulable pods. The same with a pod-level resize:
the kubelet reports the pod-level status.allocatedResources and status.resources and follows
the resize, and the scheduler counts the pod at what they say.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from manifests import PAUSE, node, pod, to_yaml
from processes import Kubectl, start_cluster, start_scheduler, stopping, wait_until

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""

POD_LEVEL = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "pod-level"},
    "spec": {
        "resources": {"requests": {"cpu": "8"}, "limits": {"cpu": "8"}},
        "containers": [{"name": "c", "image": PAUSE}],
    },
}


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    workdir: Path = tmp_path_factory.mktemp("pod-resources")
    cluster = start_cluster(workdir)
    with stopping(cluster):
        kubectl = Kubectl(workdir)
        kubectl.apply(to_yaml(node("small", "2", "8Gi", {})))
        scheduler = start_scheduler(workdir, CONFIG)
        with stopping(scheduler):
            yield kubectl


def _pod(kubectl: Kubectl, name: str) -> dict[str, Any]:
    found: dict[str, Any] = kubectl.json("pod", name)
    return found


def _condition(pod_obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    for cond in pod_obj.get("status", {}).get("conditions", []):
        if cond["type"] == kind:
            return dict(cond)
    return {}


def _unschedulable_message(kubectl: Kubectl, name: str) -> str:
    cond = wait_until(
        lambda: (
            _condition(_pod(kubectl, name), "PodScheduled").get("status") == "False"
            and _condition(_pod(kubectl, name), "PodScheduled")
        ),
        what=f"{name} rejected",
    )
    message: str = cond["message"]
    return message


def _resize(kubectl: Kubectl, name: str, cpu: str) -> None:
    patch = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}
    kubectl("patch", "pod", name, "--subresource", "resize", "--patch", json.dumps(patch))
    wait_until(
        lambda: (
            _pod(kubectl, name)["status"]["containerStatuses"][0]
            .get("allocatedResources", {})
            .get("cpu")
            == cpu
        ),
        what=f"{name} resized to {cpu}",
    )


def test_pod_level_requests_count(kubectl: Kubectl) -> None:
    kubectl.apply(to_yaml(POD_LEVEL))
    message = _unschedulable_message(kubectl, "pod-level")
    assert message.startswith("0/1 nodes are available: 1 Insufficient cpu."), message
    assert not _pod(kubectl, "pod-level")["spec"].get("nodeName")


def test_resize_up_blocks_and_resize_down_frees(kubectl: Kubectl) -> None:
    kubectl.apply(to_yaml(pod("grower", cpu="500m", memory="256Mi")))
    wait_until(lambda: _pod(kubectl, "grower")["status"].get("phase") == "Running", what="grower")
    _resize(kubectl, "grower", "1500m")

    kubectl.apply(to_yaml(pod("second", cpu="1", memory="256Mi")))
    message = _unschedulable_message(kubectl, "second")
    assert message.startswith("0/1 nodes are available: 1 Insufficient cpu."), message

    started = time.monotonic()
    _resize(kubectl, "grower", "500m")
    wait_until(
        lambda: _pod(kubectl, "second")["spec"].get("nodeName") == "small",
        timeout=30.0,
        what="second scheduled after the resize down",
    )
    assert time.monotonic() - started < 60  # the flush would take 5 minutes


POD_LEVEL_RESIZE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "pod-level-resize"},
    "spec": {
        "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}},
        "containers": [{"name": "c", "image": PAUSE}],
    },
}


def _pod_level_cpu(kubectl: Kubectl, name: str) -> tuple[str | None, str | None]:
    status = _pod(kubectl, name)["status"]
    return (
        (status.get("allocatedResources") or {}).get("cpu"),
        ((status.get("resources") or {}).get("requests") or {}).get("cpu"),
    )


def _resize_pod_level(kubectl: Kubectl, name: str, cpu: str) -> None:
    patch = {"spec": {"resources": {"requests": {"cpu": cpu}}}}
    kubectl("patch", "pod", name, "--subresource", "resize", "--patch", json.dumps(patch))
    wait_until(
        lambda: _pod_level_cpu(kubectl, name) == (cpu, cpu),
        what=f"{name}'s pod-level status at {cpu}",
    )


def test_pod_level_resize_is_reported_and_counted(kubectl: Kubectl) -> None:
    """The kubelet reports the pod-level allocation (status.allocatedResources, status.resources)
    and follows a pod-level resize; the scheduler counts it as it grows and shrinks."""
    kubectl("delete", "pod", "--all", "--grace-period=0", "--force")  # the node to this test
    kubectl.apply(to_yaml(POD_LEVEL_RESIZE))
    wait_until(
        lambda: _pod(kubectl, "pod-level-resize")["status"].get("phase") == "Running",
        what="pod-level-resize running",
    )
    status = _pod(kubectl, "pod-level-resize")["status"]
    assert status["allocatedResources"] == {"cpu": "500m", "memory": "256Mi"}
    assert status["resources"] == {"requests": {"cpu": "500m", "memory": "256Mi"}}
    _resize_pod_level(kubectl, "pod-level-resize", "1500m")

    kubectl.apply(to_yaml(pod("beside", cpu="1", memory="256Mi")))
    message = _unschedulable_message(kubectl, "beside")
    assert message.startswith("0/1 nodes are available: 1 Insufficient cpu."), message

    _resize_pod_level(kubectl, "pod-level-resize", "500m")
    wait_until(
        lambda: _pod(kubectl, "beside")["spec"].get("nodeName") == "small",
        timeout=30.0,
        what="beside scheduled after the pod-level resize down",
    )
