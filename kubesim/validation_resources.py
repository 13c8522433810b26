"""Resource names and quantities in requests, limits, overhead and node capacity.

Ported from upstream's pkg/apis/core/validation/validation.go (ValidateResourceRequirements,
validateContainerResourceName, validateResourceName, ValidateResourceQuantityValue) and the
resource-name helpers of pkg/apis/core/helper.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from apimachinery.quantity import parse_canonical
from apimachinery.validation import is_qualified_name
from kubesim.validation_fields import NEGATIVE, Cause, invalid, invalid_each, required

# helper.standardResources and standardContainerResources
_STANDARD_RESOURCES = {
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage",
    "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
    "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports",
    "services.loadbalancers",
}  # fmt: skip
_STANDARD_CONTAINER_RESOURCES = {"cpu", "memory", "ephemeral-storage"}


def _is_extended_resource(name: str) -> bool:
    """helper.IsExtendedResourceName: prefixed, not kubernetes.io, usable as a quota key."""
    if _is_native_resource(name) or name.startswith("requests."):
        return False
    return not is_qualified_name(f"requests.{name}")


def container_resource_name(name: str, path: str) -> list[Cause]:
    """validateContainerResourceName (with validateResourceName first)."""
    causes = invalid_each(path, name, is_qualified_name(name))
    if causes:
        return causes
    if "/" not in name:
        if name not in _STANDARD_RESOURCES and not name.startswith("hugepages-"):
            causes.append(
                invalid(path, name, "must be a standard resource type or fully qualified")
            )
        if name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            causes.append(invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native_resource(name) and not _is_extended_resource(name):
        causes.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return causes


def _is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _overcommit_allowed(name: str) -> bool:
    return _is_native_resource(name) and not name.startswith("hugepages-")


def _quantity(value: Any, path: str, causes: list[Cause]) -> tuple[Fraction, str] | None:
    """Parse a quantity, recording a field error; (value, canonical string) when it parses."""
    try:
        parsed, text, _ = parse_canonical(value)
    except (ValueError, TypeError) as err:
        causes.append(invalid(path, value if isinstance(value, str) else str(value), str(err)))
        return None
    return parsed, text


def validate_resource_quantity(name: str, value: Any, path: str) -> list[Cause]:
    """Upstream's ValidateResourceQuantityValue: parsable, >= 0, whole for extended resources."""
    causes: list[Cause] = []
    parsed = _quantity(value, path, causes)
    if parsed is None:
        return causes
    amount, text = parsed
    if amount < 0:
        causes.append(invalid(path, text, NEGATIVE))
    if not _is_native_resource(name) and amount.denominator != 1:
        causes.append(invalid(path, text, "must be an integer"))
    return causes


def validate_resource_requirements(resources: Any, path: str) -> list[Cause]:
    if not isinstance(resources, Mapping):
        return []
    causes: list[Cause] = []
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    parsed_limits: dict[str, tuple[Fraction, str]] = {}
    for name, value in limits.items():
        res_path = f"{path}.limits[{name}]"
        causes += container_resource_name(name, res_path)
        errs = validate_resource_quantity(name, value, res_path)
        causes += errs
        if not errs:
            parsed_limits[name] = _quantity(value, res_path, []) or (Fraction(0), "0")
    for name, value in requests.items():
        res_path = f"{path}.requests[{name}]"
        causes += container_resource_name(name, res_path)
        errs = validate_resource_quantity(name, value, res_path)
        causes += errs
        if errs:
            continue
        amount, text = _quantity(value, res_path, []) or (Fraction(0), "0")
        if name in parsed_limits:
            limit, limit_text = parsed_limits[name]
            if amount != limit and not _overcommit_allowed(name):
                causes.append(
                    invalid(
                        f"{path}.requests", text, f"must be equal to {name} limit of {limit_text}"
                    )
                )
            elif amount > limit:
                detail = f"must be less than or equal to {name} limit of {limit_text}"
                causes.append(invalid(f"{path}.requests", text, detail))
        elif not _overcommit_allowed(name) and name not in limits:
            causes.append(
                required(f"{path}.limits", "Limit must be set for non overcommitable resources")
            )
    return causes
