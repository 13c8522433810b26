"""The PodGroupManager: what Coscheduling decides about a pod's group.

Upstream: kubernetes-sigs/scheduler-plugins pkg/coscheduling/core/core.go (PreFilter's checks
and messages, Permit's quorum, the permitted and backed-off group caches, CheckClusterResource,
ActivateSiblings, GetCreationTimestamp, CalculateAssignedPods) and pkg/util/podgroup.go
(GetWaitTimeDuration).

One difference of means, not of outcome: upstream's CalculateAssignedPods walks every pod of
the snapshot. Here a group's pods come from the member index (`PodGroupObjects.members`) and a
member counts as assigned when the API shows it bound or when this plugin reserved it (Reserve
until Unreserve; the scheduler's assumed pods), so the count never walks the cluster. The pod
being scheduled is left out, as upstream's snapshot (taken before its assume) leaves it out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum

from scheduler.api.objects import PodView
from scheduler.api.podgroup import PodGroupView, pod_group_label
from scheduler.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from scheduler.cache.node_info import NodeInfo
from scheduler.framework.interface import (
    PODS_TO_ACTIVATE_KEY,
    CycleState,
    PodsToActivate,
    SnapshotLister,
)
from scheduler.listers.pod_groups import PodGroupObjects

# The permit state's key (core.go permitStateKey).
PERMIT_STATE_KEY = "PermitCoscheduling"


class PermitOutcome(StrEnum):
    """core.Status."""

    POD_GROUP_NOT_SPECIFIED = "PodGroup not specified"
    POD_GROUP_NOT_FOUND = "PodGroup not found"
    SUCCESS = "Success"
    WAIT = "Wait"


class PermitState:
    """core.PermitState: whether this pod's Permit asked to activate its siblings."""

    __slots__ = ("activate",)

    def __init__(self, activate: bool) -> None:
        self.activate = activate

    def clone(self) -> PermitState:
        return PermitState(self.activate)


class PreFilterRejection(Exception):
    """PreFilter's error; its text is the status message."""


