"""The structured allocator's facts, ported from upstream's table
(staging/src/k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting/
allocator_testing.go, run by every variant's allocator_test.go): case names are upstream's."""

from __future__ import annotations

import pytest

from scheduler.plugins.dynamicresources.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    DRAFeatures,
    FailedAllocationOnNode,
)
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
    POOL_2,
    REGION_1,
    REGION_2,
    REGION_KEY,
    REQ_0,
    REQ_1,
    SUB_REQ_0,
    SUB_REQ_1,
    allocate,
    allocation,
    claim,
    device,
    device_class,
    device_result,
    driver_class,
    exact,
    first_available,
    local_node_selector,
    node,
    opaque,
    region_selector,
    resource_slice,
    results,
    sub_request,
)

NODE_1_SELECTOR = local_node_selector(NODE_1)


def slice1(*devices: str, node_name: str = NODE_1, pool: str = POOL_1, driver: str = DRIVER_A):
    return resource_slice(f"{driver}-{pool}-{node_name}", node_name, pool, driver, *devices)


def test_empty() -> None:
    assert results(allocate([], [])) == []


def test_simple() -> None:
    got = allocate([claim(CLAIM_0, exact(REQ_0))], [slice1(DEVICE_1)])
    assert results(got) == [
        allocation(NODE_1_SELECTOR, device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1))
    ]


def test_other_node() -> None:
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0))],
        [slice1(DEVICE_1, node_name=NODE_2), slice1(DEVICE_1, node_name=NODE_1, pool=POOL_2)],
    )
    assert results(got) == [
        allocation(NODE_1_SELECTOR, device_result(REQ_0, DRIVER_A, POOL_2, DEVICE_1))
    ]


def test_small_and_large() -> None:
    """Two claims, the first takes the first device, the second the next one."""
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0)), claim(CLAIM_1, exact(REQ_0, count=2))],
        [slice1(DEVICE_1, DEVICE_2, DEVICE_3)],
    )
    assert results(got) == [
        allocation(NODE_1_SELECTOR, device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1)),
        allocation(
            NODE_1_SELECTOR,
            device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
            device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_3),
        ),
    ]


def test_too_many_devices() -> None:
    assert allocate([claim(CLAIM_0, exact(REQ_0, count=2))], [slice1(DEVICE_1)]) is None


def test_too_many_devices_in_total() -> None:
    assert (
        allocate([claim(CLAIM_0, exact(REQ_0)), claim(CLAIM_1, exact(REQ_0))], [slice1(DEVICE_1)])
        is None
    )


def test_already_allocated_devices() -> None:
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0))],
        [slice1(DEVICE_1, DEVICE_2)],
        allocated={(DRIVER_A, POOL_1, DEVICE_1)},
    )
    assert results(got) == [
        allocation(NODE_1_SELECTOR, device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2))
    ]
    assert (
        allocate(
            [claim(CLAIM_0, exact(REQ_0))],
            [slice1(DEVICE_1)],
            allocated={(DRIVER_A, POOL_1, DEVICE_1)},
        )
        is None
    )


def test_all_devices() -> None:
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0, mode="All"))],
        [slice1(DEVICE_1, DEVICE_2), slice1(DEVICE_1, driver=DRIVER_B)],
    )
    assert results(got) == [
        allocation(
            NODE_1_SELECTOR,
            device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
        )
    ]


def test_all_devices_with_one_allocated() -> None:
    """All means all: one of them in use makes the request unsatisfiable."""
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0, mode="All"))],
        [slice1(DEVICE_1, DEVICE_2)],
        allocated={(DRIVER_A, POOL_1, DEVICE_1)},
    )
    assert got is None


def test_all_devices_no_devices() -> None:
    """'all' with no matching device fails (at least one is required)."""
    assert allocate([claim(CLAIM_0, exact(REQ_0, mode="All"))], []) is None


