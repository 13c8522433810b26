"""YAML manifests for nodes and pods, built from small dicts so test tables read as specs.

Everything is dumped with PyYAML and fed to `kubectl apply -f -`, as a user would apply files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

Spec = dict[str, Any]
PAUSE = "registry.k8s.io/pause:3.9"


def to_yaml(*objects: Mapping[str, Any]) -> str:
    return yaml.safe_dump_all([dict(o) for o in objects], sort_keys=False)


def node(
    name: str,
    cpu: str,
    memory: str,
    labels: Mapping[str, str],
    taints: Sequence[Mapping[str, str]] = (),
    images: Sequence[tuple[Sequence[str], int]] = (),
    extended: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": memory, "pods": "110", **(extended or {})}
    status: dict[str, Any] = {"capacity": capacity, "allocatable": dict(capacity)}
    if images:
        status["images"] = [{"names": list(names), "sizeBytes": size} for names, size in images]
    spec: dict[str, Any] = {"taints": [dict(t) for t in taints]} if taints else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": spec,
        "status": status,
    }


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def pod(
    name: str,
    cpu: str = "500m",
    memory: str = "512Mi",
    image: str = PAUSE,
    host_port: int | None = None,
    protocol: str = "TCP",
    extended: Mapping[str, str] | None = None,
    init_cpu: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A one-container pod with requests; `spec` adds pod spec fields (camelCase keys).

    `extended` resources are requested with equal limits (the API requires limits for them);
    `init_cpu` adds an init container asking for that much cpu.
    """
    requests = {"cpu": cpu, "memory": memory, **(extended or {})}
    resources: dict[str, Any] = {"requests": requests}
    if extended:
        resources["limits"] = dict(extended)
    container: dict[str, Any] = {"name": "c", "image": image, "resources": resources}
    if host_port is not None:
        container["ports"] = [{"containerPort": 80, "hostPort": host_port, "protocol": protocol}]
    pod_spec: dict[str, Any] = {"containers": [container], **spec}
    if init_cpu is not None:
        pod_spec["initContainers"] = [
            {"name": "init", "image": PAUSE, "resources": {"requests": {"cpu": init_cpu}}}
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": pod_spec}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def required(*terms: Sequence[Mapping[str, Any]]) -> Spec:
    """Required node affinity: terms are ORed, the expressions inside one term ANDed."""
    node_selector_terms = [{"matchExpressions": [dict(e) for e in term]} for term in terms]
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": node_selector_terms
                }
            }
        }
    }


def preferred(*weighted: tuple[int, Sequence[Mapping[str, Any]]]) -> Spec:
    terms = [
        {"weight": weight, "preference": {"matchExpressions": [dict(e) for e in exprs]}}
        for weight, exprs in weighted
    ]
    return {
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}
    }


def toleration(
    key: str = "",
    operator: str = "Equal",
    value: str = "",
    effect: str = "",
    seconds: int | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"operator": operator}
    if key:
        out["key"] = key
    if value:
        out["value"] = value
    if effect:
        out["effect"] = effect
    if seconds is not None:
        out["tolerationSeconds"] = seconds
    return out


def tolerations(*items: Mapping[str, Any]) -> Spec:
    return {"tolerations": [dict(t) for t in items]}


def merge(*specs: Spec) -> Spec:
    """Pod spec fragments combined; nested mappings (affinity) merge, other keys must differ."""
    out: Spec = {}
    for spec in specs:
        for key, value in spec.items():
            if key not in out:
                out[key] = value
            elif isinstance(out[key], dict) and isinstance(value, dict):
                out[key] = merge(out[key], value)
            else:
                raise ValueError(f"spec fragments both set {key!r}")
    return out
