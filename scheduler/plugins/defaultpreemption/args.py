"""DefaultPreemptionArgs: decoding, upstream v1 defaults and validation.

Upstream: pkg/scheduler/apis/config/v1/defaults.go (SetDefaults_DefaultPreemptionArgs:
minCandidateNodesPercentage 10, minCandidateNodesAbsolute 100, each only when unset) and
pkg/scheduler/apis/config/validation/validation_pluginargs.go (ValidateDefaultPreemptionArgs:
percentage within [0, 100], absolute >= 0, not both zero). Upstream aggregates every problem;
as the other args decoders here, the first one raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework.registry import ArgsError, check_args_kind, check_known_fields

KIND = "DefaultPreemptionArgs"
DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE = 100

_PERCENTAGE = "minCandidateNodesPercentage"
_ABSOLUTE = "minCandidateNodesAbsolute"
_FIELDS = frozenset({"apiVersion", "kind", _PERCENTAGE, _ABSOLUTE})


@dataclass(frozen=True, slots=True)
class DefaultPreemptionArgs:
    # At least this percentage of the potential nodes is dry-run for candidates ...
    min_candidate_nodes_percentage: int = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
    # ... and at least this many (never more than there are potential nodes).
    min_candidate_nodes_absolute: int = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE


def decode_default_preemption_args(raw: Mapping[str, Any] | None) -> DefaultPreemptionArgs:
    """Decode, default and validate; the first problem raises ArgsError with its field path."""
    raw = raw or {}
    check_known_fields(raw, _FIELDS)
    check_args_kind(raw, KIND)
    percentage = _int_field(raw, _PERCENTAGE, DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE)
    absolute = _int_field(raw, _ABSOLUTE, DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE)
    validate_default_preemption_args(DefaultPreemptionArgs(percentage, absolute))
    return DefaultPreemptionArgs(percentage, absolute)


def validate_default_preemption_args(args: DefaultPreemptionArgs) -> None:
    """Upstream's ValidateDefaultPreemptionArgs, raising its first error."""
    percentage = args.min_candidate_nodes_percentage
    absolute = args.min_candidate_nodes_absolute
    if percentage < 0 or percentage > 100:
        raise ArgsError(_PERCENTAGE, f"Invalid value: {percentage}: not in valid range [0, 100]")
    if absolute < 0:
        raise ArgsError(_ABSOLUTE, f"Invalid value: {absolute}: not in valid range [0, inf)")
    if percentage == 0 and absolute == 0:
        raise ArgsError(
            _PERCENTAGE,
            f"Invalid value: {percentage}: cannot be zero at the same time as {_ABSOLUTE}",
        )


def _int_field(raw: Mapping[str, Any], name: str, default: int) -> int:
    value = raw.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgsError(name, f"expected an integer, got {type(value).__name__}")
    return value
