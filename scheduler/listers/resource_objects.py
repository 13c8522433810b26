"""DeviceClasses, ResourceSlices and ResourceClaims (resource.k8s.io/v1),
kept by informers for DynamicResources, and the claims' state the scheduler adds to them.

Upstream: pkg/scheduler/framework/plugins/dynamicresources/dra_manager.go (the shared DRA
manager: listers, the claims' assume cache, in-flight allocations) and allocateddevices.go (the
incrementally maintained set of allocated devices). One `ResourceObjects` is shared by every
profile, as upstream's SharedDRAManager, so that two profiles never hand out one device twice.

Claims are seen through `ClaimTracker`:
- the informer's claims, overlaid by claims the scheduler itself wrote (PreBind) until the
  informer shows that version or a newer one (upstream's assume cache);
- allocations in flight: decided in Reserve, not yet written by PreBind;
- the devices those allocate, kept as counts updated per change, so that PreFilter reads the
  allocated devices without walking every claim (the scheduler must not do per-pod work that
  grows with the number of claims).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from scheduler.api.device_taint_rule import DeviceTaintRuleView
from scheduler.api.resource import (
    AllocatedDevice,
    DeviceClassView,
    ResourceClaimView,
    ResourceSliceView,
)
from scheduler.framework.events import EventResource
from scheduler.listers.storage_objects import EventSink, KeyedStore

DeviceID = tuple[str, str, str]
SharedDeviceID = tuple[DeviceID, str]

RESOURCE_API = "/apis/resource.k8s.io/v1"
TAINT_RULES_API = "/apis/resource.k8s.io/v1beta2"
# resourceapi.ResourceDeviceClassPrefix: every class backs `<prefix><class name>`
DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"


def _reversed_text(text: str) -> tuple[int, ...]:
    """A key that sorts names backwards (so that the smallest name comes last, and wins)."""
    return (*(-ord(c) for c in text), 1)


def _resource_version_number(version: str) -> int | None:
    try:
        return int(version)
    except ValueError:
        return None


PoolKey = tuple[str, str]
#: Changes AllocatedDevices remembers the pool of (pools_changed_since).
_LOG_MAX = 1 << 16
_NO_DEVICES: frozenset[Any] = frozenset()
_NO_CAPACITY: Mapping[DeviceID, Mapping[str, int]] = {}


def _pooled_key(item: object, shared: bool) -> PoolKey | None:
    """The (driver, pool) of a device id, or of a (device id, share id) pair when `shared`."""
    device = item[0] if shared and isinstance(item, tuple) else item
    if not isinstance(device, tuple):
        return None
    return device[:2]


class _Pooled:
    """Members kept per (driver, pool) in `_pools`: what the two snapshots below share."""

    __slots__ = ()
    _pools: Mapping[PoolKey, Any]

    def __iter__(self) -> Iterator[Any]:
        for members in self._pools.values():
            yield from members

    def __len__(self) -> int:
        return sum(len(members) for members in self._pools.values())


class PooledSet(_Pooled, AbstractSet[Any]):
    """A read-only set of device ids (or (device id, share id) pairs) kept as one frozen set
    per (driver, pool): a snapshot of the allocated devices costs a copy of the pools'
    index, not of every device, and a change rebuilds only its pool's set."""

    __slots__ = ("_key", "_pools")

    def __init__(self, pools: Mapping[PoolKey, frozenset[Any]], shared: bool = False) -> None:
        self._pools = pools
        self._key = shared

    def __contains__(self, item: object) -> bool:
        pool = _pooled_key(item, self._key)
        return pool is not None and item in self._pools.get(pool, _NO_DEVICES)

    @classmethod
    def _from_iterable(cls, items: Iterable[Any]) -> frozenset[Any]:
        # what `|`, `&` and `-` answer: a plain frozenset
        return frozenset(items)


