"""An in-process kubesim with the simulated DRA driver, driven through its Api (no HTTP), and
the objects the DRA tests write; the scheduler's part (allocation, reservation, binding) is
done by hand as kube-scheduler's DynamicResources PreBind and the binder would do it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from kubesim.cluster import Cluster, ClusterConfig
from kubesim.dra import DraOptions
from kubesim.resources import ResourceType, lookup
from kubesim.subresources import bind

NS = "default"


def _resource(group: str, plural: str) -> ResourceType:
    found = lookup(group, "v1", plural)
    assert found is not None
    return found


PODS = _resource("", "pods")
NODES = _resource("", "nodes")
CLAIMS = _resource("resource.k8s.io", "resourceclaims")
TEMPLATES = _resource("resource.k8s.io", "resourceclaimtemplates")
SLICES = _resource("resource.k8s.io", "resourceslices")
CLASSES = _resource("resource.k8s.io", "deviceclasses")


@asynccontextmanager
async def dra_cluster(
    nodes: int = 2, devices: int = 2, models: tuple[str, ...] = ("a100",)
) -> AsyncIterator[Cluster]:
    cluster = Cluster(
        ClusterConfig(nodes=nodes, tls=False, dra=DraOptions(devices=devices, models=models))
    )
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


async def eventually(check: Callable[[], Any], timeout: float = 3.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = check()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not reached within {timeout}s: {check}")
        await asyncio.sleep(0.01)


def template(name: str = "one-gpu") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "metadata": {"labels": {"app": "train"}, "annotations": {"team": "ml"}},
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.kubesim.io"}}]
                }
            },
        },
    }


def claim(name: str = "shared") -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.kubesim.io"}}]
            }
        },
    }


def pod(
    name: str,
    *,
    template_name: str | None = None,
    claim_name: str | None = None,
    node: str | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": "gpu"}
    if template_name:
        entry["resourceClaimTemplateName"] = template_name
    if claim_name:
        entry["resourceClaimName"] = claim_name
    spec: dict[str, Any] = {
        "containers": [
            {"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}
        ],
        "resourceClaims": [entry],
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }


def stored(cluster: Cluster, resource: ResourceType, name: str, namespace: str = NS) -> Any:
    return cluster.store.get(resource.storage_key, namespace if resource.namespaced else "", name)


async def allocate_and_bind(
    cluster: Cluster, claim_name: str, pod_name: str, node: str, device: str = "gpu-0"
) -> None:
    """What kube-scheduler does for a pod's claim: allocation (with the builtin finalizer)
    and reservation, then the binding."""
    api = cluster.api
    current = api.get(CLAIMS, NS, claim_name)
    meta = {**current["metadata"], "finalizers": ["resource.kubernetes.io/delete-protection"]}
    current = await api.update(CLAIMS, NS, claim_name, {**current, "metadata": meta})
    the_pod = api.get(PODS, NS, pod_name)
    status = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": "gpu.kubesim.io", "pool": node, "device": device}
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": pod_name, "uid": the_pod["metadata"]["uid"]}],
    }
    await api.update(CLAIMS, NS, claim_name, {**current, "status": status}, subresource="status")
    await bind(
        api,
        NS,
        pod_name,
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod_name, "namespace": NS},
            "target": {"kind": "Node", "name": node},
        },
    )
