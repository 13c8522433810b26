"""NodeResourcesFitArgs: decoding, upstream v1 defaults and validation.

Upstream: pkg/scheduler/apis/config/v1/defaults.go (SetDefaults_NodeResourcesFitArgs) and
pkg/scheduler/apis/config/validation/validation_pluginargs.go (ValidateNodeResourcesFitArgs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apimachinery.validation import QualifiedNameViolation, qualified_name_violations
from scheduler.framework.registry import ArgsError, check_known_fields

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
MAX_CUSTOM_PRIORITY_SCORE = 10  # shape scores are 0..10, scaled to 0..100


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int = 1


@dataclass(frozen=True, slots=True)
class UtilizationShapePoint:
    utilization: int
    score: int


DEFAULT_RESOURCES = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[UtilizationShapePoint, ...] = ()  # requestedToCapacityRatio.shape


@dataclass(frozen=True, slots=True)
class NodeResourcesFitArgs:
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = ScoringStrategy()


_PREFIX_INVALID = (
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character"
)
# IsQualifiedName's rules (apimachinery.validation), worded as these args always were: one
# complaint, a name with more than one '/' read as an invalid prefix.
_QUALIFIED_NAME_PROBLEMS = {
    QualifiedNameViolation.TOO_MANY_PARTS: _PREFIX_INVALID,
    QualifiedNameViolation.PREFIX_EMPTY: "prefix part must be non-empty",
    QualifiedNameViolation.PREFIX_TOO_LONG: _PREFIX_INVALID,
    QualifiedNameViolation.PREFIX_INVALID: _PREFIX_INVALID,
    QualifiedNameViolation.NAME_EMPTY: "name part must be non-empty",
    QualifiedNameViolation.NAME_TOO_LONG: "name part must be no more than 63 characters",
    QualifiedNameViolation.NAME_INVALID: (
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
        "and end with an alphanumeric character"
    ),
}


def _qualified_name_problem(value: str) -> str | None:
    """Upstream's IsQualifiedName check (ValidateLabelName), reduced to its first complaint."""
    violations = qualified_name_violations(value)
    return _QUALIFIED_NAME_PROBLEMS[violations[0]] if violations else None


def _invalid(value: Any, detail: str) -> str:
    shown = f'"{value}"' if isinstance(value, str) else str(value)
    return f"Invalid value: {shown}: {detail}"


def _expect(obj: Any, kind: type | tuple[type, ...], path: str, what: str) -> Any:
    if (isinstance(obj, bool) and kind is int) or not isinstance(obj, kind):
        raise ArgsError(path, f"expected {what}, got {type(obj).__name__}")
    return obj


def _string_list(raw: Any, path: str) -> tuple[str, ...]:
    items = _expect(raw, list, path, "a list")
    return tuple(_expect(item, str, f"{path}[{i}]", "a string") for i, item in enumerate(items))


def decode_node_resources_fit_args(raw: Mapping[str, Any] | None) -> NodeResourcesFitArgs:
    """Decode, default and validate; the first problem raises ArgsError with its field path."""
    raw = raw or {}
    check_known_fields(
        raw,
        {"apiVersion", "kind", "ignoredResources", "ignoredResourceGroups", "scoringStrategy"},
        "",
    )
    if raw.get("kind", "NodeResourcesFitArgs") != "NodeResourcesFitArgs":
        raise ArgsError("kind", f'expected "NodeResourcesFitArgs", got "{raw["kind"]}"')
    ignored = _string_list(raw.get("ignoredResources") or [], "ignoredResources")
    groups = _string_list(raw.get("ignoredResourceGroups") or [], "ignoredResourceGroups")
    for i, name in enumerate(ignored):
        problem = _qualified_name_problem(name)
        if problem:
            raise ArgsError(f"ignoredResources[{i}]", _invalid(name, problem))
    for i, group in enumerate(groups):
        if "/" in group:
            raise ArgsError(
                f"ignoredResourceGroups[{i}]",
                _invalid(group, "resource group name can't contain '/'"),
            )
        problem = _qualified_name_problem(group)
        if problem:
            raise ArgsError(f"ignoredResourceGroups[{i}]", _invalid(group, problem))
    strategy = _decode_strategy(raw.get("scoringStrategy"))
    return NodeResourcesFitArgs(ignored, groups, strategy)


