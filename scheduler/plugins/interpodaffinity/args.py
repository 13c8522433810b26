"""InterPodAffinityArgs: decoding, upstream v1 defaults and validation.

Upstream: pkg/scheduler/apis/config/v1/defaults.go (SetDefaults_InterPodAffinityArgs:
hardPodAffinityWeight 1) and pkg/scheduler/apis/config/validation/validation_pluginargs.go
(ValidateInterPodAffinityArgs: hardPodAffinityWeight within [0, 100]).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework.registry import ArgsError, check_args_kind, check_known_fields

KIND = "InterPodAffinityArgs"
DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
MIN_HARD_POD_AFFINITY_WEIGHT = 0
MAX_HARD_POD_AFFINITY_WEIGHT = 100

_FIELDS = frozenset(
    {"apiVersion", "kind", "hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"}
)


@dataclass(frozen=True, slots=True)
class InterPodAffinityArgs:
    # Weight of an existing pod's required affinity term the incoming pod matches (scoring).
    hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    # Skip scoring by existing pods' terms when the incoming pod has no preferred terms.
    ignore_preferred_terms_of_existing_pods: bool = False


def decode_interpod_affinity_args(raw: Mapping[str, Any] | None) -> InterPodAffinityArgs:
    """Decode, default and validate; the first problem raises ArgsError with its field path."""
    raw = raw or {}
    check_known_fields(raw, _FIELDS)
    check_args_kind(raw, KIND)
    weight = raw.get("hardPodAffinityWeight")
    if weight is None:
        weight = DEFAULT_HARD_POD_AFFINITY_WEIGHT
    elif isinstance(weight, bool) or not isinstance(weight, int):
        raise ArgsError(
            "hardPodAffinityWeight", f"expected an integer, got {type(weight).__name__}"
        )
    ignore = raw.get("ignorePreferredTermsOfExistingPods")
    if ignore is None:
        ignore = False
    elif not isinstance(ignore, bool):
        raise ArgsError(
            "ignorePreferredTermsOfExistingPods", f"expected a boolean, got {type(ignore).__name__}"
        )
    if not MIN_HARD_POD_AFFINITY_WEIGHT <= weight <= MAX_HARD_POD_AFFINITY_WEIGHT:
        raise ArgsError(
            "hardPodAffinityWeight",
            f"Invalid value: {weight}: not in valid range "
            f"[{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]",
        )
    return InterPodAffinityArgs(weight, ignore)
