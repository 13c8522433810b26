"""Builders for PodTopologySpread tests (upstream's st.MakePod().SpreadConstraint(...) etc.).

Pods and nodes go through the real views; clusters through a real Snapshot, so tests exercise
both the NodeTable fast paths and the reference per-pod paths.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.objects import NodeView, PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.fakes import make_node_info
from scheduler.listers.cluster_objects import ClusterObjects

_uids = itertools.count(1)


def exists(*keys: str) -> dict[str, Any]:
    """st.MakeLabelSelector().Exists(key)..."""
    return {"matchExpressions": [{"key": k, "operator": "Exists"} for k in keys]}


def match_labels(**labels: str) -> dict[str, Any]:
    return {"matchLabels": dict(labels)}


def spread(
    max_skew: int,
    key: str,
    action: str,
    selector: Mapping[str, Any] | None = None,
    min_domains: int | None = None,
    node_affinity_policy: str | None = None,
    node_taints_policy: str | None = None,
    match_label_keys: Sequence[str] | None = None,
) -> dict[str, Any]:
    """st.MakePod().SpreadConstraint(maxSkew, key, action, selector, minDomains,
    nodeAffinityPolicy, nodeTaintsPolicy, matchLabelKeys)."""
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": action}
    if selector is not None:
        c["labelSelector"] = dict(selector)
    if min_domains is not None:
        c["minDomains"] = min_domains
    if node_affinity_policy is not None:
        c["nodeAffinityPolicy"] = node_affinity_policy
    if node_taints_policy is not None:
        c["nodeTaintsPolicy"] = node_taints_policy
    if match_label_keys is not None:
        c["matchLabelKeys"] = list(match_label_keys)
    return c


def make_pod(
    name: str = "",
    *,
    namespace: str = "default",
    uid: str = "",
    node: str = "",
    labels: Mapping[str, str] | None = None,
    constraints: Sequence[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    node_affinity_in: tuple[str, Sequence[str]] | None = None,
    node_affinity_not_in: tuple[str, Sequence[str]] | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    terminating: bool = False,
    owner: tuple[str, str, str] | None = None,
) -> PodView:
    number = next(_uids)
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
    if node:
        spec["nodeName"] = node
    if constraints:
        spec["topologySpreadConstraints"] = [dict(c) for c in constraints]
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    expressions = []
    if node_affinity_in is not None:
        expressions.append(
            {"key": node_affinity_in[0], "operator": "In", "values": list(node_affinity_in[1])}
        )
    if node_affinity_not_in is not None:
        key, values = node_affinity_not_in
        expressions.append({"key": key, "operator": "NotIn", "values": list(values)})
    if expressions:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": expressions}]
                }
            }
        }
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    metadata: dict[str, Any] = {
        "name": name or f"pod-{number}",
        "namespace": namespace,
        "uid": uid or f"uid-{number}",
        "resourceVersion": "1",
        "labels": dict(labels or {}),
    }
    if terminating:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    if owner is not None:
        api_version, kind, owner_name = owner
        metadata["ownerReferences"] = [
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": owner_name,
                "uid": f"owner-{owner_name}",
                "controller": True,
            }
        ]
    return PodView.from_dict({"metadata": metadata, "spec": spec, "status": {"phase": "Pending"}})


def make_node(
    name: str,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
) -> NodeView:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    return NodeView.from_dict(
        {
            "metadata": {
                "name": name,
                "uid": f"node-{name}",
                "resourceVersion": "1",
                "labels": dict(labels or {}),
            },
            "spec": spec,
            "status": {"allocatable": {"cpu": "100", "memory": "100Gi", "pods": "1000"}},
        }
    )


def make_snapshot(nodes: Iterable[NodeView], pods: Iterable[PodView] = ()) -> Snapshot:
    """A real Snapshot; pods go to the node their spec.nodeName names (others are dropped)."""
    by_node: dict[str, list[PodView]] = {}
    for pod in pods:
        by_node.setdefault(pod.node_name, []).append(pod)
    infos: list[NodeInfo] = [make_node_info(n, by_node.get(n.name, [])) for n in nodes]
    return Snapshot.from_node_infos(infos)


@dataclass
class FakeHandle:
    """The slice of the framework Handle PodTopologySpread uses."""

    snap: Any
    cluster_objects: ClusterObjects = field(default_factory=ClusterObjects)

    def snapshot(self) -> Any:
        return self.snap


def service(selector: Mapping[str, str], namespace: str = "default") -> dict[str, Any]:
    return {
        "kind": "Service",
        "apiVersion": "v1",
        "metadata": {"name": f"svc-{next(_uids)}", "namespace": namespace},
        "spec": {"selector": dict(selector)},
    }


def cluster_objects(*objects: Mapping[str, Any]) -> ClusterObjects:
    store = ClusterObjects()
    for obj in objects:
        store.add_object(obj)
    return store
