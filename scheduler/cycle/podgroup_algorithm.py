"""The PodGroup (gang) algorithm, written once for everything that places a gang.

Three callers place a gang's members: the PodGroup cycle (podgroup_cycle.py: each member that
fits is assumed in the cache, Reserved and Permitted), workload-aware preemption's simulation of
the group on the snapshot preemption has changed (podgroup_cycle.py's `_simulation`: each member
added to that snapshot's nodes) and what-if (what_if_group.py: each member added to a private
copy of its node). They differ only in how one member is tried and how the members an
evaluation placed are taken away again; the algorithm around that is the same, and lives here
so that the three cannot drift apart:

- `default_algorithm`, upstream's podGroupSchedulingDefaultAlgorithm
  (pkg/scheduler/schedule_one_podgroup.go at v1.37): the members in the order given, with
  the profile's PlacementFeasible (GangScheduling's) asked before any is tried and after
  each one (scheduled, remaining). Unschedulable stops the loop (minCount can no longer be
  met), Error fails the group ("failed to evaluate placement feasibility: ..."), a member's
  algorithm error fails it too ("failed to schedule other pod from a pod group: ..."), Wait
  at the end counts as Unschedulable, and success with nothing placed is POD_GROUP_UNSCHEDULABLE.
- `placement_algorithm`, upstream's podGroupSchedulingPlacementAlgorithm
  (pkg/scheduler/algorithm_podgroup.go; podgroup_placement.py says what it specifies): the
  default algorithm once per placement, each on its own nodes (PlacementScope) and taken away
  after, the nominated placement first and taken at once when feasible, otherwise the best
  total of the profile's PlacementScore plugins among the feasible ones (ties at random); the
  placements are the profile's PlacementGenerate plugins' (the runtime's placement.py).

A member is tried by `try_member(pinfo)`, which records it where the caller wants it when it
fits and returns its MemberTrial (what the loop reads: `failure`, None when placed); the
callers' `undo_members(outcomes)` takes an evaluation's placed members away again.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from scheduler.api.workload import PodGroupView
from scheduler.cycle.podgroup_explain import PlacementTried
from scheduler.cycle.podgroup_placement import (
    Placement,
    PlacementScope,
    nominated_placement,
    placements_failed_message,
)
from scheduler.framework.interface import PodGroupPlacementInfo
from scheduler.framework.runtime import Framework
from scheduler.framework.runtime.placement import PLACEMENT_FEASIBLE_PLUGIN
from scheduler.framework.status import Code, Status
from scheduler.queue.types import QueuedPodInfo

#: The plugin whose PlacementFeasible upstream's runtime asks (what-if reads it by name).
GANG_SCHEDULING_PLUGIN = PLACEMENT_FEASIBLE_PLUGIN
#: upstream's errPodGroupUnschedulable
POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"

#: The profile's PlacementFeasible(group, scheduled, remaining), bound to its plugin.
PlacementFeasible = Callable[[PodGroupView, int, int], Status]


def placement_feasible_of(framework: Framework) -> PlacementFeasible | None:
    """The profile's PlacementFeasible, or None when it has none at that point (nothing to
    enforce: every check passes)."""
    return framework.placement_feasible()


class MemberTrial(Protocol):
    """What the algorithm reads of one member's try."""

    @property
    def failure(self) -> Status | None:
        """None when the member was placed; a rejection when it did not fit; else an error."""
        ...


TrialT = TypeVar("TrialT", bound=MemberTrial)


async def default_algorithm(
    group: PodGroupView,
    members: Sequence[QueuedPodInfo],
    scheduled: int,
    placement_feasible: PlacementFeasible | None,
    try_member: Callable[[QueuedPodInfo], Awaitable[TrialT]],
    outcomes: list[TrialT],
) -> tuple[Status, Status | None]:
    """podGroupSchedulingDefaultAlgorithm: the group's status and the last PlacementFeasible
    verdict (None without one). `scheduled`: the members already assumed or bound. Each tried
    member's trial is appended to `outcomes` as it is tried (members after an early stop are
    not tried), so that a caller can take them away even when a try raises."""
    remaining = len(members)
    verdict: Status | None = None
    status = Status.OK  # no PlacementFeasible plugin: nothing to enforce
    if placement_feasible is not None:
        status = verdict = placement_feasible(group, scheduled, remaining)
    if status.code == Code.ERROR:
        return _evaluation_error(status), verdict
    if status.code == Code.UNSCHEDULABLE:
        # minCount cannot be met even if every member fits: stop before trying any.
        return Status(Code.UNSCHEDULABLE, *status.reasons), verdict
    any_scheduled = False
    for pinfo in members:
        outcome = await try_member(pinfo)
        outcomes.append(outcome)
        failure = outcome.failure
        if failure is not None and not failure.is_rejected:
            status = Status.error(
                f"failed to schedule other pod from a pod group: {failure.message}"
            )
            break
        remaining -= 1
        placed = failure is None
        if placed:
            scheduled += 1
        if placement_feasible is not None:
            status = verdict = placement_feasible(group, scheduled, remaining)
        if status.code == Code.ERROR:
            status = _evaluation_error(status)
            break
        if status.code == Code.UNSCHEDULABLE:
            break  # minCount can no longer be met, whatever the rest do
        any_scheduled |= placed
    if status.is_wait:
        status = Status(Code.UNSCHEDULABLE, *status.reasons)
    if status.is_success and not any_scheduled:
        status = Status(Code.UNSCHEDULABLE, POD_GROUP_UNSCHEDULABLE)
    return status, verdict


