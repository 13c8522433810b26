# ruff: noqa: E501  (upstream's table: one case per entry, long CEL selectors)
"""Consumable capacity (DRAConsumableCapacity) in the structured allocator: upstream's cases
from staging/src/k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting/
allocator_testing.go (names are upstream's), run with the features each case sets.

Upstream compares share IDs against a fixed one; here every non-empty share ID reads as
SHARED, and each one is checked to be a fresh UUID."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from scheduler.api.resource import DeviceClassView, ResourceClaimView, ResourceSliceView
from scheduler.plugins.dynamicresources.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    DRAFeatures,
)
from tests.scheduler_plugins_dra.builders import (
    CLAIM_0,
    CLAIM_1,
    CLASS_A,
    DEVICE_1,
    DEVICE_2,
    DEVICE_3,
    DRIVER_A,
    NODE_1,
    POOL_1,
    REQ_0,
    REQ_1,
    SUB_REQ_0,
    SUB_REQ_1,
    claim,
    device_class,
    first_available,
    local_node_selector,
    node,
    resource_slice,
)

REQ_2 = "req-2"
REQ_3 = "req-3"
DEVICE_4 = "device-4"
CAP_0 = "capacity-0"
CAP_1 = "capacity-1"
COUNTER_SET_1 = "counter-set-1"
COUNTER_SET_2 = "counter-set-2"
SHARED = "SHARED"
NODE_1_SELECTOR = local_node_selector(NODE_1)

CONSUMABLE = DRAFeatures(consumable_capacity=True)
CONSUMABLE_PRIORITIZED = DRAFeatures(consumable_capacity=True, prioritized_list=True)
ALL_THREE = DRAFeatures(consumable_capacity=True, prioritized_list=True, partitionable_devices=True)


def multi_class(allow: bool) -> DeviceClassView:
    """classWithAllowMultipleAllocations."""
    expression = (
        f'device.driver == "{DRIVER_A}" && device.allowMultipleAllocations == {str(allow).lower()}'
    )
    return device_class(CLASS_A, (expression,))


def plain_class() -> DeviceClassView:
    return device_class(CLASS_A, (f'device.driver == "{DRIVER_A}"',))


def dev(
    name: str,
    *,
    shared: bool = False,
    capacity: dict[str, str] | None = None,
    range_policy: dict[str, str] | None = None,
    attributes: dict[str, dict[str, Any]] | None = None,
    counters: dict[str, dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A device: `capacity` plain values; `range_policy` capacities with upstream's
    withCapacityRequestPolicyRange policy (default 2, min 2, step 2, max 4); `counters`
    (counter set → counter → amount) also become the device's capacity (fromCounters)."""
    result: dict[str, Any] = {"name": name}
    caps: dict[str, Any] = {}
    for counter_set in (counters or {}).values():
        caps.update({k: {"value": v} for k, v in counter_set.items()})
    caps.update({k: {"value": v} for k, v in (capacity or {}).items()})
    for k, v in (range_policy or {}).items():
        caps[k] = {
            "value": v,
            "requestPolicy": {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}},
        }
    if caps:
        result["capacity"] = caps
    if attributes:
        result["attributes"] = attributes
    if counters:
        result["consumesCounters"] = [
            {"counterSet": s, "counters": {k: {"value": v} for k, v in c.items()}}
            for s, c in counters.items()
        ]
    if shared:
        result["allowMultipleAllocations"] = True
    return result


def req(name: str, count: int = 1, *, capacity: str | None = None, all_devices: bool = False,
        selector: str = "") -> dict[str, Any]:  # fmt: skip
    exactly: dict[str, Any] = {"deviceClassName": CLASS_A}
    if all_devices:
        exactly["allocationMode"] = "All"
    else:
        exactly["count"] = count
    if capacity is not None:
        exactly["capacity"] = {"requests": {CAP_0: capacity}}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {"name": name, "exactly": exactly}


def sub(name: str, *, capacity: str | None = None, selector: str = "") -> dict[str, Any]:
    result: dict[str, Any] = {"name": name, "deviceClassName": CLASS_A, "count": 1}
    if capacity is not None:
        result["capacity"] = {"requests": {CAP_0: capacity}}
    if selector:
        result["selectors"] = [{"cel": {"expression": selector}}]
    return result


