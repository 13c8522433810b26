"""NodeUnschedulable (Filter): nodes with spec.unschedulable reject pods that don't tolerate
the node.kubernetes.io/unschedulable:NoSchedule taint.

Upstream: pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go (queueing
hints enabled).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from scheduler.api.objects import NodeView, PodView, Taint
from scheduler.cache.node_table import NodeTable
from scheduler.cache.rows import Rows, RowVerdict, all_rows_pass, verdict_with_status
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import CycleState, Handle, SignFragment
from scheduler.framework.runtime import batch as signers
from scheduler.framework.status import Status

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo

ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def tolerates_unschedulable(pod: PodView) -> bool:
    # Upstream hands ToleratesTaint the TaintTolerationComparisonOperators gate here too, but
    # this taint's value is "", never an integer, so an Lt / Gt toleration cannot tolerate it
    # at either value of the gate: the answer does not depend on it.
    return any(t.tolerates(UNSCHEDULABLE_TAINT) for t in pod.tolerations)


class NodeUnschedulable:
    name = "NodeUnschedulable"

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Feasibility reads the tolerations (upstream SignPod)."""
        return [signers.tolerations_fragment(pod)], Status.OK

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._unschedulable = Status.unresolvable(ERR_REASON_UNSCHEDULABLE, plugin=self.name)

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        node = node_info.node
        if node is None:
            return Status.unresolvable(ERR_REASON_UNKNOWN_CONDITION)
        if node.unschedulable and not tolerates_unschedulable(pod):
            return Status.unresolvable(ERR_REASON_UNSCHEDULABLE)
        return Status.OK

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict:
        if tolerates_unschedulable(pod):
            return verdict_with_status(all_rows_pass(len(rows)), self._unschedulable)
        return verdict_with_status(~table.unschedulable[rows], self._unschedulable)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self._schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATIONS),
                self._schedulable_after_toleration_change,
            ),
        )

    @staticmethod
    def _schedulable_after_node_change(pod: Any, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, NodeView):
            return QueueingHint.QUEUE  # unexpected object: be safe, as upstream on errors
        became_schedulable = isinstance(old, NodeView) and old.unschedulable
        added_schedulable = old is None
        if (became_schedulable or added_schedulable) and not new.unschedulable:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def _schedulable_after_toleration_change(pod: Any, old: Any, new: Any) -> QueueingHint:
        if not isinstance(old, PodView) or not isinstance(new, PodView):
            return QueueingHint.QUEUE
        if new.uid == pod.uid and not tolerates_unschedulable(old) and tolerates_unschedulable(new):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP
