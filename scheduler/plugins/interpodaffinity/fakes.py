"""Builders for InterPodAffinity tests (in the spirit of upstream's st.MakePod helpers in
pkg/scheduler/testing/wrappers.go and plugintesting.SetupPluginWithInformers).

Pods and nodes are built as API JSON and parsed by the real views; `FakeHandle` serves a
snapshot and namespaces to the plugin.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.objects import NodeView, PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.fakes import ListSnapshot
from scheduler.framework.interface import SnapshotLister
from scheduler.listers.cluster_objects import ClusterObjects

Obj = dict[str, Any]
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

_uids = itertools.count(1)


def expr(key: str, operator: str, *values: str) -> Obj:
    out: Obj = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def term(
    topology_key: str,
    *exprs: Obj,
    match_labels: Mapping[str, str] | None = None,
    namespaces: Sequence[str] | None = None,
    namespace_selector: Obj | None = None,
    no_selector: bool = False,
) -> Obj:
    """A PodAffinityTerm; `no_selector` leaves labelSelector out (it then matches nothing)."""
    out: Obj = {"topologyKey": topology_key}
    if not no_selector:
        selector: Obj = {}
        if exprs:
            selector["matchExpressions"] = list(exprs)
        if match_labels:
            selector["matchLabels"] = dict(match_labels)
        out["labelSelector"] = selector
    if namespaces is not None:
        out["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        out["namespaceSelector"] = namespace_selector
    return out


def weighted(weight: int, affinity_term: Obj) -> Obj:
    return {"weight": weight, "podAffinityTerm": affinity_term}


def affinity(
    required: Sequence[Obj] = (),
    preferred: Sequence[Obj] = (),
    anti_required: Sequence[Obj] = (),
    anti_preferred: Sequence[Obj] = (),
) -> Obj:
    """A spec.affinity with the given podAffinity / podAntiAffinity terms."""
    out: Obj = {}
    if required or preferred:
        section: Obj = {}
        if required:
            section[REQUIRED] = list(required)
        if preferred:
            section[PREFERRED] = list(preferred)
        out["podAffinity"] = section
    if anti_required or anti_preferred:
        section = {}
        if anti_required:
            section[REQUIRED] = list(anti_required)
        if anti_preferred:
            section[PREFERRED] = list(anti_preferred)
        out["podAntiAffinity"] = section
    return out


class MakePod:
    """A pod builder: MakePod().namespace("ns").label("a", "b").pod_affinity_in(...).obj()."""

    def __init__(self, name: str = "") -> None:
        number = next(_uids)
        self._name = name or f"pod-{number}"
        self._uid = f"uid-{number}"
        self._namespace = ""
        self._labels: dict[str, str] = {}
        self._node = ""
        self._nominated = ""
        self._terminating = False
        self._affinity: Obj = {}

    def name(self, name: str) -> MakePod:
        self._name = name
        return self

    def uid(self, uid: str) -> MakePod:
        self._uid = uid
        return self

    def namespace(self, namespace: str) -> MakePod:
        self._namespace = namespace
        return self

    def label(self, key: str, value: str) -> MakePod:
        self._labels[key] = value
        return self

    def labels(self, labels: Mapping[str, str]) -> MakePod:
        self._labels.update(labels)
        return self

    def node(self, node: str) -> MakePod:
        self._node = node
        return self

    def nominated(self, node: str) -> MakePod:
        self._nominated = node
        return self

    def terminating(self) -> MakePod:
        self._terminating = True
        return self

    def affinity(self, spec_affinity: Obj) -> MakePod:
        """Replace spec.affinity."""
        self._affinity = {k: dict(v) for k, v in spec_affinity.items()}
        return self

    def _add(self, section: str, kind: str, item: Obj) -> MakePod:
        self._affinity.setdefault(section, {}).setdefault(kind, []).append(item)
        return self

    def pod_affinity(self, topology_key: str, selector: Obj, *, anti: bool = False) -> MakePod:
        item = {"labelSelector": selector, "topologyKey": topology_key}
        return self._add("podAntiAffinity" if anti else "podAffinity", REQUIRED, item)

    def pod_affinity_in(self, key: str, topology_key: str, values: Sequence[str]) -> MakePod:
        return self.pod_affinity(topology_key, {"matchExpressions": [expr(key, "In", *values)]})

    def pod_affinity_not_in(self, key: str, topology_key: str, values: Sequence[str]) -> MakePod:
        selector = {"matchExpressions": [expr(key, "NotIn", *values)]}
        return self.pod_affinity(topology_key, selector)

    def pod_affinity_exists(self, key: str, topology_key: str) -> MakePod:
        return self.pod_affinity(topology_key, {"matchExpressions": [expr(key, "Exists")]})

    def pod_anti_affinity_in(self, key: str, topology_key: str, values: Sequence[str]) -> MakePod:
        selector = {"matchExpressions": [expr(key, "In", *values)]}
        return self.pod_affinity(topology_key, selector, anti=True)

    def pod_anti_affinity_not_in(
        self, key: str, topology_key: str, values: Sequence[str]
    ) -> MakePod:
        selector = {"matchExpressions": [expr(key, "NotIn", *values)]}
        return self.pod_affinity(topology_key, selector, anti=True)

    def pod_anti_affinity_exists(self, key: str, topology_key: str) -> MakePod:
        selector = {"matchExpressions": [expr(key, "Exists")]}
        return self.pod_affinity(topology_key, selector, anti=True)

    def obj(self) -> PodView:
        metadata: Obj = {
            "name": self._name,
            "namespace": self._namespace,
            "uid": self._uid,
            "resourceVersion": "1",
            "labels": dict(self._labels),
        }
        if self._terminating:
            metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
        spec: Obj = {"containers": [{"name": "c", "image": "pause"}]}
        if self._node:
            spec["nodeName"] = self._node
        if self._affinity:
            spec["affinity"] = self._affinity
        status: Obj = {"phase": "Running" if self._node else "Pending"}
        if self._nominated:
            status["nominatedNodeName"] = self._nominated
        return PodView.from_dict({"metadata": metadata, "spec": spec, "status": status})


def make_node(name: str, labels: Mapping[str, str] | None = None) -> NodeView:
    return NodeView.from_dict(
        {
            "metadata": {"name": name, "uid": f"node-{name}", "labels": dict(labels or {})},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}},
        }
    )


def node_infos(nodes: Iterable[NodeView], pods: Iterable[PodView]) -> list[NodeInfo]:
    """One NodeInfo per node with the pods bound to it (pods on other nodes are dropped, as
    a snapshot only lists nodes that exist)."""
    by_node: dict[str, list[PodView]] = {}
    for pod in pods:
        by_node.setdefault(pod.node_name, []).append(pod)
    return [NodeInfo(node, by_node.get(node.name, ())) for node in nodes]


def make_snapshot(nodes: Iterable[NodeView], pods: Iterable[PodView] = ()) -> Snapshot:
    return Snapshot.from_node_infos(node_infos(nodes, pods))


def make_list_snapshot(nodes: Iterable[NodeView], pods: Iterable[PodView] = ()) -> ListSnapshot:
    """A plain SnapshotLister (no NodeTable): the plugin takes its reference path."""
    return ListSnapshot(node_infos(nodes, pods))


def make_cluster(namespaces: Mapping[str, Mapping[str, str]] | None = None) -> ClusterObjects:
    """ClusterObjects holding these namespaces (name → labels)."""
    cluster = ClusterObjects()
    for name, labels in (namespaces or {}).items():
        cluster.add_object(
            {
                "kind": "Namespace",
                "metadata": {"name": name, "resourceVersion": "1", "labels": dict(labels)},
            }
        )
    return cluster


@dataclass
class FakeHandle:
    """The part of framework.Handle InterPodAffinity uses."""

    snap: SnapshotLister
    cluster: ClusterObjects = field(default_factory=ClusterObjects)
    profile_name: str = "default-scheduler"
    parallelism: int = 16

    def snapshot(self) -> SnapshotLister:
        return self.snap

    @property
    def cluster_objects(self) -> ClusterObjects:
        return self.cluster
