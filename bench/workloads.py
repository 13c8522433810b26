"""scheduler_perf workloads: upstream's names, parameters and object templates.

Facts from upstream test/integration/scheduler_perf/misc/performance-config.yaml (SchedulingBasic:
createNodes $initNodes, createPods $initPods, createPods $measurePods with collectMetrics) and the
templates node-default.yaml and pod-default.yaml. `Smoke` is ours: small enough for tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# scheduler_perf names a createPods op's namespace after the op's index in the workload template
INIT_NAMESPACE = "namespace-1"
MEASURE_NAMESPACE = "namespace-2"

NODE_CAPACITY = {"pods": "110", "cpu": "4", "memory": "32Gi"}
POD_REQUESTS = {"cpu": "100m", "memory": "500Mi"}
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1"


@dataclass(frozen=True, slots=True)
class Workload:
    """One test case: nodes, pods scheduled before measuring, pods measured."""

    name: str
    init_nodes: int
    init_pods: int
    measure_pods: int
    threshold: float | None = None  # upstream's CI floor for the average, pods/s
    description: str = ""


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("SchedulingBasic/Smoke", 50, 20, 200, description="quick check (ours)"),
        Workload("SchedulingBasic/5Nodes", 5, 5, 10),
        Workload("SchedulingBasic/500Nodes", 500, 500, 1000),
        Workload("SchedulingBasic/5000Nodes", 5000, 1000, 1000),
        Workload("SchedulingBasic/5000Nodes_10000Pods", 5000, 1000, 10000, threshold=680),
        Workload("SchedulingBasic/5000Nodes_50000Pods", 5000, 5000, 50000, threshold=810),
    )
}


class UnknownWorkload(ValueError):
    pass


def resolve(names: list[str]) -> list[Workload]:
    """The workloads named, in order; a name may also be a prefix ending in "/" (a whole test)."""
    chosen: list[Workload] = []
    for name in names:
        if name.endswith("/"):
            matched = [w for key, w in WORKLOADS.items() if key.startswith(name)]
        else:
            matched = [WORKLOADS[name]] if name in WORKLOADS else []
        if not matched:
            known = ", ".join(WORKLOADS)
            raise UnknownWorkload(f"unknown workload {name!r} (known: {known})")
        chosen.extend(matched)
    return chosen


def node_manifest(name: str) -> dict[str, Any]:
    """templates/node-default.yaml, with a fixed name instead of generateName scheduler-perf-."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {},
        "status": {
            "capacity": dict(NODE_CAPACITY),
            "conditions": [{"status": "True", "type": "Ready"}],
            "phase": "Running",
        },
    }


def pod_manifest(name: str, namespace: str) -> dict[str, Any]:
    """templates/pod-default.yaml, with a fixed name (so creation times can be matched)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "containers": [
                {
                    "image": PAUSE_IMAGE,
                    "name": "pause",
                    "ports": [{"containerPort": 80}],
                    "resources": {"limits": dict(POD_REQUESTS), "requests": dict(POD_REQUESTS)},
                }
            ]
        },
    }


def namespace_manifest(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def node_name(index: int) -> str:
    return f"scheduler-perf-{index}"


def pod_name(index: int) -> str:
    return f"pod-{index}"