class PooledCapacity(_Pooled, Mapping[DeviceID, Mapping[str, int]]):
    """A read-only device → consumed capacity mapping kept per (driver, pool), as PooledSet."""

    __slots__ = ("_pools",)
    _pools: Mapping[PoolKey, Mapping[DeviceID, Mapping[str, int]]]

    def __init__(self, pools: Mapping[PoolKey, Mapping[DeviceID, Mapping[str, int]]]) -> None:
        self._pools = pools

    def __getitem__(self, device: DeviceID) -> Mapping[str, int]:
        return self._pools.get(device[:2], _NO_CAPACITY)[device]

    def get(self, device: DeviceID, default: Any = None) -> Any:
        return self._pools.get(device[:2], _NO_CAPACITY).get(device, default)

    def __contains__(self, device: object) -> bool:
        pool = _pooled_key(device, False)
        return pool is not None and device in self._pools.get(pool, _NO_CAPACITY)


def _count(
    counts: Counter[Any], members: dict[PoolKey, set[Any]], pool: PoolKey, key: Any, sign: int
) -> None:
    """Count `key` up or down; it is a member of its pool while its count is positive."""
    counts[key] += sign
    if counts[key] <= 0:
        del counts[key]
        members.get(pool, set()).discard(key)
    else:
        members.setdefault(pool, set()).add(key)


