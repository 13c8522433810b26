"""How Go's encoding/json names a decoded JSON value in its UnmarshalTypeError ("expected
string, got number"): the words both kubesim's decoder errors and the extenders' wire-format
errors use, so that the two report a value of the wrong type alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def json_kind(value: Any) -> str:
    """One of "bool", "number", "string", "array" and "object" for a value decoded from JSON; the
    Python type's name for anything else (which decoded JSON never holds)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__