def test_all_devices_incomplete_pool_is_an_error() -> None:
    incomplete = resource_slice("s", NODE_1, POOL_1, DRIVER_A, device(DEVICE_1), slice_count=2)
    with pytest.raises(AllocationError) as err:
        allocate([claim(CLAIM_0, exact(REQ_0, mode="All"))], [incomplete])
    assert str(err.value) == (
        "claim default/claim-0, request req-0: asks for all devices, but resource pool "
        "driver-a/pool-1 is currently being updated"
    )


def test_incomplete_pool_is_skipped_for_exact_count() -> None:
    incomplete = resource_slice("s", NODE_1, POOL_1, DRIVER_A, device(DEVICE_1), slice_count=2)
    complete = resource_slice("t", NODE_1, POOL_2, DRIVER_A, device(DEVICE_1))
    got = allocate([claim(CLAIM_0, exact(REQ_0))], [incomplete, complete])
    assert results(got) == [
        allocation(NODE_1_SELECTOR, device_result(REQ_0, DRIVER_A, POOL_2, DEVICE_1))
    ]
    assert allocate([claim(CLAIM_0, exact(REQ_0))], [incomplete]) is None


def test_newer_generation_replaces_older_slices() -> None:
    """Slices of an older generation are ignored: the pool holds the newest generation only
    (and is incomplete while not all of its slices are there)."""
    old = resource_slice("old", NODE_1, POOL_1, DRIVER_A, device(DEVICE_1), generation=1)
    new = resource_slice("new", NODE_1, POOL_1, DRIVER_A, device(DEVICE_2), generation=2)
    got = allocate([claim(CLAIM_0, exact(REQ_0))], [old, new])
    assert results(got) == [
        allocation(NODE_1_SELECTOR, device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2))
    ]


def test_duplicate_device_names_make_the_pool_invalid() -> None:
    first = resource_slice("a", NODE_1, POOL_1, DRIVER_A, device(DEVICE_1), slice_count=2)
    second = resource_slice("b", NODE_1, POOL_1, DRIVER_A, device(DEVICE_1), slice_count=2)
    with pytest.raises(FailedAllocationOnNode) as err:
        allocate([claim(CLAIM_0, exact(REQ_0))], [first, second])
    assert str(err.value) == "invalid resource pools were encountered"
    with pytest.raises(AllocationError) as all_err:
        allocate([claim(CLAIM_0, exact(REQ_0, mode="All"))], [first, second])
    assert str(all_err.value) == (
        "claim default/claim-0, request req-0: asks for all devices, but resource pool "
        "driver-a/pool-1 is currently invalid"
    )


def test_invalid_pool_does_not_prevent_other_pools() -> None:
    first = resource_slice("a", NODE_1, POOL_1, DRIVER_A, device(DEVICE_1), slice_count=2)
    second = resource_slice("b", NODE_1, POOL_1, DRIVER_A, device(DEVICE_1), slice_count=2)
    valid = resource_slice("c", NODE_1, POOL_2, DRIVER_A, device(DEVICE_1))
    got = allocate([claim(CLAIM_0, exact(REQ_0))], [first, second, valid])
    assert results(got) == [
        allocation(NODE_1_SELECTOR, device_result(REQ_0, DRIVER_A, POOL_2, DEVICE_1))
    ]


def test_class_not_found() -> None:
    with pytest.raises(AllocationError) as err:
        allocate([claim(CLAIM_0, exact(REQ_0, class_name="no-such-class"))], [slice1(DEVICE_1)])
    assert str(err.value) == (
        "claim default/claim-0, request req-0: could not retrieve device class no-such-class: "
        'deviceclass.resource.k8s.io "no-such-class" not found'
    )


def test_request_selector_and_class_selector() -> None:
    slices = [
        resource_slice(
            "s",
            NODE_1,
            POOL_1,
            DRIVER_A,
            device(DEVICE_1, attributes={"model": "a"}),
            device(DEVICE_2, attributes={"model": "b"}),
        )
    ]
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0, selectors=('device.attributes["driver-a"].model == "b"',)))],
        slices,
    )
    assert results(got) == [
        allocation(NODE_1_SELECTOR, device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2))
    ]
    # the class selects driver-b only: nothing on driver-a fits
    got = allocate([claim(CLAIM_0, exact(REQ_0, class_name=CLASS_B))], slices)
    assert got is None


