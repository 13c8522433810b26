"""The allocator's diagnosis (diagnosis.py): why a node cannot take a pod's claims, one row per
reason explain and what-if show. Every row is also a node where `allocate` says no."""

from __future__ import annotations

import contextlib
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
from scheduler.plugins.dynamicresources.diagnosis import RequestDiagnosis, diagnose
from tests.scheduler_plugins_dra.builders import (
    CLAIM_0,
    CLAIM_1,
    CLASS_A,
    CLASS_B,
    DEVICE_1,
    DEVICE_2,
    DEVICE_3,
    DRIVER_A,
    DRIVER_B,
    NODE_1,
    NODE_2,
    POOL_1,
    REQ_0,
    REQ_1,
    SUB_REQ_0,
    SUB_REQ_1,
    claim,
    device,
    driver_class,
    exact,
    first_available,
    node,
    resource_slice,
    sub_request,
)

CLAIM_0_KEY = f"default/{CLAIM_0}"
CLAIM_1_KEY = f"default/{CLAIM_1}"
H100 = 'device.attributes["driver-a"].model == "h100"'
NO_CLASS_B = "no device of class class-b matches the selectors"


def slice_on(
    node_name: str, *devices: Any, driver: str = DRIVER_A, slice_count: int = 1
) -> ResourceSliceView:
    return resource_slice(
        f"{driver}-{node_name}", node_name, POOL_1, driver, *devices, slice_count=slice_count
    )


@dataclass
class Row:
    name: str
    claims: list[ResourceClaimView]
    slices: list[ResourceSliceView]
    want: list[RequestDiagnosis]
    allocated: set[tuple[str, str, str]] = field(default_factory=set)
    classes: list[DeviceClassView] | None = None


ROWS = [
    Row(
        "class not found",
        [claim(CLAIM_0, exact(REQ_0, class_name="no-such-class"))],
        [slice_on(NODE_1, DEVICE_1)],
        [RequestDiagnosis(CLAIM_0_KEY, REQ_0, "device class no-such-class not found")],
    ),
    Row(
        "no device of the class matches the selectors",
        [claim(CLAIM_0, exact(REQ_0, selectors=(H100,)))],
        [slice_on(NODE_1, device(DEVICE_1, attributes={"model": "a100"}))],
        [RequestDiagnosis(CLAIM_0_KEY, REQ_0, "no device of class class-a matches the selectors")],
    ),
    Row(
        "node has no ResourceSlice of the driver (its devices are elsewhere)",
        [claim(CLAIM_0, exact(REQ_0))],
        [slice_on(NODE_2, DEVICE_1), slice_on(NODE_1, DEVICE_1, driver=DRIVER_B)],
        [RequestDiagnosis(CLAIM_0_KEY, REQ_0, "node has no ResourceSlice of driver driver-a")],
    ),
    Row(
        "every matching device allocated",
        [claim(CLAIM_0, exact(REQ_0))],
        [slice_on(NODE_1, DEVICE_1, DEVICE_2)],
        [RequestDiagnosis(CLAIM_0_KEY, REQ_0, "2 device(s) match, all allocated")],
        allocated={(DRIVER_A, POOL_1, DEVICE_1), (DRIVER_A, POOL_1, DEVICE_2)},
    ),
    Row(
        "fewer free devices than requested",
        [claim(CLAIM_0, exact(REQ_0, count=3))],
        [slice_on(NODE_1, DEVICE_1, DEVICE_2, DEVICE_3)],
        [RequestDiagnosis(CLAIM_0_KEY, REQ_0, "3 device(s) match, 2 free, 3 requested")],
        allocated={(DRIVER_A, POOL_1, DEVICE_2)},
    ),
    Row(
        "fewer matching devices than requested",
        [claim(CLAIM_0, exact(REQ_0, count=2))],
        [slice_on(NODE_1, DEVICE_1)],
        [RequestDiagnosis(CLAIM_0_KEY, REQ_0, "1 device(s) match, 2 requested")],
    ),
    Row(
        "allocationMode All with an allocated device",
        [claim(CLAIM_0, exact(REQ_0, mode="All"))],
        [slice_on(NODE_1, DEVICE_1, DEVICE_2)],
        [
            RequestDiagnosis(
                CLAIM_0_KEY, REQ_0, "allocationMode All: 2 device(s) match, 1 allocated"
            )
        ],
        allocated={(DRIVER_A, POOL_1, DEVICE_1)},
    ),
    Row(
        "pool incomplete",
        [claim(CLAIM_0, exact(REQ_0))],
        [slice_on(NODE_1, DEVICE_1, slice_count=2)],
        [
            RequestDiagnosis(
                CLAIM_0_KEY,
                REQ_0,
                "resource pool driver-a/pool-1 is incomplete (1 of 2 ResourceSlices)",
            )
        ],
    ),
    Row(
        "matchAttribute: no combination",
        [
            claim(
                CLAIM_0,
                exact(REQ_0),
                exact(REQ_1),
                constraints=[{"requests": [REQ_0, REQ_1], "matchAttribute": "driver-a/model"}],
            )
        ],
        [
            slice_on(
                NODE_1,
                device(DEVICE_1, attributes={"model": "a100"}),
                device(DEVICE_2, attributes={"model": "h100"}),
            )
        ],
        [
            RequestDiagnosis(
                CLAIM_0_KEY,
                f"{REQ_0}, {REQ_1}",
                "matchAttribute driver-a/model: no combination of free devices shares one value",
            )
        ],
    ),
    Row(
        "firstAvailable: every alternative named",
        [
            claim(
                CLAIM_0,
                first_available(
                    REQ_0, sub_request(SUB_REQ_0, count=2), sub_request(SUB_REQ_1, CLASS_B)
                ),
            )
        ],
        [slice_on(NODE_1, DEVICE_1)],
        [
            RequestDiagnosis(CLAIM_0_KEY, f"{REQ_0}/{SUB_REQ_0}", "1 device(s) match, 2 requested"),
            RequestDiagnosis(CLAIM_0_KEY, f"{REQ_0}/{SUB_REQ_1}", NO_CLASS_B),
        ],
    ),
    Row(
        "each claim fits alone, not both",
        [claim(CLAIM_0, exact(REQ_0)), claim(CLAIM_1, exact(REQ_0))],
        [slice_on(NODE_1, DEVICE_1)],
        [
            RequestDiagnosis(
                CLAIM_1_KEY,
                "",
                f"not enough free devices left after the pod's other claims ({CLAIM_0_KEY})",
            )
        ],
    ),
]


