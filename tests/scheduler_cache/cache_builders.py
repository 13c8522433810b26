"""Small builders for pod and node views used by the cache tests."""

from __future__ import annotations

from typing import Any

from scheduler.api.objects import NodeView, PodView
from scheduler.cache.node_info import NodeInfo


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
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    container: dict[str, Any] = {"name": "c", "image": "app", "resources": {"requests": requests}}
    if host_ports:
        container["ports"] = [
            {"containerPort": port, "hostPort": port, "hostIP": host_ip} for port in host_ports
        ]
    spec: dict[str, Any] = {"containers": [container]}
    if node:
        spec["nodeName"] = node
    if claims:
        spec["volumes"] = [
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": claim}}
            for i, claim in enumerate(claims)
        ]
    if affinity is not None:
        spec["affinity"] = affinity
    return PodView.from_dict(
        {
            "metadata": {
                "name": f"pod-{uid}",
                "namespace": "ns",
                "uid": uid,
                "resourceVersion": version,
            },
            "spec": spec,
            "status": {"phase": phase},
        }
    )


def make_node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    zone: str | None = None,
    images: dict[str, int] | None = None,
    version: str = "1",
) -> NodeView:
    labels = {"kubernetes.io/hostname": name}
    if zone is not None:
        labels["topology.kubernetes.io/zone"] = zone
    return NodeView.from_dict(
        {
            "metadata": {
                "name": name,
                "uid": f"uid-{name}",
                "resourceVersion": version,
                "labels": labels,
            },
            "status": {
                "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                "images": [
                    {"names": [image], "sizeBytes": size} for image, size in (images or {}).items()
                ],
            },
        }
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
