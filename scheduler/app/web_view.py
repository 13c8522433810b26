"""What the web view (/debug/view) shows, read from a running Scheduler on request.

The page and its routes are scheduler.server.webview's; this module reads the scheduler's
cache, queue, listers, explain store and recent attempts, which only the app layer may see
together. Nothing is computed until the page asks (every ~2 s while it is open), and each
answer costs O(nodes + devices in ResourceSlices + the capped lists): every list is cut at a
fixed size and says how many it left out.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any, Final

from observability.explain import ExplainStore, Explanation
from observability.recent_attempts import RecentAttempts
from scheduler.api.values import Resource
from scheduler.cycle.scheduler import Scheduler

MAX_NODES: Final = 500
MAX_PENDING: Final = 50
MAX_ATTEMPTS: Final = 30
MAX_GROUPS: Final = 50
#: Filter verdict groups shown per pending pod (the largest first).
MAX_VERDICTS: Final = 4


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
    the cache has on it, bound and assumed; its DRA devices when ResourceSlices name it."""
    views = sorted(scheduler.node_informer.store.values(), key=lambda node: node.name)
    shown = views[:MAX_NODES]
    devices = _devices_per_node({node.name for node in shown}, scheduler)
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
        total, allocated = devices.get(node.name, (0, 0))
        if total:
            entry["devices"] = {"allocated": allocated, "total": total}
        out.append(entry)
    return out, len(views) - len(shown)


def _devices_per_node(names: set[str], scheduler: Scheduler) -> dict[str, tuple[int, int]]:
    """(total, allocated) devices of the ResourceSlices published for one node (slices for
    all nodes or a node selector are not drawn on any box)."""
    resources = scheduler.cluster_objects.resources
    slices = [s for s in resources.slices.by_key.values() if s.node_name in names]
    if not slices:
        return {}
    allocated = resources.tracker.allocated_devices()
    totals: Counter[str] = Counter()
    used: Counter[str] = Counter()
    for resource_slice in slices:
        totals[resource_slice.node_name] += len(resource_slice.devices)
        for device in resource_slice.devices:
            if (resource_slice.driver, resource_slice.pool_name, device.name) in allocated:
                used[resource_slice.node_name] += 1
    return {name: (totals[name], used[name]) for name in totals}


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
