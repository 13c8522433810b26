"""OpenAPI schema definitions built from kubernetes_asyncio's generated models.

Every model class carries `openapi_types` (python attribute -> type string such as "str",
"list[V1Container]", "dict(str, str)") and `attribute_map` (python attribute -> JSON name), and its
properties keep upstream's field descriptions as docstrings. That is enough to rebuild the
definitions upstream publishes for the kinds kubesim serves, without shipping upstream's spec.

What the generated models lose is added back from small tables: the definition names' packages
(io.k8s.api.core.v1.PodSpec, io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta, ...) and the
strategic-merge-patch metadata of list fields (patchStrategy/patchMergeKey in upstream's types.go).
"""

from __future__ import annotations

import copy
import inspect
import re
from dataclasses import dataclass, field
from typing import Any

import kubernetes_asyncio.client.models as models

from kubesim import schemas_workload
from kubesim.resources import RESOURCES, ResourceType

JSON = dict[str, Any]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
# Model classes that upstream defines in apimachinery rather than in an API group's package.
_APIMACHINERY = {
    "V1ObjectMeta",
    "V1ListMeta",
    "V1OwnerReference",
    "V1ManagedFieldsEntry",
    "V1LabelSelector",
    "V1LabelSelectorRequirement",
    "V1Condition",
    "V1Status",
    "V1StatusDetails",
    "V1StatusCause",
    "V1DeleteOptions",
    "V1Preconditions",
    "V1APIResource",
    "V1APIResourceList",
    "V1APIGroup",
    "V1APIGroupList",
    "V1APIVersions",
    "V1GroupVersionForDiscovery",
    "V1ServerAddressByClientCIDR",
    "V1WatchEvent",
    "V1FieldSelectorRequirement",
}

# (model class, python attribute) -> (patch strategy, merge key or "") from upstream's
# staging/src/k8s.io/api/core/v1/types.go and friends (`patchStrategy:"merge" patchMergeKey:..`).
PATCH_METADATA: dict[tuple[str, str], tuple[str, str]] = {
    ("V1ObjectMeta", "finalizers"): ("merge", ""),
    ("V1ObjectMeta", "owner_references"): ("merge", "uid"),
    ("V1PodSpec", "containers"): ("merge", "name"),
    ("V1PodSpec", "init_containers"): ("merge", "name"),
    ("V1PodSpec", "ephemeral_containers"): ("merge", "name"),
    ("V1PodSpec", "volumes"): ("merge,retainKeys", "name"),
    ("V1PodSpec", "image_pull_secrets"): ("merge", "name"),
    ("V1PodSpec", "host_aliases"): ("merge", "ip"),
    ("V1PodSpec", "topology_spread_constraints"): ("merge", "topologyKey"),
    ("V1PodSpec", "scheduling_gates"): ("merge", "name"),
    ("V1PodSpec", "resource_claims"): ("merge,retainKeys", "name"),
    ("V1Container", "ports"): ("merge", "containerPort"),
    ("V1Container", "env"): ("merge", "name"),
    ("V1Container", "volume_mounts"): ("merge", "mountPath"),
    ("V1Container", "volume_devices"): ("merge", "devicePath"),
    ("V1EphemeralContainer", "env"): ("merge", "name"),
    ("V1EphemeralContainer", "volume_mounts"): ("merge", "mountPath"),
    ("V1EphemeralContainer", "volume_devices"): ("merge", "devicePath"),
    ("V1PodStatus", "conditions"): ("merge", "type"),
    ("V1PodStatus", "pod_i_ps"): ("merge", "ip"),
    ("V1PodStatus", "host_i_ps"): ("merge", "ip"),
    ("V1PodStatus", "resource_claim_statuses"): ("merge,retainKeys", "name"),
    ("V1NodeSpec", "pod_cid_rs"): ("merge", ""),
    ("V1NodeStatus", "conditions"): ("merge", "type"),
    ("V1NodeStatus", "addresses"): ("merge", "type"),
    ("V1NamespaceStatus", "conditions"): ("merge", "type"),
    ("V1ServiceSpec", "ports"): ("merge", "port"),
    ("V1ServiceStatus", "conditions"): ("merge", "type"),
    ("V1PersistentVolumeClaimStatus", "conditions"): ("merge", "type"),
    ("V1ReplicationControllerStatus", "conditions"): ("merge", "type"),
    ("V1ReplicaSetStatus", "conditions"): ("merge", "type"),
    ("V1StatefulSetStatus", "conditions"): ("merge", "type"),
    ("V1PodDisruptionBudgetStatus", "conditions"): ("merge", "type"),
}

# Python attributes typed "object" that upstream declares as IntOrString.
_INT_OR_STRING = {
    "port",
    "target_port",
    "max_unavailable",
    "min_available",
    "max_surge",
    "partition",
}
# Python attributes typed "str" that upstream declares as resource.Quantity.
_QUANTITY_DICTS = {"capacity", "allocatable", "limits", "requests", "overhead", "hard", "used"}


