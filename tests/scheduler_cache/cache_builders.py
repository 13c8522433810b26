"""Small builders for pod and node views used by the cache tests."""

from __future__ import annotations

from typing import Any

from scheduler import testing
from scheduler.api.objects import NodeView, PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.testing import MakePod


def make_pod(
    uid: str,
    node: str = "",
    *,
    cpu: str | None = "100m",
    memory: str | None = None,
    host_ports: tuple[int, ...] = (),
    host_ip: str = "",
    claims: tuple[str, ...] = (),
    affinity: dict[str, Any] | None = None,
    phase: str = "Running",
    version: str = "1",
) -> PodView:
    """The kit's pod named after its uid ("pod-<uid>", namespace "ns"), one container
    requesting `cpu`/`memory` with `host_ports` (container port = host port), claim volumes
    "v<i>"; bound to `node` when given, Running unless `phase` says otherwise."""
    requests = {
        name: amount for name, amount in (("cpu", cpu), ("memory", memory)) if amount is not None
    }
    ports = [{"containerPort": port, "hostPort": port, "hostIP": host_ip} for port in host_ports]
    pod = MakePod(f"pod-{uid}", "ns").uid(uid).resource_version(version)
    pod.container(requests, ports=ports).phase(phase)
    if node:
        pod.node(node)
    for index, claim in enumerate(claims):
        pod.pvc(claim, f"v{index}")
    if affinity is not None:
        pod.affinity(affinity)
    return pod.obj()


def make_node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    zone: str | None = None,
    images: dict[str, int] | None = None,
    version: str = "1",
) -> NodeView:
    """The kit's node with uid "uid-<name>", its hostname label (and zone when given), and
    `cpu`, `memory` and 110 pods allocatable."""
    labels = {"kubernetes.io/hostname": name}
    if zone is not None:
        labels["topology.kubernetes.io/zone"] = zone
    return testing.make_node(
        name,
        {"cpu": cpu, "memory": memory, "pods": "110"},
        labels=labels,
        images=images,
        uid=f"uid-{name}",
        resource_version=version,
    )


def state_of(info: NodeInfo) -> dict[str, Any]:
    """Everything a plugin can observe on a NodeInfo, in a comparable form."""
    return {
        "node": (info.node.name, info.node.resource_version) if info.node else None,
        "pods": sorted((p.uid, p.resource_version, p.node_name) for p in info.pods),
        "affinity": sorted(p.uid for p in info.pods_with_affinity),
        "anti_affinity": sorted(p.uid for p in info.pods_with_required_anti_affinity),
        "requested": repr(info.requested) if info.requested != type(info.requested)() else "0",
        "non_zero": (info.non_zero_requested.milli_cpu, info.non_zero_requested.memory),
        "allocatable": repr(info.allocatable),
        "ports": sorted(info.used_ports.as_set()),
        "pvcs": dict(sorted(info.pvc_ref_counts.items())),
    }
