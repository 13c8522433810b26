"""What the queue hands out: a pod plus its queueing history (upstream's QueuedPodInfo)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.objects import PodView


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    pod: PodView
    # When the pod was last added to activeQ / backoffQ (PrioritySort's tie-breaker).
    timestamp: float
    # When the pod was first seen by the queue (the start of pod_scheduling_sli_duration).
    initial_attempt_timestamp: float | None = None
    # Scheduling attempts so far (every pop, from activeQ or backoffQ).
    attempts: int = 0
    # Attempts that ended rejected by plugins (UnschedulableCount): the backoff doubles with
    # them (initial * 2**(count-1), capped), not with `attempts`.
    unschedulable_count: int = 0
    # Plugins that rejected the pod in its last attempt (Unschedulable / Unresolvable).
    unschedulable_plugins: set[str] = field(default_factory=set)
    # Plugins that answered Pending in its last attempt.
    pending_plugins: set[str] = field(default_factory=set)
    # Set while a PreEnqueue plugin (e.g. SchedulingGates) keeps the pod out of activeQ.
    gated: bool = False
    # The plugin whose PreEnqueue gated it, with its message.
    gating_plugin: str = ""
    # Consecutive attempts that failed with an error rather than a rejection
    # (ConsecutiveErrorsCount); while non-zero it drives the backoff instead.
    consecutive_errors: int = 0
    # Requeued by the leftover flush (no event woke it) and not attempted since: if it now
    # schedules, scheduler_pod_scheduled_after_flush_total counts it (a hint may be missing).
    flushed_from_unschedulable: bool = False

    @property
    def uid(self) -> str:
        return self.pod.uid


# A QueueSort plugin's optional `sort_key`: a key whose order is its `less` (and equal keys where
# neither is less), so that activeQ's heap compares keys instead of calling `less`.
SortKey = Callable[[QueuedPodInfo], tuple[Any, ...]]