def slice_of(*devices: dict[str, Any], name: str = "slice-1", count: int = 1,
             counter_sets: dict[str, dict[str, str]] | None = None) -> ResourceSliceView:  # fmt: skip
    return resource_slice(
        name,
        NODE_1,
        POOL_1,
        DRIVER_A,
        *devices,
        slice_count=count,
        shared_counters=[
            {"name": s, "counters": {k: {"value": v} for k, v in c.items()}}
            for s, c in (counter_sets or {}).items()
        ]
        or None,
    )


def result(request: str, device: str, consumed: dict[str, str] | None = None,
           shared: bool = True) -> dict[str, Any]:  # fmt: skip
    entry: dict[str, Any] = {"request": request, "driver": DRIVER_A, "pool": POOL_1,
                             "device": device}  # fmt: skip
    if shared:
        entry["shareID"] = SHARED
    if consumed:
        entry["consumedCapacity"] = consumed
    return entry


def allocated(*results: dict[str, Any]) -> dict[str, Any]:
    return {"devices": {"results": list(results)}, "nodeSelector": NODE_1_SELECTOR}


def attrs(**values: Any) -> dict[str, dict[str, Any]]:
    kinds = {bool: "bool", int: "int", str: "string"}
    return {
        k: {"version": v[1:]} if isinstance(v, str) and v.startswith("v") else {kinds[type(v)]: v}
        for k, v in values.items()
    }


@dataclass
class Case:
    name: str
    claims: list[ResourceClaimView]
    classes: list[DeviceClassView]
    slices: list[ResourceSliceView]
    want: list[dict[str, Any]] | None
    features: DRAFeatures = CONSUMABLE
    allocated_devices: frozenset[tuple[str, str, str]] = frozenset()
    allocated_capacity: dict[tuple[str, str, str], dict[str, int]] = field(default_factory=dict)


D1 = (DRIVER_A, POOL_1, DEVICE_1)
ONE, TWO = 10**9, 2 * 10**9

