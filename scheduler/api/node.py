"""`NodeView`, a node as the scheduler sees it, and how it is built from the node's decoded JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.fields import as_bool, as_int, as_list, as_mapping, as_str, as_str_map
from scheduler.api.resources import parse_resource_list, resource_from_nanos
from scheduler.api.values import ImageState, Resource, Taint


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
    # status.declaredFeatures (KEP-5328): the features this node's kubelet declares
    declared_features: frozenset[str] = frozenset()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodeView):
            return NotImplemented
        return self.name == other.name and self.resource_version == other.resource_version

    def __hash__(self) -> int:
        return hash(self.name)

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: NodeView | None = None) -> NodeView:
        return node_view_from_dict(obj)


def node_view_from_dict(obj: Mapping[str, Any]) -> NodeView:
    """The view of one node; raises MalformedObject naming the field that cannot be read.

    Allocatable is status.allocatable; a node that reports none (some test clusters only fill
    capacity) falls back to status.capacity.
    """
    raw = as_mapping(obj, "node")
    meta = as_mapping(raw.get("metadata"), "metadata")
    spec = as_mapping(raw.get("spec"), "spec")
    status = as_mapping(raw.get("status"), "status")
    allocatable = status.get("allocatable")
    if allocatable:
        amounts = parse_resource_list(allocatable, "status.allocatable")
    else:
        amounts = parse_resource_list(status.get("capacity"), "status.capacity")
    return NodeView(
        raw=raw,
        uid=as_str(meta.get("uid"), "metadata.uid"),
        name=as_str(meta.get("name"), "metadata.name"),
        resource_version=as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
        labels=as_str_map(meta.get("labels"), "metadata.labels"),
        annotations=as_str_map(meta.get("annotations"), "metadata.annotations"),
        allocatable=resource_from_nanos(amounts),
        unschedulable=as_bool(spec.get("unschedulable"), "spec.unschedulable"),
        taints=_taints(spec.get("taints")),
        images=_images(status.get("images")),
        conditions=_conditions(status.get("conditions")),
        declared_features=_declared_features(status.get("declaredFeatures")),
    )


def _taints(value: Any) -> tuple[Taint, ...]:
    if not value:
        return ()
    result: list[Taint] = []
    for index, item in enumerate(as_list(value, "spec.taints")):
        path = f"spec.taints[{index}]"
        item = as_mapping(item, path)
        result.append(
            Taint(
                key=as_str(item.get("key"), f"{path}.key"),
                value=as_str(item.get("value"), f"{path}.value"),
                effect=as_str(item.get("effect"), f"{path}.effect"),
            )
        )
    return tuple(result)


def _images(value: Any) -> tuple[ImageState, ...]:
    if not value:
        return ()
    result: list[ImageState] = []
    for index, item in enumerate(as_list(value, "status.images")):
        path = f"status.images[{index}]"
        item = as_mapping(item, path)
        names = as_list(item.get("names"), f"{path}.names")
        for name_index, name in enumerate(names):
            as_str(name, f"{path}.names[{name_index}]")
        result.append(ImageState(tuple(names), as_int(item.get("sizeBytes"), f"{path}.sizeBytes")))
    return tuple(result)


def _declared_features(value: Any) -> frozenset[str]:
    if not value:
        return _NO_FEATURES
    names = as_list(value, "status.declaredFeatures")
    for index, name in enumerate(names):
        as_str(name, f"status.declaredFeatures[{index}]")
    return frozenset(names)


_NO_FEATURES: frozenset[str] = frozenset()


def _conditions(value: Any) -> Mapping[str, str]:
    if not value:
        return {}
    result: dict[str, str] = {}
    for index, item in enumerate(as_list(value, "status.conditions")):
        path = f"status.conditions[{index}]"
        item = as_mapping(item, path)
        result[as_str(item.get("type"), f"{path}.type")] = as_str(
            item.get("status"), f"{path}.status"
        )
    return result
