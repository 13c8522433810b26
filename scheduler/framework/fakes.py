"""Builders and fakes for tests of plugins and the framework (upstream's scheduler/testing).

Pods and nodes are built from API JSON through the real views, so tests exercise the same
request arithmetic the scheduler uses.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.objects import NodeView, PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.framework.interface import SnapshotLister

_uids = itertools.count(1)


def make_pod(
    name: str = "",
    *,
    namespace: str = "default",
    uid: str = "",
    containers: Sequence[Mapping[str, str]] = (),
    init_containers: Sequence[Mapping[str, str]] = (),
    overhead: Mapping[str, str] | None = None,
    node_name: str = "",
    nominated_node_name: str = "",
    priority: int | None = None,
    scheduling_gates: Sequence[str] = (),
    tolerations: Sequence[Mapping[str, Any]] = (),
    creation_timestamp: str = "",
) -> PodView:
    """A pod with one container per entry of `containers` (each a map of resource requests)."""
    number = next(_uids)
    spec: dict[str, Any] = {
        "containers": [
            {"name": f"c{i}", "image": "pause", "resources": {"requests": dict(requests)}}
            for i, requests in enumerate(containers)
        ],
    }
    if init_containers:
        spec["initContainers"] = [
            {"name": f"i{i}", "image": "pause", "resources": {"requests": dict(requests)}}
            for i, requests in enumerate(init_containers)
        ]
    if overhead:
        spec["overhead"] = dict(overhead)
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if scheduling_gates:
        spec["schedulingGates"] = [{"name": gate} for gate in scheduling_gates]
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    metadata: dict[str, Any] = {
        "name": name or f"pod-{number}",
        "namespace": namespace,
        "uid": uid or f"uid-{number}",
        "resourceVersion": "1",
    }
    if creation_timestamp:
        metadata["creationTimestamp"] = creation_timestamp
    status: dict[str, Any] = {"phase": "Pending"}
    if nominated_node_name:
        status["nominatedNodeName"] = nominated_node_name
    return PodView.from_dict({"metadata": metadata, "spec": spec, "status": status})


def make_node(
    name: str,
    allocatable: Mapping[str, str] | None = None,
    *,
    unschedulable: bool = False,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    resource_version: str = "1",
) -> NodeView:
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    return NodeView.from_dict(
        {
            "metadata": {
                "name": name,
                "uid": f"node-{name}",
                "resourceVersion": resource_version,
                "labels": dict(labels or {}),
            },
            "spec": spec,
            "status": {"allocatable": dict(allocatable or {})},
        }
    )


def make_node_info(node: NodeView, pods: Iterable[PodView] = ()) -> NodeInfo:
    return NodeInfo(node, [pod.with_node(node.name) if not pod.node_name else pod for pod in pods])


@dataclass
class ListSnapshot:
    """A SnapshotLister over a fixed list of NodeInfos."""

    node_infos: list[NodeInfo] = field(default_factory=list)

    def list(self) -> Sequence[NodeInfo]:
        return self.node_infos

    def get(self, node_name: str) -> NodeInfo | None:
        for info in self.node_infos:
            if info.node_name == node_name:
                return info
        return None

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return [info for info in self.node_infos if info.pods_with_affinity]

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return [info for info in self.node_infos if info.pods_with_required_anti_affinity]


def snapshot_of(node_infos: Iterable[NodeInfo]) -> SnapshotLister:
    return ListSnapshot(list(node_infos))


@dataclass
class RecordingClient:
    """An ApiClient that records requests and answers from a queue of (status, body)."""

    responses: list[tuple[int, Any]] = field(default_factory=list)
    requests: list[tuple[str, str, Any]] = field(default_factory=list)
    error: Exception | None = None

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        self.requests.append((method, path, body))
        if self.error is not None:
            raise self.error
        return self.responses.pop(0) if self.responses else (201, {})


@dataclass
class StaticNominator:
    """Nominated pods by node name."""

    pods_by_node: dict[str, list[PodView]] = field(default_factory=dict)

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodView]:
        return self.pods_by_node.get(node_name, [])