CASES = [
    Case(
        "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device",
        [claim(CLAIM_0, req(REQ_0, capacity="2"))],
        [multi_class(True)],
        [slice_of(dev(DEVICE_1, shared=True, range_policy={CAP_0: "2"}),
                  dev(DEVICE_2, shared=True, range_policy={CAP_0: "2"}))],
        [allocated(result(REQ_0, DEVICE_2, {CAP_0: "2"}))],
        allocated_capacity={D1: {CAP_0: TWO}},
    ),
    Case(
        "consumable-capacity-with-multi-allocatable-device-backtrack",
        [
            claim(CLAIM_0, req(REQ_0, capacity="2"), req(REQ_1, capacity="2"),
                  constraints=[{"matchAttribute": f"{DRIVER_A}/stringAttribute"}]),
            claim(CLAIM_1, req(REQ_0, capacity="2")),
        ],
        [plain_class()],
        [slice_of(
            dev(DEVICE_2, shared=True, range_policy={CAP_0: "2"},
                attributes=attrs(stringAttribute="stringAttributeValue1")),
            dev(DEVICE_1, shared=True, range_policy={CAP_0: "4"},
                attributes=attrs(stringAttribute="stringAttributeValue2")),
        )],
        [
            allocated(result(REQ_0, DEVICE_1, {CAP_0: "2"}), result(REQ_1, DEVICE_1, {CAP_0: "2"})),
            allocated(result(REQ_0, DEVICE_2, {CAP_0: "2"})),
        ],
    ),
    Case(
        "consumable-capacity-multi-allocatable-device-with-subrequest",
        [claim(CLAIM_0, first_available(REQ_0, sub(SUB_REQ_0, capacity="4"),
                                        sub(SUB_REQ_1, capacity="2"), sub(SUB_REQ_1)))],
        [multi_class(True)],
        [slice_of(dev(DEVICE_1, shared=True, range_policy={CAP_0: "2"}))],
        [allocated(result(f"{REQ_0}/{SUB_REQ_1}", DEVICE_1, {CAP_0: "2"}))],
        features=CONSUMABLE_PRIORITIZED,
    ),
    Case(
        "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity",
        [claim(CLAIM_0, req(REQ_0, capacity="2"))],
        [multi_class(True)],
        [slice_of(dev(DEVICE_1, shared=True, range_policy={CAP_0: "2"}))],
        None,
        allocated_capacity={D1: {CAP_0: TWO}},
    ),
    Case(
        "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity",
        [claim(CLAIM_0, req(REQ_0, capacity="2", all_devices=True))],
        [multi_class(True)],
        [slice_of(dev(DEVICE_1, shared=True, capacity={CAP_0: "2"}), dev(DEVICE_2, shared=True))],
        [allocated(result(REQ_0, DEVICE_1, {CAP_0: "2"}))],
    ),
    Case(
        "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-"
        "insufficient-capacity",
        [claim(CLAIM_0, req(REQ_0, capacity="2", all_devices=True))],
        [multi_class(True)],
        [slice_of(dev(DEVICE_1, shared=True, capacity={CAP_0: "2"}),
                  dev(DEVICE_2, shared=True, capacity={CAP_0: "1"}))],
        [allocated(result(REQ_0, DEVICE_1, {CAP_0: "2"}))],
    ),
    Case(
        "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient",
        [claim(CLAIM_0, req(REQ_0, capacity="1"), req(REQ_1, capacity="1", all_devices=True))],
        [plain_class()],
        [slice_of(dev(DEVICE_1, shared=True, capacity={CAP_0: "2"}),
                  dev(DEVICE_2, shared=True, capacity={CAP_0: "1"}))],
        [allocated(result(REQ_0, DEVICE_1, {CAP_0: "1"}), result(REQ_1, DEVICE_1, {CAP_0: "1"}),
                   result(REQ_1, DEVICE_2, {CAP_0: "1"}))],
    ),
    Case(
        "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient",
        [claim(CLAIM_0, req(REQ_0, capacity="1", all_devices=True))],
        [plain_class()],
        [slice_of(dev(DEVICE_1, shared=True, capacity={CAP_0: "2"}),
                  dev(DEVICE_2, shared=True, capacity={CAP_0: "1"}))],
        [allocated(result(REQ_0, DEVICE_1, {CAP_0: "1"}), result(REQ_0, DEVICE_2, {CAP_0: "1"}))],
        allocated_capacity={D1: {CAP_0: ONE}},
    ),
    Case(
        "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient",
        [claim(CLAIM_0, req(REQ_0, capacity="1"), req(REQ_1, capacity="1", all_devices=True))],
        [plain_class()],
        [slice_of(dev(DEVICE_1, shared=True, capacity={CAP_0: "1"}),
                  dev(DEVICE_2, shared=True, capacity={CAP_0: "1"}))],
        None,
    ),
    Case(
        "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient",
        [claim(CLAIM_0, req(REQ_0, capacity="1", all_devices=True))],
        [plain_class()],
        [slice_of(dev(DEVICE_1, shared=True, capacity={CAP_0: "1"}),
                  dev(DEVICE_2, shared=True, capacity={CAP_0: "1"}))],
        [allocated(result(REQ_0, DEVICE_2, {CAP_0: "1"}))],
        allocated_capacity={D1: {CAP_0: ONE}},
    ),
    Case(
        "consumable-capacity-dedicated-device-with-consumable-capacity-request",
        [claim(CLAIM_0, req(REQ_0, capacity="1"))],
        [multi_class(False)],
        [slice_of(dev(DEVICE_1, capacity={CAP_0: "1"}))],
        [allocated(result(REQ_0, DEVICE_1, shared=False))],
    ),
    Case(
        "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request",
        [claim(CLAIM_0, req(REQ_0, capacity="1")), claim(CLAIM_1, req(REQ_0, capacity="1"))],
        [multi_class(False)],
        [slice_of(dev(DEVICE_1, range_policy={CAP_0: "2"}))],
        None,
    ),
    Case(
        "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector",
        [claim(CLAIM_0, req(REQ_0, capacity="1"))],
        [multi_class(False)],
        [slice_of(dev(DEVICE_1, shared=True, capacity={CAP_0: "1"}))],
        None,
    ),
    Case(
        "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated",
        [claim(CLAIM_0, req(REQ_0, capacity="1"))],
        [multi_class(True)],
        [slice_of(dev(DEVICE_1, shared=True, range_policy={CAP_0: "2"}))],
        None,
        allocated_devices=frozenset({D1}),
    ),
    Case(
        "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-"
        "allocatable",
        [claim(CLAIM_0, req(REQ_0, capacity="1"))],
        [multi_class(True)],
        [slice_of(dev(DEVICE_1, range_policy={CAP_0: "2"}))],
        None,
        allocated_capacity={D1: {CAP_0: ONE}},
    ),
    Case(
        "allow-multiple-allocations-with-partitionable-device",
        [claim(CLAIM_0, req(REQ_0), first_available(
            REQ_1,
            sub(SUB_REQ_0, selector=f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("6Gi")) >= 0'),
            sub(SUB_REQ_1, selector=f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("4Gi")) >= 0'),
        ))],
        [multi_class(True)],
        [
            slice_of(
                dev(DEVICE_1, shared=True, counters={COUNTER_SET_1: {"memory": "4Gi"}}),
                dev(DEVICE_2, shared=True, counters={COUNTER_SET_1: {"memory": "6Gi"}}),
                dev(DEVICE_3, shared=True, counters={COUNTER_SET_1: {"memory": "4Gi"}}),
                count=2,
            ),
            slice_of(name="slice-2", count=2, counter_sets={COUNTER_SET_1: {"memory": "8Gi"}}),
        ],
        [allocated(result(REQ_0, DEVICE_1, {"memory": "4Gi"}),
                   result(f"{REQ_1}/{SUB_REQ_1}", DEVICE_3, {"memory": "4Gi"}))],
        features=ALL_THREE,
    ),
    Case(
        "consumable-capacity-with-partitionable-device-multiple-capacity-pools",
        [claim(CLAIM_0, req(REQ_0, capacity="1"), req(REQ_2, capacity="2"), first_available(
            REQ_1,
            sub(SUB_REQ_0, capacity="1",
                selector=f'device.capacity["{DRIVER_A}"]["{CAP_0}"].compareTo(quantity("4")) >= 0'),
            sub(SUB_REQ_1, capacity="1",
                selector=f'device.capacity["{DRIVER_A}"]["{CAP_0}"].compareTo(quantity("2")) >= 0'),
        ))],
        [plain_class()],
        [
            slice_of(
                *(
                    dev(name, shared=True, range_policy={CAP_1: "4"},
                        counters={COUNTER_SET_1: {CAP_0: cap0}, COUNTER_SET_2: {CAP_1: "4"}})
                    for name, cap0 in ((DEVICE_1, "2"), (DEVICE_2, "4"), (DEVICE_3, "2"))
                ),
                count=2,
            ),
            slice_of(name="slice-2", count=2,
                     counter_sets={COUNTER_SET_1: {CAP_0: "4"}, COUNTER_SET_2: {CAP_1: "8"}}),
        ],
        [allocated(result(REQ_0, DEVICE_1, {CAP_0: "1", CAP_1: "2"}),
                   result(REQ_2, DEVICE_3, {CAP_0: "2", CAP_1: "2"}),
                   result(f"{REQ_1}/{SUB_REQ_1}", DEVICE_1, {CAP_0: "1", CAP_1: "2"}))],
        features=ALL_THREE,
    ),
    Case(
        "with-distinct-constraints",
        [claim(CLAIM_0, req(REQ_0), req(REQ_1), req(REQ_2), req(REQ_3), constraints=[
            {"distinctAttribute": f"{DRIVER_A}/boolAttribute", "requests": [REQ_0, REQ_1]},
            {"distinctAttribute": f"{DRIVER_A}/driverVersion", "requests": [REQ_0, REQ_1, REQ_2]},
            {"distinctAttribute": f"{DRIVER_A}/numa", "requests": [REQ_0, REQ_1, REQ_2, REQ_3]},
        ])],
        [plain_class()],
        [slice_of(
            dev(DEVICE_1, shared=True, attributes=attrs(driverVersion="v1.0.0", numa=0, boolAttribute=True)),
            dev(DEVICE_2, shared=True, attributes=attrs(driverVersion="v1.0.1", numa=1, boolAttribute=False)),
            dev(DEVICE_3, shared=True, attributes=attrs(driverVersion="v1.0.2", numa=2, boolAttribute=True)),
            dev(DEVICE_4, shared=True, attributes=attrs(driverVersion="v1.0.0", numa=3, boolAttribute=True)),
        )],
        [allocated(result(REQ_0, DEVICE_1), result(REQ_1, DEVICE_2), result(REQ_2, DEVICE_3),
                   result(REQ_3, DEVICE_4))],
    ),
    Case(
        "with-distinct-constraints-attribute-not-set",
        [claim(CLAIM_0, req(REQ_0), constraints=[
            {"distinctAttribute": f"{DRIVER_A}/boolAttribute", "requests": [REQ_0]}])],
        [plain_class()],
        [slice_of(dev(DEVICE_1, shared=True))],
        None,
    ),
    Case(
        "with-distinct-constraints-with-subrequests",
        [claim(CLAIM_0, *(
            first_available(r, sub(SUB_REQ_0, selector=f'device.attributes["{DRIVER_A}"].boolAttribute'),
                            sub(SUB_REQ_1))
            for r in (REQ_0, REQ_1, REQ_2)
        ), constraints=[{"distinctAttribute": f"{DRIVER_A}/boolAttribute", "requests": [REQ_0, REQ_1]}])],
        [plain_class()],
        [slice_of(dev(DEVICE_1, shared=True, attributes=attrs(boolAttribute=True)),
                  dev(DEVICE_2, shared=True, attributes=attrs(boolAttribute=False)))],
        [allocated(result(f"{REQ_0}/{SUB_REQ_0}", DEVICE_1), result(f"{REQ_1}/{SUB_REQ_1}", DEVICE_2),
                   result(f"{REQ_2}/{SUB_REQ_0}", DEVICE_1))],
        features=CONSUMABLE_PRIORITIZED,
    ),
    Case(
        "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint",
        [claim(CLAIM_0, req(REQ_0, capacity="1"), req(REQ_1, capacity="1"),
               constraints=[{"distinctAttribute": f"{DRIVER_A}/stringAttribute"}])],
        [multi_class(True)],
        [slice_of(dev(DEVICE_1, shared=True, range_policy={CAP_0: "2"},
                      attributes=attrs(stringAttribute="stringAttributeValue")))],
        None,
    ),
    Case(
        "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint",
        [claim(CLAIM_0, req(REQ_0, capacity="2"), req(REQ_1, capacity="2"),
               constraints=[{"distinctAttribute": f"{DRIVER_A}/stringAttribute"}])],
        [multi_class(True)],
        [
            slice_of(dev(DEVICE_1, shared=True, range_policy={CAP_0: "4"},
                         attributes=attrs(stringAttribute="stringAttributeValue1")), count=2),
            slice_of(dev(DEVICE_2, shared=True, range_policy={CAP_0: "4"},
                         attributes=attrs(stringAttribute="stringAttributeValue2")),
                     name="slice-1b", count=2),
        ],
        [allocated(result(REQ_0, DEVICE_1, {CAP_0: "2"}), result(REQ_1, DEVICE_2, {CAP_0: "2"}))],
    ),
]  # fmt: skip


