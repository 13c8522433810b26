"""`--feature-gates` as kube-scheduler v1.37 reads it, and what aiosched does under each gate.

Upstream: component-base/featuregate/feature_gate.go (Set, unsafeSetFromMap, the AllAlpha /
AllBeta special gates, the dependency check, AddMetrics) over the gate table of the
kube-scheduler binary (feature_gate_table.py). Every gate of that binary is accepted:

- `A=true,B=false` pairs; an empty item is skipped; an item without "=" is
  `missing bool value for A`; a value strconv.ParseBool refuses is
  `invalid value of A=x, err: strconv.ParseBool: parsing "x": invalid syntax`.
- A name no registered gate has is only warned about (`unrecognized feature gate: A`), as
  upstream does since v1.31: a manifest written for another version still starts.
- A locked gate set to the other value: `cannot set feature gate A to false, feature is locked
  to true`. Setting a GA or deprecated gate logs upstream's warning. Several errors are
  reported together, as utilerrors.NewAggregate prints them (`[e1, e2]`).
- A gate on whose dependencies are off: `A is enabled, but depends on features that are
  disabled: [B]`.

aiosched honours most gates that change what kube-scheduler decides at both values. Where it
honours only one (NOT_HONOURED, and the DRA and workload gates' own modules), the other is
refused at start-up with a message naming what aiosched lacks, so that it never silently
decides differently from kube-scheduler with the same flags; when that other value is
upstream's default, aiosched starts with the value it honours. Gates that change nothing in a
scheduler (the kubelet's, the API server's...) are accepted at both values and change nothing
here either, as in kube-scheduler.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from scheduler.app.feature_gate_table import (
    ALPHA,
    BETA,
    DEPENDENCIES,
    DEPRECATED,
    GA,
    GATES,
)
from scheduler.plugins.dynamicresources import features as dra_features
from scheduler.plugins.gangscheduling import features as workload_features

log = logging.getLogger(__name__)

ALL_ALPHA: Final = "AllAlpha"
ALL_BETA: Final = "AllBeta"

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


@dataclass(frozen=True, slots=True)
class NotHonoured:
    """A gate value aiosched refuses: `value`, for want of `missing`."""

    value: bool
    missing: str


# The scheduler gates aiosched honours at one value only (DRA and workload-aware scheduling
# gates: their own modules say). Each names what aiosched would need for the other value.
NOT_HONOURED: Final[Mapping[str, NotHonoured]] = {
    # kube-scheduler: alpha gates, off by default upstream.
    "CompositePodGroup": NotHonoured(True, "CompositePodGroups (multi-level gangs)"),
    "InPlacePodVerticalScalingSchedulerPreemption": NotHonoured(
        True, "preemption on behalf of deferred in-place resizes"
    ),
    "SchedulerPreQueueingHints": NotHonoured(True, "the PreQueueingHint extension point"),
    # DRA gates that scheduler/plugins/dynamicresources/features.py does not list yet.
    "DRAWorkloadResourceClaims": NotHonoured(True, "ResourceClaims shared by a PodGroup"),
    "DRAListTypeAttributes": NotHonoured(True, "list-typed device attributes"),
    "DRANodeAllocatableResources": NotHonoured(True, "node allocatable resources backed by DRA"),
    "DRADerivedAttributes": NotHonoured(True, "derived device attributes"),
    "DRADeviceCompatibilityGroups": NotHonoured(True, "device compatibility groups"),
    "DRAOptionalNodeOperations": NotHonoured(True, "optional node operations for devices"),
    "DRAFractionalCapacityRange": NotHonoured(True, "fractional capacity request ranges"),
    # The API server's, read by kube-scheduler's leader election.
    "CoordinatedLeaderElection": NotHonoured(True, "coordinated leader election"),
    # component-base/metrics.
    "NativeHistograms": NotHonoured(True, "native histograms in /metrics"),
}


# The gates kube-scheduler v1.37 reads (its scheduler feature table, the other gates that
# pkg/scheduler and cmd/kube-scheduler read, the zpages and metrics gates): those that can
# change what it decides or serves.
HONOURED_SCHEDULER_GATES: Final = frozenset(
    {
        "ComponentFlagz",
        "ComponentStatusz",
        "CompositePodGroup",
        "CoordinatedLeaderElection",
        "DRAAdminAccess",
        "DRAConsumableCapacity",
        "DRADerivedAttributes",
        "DRADeviceBindingConditions",
        "DRADeviceCompatibilityGroups",
        "DRADeviceTaintRules",
        "DRADeviceTaints",
        "DRAExtendedResource",
        "DRAFractionalCapacityRange",
        "DRAListTypeAttributes",
        "DRANodeAllocatableResources",
        "DRAOptionalNodeOperations",
        "DRAPartitionableDevices",
        "DRAPrioritizedList",
        "DRAResourceClaimDeviceStatus",
        "DRASchedulerFilterTimeout",
        "DRAWorkloadResourceClaims",
        "DynamicResourceAllocation",
        "GangScheduling",
        "GenericWorkload",
        "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScaling",
        "InPlacePodVerticalScalingSchedulerPreemption",
        "InterPodAffinityHostnameFastPath",
        "MatchLabelKeysInPodTopologySpread",
        "NativeHistograms",
        "NodeDeclaredFeatures",
        "NodeInclusionPolicyInPodTopologySpread",
        "NominatedNodeNameForExpectation",
        "OpportunisticBatching",
        "PodGroupPreemptionPolicy",
        "PodLevelResources",
        "SchedulerAsyncAPICalls",
        "SchedulerAsyncPreemption",
        "SchedulerPopFromBackoffQ",
        "SchedulerPreQueueingHints",
        "SchedulerQueueingHints",
        "SidecarContainers",
        "StorageCapacityScoring",
        "TaintTolerationComparisonOperators",
        "TopologyAwareWorkloadScheduling",
        "VolumeAttributesClass",
        "VolumeLimitScaling",
        "WorkloadAwarePreemption",
    }
)


def _go_bool(text: str) -> bool:
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def _bool(value: bool) -> str:
    return "true" if value else "false"


def refusal(name: str, value: bool) -> str | None:
    """Why aiosched cannot run with `name=value`, or None when it can. The stage, default and
    lock are the table's; what is missing is NOT_HONOURED's or the gate's module's."""
    refused = workload_features.unsupported_gate_value(name, value)
    if refused is not None:
        return refused
    spec = GATES.get(name)
    if spec is None:
        return None
    stage, default, locked = spec
    if locked and value != default:
        return (
            f"cannot set feature gate {name} to {_bool(value)}, feature is locked to "
            f"{_bool(default)}"
        )
    missing = _missing(name, value)
    if missing is None:
        return None
    return (
        f"feature gate {name}={_bool(value)} is not supported by aiosched: it does not "
        f"implement {missing} (kube-scheduler v1.37: {stage_name(stage)}, "
        f"{'on' if default else 'off'} by default)"
    )


def _missing(name: str, value: bool) -> str | None:
    """What aiosched lacks to run with `name=value`; None when it honours it."""
    dra = dra_features.DRA_GATES.get(name)
    if dra is not None:
        return None if dra_features.honours(name, value) else dra.why_not
    entry = NOT_HONOURED.get(name)
    return entry.missing if entry is not None and entry.value == value else None


def stage_name(stage: str) -> str:
    return {ALPHA: "alpha", BETA: "beta", GA: "GA", DEPRECATED: "deprecated"}[stage]


def aiosched_default(name: str) -> bool:
    """The value aiosched starts a gate with: upstream's default, or the value it honours
    when it refuses upstream's default."""
    _, default, _ = GATES[name]
    if refusal(name, default) is not None:
        return not default
    return default


