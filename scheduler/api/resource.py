"""Views of the Dynamic Resource Allocation kinds (`resource.k8s.io/v1`): DeviceClasses,
ResourceSlices, ResourceClaims and ResourceClaimTemplates, as the DynamicResources plugin and its
structured allocator read them, and the pod's `spec.resourceClaims` entries.

Field names and defaults follow upstream's staging/src/k8s.io/api/resource/v1/types.go (v1.34+:
devices are flat, requests are `exactly` or `firstAvailable`). Attribute and capacity names are
stored fully qualified ("domain/name"): a name without a domain belongs to the slice's driver,
as upstream's allocator qualifies them. Each view keeps its decoded JSON (`raw`) so that the
plugin can write a claim's status back without losing fields it does not model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from scheduler.api.device_capacity import DeviceCapacity, parse_device_capacity
from scheduler.api.device_capacity import quantity_nanos as _quantity_nanos
from scheduler.api.errors import MalformedObject
from scheduler.api.fields import (
    as_bool,
    as_int,
    as_list,
    as_mapping,
    as_str,
    as_str_map,
)
from scheduler.api.selectors import NodeSelector
from scheduler.api.values import OwnerReference, parse_owner_references

RESOURCE_GROUP = "resource.k8s.io"
# resourceapi.DeviceAllocationMode
ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"
# resourceapi.AllocationConfigSource
CONFIG_SOURCE_CLASS = "FromClass"
CONFIG_SOURCE_CLAIM = "FromClaim"
# The annotation the resourceclaim controller puts on claims it generates from a template
# (resourceapi.PodResourceClaimAnnotation).
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


def qualify(name: str, driver: str) -> str:
    """A fully qualified attribute or capacity name: names without a domain are the driver's."""
    return name if "/" in name else f"{driver}/{name}"


@dataclass(frozen=True, slots=True)
class SemVer:
    """A `version` attribute: semantic version 2.0.0, compared by precedence."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...]
    text: str

    @staticmethod
    def parse(text: str) -> SemVer:
        core, _, _build = text.partition("+")
        core, dash, pre = core.partition("-")
        parts = core.split(".")
        if len(parts) != 3 or not all(p.isdigit() for p in parts) or (dash and not pre):
            raise ValueError(f"{text!r} is not a semantic version")
        major, minor, patch = (int(p) for p in parts)
        return SemVer(major, minor, patch, tuple(pre.split(".")) if pre else (), text)

    def sort_key(self) -> tuple[Any, ...]:
        # A release sorts after its prereleases; numeric identifiers before alphanumeric ones.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.prerelease)
        return (self.major, self.minor, self.patch, not self.prerelease, pre)


# An attribute's value: int, bool, str or SemVer (exactly one of the API's four fields).
AttributeValue = int | bool | str | SemVer


def _attribute(raw: Any, path: str) -> AttributeValue:
    item = as_mapping(raw, path)
    present = [key for key in ("int", "bool", "string", "version") if item.get(key) is not None]
    if len(present) != 1:
        raise MalformedObject(f"{path}: exactly one of int, bool, string or version is required")
    kind = present[0]
    if kind == "int":
        return as_int(item["int"], f"{path}.int")
    if kind == "bool":
        return as_bool(item["bool"], f"{path}.bool")
    if kind == "string":
        return as_str(item["string"], f"{path}.string")
    text = as_str(item["version"], f"{path}.version")
    try:
        return SemVer.parse(text)
    except ValueError as err:
        raise MalformedObject(f"{path}.version: {err}") from None


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    value: str
    effect: str  # "NoSchedule" | "NoExecute"


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    key: str
    operator: str  # "Equal" (default) | "Exists"
    value: str
    effect: str
    toleration_seconds: int | None = None

    def tolerates(self, taint: DeviceTaint) -> bool:
        """resourceapi's ToleratesTaint, like the core one."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