def model_class(name: str) -> type | None:
    cls = getattr(models, name, None)
    return cls if isinstance(cls, type) and hasattr(cls, "openapi_types") else None


def resource_model(resource: ResourceType) -> type:
    """The generated model class of a served resource (V1Pod, CoreV1Event, EventsV1Event...)."""
    prefix = resource.group.split(".")[0].capitalize() if resource.group else "Core"
    for name in (
        f"{prefix}{resource.version.capitalize()}{resource.kind}",
        f"{resource.version.capitalize()}{resource.kind}",
    ):
        cls = model_class(name)
        if cls is not None:
            return cls
    raise LookupError(f"no kubernetes_asyncio model for {resource.kind}")


def group_package(group: str, version: str) -> str:
    """ "apps", "v1" -> "io.k8s.api.apps.v1"; core -> "io.k8s.api.core.v1"."""
    if group == "apiextensions.k8s.io":  # served by apiextensions-apiserver, named after it
        return f"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{version}"
    return f"io.k8s.api.{group.split('.')[0] if group else 'core'}.{version}"


_CLASS_NAME = re.compile(r"^(?:[A-Z][a-z]+)??(V\d+(?:alpha\d+|beta\d+)?)([A-Z]\w*)$")


def _short_kind(class_name: str) -> str:
    """ "V1PodSpec" -> "PodSpec", "CoreV1Event" -> "Event"."""
    match = _CLASS_NAME.match(class_name)
    return match.group(2) if match else class_name


def describe(cls: type, attribute: str) -> str:
    """Upstream's description of a field, recovered from the generated property's docstring."""
    prop = getattr(cls, attribute, None)
    doc = inspect.getdoc(prop) if isinstance(prop, property) else None
    if not doc:
        return ""
    lines = [ln.replace("# noqa: E501", "").rstrip() for ln in doc.splitlines()]
    body = [ln for ln in lines[1:] if ln and not ln.startswith(":")]
    return " ".join(body).strip()


@dataclass
class SchemaSet:
    """Definitions keyed by upstream-style name, and the class -> name mapping behind them."""

    definitions: dict[str, JSON] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # model class name -> definition name
    roots: dict[ResourceType, str] = field(default_factory=dict)  # resource -> definition name

    def ref_prefix(self) -> str:
        return "#/definitions/"

    def name_of(self, class_name: str, package: str) -> str:
        if class_name not in self.names:
            short = _short_kind(class_name)
            if class_name in _APIMACHINERY:
                self.names[class_name] = _META + short
            else:
                self.names[class_name] = f"{package}.{short}"
        return self.names[class_name]


_LIST = re.compile(r"^list\[(.*)\]$")
_DICT = re.compile(r"^dict\(str, (.*)\)$")


def _type_schema(schemas: SchemaSet, type_name: str, package: str, attribute: str) -> JSON:
    if match := _LIST.match(type_name):
        return {"type": "array", "items": _type_schema(schemas, match.group(1), package, attribute)}
    if match := _DICT.match(type_name):
        values = _type_schema(schemas, match.group(1), package, attribute)
        if attribute in _QUANTITY_DICTS and values == {"type": "string"}:
            values = {"$ref": "io.k8s.apimachinery.pkg.api.resource.Quantity"}
        return {"type": "object", "additionalProperties": values}
    primitive = {
        "str": {"type": "string"},
        "int": {"type": "integer", "format": "int64"},
        "float": {"type": "number", "format": "double"},
        "bool": {"type": "boolean"},
        "datetime": {"type": "string", "format": "date-time"},
        "date": {"type": "string", "format": "date"},
    }
    if type_name in primitive:
        return dict(primitive[type_name])
    if type_name == "object":
        if attribute in _INT_OR_STRING:
            return {"$ref": "io.k8s.apimachinery.pkg.util.intstr.IntOrString"}
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    cls = model_class(type_name)
    if cls is None:
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {"$ref": _add_model(schemas, cls, package)}


def _add_model(schemas: SchemaSet, cls: type, package: str) -> str:
    name = schemas.name_of(cls.__name__, package)
    if name in schemas.definitions:
        return name
    definition: JSON = {"type": "object", "properties": {}}
    schemas.definitions[name] = definition  # registered first: models refer to themselves
    description = (inspect.getdoc(cls) or "").split("\n\n")[0]
    if description and "NOTE: This class is auto generated" not in description:
        definition["description"] = description
    properties: dict[str, JSON] = definition["properties"]
    openapi_types: dict[str, str] = cls.openapi_types  # type: ignore[attr-defined]
    attribute_map: dict[str, str] = cls.attribute_map  # type: ignore[attr-defined]
    for attribute, type_name in openapi_types.items():
        schema = _type_schema(schemas, type_name, package, attribute)
        if text := describe(cls, attribute):
            schema["description"] = text
        patch = PATCH_METADATA.get((cls.__name__, attribute))
        if patch is not None:
            schema["x-kubernetes-patch-strategy"] = patch[0]
            if patch[1]:
                schema["x-kubernetes-patch-merge-key"] = patch[1]
        properties[attribute_map[attribute]] = schema
    required = _required_fields(cls)
    if required:
        definition["required"] = sorted(attribute_map[a] for a in required)
    return name


