"""Type errors that upstream's JSON decoder reports before validation ever runs.

The API server decodes a request body into Go structs; a value of the wrong JSON type (a string
where an object belongs, an object as an annotation value) or a malformed quantity fails there,
and the request is answered 400 BadRequest with `Pod in version "v1" cannot be handled as a Pod:
json: cannot unmarshal string into Go struct field PodSpec.spec.affinity of type v1.Affinity`
(k8s.io/apiserver/pkg/endpoints/handlers/rest.go transformDecodeError, Go's encoding/json
UnmarshalTypeError, apimachinery's resource.Quantity.UnmarshalJSON).

The Go types come from kubernetes_asyncio's generated models (`openapi_types`), which mirror
upstream's v1 structs. Like encoding/json, the first error in document order is the one reported;
unknown fields and nulls are not type errors.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from apimachinery.jsonkind import json_kind
from apimachinery.quantity import FORMAT_ERROR, parse_quantity
from kubesim.resources import ResourceType
from kubesim.schemas import model_class, resource_model

_LIST = re.compile(r"^list\[(.*)\]$")
_DICT = re.compile(r"^dict\(str, (.*)\)$")
_MODEL = re.compile(r"^(?:[A-Z][a-z]+)??(V\d+(?:alpha\d+|beta\d+)?)([A-Z]\w*)$")

# Map-valued attributes whose Go type is resource.Quantity per value (a ResourceList).
_QUANTITY_MAPS = {"capacity", "allocatable", "limits", "requests", "overhead", "hard", "used"}
_QUANTITY_FIELDS = {"size_limit"}
# Attributes typed "object" that upstream declares as intstr.IntOrString.
_INT_OR_STRING = {
    "port",
    "target_port",
    "max_unavailable",
    "min_available",
    "max_surge",
    "partition",
}
# The generated models do not say whether an int is int32 or int64 in Go. Fields listed here are
# int64 (so named in messages); others are named int32. Only the int32 fields listed in
# _INT32_CHECKED are range-checked as int32, so an unlisted int64 field (image sizeBytes...) is
# never refused for a value upstream accepts.
_INT64 = {
    "toleration_seconds", "termination_grace_period_seconds", "active_deadline_seconds",
    "deletion_grace_period_seconds", "generation", "observed_generation", "run_as_user",
    "run_as_group", "fs_group", "supplemental_groups", "expiration_seconds", "size_bytes",
}  # fmt: skip
_INT32_CHECKED = {
    "priority", "max_skew", "min_domains", "weight", "container_port", "host_port", "value",
    "lease_duration_seconds", "lease_transitions", "replicas",
}  # fmt: skip
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
# Named string types of the fields the scheduler reads, as Go prints them.
_NAMED_STRINGS = {
    ("V1NodeSelectorRequirement", "operator"): "v1.NodeSelectorOperator",
    ("V1LabelSelectorRequirement", "operator"): "v1.LabelSelectorOperator",
    ("V1Toleration", "operator"): "v1.TolerationOperator",
    ("V1Toleration", "effect"): "v1.TaintEffect",
    ("V1Taint", "effect"): "v1.TaintEffect",
    ("V1TopologySpreadConstraint", "when_unsatisfiable"): "v1.UnsatisfiableConstraintAction",
    ("V1PodSpec", "preemption_policy"): "v1.PreemptionPolicy",
    ("V1PodSpec", "restart_policy"): "v1.RestartPolicy",
    ("V1PodSpec", "dns_policy"): "v1.DNSPolicy",
}


class DecodeError(Exception):
    """The decoder's message, without the `Kind in version ...` prefix."""


def _go_model(class_name: str) -> str:
    """ "V1Affinity" -> "v1.Affinity", "CoreV1Event" -> "v1.Event"."""
    match = _MODEL.match(class_name)
    return f"{match.group(1).lower()}.{match.group(2)}" if match else class_name


def _go_type(type_name: str, owner: str, attribute: str) -> str:
    if match := _LIST.match(type_name):
        return "[]" + _go_type(match.group(1), owner, attribute)
    if match := _DICT.match(type_name):
        if attribute in _QUANTITY_MAPS:
            return "v1.ResourceList"
        return "map[string]" + _go_type(match.group(1), owner, "")
    if type_name == "str":
        return _NAMED_STRINGS.get((owner, attribute), "string")
    if type_name == "int":
        return "int64" if attribute in _INT64 else "int32"
    if type_name == "float":
        return "float64"
    if type_name == "datetime":
        return "v1.Time"
    return _go_model(type_name)


