"""Public runners over what a plugin takes part in beyond its own methods: the whole scheduling
algorithm for one pod (host selection, the vectorised row path, opportunistic batching's
signatures), and the queueing hints the queue asks when a cluster event arrives.

`run_cycle` (runner.py) runs the extension points one by one; `schedule` runs them as the
scheduler does (scheduler/cycle/algorithm.py's schedule_pod, upstream's schedulePod), so a
test sees the node that would be chosen and every score, on the same path as production.
`queueing_hint` asks a plugin's registered hints (EnqueueExtensions.events_to_register) about
an event as the scheduling queue asks them (upstream's isPodWorthRequeuing for one plugin).
"""

from __future__ import annotations

import random
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from scheduler.api.objects import PodView
from scheduler.cycle.algorithm import AttemptDetails, StartIndex, schedule_pod
from scheduler.framework.events import ClusterEvent, QueueingHint, QueueingHintFn
from scheduler.framework.interface import CycleState, EnqueueExtensions, SnapshotLister
from scheduler.framework.results import FitError, NodePluginScores
from scheduler.framework.runtime import Framework

__all__ = ["QueueingHintFn", "ScheduleOutcome", "queueing_hint", "schedule"]

T = TypeVar("T")


@dataclass
class ScheduleOutcome:
    """What the scheduling algorithm decided for one pod."""

    node: str | None  # the chosen node; None when nothing fits (fit_error says why)
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    # each scored node's per-plugin weighted scores and total (empty when one node was
    # feasible: upstream then skips scoring)
    scores: list[NodePluginScores] = field(default_factory=list)
    fit_error: FitError | None = None
    state: CycleState = field(default_factory=CycleState)

    @property
    def message(self) -> str:
        """The pod condition's message when nothing fits ("0/3 nodes are available: ...")."""
        return "" if self.fit_error is None else self.fit_error.message()


def _drive(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (schedule_pod without extenders) to its end."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]  # StopIteration.value is Any
    coroutine.close()
    raise RuntimeError("the scheduling algorithm suspended: extenders are not run here")


def schedule(
    framework: Framework,
    pod: PodView,
    snapshot: SnapshotLister | None = None,
    *,
    percentage_of_nodes_to_score: int | None = None,
    seed: int = 0,
) -> ScheduleOutcome:
    """Run the scheduling algorithm for `pod` on `snapshot` (default: the framework's):
    PreFilter, Filter (the row path where every plugin offers one), PreScore, Score,
    NormalizeScore and host selection (ties broken by a Random(`seed`)), as the scheduler
    does; no Reserve, Permit or binding, no preemption."""
    nodes = snapshot if snapshot is not None else framework.snapshot()
    details = AttemptDetails()
    state = CycleState()
    try:
        result = _drive(
            schedule_pod(
                framework,
                state,
                pod,
                nodes,
                percentage_of_nodes_to_score=percentage_of_nodes_to_score,
                next_start_index=StartIndex(),
                rng=random.Random(seed),
                details=details,
            )
        )
    except FitError as error:
        return ScheduleOutcome(None, fit_error=error, state=state)
    scores = list(details.scores or [])
    if details.row_scores is not None and details.scored_nodes is not None:
        names = [info.node_name for info in details.scored_nodes]
        scores = details.row_scores.node_plugin_scores(names)
    return ScheduleOutcome(
        result.suggested_host, result.evaluated_nodes, result.feasible_nodes, scores, state=state
    )


def queueing_hint(
    plugin: EnqueueExtensions, event: ClusterEvent, pod: PodView, old: Any, new: Any
) -> QueueingHint:
    """What the queue would conclude from `plugin` alone for a pod it rejected, when `event`
    brings `old` → `new`: QUEUE if a registered interest covering the event has no hint or a
    hint answering QUEUE, else SKIP (also when the plugin registers nothing for the event)."""
    for registered in plugin.events_to_register():
        if not event.matches(registered.event):
            continue
        if registered.hint is None or registered.hint(pod, old, new) is QueueingHint.QUEUE:
            return QueueingHint.QUEUE
    return QueueingHint.SKIP
