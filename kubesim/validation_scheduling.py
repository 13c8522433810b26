"""Validation of the pod fields the scheduler reads: selectors, affinity, topology spread, gates.

Ported from upstream's pkg/apis/core/validation/validation.go (validateAffinity,
ValidateNodeSelector*, validatePodAffinityTerm, validateTopologySpreadConstraints,
validateSchedulingGates) and k8s.io/apimachinery/pkg/apis/meta/v1/validation
(ValidateLabelSelector), with their field paths and messages. Values of the wrong JSON type never
get here: the decoder check (validation_decode) refuses them first, so non-objects are skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apimachinery.validation import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
)
from kubesim.validation_fields import (
    NOT_POSITIVE,
    Cause,
    duplicate,
    forbidden,
    invalid,
    invalid_each,
    not_supported,
    required,
)

_IN_NOT_IN_VALUES = "must be specified when `operator` is 'In' or 'NotIn'"
_EXISTS_VALUES = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
_BAD_OPERATOR = "not a valid selector operator"
_WEIGHT_RANGE = "must be in the range 1-100"


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _objects(value: Any) -> list[tuple[int, Mapping[str, Any]]]:
    return [(i, item) for i, item in enumerate(_items(value)) if isinstance(item, Mapping)]


def _strings(value: Any) -> list[str]:
    return [str(v) for v in _items(value)]


def validate_label_name(name: str, path: str) -> list[Cause]:
    """metav1validation.ValidateLabelName: a qualified name."""
    return invalid_each(path, name, is_qualified_name(name))


def validate_label_map(labels: Any, path: str) -> list[Cause]:
    """metav1validation.ValidateLabels: qualified keys, label values."""
    causes: list[Cause] = []
    for key, value in (labels or {}).items() if isinstance(labels, Mapping) else ():
        causes += validate_label_name(str(key), path)
        causes += invalid_each(path, value, is_valid_label_value(str(value)))
    return causes


def validate_label_selector(
    selector: Any, path: str, allow_invalid_values: bool = False
) -> list[Cause]:
    """metav1validation.ValidateLabelSelector (matchLabels, matchExpressions)."""
    if not isinstance(selector, Mapping):
        return []
    causes = validate_label_map(selector.get("matchLabels"), f"{path}.matchLabels")
    for i, expr in _objects(selector.get("matchExpressions")):
        idx = f"{path}.matchExpressions[{i}]"
        operator, values = expr.get("operator") or "", _strings(expr.get("values"))
        if operator in ("In", "NotIn"):
            if not values:
                causes.append(required(f"{idx}.values", _IN_NOT_IN_VALUES))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                causes.append(forbidden(f"{idx}.values", _EXISTS_VALUES))
        else:
            causes.append(invalid(f"{idx}.operator", operator, _BAD_OPERATOR))
        causes += validate_label_name(str(expr.get("key") or ""), f"{idx}.key")
        if not allow_invalid_values:
            for j, value in enumerate(values):
                causes += invalid_each(f"{idx}.values[{j}]", value, is_valid_label_value(value))
    return causes


# --- node selectors (node affinity, PV node affinity) ------------------------------------------


def _node_selector_requirement(
    req: Mapping[str, Any], path: str, check_values: bool
) -> list[Cause]:
    """ValidateNodeSelectorRequirement."""
    causes: list[Cause] = []
    operator, values = req.get("operator") or "", _strings(req.get("values"))
    if operator in ("In", "NotIn"):
        if not values:
            causes.append(required(f"{path}.values", _IN_NOT_IN_VALUES))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            causes.append(forbidden(f"{path}.values", _EXISTS_VALUES))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            causes.append(
                required(
                    f"{path}.values",
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                )
            )
    else:
        causes.append(invalid(f"{path}.operator", operator, _BAD_OPERATOR))
    causes += validate_label_name(str(req.get("key") or ""), f"{path}.key")
    if check_values:
        for i, value in enumerate(values):
            causes += invalid_each(f"{path}.values[{i}]", value, is_valid_label_value(value))
    return causes


def _node_field_selector_requirement(req: Mapping[str, Any], path: str) -> list[Cause]:
    """ValidateNodeFieldSelectorRequirement: only metadata.name, In/NotIn with one value."""
    causes: list[Cause] = []
    operator, values = req.get("operator") or "", _strings(req.get("values"))
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            causes.append(
                required(
                    f"{path}.values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field "
                    "selector",
                )
            )
    else:
        causes.append(invalid(f"{path}.operator", operator, _BAD_OPERATOR))
    key = req.get("key") or ""
    if key != "metadata.name":
        causes.append(invalid(f"{path}.key", key, "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            causes += invalid_each(f"{path}.values[{i}]", value, is_dns1123_subdomain(value))
    return causes


def validate_node_selector_term(term: Any, path: str, check_values: bool) -> list[Cause]:
    if not isinstance(term, Mapping):
        return []
    causes: list[Cause] = []
    for i, req in _objects(term.get("matchExpressions")):
        causes += _node_selector_requirement(req, f"{path}.matchExpressions[{i}]", check_values)
    for i, req in _objects(term.get("matchFields")):
        causes += _node_field_selector_requirement(req, f"{path}.matchFields[{i}]")
    return causes


def validate_node_selector(selector: Any, path: str) -> list[Cause]:
    """ValidateNodeSelector: a required node selector needs at least one term."""
    if not isinstance(selector, Mapping):
        return []
    terms = _items(selector.get("nodeSelectorTerms"))
    if not terms:
        return [required(f"{path}.nodeSelectorTerms", "must have at least one node selector term")]
    causes: list[Cause] = []
    for i, term in enumerate(terms):
        causes += validate_node_selector_term(term, f"{path}.nodeSelectorTerms[{i}]", True)
    return causes


def _weight(term: Mapping[str, Any], path: str) -> list[Cause]:
    weight = term.get("weight", 0)
    if isinstance(weight, int) and 1 <= weight <= 100:
        return []
    return [invalid(f"{path}.weight", weight, _WEIGHT_RANGE)]


def _node_affinity(affinity: Mapping[str, Any], path: str) -> list[Cause]:
    required_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    causes = validate_node_selector(
        affinity.get("requiredDuringSchedulingIgnoredDuringExecution"), required_path
    )
    preferred_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, term in _objects(affinity.get("preferredDuringSchedulingIgnoredDuringExecution")):
        idx = f"{preferred_path}[{i}]"
        causes += _weight(term, idx)
        causes += validate_node_selector_term(term.get("preference"), f"{idx}.preference", False)
    return causes


# --- pod (anti-)affinity -----------------------------------------------------------------------


def _pod_affinity_term(term: Mapping[str, Any], path: str) -> list[Cause]:
    """validatePodAffinityTerm."""
    causes = validate_label_selector(term.get("labelSelector"), f"{path}.labelSelector")
    causes += validate_label_selector(term.get("namespaceSelector"), f"{path}.namespaceSelector")
    for name in _strings(term.get("namespaces")):
        causes += invalid_each(f"{path}.namespace", name, is_dns1123_label(name))
    topology_key = str(term.get("topologyKey") or "")
    if not topology_key:
        causes.append(required(f"{path}.topologyKey", "can not be empty"))
    return causes + validate_label_name(topology_key, f"{path}.topologyKey")


def _pod_affinity(affinity: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    required_path = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    for i, term in _objects(affinity.get("requiredDuringSchedulingIgnoredDuringExecution")):
        causes += _pod_affinity_term(term, f"{required_path}[{i}]")
    preferred_path = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, term in _objects(affinity.get("preferredDuringSchedulingIgnoredDuringExecution")):
        idx = f"{preferred_path}[{i}]"
        causes += _weight(term, idx)
        inner = term.get("podAffinityTerm")
        if isinstance(inner, Mapping):
            causes += _pod_affinity_term(inner, f"{idx}.podAffinityTerm")
        else:  # a missing term is an empty one: its topologyKey is required
            causes += _pod_affinity_term({}, f"{idx}.podAffinityTerm")
    return causes


def validate_affinity(affinity: Any, path: str) -> list[Cause]:
    """validateAffinity: nodeAffinity, podAffinity, podAntiAffinity."""
    if not isinstance(affinity, Mapping):
        return []
    causes: list[Cause] = []
    if isinstance(node := affinity.get("nodeAffinity"), Mapping):
        causes += _node_affinity(node, f"{path}.nodeAffinity")
    for key in ("podAffinity", "podAntiAffinity"):
        if isinstance(pod := affinity.get(key), Mapping):
            causes += _pod_affinity(pod, f"{path}.{key}")
    return causes


# --- topology spread ---------------------------------------------------------------------------

_WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
_NODE_INCLUSION_POLICIES = ("Honor", "Ignore")


def _topology_spread_constraint(
    constraint: Mapping[str, Any], path: str, rest: list[Any]
) -> list[Cause]:
    causes: list[Cause] = []
    max_skew = constraint.get("maxSkew", 0)
    if not isinstance(max_skew, int) or max_skew <= 0:
        causes.append(invalid(f"{path}.maxSkew", max_skew, NOT_POSITIVE))
    topology_key = constraint.get("topologyKey") or ""
    if not topology_key:
        causes.append(required(f"{path}.topologyKey", "can not be empty"))
    action = constraint.get("whenUnsatisfiable") or ""
    if action not in _WHEN_UNSATISFIABLE:
        causes.append(not_supported(f"{path}.whenUnsatisfiable", action, _WHEN_UNSATISFIABLE))
    # the tuple {topologyKey, whenUnsatisfiable} names one kind of constraint
    if any(
        isinstance(other, Mapping)
        and (other.get("topologyKey") or "") == topology_key
        and (other.get("whenUnsatisfiable") or "") == action
        for other in rest
    ):
        causes.append(
            duplicate(f"{path}.{{topologyKey, whenUnsatisfiable}}", f"{{{topology_key}, {action}}}")
        )
    min_domains = constraint.get("minDomains")
    if min_domains is not None:
        if not isinstance(min_domains, int) or min_domains <= 0:
            causes.append(invalid(f"{path}.minDomains", min_domains, NOT_POSITIVE))
        if action != "DoNotSchedule":
            detail = f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
            causes.append(invalid(f"{path}.minDomains", min_domains, detail))
    for key in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        policy = constraint.get(key)
        if policy is not None and policy not in _NODE_INCLUSION_POLICIES:
            causes.append(not_supported(f"{path}.{key}", policy, _NODE_INCLUSION_POLICIES))
    label_keys = _strings(constraint.get("matchLabelKeys"))
    if label_keys and constraint.get("labelSelector") is None:
        causes.append(
            forbidden(
                f"{path}.matchLabelKeys", "must not be specified when labelSelector is not set"
            )
        )
    for i, key in enumerate(label_keys):
        causes += validate_label_name(key, f"{path}.matchLabelKeys[{i}]")
    causes += validate_label_selector(constraint.get("labelSelector"), f"{path}.labelSelector")
    return causes


def validate_topology_spread_constraints(constraints: Any, path: str) -> list[Cause]:
    items = _items(constraints)
    causes: list[Cause] = []
    for i, constraint in enumerate(items):
        if isinstance(constraint, Mapping):
            causes += _topology_spread_constraint(constraint, f"{path}[{i}]", items[i + 1 :])
    return causes


# --- scheduling gates --------------------------------------------------------------------------


def validate_scheduling_gates(gates: Any, path: str) -> list[Cause]:
    """validateSchedulingGates: qualified names, no duplicates."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, gate in _objects(gates):
        name = str(gate.get("name") or "")
        causes += invalid_each(f"{path}[{i}]", name, is_qualified_name(name))
        if name in seen:
            causes.append(duplicate(f"{path}[{i}]", name))
        seen.add(name)
    return causes
