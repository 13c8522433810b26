"""A cluster for a plugin to look at: node infos, snapshots, cluster objects, a fake handle.

`FakeHandle` is the part of the framework's Handle a plugin reads (snapshot, cluster objects
and their storage listers, client, nominated pods, profile name, parallelism), served from
fixed values, so a plugin can be built as `MyPlugin(args, FakeHandle(snapshot_of(infos)))`
and its methods called directly (upstream's plugin tests use a framework handle built the
same way: frameworkruntime.NewFramework with fake informers).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scheduler.api.objects import NodeView, PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.interface import ApiClient, Handle, SnapshotLister, WaitingPod
from scheduler.listers.cluster_objects import ClusterObjects
from scheduler.listers.storage_objects import StorageObjects

_numbers = itertools.count(1)


def make_node_info(node: NodeView, pods: Iterable[PodView] = ()) -> NodeInfo:
    """The node with these pods on it (pods without spec.nodeName are bound to it)."""
    return NodeInfo(node, [pod if pod.node_name else pod.with_node(node.name) for pod in pods])


def node_infos(nodes: Iterable[NodeView], pods: Iterable[PodView] = ()) -> list[NodeInfo]:
    """One NodeInfo per node with the pods whose spec.nodeName names it (pods on other
    nodes, or on none, are dropped: a snapshot only lists nodes that exist)."""
    by_node: dict[str, list[PodView]] = {}
    for pod in pods:
        by_node.setdefault(pod.node_name, []).append(pod)
    return [NodeInfo(node, by_node.get(node.name, ())) for node in nodes]


def make_snapshot(nodes: Iterable[NodeView], pods: Iterable[PodView] = ()) -> Snapshot:
    """The scheduler's own Snapshot (with its NodeTable, so plugins take their fast paths)."""
    return Snapshot.from_node_infos(node_infos(nodes, pods))


@dataclass
class ListSnapshot:
    """A SnapshotLister over a fixed list of NodeInfos, without the NodeTable: plugins that
    have a vectorised path take their reference per-node path over it."""

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


def snapshot_of(infos: Iterable[NodeInfo]) -> ListSnapshot:
    """A ListSnapshot of these NodeInfos."""
    return ListSnapshot(list(infos))


def make_list_snapshot(nodes: Iterable[NodeView], pods: Iterable[PodView] = ()) -> ListSnapshot:
    """`make_snapshot` without the NodeTable."""
    return ListSnapshot(node_infos(nodes, pods))


# -- cluster objects -----------------------------------------------------------------------------


def cluster_objects(*objects: Mapping[str, Any]) -> ClusterObjects:
    """ClusterObjects holding these API objects (services, namespaces, PDBs... as JSON)."""
    store = ClusterObjects()
    for obj in objects:
        store.add_object(obj)
    return store


def namespace(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A Namespace object."""
    return {
        "kind": "Namespace",
        "metadata": {"name": name, "resourceVersion": "1", "labels": dict(labels or {})},
    }


def cluster_with_namespaces(
    labels_by_name: Mapping[str, Mapping[str, str]] | None = None,
) -> ClusterObjects:
    """ClusterObjects holding these namespaces (name → labels)."""
    return cluster_objects(*(namespace(n, labels) for n, labels in (labels_by_name or {}).items()))


def service(selector: Mapping[str, str], namespace: str = "default") -> dict[str, Any]:
    """A Service object selecting pods by these labels."""
    return {
        "kind": "Service",
        "apiVersion": "v1",
        "metadata": {"name": f"svc-{next(_numbers)}", "namespace": namespace},
        "spec": {"selector": dict(selector)},
    }


# -- the handle's collaborators ------------------------------------------------------------------


@dataclass
class RecordingClient:
    """An ApiClient that records requests and answers from a queue of (status, body); with
    an empty queue it answers (201, {})."""

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
    """Nominated pods by node name (the scheduling queue's nominator, frozen)."""

    pods_by_node: dict[str, list[PodView]] = field(default_factory=dict)

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodView]:
        return self.pods_by_node.get(node_name, [])


def _no_client() -> RecordingClient:
    """FakeHandle's client when the test gives none: any request fails and says so."""
    return RecordingClient(
        error=RuntimeError(
            "FakeHandle has no API client; pass FakeHandle(client=RecordingClient()) to a "
            "plugin that writes"
        )
    )


@dataclass
class FakeHandle:
    """The framework Handle as plugins read it, from fixed values (pass it where a plugin
    takes its handle). `snap` is what `snapshot()` returns. It satisfies
    scheduler.framework.interface.Handle (mypy checks it below), so a plugin typed
    `handle: Handle` takes it without a cast; a plugin that preempts takes the framework's
    PreemptionHandle: build it with scheduler.testing.build_framework instead."""

    snap: SnapshotLister = field(default_factory=ListSnapshot)
    cluster_objects: ClusterObjects = field(default_factory=ClusterObjects)
    client: ApiClient = field(default_factory=_no_client)
    nominator: StaticNominator = field(default_factory=StaticNominator)
    profile_name: str = "default-scheduler"
    parallelism: int = 16
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    # pods the scheduler's informer no longer has (pod_exists answers False for them)
    deleted_pods: set[str] = field(default_factory=set)
    # --feature-gates as the Framework hands them to plugins (missing: the gate's default)
    feature_gates: Mapping[str, bool] = field(default_factory=dict)

    def snapshot(self) -> SnapshotLister:
        return self.snap

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return None  # no Permit plugin holds pods in a fake

    def iterate_waiting_pods(self) -> Iterable[WaitingPod]:
        return ()

    def reject_waiting_pod(self, uid: str) -> bool:
        return False

    def pod_exists(self, pod: PodView) -> bool:
        return pod.uid not in self.deleted_pods

    @property
    def storage(self) -> StorageObjects:
        """The storage listers (PVs, PVCs, classes, CSI objects) of `cluster_objects`."""
        return self.cluster_objects.storage

    def nominated_pods_for_node(self, node_name: str) -> Sequence[PodView]:
        return self.nominator.nominated_pods_for_node(node_name)


if TYPE_CHECKING:  # the gate's mypy holds FakeHandle to the Handle Protocol plugins are typed with
    _FAKE_IS_A_HANDLE: Handle = FakeHandle()
