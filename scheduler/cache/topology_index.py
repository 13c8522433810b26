"""Counts of matching pods per node and topology labels per node, kept incrementally for the
topology plugins (InterPodAffinity, PodTopologySpread).

Upstream computes both plugins' PreFilter / PreScore state by walking every pod on every node
and testing a label selector against it. Pods of one workload share their namespace and labels,
so the index groups pods by (namespace, labels, terminating) and keeps, per group, how many of
its pods each table row holds. A query tests the selector once per group, not once per pod, and
adds up the groups' rows with NumPy. Rows are refreshed with the NodeTable's (only the nodes the
cache changed), and only once some plugin asked for the index: clusters whose pods use no
topology constraints never pay for it.

Existing pods' own inter-pod affinity terms are kept the same way (TermGroups): per distinct
(kind, term, weight), how many pods of each row carry it, so InterPodAffinity matches each
distinct term against the incoming pod once instead of visiting every pod that has terms.

Topology columns map a label key to a value id per row (-1 where the node lacks the key), so
per-domain sums are one `np.bincount`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from apimachinery.labels import LabelSelector
from scheduler.api.podaffinity import AffinityTerm

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


# Kinds of existing pods' terms (TermGroups).
REQUIRED_ANTI_AFFINITY = 0
REQUIRED_AFFINITY = 1
PREFERRED_AFFINITY = 2
PREFERRED_ANTI_AFFINITY = 3
# (kind, term, weight); the weight is 0 for required terms
TermKey = tuple[int, AffinityTerm, int]


def _row_terms(info: NodeInfo) -> dict[TermKey, int]:
    counts: dict[TermKey, int] = {}
    for pod in info.pods_with_affinity:
        affinity = pod.pod_affinity
        keys: list[TermKey] = [
            (REQUIRED_ANTI_AFFINITY, t, 0) for t in affinity.required_anti_affinity
        ]
        keys.extend((REQUIRED_AFFINITY, t, 0) for t in affinity.required_affinity)
        keys.extend((PREFERRED_AFFINITY, w.term, w.weight) for w in affinity.preferred_affinity)
        keys.extend(
            (PREFERRED_ANTI_AFFINITY, w.term, w.weight) for w in affinity.preferred_anti_affinity
        )
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
    return counts


class TermGroups:
    """Per row, how many existing pods carry each distinct inter-pod affinity term (a pod
    with the same term twice counts twice, as a walk over its terms would)."""

    __slots__ = ("_row_terms", "_rows_of_term", "_size")

    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        self._size = len(infos)
        self._rows_of_term: dict[TermKey, dict[int, int]] = {}
        self._row_terms: list[dict[TermKey, int]] = [{} for _ in range(self._size)]
        for row, info in enumerate(infos):
            self.refresh_row(row, info)

    def refresh_row(self, row: int, info: NodeInfo) -> None:
        counts = _row_terms(info) if info.pods_with_affinity else {}
        old = self._row_terms[row]
        if old == counts:
            return
        terms = self._rows_of_term
        for key in old:
            if key not in counts:
                rows = terms[key]
                del rows[row]
                if not rows:
                    del terms[key]
        for key, count in counts.items():
            terms.setdefault(key, {})[row] = count
        self._row_terms[row] = counts

    def of_kind(self, kind: int) -> list[tuple[AffinityTerm, int, IntArray]]:
        """(term, weight, per-row count of pods carrying it) for each distinct term of `kind`."""
        out: list[tuple[AffinityTerm, int, IntArray]] = []
        for (term_kind, term, weight), rows in self._rows_of_term.items():
            if term_kind == kind:
                per_row: IntArray = np.zeros(self._size, dtype=np.int64)
                index = np.fromiter(rows.keys(), dtype=np.intp, count=len(rows))
                per_row[index] = np.fromiter(rows.values(), dtype=np.int64, count=len(rows))
                out.append((term, weight, per_row))
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
