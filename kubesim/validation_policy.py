"""PodDisruptionBudget validation (what preemption reads).

Ported from upstream's pkg/apis/policy/validation/validation.go
(ValidatePodDisruptionBudgetSpec) and pkg/apis/apps/validation (ValidatePositiveIntOrPercent,
IsNotMoreThan100Percent), with their field paths and messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from apimachinery.validation import regex_error
from kubesim.validation_fields import NEGATIVE, Cause, not_supported
from kubesim.validation_scheduling import validate_label_selector

_PERCENT = re.compile(r"^[0-9]+%$")
_PERCENT_ERROR = regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'",
    "[0-9]+%",
    "1%",
    "93%",
)
_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")


def _go_int_or_string(value: int | str) -> str:
    """An intstr.IntOrString as field errors print it (Go's %#v of the struct)."""
    if isinstance(value, str):
        return f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{json.dumps(value)}}}"
    return f'intstr.IntOrString{{Type:0, IntVal:{value}, StrVal:""}}'


def _go_spec(spec: Mapping[str, Any]) -> str:
    """The spec as Go's %#v prints the internal struct: pointers, which upstream shows as
    addresses; a fixed stand-in address marks the ones that are set."""
    fields = (
        ("MinAvailable", "minAvailable", "*intstr.IntOrString"),
        ("Selector", "selector", "*v1.LabelSelector"),
        ("MaxUnavailable", "maxUnavailable", "*intstr.IntOrString"),
        ("UnhealthyPodEvictionPolicy", "unhealthyPodEvictionPolicy",
         "*policy.UnhealthyPodEvictionPolicyType"),
    )  # fmt: skip
    shown = ", ".join(
        f"{go_name}:({go_type})({'nil' if spec.get(key) is None else '0xc000000000'})"
        for go_name, key, go_type in fields
    )
    return f"policy.PodDisruptionBudgetSpec{{{shown}}}"


def _invalid_int_or_string(path: str, value: int | str, detail: str) -> Cause:
    return Cause(path, "FieldValueInvalid", f"Invalid value: {_go_int_or_string(value)}: {detail}")


def _int_or_percent(value: Any, path: str) -> list[Cause]:
    """ValidatePositiveIntOrPercent then IsNotMoreThan100Percent."""
    if isinstance(value, str):
        if not _PERCENT.match(value):
            return [_invalid_int_or_string(path, value, _PERCENT_ERROR)]
        if int(value[:-1]) > 100:
            return [_invalid_int_or_string(path, value, "must not be greater than 100%")]
        return []
    if isinstance(value, int) and value < 0:
        return [Cause(path, "FieldValueInvalid", f"Invalid value: {value}: {NEGATIVE}")]
    return []


def validate_pod_disruption_budget(pdb: Mapping[str, Any]) -> list[Cause]:
    spec = pdb.get("spec")
    if not isinstance(spec, Mapping):
        return []
    causes: list[Cause] = []
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_available is not None and max_unavailable is not None:
        causes.append(
            Cause(
                "spec",
                "FieldValueInvalid",
                f"Invalid value: {_go_spec(spec)}: minAvailable and maxUnavailable cannot be both "
                "set",
            )
        )
    if min_available is not None:
        causes += _int_or_percent(min_available, "spec.minAvailable")
    if max_unavailable is not None:
        causes += _int_or_percent(max_unavailable, "spec.maxUnavailable")
    causes += validate_label_selector(spec.get("selector"), "spec.selector")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _EVICTION_POLICIES:
        causes.append(not_supported("spec.unhealthyPodEvictionPolicy", policy, _EVICTION_POLICIES))
    return causes
