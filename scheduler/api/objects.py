"""Slotted, read-only views of Pod and Node built from raw API JSON.

Plugins read these instead of generated client models: everything a plugin needs on the hot
path (requests, ports, tolerations, affinity terms, images) is computed once, when the watch
event arrives. `raw` keeps the decoded JSON for the rare plugin that needs more.

Building a view from a malformed object raises `MalformedObject` naming the field; informers log
and skip such objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.errors import MalformedObject
from scheduler.api.podaffinity import NO_POD_AFFINITY, PodAffinityInfo
from scheduler.api.selectors import NodeSelector

__all__ = [
    "HostPort",
    "ImageState",
    "MalformedObject",
    "NodeView",
    "OwnerReference",
    "PodView",
    "PreferredSchedulingTerm",
    "Resource",
    "Taint",
    "Toleration",
]


class Resource:
    """Amounts of resources: CPU in millicores, everything else in base units (bytes, counts).

    Mutable on purpose: NodeInfo accumulates requested resources in place.
    """

    __slots__ = ("allowed_pod_number", "ephemeral_storage", "memory", "milli_cpu", "scalar")

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        # Extended and hugepages resources by full name, e.g. "nvidia.com/gpu", "hugepages-2Mi".
        self.scalar: dict[str, int] = scalar if scalar is not None else {}

    def clone(self) -> Resource:
        return Resource(
            self.milli_cpu,
            self.memory,
            self.ephemeral_storage,
            self.allowed_pod_number,
            dict(self.scalar),
        )

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for name, amount in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + amount

    def subtract(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for name, amount in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) - amount

    def get(self, name: str) -> int:
        """Amount of a resource by its API name ("cpu" in millicores, "memory" in bytes, ...)."""
        if name == "cpu":
            return self.milli_cpu
        if name == "memory":
            return self.memory
        if name == "ephemeral-storage":
            return self.ephemeral_storage
        if name == "pods":
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return (
            self.milli_cpu == other.milli_cpu
            and self.memory == other.memory
            and self.ephemeral_storage == other.ephemeral_storage
            and self.allowed_pod_number == other.allowed_pod_number
            and {k: v for k, v in self.scalar.items() if v}
            == {k: v for k, v in other.scalar.items() if v}
        )

    def __hash__(self) -> int:  # mutable; hashing by identity would be misleading
        raise TypeError("Resource is mutable and unhashable")

    def __repr__(self) -> str:
        return (
            f"Resource(milli_cpu={self.milli_cpu}, memory={self.memory}, "
            f"ephemeral_storage={self.ephemeral_storage}, pods={self.allowed_pod_number}, "
            f"scalar={self.scalar})"
        )


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str  # "NoSchedule" | "PreferNoSchedule" | "NoExecute"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str  # "" with operator Exists tolerates every key
    operator: str  # "Equal" (default) | "Exists"
    value: str
    effect: str  # "" tolerates every effect
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """Upstream's Toleration.ToleratesTaint (k8s.io/api/core/v1/toleration.go)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return False


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str  # "0.0.0.0" when unset, as upstream defaults it for conflict checks
    protocol: str  # "TCP" when unset
    port: int


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    weight: int
    preference: NodeSelector  # a selector with exactly one term


@dataclass(frozen=True, slots=True)
class ImageState:
    names: tuple[str, ...]
    size_bytes: int


@dataclass(frozen=True, slots=True)
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool


@dataclass(frozen=True, slots=True, eq=False)
class PodView:
    """A pod as the scheduler sees it. Identity is the uid (two views of one pod compare equal)."""

    raw: Mapping[str, Any] = field(repr=False)
    uid: str
    namespace: str
    name: str
    resource_version: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    owner_references: tuple[OwnerReference, ...]
    creation_timestamp: str
    deletion_timestamp: str | None
    node_name: str  # "" while unbound
    nominated_node_name: str
    scheduler_name: str
    phase: str
    priority: int  # spec.priority, 0 when unset
    preemption_policy: str  # "PreemptLowerPriority" (default) | "Never"
    scheduling_gates: tuple[str, ...]
    # Upstream's computePodResourceRequest: sum of containers, max with each init container
    # (restartable init containers / sidecars accumulate), plus spec.overhead.
    requests: Resource
    # Same, but a container with no cpu / memory request counts as 100m / 200Mi (scoring only).
    non_zero_milli_cpu: int
    non_zero_memory: int
    host_ports: tuple[HostPort, ...]
    tolerations: tuple[Toleration, ...]
    node_selector: Mapping[str, str]
    required_node_affinity: NodeSelector | None
    preferred_node_affinity: tuple[PreferredSchedulingTerm, ...]
    images: tuple[str, ...]  # container and init container images, normalized (":latest" added)
    pvc_names: tuple[str, ...]  # spec.volumes[*].persistentVolumeClaim.claimName
    # spec.affinity.podAffinity / podAntiAffinity, parsed (InterPodAffinity)
    pod_affinity: PodAffinityInfo = NO_POD_AFFINITY

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_bound(self) -> bool:
        return bool(self.node_name)

    @property
    def is_terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PodView):
            return NotImplemented
        return self.uid == other.uid and self.resource_version == other.resource_version

    def __hash__(self) -> int:
        return hash(self.uid)

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: PodView | None = None) -> PodView:
        from scheduler.api.pod import pod_view_from_dict

        return pod_view_from_dict(obj, previous)

    def with_node(self, node_name: str) -> PodView:
        """A copy bound to `node_name` (what the cache assumes before the API confirms it)."""
        from scheduler.api.pod import pod_view_with_node

        return pod_view_with_node(self, node_name)


@dataclass(frozen=True, slots=True, eq=False)
class NodeView:
    raw: Mapping[str, Any] = field(repr=False)
    uid: str
    name: str
    resource_version: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    allocatable: Resource  # status.allocatable (pods → allowed_pod_number)
    unschedulable: bool  # spec.unschedulable
    taints: tuple[Taint, ...]
    images: tuple[ImageState, ...]
    # status.conditions by type → status ("True" / "False" / "Unknown")
    conditions: Mapping[str, str]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodeView):
            return NotImplemented
        return self.name == other.name and self.resource_version == other.resource_version

    def __hash__(self) -> int:
        return hash(self.name)

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: NodeView | None = None) -> NodeView:
        from scheduler.api.node import node_view_from_dict

        return node_view_from_dict(obj)
