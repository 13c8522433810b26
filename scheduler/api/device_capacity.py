"""A device's capacity as consumable capacity reads it (DRAConsumableCapacity): its value and
`requestPolicy` (upstream's resourceapi.DeviceCapacity and CapacityRequestPolicy,
staging/src/k8s.io/api/resource/v1/types.go), in nanos of the quantity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apimachinery.quantity import parse_nanos
from scheduler.api.errors import MalformedObject
from scheduler.api.fields import as_list, as_mapping


def quantity_nanos(raw: Any, path: str) -> int:
    if not isinstance(raw, str | int) or isinstance(raw, bool):
        raise MalformedObject(f"{path}: expected a quantity, got {type(raw).__name__}")
    try:
        return parse_nanos(str(raw))
    except ValueError as err:
        raise MalformedObject(f"{path}: {err}") from None


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    """One `capacity` entry of a device, for consumable capacity (DRAConsumableCapacity):
    its value and `requestPolicy`, in nanos; `*_text` keep the quantities as written so that
    a claim's `consumedCapacity` shows them as upstream copies them."""

    value: int
    value_text: str = ""
    default: int | None = None
    default_text: str = ""
    valid_values: tuple[tuple[int, str], ...] = ()
    range_min: int | None = None
    range_min_text: str = ""
    range_max: int | None = None
    range_step: int | None = None

    @property
    def has_policy(self) -> bool:
        return self.default is not None or bool(self.valid_values) or self.range_min is not None


def parse_device_capacity(raw: Any, path: str) -> DeviceCapacity:
    item = as_mapping(raw, path)
    value = quantity_nanos(item.get("value"), f"{path}.value")
    policy = item.get("requestPolicy")
    value_text = str(item.get("value"))
    if policy is None:
        return DeviceCapacity(value, value_text)
    policy = as_mapping(policy, f"{path}.requestPolicy")
    ppath = f"{path}.requestPolicy"
    default = policy.get("default")
    valid_values = tuple(
        (quantity_nanos(v, f"{ppath}.validValues[{i}]"), str(v))
        for i, v in enumerate(as_list(policy.get("validValues"), f"{ppath}.validValues"))
    )
    valid_range = policy.get("validRange")
    range_min = range_max = range_step = None
    range_min_text = ""
    if valid_range is not None:
        valid_range = as_mapping(valid_range, f"{ppath}.validRange")
        if valid_range.get("min") is not None:
            range_min = quantity_nanos(valid_range["min"], f"{ppath}.validRange.min")
            range_min_text = str(valid_range["min"])
        if valid_range.get("max") is not None:
            range_max = quantity_nanos(valid_range["max"], f"{ppath}.validRange.max")
        if valid_range.get("step") is not None:
            range_step = quantity_nanos(valid_range["step"], f"{ppath}.validRange.step")
    return DeviceCapacity(
        value=value,
        value_text=value_text,
        default=None if default is None else quantity_nanos(default, f"{ppath}.default"),
        default_text="" if default is None else str(default),
        valid_values=valid_values,
        range_min=range_min,
        range_min_text=range_min_text,
        range_max=range_max,
        range_step=range_step,
    )
