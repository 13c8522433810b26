"""Binding conditions (DRADeviceBindingConditions with DRAResourceClaimDeviceStatus): devices
that must be prepared before the pod binds (attached over a fabric, say). The allocation
copies each such device's `bindingConditions` and `bindingFailureConditions`; PreBind then waits
until the driver sets every binding condition True in the claim's `status.devices`, fails when a
failure condition turns True, and gives up `bindingTimeout` after the allocation's
`allocationTimestamp`.

Upstream: dynamicresources.go (isClaimReadyForBinding, isClaimTimeout, isPodReadyForBinding,
hasBindingConditions, getAllocatedDeviceStatus; the poll in PreBind).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from scheduler.api.resource import ResourceClaimView

ERR_TIMEOUT = "device binding timeout"
ERR_FAILED = "device binding failed"
# upstream polls every 5 s (wait.PollUntilContextTimeout, immediate)
POLL_INTERVAL = 5.0


class BindingFailed(Exception):
    """A failure condition is True, or the wait timed out: the message is upstream's."""


def _results(claim: ResourceClaimView) -> Sequence[Mapping[str, Any]]:
    allocation = (claim.raw.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    return [r for r in results if isinstance(r, Mapping)]


def _device_status(claim: ResourceClaimView, result: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for device in (claim.raw.get("status") or {}).get("devices") or []:
        if (
            isinstance(device, Mapping)
            and device.get("device") == result.get("device")
            and device.get("driver") == result.get("driver")
            and device.get("pool") == result.get("pool")
        ):
            return device
    return None


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in status.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


def has_binding_conditions(claims: Sequence[ResourceClaimView]) -> bool:
    return any(r.get("bindingConditions") for claim in claims for r in _results(claim))


def claim_ready(claim: ResourceClaimView) -> bool:
    """isClaimReadyForBinding: every binding condition of every device True; raises
    BindingFailed when a failure condition is True."""
    if claim.allocation is None:
        return False
    for result in _results(claim):
        if not result.get("bindingConditions"):
            continue
        status = _device_status(claim, result)
        if status is None:
            return False
        for kind in result.get("bindingFailureConditions") or []:
            failed = _condition(status, kind)
            if failed is not None and failed.get("status") == "True":
                raise BindingFailed(
                    f"{ERR_FAILED}: claim={claim.name}, reason={failed.get('reason', '')}, "
                    f'message="{failed.get("message", "")}"'
                )
        for kind in result.get("bindingConditions") or []:
            condition = _condition(status, kind)
            if condition is None or condition.get("status") != "True":
                return False
    return True


def _parse_time(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def claim_stuck(claim: ResourceClaimView, timeout: float) -> bool:
    """A claim whose binding failed or timed out (Filter: PostFilter may deallocate it)."""
    try:
        ready = claim_ready(claim)
    except BindingFailed:
        return True
    return not ready and claim_timed_out(claim, timeout, datetime.now(UTC))


def claim_timed_out(claim: ResourceClaimView, timeout: float, now: datetime) -> bool:
    """isClaimTimeout: a device with binding conditions, allocated longer than `timeout` ago."""
    allocation = (claim.raw.get("status") or {}).get("allocation") or {}
    stamp = _parse_time(allocation.get("allocationTimestamp"))
    if stamp is None:
        return False
    return any(
        r.get("bindingConditions") is not None and (now - stamp).total_seconds() > timeout
        for r in _results(claim)
    )


def pod_ready(claims: Sequence[ResourceClaimView], timeout: float) -> bool:
    """isPodReadyForBinding over the claims as the scheduler now sees them."""
    now = datetime.now(UTC)
    for claim in claims:
        if not claim_ready(claim):
            if claim_timed_out(claim, timeout, now):
                raise BindingFailed(f"{ERR_TIMEOUT}: claim={claim.name}")
            return False
    return True


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def wait_until_ready(
    claims: list[ResourceClaimView],
    latest: Callable[[ResourceClaimView], ResourceClaimView | None],
    timeout: float,
) -> str | None:
    """PreBind's wait (upstream polls every 5 s, up to bindingTimeout) for the drivers to set
    the devices' binding conditions, reading each claim as `latest` (the informer and this
    scheduler's writes) shows it; `claims` is updated in place. None when ready, else the
    error message. (Upstream also records a BindingConditionsPending event; plugins here have
    no event recorder.)"""
    deadline = time.monotonic() + timeout
    while True:
        for index, claim in enumerate(claims):
            claims[index] = latest(claim) or claim
        try:
            if pod_ready(claims, timeout):
                return None
        except BindingFailed as err:
            return str(err)
        if time.monotonic() >= deadline:
            return f"{ERR_TIMEOUT}: context deadline exceeded"
        await asyncio.sleep(min(POLL_INTERVAL, max(deadline - time.monotonic(), 0)))
