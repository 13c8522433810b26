"""PreScore, Score and NormalizeScore of PodTopologySpread.

Upstream: pkg/scheduler/framework/plugins/podtopologyspread/scoring.go (initPreScoreState,
PreScore, Score, NormalizeScore, topologyNormalizingWeight, scoreForCount). As upstream:

- with the system default constraints, nodes need not have every topology key (a node without
  a zone still gets hostname spreading); a missing key then reads as the value "";
- hostname constraints are counted per node in Score, over the node's own pods;
- a constraint's weight is log(number of its topology values among the filtered nodes + 2)
  (for hostname: the number of filtered nodes not ignored);
- NormalizeScore gives ignored nodes 0 and the others 100 * (max + min - score) / max.

`pre_score_state_rows` gives the reference's state from the NodeTable; `score_rows` and
`normalize_rows` score many rows with the same float64 operations in the same order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from scheduler.api.objects import PodView
from scheduler.cache.node_table import BoolArray, FloatArray, IntArray, NodeTable
from scheduler.cache.rows import Rows
from scheduler.framework.interface import MAX_NODE_SCORE, NodeScore
from scheduler.plugins.podtopologyspread.args import LABEL_HOSTNAME
from scheduler.plugins.podtopologyspread.constraints import (
    Constraint,
    count_pods_match_selector,
    node_labels_match_spread_constraints,
)
from scheduler.plugins.podtopologyspread.rows import RowData, keys_mask
from scheduler.plugins.podtopologyspread.state import PreScoreState, RowScoreData

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.cache.topology_index import TopologyColumn


def topology_normalizing_weight(size: int) -> float:
    return math.log(size + 2)


def score_for_count(count: int, max_skew: int, weight: float) -> float:
    return float(count) * weight + float(max_skew - 1)


def round_half_away(value: float) -> int:
    """Go's math.Round."""
    truncated = math.trunc(value)
    if abs(value - truncated) >= 0.5:
        truncated += 1 if value > 0 else -1
    return int(truncated)


def pre_score_state_reference(
    pod: PodView,
    constraints: tuple[Constraint, ...],
    filtered: Sequence[NodeInfo],
    all_nodes: Sequence[NodeInfo],
    require_all_topologies: bool,
) -> PreScoreState:
    """initPreScoreState + PreScore's count over all nodes, as upstream."""
    ignored: set[str] = set()
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for info in filtered:
        node = info.node
        if node is None:
            continue
        labels = node.labels
        if require_all_topologies and not node_labels_match_spread_constraints(labels, constraints):
            ignored.add(node.name)
            continue
        for index, c in enumerate(constraints):
            if c.topology_key == LABEL_HOSTNAME:
                continue
            counts[index].setdefault(labels.get(c.topology_key, ""), 0)
    weights: list[float] = []
    for index, c in enumerate(constraints):
        size = len(counts[index])
        if c.topology_key == LABEL_HOSTNAME:
            size = len(filtered) - len(ignored)
        weights.append(topology_normalizing_weight(size))
    for info in all_nodes:
        node = info.node
        if node is None:
            continue
        if require_all_topologies and not node_labels_match_spread_constraints(
            node.labels, constraints
        ):
            continue
        for index, c in enumerate(constraints):
            if not c.match_node_inclusion_policies(pod, node):
                continue
            value = node.labels.get(c.topology_key, "")
            domain = counts[index]
            if value not in domain:
                continue
            domain[value] += count_pods_match_selector(info.pods, c.selector, pod.namespace)
    return PreScoreState(constraints, frozenset(ignored), counts, weights)


def _effective_ids(column: TopologyColumn) -> tuple[IntArray, int]:
    """Value id per row with a missing key read as "" (its id, or len(values) if no node has
    the value ""), and the size of the id space."""
    size = len(column.values)
    empty = column.value_ids.get("", size)
    return np.where(column.ids >= 0, column.ids, empty), size + 1


def pre_score_state_rows(
    pod: PodView,
    constraints: tuple[Constraint, ...],
    table: NodeTable,
    filtered_rows: Rows,
    require_all_topologies: bool,
    data: RowData,
) -> PreScoreState:
    """The reference's state from the table (filtered nodes given as table rows)."""
    names = table.names
    keys = keys_mask(table, constraints)
    if require_all_topologies:
        ignored_rows: BoolArray = ~keys
        kept = filtered_rows[keys[filtered_rows]]
        base = keys
    else:
        ignored_rows = np.zeros(len(table), dtype=np.bool_)
        kept = filtered_rows
        base = np.ones(len(table), dtype=np.bool_)
    ignored = frozenset(names[row] for row in filtered_rows[ignored_rows[filtered_rows]].tolist())
    columns: list[TopologyColumn] = []
    sums_list: list[IntArray | None] = []
    per_row_list: list[IntArray | None] = []
    counts: list[dict[str, int]] = []
    weights: list[float] = []
    for c in constraints:
        column = table.topology(c.topology_key)
        columns.append(column)
        if c.topology_key == LABEL_HOSTNAME:
            sums_list.append(None)
            per_row_list.append(data.row_counts(c.selector))
            counts.append({})
            weights.append(topology_normalizing_weight(len(filtered_rows) - len(ignored)))
            continue
        per_row_list.append(None)
        ids, size = _effective_ids(column)
        present = np.bincount(ids[kept], minlength=size) > 0
        eligible = data.policy_mask(c, base)
        per_row = data.row_counts(c.selector)
        sums = np.bincount(ids[eligible], weights=per_row[eligible], minlength=size)
        int_sums = sums.astype(np.int64)
        sums_list.append(int_sums)
        values = column.values
        counts.append(
            {
                values[v] if v < len(values) else "": int(int_sums[v])
                for v in np.flatnonzero(present).tolist()
            }
        )
        weights.append(topology_normalizing_weight(int(present.sum())))
    rows = RowScoreData(columns, sums_list, per_row_list, ignored_rows)
    return PreScoreState(constraints, ignored, counts, weights, rows)


