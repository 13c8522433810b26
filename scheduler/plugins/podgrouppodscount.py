"""PodGroupPodsCount (PlacementScore): favours the placements that hold more of the group's
members.

Upstream: pkg/scheduler/framework/plugins/podgrouppodscount/podgroup_pods_count.go, in the
default profile with weight 1 under the TopologyAwareWorkloadScheduling gate. ScorePlacement
is the members already scheduled (assumed or bound) plus those the placement's evaluation
placed; NormalizePlacementScore scales them to MinScore + score * (MaxScore - MinScore) /
maxCount, the largest over the candidate placements (minCount deliberately not used), and is an
error when that largest is 0 ("no pods from pod group are assigned to any of the candidate
placements"; unreachable behind GangScheduling, which lets no group with nothing placed
through).
"""

from __future__ import annotations

from typing import Any

from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Handle,
    Placement,
    PlacementScoreExtensions,
    PodGroupPlacementInfo,
)
from scheduler.framework.registry import PluginEntry
from scheduler.framework.status import Status

NAME = "PodGroupPodsCount"
NO_PODS_ASSIGNED = "no pods from pod group are assigned to any of the candidate placements"


class PodGroupPodsCount:
    name = NAME

    def __init__(self, args: Any, handle: Handle) -> None:
        self.handle = handle

    def score_placement(
        self, group: PodGroupPlacementInfo, placement: Placement, placed: int
    ) -> tuple[int, Status]:
        return group.scheduled_count + placed, Status.OK

    def placement_score_extensions(self) -> PlacementScoreExtensions | None:
        return self

    def normalize_placement_score(self, group: PodGroupPlacementInfo, scores: list[int]) -> Status:
        best = max(scores, default=0)
        if best == 0:
            return Status.error(NO_PODS_ASSIGNED)
        for i, score in enumerate(scores):
            scores[i] = MIN_NODE_SCORE + score * (MAX_NODE_SCORE - MIN_NODE_SCORE) // best
        return Status.OK


PLUGIN_ENTRY = PluginEntry(NAME, PodGroupPodsCount)
