"""When NodeResourcesFit alone decides whether a pod's filters pass as pods come and go on a node.

Two places add or remove pods on a node only to run the filters again: filtering with pods
nominated to the node (upstream's RunFilterPluginsWithNominatedPods), and preemption's dry run.
Both copy the NodeInfo and CycleState per node and run PreFilter extensions per pod. When the
only filter whose verdict depends on the node's pods is NodeResourcesFit, sums of requests give
the same answer without any copy: the other filters' verdicts cannot change, and Fit's depends
on the node's allocatable, the requests of its pods and their number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.api.objects import PodView
from scheduler.plugins.noderesources.resource_view import (
    FIT,
    RemainingResources,
    ResourceFilter,
    requested_by,
)

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.interface import CycleState, PreemptionHandle
    from scheduler.framework.status import Status

# Filters whose verdict depends on the pod and the node alone, never on the pods on the node;
# they fail only as UnschedulableAndUnresolvable.
POD_SET_INDEPENDENT = frozenset(
    {"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"}
)
# PreFilter extensions (AddPod / RemovePod) that only update their own plugin's state and cannot
# fail once its PreFilter succeeded.
_QUIET_EXTENSIONS = frozenset({"InterPodAffinity", "PodTopologySpread"})


@dataclass(frozen=True, slots=True)
class FitAlone:
    """NodeResourcesFit for this attempt, and whether it is the only filter that runs whose
    verdict pods on the node can change (`decides_alone`; otherwise it only comes first:
    every filter before it has a fixed verdict)."""

    fit: ResourceFilter
    decides_alone: bool


def fit_alone(handle: PreemptionHandle, state: CycleState, pod: PodView) -> FitAlone | None:
    """None unless NodeResourcesFit runs for `pod`, every filter before it has a verdict that
    pods on the node cannot change (NodePorts: when the pod asks for no host port), and no
    PreFilter extension that runs could fail or matter elsewhere."""
    skipped = state.skip_filter_plugins
    for pre_filter in handle.pre_filter_plugins:
        if pre_filter.name in skipped or pre_filter.name in _QUIET_EXTENSIONS:
            continue
        if pre_filter.pre_filter_extensions() is not None:
            return None
    fit: ResourceFilter | None = None
    for plugin in handle.filter_plugins:
        if plugin.name in skipped:
            continue
        if fit is not None:
            return FitAlone(fit, decides_alone=False)  # a filter after Fit runs for this pod
        if plugin.name == FIT:
            if not isinstance(plugin, ResourceFilter):
                return None
            fit = plugin
        elif plugin.name not in POD_SET_INDEPENDENT and not (
            plugin.name == "NodePorts" and not pod.host_ports
        ):
            return None
    return None if fit is None else FitAlone(fit, decides_alone=True)


def nominated_that_count(handle: PreemptionHandle, pod: PodView, node_name: str) -> list[PodView]:
    """The pods nominated to `node_name` that filtering `pod` must add: those of equal or
    higher priority, other than the pod itself."""
    return [
        other
        for other in handle.nominated_pods_for_node(node_name)
        if other.priority >= pod.priority and other.uid != pod.uid
    ]


@dataclass(frozen=True, slots=True)
class FitWithNominatedPods:
    """NodeResourcesFit's one-step verdict on a node with nominated pods, when it alone
    decides: the pod must fit the node's requests plus those of the nominated pods, which
    also implies fitting without them, so the two passes reduce to one sum."""

    fit: ResourceFilter

    @property
    def plugin(self) -> str:
        return self.fit.name

    def __call__(
        self, state: CycleState, pod: PodView, node_info: NodeInfo, nominated: Sequence[PodView]
    ) -> Status:
        requested = requested_by(nominated)
        requested.add(node_info.requested)
        remaining = RemainingResources(
            node_info.allocatable, requested, [*node_info.pods, *nominated]
        )
        return self.fit.filter_resources(state, remaining)


def nominated_pods_verdict(
    handle: PreemptionHandle, state: CycleState, pod: PodView
) -> FitWithNominatedPods | None:
    """NodeResourcesFit's NominatedPodsFilterPlugin answer: its one-step verdict when it
    alone decides for `pod` (fit_alone), else None."""
    alone = fit_alone(handle, state, pod)
    if alone is None or not alone.decides_alone:
        return None
    return FitWithNominatedPods(alone.fit)