def test_class_selector_compile_error() -> None:
    bad = device_class(CLASS_A, ("noSuchVar",))
    with pytest.raises(AllocationError) as err:
        allocate([claim(CLAIM_0, exact(REQ_0))], [slice1(DEVICE_1)], [bad])
    assert str(err.value).startswith("class class-a: selector #0: CEL compile error: ")
    assert "undeclared reference to 'noSuchVar'" in str(err.value)


def test_claim_selector_compile_error() -> None:
    with pytest.raises(AllocationError) as err:
        allocate(
            [claim(CLAIM_0, exact(REQ_0, selectors=("1",)))],
            [slice1(DEVICE_1)],
        )
    assert str(err.value) == (
        "claim default/claim-0: selector #0: CEL compile error: "
        "must evaluate to bool or the unknown type, not int"
    )


def test_runtime_error() -> None:
    with pytest.raises(AllocationError) as err:
        allocate(
            [
                claim(
                    CLAIM_0,
                    exact(REQ_0, selectors=('device.attributes["driver-a"].noSuchAttr',)),
                )
            ],
            [slice1(DEVICE_1)],
        )
    assert str(err.value) == (
        "claim default/claim-0: selector #0 on device driver-a/pool-1/device-1: "
        "CEL runtime error: no such key: noSuchAttr"
    )


def test_network_attached_device() -> None:
    """A device in a slice with a node selector: the result carries that selector."""
    network = resource_slice(
        "net", None, POOL_1, DRIVER_A, device(DEVICE_1), node_selector=region_selector(REGION_1)
    )
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0))], [network], on=node(NODE_1, {REGION_KEY: REGION_1})
    )
    assert results(got) == [
        allocation(region_selector(REGION_1), device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1))
    ]
    # a node in another region does not reach it
    assert (
        allocate([claim(CLAIM_0, exact(REQ_0))], [network], on=node(NODE_1, {REGION_KEY: REGION_2}))
        is None
    )


def test_all_nodes_device_gives_no_node_selector() -> None:
    everywhere = resource_slice("all", None, POOL_1, DRIVER_A, device(DEVICE_1), all_nodes=True)
    got = allocate([claim(CLAIM_0, exact(REQ_0))], [everywhere])
    assert results(got) == [allocation(None, device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1))]


def test_local_and_network_attached_devices() -> None:
    """A node-local device pins the claim to its node whatever else it gets."""
    network = resource_slice(
        "net", None, POOL_2, DRIVER_B, device(DEVICE_1), node_selector=region_selector(REGION_1)
    )
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0, CLASS_B), exact(REQ_1, CLASS_A))],
        [network, slice1(DEVICE_1)],
        on=node(NODE_1, {REGION_KEY: REGION_1}),
    )
    assert results(got) == [
        allocation(
            NODE_1_SELECTOR,
            device_result(REQ_0, DRIVER_B, POOL_2, DEVICE_1),
            device_result(REQ_1, DRIVER_A, POOL_1, DEVICE_1),
        )
    ]


def test_several_network_attached_devices_merge_their_selectors() -> None:
    first = resource_slice(
        "a", None, POOL_1, DRIVER_A, device(DEVICE_1), node_selector=region_selector(REGION_1)
    )
    other_key = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z"]}]}
        ]
    }
    second = resource_slice("b", None, POOL_2, DRIVER_A, device(DEVICE_1), node_selector=other_key)
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0, count=2))],
        [first, second],
        on=node(NODE_1, {REGION_KEY: REGION_1, "zone": "z"}),
    )
    assert results(got) == [
        allocation(
            {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": REGION_KEY, "operator": "In", "values": [REGION_1]},
                            {"key": "zone", "operator": "In", "values": ["z"]},
                        ]
                    }
                ]
            },
            device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            device_result(REQ_0, DRIVER_A, POOL_2, DEVICE_1),
        )
    ]


