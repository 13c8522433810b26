"""Consumable capacity through the plugin: claims sharing one device by capacity, scheduled by
two profiles (two DynamicResources over one set of listers, as upstream's shared DRA
manager), with Reserve, PreBind, Unreserve and the informer's copy of written claims in any
order. Whatever the order, the capacity held by written claims and in-flight allocations never
exceeds the device's, and Filter admits a pod exactly when its request fits beside them."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.resource import ResourceClaimView, ResourceSliceView
from scheduler.listers.cluster_objects import ClusterObjects
from scheduler.testing import build_framework, handle_deps, make_list_snapshot, make_node, run_cycle
from tests.scheduler_plugins_dra.dra_plugin_kit import (
    CLASS,
    DRIVER,
    NAMESPACE,
    EchoClient,
    device_class,
    pod,
)

CAPACITY = 8
NODE = "worker"
CLAIMS = 6


def shared_slice() -> ResourceSliceView:
    return ResourceSliceView.from_dict(
        {
            "metadata": {"name": "worker-slice", "uid": "worker-slice", "resourceVersion": "1"},
            "spec": {
                "driver": DRIVER,
                "nodeName": NODE,
                "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {
                        "name": "gpu-0",
                        "allowMultipleAllocations": True,
                        "capacity": {"memory": {"value": str(CAPACITY)}},
                    }
                ],
            },
        }
    )


def claim_raw(index: int, memory: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": f"claim-{index}",
            "namespace": NAMESPACE,
            "uid": f"claim-uid-{index}",
            "resourceVersion": "1",
        },
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "gpu",
                        "exactly": {
                            "deviceClassName": CLASS,
                            "capacity": {"requests": {"memory": str(memory)}},
                        },
                    }
                ]
            }
        },
        "status": {},
    }


def claim_ref(index: int) -> dict[str, str]:
    return {"name": "gpu", "resourceClaimName": f"claim-{index}"}


def held(claim: ResourceClaimView | None) -> int:
    if claim is None or claim.allocation is None:
        return 0
    return sum(
        nanos // 10**9
        for device in claim.allocation.devices
        for nanos in device.consumed_capacity.values()
    )


STEP = st.tuples(st.sampled_from(["schedule", "prebind", "unreserve", "sync"]), st.integers(0, 7))


@settings(max_examples=60, deadline=None)
@given(
    memory=st.lists(st.integers(1, 5), min_size=CLAIMS, max_size=CLAIMS),
    steps=st.lists(STEP, min_size=1, max_size=30),
)
def test_shared_capacity_is_never_exceeded(memory: list[int], steps: list[Any]) -> None:
    asyncio.run(_run(memory, steps))


async def _run(memory: list[int], steps: list[Any]) -> None:
    raws = [claim_raw(i, m) for i, m in enumerate(memory)]
    api = EchoClient(*raws)
    objects = ClusterObjects()
    resources = objects.resources
    resources.add(device_class(), shared_slice(), *(ResourceClaimView.from_dict(r) for r in raws))
    deps = handle_deps(
        make_list_snapshot([make_node(NODE, labels={"kubernetes.io/hostname": NODE})]),
        client=api,
        cluster_objects=objects,
    )
    profiles = [build_framework(["DynamicResources"], deps) for _ in range(2)]
    pods = [pod(f"pod-{i}", uid=f"pod-uid-{i}", claims=[claim_ref(i)]) for i in range(CLAIMS)]
    tried: set[int] = set()
    in_flight: list[tuple[int, Any, Any]] = []  # (claim index, framework, cycle state)
    reserved: dict[int, int] = {}  # claim index → memory, Reserve decided, not written yet
    unsynced: list[int] = []  # written claims the informer has not shown yet

    def stored(index: int) -> ResourceClaimView:
        return ResourceClaimView.from_dict(api.objects[f"claim-{index}"])

    def total_held() -> int:
        written = sum(held(stored(i)) for i in range(CLAIMS))
        return written + sum(reserved.values())

    for action, n in steps:
        if action == "schedule":
            index = n % CLAIMS
            if index in tried:
                continue
            tried.add(index)
            framework = profiles[n % 2]
            before = total_held()
            result = run_cycle(framework, pods[index])
            fits = before + memory[index] <= CAPACITY
            assert result.filter[NODE].is_success is fits, (before, memory[index])
            if fits:
                assert framework.run_reserve_plugins_reserve(
                    result.state, pods[index], NODE
                ).is_success
                in_flight.append((index, framework, result.state))
                reserved[index] = memory[index]
        elif action in ("prebind", "unreserve") and in_flight:
            index, framework, state = in_flight.pop(n % len(in_flight))
            if action == "prebind":
                status = await framework.run_pre_bind_plugins(state, pods[index], NODE)
                assert status.is_success, status
                unsynced.append(index)
            else:
                framework.run_reserve_plugins_unreserve(state, pods[index], NODE)
                tried.discard(index)  # may be tried again
            del reserved[index]
        elif action == "sync" and unsynced:
            index = unsynced.pop(n % len(unsynced))
            key = f"{NAMESPACE}/claim-{index}"
            resources.claims.on_update(resources.claims.get(key), stored(index))
        assert total_held() <= CAPACITY
