"""Topology-aware placement of a pod group (feature gate TopologyAwareWorkloadScheduling): all
members of a PodGroup whose `spec.schedulingConstraints.topology[0].key` is set land in one
domain of that node label (a zone, a rack), chosen among the domains where the gang fits.

Upstream (kube-scheduler v1.37, the newest release read): pkg/scheduler/algorithm_podgroup.go
(podGroupSchedulingPlacementAlgorithm, nominatedPlacement, findBestPlacement), and the profile's
plugins at the PlacementGenerate and PlacementScore extension points (the runtime runs them:
scheduler/framework/runtime/placement.py). The default profile has, with the gate on,
TopologyPlacementGenerator (scheduler/plugins/topologyplacementgenerator.py: one placement per
domain) and PodGroupPodsCount (scheduler/plugins/podgrouppodscount.py: members placed, weight
1). What the algorithm around them specifies:

- Generation: the PlacementGenerate plugins' placements, merged; none configured (or none
  constraining the group): one placement, every node (the "parent placement").
- Order: the placement holding the members' nominated node (when exactly one does) is tried
  first and taken at once when the gang is feasible there; otherwise every placement is tried
  with the default algorithm, restricted to its nodes (the snapshot's AssumePlacement:
  filters, "0/N nodes" and spreading see only those nodes), each rolled back after.
- Choice: among feasible placements, the highest weighted total of the PlacementScore plugins;
  ties at random (upstream's Randomizer), so without a PlacementScore plugin any feasible one.
  One feasible placement is taken without scoring.
- None feasible: the group is Unschedulable with "0/N placements are available, first placement
  status: <the first placement's status>" (podGroupFitError), and the members carry that first
  placement's outcomes.

This module holds the parts the cycle owns (the nominated placement, the scope, the members
already scheduled); the loop over placements that uses them is podgroup_algorithm.py's
`placement_algorithm`, shared by the PodGroup cycle and what-if.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.cache.node_info import NodeInfo
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.interface import Placement
from scheduler.listers.workload_objects import (
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
    WORKLOAD_GATE_DEFAULTS,
    PodGroupState,
)

__all__ = [
    "Placement",
    "PlacementScope",
    "nominated_placement",
    "placements_failed_message",
    "scheduled_member_nodes",
    "topology_aware_enabled",
]


def topology_aware_enabled(gates: Mapping[str, bool] | None) -> bool:
    """Feature gate TopologyAwareWorkloadScheduling (alpha, off by default at v1.37)."""
    value = (gates or {}).get(TOPOLOGY_AWARE_WORKLOAD_SCHEDULING)
    return WORKLOAD_GATE_DEFAULTS[TOPOLOGY_AWARE_WORKLOAD_SCHEDULING] if value is None else value


def placements_failed_message(count: int, first: str) -> str:
    """podGroupFitError.Error() within the placement algorithm."""
    return f"0/{count} placements are available, first placement status: {first}"


def scheduled_member_nodes(
    state: PodGroupState, assumed_node: Callable[[str], str | None]
) -> list[tuple[str, str]]:
    """(pod key, node) of the group's members that are bound or assumed; `assumed_node(uid)`
    is the node the cache has assumed a pod on, None when it has not assumed it."""
    out = []
    for uid, pod in state.pods.items():
        if uid in state.assigned and pod.node_name:
            out.append((pod.key, pod.node_name))
            continue
        node = assumed_node(uid)
        if node:
            out.append((pod.key, node))
    return out


def nominated_placement(
    placements: Sequence[Placement], nominated_nodes: Iterable[str]
) -> Placement | None:
    """The one placement holding a member's nominated node, or None when none or several do
    (upstream's nominatedPlacement: overlapping placements fall back to scoring)."""
    wanted = {name for name in nominated_nodes if name}
    if not wanted:
        return None
    matched = None
    for placement in placements:
        if wanted.intersection(placement.nodes):
            if matched is not None:
                return None
            matched = placement
    return matched


@dataclass(slots=True)
class PlacementScope:
    """Restricts the shared snapshot to one placement's nodes while it is evaluated (upstream's
    Snapshot.AssumePlacement / ForgetPlacement), so every plugin reading the snapshot sees
    only them. The NodeInfos are shared with the full lists, so pods assumed meanwhile show in
    both; `refresh` runs the cache's update on the full snapshot and restricts it again."""

    snapshot: Snapshot
    _full: tuple[list[NodeInfo], dict[str, NodeInfo]] | None = field(default=None)
    _names: frozenset[str] = frozenset()

    def assume(self, placement: Placement) -> None:
        self._names = frozenset(placement.nodes)
        self._restrict()

    def _restrict(self) -> None:
        snapshot = self.snapshot
        self._full = (snapshot.node_info_list, snapshot.node_info_map)
        kept = [info for info in snapshot.node_info_list if info.node_name in self._names]
        snapshot.node_info_list = kept
        snapshot.node_info_map = {info.node_name: info for info in kept}
        snapshot.rebuild_derived_lists()
        snapshot.invalidate_table()

    def forget(self) -> None:
        if self._full is None:
            return
        snapshot = self.snapshot
        snapshot.node_info_list, snapshot.node_info_map = self._full
        self._full = None
        snapshot.rebuild_derived_lists()
        snapshot.invalidate_table()

    def refresh(self, update: Callable[[Snapshot], object]) -> None:
        """Bring the snapshot up to date with the cache (`update`), keeping the restriction."""
        if self._full is None:
            update(self.snapshot)
            return
        self.forget()
        update(self.snapshot)
        self._restrict()
