"""DynamicResources' cluster events and queueing hints (upstream's TestEventsToRegister-like
facts and the isSchedulableAfterClaimChange / isSchedulableAfterPodChange tables), the pod
event for a generated claim, the resource.k8s.io event labels, the listers' events to the
queue, and the optional informer that tolerates a cluster without resource.k8s.io; plus a
hypothesis property: two pods never get the same device through Reserve + PreBind."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.client.informers import Informer, ResourceWatch
from scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.listers.resource_objects import ResourceObjects
from scheduler.plugins.dynamicresources import hints
from scheduler.plugins.dynamicresources import plugin as plugin_module
from scheduler.queue.event_labels import event_label
from scheduler.queue.pod_events import pod_update_actions
from scheduler.testing import run_cycle
from tests.scheduler_plugins_dra.dra_plugin_kit import (
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

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.SKIP
CLAIM_REF = [{"name": "my-resource", "resourceClaimName": "my-claim"}]
TEMPLATE_REF = [{"name": "my-resource", "resourceClaimTemplateName": "my-template"}]


@pytest.fixture(autouse=True)
def recording_allocator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugin_module, "Allocator", RecordingAllocator)


def test_events_to_register() -> None:
    framework, _, _ = setup()
    events = framework.plugins["DynamicResources"].events_to_register()
    assert [(e.event.resource, e.event.action, e.hint is not None) for e in events] == [
        (EventResource.NODE,
         ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE, False),
        (EventResource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE, True),
        (EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM, True),
        (EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE, False),
        (EventResource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE, False),
    ]  # fmt: skip


def test_event_labels_are_upstreams() -> None:
    assert event_label(ClusterEvent(EventResource.RESOURCE_SLICE, ActionType.ADD)) == (
        "resource.k8s.io/ResourceSliceAdd"
    )
    assert event_label(ClusterEvent(EventResource.DEVICE_CLASS, ActionType.UPDATE)) == (
        "resource.k8s.io/DeviceClassUpdate"
    )


def test_generated_claim_in_pod_status_is_an_event() -> None:
    before = pod(claims=TEMPLATE_REF)
    after = pod(claims=TEMPLATE_REF, statuses=[{"name": "my-resource", "resourceClaimName": "c"}])
    assert pod_update_actions(before, after) == [ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM]


def _resources(*objects: Any) -> ResourceObjects:
    resources = ResourceObjects()
    resources.add(*objects)
    return resources


@pytest.mark.parametrize(
    ("objects", "old", "new", "expected"),
    [
        pytest.param([], None, claim(), QUEUE, id="claim-created"),
        pytest.param([], None, claim("other", uid="x"), SKIP, id="other-claim-while-missing"),
        pytest.param([claim()], None, claim("other", uid="x"), SKIP, id="unrelated-claim"),
        pytest.param(
            [claim()], claim("other", uid="x", allocation=allocation_on("n", "gpu-0")),
            claim("other", uid="x"), QUEUE, id="other-claim-deallocated",
        ),
        pytest.param(
            [claim()], claim(), claim(resource_version="2"), SKIP, id="status-unchanged",
        ),
        pytest.param(
            [claim()], claim(), claim(allocation=allocation_on("n", "gpu-0")), QUEUE,
            id="status-changed",
        ),
    ],
)  # fmt: skip
def test_schedulable_after_claim_change(objects: Any, old: Any, new: Any, expected: Any) -> None:
    resources = _resources(*objects)
    if old is None and objects == [] and new.name == "my-claim":
        resources.add(new)  # the informer stored it before the event
    p = pod(claims=CLAIM_REF)
    assert hints.schedulable_after_claim_change(resources, p, old, new) is expected


def test_schedulable_after_pod_change() -> None:
    resources = _resources(claim(owner_pod=("my-pod", "pod-uid")))
    waiting = pod(claims=TEMPLATE_REF)
    named = pod(
        claims=TEMPLATE_REF, statuses=[{"name": "my-resource", "resourceClaimName": "my-claim"}]
    )
    assert hints.schedulable_after_pod_change(resources, waiting, waiting, named) is QUEUE
    assert hints.schedulable_after_pod_change(resources, waiting, waiting, waiting) is SKIP
    other = pod("other", uid="other-uid", claims=TEMPLATE_REF)
    assert hints.schedulable_after_pod_change(resources, waiting, other, other) is SKIP


def test_listers_send_cluster_events() -> None:
    resources = ResourceObjects()
    seen: list[str] = []
    resources.connect(lambda event, old, new: seen.append(event.name))
    resources.add(device_class(), node_slice("n"), claim())
    assert seen == ["DeviceClassAdd", "ResourceSliceAdd", "ResourceClaimAdd"]


def test_tracker_counts_informer_assumed_and_in_flight_devices() -> None:
    resources = _resources(claim("a", uid="a", allocation=allocation_on("n", "gpu-0")))
    tracker = resources.tracker
    assert tracker.allocated_devices() == {("gpu.example.com", "n", "gpu-0")}
    # the scheduler wrote b (assumed) before the informer saw it
    b_old = claim("b", uid="b")
    resources.add(b_old)
    b_new = claim("b", uid="b", allocation=allocation_on("n", "gpu-1"), resource_version="5")
    tracker.assume(b_new)
    assert len(tracker.allocated_devices()) == 2
    resources.claims.on_update(b_old, b_new)  # the informer caught up: still counted once
    assert len(tracker.allocated_devices()) == 2
    resources.claims.on_delete(b_new)
    assert tracker.allocated_devices() == {("gpu.example.com", "n", "gpu-0")}


class _NotServing:
    """An API server without resource.k8s.io: every request answers 404."""

    def __init__(self) -> None:
        self.calls = 0

    async def request(self, method: str, path: str, **kw: Any) -> tuple[int, Any]:
        self.calls += 1
        return 404, {
            "kind": "Status",
            "message": "the server could not find the requested resource",
        }


async def test_optional_informer_syncs_empty_on_404() -> None:
    resources = ResourceObjects()
    name, path, parse, store = resources.informer_specs()[0]
    informer: Informer[Any] = Informer(
        _NotServing(), ResourceWatch(path), parse, store, name=name, optional=True,  # type: ignore[arg-type]
        max_backoff=0.01,
    )  # fmt: skip
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.synced.wait(), 2)
        assert store.by_key == {}
    finally:
        task.cancel()


@settings(max_examples=30, deadline=None)
@given(
    devices=st.integers(min_value=1, max_value=3),
    pods=st.integers(min_value=1, max_value=5),
    interleave=st.lists(st.booleans(), min_size=5, max_size=5),
)
def test_two_pods_never_get_the_same_device(
    devices: int, pods: int, interleave: list[bool]
) -> None:
    """Pods with a claim each, scheduled one after the other; some bind (PreBind) before the
    next is scheduled, others stay in flight after Reserve. Every device is handed out once."""

    async def scenario() -> None:
        raws = [claim_raw(f"c{i}", uid=f"c{i}") for i in range(pods)]
        api = EchoClient(*raws)
        framework, resources, _ = setup(
            *[claim(f"c{i}", uid=f"c{i}") for i in range(pods)], device_class(),
            node_slice("worker", devices), client=api,
        )  # fmt: skip
        in_flight = []
        for i in range(pods):
            p = pod(f"p{i}", uid=f"u{i}", claims=[{"name": "r", "resourceClaimName": f"c{i}"}])
            result = run_cycle(framework, p)
            if not result.feasible:
                continue
            assert framework.run_reserve_plugins_reserve(result.state, p, "worker").is_success
            in_flight.append((result.state, p))
            if interleave[i]:
                for state, q in in_flight:
                    assert (await framework.run_pre_bind_plugins(state, q, "worker")).is_success
                in_flight.clear()
        for state, q in in_flight:
            assert (await framework.run_pre_bind_plugins(state, q, "worker")).is_success
        handed_out = [
            (r["pool"], r["device"])
            for obj in api.objects.values()
            for r in ((obj.get("status") or {}).get("allocation") or {"devices": {"results": []}})[
                "devices"
            ]["results"]
        ]
        assert len(handed_out) == len(set(handed_out)) == min(devices, pods)
        assert resources.tracker.allocated_devices() == {
            ("gpu.example.com", pool, device) for pool, device in handed_out
        }

    asyncio.run(scenario())