def _allocator(row: Row) -> Allocator:
    classes = row.classes or [driver_class(CLASS_A, DRIVER_A), driver_class(CLASS_B, DRIVER_B)]
    return Allocator(
        features=DRAFeatures(),
        allocated=AllocatedState(devices=frozenset(row.allocated)),
        classes={c.name: c for c in classes},
        slices=row.slices,
    )


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_diagnosis(row: Row) -> None:
    allocator = _allocator(row)
    # a class that does not exist: the allocator refuses the claim outright
    with contextlib.suppress(AllocationError):
        assert allocator.allocate(node(NODE_1), row.claims) is None
    assert diagnose(allocator, node(NODE_1), row.claims) == row.want


def test_nothing_to_say_when_the_claims_fit() -> None:
    allocator = _allocator(Row("fits", [], [slice_on(NODE_1, DEVICE_1)], []))
    claims = [claim(CLAIM_0, exact(REQ_0))]
    assert allocator.allocate(node(NODE_1), claims) is not None
    assert diagnose(allocator, node(NODE_1), claims) == []


def test_invalid_pool_is_named() -> None:
    slices = [slice_on(NODE_1, DEVICE_1, DEVICE_1)]
    allocator = _allocator(Row("invalid", [], slices, []))
    assert diagnose(allocator, node(NODE_1), [claim(CLAIM_0, exact(REQ_0))]) == [
        RequestDiagnosis(
            CLAIM_0_KEY, REQ_0, "resource pool driver-a/pool-1 is invalid: duplicate device name "
            "device-1"
        )
    ]  # fmt: skip


def test_to_dict() -> None:
    assert RequestDiagnosis("ns/c", "gpu", "why").to_dict() == {
        "claim": "ns/c",
        "request": "gpu",
        "reason": "why",
    }
