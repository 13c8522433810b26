"""TaintToleration (Filter, PreScore, Score): NoSchedule / NoExecute taints the pod does not
tolerate reject the node; untolerated PreferNoSchedule taints lower its score.

Upstream: pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go (queueing hints
enabled). The Filter reason is "node(s) had untolerated taint(s)" as since v1.35; the first
untolerated taint is logged at debug level (upstream's V(4)), no longer named in the reason.
With the TaintTolerationComparisonOperators gate (alpha in v1.36 and v1.37, off by default)
`Lt` / `Gt` tolerations compare a taint's value as an int64, in Filter, Score and the node
hint alike; with it off they tolerate nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.api.objects import NodeView, PodView, Taint, Toleration
from scheduler.api.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    comparison_operators_enabled,
    find_matching_untolerated_taint,
    tolerations_tolerate_taint,
)
from scheduler.cache.node_table import IntArray, NodeTable
from scheduler.cache.rows import Rows, RowVerdict, default_normalize_rows, verdict_per_node
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeScore,
    SignFragment,
)
from scheduler.framework.registry import PluginEntry
from scheduler.framework.runtime import batch as signers
from scheduler.framework.status import Status
from scheduler.plugins.normalize_score import default_normalize_score

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo

NAME = "TaintToleration"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
DO_NOT_SCHEDULE_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})


log = logging.getLogger(__name__)

UNTOLERATED_TAINTS = "node(s) had untolerated taint(s)"


def _untolerated(
    node: NodeView, tolerations: Sequence[Toleration], comparison_operators: bool
) -> Taint | None:
    if not node.taints:
        return None
    return find_matching_untolerated_taint(
        node.taints, tolerations, DO_NOT_SCHEDULE_EFFECTS, comparison_operators
    )


def prefer_no_schedule_tolerations(tolerations: Sequence[Toleration]) -> tuple[Toleration, ...]:
    """Tolerations that can tolerate a PreferNoSchedule taint (an empty effect means all)."""
    return tuple(t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


def count_intolerable_prefer_no_schedule(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], comparison_operators: bool = False
) -> int:
    return sum(
        1
        for taint in taints
        if taint.effect == PREFER_NO_SCHEDULE
        and not tolerations_tolerate_taint(tolerations, taint, comparison_operators)
    )


class TaintToleration:
    name = NAME

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Feasibility and scoring read the tolerations (upstream SignPod)."""
        return [signers.tolerations_fragment(pod)], Status.OK

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self.comparison_operators = comparison_operators_enabled(handle)

    # Filter

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        taint = _untolerated(node, pod.tolerations, self.comparison_operators)
        if taint is None:
            return Status.OK
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "node had untolerated taints",
                extra={"node": node.name, "pod": pod.key, "untoleratedTaint": str(taint)},
            )
        return Status.unresolvable(UNTOLERATED_TAINTS)

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict:
        """Nodes without NoSchedule / NoExecute taints pass; the others are checked per node."""
        return verdict_per_node(
            self.filter, state, pod, table, rows, table.no_schedule_taints[rows]
        )

    # Score

    def pre_score(self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]) -> Status:
        state.write(PRE_SCORE_STATE_KEY, prefer_no_schedule_tolerations(pod.tolerations))
        return Status.OK

    def score(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> tuple[int, Status]:
        try:
            tolerations: tuple[Toleration, ...] = state.read(PRE_SCORE_STATE_KEY)
        except KeyError:
            return 0, _state_missing()
        node = node_info.node
        if node is None:
            return 0, Status.error("node not found")
        count = count_intolerable_prefer_no_schedule(
            node.taints, tolerations, self.comparison_operators
        )
        return count, Status.OK

    def score_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> IntArray | None:
        """Zero for nodes without PreferNoSchedule taints; the others are counted per node."""
        try:
            tolerations: tuple[Toleration, ...] = state.read(PRE_SCORE_STATE_KEY)
        except KeyError:
            return None
        scores = np.zeros(len(rows), dtype=np.int64)
        tainted = np.flatnonzero(table.prefer_no_schedule_taints[rows])
        if not len(tainted):
            return scores  # the usual case: no need to list the rows
        infos = table.infos
        for position, row in zip(tainted.tolist(), rows[tainted].tolist(), strict=True):
            node = infos[row].node
            if node is None:
                return None
            scores[position] = count_intolerable_prefer_no_schedule(
                node.taints, tolerations, self.comparison_operators
            )
        return scores

    def score_extensions(self) -> TaintToleration:
        return self

    def normalize_rows(self, state: CycleState, pod: PodView, scores: IntArray) -> IntArray:
        return default_normalize_rows(MAX_NODE_SCORE, True, scores)

    def normalize_score(self, state: CycleState, pod: PodView, scores: list[NodeScore]) -> Status:
        return default_normalize_score(MAX_NODE_SCORE, True, scores)

    # Queueing

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

    def _schedulable_after_node_change(self, pod: Any, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, NodeView) or not isinstance(pod, PodView):
            return QueueingHint.QUEUE
        if old is not None and not isinstance(old, NodeView):
            return QueueingHint.QUEUE
        compare = self.comparison_operators
        was_untolerated = old is None or _untolerated(old, pod.tolerations, compare) is not None
        is_untolerated = _untolerated(new, pod.tolerations, compare) is not None
        if was_untolerated and not is_untolerated:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def _schedulable_after_toleration_change(pod: Any, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, PodView) or not isinstance(pod, PodView):
            return QueueingHint.QUEUE
        if old is not None and not isinstance(old, PodView):
            return QueueingHint.QUEUE
        # Only the rejected pod's own tolerations matter.
        return QueueingHint.QUEUE if new.uid == pod.uid else QueueingHint.SKIP


def _state_missing() -> Status:
    return Status.error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')


PLUGIN_ENTRY = PluginEntry(NAME, TaintToleration)