def _decode_strategy(raw: Any) -> ScoringStrategy:
    path = "scoringStrategy"
    if raw is None:
        return ScoringStrategy()
    _expect(raw, Mapping, path, "an object")
    check_known_fields(raw, {"type", "resources", "requestedToCapacityRatio"}, path)
    strategy_type = raw.get("type", "")
    if strategy_type not in SCORING_STRATEGY_TYPES:
        supported = ", ".join(f'"{t}"' for t in SCORING_STRATEGY_TYPES)
        raise ArgsError(
            f"{path}.type", f'Unsupported value: "{strategy_type}": supported values: {supported}'
        )
    resources = _decode_resources(raw.get("resources") or [], f"{path}.resources")
    shape: tuple[UtilizationShapePoint, ...] = ()
    ratio = raw.get("requestedToCapacityRatio")
    if ratio is not None:
        ratio_path = f"{path}.requestedToCapacityRatio"
        _expect(ratio, Mapping, ratio_path, "an object")
        check_known_fields(ratio, {"shape"}, ratio_path)
        shape = _decode_shape(ratio.get("shape") or [], f"{ratio_path}.shape")
    elif strategy_type == REQUESTED_TO_CAPACITY_RATIO:
        raise ArgsError(f"{path}.requestedToCapacityRatio", "Required value")
    return ScoringStrategy(strategy_type, resources or DEFAULT_RESOURCES, shape)


def _decode_resources(raw: Any, path: str) -> tuple[ResourceSpec, ...]:
    specs = []
    for i, item in enumerate(_expect(raw, list, path, "a list")):
        item_path = f"{path}[{i}]"
        _expect(item, Mapping, item_path, "an object")
        check_known_fields(item, {"name", "weight"}, item_path)
        name = _expect(item.get("name", ""), str, f"{item_path}.name", "a string")
        weight = _expect(item.get("weight", 0), int, f"{item_path}.weight", "an integer")
        weight = weight or 1  # upstream v1 defaulting: an unset weight is 1
        if weight <= 0 or weight > 100:
            raise ArgsError(
                f"{item_path}.weight",
                _invalid(weight, f"resource weight of {name} not in valid range (0, 100]"),
            )
        specs.append(ResourceSpec(name, weight))
    return tuple(specs)


def _decode_shape(raw: Any, path: str) -> tuple[UtilizationShapePoint, ...]:
    items = _expect(raw, list, path, "a list")
    if not items:
        raise ArgsError(path, "Required value: at least one point must be specified")
    points = []
    for i, item in enumerate(items):
        item_path = f"{path}[{i}]"
        _expect(item, Mapping, item_path, "an object")
        check_known_fields(item, {"utilization", "score"}, item_path)
        utilization = _expect(
            item.get("utilization", 0), int, f"{item_path}.utilization", "an integer"
        )
        score = _expect(item.get("score", 0), int, f"{item_path}.score", "an integer")
        points.append(UtilizationShapePoint(utilization, score))
    for i in range(1, len(points)):
        if points[i - 1].utilization >= points[i].utilization:
            raise ArgsError(
                f"{path}[{i}].utilization",
                _invalid(
                    points[i].utilization, "utilization values must be sorted in increasing order"
                ),
            )
    for i, point in enumerate(points):
        if not 0 <= point.utilization <= 100:
            raise ArgsError(
                f"{path}[{i}].utilization",
                _invalid(point.utilization, "not in valid range [0, 100]"),
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ArgsError(
                f"{path}[{i}].score",
                _invalid(point.score, f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"),
            )
    return tuple(points)