def _taints(raw: Any, path: str) -> tuple[DeviceTaint, ...]:
    result = []
    for i, item in enumerate(as_list(raw, path)):
        item = as_mapping(item, f"{path}[{i}]")
        result.append(
            DeviceTaint(
                key=as_str(item.get("key"), f"{path}[{i}].key"),
                value=as_str(item.get("value"), f"{path}[{i}].value"),
                effect=as_str(item.get("effect"), f"{path}[{i}].effect"),
            )
        )
    return tuple(result)


def _tolerations(raw: Any, path: str) -> tuple[DeviceToleration, ...]:
    result = []
    for i, item in enumerate(as_list(raw, path)):
        item = as_mapping(item, f"{path}[{i}]")
        seconds = item.get("tolerationSeconds")
        result.append(
            DeviceToleration(
                key=as_str(item.get("key"), f"{path}[{i}].key"),
                operator=as_str(item.get("operator"), f"{path}[{i}].operator", "Equal"),
                value=as_str(item.get("value"), f"{path}[{i}].value"),
                effect=as_str(item.get("effect"), f"{path}[{i}].effect"),
                toleration_seconds=None
                if seconds is None
                else as_int(seconds, f"{path}[{i}].tolerationSeconds"),
            )
        )
    return tuple(result)


def _node_selector(raw: Any, path: str) -> NodeSelector | None:
    """A core/v1 NodeSelector (ORed terms), None when absent."""
    return None if raw is None else NodeSelector.from_dict(raw, path)


def _selectors(raw: Any, path: str) -> tuple[str, ...]:
    """DeviceSelector list: each holds one CEL expression (`cel.expression`)."""
    result = []
    for i, item in enumerate(as_list(raw, path)):
        cel = as_mapping(as_mapping(item, f"{path}[{i}]").get("cel"), f"{path}[{i}].cel")
        result.append(as_str(cel.get("expression"), f"{path}[{i}].cel.expression"))
    return tuple(result)


@dataclass(frozen=True, slots=True)
class OpaqueConfig:
    """One `config` entry: opaque parameters for one driver, for some requests (all if empty)."""

    requests: tuple[str, ...]
    driver: str
    parameters: Any  # passed through to the allocation result unchanged


def _configs(raw: Any, path: str) -> tuple[OpaqueConfig, ...]:
    result = []
    for i, item in enumerate(as_list(raw, path)):
        item = as_mapping(item, f"{path}[{i}]")
        opaque = as_mapping(item.get("opaque"), f"{path}[{i}].opaque")
        result.append(
            OpaqueConfig(
                requests=tuple(
                    as_str(r, f"{path}[{i}].requests")
                    for r in as_list(item.get("requests"), f"{path}[{i}].requests")
                ),
                driver=as_str(opaque.get("driver"), f"{path}[{i}].opaque.driver"),
                parameters=opaque.get("parameters"),
            )
        )
    return tuple(result)


def _metadata(obj: Any, kind: str) -> Mapping[str, Any]:
    return as_mapping(as_mapping(obj, kind).get("metadata"), "metadata")


# --- DeviceClass ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceClassView:
    name: str
    uid: str
    resource_version: str
    selectors: tuple[str, ...]  # CEL expressions, all must be true
    config: tuple[OpaqueConfig, ...]
    extended_resource_name: str  # "" when unset
    raw: Mapping[str, Any] = field(repr=False, compare=False)
    created: str = ""  # metadata.creationTimestamp (RFC 3339, compares as text)

    @property
    def key(self) -> str:
        return self.name

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> DeviceClassView:
        meta = _metadata(obj, "deviceclass")
        spec = as_mapping(obj.get("spec"), "spec")
        return DeviceClassView(
            name=as_str(meta.get("name"), "metadata.name"),
            uid=as_str(meta.get("uid"), "metadata.uid"),
            resource_version=as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            selectors=_selectors(spec.get("selectors"), "spec.selectors"),
            config=_configs(spec.get("config"), "spec.config"),
            extended_resource_name=as_str(
                spec.get("extendedResourceName"), "spec.extendedResourceName"
            ),
            raw=obj,
            created=as_str(meta.get("creationTimestamp"), "metadata.creationTimestamp"),
        )