#: Every gate at the value aiosched starts it with.
DEFAULTS: Final[Mapping[str, bool]] = {name: aiosched_default(name) for name in GATES}


class FeatureGateError(argparse.ArgumentTypeError):
    """A --feature-gates value kube-scheduler (or aiosched) refuses."""


def parse_pairs(text: str) -> dict[str, bool]:
    """Set's parsing: `A=true,B=false` into a mapping (every name, known or not)."""
    pairs: dict[str, bool] = {}
    for item in text.split(","):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep:
            raise FeatureGateError(f"missing bool value for {name}")
        value = raw.strip()
        try:
            pairs[name] = _go_bool(value)
        except ValueError as exc:
            raise FeatureGateError(f"invalid value of {name}={value}, err: {exc}") from None
    return pairs


def _aggregate(errors: list[str]) -> str:
    """utilerrors.NewAggregate's Error(): one error as itself, several in brackets."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def resolve(given: Mapping[str, bool]) -> dict[str, bool]:
    """Every gate's value with `given` set over the defaults (unsafeSetFromMap); raises
    FeatureGateError with upstream's words, or aiosched's refusal."""
    errors: list[str] = []
    explicit: dict[str, bool] = {}
    for name, value in given.items():
        spec = GATES.get(name)
        if spec is None:
            log.warning("unrecognized feature gate: %s", name)
            continue
        stage, default, locked = spec
        if locked and value != default:
            errors.append(
                f"cannot set feature gate {name} to {_bool(value)}, feature is locked to "
                f"{_bool(default)}"
            )
            continue
        explicit[name] = value
        if stage in (DEPRECATED, GA) and name not in (ALL_ALPHA, ALL_BETA):
            what = "deprecated" if stage == DEPRECATED else "GA"
            log.info(
                "Warning: setting %s feature gate. It will be removed in a future release.",
                what,
                extra={"featureGate": name, "value": value},
            )
    if errors:
        raise FeatureGateError(_aggregate(errors))
    values = dict(DEFAULTS)
    # AllAlpha / AllBeta set every gate of their stage that is not given by name.
    for special, stage in ((ALL_ALPHA, ALPHA), (ALL_BETA, BETA)):
        if special in explicit:
            for name, (gate_stage, _, _) in GATES.items():
                if gate_stage == stage and name not in (ALL_ALPHA, ALL_BETA):
                    values[name] = explicit[special]
    values.update(explicit)
    _check_dependencies(values)
    refusals = [
        message for name in _changed(values) if (message := refusal(name, values[name])) is not None
    ]
    if refusals:
        raise FeatureGateError(_aggregate(refusals))
    return values


def _changed(values: Mapping[str, bool]) -> Iterable[str]:
    return (name for name, value in values.items() if value != DEFAULTS[name])


def _check_dependencies(values: Mapping[str, bool]) -> None:
    errors = []
    for name, needs in DEPENDENCIES.items():
        if not values.get(name, False):
            continue
        disabled = [need for need in needs if not values.get(need, False)]
        if disabled:
            errors.append(
                f"{name} is enabled, but depends on features that are disabled: "
                f"[{' '.join(disabled)}]"
            )
    if errors:
        raise FeatureGateError(_aggregate(sorted(errors)))


def feature_gates(text: str) -> dict[str, bool]:
    """`--feature-gates`: every gate's value (the given ones over aiosched's defaults)."""
    return resolve(parse_pairs(text))


def feature_info(values: Mapping[str, bool]) -> list[tuple[str, str, bool]]:
    """(name, stage, enabled) of every gate, as featureGate.AddMetrics records them in
    kubernetes_feature_enabled."""
    return [
        (name, stage, values.get(name, DEFAULTS[name])) for name, (stage, _, _) in GATES.items()
    ]


def not_honoured_lines() -> list[str]:
    """One line per gate value aiosched refuses (for --help and the docs)."""
    lines = []
    for name, (stage, default, locked) in sorted(GATES.items()):
        if locked:
            continue
        for value in (True, False):
            if refusal(name, value) is not None:
                lines.append(
                    f"{name}={_bool(value)} ({stage_name(stage)}, upstream default "
                    f"{_bool(default)})"
                )
    return lines


def feature_gates_help() -> str:
    """`aiosched run --help`'s text for --feature-gates."""
    honoured = sorted(
        name
        for name in HONOURED_SCHEDULER_GATES
        if not any(refusal(name, value) for value in (True, False))
    )
    return (
        "kube-scheduler's feature gates as key=value pairs, e.g. OpportunisticBatching=false. "
        "Every gate of kube-scheduler v1.37 is accepted with its default, stage and lock "
        "(docs/feature-gates.md lists them); an unknown name is only warned about, as "
        "upstream. Honoured both ways among those that change scheduling: "
        + ", ".join(honoured)
        + ". Refused (what aiosched does not implement): "
        + "; ".join(not_honoured_lines())
        + ". Gates outside the scheduler are accepted and change nothing, as in kube-scheduler"
    )
