"""The structured allocator's working pieces for one Allocate call: a request's data, a
candidate device, a device picked for a request, the claim constraints (matchAttribute,
distinctAttribute), device taints and the node selector of a finished allocation.

Upstream: structured/internal/incubating/allocator_incubating.go (requestData, deviceWithID,
internalDeviceResult, taintPreventsAllocation, createNodeSelector) and constraint.go.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.resource import (
    AttributeValue,
    DeviceClassView,
    DeviceSubRequest,
    DeviceView,
    ResourceSliceView,
    SemVer,
)
from scheduler.plugins.dynamicresources.allocation import DeviceID
from scheduler.plugins.dynamicresources.pools import Pool


@dataclass(slots=True)
class RequestData:
    """requestData: one request without sub-requests, or one sub-request."""

    request: DeviceSubRequest
    parent_name: str  # "" unless a sub-request
    class_: DeviceClassView | None
    num_devices: int = 0
    selected_sub_request: int = 0
    all_devices: list[Candidate] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.parent_name}/{self.request.name}" if self.parent_name else self.request.name

    @property
    def admin_access(self) -> bool:
        # deviceSubRequestAccessor.adminAccess() is always false
        return self.request.admin_access and not self.parent_name


@dataclass(frozen=True, slots=True)
class Candidate:
    device_id: DeviceID
    device: DeviceView
    device_index: int
    slice: ResourceSliceView
    pool: Pool


@dataclass(slots=True)
class DeviceResult:
    request: str  # the request's or sub-request's own name
    parent_request: str
    candidate: Candidate
    admin_access: bool
    # a device that allows multiple allocations: this allocation's share and what it takes
    # of each capacity (name as written → (nanos, quantity text))
    share_id: str = ""
    consumed: Mapping[str, tuple[int, str]] = field(default_factory=dict)

    @property
    def request_name(self) -> str:
        return f"{self.parent_request}/{self.request}" if self.parent_request else self.request


def _applies(request_names: frozenset[str], request: str, sub_request: str) -> bool:
    if not request_names:
        return True
    if not sub_request:
        return request in request_names
    return request in request_names or f"{request}/{sub_request}" in request_names


class _AttributeConstraint:
    """What both constraint kinds share: the requests they apply to and the attribute."""

    __slots__ = ("attribute", "num_devices", "request_names")

    def __init__(self, request_names: tuple[str, ...], attribute: str) -> None:
        self.request_names = frozenset(request_names)
        self.attribute = attribute
        self.num_devices = 0


class DistinctAttributeConstraint(_AttributeConstraint):
    """distinctAttributeConstraint (with DRAConsumableCapacity): the devices of the named
    requests (all when none are named) each have the attribute, no two with one value.

    As upstream's, the values seen are kept per request name, so a second device of the same
    request replaces the first one's value (and removing either forgets it)."""

    __slots__ = ("values",)

    def __init__(self, request_names: tuple[str, ...], attribute: str) -> None:
        super().__init__(request_names, attribute)
        self.values: dict[str, AttributeValue] = {}

    def add(self, request: str, sub_request: str, device: DeviceView) -> bool:
        if not _applies(self.request_names, request, sub_request):
            return True
        value = device.attributes.get(self.attribute)
        if value is None:
            return False
        if self.num_devices and any(_same(value, seen) for seen in self.values.values()):
            return False
        self.values[request] = value
        self.num_devices += 1
        return True

    def remove(self, request: str, sub_request: str, device: DeviceView) -> None:
        if _applies(self.request_names, request, sub_request):
            self.values.pop(request, None)
            self.num_devices -= 1


def _same(a: AttributeValue, b: AttributeValue) -> bool:
    """One type and one value (versions compared as written, as upstream's string ==)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, SemVer) and isinstance(b, SemVer):
        return a.text == b.text
    return a == b


class MatchAttributeConstraint(_AttributeConstraint):
    """matchAttributeConstraint: all devices of the named requests (all requests when none are
    named) share one value of the attribute; a device without it never satisfies it."""

    __slots__ = ("value",)

    def __init__(self, request_names: tuple[str, ...], attribute: str) -> None:
        super().__init__(request_names, attribute)
        self.value: AttributeValue | None = None

    def add(self, request: str, sub_request: str, device: DeviceView) -> bool:
        if not _applies(self.request_names, request, sub_request):
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
        if _applies(self.request_names, request, sub_request):
            self.num_devices -= 1


def taint_prevents_allocation(device: DeviceView, request: DeviceSubRequest) -> bool:
    for taint in device.taints:
        # only the known effects prevent allocation
        if taint.effect in ("NoSchedule", "NoExecute") and not any(
            toleration.tolerates(taint) for toleration in request.tolerations
        ):
            return True
    return False


def _raw_node_selection(result: DeviceResult) -> tuple[str, Mapping[str, Any] | None]:
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


def node_selector_for(results: Sequence[DeviceResult]) -> Mapping[str, Any] | None:
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
