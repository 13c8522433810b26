"""InterPodAffinity PreScore / Score / NormalizeScore.

Upstream: pkg/scheduler/framework/plugins/interpodaffinity/scoring.go (processExistingPod,
PreScore, Score, NormalizeScore). The topology score adds, per (topology key, value):
- the incoming pod's preferred affinity weights (minus its preferred anti-affinity weights)
  for each existing pod its terms match, at that pod's node's value;
- for each existing pod with affinity terms: hardPodAffinityWeight per required affinity term
  the incoming pod matches, plus its preferred affinity weights (minus preferred
  anti-affinity weights) for terms the incoming pod matches.

The reference path walks pods as upstream; the fast path gets the incoming pod's part from the
NodeTable (matching pods per row, summed per topology value) and walks only pods with
affinity for the existing pods' part, matching each distinct term against the incoming pod
once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from scheduler.api.podaffinity import AffinityTerm, WeightedAffinityTerm
from scheduler.framework.interface import MAX_NODE_SCORE, NodeScore
from scheduler.plugins.interpodaffinity.state import ScoreMap, add_score
from scheduler.plugins.interpodaffinity.terms import TermVerdicts, term_namespaces

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.cache.node_table import IntArray, NodeTable
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


def topology_score_fast(
    table: NodeTable | None,
    nodes_with_affinity: Sequence[NodeInfo],
    affinity: Sequence[WeightedAffinityTerm],
    anti_affinity: Sequence[WeightedAffinityTerm],
    hard_weight: int,
    matches: TermVerdicts,
) -> ScoreMap:
    """topology_score_reference with the incoming pod's part from the NodeTable (which may
    be None when the incoming pod has no preferred terms)."""
    scores: ScoreMap = {}
    if table is not None and (affinity or anti_affinity):
        groups = table.pod_groups()
        for weighted, sign in [(t, 1) for t in affinity] + [(t, -1) for t in anti_affinity]:
            term = weighted.term
            per_row = groups.counts(term_namespaces(term), term.selector, include_terminating=True)
            if not per_row.any():
                continue
            column = table.topology(term.topology_key)
            sums = column.sums(per_row)
            amount = sign * weighted.weight
            values = column.values
            for value_id in np.flatnonzero(sums).tolist():
                add_score(scores, term.topology_key, values[value_id], amount * int(sums[value_id]))
    for info in nodes_with_affinity:
        node = info.node
        if node is None or not node.labels:
            continue
        labels = node.labels
        for existing in info.pods_with_affinity:
            add_existing_pod_terms(scores, existing, labels, hard_weight, matches)
    return scores


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