A = {"class": "a"}
ALL = {"claim": "all"}


def test_config_pass_through() -> None:
    """Class config once per class (FromClass), claim config per request (FromClaim); a config
    that names every request is written with no requests ("empty means all")."""
    a = device_class(CLASS_A, ('device.driver == "driver-a"',), [opaque(DRIVER_A, {"class": "a"})])
    got = allocate(
        [
            claim(
                CLAIM_0,
                exact(REQ_0),
                exact(REQ_1),
                config=[
                    opaque(DRIVER_A, {"claim": "all"}),
                    opaque(DRIVER_A, {"claim": "req-1"}, [REQ_1]),
                ],
            )
        ],
        [slice1(DEVICE_1, DEVICE_2)],
        [a],
    )
    assert results(got) == [
        allocation(
            NODE_1_SELECTOR,
            device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1),
            device_result(REQ_1, DRIVER_A, POOL_1, DEVICE_2),
            config=[
                {"source": "FromClass", "opaque": {"driver": DRIVER_A, "parameters": A}},
                {"source": "FromClaim", "opaque": {"driver": DRIVER_A, "parameters": ALL}},
                {
                    "source": "FromClaim",
                    "requests": [REQ_1],
                    "opaque": {"driver": DRIVER_A, "parameters": {"claim": "req-1"}},
                },
            ],
        )
    ]


def test_class_with_driver_b_on_a_node_with_both() -> None:
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0, CLASS_B))],
        [slice1(DEVICE_1), slice1(DEVICE_1, driver=DRIVER_B)],
    )
    assert results(got) == [
        allocation(NODE_1_SELECTOR, device_result(REQ_0, DRIVER_B, POOL_1, DEVICE_1))
    ]


def test_features_disabled() -> None:
    with pytest.raises(AllocationError) as err:
        allocate(
            [claim(CLAIM_0, first_available(REQ_0, sub_request(SUB_REQ_0)))],
            [slice1(DEVICE_1)],
            features=DRAFeatures(prioritized_list=False),
        )
    assert str(err.value) == (
        "claim default/claim-0, request req-0: has subrequests, but the DRAPrioritizedList "
        "feature is disabled"
    )
    with pytest.raises(AllocationError) as admin:
        allocate(
            [claim(CLAIM_0, exact(REQ_0, admin_access=True))],
            [slice1(DEVICE_1)],
            features=DRAFeatures(admin_access=False),
        )
    assert str(admin.value) == (
        "claim default/claim-0, request req-0: admin access is requested, but the feature is "
        "disabled"
    )


# --- prioritized list (firstAvailable) -------------------------------------------------------


def test_prioritized_list_first_sub_request_fits() -> None:
    got = allocate(
        [
            claim(
                CLAIM_0,
                first_available(REQ_0, sub_request(SUB_REQ_0, CLASS_B), sub_request(SUB_REQ_1)),
            )
        ],
        [slice1(DEVICE_1), slice1(DEVICE_1, driver=DRIVER_B)],
    )
    assert results(got) == [
        allocation(
            NODE_1_SELECTOR, device_result(f"{REQ_0}/{SUB_REQ_0}", DRIVER_B, POOL_1, DEVICE_1)
        )
    ]


def test_prioritized_list_falls_back_to_the_next_sub_request() -> None:
    got = allocate(
        [
            claim(
                CLAIM_0,
                first_available(REQ_0, sub_request(SUB_REQ_0, count=2), sub_request(SUB_REQ_1)),
            )
        ],
        [slice1(DEVICE_1)],
    )
    assert results(got) == [
        allocation(
            NODE_1_SELECTOR, device_result(f"{REQ_0}/{SUB_REQ_1}", DRIVER_A, POOL_1, DEVICE_1)
        )
    ]


