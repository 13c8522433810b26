"""PodTopologySpreadArgs: decoding, upstream v1 defaults and validation.

Upstream: pkg/scheduler/apis/config/v1/defaults.go (SetDefaults_PodTopologySpreadArgs: an unset
defaultingType is System), pkg/scheduler/apis/config/validation/validation_pluginargs.go
(ValidatePodTopologySpreadArgs) and the system default constraints of
pkg/scheduler/framework/plugins/podtopologyspread/plugin.go. The first problem found raises
ArgsError with its field path, in upstream's order (defaultingType, then per constraint: maxSkew,
topologyKey, whenUnsatisfiable, labelSelector, duplicates) and with upstream's field messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apimachinery.validation import is_qualified_name
from scheduler.framework.registry import ArgsError, check_known_fields

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"


@dataclass(frozen=True, slots=True)
class DefaultConstraint:
    """A v1.TopologySpreadConstraint of the args (no labelSelector: it is deduced per pod)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: tuple[str, ...] = ()


# Upstream's systemDefaultConstraints (used when defaultingType is System).
SYSTEM_DEFAULT_CONSTRAINTS = (
    DefaultConstraint(3, LABEL_HOSTNAME, SCHEDULE_ANYWAY),
    DefaultConstraint(5, LABEL_TOPOLOGY_ZONE, SCHEDULE_ANYWAY),
)


@dataclass(frozen=True, slots=True)
class PodTopologySpreadArgs:
    default_constraints: tuple[DefaultConstraint, ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING

    @property
    def system_defaulted(self) -> bool:
        return self.defaulting_type == SYSTEM_DEFAULTING

    @property
    def effective_constraints(self) -> tuple[DefaultConstraint, ...]:
        """The constraints applied to pods without their own (upstream's New)."""
        if self.system_defaulted:
            return SYSTEM_DEFAULT_CONSTRAINTS
        return self.default_constraints


_CONSTRAINT_FIELDS = {
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "labelSelector",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
    "matchLabelKeys",
}


def decode_pod_topology_spread_args(raw: Mapping[str, Any] | None) -> PodTopologySpreadArgs:
    """Decode, default and validate; the first problem raises ArgsError with its field path."""
    raw = raw or {}
    check_known_fields(raw, {"apiVersion", "kind", "defaultConstraints", "defaultingType"}, "")
    if raw.get("kind", "PodTopologySpreadArgs") != "PodTopologySpreadArgs":
        raise ArgsError("kind", f'expected "PodTopologySpreadArgs", got "{raw["kind"]}"')
    defaulting_type = _expect(raw.get("defaultingType") or SYSTEM_DEFAULTING, str, "defaultingType")
    items = _expect(raw.get("defaultConstraints") or [], list, "defaultConstraints")
    decoded: list[tuple[DefaultConstraint, bool]] = []
    for index, item in enumerate(items):
        decoded.append(_decode_constraint(item, f"defaultConstraints[{index}]"))
    constraints = [c for c, _ in decoded]
    _validate_defaulting_type(defaulting_type, constraints)
    for index, (_, has_selector) in enumerate(decoded):
        _validate_constraint(constraints, index, has_selector)
    return PodTopologySpreadArgs(tuple(constraints), defaulting_type)


def _decode_constraint(item: Any, path: str) -> tuple[DefaultConstraint, bool]:
    item = _expect(item, Mapping, path)
    check_known_fields(item, _CONSTRAINT_FIELDS, path)
    max_skew = _expect(item.get("maxSkew", 0), int, f"{path}.maxSkew")
    key = _expect(item.get("topologyKey", ""), str, f"{path}.topologyKey")
    action = _expect(item.get("whenUnsatisfiable", ""), str, f"{path}.whenUnsatisfiable")
    min_domains = item.get("minDomains")
    if min_domains is not None:
        min_domains = _expect(min_domains, int, f"{path}.minDomains")
    affinity = item.get("nodeAffinityPolicy")
    if affinity is not None:
        affinity = _expect(affinity, str, f"{path}.nodeAffinityPolicy")
    taints = item.get("nodeTaintsPolicy")
    if taints is not None:
        taints = _expect(taints, str, f"{path}.nodeTaintsPolicy")
    keys_path = f"{path}.matchLabelKeys"
    keys = tuple(
        _expect(k, str, f"{keys_path}[{i}]")
        for i, k in enumerate(_expect(item.get("matchLabelKeys") or [], list, keys_path))
    )
    constraint = DefaultConstraint(max_skew, key, action, min_domains, affinity, taints, keys)
    return constraint, item.get("labelSelector") is not None


def _validate_defaulting_type(value: str, constraints: list[DefaultConstraint]) -> None:
    if value not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        raise ArgsError(
            "defaultingType",
            f'Unsupported value: "{value}": supported values: "{SYSTEM_DEFAULTING}", '
            f'"{LIST_DEFAULTING}"',
        )
    if value == SYSTEM_DEFAULTING and constraints:
        raise ArgsError(
            "defaultingType", f'Invalid value: "{value}": when .defaultConstraints are not empty'
        )


def _validate_constraint(
    constraints: list[DefaultConstraint], index: int, has_selector: bool
) -> None:
    path = f"defaultConstraints[{index}]"
    c = constraints[index]
    if c.max_skew <= 0:
        raise ArgsError(
            f"{path}.maxSkew", f"Invalid value: {c.max_skew}: not in valid range (0, inf)"
        )
    if not c.topology_key:
        raise ArgsError(f"{path}.topologyKey", "Required value: can not be empty")
    problem = qualified_name_problem(c.topology_key)
    if problem is not None:
        raise ArgsError(f"{path}.topologyKey", f'Invalid value: "{c.topology_key}": {problem}')
    if not c.when_unsatisfiable:
        raise ArgsError(f"{path}.whenUnsatisfiable", "Required value: can not be empty")
    if c.when_unsatisfiable not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        raise ArgsError(
            f"{path}.whenUnsatisfiable",
            f'Unsupported value: "{c.when_unsatisfiable}": supported values: '
            f'"{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"',
        )
    if has_selector:
        raise ArgsError(
            f"{path}.labelSelector",
            "Forbidden: constraint must not define a selector, as they deduced for each pod",
        )
    for other in constraints[:index]:
        if (other.topology_key, other.when_unsatisfiable) == (
            c.topology_key,
            c.when_unsatisfiable,
        ):
            raise ArgsError(
                path, f'Duplicate value: "{{{c.topology_key}, {c.when_unsatisfiable}}}"'
            )


def qualified_name_problem(value: str) -> str | None:
    """The first complaint of upstream's IsQualifiedName (ValidateLabelName), or None."""
    problems = is_qualified_name(value)
    return problems[0] if problems else None


_TYPE_NAMES = {int: "an integer", str: "a string", list: "a list", Mapping: "an object"}


def _expect(obj: Any, kind: Any, path: str) -> Any:
    if (isinstance(obj, bool) and kind is int) or not isinstance(obj, kind):
        raise ArgsError(path, f"expected {_TYPE_NAMES[kind]}, got {type(obj).__name__}")
    return obj
