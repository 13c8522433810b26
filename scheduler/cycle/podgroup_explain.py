"""What `aiosched explain` says about a gang member's last PodGroup cycle (the ``podGroup``
section of /debug/explain): which member fitted where, which one blocked the quorum and why
(its filter verdicts), GangScheduling's PlacementFeasible verdict, and with
TopologyAwareWorkloadScheduling the placements tried.

Built only when explain keeps attempts (``ExplainStore.enabled``), from what the cycle already
computed; nothing here runs for pods without a group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from observability.explain import group_verdicts
from scheduler.api.workload import PodGroupView
from scheduler.cycle.instrumentation import FilterVerdictView
from scheduler.cycle.podgroup_outcome import MemberOutcome
from scheduler.framework.status import Status
from scheduler.queue.types import QueuedPodInfo


@dataclass(frozen=True, slots=True)
class PlacementTried:
    """One placement's evaluation in a cycle (TopologyAwareWorkloadScheduling)."""

    name: str
    nodes: int
    status: Status
    placed: int


def group_summary(
    group: PodGroupView,
    status: Status,
    verdict: Status | None,
    members: Sequence[QueuedPodInfo],
    outcomes: Sequence[MemberOutcome],
    *,
    scheduled: bool,
    max_names: int,
    placements: Sequence[PlacementTried] = (),
    chosen: str | None = None,
) -> dict[str, Any]:
    """The JSON-ready ``podGroup`` section for the cycle that ended with `status`; `outcomes`
    are the reported members' (the chosen placement's, or the first one's when none fit)."""
    by_uid = {outcome.pinfo.uid: outcome for outcome in outcomes}
    rows: list[dict[str, Any]] = []
    blocking: dict[str, Any] | None = None
    for pinfo in members:
        outcome = by_uid.get(pinfo.uid)
        row: dict[str, Any] = {"pod": pinfo.pod.name}
        if outcome is None:
            row["result"] = "notTried"
        elif outcome.failure is None:
            row["result"] = "scheduled" if scheduled else "fitted"
            row["node"] = outcome.attempt.result.suggested_host
        else:
            failure = outcome.failure
            row["result"] = "unschedulable" if failure.is_rejected else "error"
            row["message"] = failure.message
            if blocking is None and failure.is_rejected:
                blocking = {"pod": pinfo.pod.name, "message": failure.message}
                if outcome.fit is not None:
                    view = FilterVerdictView(outcome.fit.diagnosis.node_to_status)
                    blocking["filterVerdicts"] = [
                        g.to_dict() for g in group_verdicts(view, max_names)
                    ]
        rows.append(row)
    result = (
        "scheduled" if status.is_success else ("unschedulable" if status.is_rejected else "error")
    )
    summary: dict[str, Any] = {
        "namespace": group.namespace,
        "name": group.name,
        "minCount": group.min_count,
        "result": result,
        "message": status.message,
        "members": rows,
    }
    if verdict is not None:
        summary["placementFeasible"] = {"code": verdict.code_name, "message": verdict.message}
    if group.topology_keys:
        summary["topologyKey"] = group.topology_keys[0]
    if placements:
        summary["placements"] = [
            {
                "name": p.name,
                "nodes": p.nodes,
                "feasible": p.status.is_success,
                "placed": p.placed,
                "message": p.status.message,
            }
            for p in placements
        ]
    if chosen is not None:
        summary["placement"] = chosen
    if blocking is not None and not scheduled:
        summary["blockingMember"] = blocking
    return summary
