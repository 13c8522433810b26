"""The PodGroup cycle's extension points (upstream's RunPlacementGeneratePlugins,
RunPlacementScorePlugins, RunPlacementFeasiblePlugins and the PodGroupPostFilter run, in
pkg/scheduler/framework/runtime/framework.go): a profile's plugins at placementGenerate,
placementScore, placementFeasible and podGroupPostFilter, as the PodGroup algorithm
(scheduler/cycle/podgroup_algorithm.py) and cycle (podgroup_cycle.py) call them.

What they specify, from upstream:

- PlacementGenerate: every plugin is asked for the placements within the parent placement (every
  node). A plugin that returns the parent itself has no constraint and is left out; the others'
  placements are merged by intersection, as a cross product whose empty intersections are
  dropped, names joined by "/" (placement_merging_test.go's TestRunPlacementGeneratePluginsMerge).
  No constraining plugin (none configured, or all unconstrained): the parent placement alone.
  A plugin's failure is returned as it is, attributed to the plugin.
- PlacementScore: each plugin scores every feasible placement, normalizes its scores when it has
  PlacementScoreExtensions, and each score is multiplied by the plugin's weight (0/unset means
  1) into the placement's total (as RunScorePlugins does for nodes).
- PlacementFeasible: upstream still runs only the plugin named GangScheduling there (the TODO in
  schedule_one_podgroup_test.go's fake plugin: "Name has to be GangScheduling for the
  PlacementFeasible plugin to be used"), so another plugin at that point is not asked.
- PodGroupPostFilter: run in order until one succeeds or fails with an error, as PostFilter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    MutableNodes,
    Placement,
    PlacementFeasiblePlugin,
    PodGroupPlacementInfo,
    PodGroupPostFilterResult,
    ProposedAssignment,
    extensions_of,
)
from scheduler.framework.runtime.core import FrameworkCore
from scheduler.framework.status import Code, Status

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from scheduler.api.objects import PodView
    from scheduler.api.workload import PodGroupView
    from scheduler.cache.node_info import NodeInfo

#: The only plugin upstream's runtime asks at PlacementFeasible (see the module doc).
PLACEMENT_FEASIBLE_PLUGIN = "GangScheduling"
#: The merge of several generators' placements left none (aiosched's wording: upstream's
#: test checks only the Unschedulable code).
NO_COMMON_PLACEMENT = "no placement satisfies every PlacementGenerate plugin"
#: upstream's runWorkloadAwarePreemption without a PodGroupPostFilter plugin
NO_POD_GROUP_POST_FILTER = (
    "default preemption plugin is not registered, workload aware preemption is disabled"
)


class Placing(FrameworkCore):
    """The PodGroup cycle's points of one profile."""

    def has_placement_generate_plugins(self) -> bool:
        return bool(self.placement_generate_plugins)

    def run_placement_generate_plugins(
        self, group: PodGroupPlacementInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[Placement], Status]:
        """The group's placements among `nodes` (the parent placement's NodeInfos)."""
        parent = Placement("", tuple(info.node_name for info in nodes))
        merged: list[Placement] | None = None
        for plugin in self.placement_generate_plugins:
            placements, status = plugin.generate_placements(group, parent, nodes)
            if not status.is_success:
                if not status.plugin:
                    status = Status(status.code, *status.reasons, plugin=plugin.name)
                return [], status
            if len(placements) == 1 and placements[0] is parent:
                continue  # unconstrained: leaves the merge alone
            merged = list(placements) if merged is None else _intersect(merged, placements)
            if not merged:
                return [], Status(Code.UNSCHEDULABLE, NO_COMMON_PLACEMENT)
        return ([parent] if merged is None else merged), Status.OK

    def run_placement_score_plugins(
        self,
        group: PodGroupPlacementInfo,
        placements: Sequence[Placement],
        placed: Sequence[int],
    ) -> tuple[list[int], Status]:
        """Each placement's weighted total over the PlacementScore plugins; `placed[i]` is how
        many members placements[i]'s evaluation placed. No plugin: every total is 0."""
        totals = [0] * len(placements)
        for plugin in self.placement_score_plugins:
            name = plugin.name
            scores: list[int] = []
            for placement, count in zip(placements, placed, strict=True):
                score, status = plugin.score_placement(group, placement, count)
                if not status.is_success:
                    return [], Status.error(
                        f"plugin {name!r} failed with: {status.message}", plugin=name
                    )
                scores.append(score)
            extensions = extensions_of(plugin, "placement_score_extensions")
            if extensions is not None:
                status = extensions.normalize_placement_score(group, scores)
                if not status.is_success:
                    return [], Status.error(
                        f"plugin {name!r} failed with: {status.message}", plugin=name
                    )
            weight = self.placement_score_weights.get(name, 1)
            for i, score in enumerate(scores):
                if not MIN_NODE_SCORE <= score <= MAX_NODE_SCORE:
                    return [], Status.error(
                        f"plugin {name!r} returns an invalid score {score}, it should in the "
                        f"range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                        plugin=name,
                    )
                totals[i] += score * weight
        return totals, Status.OK

    def placement_feasible(self) -> Callable[[PodGroupView, int, int], Status] | None:
        """The PlacementFeasible check the PodGroup algorithm asks, or None when the profile
        has none at that point (nothing to enforce)."""
        for plugin in self.placement_feasible_plugins:
            if plugin.name == PLACEMENT_FEASIBLE_PLUGIN:
                typed: PlacementFeasiblePlugin = plugin
                return typed.placement_feasible
        return None

    async def run_pod_group_post_filter_plugins(
        self,
        group: PodGroupView,
        members: Sequence[PodView],
        schedule_group: Callable[
            [MutableNodes], Awaitable[tuple[Status, list[ProposedAssignment]]]
        ],
    ) -> tuple[PodGroupPostFilterResult | None, Status]:
        """The group's PostFilter: the first success or error ends the run; otherwise the last
        plugin's rejection is the outcome."""
        if not self.pod_group_post_filter_plugins:
            return None, Status(Code.UNSCHEDULABLE, NO_POD_GROUP_POST_FILTER)
        result: PodGroupPostFilterResult | None = None
        status = Status.OK
        for plugin in self.pod_group_post_filter_plugins:
            result, status = await plugin.pod_group_post_filter(group, members, schedule_group)
            if status.is_success or status.code == Code.ERROR:
                break
        return result, status


def _intersect(left: Sequence[Placement], right: Sequence[Placement]) -> list[Placement]:
    """The cross product of two generators' placements, each pair's common nodes (in the left
    one's order), empty intersections dropped."""
    out: list[Placement] = []
    for a in left:
        for b in right:
            keep = frozenset(b.nodes)
            nodes = tuple(name for name in a.nodes if name in keep)
            if nodes:
                out.append(Placement(f"{a.name}/{b.name}", nodes))
    return out