def run(case: Case) -> list[dict[str, Any]] | None:
    allocator = Allocator(
        features=case.features,
        allocated=AllocatedState(
            devices=case.allocated_devices, consumed_capacity=case.allocated_capacity
        ),
        classes={c.name: c for c in case.classes},
        slices=case.slices,
    )
    got = allocator.allocate(node(), case.claims)
    if got is None:
        return None
    answers = [r.to_dict() for r in got]
    for answer in answers:
        for entry in answer["devices"]["results"]:
            if "shareID" in entry:
                uuid.UUID(entry["shareID"])  # a fresh UUID per share
                entry["shareID"] = SHARED
    return answers


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_consumable_capacity(case: Case) -> None:
    assert run(case) == case.want


def test_share_ids_differ_between_shares_of_one_device() -> None:
    allocator = Allocator(
        features=CONSUMABLE,
        allocated=AllocatedState(),
        classes={CLASS_A: plain_class()},
        slices=[slice_of(dev(DEVICE_1, shared=True, capacity={CAP_0: "4"}))],
    )
    got = allocator.allocate(
        node(), [claim(CLAIM_0, req(REQ_0, capacity="1"), req(REQ_1, capacity="1"))]
    )
    assert got is not None
    share_ids = [d.share_id for d in got[0].devices]
    assert len(set(share_ids)) == 2 and all(share_ids)


