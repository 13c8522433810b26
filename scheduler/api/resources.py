"""Resource lists (name → quantity) → `Resource`, as upstream's framework.Resource.Add does.

cpu in millicores (MilliValue), memory / ephemeral-storage / pods in whole units (Value), and
"scalar" resources (extended, hugepages-*, kubernetes.io/-prefixed, attachable-volumes-*) in whole
units; other names (e.g. an unprefixed "foo") are ignored, as upstream ignores them.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from apimachinery.labels import label_key_error
from apimachinery.quantity import nanos_to_milli, nanos_to_value, parse_nanos
from scheduler.api.errors import MalformedObject
from scheduler.api.fields import as_mapping
from scheduler.api.values import Resource

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"


@lru_cache(maxsize=1024)
def is_scalar_resource_name(name: str) -> bool:
    """Upstream's schedutil.IsScalarResourceName."""
    if name.startswith(("hugepages-", "attachable-volumes-")):
        return True
    if "kubernetes.io/" in name:  # prefixed native resource
        return True
    # Extended resource: not native (it has a "/"), not "requests."-prefixed, and
    # "requests.<name>" is a qualified name.
    if "/" not in name or name.startswith("requests."):
        return False
    return label_key_error(f"requests.{name}") is None


def parse_resource_list(value: Any, path: str) -> dict[str, int]:
    """A ResourceList object as {name: nano units}; unparsable quantities raise MalformedObject."""
    result: dict[str, int] = {}
    for name, text in as_mapping(value, path).items():
        try:
            result[name] = parse_nanos(text)
        except ValueError as err:
            raise MalformedObject(f"{path}.{name}: {err}") from None
    return result


def resource_from_nanos(amounts: Mapping[str, int]) -> Resource:
    resource = Resource()
    scalar = resource.scalar
    for name, nanos in amounts.items():
        if name == CPU:
            resource.milli_cpu = nanos_to_milli(nanos)
        elif name == MEMORY:
            resource.memory = nanos_to_value(nanos)
        elif name == EPHEMERAL_STORAGE:
            resource.ephemeral_storage = nanos_to_value(nanos)
        elif name == PODS:
            resource.allowed_pod_number = nanos_to_value(nanos)
        elif is_scalar_resource_name(name):
            scalar[name] = nanos_to_value(nanos)
    return resource
