"""The structured allocator: which devices of which ResourceSlices satisfy a pod's claims on one
node (upstream's k8s.io/dynamic-resource-allocation/structured, allocator.go).

The plugin builds one `Allocator` per scheduling cycle (PreFilter) and calls `allocate` per node
(Filter). The allocator never changes anything: it answers with the allocation results the
plugin reserves (in-flight) and later writes to each claim's status in PreBind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.node import NodeView
from scheduler.api.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    CONFIG_SOURCE_CLAIM,
    CONFIG_SOURCE_CLASS,
    AllocatedDevice,
    AttributeValue,
    DeviceClassView,
    DeviceSubRequest,
    DeviceToleration,
    DeviceView,
    ResourceClaimView,
    ResourceSliceView,
)
from scheduler.plugins.dynamicresources.cel import CelCache, CelRuntimeError
from scheduler.plugins.dynamicresources.pools import (
    NodeSelectionError,
    Pool,
    SliceIndex,
    node_matches,
)

# (driver, pool, device): how upstream's DeviceID names one device.
DeviceID = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class DRAFeatures:
    """The feature gates the allocator reads (upstream's structured.Features)."""

    prioritized_list: bool = True  # DRAPrioritizedList: `firstAvailable`
    admin_access: bool = True  # DRAAdminAccess
    device_taints: bool = False  # DRADeviceTaints
    partitionable_devices: bool = False  # DRAPartitionableDevices: shared counters
    consumable_capacity: bool = False  # DRAConsumableCapacity
    device_binding_conditions: bool = False  # DRADeviceBindingConditions


@dataclass(frozen=True, slots=True)
class AllocatedState:
    """What is allocated already, by claims in the cluster and by in-flight allocations of pods
    assumed but not bound yet (upstream's structured.AllocatedState)."""

    devices: frozenset[DeviceID] = frozenset()
    # devices that allow multiple allocations: (device, share id) pairs already handed out,
    # and the capacity consumed on each such device so far (nanos by qualified name)
    shared_device_ids: frozenset[tuple[DeviceID, str]] = frozenset()
    consumed_capacity: Mapping[DeviceID, Mapping[str, int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One `status.allocation.devices.config` entry (DeviceAllocationConfiguration)."""

    source: str  # "FromClass" | "FromClaim"
    requests: tuple[str, ...]
    driver: str
    parameters: Any


@dataclass(frozen=True, slots=True)
class AllocationResult:
    """What one claim gets on the node: its devices, the config passed through from its
    classes and itself, and the node selector that restricts pods using it."""

    devices: tuple[AllocatedDevice, ...]
    config: tuple[ConfigEntry, ...]
    node_selector: Mapping[str, Any] | None  # a core/v1 NodeSelector, as JSON
    # per device (same order as `devices`): the tolerations of the request that got it, which
    # upstream copies into the result with DRADeviceTaints; empty tuples otherwise
    tolerations: tuple[tuple[DeviceToleration, ...], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """`status.allocation` as the API takes it (resourceapi.AllocationResult)."""
        results: list[dict[str, Any]] = []
        for i, device in enumerate(self.devices):
            entry: dict[str, Any] = {
                "request": device.request,
                "driver": device.driver,
                "pool": device.pool,
                "device": device.device,
            }
            if device.admin_access:
                entry["adminAccess"] = True
            if device.share_id:
                entry["shareID"] = device.share_id
            tolerations = self.tolerations[i] if i < len(self.tolerations) else ()
            if tolerations:
                entry["tolerations"] = [_toleration_dict(t) for t in tolerations]
            results.append(entry)
        devices: dict[str, Any] = {"results": results}
        if self.config:
            devices["config"] = [
                {
                    "source": entry.source,
                    **({"requests": list(entry.requests)} if entry.requests else {}),
                    "opaque": {"driver": entry.driver, "parameters": entry.parameters},
                }
                for entry in self.config
            ]
        allocation: dict[str, Any] = {"devices": devices}
        if self.node_selector is not None:
            allocation["nodeSelector"] = self.node_selector
        return allocation


def _toleration_dict(toleration: DeviceToleration) -> dict[str, Any]:
    result: dict[str, Any] = {"operator": toleration.operator}
    if toleration.key:
        result["key"] = toleration.key
    if toleration.value:
        result["value"] = toleration.value
    if toleration.effect:
        result["effect"] = toleration.effect
    if toleration.toleration_seconds is not None:
        result["tolerationSeconds"] = toleration.toleration_seconds
    return result


class AllocationError(Exception):
    """A claim cannot be allocated on any node for a reason the user must fix (a class that
    does not exist, a selector that fails to compile or evaluate...). The message is
    upstream's and names the claim and request."""


class FailedAllocationOnNode(AllocationError):
    """Allocation failed on this node only, for a reason worth telling the user (upstream's
    ErrFailedAllocationOnNode: "invalid resource pools were encountered"). The plugin treats it
    as the node being unschedulable with this message, not as an error for the pod."""


# resourceapi.AllocationResultsMaxSize: at most this many devices per claim.
ALLOCATION_RESULTS_MAX_SIZE = 32


class _Stop(Exception):
    """errStop: allocation cannot succeed, stop searching."""


class _MaxSizeExceeded(Exception):
    """errAllocationResultMaxSizeExceeded: backtrack further (a sub-request with fewer devices
    may still fit)."""


def _klog(claim: ResourceClaimView) -> str:
    return f"{claim.namespace}/{claim.name}" if claim.namespace else claim.name


@dataclass(slots=True)
class _RequestData:
    """requestData: one request without sub-requests, or one sub-request."""

    request: DeviceSubRequest
    parent_name: str  # "" unless a sub-request
    class_: DeviceClassView | None
    num_devices: int = 0
    selected_sub_request: int = 0
    all_devices: list[_Candidate] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.parent_name}/{self.request.name}" if self.parent_name else self.request.name

    @property
    def admin_access(self) -> bool:
        # deviceSubRequestAccessor.adminAccess() is always false
        return self.request.admin_access and not self.parent_name


@dataclass(frozen=True, slots=True)
class _Candidate:
    device_id: DeviceID
    device: DeviceView
    device_index: int
    slice: ResourceSliceView
    pool: Pool


@dataclass(slots=True)
class _DeviceResult:
    request: str  # the request's or sub-request's own name
    parent_request: str
    candidate: _Candidate
    admin_access: bool

    @property
    def request_name(self) -> str:
        return f"{self.parent_request}/{self.request}" if self.parent_request else self.request


class _MatchAttributeConstraint:
    """matchAttributeConstraint: all devices of the named requests (all requests when none are
    named) share one value of the attribute; a device without it never satisfies it."""

    __slots__ = ("attribute", "num_devices", "request_names", "value")

    def __init__(self, request_names: tuple[str, ...], attribute: str) -> None:
        self.request_names = frozenset(request_names)
        self.attribute = attribute
        self.value: AttributeValue | None = None
        self.num_devices = 0

    def _applies(self, request: str, sub_request: str) -> bool:
        if not self.request_names:
            return True
        if not sub_request:
            return request in self.request_names
        return request in self.request_names or f"{request}/{sub_request}" in self.request_names

    def add(self, request: str, sub_request: str, device: DeviceView) -> bool:
        if not self._applies(request, sub_request):
            return True
        value = device.attributes.get(self.attribute)
        if value is None:
            return False
        if self.num_devices == 0:
            self.value = value
            self.num_devices = 1
            return True
        # the same type and the same value (True == 1 in Python, not in the API)
        if type(value) is not type(self.value) or value != self.value:
            return False
        self.num_devices += 1
        return True

    def remove(self, request: str, sub_request: str, device: DeviceView) -> None:
        if self._applies(request, sub_request):
            self.num_devices -= 1


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
    ) -> None:
        self.features = features
        self.allocated = allocated
        self.classes = classes
        self.slices = slices
        self.cel_cache: CelCache = (
            cel_cache
            if cel_cache is not None
            else CelCache(consumable_capacity=features.consumable_capacity)
        )
        self._index = SliceIndex(slices, features.partitionable_devices)
        # (class, request selectors, slice, device index) → whether the selectors match: what
        # decides the outcome, so it is shared by every node and every claim of the cycle
        # (upstream's per-Allocate deviceMatchesRequest, widened; the slices are held by this
        # allocator, so their ids are stable). Per-device node selection is checked apart.
        self._selectable: dict[tuple[str, tuple[str, ...], int, int], bool] = {}

    def allocate(
        self, node: NodeView, claims: Sequence[ResourceClaimView]
    ) -> list[AllocationResult] | None:
        """One result per claim, in order, when all fit on `node`; None when they do not (the
        plugin then says "cannot allocate all claims"). Raises AllocationError when a claim is
        unusable whatever the node, FailedAllocationOnNode when this node's pools are invalid
        and nothing could be allocated."""
        try:
            pools = self._index.gather(node)
        except NodeSelectionError as err:
            raise AllocationError(f"gather pool information: {err}") from None
        return _Run(self, node, claims, pools).run()


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
        self.request_data: dict[tuple[int, int, int], _RequestData] = {}
        self.constraints: list[list[_MatchAttributeConstraint]] = []
        self.allocating: dict[DeviceID, set[int]] = {}
        self.results: list[list[_DeviceResult]] = [[] for _ in claims]
        self.consumed_counters: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
        self.available_counters: dict[tuple[str, str], dict[str, dict[str, int]]] = {}

    # --- validation -------------------------------------------------------------------

    def run(self) -> list[AllocationResult] | None:
        for claim_index, claim in enumerate(self.claims):
            min_devices = 0
            for request_index, request in enumerate(claim.requests):
                if request.first_available:
                    if not self.features.prioritized_list:
                        raise AllocationError(
                            f"claim {_klog(claim)}, request {request.name}: has subrequests, "
                            "but the DRAPrioritizedList feature is disabled"
                        )
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
                            f"claim {_klog(claim)}, request {request.name}: missing device "
                            "class name (unsupported request type?)"
                        )
                    data = self._validate(claim_index, request_index, 0, request.exactly, "")
                    self.request_data[(claim_index, request_index, 0)] = data
                    min_devices += data.num_devices
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {_klog(claim)}: number of requested devices {min_devices} exceeds "
                    f"the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
                )
            constraints = []
            for i, constraint in enumerate(claim.constraints):
                if not constraint.match_attribute:
                    raise AllocationError(
                        f"claim {_klog(claim)}, constraint #{i}: empty constraint "
                        "(unsupported constraint type?)"
                    )
                constraints.append(
                    _MatchAttributeConstraint(constraint.requests, constraint.match_attribute)
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
        return [self._result(i, claim) for i, claim in enumerate(self.claims)]

    def _validate(
        self,
        claim_index: int,
        request_index: int,
        sub_index: int,
        request: DeviceSubRequest,
        parent_name: str,
    ) -> _RequestData:
        claim = self.claims[claim_index]
        if request.admin_access and not parent_name and not self.features.admin_access:
            raise AllocationError(
                f"claim {_klog(claim)}, request {request.name}: admin access is requested, "
                "but the feature is disabled"
            )
        if not request.device_class_name:
            raise AllocationError(
                f"claim {_klog(claim)}, request {request.name}: missing device class name "
                "(unsupported request type?)"
            )
        device_class = self.owner.classes.get(request.device_class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {_klog(claim)}, request {request.name}: could not retrieve device "
                f"class {request.device_class_name}: deviceclass.resource.k8s.io "
                f'"{request.device_class_name}" not found'
            )
        data = _RequestData(request, parent_name, device_class)
        if request.allocation_mode == ALLOCATION_MODE_EXACT_COUNT:
            data.num_devices = request.count
        elif request.allocation_mode == ALLOCATION_MODE_ALL:
            key = (claim_index, request_index, sub_index)
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {_klog(claim)}, request {request.name}: asks for all devices, "
                        f"but resource pool {pool.pool_id} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {_klog(claim)}, request {request.name}: asks for all devices, "
                        f"but resource pool {pool.pool_id} is currently invalid"
                    )
                for resource_slice in pool.slices:
                    for device_index, device in enumerate(resource_slice.devices):
                        candidate = _Candidate(
                            (resource_slice.driver, resource_slice.pool_name, device.name),
                            device,
                            device_index,
                            resource_slice,
                            pool,
                        )
                        if self._is_selectable(key, data, candidate):
                            data.all_devices.append(candidate)
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(
                f"claim {_klog(claim)}, request {request.name}: unsupported count mode "
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

        admin = data.admin_access
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            for resource_slice in pool.slices:
                for index, device in enumerate(resource_slice.devices):
                    device_id = (pool.driver, pool.name, device.name)
                    if admin:
                        if claim_index in self.allocating.get(device_id, ()):
                            continue
                    elif self._in_use(device_id):
                        continue
                    candidate = _Candidate(device_id, device, index, resource_slice, pool)
                    if not self._is_selectable(key, data, candidate):
                        continue
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
                        )
                    except BaseException:
                        rollback()
                        raise
                    if done:
                        return True
                    rollback()
        return False

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.owner.allocated.devices or bool(self.allocating.get(device_id))

    def _is_selectable(
        self, key: tuple[int, int, int], data: _RequestData, candidate: _Candidate
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
        candidate: _Candidate,
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
                    f"claim {_klog(self.claims[key[0]])}: selector #{i}: CEL compile error: "
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
                    f"claim {_klog(self.claims[key[0]])}: selector #{i} on device {device_id}: "
                    f"CEL runtime error: {err}"
                ) from None
            if not matches:
                return False
        return True

    def _allocate_device(
        self,
        claim_index: int,
        key: tuple[int, int, int],
        data: _RequestData,
        candidate: _Candidate,
        *,
        must: bool,
    ) -> Callable[[], None] | None:
        """allocateDevice: the rollback when the candidate was taken, None when it cannot be."""
        claim = self.claims[claim_index]
        device_id = candidate.device_id
        if data.admin_access:
            if claim_index in self.allocating.get(device_id, ()):
                return None
        elif self._in_use(device_id):
            return None
        device = candidate.device
        if device.consumes_counters and not self.features.partitionable_devices:
            return None
        if device.consumes_counters and not self._take_counters(candidate):
            return None
        if self.features.device_taints and _taint_prevents_allocation(device, data.request):
            if device.consumes_counters:
                self._release_counters(candidate)
            return None

        base = data.parent_name or data.request.name
        sub = data.request.name if data.parent_name else ""
        constraints = self.constraints[claim_index]
        for i, constraint in enumerate(constraints):
            if not constraint.add(base, sub, device):
                if must:
                    raise AllocationError(
                        f"claim {_klog(claim)}, request {data.request.name}: cannot add device "
                        f"{'/'.join(device_id)} because a claim constraint would not be satisfied"
                    )
                for previous in constraints[:i]:
                    previous.remove(base, sub, device)
                if device.consumes_counters:
                    self._release_counters(candidate)
                return None

        self.allocating.setdefault(device_id, set()).add(claim_index)
        results = self.results[claim_index]
        previous_count = len(results)
        results.append(
            _DeviceResult(data.request.name, data.parent_name, candidate, data.admin_access)
        )

        def rollback() -> None:
            for constraint in constraints:
                constraint.remove(base, sub, device)
            self.allocating[device_id].discard(claim_index)
            if device.consumes_counters:
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

    def _take_counters(self, candidate: _Candidate) -> bool:
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

    def _release_counters(self, candidate: _Candidate) -> None:
        consumed = self.consumed_counters[(candidate.pool.driver, candidate.pool.name)]
        for consumption in candidate.device.consumes_counters:
            counters = consumed[consumption.counter_set]
            for name, amount in consumption.counters.items():
                counters[name] -= amount

    # --- the result -------------------------------------------------------------------

    def _result(self, claim_index: int, claim: ResourceClaimView) -> AllocationResult:
        device_results = self.results[claim_index]
        devices = tuple(
            AllocatedDevice(
                request=result.request_name,
                driver=result.candidate.device_id[0],
                pool=result.candidate.device_id[1],
                device=result.candidate.device_id[2],
                admin_access=result.admin_access,
                share_id="",
                consumed_capacity={},
            )
            for result in device_results
        )
        tolerations = tuple(
            self._request_of(claim, result).tolerations if self.features.device_taints else ()
            for result in device_results
        )

        config: list[ConfigEntry] = []
        class_ranges: dict[str, tuple[int, int]] = {}
        for request_index in range(len(claim.requests)):
            data = self.request_data[(claim_index, request_index, 0)]
            if data.parent_name:
                data = self.request_data[(claim_index, request_index, data.selected_sub_request)]
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
                    ConfigEntry(
                        CONFIG_SOURCE_CLAIM, (), claim_config.driver, claim_config.parameters
                    )
                )
                continue
            for request_index, request in enumerate(claim.requests):
                if request.name in claim_config.requests:
                    config.append(
                        ConfigEntry(
                            CONFIG_SOURCE_CLAIM,
                            claim_config.requests,
                            claim_config.driver,
                            claim_config.parameters,
                        )
                    )
                    continue
                data = self.request_data[(claim_index, request_index, 0)]
                if not data.parent_name:
                    continue
                chosen = request.first_available[data.selected_sub_request]
                if f"{request.name}/{chosen.name}" in claim_config.requests:
                    config.append(
                        ConfigEntry(
                            CONFIG_SOURCE_CLAIM,
                            claim_config.requests,
                            claim_config.driver,
                            claim_config.parameters,
                        )
                    )
        # a config for every request: "empty means all"
        config = [
            ConfigEntry(entry.source, (), entry.driver, entry.parameters)
            if len(entry.requests) == len(claim.requests)
            else entry
            for entry in config
        ]
        try:
            node_selector = _node_selector(device_results)
        except ValueError as err:
            raise AllocationError(f"create NodeSelector for claim {claim.name}: {err}") from None
        return AllocationResult(devices, tuple(config), node_selector, tolerations)

    @staticmethod
    def _request_of(claim: ResourceClaimView, result: _DeviceResult) -> DeviceSubRequest:
        for request in claim.requests:
            if request.name == (result.parent_request or result.request):
                if not result.parent_request and request.exactly is not None:
                    return request.exactly
                for sub in request.first_available:
                    if sub.name == result.request:
                        return sub
        raise AssertionError("allocated device for an unknown request")


