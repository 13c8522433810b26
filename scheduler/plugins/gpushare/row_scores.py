"""The policies' scores per NodeTable row, kept across cycles while the row's node is as it was.

Why: a policy scores every node for every pod (the paper's experiment scores the whole
cluster), and its score is a function of the pod's GPU request and the node: its CPU left (the
NodeInfo's generation moves with it), its GPUs left (the claim tracker's versions of the node's
device pools) and, for GpuClustering, its pods (the generation again). One cycle changes one
node, so the rows of the other nodes score as they did for the last pod with the same request.

Per (request, what else the policy's score reads), the scores of every row of one NodeTable, the
row's generation when scored (-1: not scored) and the tracker's version checked last; a call
scores again, through the policy's per-node score, only the rows whose generation moved or
whose pools' allocations changed since (scheduler/cache/row_memo.py keeps the rows). Not for
RandomFit (a random draw per node per pod).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field

import numpy as np

from scheduler.cache.node_table import IntArray, NodeTable
from scheduler.cache.row_memo import RowValues, refresh
from scheduler.cache.rows import Rows
from scheduler.listers.resource_objects import ClaimTracker

PoolKey = tuple[str, str]
#: Request keys kept at most; beyond it the memo starts over.
MAX_KEYS = 256


@dataclass(slots=True, eq=False)
class _Scores:
    kept: RowValues  # the rows' scores and the generations they were scored at
    synced: int
    pool_rows: dict[PoolKey, list[int]] = field(default_factory=dict)


class RowScoreMemo:
    def __init__(self) -> None:
        self._by_key: dict[Hashable, _Scores] = {}
        self._slices_version = 0

    def slices_changed(self, old: object = None, new: object = None) -> None:
        """A node's GPUs may be others now: score everything again."""
        self._by_key.clear()

    def scores(
        self,
        key: Hashable,
        table: NodeTable,
        rows: Rows,
        tracker: ClaimTracker,
        node_pools: Mapping[str, tuple[PoolKey, ...]],
        score_row: Callable[[int], int],
    ) -> IntArray:
        scores = self._by_key.get(key)
        if scores is None or scores.kept.table is not table:
            if len(self._by_key) >= MAX_KEYS:
                self._by_key.clear()
            scores = self._by_key[key] = _Scores(
                RowValues(
                    table,
                    np.full(len(table), -1, dtype=np.int64),
                    np.zeros(len(table), dtype=np.int64),
                ),
                tracker.version,
            )
            for row, name in enumerate(table.names):
                for pool in node_pools.get(name, ()):
                    scores.pool_rows.setdefault(pool, []).append(row)
        changed = tracker.pools_changed_since(scores.synced)
        if changed is None:
            scores.kept.generation.fill(-1)
        else:
            for pool in changed:
                scores.kept.generation[scores.pool_rows.get(pool, [])] = -1
        scores.synced = tracker.version

        def each(some: Rows) -> IntArray:
            return np.fromiter(map(score_row, some.tolist()), dtype=np.int64, count=len(some))

        return refresh(scores.kept, rows, score_row, each)
