"""scheduler_perf's DRA ops, through the API as the runner's other ops (issue 24).

Upstream: test/integration/scheduler_perf/dra.go.

- createResourceDriver: one ResourceSlice per node whose name matches the op's glob, named
  after the node, its pool the node's name, `maxClaimsPerNode` devices (the driver is the
  bench's own; kubesim's `--dra-devices` driver stays off).
- createAny for the DeviceClasses, the claim templates and the init claims.
- allocResourceClaims: allocates the init claims out of band with the structured allocator the
  scheduler uses (scheduler.plugins.dynamicresources.allocator), one claim at a time on nodes in
  random order, and writes each `status.allocation` (no `reservedFor`: nobody uses them).
"""

from __future__ import annotations

import fnmatch
import random
from typing import Any

import orjson

from bench import workloads as wl
from bench.kubeapi import KubeApi, bulk
from scheduler.api.node import NodeView
from scheduler.api.resource import DeviceClassView, ResourceClaimView, ResourceSliceView
from scheduler.plugins.dynamicresources.allocation import AllocatedState, DeviceID
from scheduler.plugins.dynamicresources.allocator import Allocator
from scheduler.plugins.dynamicresources.cel import CelCache
from scheduler.plugins.dynamicresources.features import Features

RESOURCE = "/apis/resource.k8s.io/v1"
SLICES = f"{RESOURCE}/resourceslices"
CLASSES = f"{RESOURCE}/deviceclasses"


def claims_path(namespace: str) -> str:
    return f"{RESOURCE}/namespaces/{namespace}/resourceclaims"


def claim_templates_path(namespace: str) -> str:
    return f"{RESOURCE}/namespaces/{namespace}/resourceclaimtemplates"


class AllocationFailed(RuntimeError):
    """allocResourceClaims found no node for a claim (upstream's test fails then too)."""


async def create_resource_driver(
    api: KubeApi, driver: str, node_glob: str, devices: int, concurrency: int
) -> list[str]:
    """createResourceDriver: the slices of every listed node matching `node_glob` (as Go's
    filepath.Match, for these names); returns those nodes' names."""
    listed = await api.get("/api/v1/nodes")
    names = [
        str(node["metadata"]["name"])
        for node in listed.get("items") or []
        if fnmatch.fnmatchcase(str(node["metadata"]["name"]), node_glob)
    ]

    async def create(index: int) -> None:
        body = orjson.dumps(wl.resource_slice_manifest(driver, names[index], devices))
        await api.create(SLICES, body)

    await bulk(len(names), concurrency, create)
    return names


async def create_dra_objects(api: KubeApi, workload: wl.Workload, concurrency: int) -> None:
    """The dra/ test's ops before its pods: driver, classes, claim templates, init claims and
    their allocation."""
    setup = workload.dra
    assert setup is not None
    await create_resource_driver(
        api, wl.DRA_DRIVER, wl.DRA_NODE_GLOB, setup.max_claims_per_node, concurrency
    )
    for template in setup.device_classes:
        await api.create(CLASSES, orjson.dumps(wl.device_class_manifest(template)))
    for namespace in setup.claim_template_namespaces:
        body = orjson.dumps(wl.claim_template_manifest(setup.claim_template, namespace))
        await api.create(claim_templates_path(namespace), body)
    if setup.init_claims:
        path = claims_path(wl.DRA_INIT_NAMESPACE)

        async def create(index: int) -> None:
            await api.create(path, orjson.dumps(wl.init_claim_manifest(index)))

        await bulk(setup.init_claims, min(concurrency, 30), create)  # upstream: 30 workers
        await allocate_claims(api, wl.DRA_INIT_NAMESPACE)


async def allocate_claims(api: KubeApi, namespace: str, rng: random.Random | None = None) -> int:
    """allocResourceClaims: every unallocated claim of `namespace` gets an allocation on the
    first node, in shuffled order, where the allocator finds one; the devices of every claim
    allocated so far (all namespaces) are taken. Returns how many claims were allocated."""
    rng = rng or random.Random(0)  # seeded: runs of a workload start from the same state
    nodes = [NodeView.from_dict(n) for n in await _items(api, "/api/v1/nodes")]
    slices = [ResourceSliceView.from_dict(s) for s in await _items(api, SLICES)]
    classes = {c.name: c for c in map(DeviceClassView.from_dict, await _items(api, CLASSES))}
    taken: set[DeviceID] = set()
    for raw in await _items(api, f"{RESOURCE}/resourceclaims"):
        allocation = ResourceClaimView.from_dict(raw).allocation
        if allocation is not None:
            taken.update(device.device_id for device in allocation.devices)
    features = Features.from_gates(None).allocator_features()  # aiosched's default gates
    cel_cache = CelCache()  # upstream: cel.NewCache(10), shared by every claim
    allocated = 0
    for raw in await _items(api, claims_path(namespace)):
        claim = ResourceClaimView.from_dict(raw)
        if claim.allocation is not None:
            continue
        allocator = Allocator(
            features=features,
            allocated=AllocatedState(devices=frozenset(taken)),
            classes=classes,
            slices=slices,
            cel_cache=cel_cache,
        )
        rng.shuffle(nodes)
        for node in nodes:
            results = allocator.allocate(node, [claim])
            if results:
                (result,) = results
                status = {**(raw.get("status") or {}), "allocation": result.to_dict()}
                body = orjson.dumps({**raw, "status": status})
                await api.replace(f"{claims_path(namespace)}/{claim.name}/status", body)
                taken.update(device.device_id for device in result.devices)
                allocated += 1
                break
        else:
            raise AllocationFailed(f"could not allocate claim {claim.key}")
    return allocated


async def _items(api: KubeApi, path: str) -> list[dict[str, Any]]:
    listed = await api.get(path)
    return list(listed.get("items") or [])
