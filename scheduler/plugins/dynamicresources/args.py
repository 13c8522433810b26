"""DynamicResourcesArgs: decoding, upstream's v1 defaults and validation.

Upstream: pkg/scheduler/apis/config/types_pluginargs.go (DynamicResourcesArgs,
DynamicResourcesFilterTimeoutDefault 10s, DynamicResourcesBindingTimeoutDefault 600s),
pkg/scheduler/apis/config/v1/defaults.go and validation/validation_pluginargs.go
(ValidateDynamicResourcesArgs). Validation depends on feature gates: setting a field whose gate
is off is an error ("Forbidden"), as upstream's. `check-config` decodes with aiosched's default
gates; the plugin validates again with the gates the process runs with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from profiles.duration import parse_duration
from scheduler.framework.registry import ArgsError, check_args_kind, check_known_fields
from scheduler.plugins.dynamicresources.features import Features

KIND = "DynamicResourcesArgs"
FILTER_TIMEOUT_DEFAULT = 10.0
BINDING_TIMEOUT_DEFAULT = 600.0

_FILTER_TIMEOUT = "filterTimeout"
_BINDING_TIMEOUT = "bindingTimeout"
_FIELDS = frozenset({"apiVersion", "kind", _FILTER_TIMEOUT, _BINDING_TIMEOUT})


@dataclass(frozen=True, slots=True)
class DynamicResourcesArgs:
    # Seconds one node's allocation may take in Filter; 0 disables the limit. None: unset (the
    # DRASchedulerFilterTimeout gate is off).
    filter_timeout: float | None = FILTER_TIMEOUT_DEFAULT
    # Seconds PreBind waits for binding conditions; None: unset (the plugin then uses 600 s).
    binding_timeout: float | None = None
    # The text of each duration as given, for messages ("-1s").
    filter_timeout_text: str = ""
    binding_timeout_text: str = ""
    # Whether filterTimeout was written (a default is not an error with the gate off).
    filter_timeout_given: bool = False

    def to_config(self) -> dict[str, str]:
        """The args as a configuration writes them (check-config), durations as given."""
        out: dict[str, str] = {}
        if self.filter_timeout is not None:
            out[_FILTER_TIMEOUT] = self.filter_timeout_text
        if self.binding_timeout is not None:
            out[_BINDING_TIMEOUT] = self.binding_timeout_text
        return out


def _duration(raw: Mapping[str, Any], name: str) -> tuple[float | None, str]:
    value = raw.get(name)
    if value is None:
        return None, ""
    if not isinstance(value, str):
        raise ArgsError(name, f'expected a duration string like "10s", got {value!r}')
    try:
        return parse_duration(value), value
    except ValueError as err:
        raise ArgsError(name, f"time: {err}") from None


def decode_dynamic_resources_args(
    raw: Mapping[str, Any] | None, *, features: Features | None = None
) -> DynamicResourcesArgs:
    """Decode, default and validate under `features` (aiosched's default gates when None);
    the first problem raises ArgsError with its field path."""
    features = features or Features()
    raw = raw or {}
    check_known_fields(raw, _FIELDS)
    check_args_kind(raw, KIND)
    filter_timeout, filter_text = _duration(raw, _FILTER_TIMEOUT)
    binding_timeout, binding_text = _duration(raw, _BINDING_TIMEOUT)
    # SetDefaults_DynamicResourcesArgs: filterTimeout only exists with its gate on.
    if filter_timeout is None and features.filter_timeout:
        filter_timeout, filter_text = FILTER_TIMEOUT_DEFAULT, "10s"
    args = DynamicResourcesArgs(
        filter_timeout, binding_timeout, filter_text, binding_text, _FILTER_TIMEOUT in raw
    )
    validate_dynamic_resources_args(args, features)
    return args


def validate_dynamic_resources_args(args: DynamicResourcesArgs, features: Features) -> None:
    """Upstream's ValidateDynamicResourcesArgs (the first error raises)."""
    if features.filter_timeout:
        if args.filter_timeout is not None and args.filter_timeout < 0:
            raise ArgsError(
                _FILTER_TIMEOUT,
                f'Invalid value: "{args.filter_timeout_text}": must be zero or positive',
            )
    elif args.filter_timeout_given:
        raise ArgsError(
            _FILTER_TIMEOUT, "Forbidden: DRASchedulingFilterTimeout feature gate is disabled"
        )
    if features.binding_conditions:
        if args.binding_timeout is not None and args.binding_timeout < 1:
            raise ArgsError(
                _BINDING_TIMEOUT,
                f'Invalid value: "{args.binding_timeout_text}": must be at least 1 second',
            )
    elif args.binding_timeout is not None:
        raise ArgsError(
            _BINDING_TIMEOUT,
            "Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate "
            "is disabled",
        )
