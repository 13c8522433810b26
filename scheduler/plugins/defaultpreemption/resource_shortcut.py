"""Exact shortcuts in preemption's dry run, computed from sums of requests instead of copied
NodeInfos, copied CycleStates and filter runs per victim.

`select_victims_on_node` removes every pod the preemptor may preempt, runs the filters (with
equal-or-higher priority nominated pods added), and then adds victims back one by one while the
preemptor still passes the filters. Copying the node and its state and running the filters once
per victim is most of a dry run's cost. Two cases need none of it:

- *Rejection.* When every filter before NodeResourcesFit either cannot change its verdict when
  pods are removed or has nothing to check for this pod, and the preemptor does not fit the
  node's remaining requests, the first step fails with NodeResourcesFit's status. No node can
  help in upstream's Unschedulable benchmark, so this is all its dry runs do.
- *Resources only.* When, in addition, no filter after NodeResourcesFit runs for this pod (the
  topology plugins skip pods without affinity or spread constraints), passing the filters means
  fitting the node's resources, so reprieving victims is arithmetic.

Otherwise, and on nodes without a pod to preempt, the full dry run decides (the conditions are
noderesources.fit_alone's). A hypothesis test
(tests/scheduler_plugins_preemption/test_resource_shortcut.py) checks the shortcuts against it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.api.objects import PodView
from scheduler.framework.status import Status
from scheduler.plugins.defaultpreemption.util import (
    BudgetLookup,
    MoreImportantPodFunc,
    filter_pods_with_pdb_violation,
    sort_by_importance,
)
from scheduler.plugins.noderesources.fit_alone import (
    FitAlone,
    fit_alone,
    nominated_that_count,
)
from scheduler.plugins.noderesources.resource_view import FIT, RemainingResources, requested_by

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.interface import CycleState, PreemptionHandle

Outcome = tuple[list[PodView], int, Status]


class ResourceShortcut:
    """For one preemptor in one cycle: `select_victims_on_node`'s outcome on a node where
    sums of requests decide it, without copying the node."""

    def __init__(
        self,
        handle: PreemptionHandle,
        state: CycleState,
        pod: PodView,
        alone: FitAlone,
        more_important: MoreImportantPodFunc,
    ) -> None:
        self._handle = handle
        self._state = state
        self._pod = pod
        self._fit = alone.fit
        self._resources_only = alone.decides_alone
        self._more_important = more_important

    @classmethod
    def for_attempt(
        cls,
        handle: PreemptionHandle,
        state: CycleState,
        pod: PodView,
        more_important: MoreImportantPodFunc,
    ) -> ResourceShortcut | None:
        alone = fit_alone(handle, state, pod)
        return None if alone is None else cls(handle, state, pod, alone, more_important)

    def select_victims(self, node_info: NodeInfo, budgets_for: BudgetLookup) -> Outcome | None:
        """What `select_victims_on_node` would return for `node_info` (not copied), or None
        when the full dry run must decide."""
        priority = self._pod.priority
        remaining = [other for other in node_info.pods if other.priority >= priority]
        if len(remaining) == len(node_info.pods):
            return None  # nothing to preempt: the full dry run says so in its own words
        remaining.extend(nominated_that_count(self._handle, self._pod, node_info.node_name))
        requested = requested_by(remaining)
        allocatable = node_info.allocatable
        status = self._fit.filter_resources(
            self._state, RemainingResources(allocatable, requested, remaining)
        )
        if not status.is_success:
            if not status.is_rejected:
                return None  # an error the full dry run reports in its own words
            return [], 0, status.with_plugin(FIT)
        if not self._resources_only:
            return None

        potential = sort_by_importance(
            (other for other in node_info.pods if other.priority < priority),
            self._more_important,
        )
        violating, non_violating = filter_pods_with_pdb_violation(potential, budgets_for)
        victims: list[PodView] = []
        num_violating = 0
        for group_violates, group in ((True, violating), (False, non_violating)):
            for candidate in group:
                requested.add(candidate.requests)
                remaining.append(candidate)
                view = RemainingResources(allocatable, requested, remaining)
                if self._fit.filter_resources(self._state, view).is_success:
                    continue
                requested.subtract(candidate.requests)
                remaining.pop()
                victims.append(candidate)
                num_violating += group_violates
        if violating and non_violating:
            victims = sort_by_importance(victims, self._more_important)
        return victims, num_violating, Status.OK
