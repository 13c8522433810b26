"""Structural schemas of CustomResourceDefinitions: their rules, and what they do to objects.

A CRD's `openAPIV3Schema` is checked once, when the CRD is written (`validate_structural`:
upstream's pkg/apiserver/schema/validation.go, ValidateStructural), and then applied to every
custom object written through it, in upstream's order (the customresource handler's decoder,
pkg/apiserver/schema/pruning and defaulting, then the strategy's validation):

1. `prune`: fields the schema does not specify are dropped (pkg/apiserver/schema/pruning),
   and reported, so that ?fieldValidation=Strict refuses them and Warn warns;
2. `apply_defaults`: `default` values fill missing fields (schema/defaulting/algorithm.go), and
   nulls of non-nullable fields without a default are dropped (defaulting/prunenulls.go);
3. `validate`: the value validations of kube-openapi's SchemaValidator, with its messages and
   field paths, turned into field errors as validation.go's kubeOpenAPIResultToFieldErrors does
   (`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer:
   "string"`).

Schemas are the CRD's JSON as stored (plain dicts), so nothing is converted or cached per object.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator
from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

from kubesim.validation_fields import (
    Cause,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)

Schema = dict[str, Any]

# the fields of metav1.ObjectMeta: what pruning keeps of `metadata` at the root
OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_ROOT_FIELDS = ("apiVersion", "kind", "metadata")
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]
# the JSONSchemaProps fields a nested value validation (allOf, anyOf, oneOf, not) may not set,
# with the form of upstream's message for each (validateNestedValueValidation)
_NESTED_FORBIDDEN: tuple[tuple[str, str], ...] = (
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("externalDocs", "must be undefined to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)


# A CRD's `pattern` is an RE2 expression, as Go's regexp (go-openapi's validate): matched in
# linear time, so no pattern can take the server down by backtracking ("^(a+)+$" against 28
# "a"s and "!" took Python's re 12 s); what RE2 cannot compile (back-references, look-around)
# is refused when the CRD is written, as the API server refuses it.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@functools.lru_cache(maxsize=256)
def re2_pattern(pattern: str) -> Any:
    """The compiled pattern (re2.error when RE2 cannot compile it)."""
    return re2.compile(pattern, _RE2_OPTIONS)


def re2_problem(pattern: str) -> str | None:
    """Go's "error parsing regexp: ..." for a pattern RE2 cannot compile, else None."""
    try:
        re2_pattern(pattern)
    except re2.error as exc:
        what = exc.args[0] if exc.args else exc
        text = what.decode(errors="replace") if isinstance(what, bytes) else str(what)
        return f"error parsing regexp: {text}"
    return None


def _key(path: str, key: str) -> str:
    return f"{path}[{key}]"


# ---- the CRD's schema: structural rules ------------------------------------------------------


def validate_structural(schema: Schema, path: str) -> list[Cause]:
    """Field errors of a schema that is not structural, sorted as upstream sorts them."""
    causes = _structural_invariants(schema, "root", path)
    return sorted(causes, key=lambda c: c.error())


