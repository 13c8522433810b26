"""PreFilter and PreScore state of PodTopologySpread.

Upstream: pkg/scheduler/framework/plugins/podtopologyspread/filtering.go (preFilterState,
criticalPaths; the v1.30+ layout indexed by constraint) and scoring.go (preScoreState).

PreFilterState keeps, per constraint, the matching-pod count of every eligible topology domain
(TpValueToMatchNum), the number of domains and the global minimum (CriticalPaths[i][0]). The fast
path computes these as arrays indexed by the table's topology value ids and builds the
per-value dicts and critical paths only when something needs them (preemption's AddPod /
RemovePod, tests). Critical paths are built as upstream's `update` would build them iterating
the domains in value order, which is one of the orders Go's map iteration may take.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from scheduler.cache.node_table import BoolArray, IntArray
from scheduler.plugins.podtopologyspread.constraints import Constraint

if TYPE_CHECKING:
    from scheduler.cache.topology_index import TopologyColumn

MAX_INT32 = 2**31 - 1


class CriticalPaths:
    """The two domains with the fewest matching pods; `paths[0][1]` is always the minimum."""

    __slots__ = ("paths",)

    def __init__(self, paths: list[list[str | int]] | None = None) -> None:
        self.paths: list[list[str | int]] = paths or [["", MAX_INT32], ["", MAX_INT32]]

    @classmethod
    def of(cls, counts: dict[str, int]) -> CriticalPaths:
        paths = cls()
        for value, num in sorted(counts.items(), key=lambda item: (item[1], item[0]))[:2]:
            paths.update(value, num)
        return paths

    def update(self, value: str, num: int) -> None:
        """Upstream's criticalPaths.update."""
        p = self.paths
        index = 0 if value == p[0][0] else 1 if value == p[1][0] else -1
        if index >= 0:
            p[index][1] = num
            if int(p[0][1]) > int(p[1][1]):
                p[0], p[1] = p[1], p[0]
        elif num < int(p[0][1]):
            p[1] = p[0]
            p[0] = [value, num]
        elif num < int(p[1][1]):
            p[1] = [value, num]

    def pairs(self) -> tuple[tuple[str, int], tuple[str, int]]:
        (v0, n0), (v1, n1) = self.paths
        return (str(v0), int(n0)), (str(v1), int(n1))

    def sorted_pairs(self) -> tuple[tuple[str, int], tuple[str, int]]:
        """Pairs with equal counts ordered by value (how upstream's tests compare paths)."""
        first, second = self.pairs()
        if first[1] == second[1] and first[0] > second[0]:
            return (second[0], first[1]), (first[0], second[1])
        return first, second

    def clone(self) -> CriticalPaths:
        return CriticalPaths([list(self.paths[0]), list(self.paths[1])])


@dataclass(slots=True)
class ValueArrays:
    """One constraint's counts per value id of `column` (fast path)."""

    column: TopologyColumn
    sums: IntArray  # matching pods per value id over eligible nodes
    present: BoolArray  # value id has an eligible node (is a domain)


