"""Field errors as the API server reports them (k8s.io/apimachinery/pkg/util/validation/field).

Each constructor builds one `Cause`, an entry of a 422 Status's details.causes, with upstream's
reason and ErrorBody text, e.g. `Unsupported value: "x": supported values: "a", "b"`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

NEGATIVE = "must be greater than or equal to 0"
NOT_POSITIVE = "must be greater than zero"


@dataclass(frozen=True, slots=True)
class Cause:
    """One field error: a StatusCause {type: reason, field, message}."""

    field: str
    reason: str  # FieldValueInvalid, FieldValueRequired, FieldValueNotSupported...
    message: str  # upstream's ErrorBody: `Invalid value: "x": detail`

    def error(self) -> str:
        return f"{self.field}: {self.message}"


def go_value(value: Any) -> str:
    """A bad value as upstream prints it: strings quoted (%q), numbers and bools bare."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def invalid(path: str, value: Any, detail: str) -> Cause:
    message = f"Invalid value: {go_value(value)}"
    return Cause(path, "FieldValueInvalid", f"{message}: {detail}" if detail else message)


def required(path: str, detail: str = "") -> Cause:
    return Cause(
        path, "FieldValueRequired", f"Required value: {detail}" if detail else "Required value"
    )


def forbidden(path: str, detail: str) -> Cause:
    return Cause(path, "FieldValueForbidden", f"Forbidden: {detail}")


def duplicate(path: str, value: Any, detail: str = "") -> Cause:
    message = f"Duplicate value: {go_value(value)}"
    return Cause(path, "FieldValueDuplicate", f"{message}: {detail}" if detail else message)


def not_supported(path: str, value: Any, supported: Iterable[str]) -> Cause:
    listed = ", ".join(json.dumps(s) for s in supported)
    return Cause(
        path,
        "FieldValueNotSupported",
        f"Unsupported value: {go_value(value)}: supported values: {listed}",
    )


def too_long(path: str, limit: int) -> Cause:
    return Cause(path, "FieldValueTooLong", f"Too long: must have at most {limit} bytes")


def invalid_each(path: str, value: Any, messages: list[str]) -> list[Cause]:
    return [invalid(path, value, msg) for msg in messages]


def too_many(path: str, actual: int, limit: int) -> Cause:
    """field.TooMany: the number of items, never the items themselves."""
    return Cause(path, "FieldValueTooMany", f"Too many: {actual}: must have at most {limit} items")


def not_found(path: str, value: Any, detail: str = "") -> Cause:
    message = f"Not found: {go_value(value)}"
    return Cause(path, "FieldValueNotFound", f"{message}: {detail}" if detail else message)
