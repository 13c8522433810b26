"""Counts of matching pods per node and topology labels per node, kept incrementally for the
topology plugins (InterPodAffinity, PodTopologySpread).

Upstream computes both plugins' PreFilter / PreScore state by walking every pod on every node
and testing a label selector against it. Pods of one workload share their namespace and labels,
so the index groups pods by (namespace, labels, terminating) and keeps, per group, how many of
its pods each table row holds. A query tests the selector once per group, not once per pod, and
adds up the groups' rows with NumPy. Rows are refreshed with the NodeTable's (only the nodes the
cache changed), and only once some plugin asked for the index: clusters whose pods use no
topology constraints never pay for it.

Topology columns map a label key to a value id per row (-1 where the node lacks the key), so
per-domain sums are one `np.bincount`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from scheduler.api.selectors import LabelSelector

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cache.node_info import NodeInfo

IntArray = npt.NDArray[np.int64]

# (namespace, sorted label items, terminating)
GroupKey = tuple[str, tuple[tuple[str, str], ...], bool]


def group_key(pod: PodView) -> GroupKey:
    return (pod.namespace, tuple(sorted(pod.labels.items())), pod.deletion_timestamp is not None)


class PodGroups:
    """Per-row counts of pods by GroupKey, with selector queries (see module docstring)."""

    __slots__ = ("_match_memo", "_row_groups", "_rows_of_group", "_size")

    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        self._size = len(infos)
        self._rows_of_group: dict[GroupKey, dict[int, int]] = {}
        self._row_groups: list[dict[GroupKey, int]] = [{} for _ in range(self._size)]
        # (namespaces, selector, include terminating) → matching group keys; cleared whenever
        # a group appears or disappears.
        self._match_memo: dict[
            tuple[frozenset[str] | None, LabelSelector, bool], list[GroupKey]
        ] = {}
        for row, info in enumerate(infos):
            self.refresh_row(row, info)

    def refresh_row(self, row: int, info: NodeInfo) -> None:
        counts: dict[GroupKey, int] = {}
        for pod in info.pods:
            key = group_key(pod)
            counts[key] = counts.get(key, 0) + 1
        old = self._row_groups[row]
        if old == counts:
            return
        groups = self._rows_of_group
        for key in old:
            if key not in counts:
                rows = groups[key]
                del rows[row]
                if not rows:
                    del groups[key]
                    self._match_memo.clear()
        for key, count in counts.items():
            group_rows = groups.get(key)
            if group_rows is None:
                group_rows = groups[key] = {}
                self._match_memo.clear()
            group_rows[row] = count
        self._row_groups[row] = counts

    def matching_groups(
        self,
        namespaces: frozenset[str] | None,
        selector: LabelSelector,
        include_terminating: bool,
    ) -> list[GroupKey]:
        memo_key = (namespaces, selector, include_terminating)
        found = self._match_memo.get(memo_key)
        if found is None:
            found = [
                key
                for key in self._rows_of_group
                if (include_terminating or not key[2])
                and (namespaces is None or key[0] in namespaces)
                and selector.matches(dict(key[1]))
            ]
            self._match_memo[memo_key] = found
        return found

    def counts(
        self,
        namespaces: frozenset[str] | None,
        selector: LabelSelector,
        *,
        include_terminating: bool,
    ) -> IntArray:
        """Per row, how many pods in `namespaces` (None: any) match `selector`."""
        out: IntArray = np.zeros(self._size, dtype=np.int64)
        if selector.matches_nothing:
            return out
        for key in self.matching_groups(namespaces, selector, include_terminating):
            rows = self._rows_of_group[key]
            index = np.fromiter(rows.keys(), dtype=np.intp, count=len(rows))
            out[index] += np.fromiter(rows.values(), dtype=np.int64, count=len(rows))
        return out


class TopologyColumn:
    """Value ids of one node label key per row; `values[id]` is the label value."""

    __slots__ = ("ids", "key", "value_ids", "values")

    def __init__(self, key: str, infos: Sequence[NodeInfo]) -> None:
        self.key = key
        self.values: list[str] = []
        self.value_ids: dict[str, int] = {}
        self.ids: IntArray = np.full(len(infos), -1, dtype=np.int64)
        for row, info in enumerate(infos):
            self.refresh_row(row, info)

    def refresh_row(self, row: int, info: NodeInfo) -> None:
        node = info.node
        value = node.labels.get(self.key) if node is not None else None
        if value is None:
            self.ids[row] = -1
            return
        value_id = self.value_ids.get(value)
        if value_id is None:
            value_id = self.value_ids[value] = len(self.values)
            self.values.append(value)
        self.ids[row] = value_id

    def sums(self, per_row: IntArray, rows_mask: npt.NDArray[np.bool_] | None = None) -> IntArray:
        """Per value id, the sum of `per_row` over rows having that value (and in the mask)."""
        valid = self.ids >= 0
        if rows_mask is not None:
            valid &= rows_mask
        return np.bincount(
            self.ids[valid], weights=per_row[valid], minlength=len(self.values)
        ).astype(np.int64)
