"""The small immutable values the views hold: resources, taints, tolerations, host ports,
preferred terms, images, owner references.

Their own module, below the views (scheduler.api.pod, scheduler.api.node) and the parsers that
build them (resources, taints), so that every module of scheduler.api imports downward only.
Plugins import them from scheduler.api.objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apimachinery.decimal_int import compare_numeric_values
from scheduler.api.fields import as_bool, as_list, as_mapping, as_str
from scheduler.api.selectors import NodeSelector


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

    def tolerates(self, taint: Taint, comparison_operators: bool = False) -> bool:
        """Upstream's Toleration.ToleratesTaint (k8s.io/api/core/v1/toleration.go, v1.36):
        `Lt` and `Gt` compare the values as int64 only with the TaintTolerationComparisonOperators
        gate on (`comparison_operators`); with it off they tolerate nothing."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        operator = self.operator
        if operator == "Exists":
            return True
        if operator in ("", "Equal"):
            return self.value == taint.value
        if operator in ("Lt", "Gt") and comparison_operators:
            return compare_numeric_values(self.value, taint.value, operator)
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


def parse_owner_references(value: Any) -> tuple[OwnerReference, ...]:
    """metadata.ownerReferences (MalformedObject names the entry that is wrong)."""
    if not value:
        return ()
    result: list[OwnerReference] = []
    for index, item in enumerate(as_list(value, "metadata.ownerReferences")):
        path = f"metadata.ownerReferences[{index}]"
        item = as_mapping(item, path)
        result.append(
            OwnerReference(
                api_version=as_str(item.get("apiVersion"), f"{path}.apiVersion"),
                kind=as_str(item.get("kind"), f"{path}.kind"),
                name=as_str(item.get("name"), f"{path}.name"),
                uid=as_str(item.get("uid"), f"{path}.uid"),
                controller=as_bool(item.get("controller"), f"{path}.controller"),
            )
        )
    return tuple(result)
