"""InterPodAffinity PreScore / Score / NormalizeScore.

Upstream: pkg/scheduler/framework/plugins/interpodaffinity/scoring.go (processExistingPod,
PreScore, Score, NormalizeScore). The topology score adds, per (topology key, value):
- the incoming pod's preferred affinity weights (minus its preferred anti-affinity weights)
  for each existing pod its terms match, at that pod's node's value;
- for each existing pod with affinity terms: hardPodAffinityWeight per required affinity term
  the incoming pod matches, plus its preferred affinity weights (minus preferred
  anti-affinity weights) for terms the incoming pod matches.

The reference path walks pods as upstream; the fast path gets the incoming pod's part from the
NodeTable (matching pods per row, summed per topology value) and the existing pods' part from
its TermGroups (each distinct term matched against the incoming pod once).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from scheduler.api.podaffinity import AffinityTerm, WeightedAffinityTerm
from scheduler.cache.topology_index import (
    PREFERRED_AFFINITY,
    PREFERRED_ANTI_AFFINITY,
    REQUIRED_AFFINITY,
)
from scheduler.framework.interface import MAX_NODE_SCORE, NodeScore
from scheduler.plugins.interpodaffinity.state import ScoreMap, add_score
from scheduler.plugins.interpodaffinity.terms import TermVerdicts, term_namespaces

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.cache.node_table import BoolArray, IntArray, NodeTable
    from scheduler.cache.rows import Rows


def add_existing_pod_terms(
    scores: ScoreMap,
    existing: PodView,
    labels: Mapping[str, str],
    hard_weight: int,
    matches: TermVerdicts,
) -> None:
    """The existing pod's own terms, matched against the incoming pod."""
    info = existing.pod_affinity
    if hard_weight > 0:
        for term in info.required_affinity:
            _add_if(scores, term, hard_weight, labels, matches)
    for weighted in info.preferred_affinity:
        _add_if(scores, weighted.term, weighted.weight, labels, matches)
    for weighted in info.preferred_anti_affinity:
        _add_if(scores, weighted.term, -weighted.weight, labels, matches)


def _add_if(
    scores: ScoreMap,
    term: AffinityTerm,
    amount: int,
    labels: Mapping[str, str],
    matches: TermVerdicts,
) -> None:
    if matches(term):
        value = labels.get(term.topology_key)
        if value is not None:
            add_score(scores, term.topology_key, value, amount)


def add_incoming_terms_for_pod(
    scores: ScoreMap,
    affinity: Sequence[WeightedAffinityTerm],
    anti_affinity: Sequence[WeightedAffinityTerm],
    existing: PodView,
    labels: Mapping[str, str],
) -> None:
    """The incoming pod's preferred terms (namespaces merged), matched against one pod."""
    for weighted in affinity:
        term = weighted.term
        if term.matches(existing, None):
            value = labels.get(term.topology_key)
            if value is not None:
                add_score(scores, term.topology_key, value, weighted.weight)
    for weighted in anti_affinity:
        term = weighted.term
        if term.matches(existing, None):
            value = labels.get(term.topology_key)
            if value is not None:
                add_score(scores, term.topology_key, value, -weighted.weight)


def topology_score_reference(
    nodes: Sequence[NodeInfo],
    has_constraints: bool,
    affinity: Sequence[WeightedAffinityTerm],
    anti_affinity: Sequence[WeightedAffinityTerm],
    hard_weight: int,
    matches: TermVerdicts,
) -> ScoreMap:
    """Upstream's PreScore loop: every pod of `nodes` when the incoming pod has preferred
    terms, else only pods with affinity."""
    scores: ScoreMap = {}
    for info in nodes:
        node = info.node
        if node is None or not node.labels:
            continue
        labels = node.labels
        for existing in info.pods if has_constraints else info.pods_with_affinity:
            add_incoming_terms_for_pod(scores, affinity, anti_affinity, existing, labels)
            add_existing_pod_terms(scores, existing, labels, hard_weight, matches)
    return scores


