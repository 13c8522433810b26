"""Per-row values of a NodeTable kept across cycles while each row's node is as it was.

Why: a Score plugin whose score of a row depends only on the row (its node and the pods counted
on it, which move the row's generation) and on something of the pod (its requests, say) gives
the same scores to the same rows cycle after cycle. One cycle changes one node, so for pods of
one shape nearly all of a cycle's scored rows scored the same the last time. NodeResourcesFit
and NodeResourcesBalancedAllocation keep their scores here: instead of a dozen array operations
over the scored rows a cycle compares generations, scores again the few rows that moved, one by
one, and gathers the rest.

Per key (what the value reads of the pod), the values of every row of one NodeTable and each
row's generation when computed (-1: not computed). A key is kept from its second sighting on,
so that pods of ever new shapes cost a dictionary lookup, not two arrays of the table's size.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scheduler.cache.node_table import IntArray, NodeTable
from scheduler.cache.rows import Rows

#: Keys kept at most; beyond it the memo starts over. On large tables fewer are kept, so that
#: one memo holds at most about CELL_BUDGET rows' values (two int64 arrays each: 4 MiB).
MAX_KEYS = 32
CELL_BUDGET = 1 << 18
#: Once the memo is full, keys it has no room for are computed afresh (no array of the table's
#: size is allocated for them); after this many such lookups it starts over, to let newer pod
#: shapes in. Clearing it on every new key instead cost pods of more shapes than fit two arrays
#: of the table's size each, a per-pod cost growing with the nodes.
MISSES_BEFORE_RESET = 256
#: Stale rows up to this many are computed one by one; more go through the array path, whose
#: cost is mostly fixed (a few µs per operation, whatever the number of rows).
MAX_ROWS_ONE_BY_ONE = 16


@dataclass(slots=True, eq=False)
class RowValues:
    table: NodeTable
    generation: npt.NDArray[np.int64]  # per row: the generation the value was computed at
    values: IntArray


class RowMemo:
    """Values over one NodeTable at a time: a new table (the snapshot's node list changed)
    starts the memo over, so that no old table is kept alive by it."""

    def __init__(self) -> None:
        self._table: NodeTable | None = None
        self._by_key: dict[Hashable, RowValues] = {}
        self._seen_once: set[Hashable] = set()
        self._misses = 0  # lookups of keys without a column since the memo filled

    def column(self, key: Hashable, table: NodeTable) -> RowValues | None:
        """The values kept for `key` over `table`; None on the key's first sighting, and while
        the memo is full (MISSES_BEFORE_RESET)."""
        if table is not self._table:
            self._table = table
            self._by_key.clear()
            self._misses = 0
        kept = self._by_key.get(key)
        if kept is not None:
            return kept
        if key not in self._seen_once:
            if len(self._seen_once) >= MAX_KEYS * 8:
                self._seen_once.clear()
            self._seen_once.add(key)
            return None
        if len(self._by_key) >= max(2, min(MAX_KEYS, CELL_BUDGET // max(1, len(table)))):
            self._misses += 1
            if self._misses < MISSES_BEFORE_RESET:
                return None
            self._by_key.clear()
            self._misses = 0
        kept = self._by_key[key] = RowValues(
            table,
            np.full(len(table), -1, dtype=np.int64),
            np.zeros(len(table), dtype=np.int64),
        )
        return kept

    def values(
        self,
        key: Hashable,
        table: NodeTable,
        rows: Rows,
        one: Callable[[int], int],
        many: Callable[[Rows], IntArray],
    ) -> IntArray:
        """The values of `rows`: `one(row)` or `many(rows)` must compute them from the table
        as it is now; only rows whose generation moved since are computed again."""
        kept = self.column(key, table)
        if kept is None:
            return many(rows)
        return refresh(kept, rows, one, many)


_any_true = np.logical_or.reduce


def refresh(
    kept: RowValues, rows: Rows, one: Callable[[int], int], many: Callable[[Rows], IntArray]
) -> IntArray:
    """`kept`'s values of `rows`, the rows whose generation moved (or was reset to -1)
    computed again first."""
    generations = kept.table.generation[rows]
    moved = kept.generation[rows] != generations
    if _any_true(moved):
        stale = rows[moved]
        if len(stale) <= MAX_ROWS_ONE_BY_ONE:
            values = kept.values
            for row in stale.tolist():
                values[row] = one(row)
        else:
            kept.values[stale] = many(stale)
        kept.generation[stale] = generations[moved]
    gathered: IntArray = kept.values[rows]
    return gathered
