"""The Score range check of both score paths finds the first score outside [0, 100], whatever
the array holds: int64 (read through its unsigned view) or another integer type."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scheduler.framework.interface import MAX_NODE_SCORE, MIN_NODE_SCORE
from scheduler.framework.runtime.scoring import _first_invalid_score

INT64 = st.integers(-(2**63), 2**63 - 1)
NEAR = st.integers(MIN_NODE_SCORE - 2, MAX_NODE_SCORE + 2)


@given(st.lists(st.one_of(NEAR, NEAR, INT64), max_size=40), st.sampled_from(["int64", "int32"]))
def test_the_first_out_of_range_score_is_found(scores: list[int], dtype: str) -> None:
    if dtype == "int32":
        scores = [max(-(2**31), min(2**31 - 1, score)) for score in scores]
    invalid = [s for s in scores if not MIN_NODE_SCORE <= s <= MAX_NODE_SCORE]
    expected = invalid[0] if invalid else None
    assert _first_invalid_score(np.array(scores, dtype=dtype)) == expected
