"""rows.py's helpers of the row path: RowNodes reads as the list of the rows' NodeInfos would,
in every way a caller reads it; the shared all-pass verdict is recognised and cannot change."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.cache.node_info import NodeInfo
from scheduler.cache.rows import RowNodes, all_rows_pass, passes_all
from scheduler.testing.builders import make_node


def _infos(count: int) -> list[NodeInfo]:
    return [NodeInfo(make_node(f"n{i}", {"cpu": "1"})) for i in range(count)]


INFOS = _infos(12)


@given(
    st.lists(st.integers(0, len(INFOS) - 1), max_size=12),
    st.integers(-14, 14),
    st.slices(14),
)
def test_row_nodes_reads_as_the_list_of_its_rows(rows: list[int], index: int, part: slice) -> None:
    listed = [INFOS[row] for row in rows]
    lazy = RowNodes(INFOS, np.array(rows, dtype=np.intp))
    assert len(lazy) == len(listed)
    if -len(listed) <= index < len(listed):
        assert lazy[index] is listed[index]
    assert list(lazy[part]) == listed[part]
    assert list(lazy) == listed
    if -len(listed) <= index < len(listed):  # once listed, indexing reads the list
        assert lazy[index] is listed[index]
    assert bool(lazy) == bool(listed)


@given(st.lists(st.booleans(), max_size=20))
def test_passes_all_reads_any_verdict_as_all_would(passed: list[bool]) -> None:
    assert passes_all(np.array(passed, dtype=np.bool_)) == all(passed)


def test_the_shared_all_pass_verdict_is_recognised_and_read_only() -> None:
    shared = all_rows_pass(7)
    assert all_rows_pass(7) is shared and passes_all(shared) and len(shared) == 7
    with pytest.raises(ValueError):
        shared[0] = False