class _Decoder:
    def __init__(self) -> None:
        self.path: list[str] = []  # JSON names from the root, as Go's errorContext.FieldStack
        self.struct = ""  # the innermost Go struct holding the current field

    def fail(self, value: Any, go_type: str, shown: str = "") -> None:
        what = shown or json_kind(value)
        raise DecodeError(
            f"json: cannot unmarshal {what} into Go struct field "
            f"{self.struct}.{'.'.join(self.path)} of type {go_type}"
        )

    def model(self, value: dict[str, Any], cls: type) -> None:
        struct, fields = _fields(cls)
        saved, owner, path = self.struct, cls.__name__, self.path
        for key, item in value.items():
            field = fields.get(key)
            if field is None or item is None:
                continue  # unknown fields are fieldValidation's business; null is a no-op
            path.append(key)
            self.struct = struct
            self.value(item, field[1], owner, field[0])
            path.pop()
        self.struct = saved

    def value(self, value: Any, type_name: str, owner: str, attribute: str) -> None:
        if value is None:
            return
        if type_name == "str":
            if attribute in _QUANTITY_FIELDS:
                _quantity(value)
            elif not isinstance(value, str):
                self.fail(value, _go_type(type_name, owner, attribute))
        elif type_name == "int":
            self.integer(value, _go_type(type_name, owner, attribute), attribute)
        elif type_name == "bool":
            if not isinstance(value, bool):
                self.fail(value, "bool")
        elif type_name == "datetime":
            if not isinstance(value, str):  # metav1.Time decodes a string first
                raise DecodeError(
                    f"json: cannot unmarshal {json_kind(value)} into Go value of type string"
                )
        elif type_name == "float":
            if isinstance(value, bool) or not isinstance(value, int | float):
                self.fail(value, "float64")
        elif type_name == "object":
            if attribute in _INT_OR_STRING:
                _int_or_string(value)
        else:
            self.container(value, type_name, owner, attribute)

    def container(self, value: Any, type_name: str, owner: str, attribute: str) -> None:
        shape, inner = _shape(type_name)
        if shape == "list":
            if not isinstance(value, list):
                self.fail(value, _go_type(type_name, owner, attribute))
            for item in value:
                self.value(item, inner, owner, attribute)
        elif shape == "dict":
            if not isinstance(value, dict):
                self.fail(value, _go_type(type_name, owner, attribute))
            quantities = attribute in _QUANTITY_MAPS and inner == "str"
            for item in value.values():
                if quantities:
                    _quantity(item)
                else:
                    self.value(item, inner, owner, "")
        else:
            cls = _model(type_name)
            if cls is None:
                return
            if not isinstance(value, dict):
                self.fail(value, _go_type(type_name, owner, attribute))
            self.model(value, cls)

    def integer(self, value: Any, go_type: str, attribute: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(value, go_type)
        low, high = _INT_RANGES["int32" if attribute in _INT32_CHECKED else "int64"]
        if isinstance(value, float) or not low <= value <= high:
            self.fail(value, go_type, f"number {value}")


@functools.cache
def _shape(type_name: str) -> tuple[str, str]:
    """("list" | "dict", element type) for container type strings, else ("model", "")."""
    if match := _LIST.match(type_name):
        return "list", match.group(1)
    if match := _DICT.match(type_name):
        return "dict", match.group(1)
    return "model", ""


@functools.cache
def _model(type_name: str) -> type | None:
    return model_class(type_name)


@functools.cache
def _fields(cls: type) -> tuple[str, dict[str, tuple[str, str]]]:
    """The Go struct name of a model, and its JSON names -> (python attribute, type string)."""
    openapi_types: dict[str, str] = cls.openapi_types  # type: ignore[attr-defined]
    attribute_map: dict[str, str] = cls.attribute_map  # type: ignore[attr-defined]
    fields = {attribute_map[attr]: (attr, type_name) for attr, type_name in openapi_types.items()}
    return _go_model(cls.__name__).split(".", 1)[-1], fields


def _quantity(value: Any) -> None:
    """resource.Quantity.UnmarshalJSON: a string or a bare number, parsed; its error as is."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise DecodeError(FORMAT_ERROR)
    try:
        parse_quantity(value.strip() if isinstance(value, str) else value)
    except ValueError as err:
        raise DecodeError(str(err)) from err


def _int_or_string(value: Any) -> None:
    """intstr.IntOrString.UnmarshalJSON: a JSON string, else decoded into an int32."""
    if isinstance(value, str):
        return
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
        shown = (
            f"number {value}"
            if isinstance(value, int | float) and not isinstance(value, bool)
            else json_kind(value)
        )
        raise DecodeError(f"json: cannot unmarshal {shown} into Go value of type int32")


def decode_error(
    resource: ResourceType, obj: dict[str, Any], *, prefixed: bool = True
) -> str | None:
    """The 400 message upstream answers when `obj` does not decode as `resource`, else None;
    without the `Kind in version` prefix when not `prefixed` (the patch handler's form)."""
    try:
        cls = resource_model(resource)
    except LookupError:
        return None
    try:
        _Decoder().model(obj, cls)
    except DecodeError as err:
        if not prefixed:
            return str(err)
        return (
            f'{resource.kind} in version "{resource.version}" cannot be handled as a '
            f"{resource.kind}: {err}"
        )
    return None