@dataclass(slots=True)
class PlacementResult(Generic[TrialT]):
    """What the placement algorithm concluded: the group's status, the reported members'
    trials (the chosen placement's, else the first placement's, else the failing one's), their
    last PlacementFeasible verdict, and the chosen placement (None unless feasible)."""

    status: Status
    outcomes: list[TrialT]
    verdict: Status | None
    chosen: Placement | None = None


async def placement_algorithm(
    framework: Framework,
    group: PodGroupView,
    members: Sequence[QueuedPodInfo],
    scheduled_nodes: Sequence[tuple[str, str]],
    scheduled_count: Callable[[], int],
    placement_feasible: PlacementFeasible | None,
    try_member: Callable[[QueuedPodInfo], Awaitable[TrialT]],
    undo_members: Callable[[Sequence[TrialT]], None],
    scope: PlacementScope,
    rng: random.Random,
    tried: list[PlacementTried],
) -> PlacementResult[TrialT]:
    """podGroupSchedulingPlacementAlgorithm on `scope`'s snapshot, with `framework`'s
    PlacementGenerate and PlacementScore plugins. `scheduled_nodes`: (pod
    key, node) of the members already assumed or bound; `scheduled_count()`: how many they are
    (asked before each placement and for scoring). Every placement tried is appended to
    `tried`; none of the members stays placed when this returns (`undo_members` ran after each
    placement, once the scope has given the snapshot all its nodes back)."""
    info = PodGroupPlacementInfo(group, scheduled_nodes, scheduled_count())
    placements, status = framework.run_placement_generate_plugins(info, list(scope.snapshot.list()))
    if not status.is_success:
        return PlacementResult(status, [], None)
    nominated = nominated_placement(
        placements, (pinfo.pod.nominated_node_name for pinfo in members)
    )
    order = [p for p in placements if p is not nominated]
    if nominated is not None:
        order.insert(0, nominated)
    first: PlacementResult[TrialT] | None = None
    feasible: list[PlacementResult[TrialT]] = []
    for index, placement in enumerate(order):
        outcomes: list[TrialT] = []
        scope.assume(placement)
        try:
            status, verdict = await default_algorithm(
                group, members, scheduled_count(), placement_feasible, try_member, outcomes
            )
        finally:
            scope.forget()
        undo_members(outcomes)
        placed = sum(outcome.failure is None for outcome in outcomes)
        tried.append(PlacementTried(placement.name, len(placement.nodes), status, placed))
        result = PlacementResult(
            status, outcomes, verdict, placement if status.is_success else None
        )
        if status.code == Code.ERROR:
            return result
        if first is None:
            first = result
        if status.is_success:
            feasible.append(result)
            if index == 0 and placement is nominated:
                break  # the nominated placement fits: the others are not tried
    if not feasible:
        assert first is not None
        message = placements_failed_message(len(placements), first.status.message)
        return PlacementResult(Status(Code.UNSCHEDULABLE, message), first.outcomes, first.verdict)
    chosen = feasible[0]
    if len(feasible) > 1:
        scoring = PodGroupPlacementInfo(group, scheduled_nodes, scheduled_count())
        scores, status = framework.run_placement_score_plugins(
            scoring,
            [won for result in feasible if (won := result.chosen) is not None],
            [sum(o.failure is None for o in result.outcomes) for result in feasible],
        )
        if not status.is_success:
            return PlacementResult(status, [], None)
        top = max(scores)
        chosen = rng.choice(
            [result for result, score in zip(feasible, scores, strict=True) if score == top]
        )
    return chosen


def _evaluation_error(status: Status) -> Status:
    return Status.error(f"failed to evaluate placement feasibility: {status.message}")
