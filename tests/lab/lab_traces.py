"""Small generated traces for the lab's tests: nodes of a few shapes, GPUs as DRA devices,
pods with and without GPU claims (never the openb files)."""

from __future__ import annotations

import csv
import random
from pathlib import Path
from typing import Any

from scheduler.lab.openb import device_class
from scheduler.lab.trace import ARRIVAL_ANNOTATION, DEPARTURE_ANNOTATION
from scheduler.plugins.gpushare.gpus import GPU_CLASS, GPU_DRIVER, model_selector


def node(name: str, cpu: int, memory_gi: int = 64) -> dict[str, Any]:
    allocatable = {"cpu": str(cpu), "memory": f"{memory_gi}Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": allocatable, "allocatable": allocatable},
    }


def gpu_slice(node_name: str, gpus: int, model: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-gpu"},
        "spec": {
            "driver": GPU_DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{i}",
                    "attributes": {"model": {"string": model}, "index": {"int": i}},
                    "capacity": {"milli": {"value": "1000"}},
                }
                for i in range(gpus)
            ],
        },
    }


def claim(name: str, count: int, models: list[str] | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": GPU_CLASS, "count": count}
    if models:
        exactly["selectors"] = [{"cel": {"expression": model_selector(models)}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def pod(
    name: str,
    cpu_milli: int,
    claim_name: str | None = None,
    arrival: float | None = None,
    departure: float | None = None,
) -> dict[str, Any]:
    annotations = {}
    if arrival is not None:
        annotations[ARRIVAL_ANNOTATION] = str(arrival)
    if departure is not None:
        annotations[DEPARTURE_ANNOTATION] = str(departure)
    container: dict[str, Any] = {
        "name": "c",
        "image": "registry.k8s.io/pause:3.9",
        "resources": {"requests": {"cpu": f"{cpu_milli}m", "memory": "100Mi"}},
    }
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {"containers": [container]},
    }
    if claim_name:
        obj["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
        container["resources"]["claims"] = [{"name": "gpu"}]
    return obj


def gpu_cluster_objects(seed: int, pods: int, nodes: int = 6) -> list[dict[str, Any]]:
    """Nodes (some twins, so that scores tie), GPUs of two models, and `pods` pods, each
    arriving a second after the last; a third ask for GPUs, some of one model only."""
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = [device_class()]
    for i in range(nodes):
        name = f"node-{i}"
        objects.append(node(name, 8 if i % 3 else 16))
        if i % 2 == 0:
            objects.append(gpu_slice(name, 2 if i % 4 else 4, "A10" if i % 4 else "T4"))
    for i in range(pods):
        name = f"pod-{i:03d}"
        if i % 3 == 0:
            claim_name = f"{name}-gpu"
            models = ["T4"] if i % 9 == 0 else None
            objects.append(claim(claim_name, 1 + (i % 2), models))
            objects.append(pod(name, rng.choice((100, 250, 500)), claim_name, arrival=i))
        else:
            objects.append(pod(name, rng.choice((100, 250, 500, 1000)), arrival=i))
    return objects


def write_openb(directory: Path, seed: int, nodes: int = 8, tasks: int = 60) -> tuple[Path, Path]:
    """A node list and a pod list in the openb CSV format (columns as published)."""
    rng = random.Random(seed)
    node_path = directory / "nodes.csv"
    pod_path = directory / "pods.csv"
    with node_path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["sn", "cpu_milli", "memory_mib", "gpu", "model"])
        for i in range(nodes):
            writer.writerow([f"openb-node-{i:04d}", 32000, 131072, (2, 4, 8)[i % 3],
                             ("V100M16", "T4")[i % 2]])  # fmt: skip
    with pod_path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(
            [
                "name",
                "cpu_milli",
                "memory_mib",
                "num_gpu",
                "gpu_milli",
                "gpu_spec",
                "qos",
                "pod_phase",
                "creation_time",
                "deletion_time",
                "scheduled_time",
            ]
        )
        for i in range(tasks):
            kind = rng.random()
            if kind < 0.2:
                gpus, milli = 0, 0
            elif kind < 0.6:
                gpus, milli = 1, rng.choice((250, 500, 800))
            elif kind < 0.9:
                gpus, milli = 1, 1000
            else:
                gpus, milli = rng.choice((2, 4)), 1000
            spec = "V100M16|T4" if rng.random() < 0.2 else ""
            writer.writerow([f"openb-pod-{i:04d}", rng.choice((1000, 4000, 8000)), 4096, gpus,
                             milli, spec, "LS", "Running", 0, "", ""])  # fmt: skip
    return node_path, pod_path