def test_prioritized_list_none_fits() -> None:
    got = allocate(
        [
            claim(
                CLAIM_0,
                first_available(
                    REQ_0, sub_request(SUB_REQ_0, count=3), sub_request(SUB_REQ_1, count=2)
                ),
            )
        ],
        [slice1(DEVICE_1)],
    )
    assert got is None


def test_prioritized_list_with_backtracking_across_claims() -> None:
    """The second claim's preferred sub-request fails; the first claim's is kept."""
    got = allocate(
        [
            claim(CLAIM_0, exact(REQ_0)),
            claim(
                CLAIM_1,
                first_available(REQ_0, sub_request(SUB_REQ_0, count=2), sub_request(SUB_REQ_1)),
            ),
        ],
        [slice1(DEVICE_1, DEVICE_2)],
    )
    assert results(got) == [
        allocation(NODE_1_SELECTOR, device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1)),
        allocation(
            NODE_1_SELECTOR, device_result(f"{REQ_0}/{SUB_REQ_1}", DRIVER_A, POOL_1, DEVICE_2)
        ),
    ]


def test_prioritized_list_config_of_the_chosen_sub_request() -> None:
    """Class config of the chosen sub-request's class; claim config naming the sub-request."""
    b = device_class(CLASS_B, ('device.driver == "driver-b"',), [opaque(DRIVER_B, B)])
    a = device_class(CLASS_A, ('device.driver == "driver-a"',), [opaque(DRIVER_A, A)])
    got = allocate(
        [
            claim(
                CLAIM_0,
                first_available(REQ_0, sub_request(SUB_REQ_0, CLASS_B), sub_request(SUB_REQ_1)),
                config=[
                    opaque(DRIVER_A, ALL, [f"{REQ_0}/{SUB_REQ_1}"]),
                    opaque(DRIVER_B, ALL, [f"{REQ_0}/{SUB_REQ_0}"]),
                ],
            )
        ],
        [slice1(DEVICE_1)],
        [a, b],
    )
    assert results(got) == [
        allocation(
            NODE_1_SELECTOR,
            device_result(f"{REQ_0}/{SUB_REQ_1}", DRIVER_A, POOL_1, DEVICE_1),
            config=[
                {"source": "FromClass", "opaque": {"driver": DRIVER_A, "parameters": A}},
                {"source": "FromClaim", "opaque": {"driver": DRIVER_A, "parameters": ALL}},
            ],
        )
    ]


B = {"class": "b"}


# --- matchAttribute constraints ---------------------------------------------------------------


def _numa_slice() -> object:
    return resource_slice(
        "s",
        NODE_1,
        POOL_1,
        DRIVER_A,
        device(DEVICE_1, attributes={"numa": 1}),
        device(DEVICE_2, attributes={"numa": 2}),
        device(DEVICE_3, attributes={"numa": 2}),
    )


def test_match_attribute_within_one_request() -> None:
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0, count=2), constraints=[{"matchAttribute": "driver-a/numa"}])],
        [_numa_slice()],
    )
    assert results(got) == [
        allocation(
            NODE_1_SELECTOR,
            device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
            device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_3),
        )
    ]


def test_match_attribute_across_requests() -> None:
    got = allocate(
        [
            claim(
                CLAIM_0,
                exact(REQ_0),
                exact(REQ_1),
                constraints=[{"requests": [REQ_0, REQ_1], "matchAttribute": "driver-a/numa"}],
            )
        ],
        [_numa_slice()],
    )
    assert results(got) == [
        allocation(
            NODE_1_SELECTOR,
            device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2),
            device_result(REQ_1, DRIVER_A, POOL_1, DEVICE_3),
        )
    ]


def test_match_attribute_missing_attribute_never_matches() -> None:
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0), constraints=[{"matchAttribute": "driver-a/nosuch"}])],
        [_numa_slice()],
    )
    assert got is None


