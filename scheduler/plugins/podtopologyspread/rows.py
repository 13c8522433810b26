"""Per-row masks and counts over a NodeTable for the fast paths (same answers as the per-node
helpers in constraints.py).

- `keys_mask`: rows whose node has every constraint's topology key.
- `affinity_mask`: rows whose node matches the pod's nodeSelector and required node affinity
  (nodeaffinity.required_affinity_matches), from topology columns: no Python loop over rows.
- `tolerated_mask`: rows without an untolerated NoSchedule / NoExecute taint; only rows that
  carry such a taint are checked one by one.
- `row_counts`: matching pods per row (countPodsMatchSelector) from the table's pod groups.

`RowData` memoises them for one pod on one table; it lives in the CycleState, so PreFilter and
PreScore of one attempt share it and nothing outlives the attempt.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from apimachinery.labels import DOES_NOT_EXIST, EXISTS, IN, NOT_IN, LabelSelector, Requirement
from scheduler.api.objects import PodView
from scheduler.api.selectors import NODE_NAME_FIELD, FieldRequirement, NodeSelectorTerm
from scheduler.cache.node_table import BoolArray, IntArray, NodeTable
from scheduler.plugins.podtopologyspread.constraints import Constraint, untolerated

ROW_DATA_KEY = "PodTopologySpread/rows"


def keys_mask(table: NodeTable, constraints: Sequence[Constraint]) -> BoolArray:
    mask: BoolArray = np.ones(len(table), dtype=np.bool_)
    for key in {c.topology_key for c in constraints}:
        mask &= table.topology(key).ids >= 0
    return mask


def _requirement_mask(table: NodeTable, requirement: Requirement) -> BoolArray:
    column = table.topology(requirement.key)
    ids = column.ids
    op = requirement.operator
    if op in (IN, NOT_IN):
        wanted = [column.value_ids[v] for v in requirement.values if v in column.value_ids]
        found: BoolArray = np.isin(ids, wanted) if wanted else np.zeros(len(table), dtype=np.bool_)
        return found if op == IN else ~found
    if op == EXISTS:
        return ids >= 0
    if op == DOES_NOT_EXIST:
        return ids < 0
    # Gt / Lt: decide per distinct value, then gather.
    per_value = np.fromiter(
        (requirement.matches({requirement.key: v}) for v in column.values),
        dtype=np.bool_,
        count=len(column.values),
    )
    out: BoolArray = np.zeros(len(table), dtype=np.bool_)
    has = ids >= 0
    out[has] = per_value[ids[has]]
    return out


def _field_mask(table: NodeTable, requirement: FieldRequirement) -> BoolArray:
    if requirement.key != NODE_NAME_FIELD:
        # Other fields read as "" (FieldRequirement.matches).
        constant = requirement.matches("")
        return np.full(len(table), constant, dtype=np.bool_)
    equal: BoolArray = np.zeros(len(table), dtype=np.bool_)
    row = table.row_of.get(requirement.value)
    if row is not None:
        equal[row] = True
    return equal if requirement.operator == IN else ~equal


def _term_mask(table: NodeTable, term: NodeSelectorTerm) -> BoolArray:
    mask: BoolArray = np.full(len(table), term.parse_error is None, dtype=np.bool_)
    if term.parse_error is not None:
        return mask
    for requirement in term.label_requirements:
        mask &= _requirement_mask(table, requirement)
    for field_requirement in term.field_requirements:
        mask &= _field_mask(table, field_requirement)
    return mask


def affinity_mask(table: NodeTable, pod: PodView) -> BoolArray | None:
    """Rows matching the pod's required node affinity; None when every row does."""
    required = pod.required_node_affinity
    if not pod.node_selector and required is None:
        return None
    mask: BoolArray = np.ones(len(table), dtype=np.bool_)
    for key, value in pod.node_selector.items():
        column = table.topology(key)
        value_id = column.value_ids.get(value)
        if value_id is None:
            return np.zeros(len(table), dtype=np.bool_)
        mask &= column.ids == value_id
    if required is not None:
        any_term: BoolArray = np.zeros(len(table), dtype=np.bool_)
        for term in required.terms:
            any_term |= _term_mask(table, term)
        mask &= any_term
    return mask


def tolerated_mask(table: NodeTable, pod: PodView, comparison_operators: bool) -> BoolArray:
    """Rows without a NoSchedule / NoExecute taint the pod does not tolerate."""
    tainted = table.no_schedule_taints
    ok: BoolArray = ~tainted
    if pod.tolerations:
        infos = table.infos
        for row in np.flatnonzero(tainted).tolist():
            node = infos[row].node
            ok[row] = node is not None and not untolerated(pod, node, comparison_operators)
    return ok


class RowData:
    """Masks and counts of one pod over one table, computed on first use."""

    __slots__ = ("_affinity", "_affinity_done", "_counts", "_tolerated", "pod", "table")

    def __init__(self, pod: PodView, table: NodeTable) -> None:
        self.pod = pod
        self.table = table
        self._affinity: BoolArray | None = None
        self._affinity_done = False
        self._tolerated: BoolArray | None = None
        self._counts: dict[LabelSelector, IntArray] = {}

    def affinity(self) -> BoolArray | None:
        if not self._affinity_done:
            self._affinity = affinity_mask(self.table, self.pod)
            self._affinity_done = True
        return self._affinity

    def tolerated(self, comparison_operators: bool) -> BoolArray:
        # One plugin's constraints all carry its gate's value, so one mask serves them.
        if self._tolerated is None:
            self._tolerated = tolerated_mask(self.table, self.pod, comparison_operators)
        return self._tolerated

    def policy_mask(self, constraint: Constraint, base: BoolArray) -> BoolArray:
        """`base` narrowed by the constraint's node inclusion policies."""
        mask = base
        if constraint.node_affinity_policy == "Honor":
            affinity = self.affinity()
            if affinity is not None:
                mask = mask & affinity
        if constraint.node_taints_policy == "Honor":
            mask = mask & self.tolerated(constraint.comparison_operators)
        return mask

    def row_counts(self, selector: LabelSelector) -> IntArray:
        """Matching pods of the pod's namespace per row (terminating pods skipped)."""
        counts = self._counts.get(selector)
        if counts is None:
            if selector.is_everything() or selector.matches_nothing:
                counts = np.zeros(len(self.table), dtype=np.int64)
            else:
                counts = self.table.pod_groups().counts(
                    frozenset((self.pod.namespace,)), selector, include_terminating=False
                )
            self._counts[selector] = counts
        return counts
