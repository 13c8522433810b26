"""kubesim.crd_schema: structural schemas' rules, pruning, defaulting and value validation, as
facts in the form of upstream's tests (apiextensions-apiserver pkg/apiserver/schema/
validation_test.go, pruning/algorithm_test.go, defaulting/algorithm_test.go; kube-openapi's
validate tests for the messages, converted by validation.go's kubeOpenAPIResultToFieldErrors)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim import crd_schema

OBJ = {"type": "object"}


def schema(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


# ---- structural rules ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "errors"),
    [
        (schema(spec=schema(replicas={"type": "integer"})), []),
        ({"properties": {}}, ["s.type: Required value: must not be empty at the root"]),
        ({"type": "string"}, ['s.type: Invalid value: "string": must be object at the root']),
        (
            schema(spec={"properties": {}}),
            [
                "s.properties[spec].type: Required value: must not be empty for specified object "
                "fields"
            ],
        ),
        (
            schema(list={"type": "array"}),
            ["s.properties[list].items: Required value: must be specified"],
        ),
        (
            schema(list={"type": "array", "items": {}}),
            [
                "s.properties[list].items.type: Required value: must not be empty for specified "
                "array "
                "items"
            ],
        ),
        (schema(free={"x-kubernetes-preserve-unknown-fields": True}), []),
        (
            schema(
                port={
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                }
            ),
            [],
        ),
        (
            schema(
                port={
                    "x-kubernetes-int-or-string": True,
                    "x-kubernetes-preserve-unknown-fields": True,
                }
            ),
            [
                "s.properties[port].x-kubernetes-preserve-unknown-fields: Invalid value: true: "
                "must be "
                "false if x-kubernetes-int-or-string is true"
            ],
        ),
        (
            {"type": "object", "additionalProperties": {"type": "string"}},
            ["s.additionalProperties: Forbidden: must not be used at the root"],
        ),
        (
            schema(a={"type": "string", "anyOf": [{"type": "string"}]}),
            ["s.properties[a].anyOf[0].type: Forbidden: must be empty to be structural"],
        ),
        (
            schema(a={"type": "string", "allOf": [{"default": "x"}]}),
            ["s.properties[a].allOf[0].default: Forbidden: must be undefined to be structural"],
        ),
        (
            schema(a={"type": "object", "oneOf": [{"properties": {"metadata": {}}}]}),
            [
                "s.properties[a].oneOf[0].properties[metadata]: Forbidden: must not be specified "
                "in a "
                "nested context"
            ],
        ),
        (
            schema(kind={"type": "integer"}),
            ['s.properties[kind].type: Invalid value: "integer": must be string'],
        ),
        (
            schema(metadata={"type": "object", "properties": {"labels": OBJ}}),
            [
                "s.properties[metadata]: Forbidden: must not specify anything other than name and "
                "generateName, but metadata is implicitly specified"
            ],
        ),
        (schema(metadata={"type": "object", "properties": {"name": {"type": "string"}}}), []),
        (
            schema(embedded={"type": "object", "x-kubernetes-embedded-resource": True}),
            [
                "s.properties[embedded].properties: Required value: must not be empty if "
                "x-kubernetes-embedded-resource is true without "
                "x-kubernetes-preserve-unknown-fields"
            ],
        ),
    ],
)
def test_structural_rules(given: dict[str, Any], errors: list[str]) -> None:
    assert [c.error() for c in crd_schema.validate_structural(given, "s")] == errors


# ---- pruning -----------------------------------------------------------------------------------

PRUNING = schema(
    spec=schema(
        known={"type": "string"},
        nested=schema(a={"type": "integer"}),
        list={"type": "array", "items": schema(x={"type": "string"})},
        labels={"type": "object", "additionalProperties": {"type": "string"}},
        free={
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"inner": schema(b={"type": "string"})},
        },
    ),
)


@pytest.mark.parametrize(
    ("obj", "kept", "pruned"),
    [
        (
            {"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n"}, "unknown": 1},
            {"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n"}},
            ["unknown"],
        ),
        ({"spec": {"known": "x", "other": 1}}, {"spec": {"known": "x"}}, ["spec.other"]),
        ({"spec": {"nested": {"a": 1, "b": 2}}}, {"spec": {"nested": {"a": 1}}}, ["spec.nested.b"]),
        (
            {"spec": {"list": [{"x": "1", "y": 2}, {"z": 3}]}},
            {"spec": {"list": [{"x": "1"}, {}]}},
            ["spec.list[0].y", "spec.list[1].z"],
        ),
        ({"spec": {"labels": {"any": "v"}}}, {"spec": {"labels": {"any": "v"}}}, []),
        (
            {"spec": {"free": {"anything": {"goes": 1}, "inner": {"b": "k", "c": 1}}}},
            {"spec": {"free": {"anything": {"goes": 1}, "inner": {"b": "k"}}}},
            ["spec.free.inner.c"],
        ),
        ({"metadata": {"name": "n", "bogus": 1}}, {"metadata": {"name": "n"}}, ["metadata.bogus"]),
    ],
)
def test_pruning(obj: dict[str, Any], kept: dict[str, Any], pruned: list[str]) -> None:
    assert crd_schema.prune(obj, PRUNING) == pruned
    assert obj == kept


# ---- defaulting --------------------------------------------------------------------------------

DEFAULTING = schema(
    spec=schema(
        replicas={"type": "integer", "default": 1},
        mode={"type": "string", "default": "Fast"},
        nullable={"type": "string", "nullable": True, "default": "d"},
        plain={"type": "string"},
        nested={
            "type": "object",
            "default": {},
            "properties": {"depth": {"type": "integer", "default": 3}},
        },
        list={
            "type": "array",
            "items": schema(name={"type": "string"}, weight={"type": "integer", "default": 10}),
        },
    ),
)


@pytest.mark.parametrize(
    ("obj", "defaulted"),
    [
        (
            {"spec": {}},
            {"spec": {"replicas": 1, "mode": "Fast", "nullable": "d", "nested": {"depth": 3}}},
        ),
        (
            {"spec": {"replicas": 5, "mode": "Slow", "nullable": None, "nested": {"depth": 0}}},
            {"spec": {"replicas": 5, "mode": "Slow", "nullable": None, "nested": {"depth": 0}}},
        ),
        # a null of a non-nullable field is defaulted, or dropped when it has no default
        (
            {"spec": {"replicas": None, "plain": None}},
            {"spec": {"replicas": 1, "mode": "Fast", "nullable": "d", "nested": {"depth": 3}}},
        ),
        (
            {"spec": {"list": [{"name": "a"}, {"name": "b", "weight": 2}]}},
            {
                "spec": {
                    "replicas": 1,
                    "mode": "Fast",
                    "nullable": "d",
                    "nested": {"depth": 3},
                    "list": [{"name": "a", "weight": 10}, {"name": "b", "weight": 2}],
                }
            },
        ),
        ({}, {}),
    ],
)
def test_defaulting(obj: dict[str, Any], defaulted: dict[str, Any]) -> None:
    crd_schema.apply_defaults(obj, DEFAULTING)
    assert obj == defaulted


def test_defaults_are_copies() -> None:
    first: dict[str, Any] = {"spec": {}}
    crd_schema.apply_defaults(first, DEFAULTING)
    first["spec"]["nested"]["depth"] = 99
    second: dict[str, Any] = {"spec": {}}
    crd_schema.apply_defaults(second, DEFAULTING)
    assert second["spec"]["nested"] == {"depth": 3}


# ---- value validation ---------------------------------------------------------------------------

VALIDATION = schema(
    spec={
        "type": "object",
        "required": ["size"],
        "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 10},
            "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
            "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
            "mode": {"type": "string", "enum": ["Fast", "Slow"]},
            "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"}},
            "port": {
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            },
            "note": {"type": "string", "nullable": True},
            "flag": {"type": "boolean"},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    },
)


@pytest.mark.parametrize(
    ("spec", "errors"),
    [
        (
            {
                "size": 3,
                "ratio": 0.5,
                "name": "ab",
                "mode": "Fast",
                "tags": ["a"],
                "port": 80,
                "note": None,
                "flag": True,
                "free": {"x": [1]},
            },
            [],
        ),
        ({"size": 3, "port": "http"}, []),
        ({"size": 3.0}, []),  # a float with an integer value is an integer
        ({}, ["spec.size: Required value"]),
        (
            {"size": "3"},
            [
                'spec.size: Invalid value: "string": spec.size in body must be of type integer: '
                '"string"'
            ],
        ),
        (
            {"size": 1.5},
            [
                'spec.size: Invalid value: "number": spec.size in body must be of type integer: '
                '"number"'
            ],
        ),
        (
            {"size": 0},
            ["spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"],
        ),
        (
            {"size": 11},
            ["spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"],
        ),
        (
            {"size": 1, "ratio": 0},
            ["spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"],
        ),
        (
            {"size": 1, "name": "a"},
            ['spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long'],
        ),
        ({"size": 1, "name": "abcdef"}, ["spec.name: Too long: must have at most 5 bytes"]),
        (
            {"size": 1, "name": "AB"},
            ["spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"],
        ),
        (
            {"size": 1, "mode": "Medium"},
            ['spec.mode: Unsupported value: "Medium": supported values: "Fast", "Slow"'],
        ),
        (
            {"size": 1, "tags": []},
            ["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"],
        ),
        (
            {"size": 1, "tags": ["a", "b", "c"]},
            ["spec.tags: Too many: 3: must have at most 2 items"],
        ),
        (
            {"size": 1, "tags": ["a", 2]},
            [
                'spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type '
                "string: "
                '"integer"'
            ],
        ),
        (
            {"size": 1, "port": True},
            [
                'spec.port: Invalid value: "boolean": spec.port in body must be of type '
                'integer,string: "boolean"'
            ],
        ),
        (
            {"size": 1, "flag": None},
            ['spec.flag: Invalid value: "null": spec.flag in body must be of type boolean: "null"'],
        ),
    ],
)
def test_value_validation(spec: dict[str, Any], errors: list[str]) -> None:
    causes = crd_schema.validate({"spec": spec}, VALIDATION)
    assert [c.error() for c in causes] == errors


def test_validation_reasons_are_upstreams() -> None:
    causes = crd_schema.validate({"spec": {"size": "x", "mode": "M"}}, VALIDATION)
    assert [c.reason for c in causes] == ["FieldValueTypeInvalid", "FieldValueNotSupported"]
    assert crd_schema.validate({"spec": {}}, VALIDATION)[0].reason == "FieldValueRequired"


def test_validation_leaves_the_object_alone() -> None:
    obj = {"spec": {"size": 3, "tags": ["a"]}}
    before = copy.deepcopy(obj)
    crd_schema.validate(obj, VALIDATION)
    assert obj == before
