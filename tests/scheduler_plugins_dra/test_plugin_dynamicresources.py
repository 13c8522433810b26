"""DynamicResources' extension points, as facts from upstream's dynamicresources_test.go
(TestPlugin: a representative subset with upstream's statuses and messages), run through a
real Framework from the public test kit so that PreBind's and PostFilter's API writes are
asserted."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import CycleState, NodeToStatus
from scheduler.framework.status import Code
from scheduler.plugins.dynamicresources import plugin as plugin_module
from scheduler.plugins.dynamicresources import writes
from scheduler.plugins.dynamicresources.results import prioritized_list_score
from scheduler.testing import RecordingClient, run_cycle
from tests.scheduler_plugins_dra.dra_plugin_kit import (
    CLASS,
    EchoClient,
    RecordingAllocator,
    allocation_on,
    claim,
    claim_raw,
    device_class,
    node_slice,
    pod,
    setup,
)

CLAIM_REF = [{"name": "my-resource", "resourceClaimName": "my-claim"}]
TEMPLATE_REF = [{"name": "my-resource", "resourceClaimTemplateName": "my-template"}]
CLAIM_PATH = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/my-claim"


@pytest.fixture(autouse=True)
def recording_allocator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugin_module, "Allocator", RecordingAllocator)


def plugin_of(framework: Any) -> plugin_module.DynamicResources:
    found: plugin_module.DynamicResources = framework.plugins["DynamicResources"]
    return found


def test_pod_without_claims_is_skipped_everywhere() -> None:
    framework, _, _client = setup()
    p = pod()
    assert framework.run_pre_enqueue_plugins(p).is_success
    result = run_cycle(framework, p)
    assert result.pre_filter.is_success
    assert "DynamicResources" in result.state.skip_filter_plugins
    assert result.filter["worker"].is_success
    assert framework.run_reserve_plugins_reserve(result.state, p, "worker").is_success
    assert plugin_of(framework).sign_pod(p) == ((), plugin_module.Status.OK)


async def test_pod_without_claims_writes_nothing() -> None:
    framework, _, client = setup()
    p = pod()
    result = run_cycle(framework, p)
    assert (await framework.run_pre_bind_plugins(result.state, p, "worker")).is_success
    assert client.requests == []


@pytest.mark.parametrize(
    ("claims", "objects", "statuses", "message"),
    [
        pytest.param(
            CLAIM_REF, [], None, 'resourceclaim.resource.k8s.io "my-claim" not found',
            id="missing-claim",
        ),
        pytest.param(
            CLAIM_REF, [claim(deleting=True)], None, 'resourceclaim "my-claim" is being deleted',
            id="deleted-claim",
        ),
        pytest.param(
            TEMPLATE_REF, [], None, 'pod "default/my-pod": ResourceClaim not created yet',
            id="claim-not-created-yet",
        ),
        pytest.param(
            TEMPLATE_REF, [claim(owner_pod=("other", "other-uid"))],
            [{"name": "my-resource", "resourceClaimName": "my-claim"}],
            "ResourceClaim default/my-claim was not created for pod default/my-pod "
            "(pod is not owner)",
            id="wrong-claim-owner",
        ),
    ],
)  # fmt: skip
def test_pre_enqueue_and_pre_filter_wait_for_claims(
    claims: Any, objects: Any, statuses: Any, message: str
) -> None:
    framework, _, _ = setup(*objects)
    p = pod(claims=claims, statuses=statuses)
    status = framework.run_pre_enqueue_plugins(p)
    assert (status.code, status.message, status.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message, "DynamicResources",
    )  # fmt: skip
    result = run_cycle(framework, p)
    assert (result.pre_filter.code, result.pre_filter.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message,
    )  # fmt: skip


def test_generated_claim_owned_by_the_pod_is_used() -> None:
    framework, _, _ = setup(
        claim(owner_pod=("my-pod", "pod-uid"), allocation=allocation_on("worker", "gpu-0"),
              reserved_for=[("my-pod", "pod-uid")]),
    )  # fmt: skip
    p = pod(
        claims=TEMPLATE_REF, statuses=[{"name": "my-resource", "resourceClaimName": "my-claim"}]
    )
    assert framework.run_pre_enqueue_plugins(p).is_success
    result = run_cycle(framework, p)
    assert result.pre_filter.is_success and result.feasible == ["worker"]


def test_no_claim_needed_skips() -> None:
    """A template entry the controller decided needs no claim (resourceClaimName null)."""
    framework, _, _ = setup()
    p = pod(claims=TEMPLATE_REF, statuses=[{"name": "my-resource"}])
    assert framework.run_pre_enqueue_plugins(p).is_success
    assert "DynamicResources" in run_cycle(framework, p).state.skip_filter_plugins


def test_claim_in_use_by_too_many_pods() -> None:
    others = [(f"p{i}", f"uid-{i}") for i in range(plugin_module.RESERVED_FOR_MAX_SIZE)]
    framework, _, _ = setup(claim(allocation=allocation_on("worker", "gpu-0"), reserved_for=others))
    result = run_cycle(framework, pod(claims=CLAIM_REF))
    assert (result.pre_filter.code, result.pre_filter.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "resourceclaim in use",
    )  # fmt: skip


def test_missing_device_class() -> None:
    framework, _, _ = setup(claim(), node_slice("worker"))
    result = run_cycle(framework, pod(claims=CLAIM_REF))
    assert (result.pre_filter.code, result.pre_filter.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"request req-1: device class {CLASS} does not exist",
    )  # fmt: skip


def test_prioritized_list_disabled() -> None:
    framework, _, _ = setup(
        claim(first_available=[CLASS]), device_class(), gates={"DRAPrioritizedList": False}
    )
    result = run_cycle(framework, pod(claims=CLAIM_REF))
    assert result.pre_filter.message == (
        "resource claim default/my-claim, request req-1: has subrequests, but the "
        "DRAPrioritizedList feature is disabled"
    )


async def test_no_resources_cannot_allocate() -> None:
    """structured-no-resources: Filter rejects every node, PostFilter has nothing to free."""
    framework, _, client = setup(claim(), device_class())
    p = pod(claims=CLAIM_REF)
    result = run_cycle(framework, p)
    status = result.filter["worker"]
    assert (status.code, status.message, status.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims", "DynamicResources",
    )  # fmt: skip
    _outcome, post = await framework.run_post_filter_plugins(result.state, p, NodeToStatus())
    assert post.message == "still not schedulable"
    assert client.requests == []


async def test_allocate_reserve_and_prebind_write_the_claim() -> None:
    """structured-with-resources: Filter allocates, Reserve puts it in flight, PreBind adds
    the finalizer and then writes status.allocation and reservedFor."""
    raw = claim_raw()
    api = EchoClient(raw)
    framework, resources, _ = setup(claim(), device_class(), node_slice("worker"), client=api)
    p = pod(claims=CLAIM_REF)
    result = run_cycle(framework, p)
    assert result.feasible == ["worker"]
    assert framework.run_reserve_plugins_reserve(result.state, p, "worker").is_success
    assert resources.tracker.has_pending_allocation("claim-uid")
    assert resources.tracker.allocated_devices() == {("gpu.example.com", "worker", "gpu-0")}
    assert (await framework.run_pre_bind_plugins(result.state, p, "worker")).is_success
    assert [(m, path) for m, path, _ in api.requests] == [
        ("PUT", CLAIM_PATH), ("PUT", CLAIM_PATH + "/status"),
    ]  # fmt: skip
    assert api.requests[0][2]["metadata"]["finalizers"] == [writes.FINALIZER]
    status = api.requests[1][2]["status"]
    assert status["reservedFor"] == [{"resource": "pods", "name": "my-pod", "uid": "pod-uid"}]
    assert status["allocation"]["devices"]["results"] == [
        {"request": "req-1", "driver": "gpu.example.com", "pool": "worker", "device": "gpu-0"}
    ]
    # Written, so no longer in flight, but assumed until the informer catches up.
    assert not resources.tracker.has_pending_allocation("claim-uid")
    assert resources.claim("default", "my-claim").allocation is not None
    assert resources.tracker.allocated_devices() == {("gpu.example.com", "worker", "gpu-0")}


async def test_shared_allocated_claim_only_adds_the_reservation() -> None:
    raw = claim_raw(allocation=allocation_on("worker", "gpu-0"), reserved_for=[("a", "uid-a")])
    api = EchoClient(raw)
    framework, _, _ = setup(claim(allocation=allocation_on("worker", "gpu-0"),
                                  reserved_for=[("a", "uid-a")]), client=api)  # fmt: skip
    p = pod(claims=CLAIM_REF)
    result = run_cycle(framework, p)
    assert result.feasible == ["worker"]
    assert RecordingAllocator.built == [] or result.state.read("DynamicResources").allocator is None
    assert framework.run_reserve_plugins_reserve(result.state, p, "worker").is_success
    assert (await framework.run_pre_bind_plugins(result.state, p, "worker")).is_success
    assert [(m, path) for m, path, _ in api.requests] == [("PUT", CLAIM_PATH + "/status")]
    assert [r["uid"] for r in api.requests[0][2]["status"]["reservedFor"]] == ["uid-a", "pod-uid"]


async def test_prebind_retries_on_conflict_with_a_fresh_claim() -> None:
    stale = claim(allocation=allocation_on("worker", "gpu-0"))
    fresh = claim_raw(allocation=allocation_on("worker", "gpu-0"), resource_version="7")
    api = EchoClient(fresh)
    framework, _, _ = setup(stale, client=api)
    p = pod(claims=CLAIM_REF)
    result = run_cycle(framework, p)
    assert (await framework.run_pre_bind_plugins(result.state, p, "worker")).is_success
    assert [m for m, _, _ in api.requests] == ["PUT", "GET", "PUT"]


async def test_prebind_gives_up_when_allocated_elsewhere() -> None:
    client = RecordingClient(
        responses=[
            (409, {"message": "the object has been modified"}),
            (200, claim_raw(allocation=allocation_on("other", "gpu-0"), resource_version="9")),
        ]
    )
    framework, _, _ = setup(claim(), device_class(), node_slice("worker"), client=client)
    p = pod(claims=CLAIM_REF)
    result = run_cycle(framework, p)
    assert framework.run_reserve_plugins_reserve(result.state, p, "worker").is_success
    status = await framework.run_pre_bind_plugins(result.state, p, "worker")
    assert status.code == Code.ERROR
    assert status.message == (
        'running PreBind plugin "DynamicResources": '
        "claim default/my-claim got allocated elsewhere in the meantime"
    )


def test_in_flight_claim_makes_the_next_pod_wait() -> None:
    framework, _, _ = setup(claim(), device_class(), node_slice("worker"))
    first = pod(claims=CLAIM_REF)
    result = run_cycle(framework, first)
    assert framework.run_reserve_plugins_reserve(result.state, first, "worker").is_success
    second = run_cycle(framework, pod("other", uid="other-uid", claims=CLAIM_REF))
    assert (second.pre_filter.code, second.pre_filter.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "resource claim default/my-claim is in the process of being allocated",
    )
    framework.run_reserve_plugins_unreserve(result.state, first, "worker")
    assert run_cycle(framework, pod("other", uid="other-uid", claims=CLAIM_REF)).feasible


async def test_allocated_elsewhere_then_postfilter_deallocates() -> None:
    """A claim allocated for another node and reserved by nobody: Filter says it is not
    available, PostFilter clears its allocation (upstream's "deallocation" test)."""
    raw = claim_raw(allocation=allocation_on("other", "gpu-0"))
    api = EchoClient(raw)
    framework, _, _ = setup(claim(allocation=allocation_on("other", "gpu-0")), client=api)
    p = pod(claims=CLAIM_REF)
    result = run_cycle(framework, p)
    status = result.filter["worker"]
    assert (status.code, status.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "resourceclaim not available on the node",
    )  # fmt: skip
    _, post = await framework.run_post_filter_plugins(result.state, p, NodeToStatus())
    assert (post.code, post.message) == (
        Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed",
    )  # fmt: skip
    method, path, body = api.requests[0]
    assert (method, path) == ("PUT", CLAIM_PATH + "/status")
    assert "allocation" not in body["status"] and "reservedFor" not in body["status"]


async def test_postfilter_keeps_a_claim_others_use() -> None:
    framework, _, client = setup(
        claim(allocation=allocation_on("other", "gpu-0"), reserved_for=[("a", "uid-a")])
    )
    p = pod(claims=CLAIM_REF)
    result = run_cycle(framework, p)
    _, post = await framework.run_post_filter_plugins(result.state, p, NodeToStatus())
    assert post.message == "still not schedulable"
    assert client.requests == []


async def test_postfilter_without_claims() -> None:
    framework, _, _ = setup()
    p = pod()
    state = CycleState()
    framework.run_pre_filter_plugins(state, p, [])
    _, post = await framework.run_post_filter_plugins(state, p, NodeToStatus())
    assert post.message == "no new claims to deallocate"


async def test_unreserve_after_prebind_removes_the_reservation() -> None:
    api = EchoClient(claim_raw())
    framework, _resources, _ = setup(claim(), device_class(), node_slice("worker"), client=api)
    p = pod(claims=CLAIM_REF)
    result = run_cycle(framework, p)
    framework.run_reserve_plugins_reserve(result.state, p, "worker")
    assert (await framework.run_pre_bind_plugins(result.state, p, "worker")).is_success
    framework.run_reserve_plugins_unreserve(result.state, p, "worker")
    await plugin_of(framework).drain()
    method, path, body = api.requests[-1]
    assert (method, path) == ("PATCH", CLAIM_PATH + "/status")
    assert body["status"] == {"reservedFor": [{"$patch": "delete", "uid": "pod-uid"}]}


def test_sign_pod_refuses_pods_with_claims() -> None:
    framework, _, _ = setup()
    _fragments, status = plugin_of(framework).sign_pod(pod(claims=CLAIM_REF))
    assert (status.code, status.message) == (
        Code.UNSCHEDULABLE, "pods with dra resource claims are not signable",
    )  # fmt: skip


def test_allocator_sees_allocated_and_in_flight_devices() -> None:
    framework, _, _ = setup(
        claim("a", uid="a", allocation=allocation_on("worker", "gpu-0")),
        claim("b", uid="b"), claim("c", uid="c"), device_class(), node_slice("worker", 3),
    )  # fmt: skip
    p1 = pod("p1", uid="u1", claims=[{"name": "r", "resourceClaimName": "b"}])
    r1 = run_cycle(framework, p1)
    assert framework.run_reserve_plugins_reserve(r1.state, p1, "worker").is_success
    p2 = pod("p2", uid="u2", claims=[{"name": "r", "resourceClaimName": "c"}])
    RecordingAllocator.built.clear()
    r2 = run_cycle(framework, p2)
    assert RecordingAllocator.built[0].allocated.devices == {
        ("gpu.example.com", "worker", "gpu-0"), ("gpu.example.com", "worker", "gpu-1"),
    }  # fmt: skip
    assert r2.feasible == ["worker"]


def test_score_prefers_earlier_alternatives() -> None:
    """computeScore: the first `firstAvailable` alternative scores 8 (normalised to 100)."""
    framework, _, _ = setup(
        claim(first_available=["other", CLASS]), device_class(), device_class("other"),
        node_slice("worker"),
    )  # fmt: skip
    result = run_cycle(framework, pod(claims=CLAIM_REF))
    state = result.state.read("DynamicResources")
    assert [d.request for d in state.node_allocations["worker"][0].devices] == ["req-1/sub-0"]
    assert prioritized_list_score(state.to_allocate(), state.node_allocations["worker"]) == 8
    assert result.totals == {"worker": 100}
