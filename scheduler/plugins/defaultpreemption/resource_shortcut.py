"""An exact shortcut in preemption's dry run: nodes where the pod would not fit even with every
lower-priority pod gone are rejected without copying them.

The dry run's first step on a node (`select_victims_on_node`) removes every pod the preemptor
may preempt and runs the filters, with equal-or-higher priority nominated pods added. When the
filters before NodeResourcesFit cannot change their answer by removing pods, and the preemptor
does not fit the node's remaining requests, that step fails with NodeResourcesFit's status.
This module computes that status from sums of requests, without cloning the NodeInfo and
CycleState and without running the PreFilter extensions per victim, which is most of a dry
run's cost when no node can help (upstream's Unschedulable benchmark).

The shortcut only rejects; a node where the pod would fit goes through the full dry run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.api.objects import PodView, Resource
from scheduler.plugins.noderesources.fit import NAME as FIT
from scheduler.plugins.noderesources.fit import NodeResourcesFit

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.interface import CycleState, Handle
    from scheduler.framework.status import Status

# Filters whose verdict depends on the pod and the node alone, never on the pods on the node;
# they fail only as UnschedulableAndUnresolvable, so a node preemption considers passed them.
_POD_SET_INDEPENDENT = frozenset(
    {"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"}
)


@dataclass(frozen=True, slots=True)
class _Remaining:
    """What NodeResourcesFit reads of a node once the victims are gone."""

    allocatable: Resource
    requested: Resource
    pods: Sequence[PodView]


class ResourceShortcut:
    """For one preemptor in one cycle: NodeResourcesFit's rejection of each node with all
    lower-priority pods removed, where that is certainly the dry run's verdict."""

    def __init__(self, handle: Handle, state: CycleState, pod: PodView, fit: NodeResourcesFit):
        self._handle = handle
        self._state = state
        self._pod = pod
        self._fit = fit

    @classmethod
    def for_attempt(
        cls, handle: Handle, state: CycleState, pod: PodView
    ) -> ResourceShortcut | None:
        """None unless NodeResourcesFit runs, and every filter before it either cannot be
        changed by removing pods or (NodePorts) has nothing to check for this pod."""
        skipped = state.skip_filter_plugins
        for plugin in handle.filter_plugins:
            if plugin.name == FIT:
                if isinstance(plugin, NodeResourcesFit) and FIT not in skipped:
                    return cls(handle, state, pod, plugin)
                return None
            if plugin.name in _POD_SET_INDEPENDENT or plugin.name in skipped:
                continue
            if plugin.name == "NodePorts" and not pod.host_ports:
                continue
            return None
        return None

    def rejection(self, node_info: NodeInfo) -> Status | None:
        """NodeResourcesFit's status for the pod on `node_info` without its lower-priority
        pods and with the nominated pods the filters would add; None when the pod would fit
        there or the node has no pod to preempt (the full dry run then decides)."""
        priority = self._pod.priority
        kept = [other for other in node_info.pods if other.priority >= priority]
        if len(kept) == len(node_info.pods):
            return None
        uid = self._pod.uid
        kept.extend(
            other
            for other in self._handle.nominated_pods_for_node(node_info.node_name)
            if other.priority >= priority and other.uid != uid
        )
        requested = Resource()
        for other in kept:
            requested.add(other.requests)
        status = self._fit.filter_resources(
            self._state, _Remaining(node_info.allocatable, requested, kept)
        )
        if not status.is_rejected:
            return None  # fits, or an error the full dry run reports in its own words
        return status.with_plugin(FIT)
