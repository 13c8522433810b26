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

Otherwise, and on nodes without a pod to preempt, the full dry run decides. A hypothesis test
(tests/scheduler_plugins_preemption/test_resource_shortcut.py) checks the shortcuts against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.api.objects import PodView, Resource
from scheduler.framework.status import Status
from scheduler.plugins.defaultpreemption.util import (
    BudgetLookup,
    MoreImportantPodFunc,
    filter_pods_with_pdb_violation,
    sort_by_importance,
)
from scheduler.plugins.noderesources.fit import NAME as FIT
from scheduler.plugins.noderesources.fit import NodeResourcesFit

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.interface import CycleState, Handle

# Filters whose verdict depends on the pod and the node alone, never on the pods on the node;
# they fail only as UnschedulableAndUnresolvable, so a node preemption considers passed them.
_POD_SET_INDEPENDENT = frozenset(
    {"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"}
)
# PreFilter extensions (AddPod / RemovePod) that only update their own state and cannot fail
# once their PreFilter succeeded; any other extension makes the full dry run necessary.
_QUIET_EXTENSIONS = frozenset({"InterPodAffinity", "PodTopologySpread"})

Outcome = tuple[list[PodView], int, Status]


@dataclass(frozen=True, slots=True)
class _Remaining:
    """What NodeResourcesFit reads of a node once the victims are gone."""

    allocatable: Resource
    requested: Resource
    pods: Sequence[PodView]


class ResourceShortcut:
    """For one preemptor in one cycle: `select_victims_on_node`'s outcome on a node where
    sums of requests decide it, without copying the node."""

    def __init__(
        self,
        handle: Handle,
        state: CycleState,
        pod: PodView,
        fit: NodeResourcesFit,
        resources_only: bool,
        more_important: MoreImportantPodFunc,
    ) -> None:
        self._handle = handle
        self._state = state
        self._pod = pod
        self._fit = fit
        self._resources_only = resources_only
        self._more_important = more_important

    @classmethod
    def for_attempt(
        cls, handle: Handle, state: CycleState, pod: PodView, more_important: MoreImportantPodFunc
    ) -> ResourceShortcut | None:
        """None unless NodeResourcesFit runs and every filter before it has a verdict that
        removing pods cannot change (or, for NodePorts, nothing to check for this pod)."""
        skipped = state.skip_filter_plugins
        for pre_filter in handle.pre_filter_plugins:
            if pre_filter.name in skipped or pre_filter.name in _QUIET_EXTENSIONS:
                continue
            if pre_filter.pre_filter_extensions() is not None:
                return None
        fit: NodeResourcesFit | None = None
        resources_only = True
        for plugin in handle.filter_plugins:
            if plugin.name in skipped:
                continue
            if fit is not None:
                resources_only = False  # a filter after NodeResourcesFit runs for this pod
                break
            if plugin.name == FIT:
                if not isinstance(plugin, NodeResourcesFit):
                    return None
                fit = plugin
            elif plugin.name not in _POD_SET_INDEPENDENT and not (
                plugin.name == "NodePorts" and not pod.host_ports
            ):
                return None
        if fit is None:
            return None
        return cls(handle, state, pod, fit, resources_only, more_important)

    def select_victims(self, node_info: NodeInfo, budgets_for: BudgetLookup) -> Outcome | None:
        """What `select_victims_on_node` would return for `node_info` (not copied), or None
        when the full dry run must decide."""
        priority = self._pod.priority
        remaining = [other for other in node_info.pods if other.priority >= priority]
        if len(remaining) == len(node_info.pods):
            return None  # nothing to preempt: the full dry run says so in its own words
        uid = self._pod.uid
        remaining.extend(
            other
            for other in self._handle.nominated_pods_for_node(node_info.node_name)
            if other.priority >= priority and other.uid != uid
        )
        requested = Resource()
        for other in remaining:
            requested.add(other.requests)
        allocatable = node_info.allocatable
        status = self._fit.filter_resources(
            self._state, _Remaining(allocatable, requested, remaining)
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
                view = _Remaining(allocatable, requested, remaining)
                if self._fit.filter_resources(self._state, view).is_success:
                    continue
                requested.subtract(candidate.requests)
                remaining.pop()
                victims.append(candidate)
                num_violating += group_violates
        if violating and non_violating:
            victims = sort_by_importance(victims, self._more_important)
        return victims, num_violating, Status.OK
