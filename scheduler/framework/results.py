"""What one scheduling attempt produces: per-node scores, the chosen host, or why nothing fit.

Mirrors upstream's framework.Diagnosis / FitError (pkg/scheduler/framework/types.go) and
ScheduleResult / NodePluginScores (pkg/scheduler/schedule_one.go, interface.go). The FitError
message is what users read in the pod's PodScheduled condition and FailedScheduling event.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scheduler.framework.interface import NodeToStatus
from scheduler.framework.status import Code, Status

if TYPE_CHECKING:
    from scheduler.api.objects import PodView

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"


@dataclass(slots=True)
class PluginScore:
    name: str
    score: int  # already weighted


@dataclass(slots=True)
class NodePluginScores:
    name: str
    scores: list[PluginScore] = field(default_factory=list)
    total_score: int = 0


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int  # nodes whose filters ran (feasible + rejected)
    feasible_nodes: int


@dataclass(slots=True)
class Diagnosis:
    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    # Plugins that rejected the pod (Unschedulable / Unresolvable / Pending) on some node:
    # the queue requeues the pod only on events these plugins registered.
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add_plugin_status(self, status: Status) -> None:
        if not status.plugin:
            return
        if status.is_rejected:
            self.unschedulable_plugins.add(status.plugin)
        if status.code == Code.PENDING:
            self.pending_plugins.add(status.plugin)


class FitError(Exception):
    """No node fits the pod; `str(error)` is upstream's FitError.Error() text."""

    def __init__(self, pod: PodView, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        return fit_error_message(self.num_all_nodes, self.diagnosis)

    def message(self) -> str:
        """The user-facing text (PostFilter's message included once it is set)."""
        return str(self)


def fit_error_message(num_all_nodes: int, diagnosis: Diagnosis) -> str:
    """`0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't match ....` as upstream.

    Reasons are counted over nodes (nodes absent from the map count with the absent status's
    reasons) and sorted as strings, as upstream's sort.Strings does; the PostFilter message
    (e.g. "preemption: ...") is appended when the diagnosis carries one.
    """
    message = NO_NODE_AVAILABLE_MSG.format(num_all_nodes) + ":"
    if diagnosis.pre_filter_msg:
        # Every node got the same PreFilter status; listing them per node would repeat it.
        message += f" {diagnosis.pre_filter_msg}."
    else:
        counts: Counter[str] = Counter()
        statuses = diagnosis.node_to_status.statuses
        # Thousands of nodes share a few reason lists: count the lists, then their reasons.
        for reasons, nodes in Counter(status.reasons for status in statuses.values()).items():
            for reason in reasons:
                counts[reason] += nodes
        absent = num_all_nodes - len(statuses)
        if absent > 0:
            for reason in diagnosis.node_to_status.absent.reasons:
                counts[reason] += absent
        histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
        if histogram:
            message += f" {', '.join(histogram)}."
    if diagnosis.post_filter_msg:
        # appended as it is: preemption's messages end with their own period (current
        # upstream; releases before v1.27 added one more)
        message += f" {diagnosis.post_filter_msg}"
    return message


def with_post_filter_message(error: FitError, post_filter_msg: str) -> str:
    """The final failure message once PostFilter (preemption) ran and explained itself."""
    error.diagnosis.post_filter_msg = post_filter_msg
    return str(error)


class SchedulingError(Exception):
    """A plugin failed with an internal error (not a rejection); the pod is retried."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


class NoNodesAvailable(Exception):
    def __init__(self) -> None:
        super().__init__("no nodes available to schedule pods")
