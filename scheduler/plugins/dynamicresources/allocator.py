"""The structured allocator: which devices of which ResourceSlices satisfy a pod's claims on one
node (upstream's k8s.io/dynamic-resource-allocation/structured, allocator.go).

The plugin builds one `Allocator` per scheduling cycle (PreFilter) and calls `allocate` per node
(Filter). The allocator never changes anything: it answers with the allocation results the
plugin reserves (in-flight) and later writes to each claim's status in PreBind. What it answers
and starts from is in `allocation`, its working pieces in `candidates`, consumable capacity in
`capacity`; `diagnosis` (explain, what-if) builds on all of them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from scheduler.api.node import NodeView
from scheduler.api.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    DeviceClassView,
    DeviceSubRequest,
    ResourceClaimView,
    ResourceSliceView,
)
from scheduler.plugins.dynamicresources import capacity
from scheduler.plugins.dynamicresources.allocation import (
    ALLOCATION_RESULTS_MAX_SIZE,
    AllocatedState,
    AllocationError,
    AllocationResult,
    DeviceID,
    DRAFeatures,
    FailedAllocationOnNode,
    klog,
)
from scheduler.plugins.dynamicresources.candidates import (
    Candidate,
    DeviceResult,
    DistinctAttributeConstraint,
    MatchAttributeConstraint,
    RequestData,
    taint_prevents_allocation,
)
from scheduler.plugins.dynamicresources.cel import CelCache, CelRuntimeError
from scheduler.plugins.dynamicresources.pools import (
    NodeSelectionError,
    Pool,
    SliceIndex,
    node_matches,
)
from scheduler.plugins.dynamicresources.ranking import DeviceChoice, DeviceRanker
from scheduler.plugins.dynamicresources.results import allocation_result

__all__ = [
    "AllocatedState",
    "AllocationError",
    "AllocationResult",
    "Allocator",
    "DRAFeatures",
    "FailedAllocationOnNode",
]

Constraint = MatchAttributeConstraint | DistinctAttributeConstraint
# Where a search over the node's devices starts: (pool, slice, device) indices.
Location = tuple[int, int, int]


class _Stop(Exception):
    """errStop: allocation cannot succeed, stop searching."""


class _MaxSizeExceeded(Exception):
    """errAllocationResultMaxSizeExceeded: backtrack further (a sub-request with fewer devices
    may still fit)."""


class Allocator:
    """Upstream's structured.Allocator for one scheduling cycle (the "stable" variant that
    default feature gates run: structured/internal/stable/allocator_stable.go).

    The search is upstream's: claims in order, requests in order, devices one at a time from
    the pools the node reaches in slice order, the first full solution wins, with
    backtracking. Sub-requests (`firstAvailable`) are tried in order. Selector outcomes are
    cached per cycle (and across cycles in `cel_cache`)."""

    def __init__(
        self,
        *,
        features: DRAFeatures,
        allocated: AllocatedState,
        classes: Mapping[str, DeviceClassView],
        slices: Sequence[ResourceSliceView],
        cel_cache: Any = None,
        ranker: DeviceRanker | None = None,
        index: SliceIndex | None = None,
    ) -> None:
        self.features = features
        self.allocated = allocated
        # None: upstream's device order (ranking.py)
        self.ranker = ranker
        self.classes = classes
        self.slices = slices
        self.cel_cache: CelCache = (
            cel_cache
            if cel_cache is not None
            else CelCache(consumable_capacity=features.consumable_capacity)
        )
        # `index`: one built over these very slices before (the plugin keeps it while the
        # slices do not change: building it walks every slice)
        self._index = index or SliceIndex(slices, features.partitionable_devices)
        # (class, request selectors, slice, device index) → whether the selectors match: what
        # decides the outcome, so it is shared by every node and every claim of the cycle
        # (upstream's per-Allocate deviceMatchesRequest, widened; the slices are held by this
        # allocator, so their ids are stable). Per-device node selection is checked apart.
        self._selectable: dict[tuple[str, tuple[str, ...], int, int], bool] = {}
        # (class, request selectors) → drivers with a matching device anywhere: filled only
        # when someone asks why a node failed (diagnosis.py).
        self._diagnosis_drivers: dict[tuple[str, tuple[str, ...]], frozenset[str]] = {}

    def allocate(
        self, node: NodeView, claims: Sequence[ResourceClaimView]
    ) -> list[AllocationResult] | None:
        """One result per claim, in order, when all fit on `node`; None when they do not (the
        plugin then says "cannot allocate all claims"). Raises AllocationError when a claim is
        unusable whatever the node, FailedAllocationOnNode when this node's pools are invalid
        and nothing could be allocated."""
        return self.allocate_with_pools(node, claims)[0]

    def allocate_with_pools(
        self, node: NodeView, claims: Sequence[ResourceClaimView]
    ) -> tuple[list[AllocationResult] | None, list[tuple[str, str]]]:
        """`allocate`, and the (driver, pool) of every pool the node reaches: the devices the
        answer depends on (memo.py)."""
        try:
            pools = self._index.gather(node)
        except NodeSelectionError as err:
            raise AllocationError(f"gather pool information: {err}") from None
        return _Run(self, node, claims, pools).run(), [(p.driver, p.name) for p in pools]


class _Run:
    """One Allocate call (upstream's unexported `allocator`)."""

    def __init__(
        self,
        owner: Allocator,
        node: NodeView,
        claims: Sequence[ResourceClaimView],
        pools: list[Pool],
    ) -> None:
        self.owner = owner
        self.features = owner.features
        self.node = node
        self.claims = claims
        self.pools = pools
        self.request_data: dict[tuple[int, int, int], RequestData] = {}
        self.constraints: list[list[Constraint]] = []
        self.allocating: dict[DeviceID, set[int]] = {}
        # consumable capacity this call hands out on shareable devices (allocatingCapacity)
        self.allocating_capacity: dict[DeviceID, dict[str, int]] = {}
        self.results: list[list[DeviceResult]] = [[] for _ in claims]
        self.consumed_counters: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
        self.available_counters: dict[tuple[str, str], dict[str, dict[str, int]]] = {}

    # --- validation -------------------------------------------------------------------

    def run(self) -> list[AllocationResult] | None:
        for claim_index, claim in enumerate(self.claims):
            min_devices = 0
            for request_index, request in enumerate(claim.requests):
                if request.first_available and not self.features.prioritized_list:
                    raise AllocationError(
                        f"claim {klog(claim)}, request {request.name}: has subrequests, "
                        "but the DRAPrioritizedList feature is disabled"
                    )
                self._check_capacity_requests(claim, request.exactly, request.first_available)
                if request.first_available:
                    fewest = None
                    for sub_index, sub in enumerate(request.first_available):
                        data = self._validate(
                            claim_index, request_index, sub_index, sub, request.name
                        )
                        self.request_data[(claim_index, request_index, sub_index)] = data
                        if fewest is None or data.num_devices < fewest:
                            fewest = data.num_devices
                    min_devices += fewest or 0
                else:
                    if request.exactly is None:
                        raise AllocationError(
                            f"claim {klog(claim)}, request {request.name}: missing device "
                            "class name (unsupported request type?)"
                        )
                    data = self._validate(claim_index, request_index, 0, request.exactly, "")
                    self.request_data[(claim_index, request_index, 0)] = data
                    min_devices += data.num_devices
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {klog(claim)}: number of requested devices {min_devices} exceeds "
                    f"the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
                )
            constraints: list[Constraint] = []
            for i, constraint in enumerate(claim.constraints):
                if constraint.match_attribute:
                    constraints.append(
                        MatchAttributeConstraint(constraint.requests, constraint.match_attribute)
                    )
                elif constraint.distinct_attribute and self.features.consumable_capacity:
                    constraints.append(
                        DistinctAttributeConstraint(
                            constraint.requests, constraint.distinct_attribute
                        )
                    )
                else:
                    raise AllocationError(
                        f"claim {klog(claim)}, constraint #{i}: empty constraint "
                        "(unsupported constraint type?)"
                    )
            self.constraints.append(constraints)

        try:
            done = self._allocate_one(0, 0, 0, 0, False)
        except _Stop:
            return None
        except _MaxSizeExceeded:
            done = False
        if not done:
            if any(pool.invalid for pool in self.pools):
                raise FailedAllocationOnNode("invalid resource pools were encountered")
            return None
        return [
            allocation_result(
                i,
                claim,
                self.results[i],
                self.request_data,
                self.features.device_taints,
                self.features.device_binding_conditions,
            )
            for i, claim in enumerate(self.claims)
        ]

    def _check_capacity_requests(
        self,
        claim: ResourceClaimView,
        exactly: DeviceSubRequest | None,
        first_available: Sequence[DeviceSubRequest],
    ) -> None:
        """Capacity requests need DRAConsumableCapacity (upstream errors out rather than
        silently ignoring them)."""
        if self.features.consumable_capacity:
            return
        if exactly is not None and exactly.capacity_text is not None:
            raise AllocationError(
                f"claim {klog(claim)}, request {exactly.name}: has capacity requests, but the "
                "DRAConsumableCapacity feature is disabled"
            )
        for sub in first_available:
            if sub.capacity_text is not None:
                raise AllocationError(
                    f"claim {klog(claim)}, subrequest {sub.name}: has capacity requests, but "
                    "the DRAConsumableCapacity feature is disabled"
                )

    def _validate(
        self,
        claim_index: int,
        request_index: int,
        sub_index: int,
        request: DeviceSubRequest,
        parent_name: str,
    ) -> RequestData:
        claim = self.claims[claim_index]
        if request.admin_access and not parent_name and not self.features.admin_access:
            raise AllocationError(
                f"claim {klog(claim)}, request {request.name}: admin access is requested, "
                "but the feature is disabled"
            )
        if not request.device_class_name:
            raise AllocationError(
                f"claim {klog(claim)}, request {request.name}: missing device class name "
                "(unsupported request type?)"
            )
        device_class = self.owner.classes.get(request.device_class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {klog(claim)}, request {request.name}: could not retrieve device "
                f"class {request.device_class_name}: deviceclass.resource.k8s.io "
                f'"{request.device_class_name}" not found'
            )
        data = RequestData(request, parent_name, device_class)
        if request.allocation_mode == ALLOCATION_MODE_EXACT_COUNT:
            data.num_devices = request.count
        elif request.allocation_mode == ALLOCATION_MODE_ALL:
            key = (claim_index, request_index, sub_index)
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {klog(claim)}, request {request.name}: asks for all devices, "
                        f"but resource pool {pool.pool_id} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {klog(claim)}, request {request.name}: asks for all devices, "
                        f"but resource pool {pool.pool_id} is currently invalid"
                    )
                for resource_slice in pool.slices:
                    for device_index, device in enumerate(resource_slice.devices):
                        candidate = Candidate(
                            (resource_slice.driver, resource_slice.pool_name, device.name),
                            device,
                            device_index,
                            resource_slice,
                            pool,
                        )
                        if self._is_selectable(key, data, candidate) and self._capacity_fits(
                            data, candidate
                        ):
                            data.all_devices.append(candidate)
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(
                f"claim {klog(claim)}, request {request.name}: unsupported count mode "
                f"{request.allocation_mode}"
            )
        return data

    # --- the search -------------------------------------------------------------------

    def _allocate_one(
        self,
        claim_index: int,
        request_index: int,
        sub_index: int,
        device_index: int,
        allocate_sub_request: bool,
        start: Location = (0, 0, 0),
    ) -> bool:
        if claim_index >= len(self.claims):
            return True
        claim = self.claims[claim_index]
        if request_index >= len(claim.requests):
            try:
                return self._allocate_one(claim_index + 1, 0, 0, 0, False)
            except _MaxSizeExceeded:
                # not fatal: another allocation of an earlier claim's sub-requests may fit
                return False

        key = (claim_index, request_index, sub_index)
        data = self.request_data[key]

        if not allocate_sub_request and data.parent_name:
            all_exceeded = True
            index = 0
            while (claim_index, request_index, index) in self.request_data:
                try:
                    success = self._allocate_one(claim_index, request_index, index, 0, True)
                except _MaxSizeExceeded:
                    index += 1
                    continue
                all_exceeded = False
                if success:
                    self.request_data[(claim_index, request_index, 0)].selected_sub_request = index
                    return True
                index += 1
            if all_exceeded:
                raise _MaxSizeExceeded
            return False

        request = data.request
        all_devices = request.allocation_mode == ALLOCATION_MODE_ALL
        if all_devices and not data.all_devices:
            return False
        if device_index >= data.num_devices:
            return self._allocate_one(claim_index, request_index + 1, 0, 0, False)

        if (
            len(self.results[claim_index]) + data.num_devices - device_index
            > ALLOCATION_RESULTS_MAX_SIZE
        ):
            raise _MaxSizeExceeded

        if all_devices:
            candidate = data.all_devices[device_index]
            rollback = self._allocate_device(claim_index, key, data, candidate, must=True)
            if rollback is None:
                return False
            try:
                done = self._allocate_one(
                    claim_index, request_index, sub_index, device_index + 1, allocate_sub_request
                )
            except BaseException:
                rollback()
                raise
            if not done:
                rollback()
            return done

        found: Iterable[tuple[Candidate, Location]] = self._candidates(
            claim_index, key, data, start
        )
        ranker = self.owner.ranker
        if ranker is not None:
            found = self._ranked(ranker, data, list(found))
        for candidate, next_start in found:
            rollback = self._allocate_device(claim_index, key, data, candidate, must=False)
            if rollback is None:
                continue
            try:
                done = self._allocate_one(
                    claim_index,
                    request_index,
                    sub_index,
                    device_index + 1,
                    allocate_sub_request,
                    next_start,
                )
            except BaseException:
                rollback()
                raise
            if done:
                return True
            rollback()
        return False

    def _candidates(
        self,
        claim_index: int,
        key: tuple[int, int, int],
        data: RequestData,
        start: Location,
    ) -> Iterator[tuple[Candidate, Location]]:
        """The devices that may take the request now, in upstream's order from `start` on
        (the next device of a request is searched after the one before it: incubating's
        startLocation), each with where the search for the request's next device starts."""
        admin = data.admin_access
        for pool_index in range(start[0], len(self.pools)):
            pool = self.pools[pool_index]
            if pool.incomplete or pool.invalid:
                continue
            first_slice = start[1] if pool_index == start[0] else 0
            for slice_index in range(first_slice, len(pool.slices)):
                resource_slice = pool.slices[slice_index]
                first_device = start[2] if (pool_index, slice_index) == start[:2] else 0
                for index in range(first_device, len(resource_slice.devices)):
                    device = resource_slice.devices[index]
                    device_id = (pool.driver, pool.name, device.name)
                    if admin:
                        if claim_index in self.allocating.get(device_id, ()):
                            continue
                    elif self._in_use(device_id):
                        continue
                    candidate = Candidate(device_id, device, index, resource_slice, pool)
                    if not self._is_selectable(key, data, candidate):
                        continue
                    if not self._capacity_fits(data, candidate):
                        continue
                    yield candidate, (pool_index, slice_index, index + 1)

    def _ranked(
        self,
        ranker: DeviceRanker,
        data: RequestData,
        found: list[tuple[Candidate, Location]],
    ) -> list[tuple[Candidate, Location]]:
        """The candidates in the order a plugin's DeviceRanker asks for (ranking.py)."""
        by_id = {candidate.device_id: (candidate, start) for candidate, start in found}
        choices = [self._choice(candidate) for candidate, _ in found]
        ranked = ranker.rank(self.node, data.request, choices)
        return [by_id[choice.device_id] for choice in ranked if choice.device_id in by_id]

    def _choice(self, candidate: Candidate) -> DeviceChoice:
        device_id = candidate.device_id
        device = candidate.device
        held = self.owner.allocated.consumed_capacity.get(device_id, {})
        taking = self.allocating_capacity.get(device_id, {})
        return DeviceChoice(
            device_id=device_id,
            device=device,
            shared=self.features.consumable_capacity and device.allow_multiple_allocations,
            free={
                name: entry.value - held.get(name, 0) - taking.get(name, 0)
                for name, entry in device.consumable.items()
            },
        )

    def _capacity_fits(self, data: RequestData, candidate: Candidate) -> bool:
        """With DRAConsumableCapacity, whether the request fits in what is left of the
        device's capacity (every device's, shareable or not: CmpRequestOverCapacity); a
        request naming a capacity the device lacks skips the device."""
        if not self.features.consumable_capacity:
            return True
        request = data.request
        if not candidate.device.consumable:  # the common case, without a call
            return not request.capacity
        device_id = candidate.device_id
        try:
            return capacity.fits(
                self.owner.allocated.consumed_capacity.get(device_id, {}),
                request.capacity_text,
                request.capacity,
                candidate.device.consumable,
                self.allocating_capacity.get(device_id, {}),
            )
        except capacity.UnknownCapacity:
            return False

    def _capacity_in_use(self, device_id: DeviceID) -> bool:
        return (
            device_id in self.owner.allocated.consumed_capacity
            or device_id in self.allocating_capacity
        )

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.owner.allocated.devices or bool(self.allocating.get(device_id))

    def _is_selectable(
        self, key: tuple[int, int, int], data: RequestData, candidate: Candidate
    ) -> bool:
        device = candidate.device
        if not self.features.device_binding_conditions and device.binding_conditions:
            return False
        cache_key = (
            data.class_.name if data.class_ else "",
            data.request.selectors,
            id(candidate.slice),
            candidate.device_index,
        )
        cached = self.owner._selectable.get(cache_key)
        if cached is None:
            cached = self._selectors_match(
                key, data.class_, candidate, data.class_.selectors if data.class_ else ()
            ) and self._selectors_match(key, None, candidate, data.request.selectors)
            self.owner._selectable[cache_key] = cached
        if not cached:
            return False
        if candidate.slice.per_device_node_selection:
            try:
                return node_matches(
                    self.node, device.node_name, device.all_nodes, device.node_selector
                )
            except NodeSelectionError as err:
                raise AllocationError(str(err)) from None
        return True

    def _selectors_match(
        self,
        key: tuple[int, int, int],
        device_class: DeviceClassView | None,
        candidate: Candidate,
        selectors: Sequence[str],
    ) -> bool:
        cache = self.owner.cel_cache
        resource_slice = candidate.slice
        for i, expression in enumerate(selectors):
            compiled = cache.get_or_compile(expression)
            if compiled.error is not None:
                if device_class is not None:
                    raise AllocationError(
                        f"class {device_class.name}: selector #{i}: CEL compile error: "
                        f"{compiled.error}"
                    )
                raise AllocationError(
                    f"claim {klog(self.claims[key[0]])}: selector #{i}: CEL compile error: "
                    f"{compiled.error}"
                )
            try:
                matches = cache.device_matches(
                    compiled,
                    resource_slice.uid,
                    resource_slice.resource_version,
                    resource_slice.driver,
                    candidate.device,
                )
            except CelRuntimeError as err:
                device_id = "/".join(candidate.device_id)
                if device_class is not None:
                    raise AllocationError(
                        f"class {device_class.name}: selector #{i} on device {device_id}: "
                        f"CEL runtime error: {err}"
                    ) from None
                raise AllocationError(
                    f"claim {klog(self.claims[key[0]])}: selector #{i} on device {device_id}: "
                    f"CEL runtime error: {err}"
                ) from None
            if not matches:
                return False
        return True

    def _allocate_device(
        self,
        claim_index: int,
        key: tuple[int, int, int],
        data: RequestData,
        candidate: Candidate,
        *,
        must: bool,
    ) -> Callable[[], None] | None:
        """allocateDevice: the rollback when the candidate was taken, None when it cannot be."""
        claim = self.claims[claim_index]
        device_id = candidate.device_id
        device = candidate.device
        # A shareable device is never "in use": what limits it is its capacity.
        shared = self.features.consumable_capacity and device.allow_multiple_allocations
        if data.admin_access:
            if not shared and claim_index in self.allocating.get(device_id, ()):
                return None
        elif self._in_use(device_id):
            return None
        if device.consumes_counters and not self.features.partitionable_devices:
            return None
        # Counters are taken by the first share of a device only (skipCounterCheck).
        take_counters = bool(device.consumes_counters) and not (
            shared and self._capacity_in_use(device_id)
        )
        if take_counters and not self._take_counters(candidate):
            return None
        if self.features.device_taints and taint_prevents_allocation(device, data.request):
            if take_counters:
                self._release_counters(candidate)
            return None

        base = data.parent_name or data.request.name
        sub = data.request.name if data.parent_name else ""
        constraints = self.constraints[claim_index]
        for i, constraint in enumerate(constraints):
            if not constraint.add(base, sub, device):
                if must:
                    raise AllocationError(
                        f"claim {klog(claim)}, request {data.request.name}: cannot add device "
                        f"{'/'.join(device_id)} because a claim constraint would not be satisfied"
                    )
                for previous in constraints[:i]:
                    previous.remove(base, sub, device)
                if take_counters:
                    self._release_counters(candidate)
                return None

        if not self._capacity_fits(data, candidate):
            # a request of an "All" request whose devices were listed before earlier
            # requests of this claim took their capacity
            for constraint in constraints:
                constraint.remove(base, sub, device)
            if take_counters:
                self._release_counters(candidate)
            return None

        allocating = self.allocating.setdefault(device_id, set())
        if not shared:
            allocating.add(claim_index)
        share_id = ""
        consumed: dict[str, tuple[int, str]] = {}
        if shared:
            request = data.request
            consumed = capacity.consumed_by_request(
                request.capacity_text, request.capacity, device.consumable
            )
            share_id = str(uuid.uuid4())
            taken = self.allocating_capacity.setdefault(device_id, {})
            for name, (amount, _) in consumed.items():
                taken[name] = taken.get(name, 0) + amount
        results = self.results[claim_index]
        previous_count = len(results)
        results.append(
            DeviceResult(
                data.request.name,
                data.parent_name,
                candidate,
                data.admin_access,
                share_id,
                consumed,
            )
        )

        def rollback() -> None:
            for constraint in constraints:
                constraint.remove(base, sub, device)
            allocating.discard(claim_index)
            if shared:
                taken = self.allocating_capacity[device_id]
                for name, (amount, _) in consumed.items():
                    taken[name] -= amount
                if not any(taken.values()):
                    del self.allocating_capacity[device_id]
                # upstream does not give back the counters of a shareable device here
            elif take_counters:
                self._release_counters(candidate)
            del results[previous_count:]

        return rollback

    # --- partitionable devices (shared counters) ----------------------------------------

    def _available(self, pool: Pool) -> dict[str, dict[str, int]]:
        key = (pool.driver, pool.name)
        available = self.available_counters.get(key)
        if available is None:
            available = {}
            for resource_slice in pool.slices:
                for counter_set in resource_slice.shared_counters:
                    available[counter_set.name] = dict(counter_set.counters)
            allocated = self.owner.allocated.devices
            for resource_slice in pool.slices:
                for device in resource_slice.devices:
                    if (pool.driver, pool.name, device.name) not in allocated:
                        continue
                    for consumption in device.consumes_counters:
                        counters = available.get(consumption.counter_set, {})
                        for name, amount in consumption.counters.items():
                            if name in counters:
                                counters[name] -= amount
            self.available_counters[key] = available
        return available

    def _take_counters(self, candidate: Candidate) -> bool:
        pool = candidate.pool
        available = self._available(pool)
        consumed = self.consumed_counters.setdefault((pool.driver, pool.name), {})
        for consumption in candidate.device.consumes_counters:
            counters = consumed.setdefault(consumption.counter_set, {})
            for name, amount in consumption.counters.items():
                counters[name] = counters.get(name, 0) + amount
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for name, amount in counters.items():
                if amount < used.get(name, 0):
                    self._release_counters(candidate)
                    return False
        return True

    def _release_counters(self, candidate: Candidate) -> None:
        consumed = self.consumed_counters[(candidate.pool.driver, candidate.pool.name)]
        for consumption in candidate.device.consumes_counters:
            counters = consumed[consumption.counter_set]
            for name, amount in consumption.counters.items():
                counters[name] -= amount