def test_match_attribute_types_differ() -> None:
    """An int 1 and a bool true are different values (Python's True == 1 must not leak)."""
    mixed = resource_slice(
        "s",
        NODE_1,
        POOL_1,
        DRIVER_A,
        device(DEVICE_1, attributes={"x": 1}),
        device(DEVICE_2, attributes={"x": True}),
    )
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0, count=2), constraints=[{"matchAttribute": "driver-a/x"}])],
        [mixed],
    )
    assert got is None


def test_match_attribute_with_all_mode_is_an_error() -> None:
    with pytest.raises(AllocationError) as err:
        allocate(
            [
                claim(
                    CLAIM_0,
                    exact(REQ_0, mode="All"),
                    constraints=[{"matchAttribute": "driver-a/numa"}],
                )
            ],
            [_numa_slice()],
        )
    assert str(err.value) == (
        "claim default/claim-0, request req-0: cannot add device driver-a/pool-1/device-2 "
        "because a claim constraint would not be satisfied"
    )


def test_match_attribute_on_a_sub_request() -> None:
    got = allocate(
        [
            claim(
                CLAIM_0,
                first_available(REQ_0, sub_request(SUB_REQ_0, count=2)),
                constraints=[
                    {"requests": [f"{REQ_0}/{SUB_REQ_0}"], "matchAttribute": "driver-a/numa"}
                ],
            )
        ],
        [_numa_slice()],
    )
    assert results(got) == [
        allocation(
            NODE_1_SELECTOR,
            device_result(f"{REQ_0}/{SUB_REQ_0}", DRIVER_A, POOL_1, DEVICE_2),
            device_result(f"{REQ_0}/{SUB_REQ_0}", DRIVER_A, POOL_1, DEVICE_3),
        )
    ]


# --- admin access -----------------------------------------------------------------------------


def test_admin_access_allocates_allocated_devices() -> None:
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0, admin_access=True))],
        [slice1(DEVICE_1)],
        allocated={(DRIVER_A, POOL_1, DEVICE_1)},
    )
    assert results(got) == [
        allocation(
            NODE_1_SELECTOR, device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1, admin_access=True)
        )
    ]


def test_admin_access_not_twice_in_one_claim() -> None:
    """Admin access may share a device with other claims, not within its own claim."""
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0, admin_access=True), exact(REQ_1, admin_access=True))],
        [slice1(DEVICE_1)],
    )
    assert got is None
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0)), claim(CLAIM_1, exact(REQ_0, admin_access=True))],
        [slice1(DEVICE_1)],
    )
    assert results(got) == [
        allocation(NODE_1_SELECTOR, device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1)),
        allocation(
            NODE_1_SELECTOR, device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1, admin_access=True)
        ),
    ]


# --- per-device node selection, taints, binding conditions, counters -------------------------


def test_per_device_node_selection() -> None:
    mixed = resource_slice(
        "s",
        None,
        POOL_1,
        DRIVER_A,
        device(DEVICE_1, nodeName=NODE_2),
        device(DEVICE_2, nodeSelector=region_selector(REGION_1)),
        per_device_node_selection=True,
    )
    features = DRAFeatures(partitionable_devices=True)
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0))],
        [mixed],
        on=node(NODE_1, {REGION_KEY: REGION_1}),
        features=features,
    )
    assert results(got) == [
        allocation(region_selector(REGION_1), device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_2))
    ]
    got = allocate([claim(CLAIM_0, exact(REQ_0))], [mixed], on=node(NODE_2), features=features)
    assert results(got) == [
        allocation(local_node_selector(NODE_2), device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1))
    ]
    # without DRAPartitionableDevices such slices are ignored
    assert allocate([claim(CLAIM_0, exact(REQ_0))], [mixed], on=node(NODE_2)) is None