def _structural_invariants(s: Any, level: str, path: str) -> list[Cause]:
    if not isinstance(s, dict):
        return []
    causes: list[Cause] = []
    kind = s.get("type") or ""
    if kind == "array" and s.get("items") is None:
        causes.append(required(f"{path}.items", "must be specified"))
    causes += _structural_invariants(s.get("items"), "item", f"{path}.items")
    for name, prop in (s.get("properties") or {}).items():
        causes += _structural_invariants(prop, "field", _key(f"{path}.properties", name))
    additional = s.get("additionalProperties")
    if additional is not None and additional is not True:
        if level == "root":
            causes.append(forbidden(f"{path}.additionalProperties", "must not be used at the root"))
        causes += _structural_invariants(additional, "field", f"{path}.additionalProperties")
    int_or_string = bool(s.get("x-kubernetes-int-or-string"))
    preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    if int_or_string and preserve:
        causes.append(
            invalid(
                f"{path}.x-kubernetes-preserve-unknown-fields",
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    if int_or_string and embedded:
        causes.append(
            invalid(
                f"{path}.x-kubernetes-embedded-resource",
                True,
                "must be false if x-kubernetes-int-or-string is true",
            )
        )
    causes += _value_validation(s, path)
    if embedded and kind != "object":
        detail = "must be object if x-kubernetes-embedded-resource is true"
        causes.append(
            invalid(f"{path}.type", kind, detail) if kind else required(f"{path}.type", detail)
        )
    elif not kind and not int_or_string and not preserve:
        where = {
            "root": "at the root",
            "item": "for specified array items",
            "field": "for specified object fields",
        }[level]
        causes.append(required(f"{path}.type", f"must not be empty {where}"))
    if level == "root" and kind and kind != "object":
        causes.append(invalid(f"{path}.type", kind, "must be object at the root"))
    check_metadata = level == "root" or embedded
    properties = s.get("properties") or {}
    for name in ("kind", "apiVersion"):
        prop = properties.get(name)
        if check_metadata and isinstance(prop, dict) and prop.get("type") != "string":
            causes.append(
                invalid(
                    f"{_key(f'{path}.properties', name)}.type",
                    prop.get("type") or "",
                    "must be string",
                )
            )
    metadata = properties.get("metadata")
    if isinstance(metadata, dict):
        meta_path = _key(f"{path}.properties", "metadata")
        if check_metadata and metadata.get("type") != "object":
            shown = metadata.get("type") or ""
            causes.append(invalid(f"{meta_path}.type", shown, "must be object"))
        if level == "root":
            extra = set(metadata) - {"type", "properties", "description"}
            props = set(metadata.get("properties") or {})
            if extra or not props <= {"name", "generateName"}:
                causes.append(
                    forbidden(
                        meta_path,
                        "must not specify anything other than name and "
                        "generateName, but metadata is implicitly specified",
                    )
                )
    if embedded and not preserve and not properties:
        causes.append(
            required(
                f"{path}.properties",
                "must not be empty if "
                "x-kubernetes-embedded-resource is true without "
                "x-kubernetes-preserve-unknown-fields",
            )
        )
    return causes


def _value_validation(s: Schema, path: str) -> list[Cause]:
    """allOf/anyOf/oneOf/not may only validate values, never specify structure; the two
    int-or-string patterns are the exceptions (anyOf: [integer, string], or first in allOf)."""
    causes: list[Cause] = []
    skip_any_of = s.get("anyOf") == _INT_OR_STRING_ANY_OF
    all_of = s.get("allOf") or []
    skip_first_all_of = bool(all_of) and (all_of[0] or {}).get("anyOf") == _INT_OR_STRING_ANY_OF
    if not skip_any_of:
        for i, nested in enumerate(s.get("anyOf") or []):
            causes += _nested(nested, False, f"{path}.anyOf[{i}]")
    for i, nested in enumerate(all_of):
        causes += _nested(nested, skip_first_all_of and i == 0, f"{path}.allOf[{i}]")
    for i, nested in enumerate(s.get("oneOf") or []):
        causes += _nested(nested, False, f"{path}.oneOf[{i}]")
    if s.get("not") is not None:
        causes += _nested(s["not"], False, f"{path}.not")
    pattern = s.get("pattern")
    if pattern:
        problem = re2_problem(str(pattern))
        if problem is not None:
            causes.append(
                invalid(
                    f"{path}.pattern",
                    pattern,
                    f"must be a valid regular expression, but isn't: {problem}",
                )
            )
    return causes


def _nested(v: Any, skip_any_of: bool, path: str) -> list[Cause]:
    if not isinstance(v, dict):
        return []
    causes = []
    if skip_any_of:
        v = {k: val for k, val in v.items() if k != "anyOf"}
    causes += _value_validation(v, path)
    causes += _nested(v.get("items"), False, f"{path}.items")
    for name, prop in (v.get("properties") or {}).items():
        causes += _nested(prop, False, _key(f"{path}.properties", name))
    for name, detail in _NESTED_FORBIDDEN:
        if v.get(name) not in (None, False, "", [], {}):
            causes.append(forbidden(f"{path}.{name}", detail))
    if "metadata" in (v.get("properties") or {}):
        causes.append(
            forbidden(
                _key(f"{path}.properties", "metadata"), "must not be specified in a nested context"
            )
        )
    return causes


def has_defaults(schema: Any) -> bool:
    if isinstance(schema, dict):
        return "default" in schema or any(has_defaults(v) for v in schema.values())
    if isinstance(schema, list):
        return any(has_defaults(v) for v in schema)
    return False


# ---- objects: pruning ------------------------------------------------------------------------


def prune(obj: dict[str, Any], schema: Schema) -> list[str]:
    """Drop the fields `schema` does not specify, in place; returns their paths (strict
    decoding's notation: "spec.foo", "spec.list[0].bar"). apiVersion, kind and metadata are
    kept at the root; metadata keeps ObjectMeta's fields."""
    pruned: list[str] = []
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for name in [k for k in meta if k not in OBJECT_META_FIELDS]:
            del meta[name]
            pruned.append(f"metadata.{name}")
    _prune(obj, schema, "", pruned, root=True)
    return pruned


def _prune(value: Any, s: Any, path: str, pruned: list[str], root: bool = False) -> None:
    if not isinstance(s, dict) or s.get("x-kubernetes-preserve-unknown-fields"):
        _prune_known(value, s, path, pruned)
        return
    if isinstance(value, dict):
        properties = s.get("properties") or {}
        additional = s.get("additionalProperties")
        embedded = root or bool(s.get("x-kubernetes-embedded-resource"))
        for name in list(value):
            child = f"{path}.{name}" if path else name
            if embedded and name in _ROOT_FIELDS:
                continue
            if name in properties:
                _prune(value[name], properties[name], child, pruned)
            elif isinstance(additional, dict):
                _prune(value[name], additional, child, pruned)
            elif additional is True:
                continue
            else:
                del value[name]
                pruned.append(child)
    elif isinstance(value, list):
        items = s.get("items")
        for index, item in enumerate(value):
            _prune(item, items, f"{path}[{index}]", pruned)


def _prune_known(value: Any, s: Any, path: str, pruned: list[str]) -> None:
    """Under x-kubernetes-preserve-unknown-fields, specified properties are still pruned."""
    if not isinstance(s, dict) or not isinstance(value, dict):
        return
    properties = s.get("properties") or {}
    for name, item in value.items():
        if name in properties:
            _prune(item, properties[name], f"{path}.{name}" if path else name, pruned)


# ---- objects: defaulting ---------------------------------------------------------------------


def apply_defaults(value: Any, s: Any) -> None:
    """Fill missing (or null, when not nullable) fields from their schema's `default`, in place,
    then drop the nulls of non-nullable fields that have none; defaults nest (algorithm.go)."""
    if not isinstance(s, dict):
        return
    if isinstance(value, dict):
        properties = s.get("properties") or {}
        for name, prop in properties.items():
            if not isinstance(prop, dict):
                continue
            if "default" in prop and (
                name not in value or (value[name] is None and not prop.get("nullable"))
            ):
                value[name] = copy.deepcopy(prop["default"])
        additional = s.get("additionalProperties")
        for name in list(value):
            prop = properties.get(name, additional if isinstance(additional, dict) else None)
            if not isinstance(prop, dict):
                continue
            if value[name] is None and "default" in prop and not prop.get("nullable"):
                value[name] = copy.deepcopy(prop["default"])
            if value[name] is None and not prop.get("nullable") and "default" not in prop:
                del value[name]  # prunenulls.go: PruneNonNullableNullsWithoutDefaults
                continue
            apply_defaults(value[name], prop)
    elif isinstance(value, list):
        items = s.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                if item is None and "default" in items and not items.get("nullable"):
                    value[index] = copy.deepcopy(items["default"])
                apply_defaults(value[index], items)


# ---- objects: value validation ---------------------------------------------------------------


def validate(obj: Any, schema: Schema) -> list[Cause]:
    """Field errors of `obj` against `schema`, as a 422's causes."""
    return list(_validate(obj, schema, ""))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _go_number(value: float | int) -> str:
    """A bound as Go's %v prints a float64: 1, 1.5, 1e+21."""
    number = float(value)
    if number.is_integer() and abs(number) < 1e21:
        return str(int(number))
    return repr(number)


def _types(s: Schema) -> list[str]:
    if s.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    kind = s.get("type")
    return [kind] if kind else []


def _type_ok(actual: str, types: list[str], value: Any) -> bool:
    if actual in types:
        return True
    if actual == "integer" and "number" in types:
        return True
    return actual == "number" and "integer" in types and float(value).is_integer()


def _validate(value: Any, s: Any, path: str) -> Iterator[Cause]:
    if not isinstance(s, dict):
        return
    name = path or "."
    types = _types(s)
    if value is None:
        if types and not s.get("nullable"):
            yield _type_invalid(path, name, ",".join(types), "null")
        return
    actual = _json_type(value)
    if types and not _type_ok(actual, types, value):
        yield _type_invalid(path, name, ",".join(types), actual)
        return
    yield from _junctors(value, s, path, name)
    if isinstance(value, str):
        yield from _string(value, s, path, name)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield from _number(value, s, path, name)
    elif isinstance(value, list):
        yield from _array(value, s, path, name)
    enum = s.get("enum")
    if enum is not None and value not in enum:
        allowed = [v if isinstance(v, str) else json.dumps(v, separators=(",", ":")) for v in enum]
        yield not_supported(path, value, allowed)
    if isinstance(value, dict):
        yield from _object(value, s, path, name)


def _type_invalid(path: str, name: str, expected: str, actual: str) -> Cause:
    cause = invalid(path, actual, f'{name} in body must be of type {expected}: "{actual}"')
    return Cause(cause.field, "FieldValueTypeInvalid", cause.message)


def _junctors(value: Any, s: Schema, path: str, name: str) -> Iterator[Cause]:
    for nested in s.get("allOf") or []:
        yield from _validate(value, nested, path)
    any_of = s.get("anyOf")
    if any_of and not any(not list(_validate(value, n, path)) for n in any_of):
        yield invalid(path, "", f"{name} in body must validate at least one schema (anyOf)")
    one_of = s.get("oneOf")
    if one_of and sum(1 for n in one_of if not list(_validate(value, n, path))) != 1:
        yield invalid(path, "", f"{name} in body must validate one and only one schema (oneOf)")
    if isinstance(s.get("not"), dict) and not list(_validate(value, s["not"], path)):
        yield invalid(path, "", f"{name} in body must not validate the schema (not)")


def _string(value: str, s: Schema, path: str, name: str) -> Iterator[Cause]:
    max_length, min_length = s.get("maxLength"), s.get("minLength")
    length = len(value)  # characters, as go-openapi's utf8.RuneCountInString
    if max_length is not None and length > max_length:
        yield too_long(path, int(max_length))
    if min_length is not None and length < min_length:
        yield invalid(path, value, f"{name} in body should be at least {min_length} chars long")
    pattern = s.get("pattern")
    if pattern and re2_pattern(str(pattern)).search(value) is None:
        yield invalid(path, value, f"{name} in body should match '{pattern}'")


def _number(value: float | int, s: Schema, path: str, name: str) -> Iterator[Cause]:
    maximum, minimum = s.get("maximum"), s.get("minimum")
    if maximum is not None:
        exclusive = bool(s.get("exclusiveMaximum"))
        if value > maximum or (exclusive and value == maximum):
            op = "less than" if exclusive else "less than or equal to"
            yield invalid(path, value, f"{name} in body should be {op} {_go_number(maximum)}")
    if minimum is not None:
        exclusive = bool(s.get("exclusiveMinimum"))
        if value < minimum or (exclusive and value == minimum):
            op = "greater than" if exclusive else "greater than or equal to"
            yield invalid(path, value, f"{name} in body should be {op} {_go_number(minimum)}")
    factor = s.get("multipleOf")
    if factor and (value / factor) != int(value / factor):
        yield invalid(path, value, f"{name} in body should be a multiple of {_go_number(factor)}")


def _array(value: list[Any], s: Schema, path: str, name: str) -> Iterator[Cause]:
    items = s.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            yield from _validate(item, items, f"{path}[{index}]")
    min_items, max_items = s.get("minItems"), s.get("maxItems")
    if min_items is not None and len(value) < min_items:
        yield invalid(path, len(value), f"{name} in body should have at least {min_items} items")
    if max_items is not None and len(value) > max_items:
        yield too_many(path, len(value), int(max_items))
    if s.get("uniqueItems"):
        seen = [json.dumps(v, sort_keys=True) for v in value]
        if len(set(seen)) != len(seen):
            yield invalid(path, "", f"{name} in body shouldn't contain duplicates")


def _object(value: dict[str, Any], s: Schema, path: str, name: str) -> Iterator[Cause]:
    for key in s.get("required") or []:
        if key not in value:
            yield required(f"{path}.{key}" if path else key)
    max_props, min_props = s.get("maxProperties"), s.get("minProperties")
    if max_props is not None and len(value) > max_props:
        yield too_many(path, len(value), int(max_props))
    if min_props is not None and len(value) < min_props:
        yield invalid(
            path, min_props, f"{name} in body should have at least {min_props} properties"
        )
    properties = s.get("properties") or {}
    additional = s.get("additionalProperties")
    for key, item in value.items():
        child = f"{path}.{key}" if path else key
        if key in properties:
            if not path and key == "metadata":
                continue  # ObjectMeta is validated as every kind's
            yield from _validate(item, properties[key], child)
        elif isinstance(additional, dict):
            yield from _validate(item, additional, child)