@pytest.mark.parametrize(
    ("claim_request", "message"),
    [
        (req(REQ_0, capacity="1"), "claim default/claim-0, request req-0: has capacity requests, "
         "but the DRAConsumableCapacity feature is disabled"),
        (first_available(REQ_0, sub(SUB_REQ_0, capacity="1")), "claim default/claim-0, "
         "subrequest subReq-0: has capacity requests, but the DRAConsumableCapacity feature is "
         "disabled"),
    ],
)  # fmt: skip
def test_capacity_requests_need_the_feature(claim_request: dict[str, Any], message: str) -> None:
    allocator = Allocator(
        features=DRAFeatures(consumable_capacity=False),
        allocated=AllocatedState(),
        classes={CLASS_A: plain_class()},
        slices=[slice_of(dev(DEVICE_1, shared=True, capacity={CAP_0: "4"}))],
    )
    with pytest.raises(AllocationError, match="^" + message + "$"):
        allocator.allocate(node(), [claim(CLAIM_0, claim_request)])


def test_without_the_feature_a_shareable_device_is_exclusive() -> None:
    allocator = Allocator(
        features=DRAFeatures(consumable_capacity=False),
        allocated=AllocatedState(),
        classes={CLASS_A: plain_class()},
        slices=[slice_of(dev(DEVICE_1, shared=True, capacity={CAP_0: "4"}))],
    )
    assert (
        allocator.allocate(node(), [claim(CLAIM_0, req(REQ_0)), claim(CLAIM_1, req(REQ_0))]) is None
    )
    one = allocator.allocate(node(), [claim(CLAIM_0, req(REQ_0))])
    assert one is not None and one[0].to_dict()["devices"]["results"] == [
        {"request": REQ_0, "driver": DRIVER_A, "pool": POOL_1, "device": DEVICE_1}
    ]