class PreFilterState:
    __slots__ = ("_arrays", "_counts", "_paths", "constraints", "domains", "min_nums", "self_match")

    def __init__(
        self,
        constraints: tuple[Constraint, ...],
        self_match: tuple[int, ...],
        counts: list[dict[str, int]] | None = None,
        arrays: list[ValueArrays] | None = None,
    ) -> None:
        self.constraints = constraints
        # Whether the incoming pod matches each constraint's selector (1 or 0).
        self.self_match = self_match
        self._counts = counts
        self._arrays = arrays
        self._paths: list[CriticalPaths] | None = None
        self.min_nums: list[int] = []
        self.domains: list[int] = []
        if counts is not None:
            self._paths = [CriticalPaths.of(c) for c in counts]
            self.min_nums = [int(p.paths[0][1]) for p in self._paths]
            self.domains = [len(c) for c in counts]
        elif arrays is not None:
            for a in arrays:
                present = a.sums[a.present]
                self.min_nums.append(int(present.min()) if len(present) else MAX_INT32)
                self.domains.append(len(present))

    # -- reading ---------------------------------------------------------------------------

    def min_match_num(self, index: int) -> int:
        """The global minimum for the skew, 0 when there are fewer domains than minDomains."""
        if self.domains[index] < self.constraints[index].min_domains:
            return 0
        return self.min_nums[index]

    @property
    def tp_value_to_match_num(self) -> list[dict[str, int]]:
        if self._counts is None:
            assert self._arrays is not None
            self._counts = [
                {a.column.values[v]: int(a.sums[v]) for v in np.flatnonzero(a.present).tolist()}
                for a in self._arrays
            ]
        return self._counts

    @property
    def critical_paths(self) -> list[CriticalPaths]:
        if self._paths is None:
            self._paths = [CriticalPaths.of(c) for c in self.tp_value_to_match_num]
        return self._paths

    def match_num(self, index: int, value: str) -> int:
        if self._counts is None and self._arrays is not None:
            arrays = self._arrays[index]
            value_id = arrays.column.value_ids.get(value)
            if value_id is None or value_id >= len(arrays.sums):
                return 0
            return int(arrays.sums[value_id])
        return self.tp_value_to_match_num[index].get(value, 0)

    def counts_by_value_id(self, index: int, column: TopologyColumn) -> IntArray:
        """Matching pods per value id of `column` (0 for values that are not domains)."""
        size = len(column.values)
        if self._arrays is not None and self._arrays[index].column is column:
            sums = self._arrays[index].sums
            if len(sums) >= size:
                return sums
            padded: IntArray = np.zeros(size, dtype=np.int64)
            padded[: len(sums)] = sums
            return padded
        counts = self.tp_value_to_match_num[index]
        return np.fromiter((counts.get(v, 0) for v in column.values), dtype=np.int64, count=size)

    # -- preemption ------------------------------------------------------------------------

    def add(self, index: int, value: str, delta: int) -> None:
        """One matching pod more (delta 1) or less (-1) in a domain (updateWithPod)."""
        counts = self.tp_value_to_match_num
        paths = self.critical_paths
        self._arrays = None  # the dicts are the truth from now on
        num = counts[index].get(value, 0) + delta
        counts[index][value] = num
        paths[index].update(value, num)
        self.min_nums[index] = int(paths[index].paths[0][1])
        self.domains[index] = len(counts[index])

    def clone(self) -> PreFilterState:
        copy = PreFilterState(self.constraints, self.self_match)
        copy._arrays = self._arrays  # never mutated, only dropped
        copy._counts = None if self._counts is None else [dict(c) for c in self._counts]
        copy._paths = None if self._paths is None else [p.clone() for p in self._paths]
        copy.min_nums = list(self.min_nums)
        copy.domains = list(self.domains)
        return copy


@dataclass(slots=True)
class RowScoreData:
    """What score_rows needs from the fast PreScore, per constraint."""

    columns: list[TopologyColumn]
    # Matching pods per effective value id (missing key: the "" value's id, or len(values)).
    sums: list[IntArray | None]
    # Per-row counts for hostname constraints (scored per node), else None.
    per_row: list[IntArray | None]
    ignored_rows: BoolArray


@dataclass(slots=True)
class PreScoreState:
    constraints: tuple[Constraint, ...]
    ignored_nodes: frozenset[str] = frozenset()
    # Per constraint: matching pods per topology value of the filtered nodes (none for
    # hostname constraints, whose counts are taken per node in Score).
    topology_value_to_pod_counts: list[dict[str, int]] = field(default_factory=list)
    topology_normalizing_weight: list[float] = field(default_factory=list)
    rows: RowScoreData | None = None
    # (the raw score array score_rows returned, its rows' ignored flags), for normalize_rows.
    last_row_scores: tuple[IntArray, BoolArray] | None = None

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore, as upstream's Clone
