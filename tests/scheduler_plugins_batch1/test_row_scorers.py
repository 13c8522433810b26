"""The vectorised resource scorers give, row by row, what the per-node scorers give.

NodeResourcesFit's LeastAllocated and NodeResourcesBalancedAllocation each have a shortcut for
the common rows (every node has the resources, so no row is masked out): these properties pit
the shortcut and the general vectorised code against the per-node functions, with and without
nodes lacking a resource, on values up to the NodeTable's exact limit.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.plugins.balancedallocation import (
    balanced_resource_score,
    balanced_resource_score_rows,
)
from scheduler.plugins.noderesources.args import LEAST_ALLOCATED, ResourceSpec, ScoringStrategy
from scheduler.plugins.noderesources.scoring import row_scorer_for, scorer_for

# What the NodeTable lets through (EXACT_LIMIT), and small values where ties and the masks show.
amounts = st.one_of(st.integers(0, 64), st.integers(0, 2**40))


@st.composite
def resource_rows(draw: st.DrawFn, resources: int) -> tuple[list[list[int]], list[list[int]]]:
    """(requested per resource, allocatable per resource), one value per row; allocatable all
    positive about half the time (the shortcut), else anything."""
    size = draw(st.integers(1, 12))
    positive = draw(st.booleans())
    allocatable = [
        draw(st.lists(st.integers(1, 2**40) if positive else amounts, min_size=size, max_size=size))
        for _ in range(resources)
    ]
    requested = [draw(st.lists(amounts, min_size=size, max_size=size)) for _ in range(resources)]
    return requested, allocatable


def as_arrays(columns: list[list[int]]) -> list[np.ndarray]:
    return [np.array(column, dtype=np.int64) for column in columns]


@settings(max_examples=300, deadline=None)
@given(
    data=st.integers(1, 3).flatmap(resource_rows),
    weights=st.lists(st.integers(1, 100), min_size=3, max_size=3),
)
def test_least_allocated_rows_match_the_per_node_scorer(
    data: tuple[list[list[int]], list[list[int]]], weights: list[int]
) -> None:
    requested, allocatable = data
    names = ["cpu", "memory", "ephemeral-storage"][: len(requested)]
    specs = tuple(ResourceSpec(name, weight) for name, weight in zip(names, weights, strict=False))
    strategy = ScoringStrategy(type=LEAST_ALLOCATED, resources=specs)
    per_node, rows = scorer_for(strategy), row_scorer_for(strategy)
    assert rows is not None
    got = rows(as_arrays(requested), as_arrays(allocatable), [s.weight for s in specs]).tolist()
    expected = [
        per_node([column[row] for column in requested], [column[row] for column in allocatable])
        for row in range(len(requested[0]))
    ]
    assert got == expected


@settings(max_examples=300, deadline=None)
@given(data=st.integers(1, 3).flatmap(resource_rows))
def test_balanced_allocation_rows_match_the_per_node_score(
    data: tuple[list[list[int]], list[list[int]]],
) -> None:
    requested, allocatable = data
    size = len(requested[0])
    got = balanced_resource_score_rows(as_arrays(requested), as_arrays(allocatable), size)
    expected = [
        balanced_resource_score(
            [column[row] for column in requested], [column[row] for column in allocatable]
        )
        for row in range(size)
    ]
    assert got.tolist() == expected