def _required_fields(cls: type) -> list[str]:
    """Attributes whose generated setter refuses None (upstream's required fields)."""
    required = []
    openapi_types: dict[str, str] = cls.openapi_types  # type: ignore[attr-defined]
    for attribute in openapi_types:
        prop = getattr(cls, attribute, None)
        setter = prop.fset if isinstance(prop, property) else None
        if setter is None:
            continue
        try:
            source = inspect.getsource(setter)
        except (OSError, TypeError):
            continue
        if f"`{attribute}`, must not be `None`" in source:
            required.append(attribute)
    return required


_SPECIAL_DEFINITIONS: dict[str, JSON] = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "type": "string",
        "description": "Quantity is a fixed-point representation of a number.",
    },
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "type": "string",
        "format": "int-or-string",
        "description": "IntOrString is a type that can hold an int32 or a string.",
    },
}


def _qualify_refs(node: Any) -> None:
    """Turn the bare definition names used while building into "#/definitions/NAME" refs."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            node["$ref"] = "#/definitions/" + ref
        for value in node.values():
            _qualify_refs(value)
    elif isinstance(node, list):
        for value in node:
            _qualify_refs(value)


def build(resources: tuple[ResourceType, ...] = RESOURCES) -> SchemaSet:
    """Definitions for every served kind and its list, in OpenAPI v2 form (#/definitions/...)."""
    schemas = SchemaSet()
    ordered = sorted(resources, key=lambda r: r.group != "")  # core first: shared types are core
    for resource in ordered:
        package = group_package(resource.group, resource.version)
        if resource.kind in schemas_workload.ROOTS and resource.version == "v1beta1":
            _add_hand_written(schemas, resource)
            continue
        cls = resource_model(resource)
        root = _add_model(schemas, cls, package)
        schemas.roots[resource] = root
        gvk = [{"group": resource.group, "version": resource.version, "kind": resource.kind}]
        schemas.definitions[root]["x-kubernetes-group-version-kind"] = gvk
        list_cls = model_class(cls.__name__ + "List")
        if list_cls is not None:
            list_name = _add_model(schemas, list_cls, package)
            list_gvk = [{**gvk[0], "kind": resource.list_kind}]
            schemas.definitions[list_name]["x-kubernetes-group-version-kind"] = list_gvk
    for extra in ("V1Status", "V1DeleteOptions", "V1Binding", "V1Eviction"):
        extra_cls = model_class(extra)
        if extra_cls is not None:
            _add_model(
                schemas,
                extra_cls,
                "io.k8s.api.policy.v1" if extra == "V1Eviction" else group_package("", "v1"),
            )
    _tag_meta_kinds(schemas)
    schemas.definitions.update({k: dict(v) for k, v in _SPECIAL_DEFINITIONS.items()})
    _qualify_refs(schemas.definitions)
    return schemas


def _add_hand_written(schemas: SchemaSet, resource: ResourceType) -> None:
    """A kind kubernetes_asyncio has no model for: its definitions from schemas_workload.py."""
    for name, definition in schemas_workload.DEFINITIONS.items():
        schemas.definitions.setdefault(name, copy.deepcopy(definition))
    root = schemas_workload.ROOTS[resource.kind]
    schemas.roots[resource] = root
    gvk = {"group": resource.group, "version": resource.version, "kind": resource.kind}
    schemas.definitions[root]["x-kubernetes-group-version-kind"] = [gvk]
    schemas.definitions[root + "List"]["x-kubernetes-group-version-kind"] = [
        {**gvk, "kind": resource.list_kind}
    ]


def _tag_meta_kinds(schemas: SchemaSet) -> None:
    extras = {
        _META + "Status": ("", "v1", "Status"),
        _META + "DeleteOptions": ("", "v1", "DeleteOptions"),
        "io.k8s.api.core.v1.Binding": ("", "v1", "Binding"),
        "io.k8s.api.policy.v1.Eviction": ("policy", "v1", "Eviction"),
    }
    for name, (group, version, kind) in extras.items():
        if name in schemas.definitions:
            schemas.definitions[name]["x-kubernetes-group-version-kind"] = [
                {"group": group, "version": version, "kind": kind}
            ]