def test_distinct_attribute_needs_the_feature() -> None:
    allocator = Allocator(
        features=DRAFeatures(consumable_capacity=False),
        allocated=AllocatedState(),
        classes={CLASS_A: plain_class()},
        slices=[slice_of(dev(DEVICE_1))],
    )
    with pytest.raises(AllocationError, match="constraint #0: empty constraint"):
        allocator.allocate(node(), [claim(CLAIM_0, req(REQ_0), constraints=[
            {"distinctAttribute": f"{DRIVER_A}/numa"}])])  # fmt: skip


def test_explain_says_the_capacity_is_taken() -> None:
    from scheduler.plugins.dynamicresources.diagnosis import RequestDiagnosis, diagnose

    allocator = Allocator(
        features=CONSUMABLE,
        allocated=AllocatedState(consumed_capacity={D1: {CAP_0: 3 * ONE}}),
        classes={CLASS_A: plain_class()},
        slices=[slice_of(dev(DEVICE_1, shared=True, capacity={CAP_0: "4"}))],
    )
    wanted = claim(CLAIM_0, req(REQ_0, capacity="2"))
    assert allocator.allocate(node(), [wanted]) is None
    assert diagnose(allocator, node(), [wanted]) == [
        RequestDiagnosis(
            "default/claim-0",
            REQ_0,
            "1 device(s) match, 0 with the requested capacity left, 1 requested",
        )
    ]
