"""SchedulingGates (PreEnqueue): a pod with spec.schedulingGates stays out of activeQ.

Upstream: pkg/scheduler/framework/plugins/schedulinggates/scheduling_gates.go (with queueing
hints enabled, as upstream's default since v1.32).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scheduler.api.objects import PodView
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import Handle
from scheduler.framework.status import Status


class SchedulingGates:
    name = "SchedulingGates"

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        pass

    def pre_enqueue(self, pod: PodView) -> Status:
        if not pod.scheduling_gates:
            return Status.OK
        gates = " ".join(pod.scheduling_gates)
        return Status.unresolvable(f"waiting for scheduling gates: [{gates}]")

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                self._schedulable_after_gates_eliminated,
            ),
        )

    @staticmethod
    def _schedulable_after_gates_eliminated(pod: Any, old: Any, new: Any) -> QueueingHint:
        # Only the pod's own update can lift its own gates.
        if isinstance(new, PodView) and new.uid == pod.uid:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP
