"""Topology in the default profile, end to end: `aiosched cluster` and `aiosched run` as separate
processes, driven with kubectl.

Six identical nodes, two in each of three zones. The cases:
- topologySpreadConstraints over zones (DoNotSchedule, maxSkew 1) spread six replicas 2/2/2;
- required pod anti-affinity on the hostname leaves a seventh replica Pending with upstream's
  FitError text, DefaultPreemption's part included;
- the system default constraints (PodTopologySpread's defaultingType System) spread the pods of
  a ReplicaSet over the zones although the pods say nothing about spreading.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from manifests import node, pod, to_yaml
from processes import Kubectl, start_cluster, start_scheduler, stopping, wait_until

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
ZONES = ("zone-a", "zone-b", "zone-c")
NODES = tuple(node(f"{zone}-{i}", "4", "8Gi", {ZONE: zone}) for zone in ZONES for i in (1, 2))
ZONE_OF = {n["metadata"]["name"]: n["metadata"]["labels"][ZONE] for n in NODES}

REPLICA_SET = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "catalog", "namespace": "default"},
    "spec": {
        # scaled to 3 by the test that uses it (kubesim runs the ReplicaSet controller)
        "replicas": 0,
        "selector": {"matchLabels": {"app": "catalog"}},
        "template": {
            "metadata": {"labels": {"app": "catalog"}},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]},
        },
    },
}


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    workdir: Path = tmp_path_factory.mktemp("topology")
    cluster = start_cluster(workdir)
    with stopping(cluster):
        kubectl = Kubectl(workdir)
        # Nodes and the ReplicaSet exist before the scheduler starts: its first lists see them.
        kubectl.apply(to_yaml(*NODES, REPLICA_SET))
        scheduler = start_scheduler(workdir, CONFIG)
        with stopping(scheduler):
            yield kubectl


def _labeled(name: str, labels: Mapping[str, str], **spec: Any) -> dict[str, Any]:
    manifest = pod(name, cpu="100m", memory="64Mi", **spec)
    manifest["metadata"]["labels"] = dict(labels)
    return manifest


def _node_of(kubectl: Kubectl, name: str) -> str:
    node_name: str = wait_until(
        lambda: kubectl.json("pod", name)["spec"].get("nodeName"), what=f"{name} bound"
    )
    return node_name


def _delete_all(kubectl: Kubectl, selector: str) -> None:
    kubectl("delete", "pod", "-l", selector, "--wait=true")


def test_hard_spread_constraint_places_replicas_evenly_over_zones(kubectl: Kubectl) -> None:
    spread = {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ]
    }
    names = [f"web-{i}" for i in range(6)]
    try:
        kubectl.apply(to_yaml(*(_labeled(n, {"app": "web"}, **spread) for n in names)))
        zones = Counter(ZONE_OF[_node_of(kubectl, n)] for n in names)
        assert zones == dict.fromkeys(ZONES, 2)
    finally:
        _delete_all(kubectl, "app=web")


def _scheduled_condition(pod_obj: Mapping[str, Any]) -> dict[str, Any]:
    for cond in pod_obj.get("status", {}).get("conditions", []):
        if cond["type"] == "PodScheduled":
            return dict(cond)
    return {}


def test_required_anti_affinity_leaves_the_seventh_replica_pending(kubectl: Kubectl) -> None:
    anti = {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": HOSTNAME}
                ]
            }
        }
    }
    names = [f"cache-{i}" for i in range(7)]
    try:
        kubectl.apply(to_yaml(*(_labeled(n, {"app": "cache"}, **anti) for n in names[:6])))
        hosts = {_node_of(kubectl, n) for n in names[:6]}
        assert hosts == set(ZONE_OF)
        kubectl.apply(to_yaml(_labeled(names[6], {"app": "cache"}, **anti)))
        pending = wait_until(
            lambda: (
                _scheduled_condition(kubectl.json("pod", names[6])).get("status") == "False"
                and kubectl.json("pod", names[6])
            ),
            what="the seventh replica rejected",
        )
        cond = _scheduled_condition(pending)
        assert pending["spec"].get("nodeName", "") == ""
        assert (cond["reason"], cond["message"]) == (
            "Unschedulable",
            "0/6 nodes are available: 6 node(s) didn't match pod anti-affinity rules. "
            "no new claims to deallocate, "
            "preemption: 0/6 nodes are available: 6 No preemption victims found for incoming pod.",
        )
        # Removing one replica frees its node for the waiting one (the pod-delete event).
        freed = _node_of(kubectl, names[0])
        kubectl("delete", "pod", names[0], "--wait=true")
        assert _node_of(kubectl, names[6]) == freed
    finally:
        _delete_all(kubectl, "app=cache")


def test_system_default_constraints_spread_a_replicasets_pods_over_zones(
    kubectl: Kubectl,
) -> None:
    """kubesim's ReplicaSet controller creates the three pods at once; the scheduling loop
    still places them one after the other, each seeing where the earlier ones went. Without
    the default constraints every other node would tie and the three could share a zone."""
    try:
        kubectl("scale", "replicaset", "catalog", "--replicas=3")

        def pod_names() -> list[str]:
            names = kubectl("get", "pods", "-l", "app=catalog", "-o", "name").split()
            return [name.removeprefix("pod/") for name in names]

        names = wait_until(lambda: len(pod_names()) == 3 and pod_names(), what="3 pods")
        zones = [ZONE_OF[_node_of(kubectl, name)] for name in names]
        assert sorted(zones) == list(ZONES)
    finally:
        kubectl("scale", "replicaset", "catalog", "--replicas=0")