def test_device_taints() -> None:
    tainted = resource_slice(
        "s",
        NODE_1,
        POOL_1,
        DRIVER_A,
        device(DEVICE_1, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
    )
    features = DRAFeatures(device_taints=True)
    assert allocate([claim(CLAIM_0, exact(REQ_0))], [tainted], features=features) is None
    toleration = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
    got = allocate(
        [claim(CLAIM_0, exact(REQ_0, tolerations=[toleration]))], [tainted], features=features
    )
    result = device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1)
    result["tolerations"] = [toleration]
    assert results(got) == [allocation(NODE_1_SELECTOR, result)]
    # feature off: taints are ignored
    got = allocate([claim(CLAIM_0, exact(REQ_0))], [tainted])
    assert results(got) == [
        allocation(NODE_1_SELECTOR, device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1))
    ]


def test_binding_conditions_need_their_feature() -> None:
    conditional = resource_slice(
        "s", NODE_1, POOL_1, DRIVER_A, device(DEVICE_1, bindingConditions=["ready"])
    )
    assert allocate([claim(CLAIM_0, exact(REQ_0))], [conditional]) is None


HALF = [{"counterSet": "gpu", "counters": {"mem": {"value": "8Gi"}}}]


def test_shared_counters() -> None:
    """Two partitions of one GPU consume the same counter: only one fits."""
    gpu = resource_slice(
        "s",
        NODE_1,
        POOL_1,
        DRIVER_A,
        device(DEVICE_1, consumesCounters=HALF),
        device(DEVICE_2, consumesCounters=HALF),
        shared_counters=[{"name": "gpu", "counters": {"mem": {"value": "8Gi"}}}],
    )
    features = DRAFeatures(partitionable_devices=True)
    one = allocate([claim(CLAIM_0, exact(REQ_0))], [gpu], features=features)
    assert results(one) == [
        allocation(NODE_1_SELECTOR, device_result(REQ_0, DRIVER_A, POOL_1, DEVICE_1))
    ]
    assert allocate([claim(CLAIM_0, exact(REQ_0, count=2))], [gpu], features=features) is None
    # the allocated partition's counters are taken already
    assert (
        allocate(
            [claim(CLAIM_0, exact(REQ_0))],
            [gpu],
            features=features,
            allocated={(DRIVER_A, POOL_1, DEVICE_1)},
        )
        is None
    )
    # feature off: devices that consume counters are never allocated
    assert allocate([claim(CLAIM_0, exact(REQ_0))], [gpu]) is None


def test_too_many_devices_for_the_result() -> None:
    with pytest.raises(AllocationError) as err:
        allocate([claim(CLAIM_0, exact(REQ_0, count=33))], [slice1(DEVICE_1)])
    assert str(err.value) == (
        "claim default/claim-0: number of requested devices 33 exceeds the claim limit of 32"
    )


def test_one_allocator_serves_different_claims_and_nodes() -> None:
    """The plugin keeps one allocator per cycle: selector outcomes are shared only where the
    class, the selectors and the device are the same."""
    slices = [
        resource_slice(
            f"s-{name}",
            name,
            name,
            DRIVER_A,
            device(DEVICE_1, attributes={"model": "a"}),
            device(DEVICE_2, attributes={"model": "b"}),
        )
        for name in (NODE_1, NODE_2)
    ]
    allocator = Allocator(
        features=DRAFeatures(),
        allocated=AllocatedState(),
        classes={CLASS_A: driver_class(CLASS_A, DRIVER_A)},
        slices=slices,
    )
    want_b = claim(CLAIM_0, exact(REQ_0, selectors=('device.attributes["driver-a"].model == "b"',)))
    want_a = claim(CLAIM_1, exact(REQ_0, selectors=('device.attributes["driver-a"].model == "a"',)))
    for node_name in (NODE_1, NODE_2):
        for wanted, name in ((want_b, DEVICE_2), (want_a, DEVICE_1)):
            got = allocator.allocate(node(node_name), [wanted])
            assert results(got) == [
                allocation(
                    local_node_selector(node_name),
                    device_result(REQ_0, DRIVER_A, node_name, name),
                )
            ]
