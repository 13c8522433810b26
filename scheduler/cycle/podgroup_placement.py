"""Topology-aware placement of a pod group (feature gate TopologyAwareWorkloadScheduling): all
members of a PodGroup whose `spec.schedulingConstraints.topology[0].key` is set land in one
domain of that node label (a zone, a rack), chosen among the domains where the gang fits.

Upstream (kube-scheduler v1.37, the newest release read): pkg/scheduler/algorithm_podgroup.go
(podGroupSchedulingPlacementAlgorithm, nominatedPlacement, findBestPlacement), the two in-tree
placement plugins it runs, pkg/scheduler/framework/plugins/topologyaware/topology_placement.go
(TopologyPlacementGenerator, the PlacementGenerate extension point) and
pkg/scheduler/framework/plugins/podgrouppodscount/podgroup_pods_count.go (PodGroupPodsCount,
PlacementScore, weight 1), and the framework's merging of placements
(pkg/scheduler/framework/runtime/placement_merging_test.go). What they specify:

- Generation: a group without a topology constraint gets one placement, every node (the
  "parent placement"). With a key: one placement per value of that label among the nodes (nodes
  without the label belong to none); when members are already scheduled (assumed or bound) the
  only placement is their domain, and members in two domains, or on a node without the label,
  are an error ("cannot determine domain for already scheduled pods: ..."). No placement at
  all: Unschedulable "no feasible placements found" (TopologyPlacementGenerator's).
- Order: the placement holding the members' nominated node (when exactly one does) is tried
  first and taken at once when the gang is feasible there; otherwise every placement is tried
  with the default algorithm, restricted to its nodes (the snapshot's AssumePlacement:
  filters, "0/N nodes" and spreading see only those nodes), each rolled back after. Upstream's
  generator iterates a map; aiosched tries domains in name order.
- Choice: among feasible placements, the highest PodGroupPodsCount score: members already
  scheduled plus members placed there, normalised to 0..100 against the best placement; ties at
  random (upstream's Randomizer). One feasible placement is taken without scoring.
- None feasible: the group is Unschedulable with "0/N placements are available, first placement
  status: <the first placement's status>" (podGroupFitError), and the members carry that first
  placement's outcomes.

This module holds the parts (generation, the nominated placement, scoring, the scope); the
loop over placements that uses them is podgroup_algorithm.py's `placement_algorithm`, shared by
the PodGroup cycle and what-if.

Difference: upstream's PlacementGenerate / PlacementScore are configurable extension points;
aiosched runs the two default plugins' behaviour built in (its configuration API has no such
extension points yet).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.api.workload import PodGroupView
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.listers.workload_objects import (
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
    WORKLOAD_GATE_DEFAULTS,
    PodGroupState,
)

TOPOLOGY_PLACEMENT_GENERATOR = "TopologyPlacementGenerator"
POD_GROUP_PODS_COUNT = "PodGroupPodsCount"
#: TopologyPlacementGenerator's status when no domain has a node.
NO_FEASIBLE_PLACEMENTS = "no feasible placements found"
MIN_SCORE, MAX_SCORE = 0, 100


def topology_aware_enabled(gates: Mapping[str, bool] | None) -> bool:
    """Feature gate TopologyAwareWorkloadScheduling (alpha, off by default at v1.37)."""
    value = (gates or {}).get(TOPOLOGY_AWARE_WORKLOAD_SCHEDULING)
    return WORKLOAD_GATE_DEFAULTS[TOPOLOGY_AWARE_WORKLOAD_SCHEDULING] if value is None else value


@dataclass(frozen=True, slots=True)
class Placement:
    """A set of nodes a group is tried on (upstream's fwk.Placement): `name` is the topology
    domain ("" for the unconstrained placement of every node)."""

    name: str
    nodes: tuple[str, ...]


def placements_failed_message(count: int, first: str) -> str:
    """podGroupFitError.Error() within the placement algorithm."""
    return f"0/{count} placements are available, first placement status: {first}"


def generate_placements(
    group: PodGroupView,
    all_nodes: Sequence[NodeInfo],
    scheduled_nodes: Iterable[tuple[str, str]],
) -> tuple[list[Placement], Status]:
    """TopologyPlacementGenerator.GeneratePlacements over `all_nodes`; `scheduled_nodes` are the
    (pod key, node name) of the members already assumed or bound."""
    if not group.topology_keys:
        return [Placement("", tuple(info.node_name for info in all_nodes))], Status.OK
    # Only one topology constraint is allowed by the API (+k8s:maxItems=1).
    key = group.topology_keys[0]
    by_name = {info.node_name: info for info in all_nodes}
    required: str | None = None
    for pod_key, node_name in scheduled_nodes:
        info = by_name.get(node_name)
        if info is None or info.node is None:
            missing = f"node {node_name!r} not found"
            return [], _domain_error(f"getting node for pod {pod_key}: {missing}")
        domain = info.node.labels.get(key)
        if domain is None:
            return [], _domain_error(f"no topology domain found for pod {pod_key}")
        if required is not None and required != domain:
            return [], _domain_error(
                f"more than 1 domain found for pod group: {required}, {domain}"
            )
        required = domain
    domains: dict[str, list[str]] = {}
    for info in all_nodes:
        node = info.node
        if node is None:
            continue
        domain = node.labels.get(key)
        if domain is not None and (required is None or domain == required):
            domains.setdefault(domain, []).append(info.node_name)
    if not domains:
        return [], Status(
            Code.UNSCHEDULABLE, NO_FEASIBLE_PLACEMENTS, plugin=TOPOLOGY_PLACEMENT_GENERATOR
        )
    return [Placement(name, tuple(domains[name])) for name in sorted(domains)], Status.OK


def _domain_error(reason: str) -> Status:
    return Status.error(
        f"cannot determine domain for already scheduled pods: {reason}",
        plugin=TOPOLOGY_PLACEMENT_GENERATOR,
    )


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


def pods_count_scores(scheduled: int, proposed: Sequence[int]) -> list[int]:
    """PodGroupPodsCount's ScorePlacement (members already scheduled plus those placed) and
    NormalizePlacementScore (against the largest count), weight 1, for each placement."""
    raw = [scheduled + count for count in proposed]
    best = max(raw, default=0)
    if best == 0:
        return [MIN_SCORE for _ in raw]  # unreachable behind GangScheduling: see module doc
    return [MIN_SCORE + score * (MAX_SCORE - MIN_SCORE) // best for score in raw]


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
