"""Why the structured allocator could not allocate a pod's claims on one node.

Upstream's Filter says only "cannot allocate all claims" (events, conditions and the FitError keep
exactly that). `aiosched explain` and `what-if` add, per node, which claim and which request (or
sub-request) could not be satisfied and why. Nothing here runs while scheduling: the plugin asks
only when explain records a failed attempt or what-if answers, and only for the nodes the
allocator rejected, reusing the cycle's Allocator (its selector outcomes are cached from Filter).

The diagnosis works from the simplest explanation to the most involved one:

1. each request (each alternative of a `firstAvailable` request) on its own: its class exists,
   some device of the node's pools matches its selectors, enough of those are free, their pools
   are complete and valid;
2. each claim on its own (every request fits alone): a `matchAttribute` constraint no
   combination of free devices satisfies, or requests competing for the same devices;
3. the claims together (each fits alone): the earlier claims take what a later one needs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from scheduler.api.node import NodeView
from scheduler.api.resource import (
    ALLOCATION_MODE_ALL,
    DeviceSubRequest,
    ResourceClaimView,
)
from scheduler.plugins.dynamicresources.allocation import AllocationError, klog
from scheduler.plugins.dynamicresources.allocator import Allocator, _Run
from scheduler.plugins.dynamicresources.candidates import (
    Candidate,
    RequestData,
    taint_prevents_allocation,
)
from scheduler.plugins.dynamicresources.pools import NodeSelectionError, Pool

# The request-data key a diagnosis run evaluates selectors under (one claim, one request).
_KEY = (0, 0, 0)


@dataclass(frozen=True, slots=True)
class RequestDiagnosis:
    """One reason a node cannot take the pod's claims: the claim (namespace/name), the request
    ("request/sub-request" for an alternative of `firstAvailable`; the constraint's requests
    for a `matchAttribute` failure; "" when the whole claim is meant) and why."""

    claim: str
    request: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"claim": self.claim, "request": self.request, "reason": self.reason}


def diagnose(
    allocator: Allocator, node: NodeView, claims: Sequence[ResourceClaimView]
) -> list[RequestDiagnosis]:
    """Why `claims` cannot all be allocated on `node` (empty when nothing explains it: they
    fit, or the allocation failed for a reason outside the claims, such as the search being
    cut short)."""
    try:
        pools = allocator._index.gather(node)
    except NodeSelectionError as err:
        return [RequestDiagnosis("", "", f"gather pool information: {err}")]
    findings = _requests_alone(allocator, node, claims, pools)
    if findings:
        return findings
    findings = _claims_alone(allocator, node, claims, pools)
    if findings:
        return findings
    return _claims_together(allocator, node, claims, pools)


# --- 1. each request on its own ---------------------------------------------------------


def _requests_alone(
    allocator: Allocator,
    node: NodeView,
    claims: Sequence[ResourceClaimView],
    pools: list[Pool],
) -> list[RequestDiagnosis]:
    findings: list[RequestDiagnosis] = []
    for claim in claims:
        run = _Run(allocator, node, [claim], pools)
        for request in claim.requests:
            if request.first_available:
                alternatives = [(sub, request.name) for sub in request.first_available]
            elif request.exactly is not None:
                alternatives = [(request.exactly, "")]
            else:
                continue  # PreFilter rejects unknown request types
            failed: list[RequestDiagnosis] = []
            for sub, parent in alternatives:
                name = f"{parent}/{sub.name}" if parent else sub.name
                reason = _request_reason(allocator, run, pools, sub, parent)
                if reason is None:
                    failed = []  # one alternative fits: so does the request
                    break
                failed.append(RequestDiagnosis(klog(claim), name, reason))
            findings.extend(failed)
    return findings


def _request_reason(
    allocator: Allocator,
    run: _Run,
    pools: list[Pool],
    request: DeviceSubRequest,
    parent: str,
) -> str | None:
    """Why this request (or sub-request) cannot be satisfied on the node on its own; None
    when it can."""
    device_class = allocator.classes.get(request.device_class_name)
    if device_class is None:
        return f"device class {request.device_class_name} not found"
    data = RequestData(request, parent, device_class)
    try:
        usable: list[Candidate] = []
        unusable: dict[str, Pool] = {}  # incomplete or invalid pools with a matching device
        for pool in pools:
            for resource_slice in pool.slices:
                for index, device in enumerate(resource_slice.devices):
                    candidate = Candidate(
                        (pool.driver, pool.name, device.name), device, index, resource_slice, pool
                    )
                    if not run._is_selectable(_KEY, data, candidate):
                        continue
                    if pool.incomplete or pool.invalid:
                        unusable[pool.pool_id] = pool
                    else:
                        usable.append(candidate)
        if not usable:
            drivers = _matching_drivers(allocator, run, data)
            for pool in pools:
                if pool.driver in drivers and (pool.incomplete or pool.invalid):
                    unusable.setdefault(pool.pool_id, pool)
    except AllocationError as err:  # a selector that does not compile or evaluate
        return str(err)
    allocated = allocator.allocated.devices
    features = allocator.features
    free = [
        c
        for c in usable
        if (data.admin_access or c.device_id not in allocated)
        and not (c.device.consumes_counters and not features.partitionable_devices)
        and not (features.device_taints and taint_prevents_allocation(c.device, request))
    ]
    matching = len(usable)
    if request.allocation_mode == ALLOCATION_MODE_ALL:
        if unusable:
            return _pool_reason(next(iter(unusable.values())))
        if not usable:
            return _no_match_reason(allocator, run, data, pools)
        if len(free) < matching:
            return (
                f"allocationMode All: {matching} device(s) match, {matching - len(free)} allocated"
            )
        return None
    needed = request.count
    with_room = [c for c in free if run._capacity_fits(data, c)]
    if len(with_room) >= needed:
        return None
    if len(free) >= needed:
        # consumable capacity: the devices are there, their capacity is taken
        return (
            f"{matching} device(s) match, {len(with_room)} with the requested capacity left, "
            f"{needed} requested"
        )
    if unusable:
        return _pool_reason(next(iter(unusable.values())))
    if not usable:
        return _no_match_reason(allocator, run, data, pools)
    if matching < needed:
        return f"{matching} device(s) match, {needed} requested"
    if not free:
        return f"{matching} device(s) match, all allocated"
    return f"{matching} device(s) match, {len(free)} free, {needed} requested"


def _pool_reason(pool: Pool) -> str:
    if pool.invalid:
        return f"resource pool {pool.pool_id} is invalid: {pool.invalid_reason}"
    seen = len(pool.slices)
    expected = pool.slices[0].pool_slice_count if pool.slices else 0
    return f"resource pool {pool.pool_id} is incomplete ({seen} of {expected} ResourceSlices)"


def _no_match_reason(allocator: Allocator, run: _Run, data: RequestData, pools: list[Pool]) -> str:
    """No device of the node matches: either the node has no slice of any driver whose devices
    match elsewhere, or none of its devices match the selectors."""
    drivers = _matching_drivers(allocator, run, data)
    on_node = {pool.driver for pool in pools}
    if drivers and not drivers & on_node:
        return f"node has no ResourceSlice of driver {', '.join(sorted(drivers))}"
    class_name = data.class_.name if data.class_ is not None else data.request.device_class_name
    return f"no device of class {class_name} matches the selectors"


def _matching_drivers(allocator: Allocator, run: _Run, data: RequestData) -> frozenset[str]:
    """The drivers of every device in the cycle's slices (any node) that matches the request's
    class and selectors; computed once per (class, selectors) and allocator."""
    class_name = data.class_.name if data.class_ is not None else ""
    cache_key = (class_name, data.request.selectors)
    cached = allocator._diagnosis_drivers.get(cache_key)
    if cached is not None:
        return cached
    class_selectors = data.class_.selectors if data.class_ is not None else ()
    drivers: set[str] = set()
    for resource_slice in allocator.slices:
        if resource_slice.driver in drivers:
            continue
        pool = Pool(resource_slice.driver, resource_slice.pool_name, [resource_slice])
        for index, device in enumerate(resource_slice.devices):
            candidate = Candidate(
                (resource_slice.driver, resource_slice.pool_name, device.name),
                device,
                index,
                resource_slice,
                pool,
            )
            if run._selectors_match(_KEY, data.class_, candidate, class_selectors) and (
                run._selectors_match(_KEY, None, candidate, data.request.selectors)
            ):
                drivers.add(resource_slice.driver)
                break
    result = frozenset(drivers)
    allocator._diagnosis_drivers[cache_key] = result
    return result


# --- 2. each claim on its own -------------------------------------------------------------


def _fits(
    allocator: Allocator, node: NodeView, claims: Sequence[ResourceClaimView], pools: list[Pool]
) -> bool | str:
    """True when `claims` can be allocated together; False when not; the error's text when
    the allocator refuses them."""
    try:
        return _Run(allocator, node, claims, pools).run() is not None
    except AllocationError as err:
        return str(err)


def _claims_alone(
    allocator: Allocator,
    node: NodeView,
    claims: Sequence[ResourceClaimView],
    pools: list[Pool],
) -> list[RequestDiagnosis]:
    findings: list[RequestDiagnosis] = []
    for claim in claims:
        fits = _fits(allocator, node, [claim], pools)
        if fits is True:
            continue
        name = klog(claim)
        if isinstance(fits, str):
            findings.append(RequestDiagnosis(name, "", fits))
            continue
        unconstrained = dataclasses.replace(claim, constraints=())
        if claim.constraints and _fits(allocator, node, [unconstrained], pools) is True:
            for constraint in claim.constraints:
                alone = dataclasses.replace(claim, constraints=(constraint,))
                if _fits(allocator, node, [alone], pools) is True:
                    continue
                requests = constraint.requests or tuple(r.name for r in claim.requests)
                findings.append(
                    RequestDiagnosis(
                        name,
                        ", ".join(requests),
                        f"matchAttribute {constraint.match_attribute}: no combination of free "
                        "devices shares one value",
                    )
                )
            if findings:
                continue
            reason = "no combination of free devices satisfies the claim's constraints together"
            findings.append(RequestDiagnosis(name, "", reason))
            continue
        findings.append(
            RequestDiagnosis(
                name,
                ", ".join(r.name for r in claim.requests),
                "the claim's requests together need more free devices than the node has",
            )
        )
    return findings


# --- 3. the claims together ---------------------------------------------------------------


def _claims_together(
    allocator: Allocator,
    node: NodeView,
    claims: Sequence[ResourceClaimView],
    pools: list[Pool],
) -> list[RequestDiagnosis]:
    for count in range(2, len(claims) + 1):
        fits = _fits(allocator, node, claims[:count], pools)
        if fits is True:
            continue
        claim = claims[count - 1]
        if isinstance(fits, str):
            return [RequestDiagnosis(klog(claim), "", fits)]
        earlier = ", ".join(klog(c) for c in claims[: count - 1])
        return [
            RequestDiagnosis(
                klog(claim),
                "",
                f"not enough free devices left after the pod's other claims ({earlier})",
            )
        ]
    return []
