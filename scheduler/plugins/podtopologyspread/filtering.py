"""PreFilter state, Filter and the PreFilter extensions of PodTopologySpread.

Upstream: pkg/scheduler/framework/plugins/podtopologyspread/filtering.go (calPreFilterState,
Filter, updateWithPod). `pre_filter_state_reference` is upstream's walk over every pod of every
node; `pre_filter_state_rows` gives the same state from the NodeTable's per-row matching-pod
counts and topology columns (one bincount per constraint). `filter_rows` answers Filter for many
rows with array gathers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from scheduler.api.objects import NodeView, PodView
from scheduler.cache.node_table import NodeTable
from scheduler.cache.rows import Rows, RowVerdict, verdict_with_status
from scheduler.framework.status import Status
from scheduler.plugins.podtopologyspread.constraints import (
    Constraint,
    count_pods_match_selector,
    node_labels_match_spread_constraints,
)
from scheduler.plugins.podtopologyspread.rows import RowData, keys_mask
from scheduler.plugins.podtopologyspread.state import PreFilterState, ValueArrays

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

CONSTRAINTS_NOT_MATCH = Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
NODE_LABEL_NOT_MATCH = Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)


def _self_match(pod: PodView, constraints: Sequence[Constraint]) -> tuple[int, ...]:
    return tuple(1 if c.selector.matches(pod.labels) else 0 for c in constraints)


def pre_filter_state_reference(
    pod: PodView, constraints: tuple[Constraint, ...], nodes: Sequence[NodeInfo]
) -> PreFilterState:
    """calPreFilterState as upstream computes it, node by node and pod by pod."""
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for info in nodes:
        node = info.node
        if node is None or not node_labels_match_spread_constraints(node.labels, constraints):
            continue
        for index, c in enumerate(constraints):
            if not c.match_node_inclusion_policies(pod, node):
                continue
            value = node.labels[c.topology_key]
            count = count_pods_match_selector(info.pods, c.selector, pod.namespace)
            domain = counts[index]
            domain[value] = domain.get(value, 0) + count
    return PreFilterState(constraints, _self_match(pod, constraints), counts=counts)


def pre_filter_state_rows(
    pod: PodView, constraints: tuple[Constraint, ...], table: NodeTable, data: RowData
) -> PreFilterState:
    """The same state from the table: per-row counts summed per topology value id."""
    base = keys_mask(table, constraints)
    arrays: list[ValueArrays] = []
    for c in constraints:
        column = table.topology(c.topology_key)
        eligible = data.policy_mask(c, base)
        ids = column.ids[eligible]
        size = len(column.values)
        present = np.bincount(ids, minlength=size) > 0
        per_row = data.row_counts(c.selector)
        sums = np.bincount(ids, weights=per_row[eligible], minlength=size).astype(np.int64)
        arrays.append(ValueArrays(column, sums, present))
    return PreFilterState(constraints, _self_match(pod, constraints), arrays=arrays)


def filter_node(s: PreFilterState, node: NodeView) -> Status:
    """Upstream's Filter for one node."""
    labels = node.labels
    for index, c in enumerate(s.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return NODE_LABEL_NOT_MATCH
        skew = s.match_num(index, value) + s.self_match[index] - s.min_match_num(index)
        if skew > c.max_skew:
            return CONSTRAINTS_NOT_MATCH
    return Status.OK


def filter_rows(s: PreFilterState, table: NodeTable, rows: Rows) -> RowVerdict:
    """Filter for many rows: per constraint, gather each row's domain count and compare."""
    # 0: passes so far, 1: missing a topology label, 2: skew too large.
    codes = np.zeros(len(rows), dtype=np.int8)
    for index, c in enumerate(s.constraints):
        column = table.topology(c.topology_key)
        ids = column.ids[rows]
        missing = ids < 0
        sums = s.counts_by_value_id(index, column)
        if len(sums):
            matched = sums[np.where(missing, 0, ids)]
        else:
            matched = np.zeros(len(rows), dtype=np.int64)
        limit = c.max_skew + s.min_match_num(index) - s.self_match[index]
        too_skewed = ~missing & (matched > limit)
        undecided = codes == 0
        codes[undecided & missing] = 1
        codes[undecided & too_skewed] = 2
    passed = codes == 0
    if passed.all():
        return verdict_with_status(passed, CONSTRAINTS_NOT_MATCH)
    by_row = np.zeros(len(table), dtype=np.int8)
    by_row[rows] = codes

    def reject(row: int) -> Status:
        return NODE_LABEL_NOT_MATCH if by_row[row] == 1 else CONSTRAINTS_NOT_MATCH

    return RowVerdict(passed, reject)


def update_with_pod(
    s: PreFilterState, updated: PodView, preemptor: PodView, node: NodeView | None, delta: int
) -> None:
    """updateWithPod: AddPod (delta 1) / RemovePod (delta -1) during preemption."""
    if updated.namespace != preemptor.namespace or node is None:
        return
    if not node_labels_match_spread_constraints(node.labels, s.constraints):
        return
    for index, c in enumerate(s.constraints):
        if not c.selector.matches(updated.labels):
            continue
        if not c.match_node_inclusion_policies(preemptor, node):
            continue
        s.add(index, node.labels[c.topology_key], delta)
