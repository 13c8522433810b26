"""Allocation scorers for NodeResourcesFit (integer arithmetic exactly as upstream's Go).

Upstream: plugins/noderesources/least_allocated.go, most_allocated.go,
requested_to_capacity_ratio.go and plugins/helper/shape_score.go. Go's integer division
truncates toward zero; `_div` does the same (Python's // floors).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from scheduler.cache.node_table import IntArray
from scheduler.framework.interface import MAX_NODE_SCORE
from scheduler.plugins.noderesources.args import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MOST_ALLOCATED,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)

# (requested per resource, allocatable per resource) → node score in [0, 100]
Scorer = Callable[[Sequence[int], Sequence[int]], int]


def _div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b > 0) else -quotient


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return _div((capacity - requested) * MAX_NODE_SCORE, capacity)


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    # A node over-committed by requests of pods that were bound without this check scores
    # as fully used rather than beyond.
    requested = min(requested, capacity)
    return _div(requested * MAX_NODE_SCORE, capacity)


def _weighted_average(
    per_resource: Callable[[int, int], int], resources: Sequence[ResourceSpec]
) -> Scorer:
    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for spec, req, alloc in zip(resources, requested, allocatable, strict=True):
            if alloc == 0:
                continue
            node_score += per_resource(req, alloc) * spec.weight
            weight_sum += spec.weight
        return _div(node_score, weight_sum) if weight_sum else 0

    return score


def broken_linear_function(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """Piecewise linear through (utilization, score) points; flat outside them."""

    def evaluate(p: int) -> int:
        for i, (utilization, score) in enumerate(shape):
            if p <= utilization:
                if i == 0:
                    return score
                prev_u, prev_s = shape[i - 1]
                return prev_s + _div((score - prev_s) * (p - prev_u), utilization - prev_u)
        return shape[-1][1]

    return evaluate


def requested_to_capacity_ratio_scorer(
    resources: Sequence[ResourceSpec], shape: Sequence[UtilizationShapePoint]
) -> Scorer:
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = broken_linear_function([(p.utilization, p.score * scale) for p in shape])

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return raw(100)
        return raw(_div(requested * 100, capacity))

    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for spec, req, alloc in zip(resources, requested, allocatable, strict=True):
            if alloc == 0:
                continue
            value = resource_score(req, alloc)
            if value > 0:
                node_score += value * spec.weight
                weight_sum += spec.weight
        if weight_sum == 0:
            return 0
        return _go_round(node_score / weight_sum)

    return score


def _go_round(value: float) -> int:
    """math.Round: halves away from zero (Python's round() rounds halves to even)."""
    whole = int(abs(value) + 0.5)
    return whole if value >= 0 else -whole


def scorer_for(strategy: ScoringStrategy) -> Scorer:
    if strategy.type == LEAST_ALLOCATED:
        return _weighted_average(least_requested_score, strategy.resources)
    if strategy.type == MOST_ALLOCATED:
        return _weighted_average(most_requested_score, strategy.resources)
    return requested_to_capacity_ratio_scorer(strategy.resources, strategy.shape)


# ---- vectorised scorers (NodeResourcesFit.score_rows): the same integer arithmetic over
# arrays of rows; the table guarantees values small enough for int64 and float64 to be exact.

# (requested per resource, allocatable per resource, weight per resource) → scores per row
RowScorer = Callable[[Sequence[IntArray], Sequence[IntArray], Sequence[int]], IntArray]


def div_rows(a: IntArray, b: IntArray) -> IntArray:
    """`_div` elementwise: integer division truncating toward zero (b must not be 0)."""
    quotient = np.abs(a) // np.abs(b)
    result: IntArray = np.where((a >= 0) == (b > 0), quotient, -quotient)
    return result


def _nonzero(values: IntArray) -> IntArray:
    """`values` with zeros replaced by 1, as a divisor where the zero rows are masked out."""
    result: IntArray = np.where(values == 0, 1, values)
    return result


def _least_rows(requested: IntArray, capacity: IntArray) -> IntArray:
    scores = div_rows((capacity - requested) * MAX_NODE_SCORE, _nonzero(capacity))
    result: IntArray = np.where((capacity == 0) | (requested > capacity), 0, scores)
    return result


def _most_rows(requested: IntArray, capacity: IntArray) -> IntArray:
    requested = np.minimum(requested, capacity)
    scores = div_rows(requested * MAX_NODE_SCORE, _nonzero(capacity))
    result: IntArray = np.where(capacity == 0, 0, scores)
    return result


def _least_rows_positive(requested: IntArray, capacity: IntArray) -> IntArray:
    """`_least_rows` where every capacity is positive: the numerator of each division kept is
    then not negative, so floor division is `_div`'s truncation."""
    result: IntArray = np.where(
        requested > capacity, 0, (capacity - requested) * MAX_NODE_SCORE // capacity
    )
    return result


def _weighted_average_rows(
    per_resource: Callable[[IntArray, IntArray], IntArray],
    per_resource_positive: Callable[[IntArray, IntArray], IntArray] | None = None,
) -> RowScorer:
    """`per_resource_positive`, when given, is `per_resource` for capacities that are all
    positive, giving scores that are never negative: the common case (every node has cpu and
    memory) then takes a few array operations instead of a few per resource and row mask."""

    def score(
        requested: Sequence[IntArray], allocatable: Sequence[IntArray], weights: Sequence[int]
    ) -> IntArray:
        if (
            per_resource_positive is not None
            and requested
            and min(weights) > 0
            and all((alloc > 0).all() for alloc in allocatable)
        ):
            total = per_resource_positive(requested[0], allocatable[0]) * weights[0]
            for req, alloc, weight in zip(requested[1:], allocatable[1:], weights[1:], strict=True):
                total += per_resource_positive(req, alloc) * weight
            fast: IntArray = total // sum(weights)
            return fast
        size = len(requested[0]) if requested else 0
        node_score = np.zeros(size, dtype=np.int64)
        weight_sum = np.zeros(size, dtype=np.int64)
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            counted = alloc != 0
            node_score += np.where(counted, per_resource(req, alloc) * weight, 0)
            weight_sum += np.where(counted, weight, 0)
        result: IntArray = np.where(weight_sum != 0, div_rows(node_score, _nonzero(weight_sum)), 0)
        return result

    return score


def _requested_to_capacity_ratio_rows(shape: Sequence[UtilizationShapePoint]) -> RowScorer | None:
    if not shape or any(not 0 <= point.utilization <= 100 for point in shape):
        return None
    scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = broken_linear_function([(p.utilization, p.score * scale) for p in shape])
    # Utilization is an integer percentage, so the shape is a lookup table; values at or below
    # 0 all map to the first point's score, as raw() does.
    lookup = np.array([raw(p) for p in range(101)], dtype=np.int64)

    def score(
        requested: Sequence[IntArray], allocatable: Sequence[IntArray], weights: Sequence[int]
    ) -> IntArray:
        size = len(requested[0]) if requested else 0
        node_score = np.zeros(size, dtype=np.int64)
        weight_sum = np.zeros(size, dtype=np.int64)
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            full = (alloc == 0) | (req > alloc)
            utilization = div_rows(req * 100, _nonzero(alloc))
            value = lookup[np.where(full, 100, np.clip(utilization, 0, 100))]
            counted = (alloc != 0) & (value > 0)
            node_score += np.where(counted, value * weight, 0)
            weight_sum += np.where(counted, weight, 0)
        average = node_score / _nonzero(weight_sum)
        result: IntArray = np.where(weight_sum != 0, np.floor(average + 0.5).astype(np.int64), 0)
        return result

    return score


def row_scorer_for(strategy: ScoringStrategy) -> RowScorer | None:
    """The vectorised twin of `scorer_for`, or None when the strategy has none."""
    if strategy.type == LEAST_ALLOCATED:
        return _weighted_average_rows(_least_rows, _least_rows_positive)
    if strategy.type == MOST_ALLOCATED:
        return _weighted_average_rows(_most_rows)
    return _requested_to_capacity_ratio_rows(strategy.shape)
