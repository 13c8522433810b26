"""The structured allocator's answer for one claim: `status.allocation` built from the devices
the search picked (upstream's allocator Allocate, after the search: results, config, node
selector)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api.resource import (
    CONFIG_SOURCE_CLAIM,
    CONFIG_SOURCE_CLASS,
    AllocatedDevice,
    DeviceSubRequest,
    OpaqueConfig,
    ResourceClaimView,
)
from scheduler.plugins.dynamicresources.allocation import (
    AllocationError,
    AllocationResult,
    ConfigEntry,
)
from scheduler.plugins.dynamicresources.candidates import (
    DeviceResult,
    RequestData,
    node_selector_for,
)


def allocation_result(
    claim_index: int,
    claim: ResourceClaimView,
    device_results: Sequence[DeviceResult],
    request_data: Mapping[tuple[int, int, int], RequestData],
    device_taints: bool,
    binding_conditions: bool = False,
) -> AllocationResult:
    """One claim's `status.allocation`: its devices, the config passed through from its
    classes and itself (in upstream's order), the node selector that pins it."""
    devices = tuple(
        AllocatedDevice(
            request=result.request_name,
            driver=result.candidate.device_id[0],
            pool=result.candidate.device_id[1],
            device=result.candidate.device_id[2],
            admin_access=result.admin_access,
            share_id=result.share_id,
            consumed_capacity={name: nanos for name, (nanos, _) in result.consumed.items()},
        )
        for result in device_results
    )
    tolerations = tuple(
        _request_of(claim, result).tolerations if device_taints else () for result in device_results
    )

    config: list[ConfigEntry] = []
    class_ranges: dict[str, tuple[int, int]] = {}
    for request_index in range(len(claim.requests)):
        data = request_data[(claim_index, request_index, 0)]
        if data.parent_name:
            data = request_data[(claim_index, request_index, data.selected_sub_request)]
        device_class = data.class_
        if device_class is None:
            continue
        span = class_ranges.get(device_class.name)
        if span is not None:
            for i in range(*span):
                entry = config[i]
                config[i] = ConfigEntry(
                    entry.source, (*entry.requests, data.name), entry.driver, entry.parameters
                )
            continue
        start = len(config)
        for class_config in device_class.config:
            config.append(
                ConfigEntry(
                    CONFIG_SOURCE_CLASS,
                    (data.name,),
                    class_config.driver,
                    class_config.parameters,
                )
            )
        class_ranges[device_class.name] = (start, len(config))
    for claim_config in claim.config:
        if not claim_config.requests:
            config.append(
                ConfigEntry(CONFIG_SOURCE_CLAIM, (), claim_config.driver, claim_config.parameters)
            )
            continue
        for request_index, request in enumerate(claim.requests):
            if request.name in claim_config.requests:
                config.append(_from_claim(claim_config))
                continue
            data = request_data[(claim_index, request_index, 0)]
            if not data.parent_name:
                continue
            chosen = request.first_available[data.selected_sub_request]
            if f"{request.name}/{chosen.name}" in claim_config.requests:
                config.append(_from_claim(claim_config))
    # a config for every request: "empty means all"
    config = [
        ConfigEntry(entry.source, (), entry.driver, entry.parameters)
        if len(entry.requests) == len(claim.requests)
        else entry
        for entry in config
    ]
    try:
        node_selector = node_selector_for(device_results)
    except ValueError as err:
        raise AllocationError(f"create NodeSelector for claim {claim.name}: {err}") from None
    consumed_text = tuple(
        {name: text for name, (_, text) in result.consumed.items()} for result in device_results
    )
    binding = tuple(
        (
            result.candidate.device.binding_conditions,
            result.candidate.device.binding_failure_conditions,
        )
        if binding_conditions
        else ((), ())
        for result in device_results
    )
    return AllocationResult(
        devices, tuple(config), node_selector, tolerations, consumed_text, binding
    )


def _request_of(claim: ResourceClaimView, result: DeviceResult) -> DeviceSubRequest:
    for request in claim.requests:
        if request.name == (result.parent_request or result.request):
            if not result.parent_request and request.exactly is not None:
                return request.exactly
            for sub in request.first_available:
                if sub.name == result.request:
                    return sub
    raise AssertionError("allocated device for an unknown request")


def _from_claim(claim_config: OpaqueConfig) -> ConfigEntry:
    return ConfigEntry(
        CONFIG_SOURCE_CLAIM, claim_config.requests, claim_config.driver, claim_config.parameters
    )


# resourceapi.FirstAvailableDeviceRequestMaxSize
FIRST_AVAILABLE_MAX_SIZE = 8


def prioritized_list_score(
    to_allocate: Sequence[tuple[int, ResourceClaimView]], allocations: Sequence[AllocationResult]
) -> int:
    """computeScore: for each claim allocated here, each `firstAvailable` alternative that was
    picked scores FirstAvailableDeviceRequestMaxSize minus its position."""
    score = 0
    for (_, claim), allocation in zip(to_allocate, allocations, strict=False):
        picked = {result.request for result in allocation.devices if "/" in result.request}
        for request in claim.requests:
            if request.exactly is not None:
                continue
            for position, sub in enumerate(request.first_available):
                if f"{request.name}/{sub.name}" in picked:
                    score += FIRST_AVAILABLE_MAX_SIZE - position
    return score


#: Span attributes of Reserve and PreBind (traced attempts only): the pod's claims
#: ("namespace/name") and each device they hold ("namespace/claim/request: driver/pool/device").
CLAIMS_ATTRIBUTE = "aiosched.dra.claims"
DEVICES_ATTRIBUTE = "aiosched.dra.devices"


def allocation_span_attributes(
    claims: Sequence[ResourceClaimView], infos: Sequence[Any]
) -> dict[str, tuple[str, ...]]:
    """The claims and their devices: the allocation Reserve decided (`infos[i].allocation`),
    or the one the claim already had."""
    keys: list[str] = []
    devices: list[str] = []
    for claim, info in zip(claims, infos, strict=False):
        key = f"{claim.namespace}/{claim.name}"
        keys.append(key)
        allocated = (
            info.allocation.devices
            if info.allocation is not None
            else claim.allocation.devices
            if claim.allocation is not None
            else ()
        )
        devices += [f"{key}/{d.request}: {d.driver}/{d.pool}/{d.device}" for d in allocated]
    return {CLAIMS_ATTRIBUTE: tuple(keys), DEVICES_ATTRIBUTE: tuple(devices)}
