"""One gang member's try, as the gang algorithm (podgroup_algorithm.py) records it and explain
(podgroup_explain.py) reports it: below both, so that neither imports the other for it."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.cycle.algorithm import FitError
from scheduler.cycle.scheduling_cycle import Attempt
from scheduler.framework.status import Code, Status
from scheduler.queue.types import QueuedPodInfo


@dataclass(slots=True)
class MemberOutcome:
    """One member's try in a group cycle or a what-if (explain reports them)."""

    pinfo: QueuedPodInfo
    attempt: Attempt
    # The member's algorithm failure (a FitError's status, or an error); None when placed.
    failure: Status | None = None
    fit: FitError | None = None
    permit: Status | None = None
    # Whether the member is assumed in the cache now (the cycle's; a placement's evaluation
    # rolls it back).
    held: bool = False

    @property
    def placed(self) -> bool:
        return self.failure is None

    def did_not_fit(self, fit: FitError) -> MemberOutcome:
        """The member's algorithm found no node: keep its FitError (explain's filter
        verdicts, the member's failure event) and fail it Unschedulable with its message."""
        self.fit = fit
        self.failure = Status(Code.UNSCHEDULABLE, fit.message())
        return self
