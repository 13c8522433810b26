"""VolumeBindingArgs: decoding, upstream v1 defaults and validation.

Upstream: pkg/scheduler/apis/config/v1/defaults.go (SetDefaults_VolumeBindingArgs:
bindTimeoutSeconds 600 when unset; with the StorageCapacityScoring gate on, an unset shape becomes
[{0, 10}, {100, 0}]) and pkg/scheduler/apis/config/validation/validation_pluginargs.go
(ValidateVolumeBindingArgsWithOptions, validateFunctionShape).

The shape is storage-capacity scoring's (scorer.py), behind the StorageCapacityScoring gate
(beta, on by default since v1.37). Decoding defaults and validates under a gate value,
aiosched's default (on) unless told otherwise, as `check-config` does; the plugin validates
again under the gate the process runs with (with the gate off upstream rejects any shape given:
"unexpected field `shape`"). Upstream aggregates every problem; as the other args decoders
here, the first one raises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.registry import ArgsError, check_args_kind, check_known_fields

KIND = "VolumeBindingArgs"
# The feature gate and its default at v1.37 (beta, on).
STORAGE_CAPACITY_SCORING = "StorageCapacityScoring"
STORAGE_CAPACITY_SCORING_DEFAULT = True
DEFAULT_BIND_TIMEOUT_SECONDS = 600
MAX_CUSTOM_PRIORITY_SCORE = 10  # upstream config.MaxCustomPriorityScore
MIN_UTILIZATION = 0
MAX_UTILIZATION = 100

_BIND_TIMEOUT = "bindTimeoutSeconds"
_SHAPE = "shape"
_FIELDS = frozenset({"apiVersion", "kind", _BIND_TIMEOUT, _SHAPE})


@dataclass(frozen=True, slots=True)
class UtilizationShapePoint:
    utilization: int
    score: int


# SetDefaults_VolumeBindingArgs with StorageCapacityScoring on: prefer nodes with more free space.
DEFAULT_SHAPE = (
    UtilizationShapePoint(0, MAX_CUSTOM_PRIORITY_SCORE),
    UtilizationShapePoint(100, 0),
)


@dataclass(frozen=True, slots=True)
class VolumeBindingArgs:
    # How long PreBind waits for the PV controller to finish binding / provisioning.
    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    # Storage-capacity scoring's function shape; None when unset with the gate off.
    shape: tuple[UtilizationShapePoint, ...] | None = None
    # Whether the configuration wrote a shape (with the gate off only a default is allowed).
    shape_given: bool = field(default=False, compare=False)


def decode_volume_binding_args(
    raw: Mapping[str, Any] | None,
    *,
    storage_capacity_scoring: bool = STORAGE_CAPACITY_SCORING_DEFAULT,
) -> VolumeBindingArgs:
    """Decode, default and validate; the first problem raises ArgsError with its field path.

    `storage_capacity_scoring` is upstream's StorageCapacityScoring feature gate (on by
    default, as upstream's at v1.37)."""
    raw = raw or {}
    check_known_fields(raw, _FIELDS)
    check_args_kind(raw, KIND)
    timeout = raw.get(_BIND_TIMEOUT)
    if timeout is None:
        timeout = DEFAULT_BIND_TIMEOUT_SECONDS
    elif isinstance(timeout, bool) or not isinstance(timeout, int):
        raise ArgsError(_BIND_TIMEOUT, f"expected an integer, got {type(timeout).__name__}")
    shape = _decode_shape(raw.get(_SHAPE))
    given = shape is not None
    # SetDefaults_VolumeBindingArgs: len(obj.Shape) == 0, so an empty list is defaulted too
    # (validation then sees the default, never the empty list).
    if not shape and storage_capacity_scoring:
        shape = DEFAULT_SHAPE
    args = VolumeBindingArgs(timeout, shape, given)
    validate_volume_binding_args(args, storage_capacity_scoring=storage_capacity_scoring)
    return args


def _decode_shape(raw: Any) -> tuple[UtilizationShapePoint, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ArgsError(_SHAPE, f"expected a list, got {type(raw).__name__}")
    points = []
    for i, item in enumerate(raw):
        path = f"{_SHAPE}[{i}]"
        if not isinstance(item, Mapping):
            raise ArgsError(path, f"expected an object, got {type(item).__name__}")
        check_known_fields(item, {"utilization", "score"}, path)
        values = []
        for name in ("utilization", "score"):
            value = item.get(name, 0)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ArgsError(
                    f"{path}.{name}", f"expected an integer, got {type(value).__name__}"
                )
            values.append(value)
        points.append(UtilizationShapePoint(values[0], values[1]))
    return tuple(points)


def validate_volume_binding_args(
    args: VolumeBindingArgs, *, storage_capacity_scoring: bool = STORAGE_CAPACITY_SCORING_DEFAULT
) -> None:
    """Upstream's ValidateVolumeBindingArgsWithOptions, raising its first error."""
    if args.bind_timeout_seconds < 0:
        raise ArgsError(
            _BIND_TIMEOUT,
            f"Invalid value: {args.bind_timeout_seconds}: "
            "invalid BindTimeoutSeconds, should not be a negative value",
        )
    if storage_capacity_scoring:
        validate_function_shape(args.shape or (), _SHAPE)
    elif args.shape is not None and args.shape_given:
        # With the gate off a shape is refused, so that it cannot silently take effect when the
        # feature is turned on later (upstream's comment).
        raise ArgsError(
            _SHAPE,
            f"Invalid value: {_go_shape(args.shape)}: unexpected field `shape`, "
            "remove it or turn on the feature gate StorageCapacityScoring",
        )


def validate_function_shape(shape: Sequence[UtilizationShapePoint], path: str) -> None:
    """Upstream's validateFunctionShape: at least one point, utilization strictly increasing
    and within [0, 100], score within [0, 10]."""
    if not shape:
        raise ArgsError(path, "Required value: at least one point must be specified")
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            raise ArgsError(
                f"{path}[{i}].utilization",
                f"Invalid value: {shape[i].utilization}: values must be sorted in increasing order",
            )
    for i, point in enumerate(shape):
        if not MIN_UTILIZATION <= point.utilization <= MAX_UTILIZATION:
            raise ArgsError(
                f"{path}[{i}].utilization",
                f"Invalid value: {point.utilization}: "
                f"not in valid range [{MIN_UTILIZATION}, {MAX_UTILIZATION}]",
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            raise ArgsError(
                f"{path}[{i}].score",
                f"Invalid value: {point.score}: "
                f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
            )


def _go_shape(shape: Sequence[UtilizationShapePoint]) -> str:
    """The shape as upstream's field.Invalid prints it (Go's %#v of the internal type)."""
    points = ", ".join(
        f"config.UtilizationShapePoint{{Utilization:{p.utilization}, Score:{p.score}}}"
        for p in shape
    )
    return f"[]config.UtilizationShapePoint{{{points}}}"
