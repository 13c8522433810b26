"""Scores kept across cycles (RowMemo) are the scores computed afresh, whatever changed between
the cycles: pods added to and removed from nodes, nodes resized, other pods scored meanwhile.

NodeResourcesFit (each scoring strategy) and NodeResourcesBalancedAllocation keep their row
scores in a RowMemo; each is pitted against a fresh instance of itself (no memo yet, so the
array path over all rows) and against its per-node `score`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cache import row_memo
from scheduler.cache.cache import Cache
from scheduler.cache.node_table import NodeTable
from scheduler.cache.row_memo import MAX_ROWS_ONE_BY_ONE, RowMemo
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.interface import CycleState
from scheduler.plugins.balancedallocation import NodeResourcesBalancedAllocation
from scheduler.plugins.noderesources.args import decode_node_resources_fit_args
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.testing.builders import make_node, make_pod

NODES = 8
PODS = 10
SHAPES = ({"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "256Mi"}, {"cpu": "100m"})
STRATEGIES: tuple[dict[str, Any], ...] = (
    {"type": "LeastAllocated"},
    {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 3}, {"name": "memory"}]},
    {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
        },
    },
)


def _fit(strategy: dict[str, Any]) -> Callable[[], Any]:
    return lambda: NodeResourcesFit(decode_node_resources_fit_args({"scoringStrategy": strategy}))


def _plugins() -> list[Callable[[], Any]]:
    return [*map(_fit, STRATEGIES), NodeResourcesBalancedAllocation]


operation = st.one_of(
    st.tuples(
        st.just("add_pod"),
        st.integers(0, PODS - 1),
        st.integers(0, NODES - 1),
        st.sampled_from(SHAPES),
    ),
    st.tuples(st.just("remove_pod"), st.integers(0, PODS - 1)),
    st.tuples(st.just("resize_node"), st.integers(0, NODES - 1), st.sampled_from(["2", "4", "8"])),
    st.tuples(
        st.just("score"),
        st.sampled_from(SHAPES),
        st.lists(st.booleans(), min_size=NODES, max_size=NODES),
    ),
)


@settings(max_examples=120, deadline=None)
@given(st.lists(operation, min_size=1, max_size=50))
def test_kept_scores_are_the_scores_computed_afresh(ops: list[tuple[Any, ...]]) -> None:
    cache, snapshot = Cache(), Snapshot()
    nodes = {}
    for index in range(NODES):
        nodes[index] = make_node(f"n{index}", {"cpu": "4", "memory": "8Gi", "pods": "110"})
        cache.add_node(nodes[index])
    pods: dict[int, Any] = {}
    factories = _plugins()
    kept = [factory() for factory in factories]
    for version, op in enumerate(ops, start=2):
        if op[0] == "add_pod" and op[1] not in pods:
            pods[op[1]] = make_pod(
                f"p{op[1]}", uid=f"u{op[1]}", requests=op[3], node_name=f"n{op[2]}"
            )
            cache.add_pod(pods[op[1]])
        elif op[0] == "remove_pod" and op[1] in pods:
            cache.remove_pod(pods.pop(op[1]))
        elif op[0] == "resize_node":
            new = make_node(
                f"n{op[1]}",
                {"cpu": op[2], "memory": "8Gi", "pods": "110"},
                resource_version=str(version),
            )
            cache.update_node(nodes[op[1]], new)
            nodes[op[1]] = new
        elif op[0] == "score":
            cache.update_snapshot(snapshot)
            table = snapshot.node_table()
            rows = np.flatnonzero(np.array(op[2])).astype(np.intp)
            pod = make_pod("incoming", requests=op[1])
            for plugin, factory in zip(kept, factories, strict=True):
                got = plugin.score_rows(CycleState(), pod, table, rows)
                fresh = factory().score_rows(CycleState(), pod, table, rows)
                per_node = [plugin.score(CycleState(), pod, table.infos[r])[0] for r in rows]
                assert got is not None and fresh is not None
                assert got.tolist() == fresh.tolist() == per_node


def _table(count: int) -> NodeTable:
    cache, snapshot = Cache(), Snapshot()
    for index in range(count):
        cache.add_node(make_node(f"n{index}", {"cpu": "4"}))
    cache.update_snapshot(snapshot)
    return snapshot.node_table()


def test_a_key_is_kept_from_its_second_sighting_and_only_moved_rows_are_computed() -> None:
    table = _table(40)
    memo = RowMemo()
    one_calls: list[int] = []
    many_calls: list[list[int]] = []

    def one(row: int) -> int:
        one_calls.append(row)
        return row

    def many(rows: Any) -> Any:
        many_calls.append(rows.tolist())
        return rows.astype(np.int64)

    rows = np.arange(40, dtype=np.intp)
    assert memo.values("k", table, rows, one, many).tolist() == list(range(40))
    assert memo.values("k", table, rows, one, many).tolist() == list(range(40))
    assert len(many_calls) == 2 and not one_calls  # first sighting, then every row once
    memo.values("k", table, rows, one, many)
    assert len(many_calls) == 2 and not one_calls  # nothing moved
    table.generation[[3, 7]] += 1
    assert memo.values("k", table, rows, one, many).tolist() == list(range(40))
    assert one_calls == [3, 7]
    table.generation[: MAX_ROWS_ONE_BY_ONE + 1] += 1
    memo.values("k", table, rows, one, many)
    assert many_calls[-1] == list(range(MAX_ROWS_ONE_BY_ONE + 1))
    memo.values("k", _table(40), rows, one, many)  # another table: every row computed again
    assert many_calls[-1] == list(range(40))


def test_a_memo_keeps_fewer_keys_on_a_large_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """At most about CELL_BUDGET rows' values are kept, whatever the number of pod shapes."""
    monkeypatch.setattr(row_memo, "CELL_BUDGET", 40)
    memo = RowMemo()
    table = _table(11)  # room for three keys, not four
    rows = np.arange(4, dtype=np.intp)
    for key in range(20):
        for _ in range(2):  # a key is kept from its second sighting
            memo.values(key, table, rows, lambda row: row, lambda some: some.astype(np.int64))
        assert len(memo._by_key) <= 3


def test_a_full_memo_computes_new_keys_afresh_until_it_starts_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """More pod shapes than fit cost no array of the table's size per pod: keys without room are
    computed by `many`, and only after MISSES_BEFORE_RESET of them does the memo start over."""
    monkeypatch.setattr(row_memo, "CELL_BUDGET", 40)
    monkeypatch.setattr(row_memo, "MISSES_BEFORE_RESET", 5)
    memo, table = RowMemo(), _table(11)  # room for three keys
    rows = np.arange(11, dtype=np.intp)

    def values(key: int) -> list[int]:
        got = memo.values(key, table, rows, lambda row: row + key, lambda some: some + key)
        return list(got.tolist())

    for key in range(8):  # every key seen once, then three of them get columns
        values(key)
    for key in range(3):
        assert values(key) == [row + key for row in range(11)]
    kept = dict(memo._by_key)
    assert set(kept) == {0, 1, 2}
    for key in (3, 4, 5, 6):  # no room: computed afresh, the kept columns stay
        assert values(key) == [row + key for row in range(11)]
        assert memo._by_key == kept
    assert values(7) == [row + 7 for row in range(11)]  # the fifth miss starts the memo over
    assert list(memo._by_key) == [7]