# --- ResourceSlice -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CounterConsumption:
    counter_set: str
    counters: Mapping[str, int]  # counter name → amount (nanos of the quantity)


@dataclass(frozen=True, slots=True)
class DeviceView:
    """One device of a slice. `attributes` and `capacity` are keyed by fully qualified name;
    capacity values are in nanos of the quantity (exact for any quantity the API accepts)."""

    name: str
    attributes: Mapping[str, AttributeValue]
    capacity: Mapping[str, int]
    capacity_text: Mapping[str, str]  # the quantities as written, for CEL's quantity values
    consumes_counters: tuple[CounterConsumption, ...]
    # per-device node selection (only with the slice's perDeviceNodeSelection)
    node_name: str
    node_selector: NodeSelector | None
    all_nodes: bool
    taints: tuple[DeviceTaint, ...]
    binds_to_node: bool
    binding_conditions: tuple[str, ...]
    binding_failure_conditions: tuple[str, ...]
    allow_multiple_allocations: bool
    # `capacity` by name as written (not qualified), with request policies: what consumable
    # capacity compares a request's `capacity.requests` against
    consumable: Mapping[str, DeviceCapacity] = field(default_factory=dict)
    # What a CEL selector reads of the device besides its slice's driver and
    # allowMultipleAllocations: the attributes with their value types (an int 1, a bool true
    # and a string "1" differ) and the capacities as written, in order (a map's iteration
    # order is visible to CEL). Equal for two devices only when every such value is; selector
    # outcomes are cached by it, so it is computed once, with the device.
    cel_content: tuple[Any, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        content = (
            tuple((name, type(value), value) for name, value in self.attributes.items()),
            tuple(self.capacity_text.items()),
        )
        object.__setattr__(self, "cel_content", content)


def _device(raw: Any, driver: str, path: str) -> DeviceView:
    item = as_mapping(raw, path)
    attributes = {
        qualify(name, driver): _attribute(value, f"{path}.attributes[{name}]")
        for name, value in as_mapping(item.get("attributes"), f"{path}.attributes").items()
    }
    capacity: dict[str, int] = {}
    capacity_text: dict[str, str] = {}
    consumable: dict[str, DeviceCapacity] = {}
    for name, value in as_mapping(item.get("capacity"), f"{path}.capacity").items():
        device_capacity = parse_device_capacity(value, f"{path}.capacity[{name}]")
        consumable[name] = device_capacity
        capacity[qualify(name, driver)] = device_capacity.value
        capacity_text[qualify(name, driver)] = device_capacity.value_text
    consumes = []
    for i, entry in enumerate(as_list(item.get("consumesCounters"), f"{path}.consumesCounters")):
        entry_path = f"{path}.consumesCounters[{i}]"
        entry = as_mapping(entry, entry_path)
        consumes.append(
            CounterConsumption(
                counter_set=as_str(entry.get("counterSet"), f"{entry_path}.counterSet"),
                counters=_counters(entry.get("counters"), f"{entry_path}.counters"),
            )
        )
    return DeviceView(
        name=as_str(item.get("name"), f"{path}.name"),
        attributes=attributes,
        capacity=capacity,
        capacity_text=capacity_text,
        consumes_counters=tuple(consumes),
        node_name=as_str(item.get("nodeName"), f"{path}.nodeName"),
        node_selector=_node_selector(item.get("nodeSelector"), f"{path}.nodeSelector"),
        all_nodes=as_bool(item.get("allNodes"), f"{path}.allNodes"),
        taints=_taints(item.get("taints"), f"{path}.taints"),
        binds_to_node=as_bool(item.get("bindsToNode"), f"{path}.bindsToNode"),
        binding_conditions=tuple(
            as_str(c, f"{path}.bindingConditions")
            for c in as_list(item.get("bindingConditions"), f"{path}.bindingConditions")
        ),
        binding_failure_conditions=tuple(
            as_str(c, f"{path}.bindingFailureConditions")
            for c in as_list(
                item.get("bindingFailureConditions"), f"{path}.bindingFailureConditions"
            )
        ),
        allow_multiple_allocations=as_bool(
            item.get("allowMultipleAllocations"), f"{path}.allowMultipleAllocations"
        ),
        consumable=consumable,
    )


def _counters(raw: Any, path: str) -> Mapping[str, int]:
    return {
        name: _quantity_nanos(as_mapping(counter, f"{path}[{name}]").get("value"), path)
        for name, counter in as_mapping(raw, path).items()
    }


@dataclass(frozen=True, slots=True)
class CounterSet:
    name: str
    counters: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class ResourceSliceView:
    name: str
    uid: str
    resource_version: str
    driver: str
    pool_name: str
    pool_generation: int
    pool_slice_count: int
    # where the devices are: exactly one of these is set in a valid slice
    node_name: str
    node_selector: NodeSelector | None
    all_nodes: bool
    per_device_node_selection: bool
    devices: tuple[DeviceView, ...]
    shared_counters: tuple[CounterSet, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return self.name

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> ResourceSliceView:
        meta = _metadata(obj, "resourceslice")
        spec = as_mapping(obj.get("spec"), "spec")
        pool = as_mapping(spec.get("pool"), "spec.pool")
        driver = as_str(spec.get("driver"), "spec.driver")
        return ResourceSliceView(
            name=as_str(meta.get("name"), "metadata.name"),
            uid=as_str(meta.get("uid"), "metadata.uid"),
            resource_version=as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            driver=driver,
            pool_name=as_str(pool.get("name"), "spec.pool.name"),
            pool_generation=as_int(pool.get("generation"), "spec.pool.generation"),
            pool_slice_count=as_int(pool.get("resourceSliceCount"), "spec.pool.resourceSliceCount"),
            node_name=as_str(spec.get("nodeName"), "spec.nodeName"),
            node_selector=_node_selector(spec.get("nodeSelector"), "spec.nodeSelector"),
            all_nodes=as_bool(spec.get("allNodes"), "spec.allNodes"),
            per_device_node_selection=as_bool(
                spec.get("perDeviceNodeSelection"), "spec.perDeviceNodeSelection"
            ),
            devices=tuple(
                _device(d, driver, f"spec.devices[{i}]")
                for i, d in enumerate(as_list(spec.get("devices"), "spec.devices"))
            ),
            shared_counters=tuple(
                CounterSet(
                    name=as_str(
                        as_mapping(s, f"spec.sharedCounters[{i}]").get("name"),
                        f"spec.sharedCounters[{i}].name",
                    ),
                    counters=_counters(s.get("counters"), f"spec.sharedCounters[{i}].counters"),
                )
                for i, s in enumerate(as_list(spec.get("sharedCounters"), "spec.sharedCounters"))
            ),
            raw=obj,
        )


# --- ResourceClaim -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CapacityRequests:
    """A request's `capacity.requests`: fully unqualified names as written → nanos."""

    requests: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class DeviceSubRequest:
    """An `exactly` request, or one alternative of `firstAvailable` (then `name` is the
    sub-request's own name; results name it "<request>/<sub-request>")."""

    name: str
    device_class_name: str
    selectors: tuple[str, ...]
    allocation_mode: str  # ExactCount (default) | All
    count: int  # 1 by default with ExactCount
    admin_access: bool
    tolerations: tuple[DeviceToleration, ...]
    capacity: Mapping[str, int]  # capacity.requests, name as written → nanos
    # None when the request has no `capacity` at all (upstream's nil CapacityRequirements)
    capacity_text: Mapping[str, str] | None = None


def _sub_request(raw: Any, path: str, name: str | None = None) -> DeviceSubRequest:
    item = as_mapping(raw, path)
    mode = as_str(item.get("allocationMode"), f"{path}.allocationMode", ALLOCATION_MODE_EXACT_COUNT)
    has_capacity = item.get("capacity") is not None
    capacity = as_mapping(
        as_mapping(item.get("capacity"), f"{path}.capacity").get("requests"),
        f"{path}.capacity.requests",
    )
    return DeviceSubRequest(
        name=as_str(item.get("name"), f"{path}.name") if name is None else name,
        device_class_name=as_str(item.get("deviceClassName"), f"{path}.deviceClassName"),
        selectors=_selectors(item.get("selectors"), f"{path}.selectors"),
        allocation_mode=mode,
        count=as_int(
            item.get("count"),
            f"{path}.count",
            1 if mode == ALLOCATION_MODE_EXACT_COUNT else 0,
        ),
        admin_access=as_bool(item.get("adminAccess"), f"{path}.adminAccess"),
        tolerations=_tolerations(item.get("tolerations"), f"{path}.tolerations"),
        capacity={
            key: _quantity_nanos(value, f"{path}.capacity.requests[{key}]")
            for key, value in capacity.items()
        },
        capacity_text={key: str(value) for key, value in capacity.items()}
        if has_capacity
        else None,
    )


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """One entry of `spec.devices.requests`: either `exactly` or `first_available` is set."""

    name: str
    exactly: DeviceSubRequest | None
    first_available: tuple[DeviceSubRequest, ...]


def _request(raw: Any, path: str) -> DeviceRequest:
    item = as_mapping(raw, path)
    name = as_str(item.get("name"), f"{path}.name")
    exactly = item.get("exactly")
    return DeviceRequest(
        name=name,
        exactly=None if exactly is None else _sub_request(exactly, f"{path}.exactly", name),
        first_available=tuple(
            _sub_request(sub, f"{path}.firstAvailable[{i}]")
            for i, sub in enumerate(as_list(item.get("firstAvailable"), f"{path}.firstAvailable"))
        ),
    )


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    requests: tuple[str, ...]  # empty: all requests
    match_attribute: str  # fully qualified, "" when unset
    distinct_attribute: str


def _constraints(raw: Any, path: str) -> tuple[DeviceConstraint, ...]:
    result = []
    for i, item in enumerate(as_list(raw, path)):
        item = as_mapping(item, f"{path}[{i}]")
        result.append(
            DeviceConstraint(
                requests=tuple(
                    as_str(r, f"{path}[{i}].requests")
                    for r in as_list(item.get("requests"), f"{path}[{i}].requests")
                ),
                match_attribute=as_str(item.get("matchAttribute"), f"{path}[{i}].matchAttribute"),
                distinct_attribute=as_str(
                    item.get("distinctAttribute"), f"{path}[{i}].distinctAttribute"
                ),
            )
        )
    return tuple(result)


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    """One `status.allocation.devices.results` entry."""

    request: str  # "<request>" or "<request>/<sub-request>"
    driver: str
    pool: str
    device: str
    admin_access: bool
    share_id: str  # "" unless the device allows multiple allocations
    consumed_capacity: Mapping[str, int]

    @property
    def device_id(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.device)


@dataclass(frozen=True, slots=True)
class Allocation:
    devices: tuple[AllocatedDevice, ...]
    node_selector: NodeSelector | None
    raw: Mapping[str, Any] = field(repr=False, compare=False)


def _allocation(raw: Any, path: str) -> Allocation | None:
    if raw is None:
        return None
    item = as_mapping(raw, path)
    devices = as_mapping(item.get("devices"), f"{path}.devices")
    results = []
    for i, result in enumerate(as_list(devices.get("results"), f"{path}.devices.results")):
        rpath = f"{path}.devices.results[{i}]"
        result = as_mapping(result, rpath)
        consumed = as_mapping(result.get("consumedCapacity"), f"{rpath}.consumedCapacity")
        results.append(
            AllocatedDevice(
                request=as_str(result.get("request"), f"{rpath}.request"),
                driver=as_str(result.get("driver"), f"{rpath}.driver"),
                pool=as_str(result.get("pool"), f"{rpath}.pool"),
                device=as_str(result.get("device"), f"{rpath}.device"),
                admin_access=as_bool(result.get("adminAccess"), f"{rpath}.adminAccess"),
                share_id=as_str(result.get("shareID"), f"{rpath}.shareID"),
                consumed_capacity={
                    k: _quantity_nanos(v, f"{rpath}.consumedCapacity[{k}]")
                    for k, v in consumed.items()
                },
            )
        )
    return Allocation(
        devices=tuple(results),
        node_selector=_node_selector(item.get("nodeSelector"), f"{path}.nodeSelector"),
        raw=item,
    )


@dataclass(frozen=True, slots=True)
class ConsumerRef:
    """A `status.reservedFor` entry (ResourceClaimConsumerReference)."""

    api_group: str
    resource: str
    name: str
    uid: str


def _reserved_for(raw: Any, path: str) -> tuple[ConsumerRef, ...]:
    result = []
    for i, item in enumerate(as_list(raw, path)):
        item = as_mapping(item, f"{path}[{i}]")
        result.append(
            ConsumerRef(
                api_group=as_str(item.get("apiGroup"), f"{path}[{i}].apiGroup"),
                resource=as_str(item.get("resource"), f"{path}[{i}].resource"),
                name=as_str(item.get("name"), f"{path}[{i}].name"),
                uid=as_str(item.get("uid"), f"{path}[{i}].uid"),
            )
        )
    return tuple(result)


@dataclass(frozen=True, slots=True)
class ResourceClaimView:
    namespace: str
    name: str
    uid: str
    resource_version: str
    annotations: Mapping[str, str]
    owner_references: tuple[OwnerReference, ...]
    deleting: bool  # metadata.deletionTimestamp is set
    requests: tuple[DeviceRequest, ...]
    constraints: tuple[DeviceConstraint, ...]
    config: tuple[OpaqueConfig, ...]
    allocation: Allocation | None
    reserved_for: tuple[ConsumerRef, ...]
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def is_reserved_for(self, pod_uid: str) -> bool:
        return any(
            ref.resource == "pods" and ref.api_group == "" and ref.uid == pod_uid
            for ref in self.reserved_for
        )

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> ResourceClaimView:
        meta = _metadata(obj, "resourceclaim")
        spec = as_mapping(obj.get("spec"), "spec")
        devices = as_mapping(spec.get("devices"), "spec.devices")
        status = as_mapping(obj.get("status"), "status")
        return ResourceClaimView(
            namespace=as_str(meta.get("namespace"), "metadata.namespace", "default"),
            name=as_str(meta.get("name"), "metadata.name"),
            uid=as_str(meta.get("uid"), "metadata.uid"),
            resource_version=as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            annotations=as_str_map(meta.get("annotations"), "metadata.annotations"),
            owner_references=parse_owner_references(meta.get("ownerReferences")),
            deleting=meta.get("deletionTimestamp") is not None,
            requests=tuple(
                _request(r, f"spec.devices.requests[{i}]")
                for i, r in enumerate(as_list(devices.get("requests"), "spec.devices.requests"))
            ),
            constraints=_constraints(devices.get("constraints"), "spec.devices.constraints"),
            config=_configs(devices.get("config"), "spec.devices.config"),
            allocation=_allocation(status.get("allocation"), "status.allocation"),
            reserved_for=_reserved_for(status.get("reservedFor"), "status.reservedFor"),
            raw=obj,
        )


@dataclass(frozen=True, slots=True)
class ResourceClaimTemplateView:
    namespace: str
    name: str
    uid: str
    resource_version: str
    # spec.metadata and spec.spec: what a claim generated from the template gets
    claim_labels: Mapping[str, str]
    claim_annotations: Mapping[str, str]
    claim_spec: Mapping[str, Any]
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> ResourceClaimTemplateView:
        meta = _metadata(obj, "resourceclaimtemplate")
        spec = as_mapping(obj.get("spec"), "spec")
        claim_meta = as_mapping(spec.get("metadata"), "spec.metadata")
        return ResourceClaimTemplateView(
            namespace=as_str(meta.get("namespace"), "metadata.namespace", "default"),
            name=as_str(meta.get("name"), "metadata.name"),
            uid=as_str(meta.get("uid"), "metadata.uid"),
            resource_version=as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            claim_labels=as_str_map(claim_meta.get("labels"), "spec.metadata.labels"),
            claim_annotations=as_str_map(
                claim_meta.get("annotations"), "spec.metadata.annotations"
            ),
            claim_spec=as_mapping(spec.get("spec"), "spec.spec"),
            raw=obj,
        )


# --- the pod's side ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodResourceClaim:
    """A `spec.resourceClaims` entry: exactly one of the two sources is set."""

    name: str
    resource_claim_name: str
    resource_claim_template_name: str


def pod_resource_claims(raw: Any) -> tuple[PodResourceClaim, ...]:
    result = []
    for i, item in enumerate(as_list(raw, "spec.resourceClaims")):
        path = f"spec.resourceClaims[{i}]"
        item = as_mapping(item, path)
        result.append(
            PodResourceClaim(
                name=as_str(item.get("name"), f"{path}.name"),
                resource_claim_name=as_str(
                    item.get("resourceClaimName"), f"{path}.resourceClaimName"
                ),
                resource_claim_template_name=as_str(
                    item.get("resourceClaimTemplateName"), f"{path}.resourceClaimTemplateName"
                ),
            )
        )
    return tuple(result)


NO_CLAIM_STATUSES: Mapping[str, str | None] = MappingProxyType({})


def pod_resource_claim_statuses(raw: Any) -> Mapping[str, str | None]:
    """`status.resourceClaimStatuses`: entry name → generated claim name (None when the
    controller decided no claim is needed)."""
    if not raw:
        return NO_CLAIM_STATUSES
    result: dict[str, str | None] = {}
    for i, item in enumerate(as_list(raw, "status.resourceClaimStatuses")):
        path = f"status.resourceClaimStatuses[{i}]"
        item = as_mapping(item, path)
        claim = item.get("resourceClaimName")
        result[as_str(item.get("name"), f"{path}.name")] = (
            None if claim is None else as_str(claim, f"{path}.resourceClaimName")
        )
    return result


class ClaimNotCreatedYet(Exception):
    """The pod's claim comes from a template and the controller has not created it yet."""


def claim_name(
    pod_namespace: str,
    pod_name: str,
    entry: PodResourceClaim,
    statuses: Mapping[str, str | None],
) -> tuple[str | None, bool]:
    """The name of the ResourceClaim a pod entry refers to, and whether the claim must be
    checked to be owned by the pod (it was generated from a template): upstream's
    resourceclaim.Name (k8s.io/dynamic-resource-allocation/resourceclaim). A None name: the
    controller decided no claim is needed. Raises ClaimNotCreatedYet while the generated claim
    is not recorded in `status.resourceClaimStatuses`, MalformedObject when neither source is
    set, with upstream's messages."""
    if entry.resource_claim_name:
        return entry.resource_claim_name, False
    if entry.resource_claim_template_name:
        if entry.name not in statuses:
            raise ClaimNotCreatedYet(
                f'pod "{pod_namespace}/{pod_name}": ResourceClaim not created yet'
            )
        return statuses[entry.name], True
    raise MalformedObject(
        f'pod "{pod_namespace}/{pod_name}", spec.resourceClaim "{entry.name}": '
        "none of the supported fields are set"
    )


def is_for_pod(claim: ResourceClaimView, pod_uid: str) -> bool:
    """A generated claim belongs to the pod that controls it (resourceclaim.IsForPod)."""
    return any(ref.uid == pod_uid and ref.controller for ref in claim.owner_references)
