"""CoschedulingArgs: decoding, scheduler-plugins' v1 defaults and validation.

Upstream (kubernetes-sigs/scheduler-plugins): apis/config/types.go (CoschedulingArgs:
permitWaitingTimeSeconds, podGroupBackoffSeconds, podGroupRejectPercentage),
apis/config/v1/defaults.go (SetDefaults_CoschedulingArgs: 60 and 0), the plugin's README
(podGroupRejectPercentage defaults to 10: the PostFilter's old fixed 10 %) and
apis/config/validation/validation_pluginargs.go (ValidateCoschedulingArgs, its messages).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.framework.registry import ArgsError, check_args_kind, check_known_fields

KIND = "CoschedulingArgs"
PERMIT_WAITING_TIME_SECONDS_DEFAULT = 60
POD_GROUP_BACKOFF_SECONDS_DEFAULT = 0
POD_GROUP_REJECT_PERCENTAGE_DEFAULT = 10

_PERMIT = "permitWaitingTimeSeconds"
_BACKOFF = "podGroupBackoffSeconds"
_REJECT = "podGroupRejectPercentage"
_FIELDS = frozenset({"apiVersion", "kind", _PERMIT, _BACKOFF, _REJECT})


@dataclass(frozen=True, slots=True)
class CoschedulingArgs:
    permit_waiting_time_seconds: int = PERMIT_WAITING_TIME_SECONDS_DEFAULT
    pod_group_backoff_seconds: int = POD_GROUP_BACKOFF_SECONDS_DEFAULT
    pod_group_reject_percentage: int = POD_GROUP_REJECT_PERCENTAGE_DEFAULT

    def to_config(self) -> dict[str, int]:
        """The args as a configuration writes them (check-config)."""
        return {
            _PERMIT: self.permit_waiting_time_seconds,
            _BACKOFF: self.pod_group_backoff_seconds,
            _REJECT: self.pod_group_reject_percentage,
        }


def _int(raw: Mapping[str, Any], name: str, default: int) -> int:
    value = raw.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgsError(name, f"expected an integer, got {value!r}")
    return value


def decode_coscheduling_args(raw: Mapping[str, Any] | None) -> CoschedulingArgs:
    """Decode, default and validate; the first problem raises ArgsError with its field."""
    raw = raw or {}
    check_known_fields(raw, _FIELDS)
    check_args_kind(raw, KIND)
    args = CoschedulingArgs(
        _int(raw, _PERMIT, PERMIT_WAITING_TIME_SECONDS_DEFAULT),
        _int(raw, _BACKOFF, POD_GROUP_BACKOFF_SECONDS_DEFAULT),
        _int(raw, _REJECT, POD_GROUP_REJECT_PERCENTAGE_DEFAULT),
    )
    # ValidateCoschedulingArgs, its messages verbatim.
    if args.permit_waiting_time_seconds < 0:
        raise ArgsError(
            _PERMIT, f"Invalid value: {args.permit_waiting_time_seconds}: must be greater than 0"
        )
    if args.pod_group_backoff_seconds < 0:
        raise ArgsError(
            _BACKOFF, f"Invalid value: {args.pod_group_backoff_seconds}: must be greater than 0"
        )
    if not 0 <= args.pod_group_reject_percentage <= 100:
        raise ArgsError(
            _REJECT,
            f"Invalid value: {args.pod_group_reject_percentage}: must be between 0 and 100",
        )
    return args