class ScoreTally:  # a state.PendingScores
    """A ScoreMap kept as arrays over each topology key's value ids: `scores` holds the
    summed weights and `present` which values got any entry (upstream's map has an entry,
    possibly 0, wherever a matching term contributed). The map is made only when read."""

    __slots__ = ("present", "scores", "table")

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self.scores: dict[str, IntArray] = {}
        self.present: dict[str, BoolArray] = {}

    def add(self, key: str, per_row: IntArray, amount: int) -> None:
        """`amount` per pod counted in `per_row`, at each row's value of `key`."""
        sums = self.table.topology(key).sums(per_row)
        if key in self.scores:
            self.scores[key] = self.scores[key] + amount * sums
            self.present[key] = self.present[key] | (sums > 0)
        else:
            self.scores[key] = amount * sums
            self.present[key] = sums > 0

    def any(self) -> bool:
        return any(present.any() for present in self.present.values())

    def score_map(self) -> ScoreMap:
        out: ScoreMap = {}
        for key, present in self.present.items():
            ids = np.flatnonzero(present).tolist()
            if ids:
                values = self.table.topology(key).values
                scores = self.scores[key][ids].tolist()
                out[key] = dict(zip([values[i] for i in ids], scores, strict=True))
        return out

    def score_rows(self, rows: Rows) -> IntArray:
        total: IntArray = np.zeros(len(rows), dtype=np.int64)
        for key, scores in self.scores.items():
            column = self.table.topology(key)
            per_value: IntArray = np.zeros(len(column.values) + 1, dtype=np.int64)
            per_value[: len(scores)] = scores  # the extra last 0 is for rows lacking the key
            total += per_value[column.ids[rows]]
        return total


def topology_score_fast(
    table: NodeTable,
    affinity: Sequence[WeightedAffinityTerm],
    anti_affinity: Sequence[WeightedAffinityTerm],
    hard_weight: int,
    matches: TermVerdicts,
) -> ScoreTally:
    """topology_score_reference over the NodeTable (the same map, as a ScoreTally)."""
    scores = ScoreTally(table)
    if affinity or anti_affinity:
        groups = table.pod_groups()
        for weighted, sign in [(t, 1) for t in affinity] + [(t, -1) for t in anti_affinity]:
            term = weighted.term
            per_row = groups.counts(term_namespaces(term), term.selector, include_terminating=True)
            if per_row.any():
                scores.add(term.topology_key, per_row, sign * weighted.weight)
    _add_existing_terms_fast(scores, table, hard_weight, matches)
    return scores


def _add_existing_terms_fast(
    scores: ScoreTally, table: NodeTable, hard_weight: int, matches: TermVerdicts
) -> None:
    """add_existing_pod_terms for every pod with affinity, from the table's TermGroups."""
    groups = table.term_groups()
    kinds = [(PREFERRED_AFFINITY, 1), (PREFERRED_ANTI_AFFINITY, -1)]
    if hard_weight > 0:
        kinds.insert(0, (REQUIRED_AFFINITY, 1))
    for kind, sign in kinds:
        for term, weight, per_row in groups.of_kind(kind):
            if not matches(term):
                continue
            amount = hard_weight if kind == REQUIRED_AFFINITY else sign * weight
            scores.add(term.topology_key, per_row, amount)


def score_rows(scores: ScoreMap, table: NodeTable, rows: Rows) -> IntArray:
    """Score (the sum over topology keys of the node's value's score) for each row."""
    total: IntArray = np.zeros(len(rows), dtype=np.int64)
    for key, values in scores.items():
        column = table.topology(key)
        per_value: IntArray = np.zeros(len(column.values) + 1, dtype=np.int64)
        value_ids = column.value_ids
        for value, score in values.items():
            value_id = value_ids.get(value)
            if value_id is not None:
                per_value[value_id] = score
        total += per_value[column.ids[rows]]
    return total


def normalize(scores: list[NodeScore]) -> None:
    """Upstream's NormalizeScore: min-max scaling to [0, MaxNodeScore]; all 0 when equal."""
    if not scores:
        return
    values = [s.score for s in scores]
    low, high = min(values), max(values)
    spread = high - low
    for node_score in scores:
        scaled = 0.0
        if spread > 0:
            scaled = float(MAX_NODE_SCORE) * (float(node_score.score - low) / float(spread))
        node_score.score = int(scaled)


def normalize_array(scores: IntArray) -> IntArray:
    """normalize over an array (the same float64 arithmetic, truncated)."""
    if not len(scores):
        return scores.copy()
    low = int(scores.min())
    spread = int(scores.max()) - low
    if spread <= 0:
        return np.zeros(len(scores), dtype=np.int64)
    scaled = float(MAX_NODE_SCORE) * ((scores - low).astype(np.float64) / float(spread))
    return scaled.astype(np.int64)
