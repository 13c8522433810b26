"""What the web view (/debug/view) shows, read from a running Scheduler on request.

The page and its routes are scheduler.server.webview's; this module reads the scheduler's
cache, queue, listers, explain store and recent attempts, which only the app layer may see
together. Nothing is computed until the page asks (every ~2 s while it is open), and each
answer costs O(nodes + devices in ResourceSlices + the capped lists), plus O(nodes shown x
ResourceSlices for all nodes or a node selector) to place those slices' devices on the boxes:
every list is cut at a fixed size and says how many it left out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Final

from observability.explain import ExplainStore, Explanation
from observability.recent_attempts import RecentAttempts
from scheduler.api.node import NodeView
from scheduler.api.resource import DeviceView, ResourceSliceView
from scheduler.api.values import Resource
from scheduler.cycle.scheduler import Scheduler
from scheduler.plugins.dynamicresources.features import Features
from scheduler.plugins.dynamicresources.pools import NodeSelectionError, SliceIndex, node_matches

MAX_NODES: Final = 500
MAX_PENDING: Final = 50
MAX_ATTEMPTS: Final = 30
MAX_GROUPS: Final = 50
#: Filter verdict groups shown per pending pod (the largest first).
MAX_VERDICTS: Final = 4
#: DRA devices drawn one by one per node box (all are counted).
MAX_DEVICES: Final = 64


class WebViewState:
    """Builds /debug/view/state's JSON from the scheduler `scheduler()` returns (None before
    the service has built one)."""

    def __init__(
        self,
        scheduler: Callable[[], Scheduler | None],
        explain: ExplainStore,
        attempts: RecentAttempts,
        trace_ui_url: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._scheduler = scheduler
        self._explain = explain
        self._attempts = attempts
        self.trace_ui_url = trace_ui_url
        self._clock = clock

    def __call__(self) -> dict[str, Any]:
        scheduler = self._scheduler()
        state: dict[str, Any] = {
            "time": self._clock(),
            "traceUiUrl": self.trace_ui_url,
            "limits": {
                "nodes": MAX_NODES,
                "pending": MAX_PENDING,
                "attempts": MAX_ATTEMPTS,
                "groups": MAX_GROUPS,
            },
        }
        if scheduler is None:
            return state | {"ready": False}
        state |= {
            "ready": scheduler.synced(),
            "profiles": scheduler.profiles.names(),
            "schedulingCycle": scheduler.queue.scheduling_cycle,
            "queue": scheduler.queue.counts(),
            "assumedPods": scheduler.cache.assumed_pod_count(),
        }
        state["nodes"], state["nodesOmitted"] = nodes(scheduler)
        state["pending"] = self.pending(scheduler)
        state["attempts"] = self.attempts()
        state["gangs"] = gangs(scheduler)
        state["coschedulingGroups"] = coscheduling_groups(scheduler)
        return state

    def pending(self, scheduler: Scheduler) -> list[dict[str, Any]]:
        """Pods still queued whose last attempt failed, newest attempt first."""
        queue = scheduler.queue
        found = self._explain.latest_failures(
            MAX_PENDING, lambda uid: queue.location(uid) is not None
        )
        return [_pending_pod(explanation, queue.location(explanation.uid)) for explanation in found]

    def attempts(self) -> list[dict[str, Any]]:
        items = self._attempts.items(MAX_ATTEMPTS)
        if self.trace_ui_url:
            for item in items:
                trace_id = item.get("traceId")
                if trace_id:
                    item["traceUrl"] = self.trace_ui_url.replace("{trace_id}", trace_id)
        return items


def _pending_pod(explanation: Explanation, location: str | None) -> dict[str, Any]:
    return {
        "pod": {"namespace": explanation.namespace, "name": explanation.name},
        "profile": explanation.profile,
        "queue": location,
        "attempt": explanation.attempt,
        "timestamp": explanation.timestamp,
        "result": explanation.result,
        "message": explanation.message,
        "rejectedNodes": explanation.rejected_nodes,
        "filterVerdicts": [
            {"plugin": group.plugin, "reason": group.reason, "count": group.count}
            for group in explanation.verdicts[:MAX_VERDICTS]
        ],
    }


def _amounts(resource: Resource) -> dict[str, int]:
    return {
        "cpu": resource.milli_cpu,  # millicores
        "memory": resource.memory,  # bytes
        "pods": resource.allowed_pod_number,
    }


def nodes(scheduler: Scheduler) -> tuple[list[dict[str, Any]], int]:
    """Each node (by name, up to MAX_NODES) with its allocatable and the requests of the pods
    the cache has on it, bound and assumed; the DRA devices it can reach, when there are."""
    views = sorted(scheduler.node_informer.store.values(), key=lambda node: node.name)
    shown = views[:MAX_NODES]
    devices = devices_per_node(shown, scheduler)
    out = []
    for node in shown:
        info = scheduler.cache.get_node_info(node.name)
        requested = _amounts(info.requested) if info is not None else _amounts(Resource())
        pods = info.num_pods if info is not None else 0
        requested["pods"] = pods
        entry: dict[str, Any] = {
            "name": node.name,
            "unschedulable": node.unschedulable,
            "allocatable": _amounts(info.allocatable if info is not None else node.allocatable),
            "requested": requested,
        }
        reachable = devices.get(node.name)
        if reachable is not None:
            entry["devices"] = reachable
        out.append(entry)
    return out, len(views) - len(shown)


def devices_per_node(shown: Sequence[NodeView], scheduler: Scheduler) -> dict[str, dict[str, Any]]:
    """The DRA devices each node can reach, as the DynamicResources plugin gathers them for
    it (pools.SliceIndex.gather: slices naming the node, for all nodes, with a matching node
    selector or, under DRAPartitionableDevices, with a device whose own selection matches; the
    newest generation of each pool), each marked allocated or not and shared (its slice is not
    bound to this node by name, so other boxes show it too).

    Computed per request for the nodes shown: O(nodes x slices that select nodes otherwise
    than by name), fine for a page polled every 2 s and capped at MAX_NODES boxes; the plugin
    itself indexes the same way once per cycle."""
    resources = scheduler.cluster_objects.resources
    slices = list(resources.slices.by_key.values())
    if not slices:
        return {}
    partitionable = Features.from_gates(scheduler.options.feature_gates).partitionable_devices
    index = SliceIndex(slices, partitionable)
    allocated = resources.tracker.allocated_devices()
    out: dict[str, dict[str, Any]] = {}
    for node in shown:
        try:
            reachable = [s for pool in index.gather(node) for s in pool.slices]
        except NodeSelectionError:  # the plugin rejects the node; its own slices still show
            reachable = list(index.by_node.get(node.name, ()))
        total = used = 0
        drawn: list[dict[str, Any]] = []
        for resource_slice in reachable:
            per_device = _selects_per_device(resource_slice)
            for device in resource_slice.devices:
                if per_device and not _device_reaches(node, device):
                    continue
                taken = (resource_slice.driver, resource_slice.pool_name, device.name) in allocated
                total += 1
                used += taken
                if len(drawn) < MAX_DEVICES:
                    drawn.append(
                        {
                            "name": device.name,
                            "driver": resource_slice.driver,
                            "pool": resource_slice.pool_name,
                            "allocated": taken,
                            "shared": not (resource_slice.node_name or device.node_name),
                        }
                    )
        if total:
            out[node.name] = {"allocated": used, "total": total, "list": drawn}
    return out


def _selects_per_device(resource_slice: ResourceSliceView) -> bool:
    """perDeviceNodeSelection without a slice-level selection (as pools.SliceIndex.gather)."""
    return resource_slice.per_device_node_selection and not (
        resource_slice.node_name
        or resource_slice.all_nodes
        or resource_slice.node_selector is not None
    )


def _device_reaches(node: NodeView, device: DeviceView) -> bool:
    try:
        return node_matches(node, device.node_name, device.all_nodes, device.node_selector)
    except NodeSelectionError:
        return False


def gangs(scheduler: Scheduler) -> list[dict[str, Any]]:
    """scheduling.k8s.io PodGroups with a gang policy: members known, scheduled (bound or
    assumed) against minCount."""
    workloads = scheduler.cluster_objects.workloads
    is_assumed = scheduler.cache.is_assumed_pod
    out = []
    for group in list(workloads.pod_groups.by_key.values())[:MAX_GROUPS]:
        state = workloads.states.find(group.namespace, group.name)
        members = state.all_pods_count() if state is not None else 0
        scheduled = state.scheduled_pods_count(is_assumed) if state is not None else 0
        out.append(
            {
                "namespace": group.namespace,
                "name": group.name,
                "minCount": group.min_count,
                "members": members,
                "scheduled": scheduled,
                "quorum": group.min_count is None or scheduled >= group.min_count,
            }
        )
    return out


def coscheduling_groups(scheduler: Scheduler) -> list[dict[str, Any]]:
    """scheduler-plugins' PodGroups (Coscheduling): minMember, members, status."""
    pod_groups = scheduler.cluster_objects.pod_groups
    out = []
    for group in list(pod_groups.groups.by_key.values())[:MAX_GROUPS]:
        members = pod_groups.members.active_pods(group.namespace, group.name)
        scheduled = sum(1 for pod in members if pod.is_bound)
        out.append(
            {
                "namespace": group.namespace,
                "name": group.name,
                "minMember": group.min_member,
                "members": len(members),
                "scheduled": scheduled,
                "phase": group.status.phase,
                "quorum": scheduled >= group.min_member,
            }
        )
    return out
