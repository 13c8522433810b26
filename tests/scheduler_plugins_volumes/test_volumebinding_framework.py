"""VolumeBinding run by the framework runtime (scheduler/framework/runtime.py), as the scheduler
runs it: built from its registry entry before the handle is ready, Skip in PreFilter for pods
without claims, Filter reasons reaching the node statuses, Reserve / PreBind / Unreserve in the
binding cycle, and its queueing hints routing cluster events.

Upstream: pkg/scheduler/framework/plugins/volumebinding/volume_binding.go over
pkg/scheduler/framework/runtime/framework.go (error wrapping of PreBind, Reserve).
"""

from __future__ import annotations

import asyncio
from typing import Any

from scheduler.framework.events import ActionType, ClusterEvent, EventResource, QueueingHint
from scheduler.framework.interface import CycleState
from scheduler.framework.registry import Registry
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.framework.status import Code, Status
from scheduler.listers.cluster_objects import ClusterObjects
from scheduler.plugins.volumebinding import ERR_REASON_BIND_CONFLICT, NAME, PLUGIN_ENTRY
from scheduler.queue.types import QueuedPodInfo
from scheduler.testing import ListSnapshot, make_pod, node_infos
from scheduler.testing.volumes import (
    HOSTNAME_LABEL,
    WAIT,
    FakeApiServer,
    hostname_node,
    make_class,
    make_pv,
    make_pvc,
)


def _framework(args: dict[str, Any] | None = None) -> tuple[Framework, FakeApiServer]:
    objects = ClusterObjects()
    objects.storage.add(
        make_class("local", WAIT, "kubernetes.io/no-provisioner"),
        make_pvc("data-0", "local"),
        make_pvc("data-1", "local"),
        make_pv(
            "pv-a",
            "local",
            phase="Available",
            capacity="1Gi",
            node_affinity={HOSTNAME_LABEL: ["node-a"]},
        ),
    )
    server = FakeApiServer(objects.storage)
    nodes = node_infos([hostname_node("node-a"), hostname_node("node-b")])
    deps = HandleDeps(snapshot=lambda: ListSnapshot(nodes), client=server, cluster_objects=objects)
    registry = Registry()
    registry.register(PLUGIN_ENTRY)
    enabled = {point: [(NAME, 1)] for point in ("preFilter", "filter", "reserve", "preBind")}
    plugin_args = {NAME: args} if args is not None else {}
    return Framework.build("default-scheduler", registry, enabled, plugin_args, deps), server


def test_pod_without_claims_skips_filter() -> None:
    fwk, _ = _framework()
    state = CycleState()
    _, status, _ = fwk.run_pre_filter_plugins(state, make_pod("plain"), [])
    assert status.is_success
    assert state.skip_filter_plugins == {NAME}


def test_filter_reasons_and_binding_cycle() -> None:
    fwk, server = _framework()
    pod = make_pod("web-0", pvcs=["data-0"])
    state = CycleState()
    nodes = node_infos([hostname_node("node-a"), hostname_node("node-b")])
    _, status, _ = fwk.run_pre_filter_plugins(state, pod, nodes)
    assert status.is_success
    assert fwk.run_filter_plugins(state, pod, nodes[0]) == Status.OK
    rejected = fwk.run_filter_plugins(state, pod, nodes[1])
    assert rejected == Status.unresolvable(ERR_REASON_BIND_CONFLICT)
    assert rejected.plugin == NAME
    assert fwk.run_reserve_plugins_reserve(state, pod, "node-a").is_success

    async def bind() -> Status:
        async def controller() -> None:
            await asyncio.sleep(0.02)
            server.complete_binding("default/data-0", "pv-a")

        status, _ = await asyncio.gather(
            fwk.run_pre_bind_plugins(state, pod, "node-a"), controller()
        )
        return status

    assert asyncio.run(bind()).is_success
    assert [path for _, path, _ in server.requests] == ["/api/v1/persistentvolumes/pv-a"]


def test_pre_bind_error_is_wrapped() -> None:
    fwk, _ = _framework({"bindTimeoutSeconds": 0})
    pod = make_pod("web-0", pvcs=["data-0"])
    other = make_pod("web-1", pvcs=["data-1"])
    nodes = node_infos([hostname_node("node-a")])
    state = CycleState()
    fwk.run_pre_filter_plugins(state, pod, nodes)
    assert fwk.run_filter_plugins(state, pod, nodes[0]).is_success
    assert fwk.run_reserve_plugins_reserve(state, pod, "node-a").is_success
    # The volume is taken while the first pod holds it.
    other_state = CycleState()
    fwk.run_pre_filter_plugins(other_state, other, nodes)
    assert fwk.run_filter_plugins(other_state, other, nodes[0]).code == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    )
    status = asyncio.run(fwk.run_pre_bind_plugins(state, pod, "node-a"))
    assert status == Status.error(
        'running PreBind plugin "VolumeBinding": binding volumes: context deadline exceeded'
    )
    fwk.run_reserve_plugins_unreserve(state, pod, "node-a")
    # The PV was written before the wait timed out and there is no API rollback (upstream's
    # bindAPIUpdate comment): the informer's PV stays bound to the first claim.
    pv = fwk.cluster_objects.storage.volume("pv-a")
    assert pv is not None and pv.claim_ref is not None and pv.claim_ref.name == "data-0"
    retry = CycleState()
    fwk.run_pre_filter_plugins(retry, other, nodes)
    assert fwk.run_filter_plugins(retry, other, nodes[0]).code == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    )


def test_unreserve_without_write_frees_the_volume() -> None:
    fwk, server = _framework()
    pod = make_pod("web-0", pvcs=["data-0"])
    other = make_pod("web-1", pvcs=["data-1"])
    nodes = node_infos([hostname_node("node-a")])
    state = CycleState()
    fwk.run_pre_filter_plugins(state, pod, nodes)
    fwk.run_filter_plugins(state, pod, nodes[0])
    assert fwk.run_reserve_plugins_reserve(state, pod, "node-a").is_success
    # Permit rejected the pod: Unreserve before any PreBind.
    fwk.run_reserve_plugins_unreserve(state, pod, "node-a")
    retry = CycleState()
    fwk.run_pre_filter_plugins(retry, other, nodes)
    assert fwk.run_filter_plugins(retry, other, nodes[0]).is_success
    assert server.requests == []


def test_queueing_hints_route_storage_events() -> None:
    fwk, _ = _framework()
    pod = make_pod("web-0", pvcs=["data-0"])
    info = QueuedPodInfo(pod, 0.0)
    info.unschedulable_plugins = {NAME}
    pvc_update = ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.UPDATE, "PvcUpdate")
    mine = make_pvc("data-0", "local", bound_pv="pv-a")
    theirs = make_pvc("data-1", "local", bound_pv="pv-a")
    assert fwk.queueing_hint(info, pvc_update, None, mine) == QueueingHint.QUEUE
    assert fwk.queueing_hint(info, pvc_update, None, theirs) == QueueingHint.SKIP
    pv_add = ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD, "PvAdd")
    assert fwk.queueing_hint(info, pv_add, None, make_pv("pv-z", "local")) == QueueingHint.QUEUE
    pv_delete = ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.DELETE, "PvDelete")
    assert fwk.queueing_hint(info, pv_delete, make_pv("pv-z", "local"), None) == (QueueingHint.SKIP)
