"""The volume plugins end to end: `aiosched cluster` (with its PV binder, simulated CSI driver
and provisioner) and `aiosched run` as separate processes, driven with kubectl.

Two simulated nodes in two zones, each able to attach one csi.kubesim.io volume:
- a claim of the default WaitForFirstConsumer class is provisioned on the node the scheduler
  chose, and its pod runs;
- a static local PV pins its pod to the PV's node;
- a PV labelled with a zone no node is in leaves its pod Pending with upstream's message (the
  conflict is UnschedulableAndUnresolvable, so preemption does not try);
- once both nodes attach a CSI volume, the next pod with one is refused for the attach limit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from manifests import pod, to_yaml
from processes import Kubectl, start_cluster, start_scheduler, stopping, wait_until

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def claim(name: str, storage_class: str | None = None, volume: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
    }
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if volume:
        spec["volumeName"] = volume
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def volume(
    name: str,
    storage_class: str,
    *,
    node_affinity: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    claim_ref: str = "",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "capacity": {"storage": "1Gi"},
        "storageClassName": storage_class,
        # the API server refuses a local volume without node affinity
        "local" if node_affinity is not None else "hostPath": {"path": f"/mnt/{name}"},
    }
    if node_affinity is not None:
        expressions = [
            {"key": key, "operator": "In", "values": [value]}
            for key, value in node_affinity.items()
        ]
        spec["nodeAffinity"] = {
            "required": {"nodeSelectorTerms": [{"matchExpressions": expressions}]}
        }
    if claim_ref:
        spec["claimRef"] = {"namespace": "default", "name": claim_ref}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
    }


def with_claim(name: str, claim_name: str) -> dict[str, Any]:
    return pod(
        name,
        cpu="100m",
        memory="64Mi",
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}],
    )


LOCAL_CLASS = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "local"},
    "provisioner": "kubernetes.io/no-provisioner",
    "volumeBindingMode": "WaitForFirstConsumer",
}


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    workdir: Path = tmp_path_factory.mktemp("volumes")
    cluster = start_cluster(workdir, 0, 2, "--zones", "2", "--csi-attach-limit", "1")
    with stopping(cluster):
        kubectl = Kubectl(workdir)
        wait_until(lambda: len(_names(kubectl, "csinodes")) == 2, what="two CSINodes")
        scheduler = start_scheduler(workdir, CONFIG)
        with stopping(scheduler):
            yield kubectl


def _names(kubectl: Kubectl, kind: str) -> list[str]:
    return kubectl("get", kind, "-o", "name").split()


def _get(kubectl: Kubectl, kind: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = kubectl.json(kind, name)
    return found


def _node_of(kubectl: Kubectl, name: str) -> str:
    node: str = wait_until(
        lambda: _get(kubectl, "pod", name)["spec"].get("nodeName"), what=f"{name} bound"
    )
    return node


def _rejection(kubectl: Kubectl, name: str) -> str:
    def condition() -> dict[str, Any] | None:
        for cond in _get(kubectl, "pod", name).get("status", {}).get("conditions", []):
            if cond["type"] == "PodScheduled" and cond["status"] == "False":
                return dict(cond)
        return None

    message: str = wait_until(condition, what=f"{name} rejected")["message"]
    return message


def test_wait_for_first_consumer_claim_is_provisioned_where_the_pod_goes(
    kubectl: Kubectl,
) -> None:
    kubectl.apply(to_yaml(claim("data"), with_claim("db", "data")))
    node = _node_of(kubectl, "db")
    wait_until(lambda: _get(kubectl, "pod", "db")["status"].get("phase") == "Running", what="db")
    bound = wait_until(
        lambda: (c := _get(kubectl, "pvc", "data"))["status"].get("phase") == "Bound" and c,
        what="data Bound",
    )
    assert bound["spec"]["storageClassName"] == "standard"
    assert bound["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
    pv = _get(kubectl, "pv", bound["spec"]["volumeName"])
    node_zone = _get(kubectl, "node", node)["metadata"]["labels"][ZONE]
    [term] = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": ZONE, "operator": "In", "values": [node_zone]}]


def test_static_local_volume_pins_its_pod_to_the_volume_node(kubectl: Kubectl) -> None:
    kubectl.apply(
        to_yaml(
            LOCAL_CLASS,
            volume("local-pv", "local", node_affinity={HOSTNAME: "node-0"}),
            claim("local-claim", "local"),
            with_claim("pinned", "local-claim"),
        )
    )
    assert _node_of(kubectl, "pinned") == "node-0"
    wait_until(
        lambda: _get(kubectl, "pvc", "local-claim")["spec"].get("volumeName") == "local-pv",
        what="local-claim bound to local-pv",
    )
    assert _get(kubectl, "pv", "local-pv")["spec"]["claimRef"]["name"] == "local-claim"


def test_volume_in_a_zone_without_nodes_explains_the_conflict(kubectl: Kubectl) -> None:
    kubectl.apply(
        to_yaml(
            volume("far", "", labels={ZONE: "zone-z"}, claim_ref="far-claim"),
            claim("far-claim", "", volume="far"),
        )
    )
    wait_until(
        lambda: _get(kubectl, "pvc", "far-claim")["status"].get("phase") == "Bound",
        what="far-claim Bound",
    )
    kubectl.apply(to_yaml(with_claim("far-pod", "far-claim")))
    assert _rejection(kubectl, "far-pod") == (
        "0/2 nodes are available: 2 node(s) had no available volume zone. "
        "no new claims to deallocate, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_attach_limit_keeps_a_third_csi_volume_off_both_nodes(kubectl: Kubectl) -> None:
    # "db" attaches the first node's one volume; "db2" takes the other node's.
    first = _node_of(kubectl, "db")
    kubectl.apply(to_yaml(claim("data2"), with_claim("db2", "data2")))
    assert _node_of(kubectl, "db2") != first
    kubectl.apply(to_yaml(claim("data3"), with_claim("db3", "data3")))
    assert _rejection(kubectl, "db3") == (
        "0/2 nodes are available: 2 node(s) exceed max volume count. "
        "no new claims to deallocate, "
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )
    assert _get(kubectl, "pvc", "data3")["status"]["phase"] == "Pending"