def score_node(s: PreScoreState, pod: PodView, info: NodeInfo) -> int:
    """Upstream's Score for one node (the node must be one PreScore saw)."""
    node = info.node
    assert node is not None
    if node.name in s.ignored_nodes:
        return 0
    score = 0.0
    labels = node.labels
    for index, c in enumerate(s.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            continue
        if c.topology_key == LABEL_HOSTNAME:
            count = count_pods_match_selector(info.pods, c.selector, pod.namespace)
        else:
            count = s.topology_value_to_pod_counts[index].get(value, 0)
        score += score_for_count(count, c.max_skew, s.topology_normalizing_weight[index])
    return round_half_away(score)


def score_rows(
    s: PreScoreState, pod: PodView, table: NodeTable, rows: Rows, data: RowData
) -> IntArray:
    """Score for many rows (same float64 operations, in the same order, as score_node)."""
    fast = s.rows
    scores: FloatArray = np.zeros(len(rows), dtype=np.float64)
    for index, c in enumerate(s.constraints):
        column = table.topology(c.topology_key)
        ids = column.ids[rows]
        has = ids >= 0
        weight = s.topology_normalizing_weight[index]
        if c.topology_key == LABEL_HOSTNAME:
            per_row = fast.per_row[index] if fast is not None else None
            if per_row is None:
                per_row = data.row_counts(c.selector)
            counts = per_row[rows]
        else:
            sums = fast.sums[index] if fast is not None and fast.columns[index] is column else None
            if sums is None:
                domain = s.topology_value_to_pod_counts[index]
                sums = np.fromiter(
                    (domain.get(v, 0) for v in column.values),
                    dtype=np.int64,
                    count=len(column.values),
                )
            counts = sums[np.where(has, ids, 0)] if len(sums) else np.zeros(len(rows), np.int64)
        term = counts.astype(np.float64) * weight + float(c.max_skew - 1)
        scores = np.where(has, scores + term, scores)
    ignored = _ignored_rows(s, table, rows)
    truncated = np.trunc(scores)
    rounded = np.where(np.abs(scores - truncated) >= 0.5, truncated + np.sign(scores), truncated)
    result: IntArray = rounded.astype(np.int64)
    result[ignored] = 0
    s.last_row_scores = (result, ignored)
    return result


def _ignored_rows(s: PreScoreState, table: NodeTable, rows: Rows) -> BoolArray:
    if s.rows is not None:
        return s.rows.ignored_rows[rows]
    if not s.ignored_nodes:
        return np.zeros(len(rows), dtype=np.bool_)
    names = table.names
    return np.fromiter(
        (names[row] in s.ignored_nodes for row in rows.tolist()), dtype=np.bool_, count=len(rows)
    )


def normalize(s: PreScoreState, scores: list[NodeScore]) -> None:
    """Upstream's NormalizeScore, in place."""
    min_score = 2**63 - 1
    max_score = 0
    valid: list[bool] = []
    for entry in scores:
        is_valid = entry.name not in s.ignored_nodes
        valid.append(is_valid)
        if is_valid:
            min_score = min(min_score, entry.score)
            max_score = max(max_score, entry.score)
    for entry, is_valid in zip(scores, valid, strict=True):
        if not is_valid:
            entry.score = 0
        elif max_score == 0:
            entry.score = MAX_NODE_SCORE
        else:
            entry.score = MAX_NODE_SCORE * (max_score + min_score - entry.score) // max_score


def normalize_rows(s: PreScoreState, scores: IntArray) -> IntArray:
    """NormalizeScore over the array score_rows returned (its ignored rows remembered)."""
    last = s.last_row_scores
    ignored: BoolArray
    if last is not None and last[0] is scores:
        ignored = last[1]
    else:
        ignored = np.zeros(len(scores), dtype=np.bool_)
    valid = scores[~ignored]
    out: IntArray = np.zeros(len(scores), dtype=np.int64)
    if not len(valid):
        return out
    max_score = max(int(valid.max()), 0)
    min_score = int(valid.min())
    if max_score == 0:
        out[~ignored] = MAX_NODE_SCORE
    else:
        out[~ignored] = MAX_NODE_SCORE * (max_score + min_score - valid) // max_score
    return out
