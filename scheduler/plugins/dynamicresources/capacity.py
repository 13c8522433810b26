"""Consumable capacity (DRAConsumableCapacity): how much of a shareable device's capacity a
request takes, and whether it still fits beside what is allocated and being allocated.

Upstream: k8s.io/dynamic-resource-allocation/structured/internal/incubating/
consumable_capacity.go (CmpRequestOverCapacity, calculateConsumedCapacity, roundUpRange,
roundUpValidValues, violatesPolicy). Amounts are nanos of the quantity; like upstream's
`Quantity.Value()`, range rounding works in whole units rounded up. A consumed amount keeps
the text it came from (the request's, the policy default's, a valid value's) so that a claim's
`consumedCapacity` reads as upstream writes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache

from apimachinery.quantity import QuantityFormat, format_quantity
from scheduler.api.device_capacity import DeviceCapacity

NANO = 10**9

# (nanos, the quantity as text)
Amount = tuple[int, str]


class UnknownCapacity(Exception):
    """The request names a capacity the device does not have: the device is skipped."""


def _units(nanos: int) -> int:
    """Quantity.Value(): whole units, rounded away from zero."""
    whole = -(-abs(nanos) // NANO)
    return whole if nanos >= 0 else -whole


def _round_up_range(requested: Amount, capacity: DeviceCapacity) -> Amount:
    assert capacity.range_min is not None
    if requested[0] < capacity.range_min:
        return capacity.range_min, capacity.range_min_text
    if capacity.range_step is None:
        return requested
    step = _units(capacity.range_step)
    minimum = _units(capacity.range_min)
    added = _units(requested[0]) - minimum
    n = int(added / step)  # Go's integer division truncates
    if added - n * step != 0:
        n += 1
    value = minimum + step * n
    return value * NANO, _binary_si(value)


@lru_cache(maxsize=4096)
def _binary_si(value: int) -> str:
    # Formatting goes through Fractions; a device's step gives few distinct values, and the
    # allocator rounds one request per device it tries.
    return format_quantity(Fraction(value), QuantityFormat.BINARY_SI)


def _round_up_valid_values(requested: Amount, capacity: DeviceCapacity) -> Amount:
    for value in capacity.valid_values:
        if requested[0] <= value[0]:
            return value
    return requested


def consumed_amount(requested: Amount | None, capacity: DeviceCapacity) -> Amount:
    """calculateConsumedCapacity: nothing requested takes the policy's default (else the
    whole capacity); a request is rounded up to the policy's range or valid values."""
    if requested is None:
        if capacity.default is not None:
            return capacity.default, capacity.default_text
        return capacity.value, capacity.value_text
    if not capacity.has_policy:
        return requested
    if capacity.range_min is not None:
        return _round_up_range(requested, capacity)
    if capacity.valid_values:
        return _round_up_valid_values(requested, capacity)
    return requested


def violates_policy(consumed: int, capacity: DeviceCapacity) -> bool:
    """violatesPolicy: above the range's max, off its step, or not one of the valid values
    (the default always complies)."""
    if not capacity.has_policy:
        return False
    if capacity.default is not None and consumed == capacity.default:
        return False
    if capacity.range_min is not None:
        if capacity.range_max is not None and consumed > capacity.range_max:
            return True
        if capacity.range_step is not None:
            added = _units(consumed) - _units(capacity.range_min)
            if added % _units(capacity.range_step) != 0:
                return True
        return False
    if capacity.valid_values:
        return all(consumed != value for value, _ in capacity.valid_values)
    return False


def _requested(
    requests: Mapping[str, str] | None, requests_nanos: Mapping[str, int], name: str
) -> Amount | None:
    if requests is None or name not in requests_nanos:
        return None
    return requests_nanos[name], requests[name]


def fits(
    consumed_so_far: Mapping[str, int],
    requests_text: Mapping[str, str] | None,
    requests_nanos: Mapping[str, int],
    capacities: Mapping[str, DeviceCapacity],
    allocating: Mapping[str, int],
) -> bool:
    """CmpRequestOverCapacity: whether the request, rounded by each capacity's policy, fits
    beside what claims hold (`consumed_so_far`) and what this allocation takes already
    (`allocating`). Raises UnknownCapacity when it names a capacity the device lacks."""
    if requests_text is not None and any(name not in capacities for name in requests_nanos):
        raise UnknownCapacity("some requested capacity has not been defined")
    for name, capacity in capacities.items():
        consumed, _ = consumed_amount(_requested(requests_text, requests_nanos, name), capacity)
        if violates_policy(consumed, capacity):
            return False
        total = consumed_so_far.get(name, 0) + consumed + allocating.get(name, 0)
        if total > capacity.value:
            return False
    return True


def consumed_by_request(
    requests_text: Mapping[str, str] | None,
    requests_nanos: Mapping[str, int],
    capacities: Mapping[str, DeviceCapacity],
) -> dict[str, Amount]:
    """GetConsumedCapacityFromRequest: what the request takes of each capacity."""
    return {
        name: consumed_amount(_requested(requests_text, requests_nanos, name), capacity)
        for name, capacity in capacities.items()
    }
