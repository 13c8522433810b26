"""Typed reads from decoded JSON that name the field path when the type is wrong.

Kept lean: these run for every field of every pod and node the informers see.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeGuard

from scheduler.api.errors import MalformedObject

EMPTY: Mapping[str, Any] = {}


def is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """isinstance(value, Mapping), answered at once for a dict (decoded JSON's objects), a
    read-only view of one and an absent field (None): the ABC's check costs a Python call, and
    some of these run for every pod on every cycle."""
    cls = value.__class__
    if cls is dict or cls is MappingProxyType:
        return True
    return value is not None and isinstance(value, Mapping)


def as_mapping(value: Any, path: str) -> Mapping[str, Any]:
    """`value` as an object; None (field absent or null) reads as empty."""
    if value.__class__ is dict:
        return value
    if value is None:
        return EMPTY
    if isinstance(value, Mapping):
        return value
    raise MalformedObject(f"{path}: expected an object, got {type(value).__name__}")


def as_list(value: Any, path: str) -> list[Any]:
    if value.__class__ is list:
        return value
    if value is None:
        return []
    if isinstance(value, tuple):
        return list(value)
    raise MalformedObject(f"{path}: expected a list, got {type(value).__name__}")


def as_str(value: Any, path: str, default: str = "") -> str:
    if value.__class__ is str:
        return value
    if value is None:
        return default
    raise MalformedObject(f"{path}: expected a string, got {type(value).__name__}")


def as_int(value: Any, path: str, default: int = 0) -> int:
    if value.__class__ is int:
        return value
    if value is None:
        return default
    raise MalformedObject(f"{path}: expected an integer, got {type(value).__name__}")


def as_bool(value: Any, path: str, default: bool = False) -> bool:
    if value is None:
        return default
    if value.__class__ is bool:
        return value
    raise MalformedObject(f"{path}: expected a boolean, got {type(value).__name__}")


def as_str_map(value: Any, path: str) -> Mapping[str, str]:
    """A string → string object (labels, annotations, nodeSelector)."""
    mapping = as_mapping(value, path)
    for key, item in mapping.items():
        if item.__class__ is not str:
            raise MalformedObject(f"{path}.{key}: expected a string, got {type(item).__name__}")
    return mapping