class ExpiringSet:
    """go-cache as core.go uses it: names that expire after their own TTL."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._expiry: dict[str, float] = {}

    def add(self, name: str, ttl: float) -> None:
        self._expiry[name] = self._clock() + ttl

    def __contains__(self, name: object) -> bool:
        expiry = self._expiry.get(name) if isinstance(name, str) else None
        if expiry is None:
            return False
        if self._clock() >= expiry:
            del self._expiry[name]  # type: ignore[arg-type]
            return False
        return True

    def delete(self, name: str) -> None:
        self._expiry.pop(name, None)


def namespaced_name(pod: PodView) -> str:
    """core.GetNamespacedName."""
    return f"{pod.namespace}/{pod.name}"


def wait_time_seconds(group: PodGroupView | None, schedule_timeout: float) -> float:
    """util.GetWaitTimeDuration: the group's scheduleTimeoutSeconds, else the args' wait."""
    if group is not None and group.schedule_timeout_seconds is not None:
        return float(group.schedule_timeout_seconds)
    return schedule_timeout


class PodGroupManager:
    """core.PodGroupManager over the scheduler's listers and snapshot."""

    def __init__(
        self,
        objects: PodGroupObjects,
        snapshot: Callable[[], SnapshotLister],
        schedule_timeout: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.objects = objects
        self._snapshot = snapshot
        self.schedule_timeout = schedule_timeout
        # Group full names that passed the minResources check (expire after the timeout) and
        # that failed recently (podGroupBackoffSeconds). Upstream's caches: 3 s and 10 s
        # cleanup intervals, entries with their own TTL.
        self.permitted = ExpiringSet(clock)
        self.backed_off = ExpiringSet(clock)
        # Members this plugin reserved (Reserve until Unreserve), by uid: assumed pods.
        self.reserved: dict[str, tuple[str, str]] = {}

    # -- reading -------------------------------------------------------------------------

    def get_pod_group(self, pod: PodView) -> tuple[str, PodGroupView | None]:
        """GetPodGroup: ("namespace/group" or "", the PodGroup or None)."""
        name = pod_group_label(pod.labels)
        if not name:
            return "", None
        return f"{pod.namespace}/{name}", self.objects.get(pod.namespace, name)

    def creation_timestamp(self, pod: PodView, fallback: float) -> float:
        """GetCreationTimestamp: the group's creation time, else `fallback` (the pod's)."""
        name = pod_group_label(pod.labels)
        if not name:
            return fallback
        group = self.objects.get(pod.namespace, name)
        if group is None or group.created is None:
            return fallback
        return group.created

    def sibling_pods(self, pod: PodView) -> list[PodView]:
        """The pod lister's pods of the pod's namespace carrying its group label."""
        return self.objects.members.active_pods(pod.namespace, pod_group_label(pod.labels))

    def assigned_pods(self, group: str, namespace: str, exclude_uid: str = "") -> int:
        """CalculateAssignedPods: members bound or assumed (see the module docstring)."""
        count = 0
        for member in self.objects.members.active_pods(namespace, group):
            if member.uid == exclude_uid:
                continue
            if member.node_name:
                self.reserved.pop(member.uid, None)  # bound: the API says so from now on
                count += 1
            elif member.uid in self.reserved:
                count += 1
        return count

    # -- PreFilter -----------------------------------------------------------------------

    def pre_filter(self, pod: PodView) -> None:
        """PreFilter: raise PreFilterRejection with upstream's message, else pass."""
        full_name, group = self.get_pod_group(pod)
        if group is None:
            return
        if full_name in self.backed_off:
            raise PreFilterRejection(f"podGroup {full_name} failed recently")
        pods = self.sibling_pods(pod)
        if len(pods) < group.min_member:
            raise PreFilterRejection(
                f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                f"current pods number: {len(pods)}, minMember of group: {group.min_member}"
            )
        if group.min_resources is None:
            return
        if full_name in self.permitted:
            return
        min_resources = dict(group.min_resources)
        min_resources[PODS] = group.min_member * 10**9
        gap = check_cluster_resource(self._snapshot().list(), min_resources, full_name)
        if gap is not None:
            raise PreFilterRejection(gap)
        self.permitted.add(full_name, self.schedule_timeout)

    # -- Permit --------------------------------------------------------------------------

    def permit(self, state: CycleState, pod: PodView) -> PermitOutcome:
        full_name, group = self.get_pod_group(pod)
        if not full_name:
            return PermitOutcome.POD_GROUP_NOT_SPECIFIED
        if group is None:
            return PermitOutcome.POD_GROUP_NOT_FOUND
        assigned = self.assigned_pods(group.name, group.namespace, exclude_uid=pod.uid)
        # The pod itself is not counted (upstream: not in the snapshot yet): + 1.
        if assigned + 1 >= group.min_member:
            return PermitOutcome.SUCCESS
        if assigned == 0:
            # The group's first pod to reach Permit: only it activates its siblings
            # (scheduler-plugins#682).
            state.write(PERMIT_STATE_KEY, PermitState(True))
        return PermitOutcome.WAIT

    def activate_siblings(self, pod: PodView, state: CycleState) -> None:
        """ActivateSiblings: stash the group's other pods in PodsToActivate when Permit asked."""
        if not pod_group_label(pod.labels):
            return
        try:
            permit_state = state.read(PERMIT_STATE_KEY)
        except KeyError:
            return
        if not isinstance(permit_state, PermitState) or not permit_state.activate:
            return
        siblings = [p for p in self.sibling_pods(pod) if p.uid != pod.uid]
        if not siblings:
            return
        try:
            request = state.read(PODS_TO_ACTIVATE_KEY)
        except KeyError:
            return
        if isinstance(request, PodsToActivate):
            for sibling in siblings:
                request.pods[namespaced_name(sibling)] = sibling

    # -- PostFilter's bookkeeping --------------------------------------------------------

    def backoff_pod_group(self, full_name: str, seconds: float) -> None:
        if seconds:
            self.backed_off.add(full_name, seconds)

    def delete_permitted_pod_group(self, full_name: str) -> None:
        self.permitted.delete(full_name)


def check_cluster_resource(
    nodes: Iterable[NodeInfo],
    request: Mapping[str, int],
    group_full_name: str,
) -> str | None:
    """CheckClusterResource: None when the nodes' free resources (the group's own pods counted
    as free) cover `request` (nano units by resource name), else "resource gap: …"."""
    remaining = dict(request)
    for info in nodes:
        if info is None or info.node is None:
            continue
        free = _free_resources(info, group_full_name)
        for name in list(remaining):
            left = remaining[name] - free.get(name, 0)
            if left <= 0:
                del remaining[name]
            else:
                remaining[name] = left
        if not remaining:
            return None
    return f"resource gap: {_format_resource_list(remaining)}"


def _free_resources(info: NodeInfo, group_full_name: str) -> dict[str, int]:
    """getNodeResource as a ResourceList in nano units: allocatable minus what the node's pods
    other than the group's request (util.ResourceList)."""
    clone = info.clone()
    for pod in info.pods:
        name = pod_group_label(pod.labels)
        if name and f"{pod.namespace}/{name}" == group_full_name:
            clone.remove_pod(pod)
    allocatable, requested = clone.allocatable, clone.requested
    nano = 10**9
    free = {
        CPU: (allocatable.milli_cpu - requested.milli_cpu) * 10**6,
        MEMORY: (allocatable.memory - requested.memory) * nano,
        EPHEMERAL_STORAGE: (allocatable.ephemeral_storage - requested.ephemeral_storage) * nano,
        PODS: (allocatable.allowed_pod_number - len(clone.pods)) * nano,
    }
    for name, amount in allocatable.scalar.items():
        free[name] = (amount - requested.scalar.get(name, 0)) * nano
    return free


def _format_resource_list(amounts: Mapping[str, int]) -> str:
    """Go's %v of a ResourceList, with each quantity in its canonical text (Go prints the
    Quantity struct; the amounts are what matter)."""
    parts = []
    for name in sorted(amounts):
        nanos = amounts[name]
        if nanos % 10**9 == 0:
            text = str(nanos // 10**9)
        elif nanos % 10**6 == 0:
            text = f"{nanos // 10**6}m"
        else:
            text = f"{nanos}n"
        parts.append(f"{name}:{text}")
    return "map[" + " ".join(parts) + "]"
