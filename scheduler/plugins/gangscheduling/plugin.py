"""The GangScheduling plugin (upstream's gangscheduling.go at v1.37, PodGroup in
scheduling.k8s.io/v1beta1).

- PreEnqueue holds a member out of activeQ until its PodGroup exists and, for a gang, until
  minCount of its pods exist (UnschedulableAndUnresolvable with upstream's messages).
- PlacementFeasible (new in v1.37, replacing v1.36's Reserve / Unreserve / Permit with its
  5-minute wait): the PodGroup cycle asks it before placing any member and after each one,
  with how many members are scheduled (assumed or bound) and how many remain to be tried.
  Unschedulable when minCount can no longer be reached (the cycle stops early), Wait while it
  may still be, Success once it is. Upstream runs PlacementFeasible only for the plugin named
  GangScheduling ("Name has to be GangScheduling for the PlacementFeasible plugin to be used"),
  and so does scheduler/cycle/podgroup_cycle.py.
- Queueing hints: a pod of the same group added (pending or bound), the PodGroup added, its
  gang minCount lowered (v1.37: an update where either side is not a gang is skipped; v1.36
  requeued it).

CompositePodGroups (alpha gate CompositePodGroup, v1alpha3) are not implemented: aiosched
follows the plugin with that gate off.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scheduler.api.objects import PodView
from scheduler.api.workload import PodGroupView
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import Handle
from scheduler.framework.registry import PluginEntry
from scheduler.framework.status import Code, Status
from scheduler.listers.workload_objects import WorkloadObjects

NAME = "GangScheduling"
MSG_WAITING_FOR_MIN_COUNT_IN_QUEUE = (
    "waiting for minCount pods from a gang to appear in scheduling queue"
)


def msg_waiting_for_pod_group(name: str) -> str:
    # v1.37's wording (v1.36 said "pods's").
    return f'waiting for pod\'s pod group "{name}" to appear in scheduling queue'


def placement_feasible(min_count: int, scheduled: int, remaining: int) -> Status:
    """gangscheduling.go's PlacementFeasible for a group whose minCount is `min_count` (1 for
    a basic group, upstream's getMinCount)."""
    if remaining + scheduled < min_count:
        # minCount can't be satisfied because there are not enough remaining pods.
        return Status(
            Code.UNSCHEDULABLE,
            f"minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, "
            f"{remaining} remaining",
            plugin=NAME,
        )
    if scheduled < min_count:
        # minCount might be satisfied once more remaining pods are evaluated.
        return Status(
            Code.WAIT,
            f"minCount ({min_count}) is not yet satisfied: {scheduled} scheduled, "
            f"{remaining} remaining",
            plugin=NAME,
        )
    return Status.OK


class GangScheduling:
    name = NAME

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._workloads: WorkloadObjects = (
            handle.cluster_objects.workloads if handle is not None else WorkloadObjects()
        )

    # -- PreEnqueue ------------------------------------------------------------------------

    def pre_enqueue(self, pod: PodView) -> Status:
        group_name = pod.scheduling_group
        if group_name is None:
            return Status.OK
        group = self._workloads.pod_group(pod.namespace, group_name)
        if group is None:
            # The pod is unschedulable until its PodGroup object is created.
            return Status.unresolvable(msg_waiting_for_pod_group(group_name))
        if self._workloads.short_of_min_count(group):
            return Status.unresolvable(MSG_WAITING_FOR_MIN_COUNT_IN_QUEUE)
        return Status.OK

    # -- PlacementFeasible ---------------------------------------------------------------

    def placement_feasible(self, group: PodGroupView, scheduled: int, remaining: int) -> Status:
        """Whether `group` can still reach its minCount with `scheduled` members assumed or
        bound and `remaining` still to be tried in this cycle."""
        return placement_feasible(group.min_count or 1, scheduled, remaining)

    # -- queueing hints --------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            # A pod added (pending or bound) may complete the gang. spec.schedulingGroup is
            # immutable: pod updates need no subscription.
            ClusterEventWithHint(
                ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.ADD), self._after_pod_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD), self._after_pod_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD_GROUP, ActionType.ADD), self._after_group_added
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD_GROUP, ActionType.UPDATE),
                self._after_group_updated,
            ),
        )

    @staticmethod
    def _after_pod_added(pod: PodView, old: Any, new: Any) -> QueueingHint:
        if (
            isinstance(new, PodView)
            and pod.scheduling_group is not None
            and new.scheduling_group == pod.scheduling_group
            and new.namespace == pod.namespace
        ):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def _after_group_added(pod: PodView, old: Any, new: Any) -> QueueingHint:
        if isinstance(new, PodGroupView) and _names(pod, new):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def _after_group_updated(pod: PodView, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, PodGroupView) or not _names(pod, new):
            return QueueingHint.SKIP
        if not isinstance(old, PodGroupView) or old.min_count is None or new.min_count is None:
            # Updates to non-gang policies will not make the waiting pods schedulable (v1.37).
            return QueueingHint.SKIP
        if new.min_count >= old.min_count:
            return QueueingHint.SKIP  # a minCount that did not decrease helps no one
        return QueueingHint.QUEUE


def _names(pod: PodView, group: PodGroupView) -> bool:
    return pod.scheduling_group == group.name and pod.namespace == group.namespace


PLUGIN_ENTRY = PluginEntry(NAME, GangScheduling)