def _taint_prevents_allocation(device: DeviceView, request: DeviceSubRequest) -> bool:
    for taint in device.taints:
        # only the known effects prevent allocation
        if taint.effect in ("NoSchedule", "NoExecute") and not any(
            toleration.tolerates(taint) for toleration in request.tolerations
        ):
            return True
    return False


def _raw_node_selection(result: _DeviceResult) -> tuple[str, Mapping[str, Any] | None]:
    """The nodeName and nodeSelector (as JSON) that place a device: its own with
    perDeviceNodeSelection, else its slice's."""
    resource_slice = result.candidate.slice
    spec = resource_slice.raw.get("spec", {}) if resource_slice.raw else {}
    if resource_slice.per_device_node_selection:
        devices = spec.get("devices") or []
        raw = (
            devices[result.candidate.device_index]
            if result.candidate.device_index < len(devices)
            else {}
        )
        return result.candidate.device.node_name, raw.get("nodeSelector")
    return resource_slice.node_name, spec.get("nodeSelector")


def _node_selector(results: Sequence[_DeviceResult]) -> Mapping[str, Any] | None:
    """createNodeSelector: a node-local device pins the claim to its node; node selectors of
    network-attached devices are merged into one term; devices on all nodes add nothing."""
    fields: list[Mapping[str, Any]] = []
    expressions: list[Mapping[str, Any]] = []
    for result in results:
        node_name, selector = _raw_node_selection(result)
        if node_name:
            return {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [node_name]}
                        ]
                    }
                ]
            }
        if selector is None:
            continue
        terms = selector.get("nodeSelectorTerms") or []
        if len(terms) == 0:
            continue
        if len(terms) > 1:
            raise ValueError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
        term = terms[0] or {}
        _add_requirements(term.get("matchFields") or [], fields)
        _add_requirements(term.get("matchExpressions") or [], expressions)
    if not fields and not expressions:
        return None
    merged: dict[str, Any] = {}
    if expressions:
        merged["matchExpressions"] = expressions
    if fields:
        merged["matchFields"] = fields
    return {"nodeSelectorTerms": [merged]}


def _add_requirements(new: Sequence[Mapping[str, Any]], into: list[Mapping[str, Any]]) -> None:
    for requirement in new:
        values = set(requirement.get("values") or ())
        if not any(
            existing.get("key") == requirement.get("key")
            and existing.get("operator") == requirement.get("operator")
            and set(existing.get("values") or ()) == values
            for existing in into
        ):
            into.append(requirement)
