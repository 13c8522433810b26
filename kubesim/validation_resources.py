"""Resource names and quantities in requests, limits, overhead and node capacity.

Ported from upstream's pkg/apis/core/validation/validation.go (ValidateResourceRequirements,
validateContainerResourceName, validateResourceName, ValidateResourceQuantityValue) and the
resource-name helpers of pkg/apis/core/helper.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from apimachinery.quantity import QuantityFormat, format_quantity, parse_canonical
from apimachinery.validation import is_qualified_name
from kubesim.validation_fields import (
    NEGATIVE,
    Cause,
    forbidden,
    invalid,
    invalid_each,
    not_supported,
    required,
)

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
    return _container_resource_name(name, path)


def _container_resource_name(name: str, path: str) -> list[Cause]:
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


def validate_resource_requirements(
    resources: Any, path: str, name_check: Callable[[str, str], list[Cause]] | None = None
) -> list[Cause]:
    """ValidateResourceRequirements; `name_check` defaults to the containers' name rule."""
    if not isinstance(resources, Mapping):
        return []
    container_resource_name = name_check or _container_resource_name
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


# ---- pod-level resources (spec.resources) -----------------------------------------------------
# Upstream: pkg/apis/core/validation/validation.go validatePodResources,
# validatePodResourceName and validatePodResourceConsistency (PodLevelResources, on since v1.34).

_POD_LEVEL_SUPPORTED = ("cpu", "hugepages-", "memory")


def _pod_resource_name(name: str, path: str) -> list[Cause]:
    causes = invalid_each(path, name, is_qualified_name(name))
    if causes:
        return causes
    if "/" not in name and name not in _STANDARD_RESOURCES and not name.startswith("hugepages-"):
        return [invalid(path, name, "must be a standard resource type or fully qualified")]
    if name in ("cpu", "memory") or name.startswith("hugepages-"):
        return []
    return [not_supported(path, name, _POD_LEVEL_SUPPORTED)]


_Sum = tuple[Fraction, QuantityFormat]


def _add_to(total: dict[str, _Sum], name: str, amount: Fraction, fmt: QuantityFormat) -> None:
    # Quantity.Add keeps the receiver's format: the first amount's.
    if name in total:
        total[name] = (total[name][0] + amount, total[name][1])
    else:
        total[name] = (amount, fmt)


def _aggregate_containers(spec: Mapping[str, Any], kind: str) -> dict[str, _Sum]:
    """resourcehelper.AggregateContainerRequests / Limits of the spec (the sidecar rule)."""

    def amounts(container: Any) -> dict[str, _Sum]:
        values = (
            ((container.get("resources") or {}).get(kind) or {})
            if isinstance(container, Mapping)
            else {}
        )
        result: dict[str, _Sum] = {}
        for name, value in values.items():
            try:
                amount, _, fmt = parse_canonical(value)
            except (ValueError, TypeError):
                continue  # reported by the requirement checks
            result[name] = (amount, fmt)
        return result

    total: dict[str, _Sum] = {}
    for container in spec.get("containers") or []:
        for name, (amount, fmt) in amounts(container).items():
            _add_to(total, name, amount, fmt)
    sidecars: dict[str, _Sum] = {}
    init_max: dict[str, _Sum] = {}
    for container in spec.get("initContainers") or []:
        own = amounts(container)
        restartable = isinstance(container, Mapping) and container.get("restartPolicy") == "Always"
        if restartable:
            for name, (amount, fmt) in own.items():
                _add_to(total, name, amount, fmt)
                _add_to(sidecars, name, amount, fmt)
            effective = dict(sidecars)
        else:
            effective = dict(own)
            for name, (amount, fmt) in sidecars.items():
                _add_to(effective, name, amount, fmt)
        for name, value in effective.items():
            if name not in init_max or value[0] > init_max[name][0]:
                init_max[name] = value
    for name, value in init_max.items():
        if name not in total or value[0] > total[name][0]:
            total[name] = value
    return total


def validate_pod_level_resources(spec: Mapping[str, Any], path: str) -> list[Cause]:
    """validatePodResources for spec.resources; [] when it is not set."""
    resources = spec.get("resources")
    if not isinstance(resources, Mapping):
        return []
    os_name = (spec.get("os") or {}).get("name") if isinstance(spec.get("os"), Mapping) else None
    if os_name == "windows":
        return [forbidden(path, "may not be set for a windows pod")]
    causes = validate_resource_requirements(resources, path, _pod_resource_name)
    if causes:
        return causes
    causes += _pod_resource_consistency(spec, resources, path)
    return causes


def _pod_resource_consistency(
    spec: Mapping[str, Any], resources: Mapping[str, Any], path: str
) -> list[Cause]:
    causes: list[Cause] = []
    pod_requests = dict(resources.get("requests") or {})
    pod_limits = dict(resources.get("limits") or {})
    for name, (aggregate, fmt) in sorted(_aggregate_containers(spec, "requests").items()):
        if name not in pod_requests:
            continue
        amount, text, _ = parse_canonical(pod_requests[name])
        if aggregate > amount:
            causes.append(
                invalid(
                    f"{path}.requests[{name}]",
                    text,
                    "must be greater than or equal to aggregate container requests of "
                    f"{format_quantity(aggregate, fmt)}",
                )
            )
    for name, (aggregate, fmt) in sorted(_aggregate_containers(spec, "limits").items()):
        if not name.startswith("hugepages-") or name not in pod_limits:
            continue
        amount, text, _ = parse_canonical(pod_limits[name])
        if aggregate > amount:
            causes.append(
                invalid(
                    f"{path}.limits[{name}]",
                    text,
                    "must be greater than or equal to aggregate container limits of "
                    f"{format_quantity(aggregate, fmt)}",
                )
            )
    for index, container in enumerate(spec.get("containers") or []):
        if not isinstance(container, Mapping):
            continue
        limits = (container.get("resources") or {}).get("limits") or {}
        for name, value in sorted(limits.items()):
            if name not in pod_limits:
                continue
            try:
                amount, text, _ = parse_canonical(value)
            except (ValueError, TypeError):
                continue
            pod_amount, pod_text, _ = parse_canonical(pod_limits[name])
            if amount > pod_amount:
                # upstream builds this path from the pod-level resources' path
                causes.append(
                    invalid(
                        f"{path}.containers[{index}][{name}].limits",
                        text,
                        f"must be less than or equal to pod limits of {pod_text}",
                    )
                )
    return causes
