"""Which shareable device a request gets: upstream's order by default (the next device of one
request is searched after the previous one, as the incubating allocator's startLocation), and
a plugin's DeviceRanker when one is given (ranking.py), through the allocator and through a
DynamicResources subclass registered under its own name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from scheduler.api.node import NodeView
from scheduler.api.resource import DeviceSubRequest, ResourceClaimView
from scheduler.framework.registry import PluginEntry, Registry
from scheduler.listers.cluster_objects import ClusterObjects
from scheduler.plugins.dynamicresources import DynamicResources, decode_dynamic_resources_args
from scheduler.plugins.dynamicresources.allocator import AllocatedState, Allocator, DRAFeatures
from scheduler.plugins.dynamicresources.ranking import DeviceChoice, DeviceRanker
from scheduler.testing import build_framework, handle_deps, make_list_snapshot, make_node, run_cycle
from tests.scheduler_plugins_dra.builders import CLAIM_0, CLASS_A, DRIVER_A, POOL_1, REQ_0, node
from tests.scheduler_plugins_dra.test_allocator_consumable_capacity import (
    CAP_0,
    dev,
    plain_class,
    req,
    slice_of,
)

FEATURES = DRAFeatures(consumable_capacity=True)
GIB = 10**9


class FullestFirst:
    """Bin packing: the shareable device with the least of capacity-0 left first."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def rank(
        self, node: NodeView, request: DeviceSubRequest, choices: Sequence[DeviceChoice]
    ) -> Sequence[DeviceChoice]:
        self.asked.append([c.device_id[2] for c in choices])
        return sorted(choices, key=lambda c: c.free.get(CAP_0, 0))


def _claim(count: int = 1) -> ResourceClaimView:
    from tests.scheduler_plugins_dra.builders import claim

    return claim(CLAIM_0, req(REQ_0, count, capacity="1"))


def _devices(ranker: DeviceRanker | None, claim: ResourceClaimView, held: int) -> list[str]:
    allocator = Allocator(
        features=FEATURES,
        allocated=AllocatedState(consumed_capacity={(DRIVER_A, POOL_1, "gpu-1"): {CAP_0: held}}),
        classes={CLASS_A: plain_class()},
        slices=[
            slice_of(
                dev("gpu-0", shared=True, capacity={CAP_0: "8"}),
                dev("gpu-1", shared=True, capacity={CAP_0: "8"}),
            )
        ],
        ranker=ranker,
    )
    got = allocator.allocate(node(), [claim])
    return [] if got is None else [d.device for d in got[0].devices]


def test_upstream_order_by_default_and_the_ranker_when_given() -> None:
    assert _devices(None, _claim(), held=5 * GIB) == ["gpu-0"]
    ranker = FullestFirst()
    assert _devices(ranker, _claim(), held=5 * GIB) == ["gpu-1"]
    assert ranker.asked == [["gpu-0", "gpu-1"]]


def test_one_request_never_takes_one_shareable_device_twice() -> None:
    assert _devices(None, _claim(count=2), held=0) == ["gpu-0", "gpu-1"]
    # the ranker sees only the devices after the one picked for the request's first device:
    # gpu-1 first (the fuller) leaves nothing after it, so gpu-0 then gpu-1
    ranker = FullestFirst()
    assert _devices(ranker, _claim(count=2), held=5 * GIB) == ["gpu-0", "gpu-1"]
    assert ranker.asked == [["gpu-0", "gpu-1"], [], ["gpu-1"]]


def test_devices_the_ranker_leaves_out_are_not_tried() -> None:
    class OnlyGpu1:
        def rank(self, node: Any, request: Any, choices: Sequence[DeviceChoice]) -> Any:
            return [c for c in choices if c.device_id[2] == "gpu-1"]

    assert _devices(OnlyGpu1(), _claim(), held=8 * GIB) == []
    assert _devices(OnlyGpu1(), _claim(), held=7 * GIB) == ["gpu-1"]


class PackedDynamicResources(DynamicResources):
    name = "PackedDynamicResources"
    device_ranker: ClassVar[DeviceRanker | None] = FullestFirst()


def test_a_plugin_subclass_ranks_devices_in_its_profile_only() -> None:
    import copy

    from tests.scheduler_plugins_dra.dra_plugin_kit import pod

    def slice_view() -> Any:
        return slice_of(dev("gpu-0", shared=True, capacity={CAP_0: "8"}),
                        dev("gpu-1", shared=True, capacity={CAP_0: "8"}))  # fmt: skip

    def chosen(plugin: str, registry: Registry | None) -> str:
        objects = ClusterObjects()
        held = copy.deepcopy(_claim().raw)
        held["metadata"]["name"], held["metadata"]["uid"] = "held", "held"
        held["status"] = {"allocation": {"devices": {"results": [
            {"request": REQ_0, "driver": DRIVER_A, "pool": POOL_1, "device": "gpu-1",
             "shareID": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
             "consumedCapacity": {CAP_0: "5"}}]}}}  # fmt: skip
        objects.resources.add(plain_class(), slice_view(), _claim(),
                              ResourceClaimView.from_dict(held))  # fmt: skip
        deps = handle_deps(make_list_snapshot([make_node("node-1")]), cluster_objects=objects)
        framework = build_framework([plugin], deps, registry=registry)
        p = pod(claims=[{"name": "gpu", "resourceClaimName": CLAIM_0}])
        result = run_cycle(framework, p)
        assert result.filter["node-1"].is_success
        state = result.state.read("DynamicResources")
        return str(state.node_allocations["node-1"][0].devices[0].device)

    registry = Registry()
    registry.register(PluginEntry(PackedDynamicResources.name, PackedDynamicResources,
                                  decode_dynamic_resources_args))  # fmt: skip
    assert chosen("PackedDynamicResources", registry) == "gpu-1"
    assert chosen("DynamicResources", None) == "gpu-0"