class AllocatedDevices:
    """Counts of allocated devices (and shared-device allocations, and capacity consumed on
    them) from a set of allocation results, updated per result set added or removed."""

    def __init__(self) -> None:
        self.devices: Counter[DeviceID] = Counter()
        self.shared: Counter[SharedDeviceID] = Counter()
        self.capacity: dict[DeviceID, Counter[str]] = {}
        # Moves on every change; per (driver, pool), moves when a device of that pool changes:
        # what lets a memo of per-node allocations (DynamicResources) tell that a node's
        # devices are as they were without comparing them.
        self.version = 0
        self.pool_versions: dict[PoolKey, int] = {}
        # The pool each version changed, from version `_log_start` + 1 on (bounded).
        self._log: list[PoolKey] = []
        self._log_start = 0
        # Per pool, frozen copies of the above for snapshots, rebuilt when the pool is read
        # after a change (`snapshot`), and the last snapshot taken.
        self._members: dict[PoolKey, set[DeviceID]] = {}
        self._shared_members: dict[PoolKey, set[SharedDeviceID]] = {}
        self._frozen: dict[PoolKey, frozenset[DeviceID]] = {}
        self._frozen_shared: dict[PoolKey, frozenset[SharedDeviceID]] = {}
        self._frozen_capacity: dict[PoolKey, dict[DeviceID, dict[str, int]]] = {}
        self._dirty: set[PoolKey] = set()
        self._snapshot: tuple[int, PooledSet, PooledSet, PooledCapacity] | None = None

    def add(self, results: Iterable[AllocatedDevice], sign: int = 1) -> None:
        for result in results:
            # foreachAllocatedDevice: admin access does not take a device from others.
            if result.admin_access:
                continue
            device = result.device_id
            pool = device[:2]
            self.version += 1
            self.pool_versions[pool] = self.version
            self._log.append(pool)
            if len(self._log) > _LOG_MAX:
                del self._log[: _LOG_MAX // 2]
                self._log_start = self.version - len(self._log)
            self._dirty.add(pool)
            if result.share_id:
                _count(self.shared, self._shared_members, pool, (device, result.share_id), sign)
                if result.consumed_capacity:
                    consumed = self.capacity.setdefault(device, Counter())
                    for name, amount in result.consumed_capacity.items():
                        consumed[name] += sign * amount
                    if not any(consumed.values()):
                        del self.capacity[device]
                continue
            _count(self.devices, self._members, pool, device, sign)

    def remove(self, results: Iterable[AllocatedDevice]) -> None:
        self.add(results, -1)

    def pools_changed_since(self, version: int) -> set[PoolKey] | None:
        """The pools whose allocations changed after `version`; None when that is too long
        ago to say."""
        if version < self._log_start:
            return None
        return set(self._log[version - self._log_start :])

    def snapshot(self) -> tuple[PooledSet, PooledSet, PooledCapacity]:
        """The allocated devices, the shared allocations and the consumed capacity as they
        are now, unchanged by later changes: per change, the pools that changed are frozen
        again and the pools' index is copied (not every device)."""
        cached = self._snapshot
        if cached is not None and cached[0] == self.version:
            return cached[1], cached[2], cached[3]
        for pool in self._dirty:
            self._frozen[pool] = frozenset(self._members.get(pool, ()))
            shared = self._shared_members.get(pool, set())
            self._frozen_shared[pool] = frozenset(shared)
            self._frozen_capacity[pool] = {
                device: dict(self.capacity[device])
                for device in {device for device, _ in shared}
                if device in self.capacity
            }
        self._dirty.clear()
        cached = self._snapshot = (
            self.version,
            PooledSet(dict(self._frozen)),
            PooledSet(dict(self._frozen_shared), shared=True),
            PooledCapacity(dict(self._frozen_capacity)),
        )
        return cached[1], cached[2], cached[3]


class ClaimTracker:
    """The claims as DynamicResources sees them: informer + assumed + in flight."""

    def __init__(self, store: KeyedStore[ResourceClaimView]) -> None:
        self._store = store
        self._assumed: dict[str, ResourceClaimView] = {}
        # claim uid → (claim with its allocation as Reserve decided it, the devices)
        self._pending: dict[str, tuple[ResourceClaimView, tuple[AllocatedDevice, ...]]] = {}
        self._allocated = AllocatedDevices()
        store.subscribe(self._informer_changed)

    # -- reading ---------------------------------------------------------------------------

    def get(self, namespace: str, name: str) -> ResourceClaimView | None:
        key = f"{namespace}/{name}"
        assumed = self._assumed.get(key)
        return assumed if assumed is not None else self._store.get(key)

    def list(self) -> list[ResourceClaimView]:
        return [self._assumed.get(key, claim) for key, claim in self._store.by_key.items()]

    def has_pending_allocation(self, uid: str) -> bool:
        """ClaimHasPendingAllocation."""
        return uid in self._pending

    @property
    def version(self) -> int:
        """Moves whenever the allocated devices change."""
        return self._allocated.version

    def pools_changed_since(self, version: int) -> set[PoolKey] | None:
        """The (driver, pool) of every allocation change after `version`; None: unknown."""
        return self._allocated.pools_changed_since(version)

    def pool_version(self, pool: tuple[str, str]) -> int:
        """Moves whenever an allocation of a device of `pool` (driver, pool name) changes."""
        return self._allocated.pool_versions.get(pool, 0)

    def allocated_devices(self) -> AbstractSet[DeviceID]:
        """Devices allocated by claims or in-flight allocations (ListAllAllocatedDevices), as
        they are now (a snapshot: later changes do not show in it)."""
        return self._allocated.snapshot()[0]

    def allocated_shared(
        self,
    ) -> tuple[AbstractSet[SharedDeviceID], Mapping[DeviceID, Mapping[str, int]]]:
        """Shared-device allocations and the capacity consumed on each device
        (GatherAllocatedState's other half), a snapshot as allocated_devices."""
        _, shared, capacity = self._allocated.snapshot()
        return shared, capacity

    # -- in-flight allocations (Reserve → PreBind) -----------------------------------------

    def signal_pending_allocation(
        self, claim: ResourceClaimView, devices: tuple[AllocatedDevice, ...]
    ) -> None:
        """SignalClaimPendingAllocation: `claim`'s devices count as allocated from now on."""
        self.remove_pending_allocation(claim.uid)
        self._pending[claim.uid] = (claim, devices)
        self._allocated.add(devices)

    def remove_pending_allocation(self, uid: str) -> bool:
        """RemoveClaimPendingAllocation; whether there was one."""
        entry = self._pending.pop(uid, None)
        if entry is None:
            return False
        self._allocated.remove(entry[1])
        return True

    # -- the assume cache ------------------------------------------------------------------

    def assume(self, claim: ResourceClaimView) -> None:
        """AssumeClaimAfterAPICall: the scheduler wrote `claim`; use it until the informer
        shows this version or a newer one. Ignored when the informer is ahead already."""
        current = self._store.get(claim.key)
        if current is not None and not self._newer(claim, current):
            return
        self._replace_effective(claim.key, lambda: self._assumed.__setitem__(claim.key, claim))

    def restore(self, namespace: str, name: str) -> None:
        """AssumedClaimRestore: drop what was assumed for the claim."""
        key = f"{namespace}/{name}"
        if key in self._assumed:
            self._replace_effective(key, lambda: self._assumed.pop(key, None))

    # -- internals -------------------------------------------------------------------------

    @staticmethod
    def _newer(claim: ResourceClaimView, than: ResourceClaimView) -> bool:
        mine = _resource_version_number(claim.resource_version)
        theirs = _resource_version_number(than.resource_version)
        if mine is None or theirs is None:
            return claim.resource_version != than.resource_version
        return mine > theirs

    def _effective(self, key: str) -> ResourceClaimView | None:
        assumed = self._assumed.get(key)
        return assumed if assumed is not None else self._store.get(key)

    def _replace_effective(self, key: str, change: Callable[[], Any]) -> None:
        before = self._effective(key)
        change()
        after = self._effective(key)
        if before is not after:
            self._account(before, -1)
            self._account(after, 1)

    def _account(self, claim: ResourceClaimView | None, sign: int) -> None:
        if claim is not None and claim.allocation is not None:
            self._allocated.add(claim.allocation.devices, sign)

    def _informer_changed(self, old: Any, new: Any) -> None:
        # The store already holds `new`; what was effective before was `old` unless assumed.
        key = (new or old).key
        assumed = self._assumed.get(key)
        if assumed is not None:
            if new is None or not self._newer(assumed, new):
                # Deleted, or the informer caught up: the informer's version wins.
                del self._assumed[key]
                self._account(assumed, -1)
                self._account(new, 1)
            return
        self._account(old, -1)
        self._account(new, 1)


class ResourceObjects:
    """The resource.k8s.io listers. Filled by informers (`informer_specs`) or by tests."""

    def __init__(self) -> None:
        self.classes: KeyedStore[DeviceClassView] = KeyedStore(
            EventResource.DEVICE_CLASS, "DeviceClass"
        )
        self.slices: KeyedStore[ResourceSliceView] = KeyedStore(
            EventResource.RESOURCE_SLICE, "ResourceSlice"
        )
        self.claims: KeyedStore[ResourceClaimView] = KeyedStore(
            EventResource.RESOURCE_CLAIM, "ResourceClaim"
        )
        self.tracker = ClaimTracker(self.claims)
        # DeviceTaintRules (v1beta2; DRADeviceTaintRules): their taints are added to the
        # devices they select in `slices_with_taint_rules`, recomputed after a change
        self.taint_rules: KeyedStore[DeviceTaintRuleView] = KeyedStore(
            EventResource.RESOURCE_SLICE, "DeviceTaintRule"
        )
        self._tainted_slices: list[ResourceSliceView] | None = None
        for store in (self.slices, self.taint_rules):
            store.subscribe(lambda old, new: self._forget_tainted_slices())
        # extended resource name → the DeviceClass backing it (DRAExtendedResource)
        self._extended: dict[str, DeviceClassView] = {}
        self.classes.subscribe(lambda old, new: self._index_extended_resources())

    def connect(self, sink: EventSink) -> None:
        """Send every later change of classes, slices and claims to `sink` as a cluster event
        (upstream's eventhandlers.go registers these three, not templates); a DeviceTaintRule's
        change reads as a change of slices (upstream's slice tracker republishes them)."""
        for store in (self.classes, self.slices, self.claims, self.taint_rules):
            store.subscribe(_as_events(store, sink))

    def _forget_tainted_slices(self) -> None:
        self._tainted_slices = None

    def slices_with_taint_rules(self) -> list[ResourceSliceView]:
        """The slices with the DeviceTaintRules' taints added to the devices they select
        (upstream's resourceslicetracker), computed once per change of slices or rules."""
        if self._tainted_slices is None:
            rules = list(self.taint_rules.list())
            self._tainted_slices = [
                _with_taint_rules(s, rules) if rules else s for s in self.slices.list()
            ]
        return self._tainted_slices

    def informer_specs(self) -> list[tuple[str, str, Any, KeyedStore[Any]]]:
        """(informer name, API path, parser, store) for each kind the scheduler reads.
        Not ResourceClaimTemplates: the resourceclaim controller turns them into claims and
        kube-scheduler never watches them (nor may it: system:kube-scheduler grants no read
        of them)."""
        return [
            ("deviceclasses", f"{RESOURCE_API}/deviceclasses", DeviceClassView.from_dict,
             self.classes),
            ("resourceslices", f"{RESOURCE_API}/resourceslices", ResourceSliceView.from_dict,
             self.slices),
            ("resourceclaims", f"{RESOURCE_API}/resourceclaims", ResourceClaimView.from_dict,
             self.claims),
            ("devicetaintrules", f"{TAINT_RULES_API}/devicetaintrules",
             DeviceTaintRuleView.from_dict, self.taint_rules),
        ]  # fmt: skip

    # -- listers ---------------------------------------------------------------------------

    def device_class(self, name: str) -> DeviceClassView | None:
        return self.classes.get(name)

    def class_for_extended_resource(self, resource_name: str) -> DeviceClassView | None:
        """The DeviceClass that backs an extended resource (upstream's ExtendedResourceCache
        GetDeviceClass): the class naming it in `spec.extendedResourceName` (the newest such
        class, then the first by name), or `deviceclass.resource.kubernetes.io/<class>`."""
        return self._extended.get(resource_name)

    def _index_extended_resources(self) -> None:
        # Rebuilt on each DeviceClass change: classes are few and change rarely, and a
        # lookup per pod must not walk them.
        index: dict[str, DeviceClassView] = {}
        by_age = sorted(self.classes.list(), key=lambda c: (c.created, _reversed_text(c.name)))
        for device_class in by_age:  # later (newer, then smaller name) entries win
            if device_class.extended_resource_name:
                index[device_class.extended_resource_name] = device_class
        for device_class in self.classes.list():
            index[DEVICE_CLASS_RESOURCE_PREFIX + device_class.name] = device_class
        self._extended = index

    def claim(self, namespace: str, name: str) -> ResourceClaimView | None:
        """The claim as the scheduler sees it (assumed writes included)."""
        return self.tracker.get(namespace, name)

    # -- for tests -------------------------------------------------------------------------

    def add(self, *objects: Any) -> None:
        """Add views (from scheduler.api.resource's `from_dict`) to their stores."""
        stores: dict[type, KeyedStore[Any]] = {
            DeviceClassView: self.classes,
            ResourceSliceView: self.slices,
            ResourceClaimView: self.claims,
            DeviceTaintRuleView: self.taint_rules,
        }
        for obj in objects:
            stores[type(obj)].on_add(obj)


def _as_events(store: KeyedStore[Any], sink: EventSink) -> Callable[[Any, Any], None]:
    def send(old: Any, new: Any) -> None:
        sink(store.event_of(old, new), old, new)

    return send


def _with_taint_rules(
    resource_slice: ResourceSliceView, rules: list[DeviceTaintRuleView]
) -> ResourceSliceView:
    devices = []
    changed = False
    for device in resource_slice.devices:
        extra = tuple(
            rule.taint
            for rule in rules
            if rule.selects(resource_slice.driver, resource_slice.pool_name, device.name)
        )
        if extra:
            changed = True
            device = dataclasses.replace(device, taints=device.taints + extra)
        devices.append(device)
    if not changed:
        return resource_slice
    return dataclasses.replace(resource_slice, devices=tuple(devices))
