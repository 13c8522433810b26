"""PodTopologySpread (PreFilter, Filter, PreScore, Score, queueing hints).

Upstream: pkg/scheduler/framework/plugins/podtopologyspread/plugin.go, common.go, filtering.go
and scoring.go (v1.30+: PreFilter / PreScore skip pods without hard / soft constraints, node
inclusion policies and matchLabelKeys on, minDomains GA).

Fast paths: when PreFilter is handed the snapshot's whole node list (`nodes is
snapshot.node_info_list`), its state comes from the NodeTable (rows.py) instead of a walk over
every pod; PreScore does the same when every filtered node is a table row. `filter_rows` and
`score_rows` answer for many rows at once. The per-node methods stay upstream's algorithm and
accept either kind of state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.api.objects import PodView
from scheduler.api.taints import comparison_operators_enabled
from scheduler.cache.node_table import IntArray, NodeTable
from scheduler.cache.rows import Rows, RowVerdict
from scheduler.cache.snapshot import node_table_for
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import (
    CycleState,
    Handle,
    NodeScore,
    PreFilterResult,
    SignFragment,
)
from scheduler.framework.runtime import batch as signers
from scheduler.framework.status import Status
from scheduler.plugins.podtopologyspread import filtering, hints, scoring
from scheduler.plugins.podtopologyspread.args import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    PodTopologySpreadArgs,
)
from scheduler.plugins.podtopologyspread.constraints import (
    Constraint,
    ConstraintError,
    default_constraints_for,
    parse_pod_constraints,
    raw_constraints,
)
from scheduler.plugins.podtopologyspread.rows import ROW_DATA_KEY, RowData
from scheduler.plugins.podtopologyspread.state import PreFilterState, PreScoreState

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.listers.cluster_objects import ClusterObjects

NAME = "PodTopologySpread"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME


MATCH_LABEL_KEYS_GATE = "MatchLabelKeysInPodTopologySpread"


class PodTopologySpread:
    name = NAME

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Spreading is not local to a pod and a node: a pod with constraints, its own or the
        profile's defaults (the system defaults included), cannot be signed (upstream SignPod:
        so the default profile batches no pod)."""
        if pod.raw.get("spec", {}).get("topologySpreadConstraints"):
            return signers.cannot_sign("pods with topology constraints are not signable")
        if self._default_constraints:
            return signers.cannot_sign("pods with default topology constraints are not signable")
        return signers.OK_NO_FRAGMENTS

    def signs_no_pod(self) -> bool:
        """Whether sign_pod refuses every pod: with default constraints it does (a pod without
        constraints of its own gets the defaults), so the signer need not ask per pod."""
        return bool(self._default_constraints)

    def __init__(
        self, args: PodTopologySpreadArgs | None = None, handle: Handle | None = None
    ) -> None:
        args = args or PodTopologySpreadArgs()
        self._handle = handle
        self._comparison_operators = comparison_operators_enabled(handle)
        self._system_defaulted = args.system_defaulted
        self._default_constraints = args.effective_constraints
        # MatchLabelKeysInPodTopologySpread (beta, on by default): off, matchLabelKeys is
        # ignored (upstream's enableMatchLabelKeysInPodTopologySpread).
        gates = getattr(handle, "feature_gates", None) or {}
        self._match_label_keys = bool(gates.get(MATCH_LABEL_KEYS_GATE, True))
        # The last pod whose own constraints were parsed: (pod, hard, soft).
        self._memo: tuple[PodView, tuple[Constraint, ...], tuple[Constraint, ...]] | None = None

    # -- constraints ----------------------------------------------------------------------

    def _cluster_objects(self) -> ClusterObjects | None:
        handle = self._handle
        return None if handle is None else getattr(handle, "cluster_objects", None)

    def _own_constraints(
        self, pod: PodView, raw: Sequence[Any]
    ) -> tuple[tuple[Constraint, ...], tuple[Constraint, ...]]:
        memo = self._memo
        if memo is not None and memo[0] is pod:
            return memo[1], memo[2]
        gates = {
            "comparison_operators": self._comparison_operators,
            "match_label_keys": self._match_label_keys,
        }
        hard = parse_pod_constraints(raw, pod.labels, DO_NOT_SCHEDULE, **gates)
        soft = parse_pod_constraints(raw, pod.labels, SCHEDULE_ANYWAY, **gates)
        self._memo = (pod, hard, soft)
        return hard, soft

    def constraints(self, pod: PodView, action: str) -> tuple[Constraint, ...]:
        """The pod's constraints of `action`, or the default ones if it has none at all
        (upstream's getConstraints / initPreScoreState). Raises ConstraintError."""
        raw = raw_constraints(pod)
        if raw:
            hard, soft = self._own_constraints(pod, raw)
            return hard if action == DO_NOT_SCHEDULE else soft
        return default_constraints_for(
            self._default_constraints,
            pod,
            action,
            self._cluster_objects(),
            self._comparison_operators,
        )

    def _hard_constraints(self, pod: PodView) -> tuple[Constraint, ...]:
        return self.constraints(pod, DO_NOT_SCHEDULE)

    # -- PreFilter / Filter ---------------------------------------------------------------

    def _table_for(self, nodes: Sequence[NodeInfo]) -> NodeTable | None:
        handle = self._handle
        return None if handle is None else node_table_for(handle.snapshot(), nodes)

    @staticmethod
    def _row_data(state: CycleState, pod: PodView, table: NodeTable) -> RowData:
        try:
            data = state.read(ROW_DATA_KEY)
        except KeyError:
            data = None
        if not isinstance(data, RowData) or data.pod is not pod or data.table is not table:
            data = RowData(pod, table)
            state.write(ROW_DATA_KEY, data)
        return data

    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        try:
            constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        except ConstraintError as err:
            return None, Status.error(
                f"get constraints from pod: obtaining pod's hard topology spread constraints: {err}"
            )
        if not constraints:
            return None, Status.skip()
        table = self._table_for(nodes)
        if table is not None:
            data = self._row_data(state, pod, table)
            s = filtering.pre_filter_state_rows(pod, constraints, table, data)
        else:
            s = filtering.pre_filter_state_reference(pod, constraints, nodes)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, Status.OK

    def pre_filter_extensions(self) -> PodTopologySpread:
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: PodView, pod_to_add: PodView, node_info: NodeInfo
    ) -> Status:
        s, status = _read_pre_filter_state(state)
        if s is None:
            return status
        filtering.update_with_pod(s, pod_to_add, pod_to_schedule, node_info.node, 1)
        return Status.OK

    def remove_pod(
        self,
        state: CycleState,
        pod_to_schedule: PodView,
        pod_to_remove: PodView,
        node_info: NodeInfo,
    ) -> Status:
        s, status = _read_pre_filter_state(state)
        if s is None:
            return status
        filtering.update_with_pod(s, pod_to_remove, pod_to_schedule, node_info.node, -1)
        return Status.OK

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        s, status = _read_pre_filter_state(state)
        if s is None:
            return status
        if not s.constraints:
            return Status.OK
        return filtering.filter_node(s, node)

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict | None:
        s, _ = _read_pre_filter_state(state)
        if s is None:
            return None  # the per-node Filter reports the error
        return filtering.filter_rows(s, table, rows)

    # -- PreScore / Score ------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]) -> Status:
        handle = self._handle
        snapshot = handle.snapshot() if handle is not None else None
        all_nodes: Sequence[NodeInfo] = snapshot.list() if snapshot is not None else nodes
        if not all_nodes:
            return Status.skip()
        has_own = bool(raw_constraints(pod))
        require_all = has_own or not self._system_defaulted
        try:
            constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        except ConstraintError as err:
            return Status.error(
                "calculating preScoreState: obtaining pod's soft topology spread constraints: "
                f"{err}"
            )
        if not constraints:
            return Status.skip()
        s: PreScoreState | None = None
        table = node_table_for(snapshot, all_nodes)
        if table is not None:
            rows = _rows_of(table, nodes)
            if rows is not None:
                data = self._row_data(state, pod, table)
                s = scoring.pre_score_state_rows(pod, constraints, table, rows, require_all, data)
        if s is None:
            s = scoring.pre_score_state_reference(pod, constraints, nodes, all_nodes, require_all)
        state.write(PRE_SCORE_STATE_KEY, s)
        return Status.OK

    def score(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> tuple[int, Status]:
        s, status = _read_pre_score_state(state)
        if s is None:
            return 0, status
        if node_info.node is None:
            return 0, Status.error("node not found")
        return scoring.score_node(s, pod, node_info), Status.OK

    def score_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> IntArray | None:
        s, _ = _read_pre_score_state(state)
        if s is None:
            return None
        return scoring.score_rows(s, pod, table, rows, self._row_data(state, pod, table))

    def score_extensions(self) -> PodTopologySpread:
        return self

    def normalize_score(self, state: CycleState, pod: PodView, scores: list[NodeScore]) -> Status:
        s, status = _read_pre_score_state(state)
        if s is None:
            return status
        scoring.normalize(s, scores)
        return Status.OK

    def normalize_rows(self, state: CycleState, pod: PodView, scores: IntArray) -> IntArray:
        s, _ = _read_pre_score_state(state)
        if s is None:
            return scores.copy()
        return scoring.normalize_rows(s, scores)

    # -- Queueing --------------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        pod_actions = (
            ActionType.ADD
            | ActionType.UPDATE_POD_LABEL
            | ActionType.UPDATE_POD_TOLERATIONS
            | ActionType.DELETE
        )
        node_actions = (
            ActionType.ADD
            | ActionType.DELETE
            | ActionType.UPDATE_NODE_LABEL
            | ActionType.UPDATE_NODE_TAINT
        )
        return (
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, pod_actions), self.schedulable_after_pod_change
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, node_actions), self.schedulable_after_node_change
            ),
        )

    def schedulable_after_pod_change(self, pod: Any, old: Any, new: Any) -> QueueingHint:
        return hints.schedulable_after_pod_change(self._hard_constraints, pod, old, new)

    def schedulable_after_node_change(self, pod: Any, old: Any, new: Any) -> QueueingHint:
        return hints.schedulable_after_node_change(self._hard_constraints, pod, old, new)


def _rows_of(table: NodeTable, nodes: Sequence[NodeInfo]) -> Rows | None:
    """The table rows of these NodeInfos, or None if one is not the table's."""
    row_of = table.row_of
    infos = table.infos
    rows = np.empty(len(nodes), dtype=np.intp)
    for position, info in enumerate(nodes):
        row = row_of.get(info.node_name)
        if row is None or infos[row] is not info:
            return None
        rows[position] = row
    return rows


def _read_pre_filter_state(state: CycleState) -> tuple[PreFilterState | None, Status]:
    try:
        value = state.read(PRE_FILTER_STATE_KEY)
    except KeyError:
        return None, Status.error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
    if not isinstance(value, PreFilterState):
        return None, Status.error(f"{value!r} convert to podtopologyspread.preFilterState error")
    return value, Status.OK


def _read_pre_score_state(state: CycleState) -> tuple[PreScoreState | None, Status]:
    try:
        value = state.read(PRE_SCORE_STATE_KEY)
    except KeyError:
        return None, Status.error(
            f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found'
        )
    if not isinstance(value, PreScoreState):
        return None, Status.error(f"{value!r}  convert to podtopologyspread.preScoreState error")
    return value, Status.OK
