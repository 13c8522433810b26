"""Optional vectorised extension points over a NodeTable (in-tree plugins' fast path).

A plugin that also implements `filter_rows` / `score_rows` answers for many snapshot rows at
once, exactly as its per-node `filter` / `score` would for each row's NodeInfo. A plugin
without them still runs in the row pass: the runtime's generic per-node adapter asks its
`filter` / `score` for each row (`verdict_per_node` for Filter). Statuses of rejected rows are
built on demand (`RowVerdict.reject`), only for the rows the algorithm actually reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, overload, runtime_checkable

import numpy as np
import numpy.typing as npt

from scheduler.cache.node_table import BoolArray, IntArray, NodeTable
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Status

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cache.node_info import NodeInfo

# Row indices into a NodeTable.
Rows = npt.NDArray[np.intp]


class RowNodes(Sequence["NodeInfo"]):
    """The NodeInfos of some table rows, in their order, without building their list: a
    cycle that scores its feasible rows reads a few of them (the chosen node's), not all.
    Iterating or slicing builds the list once."""

    __slots__ = ("_infos", "_listed", "_rows")

    def __init__(self, infos: Sequence[NodeInfo], rows: Rows) -> None:
        self._infos = infos
        self._rows = rows
        self._listed: list[NodeInfo] | None = None

    def _list(self) -> list[NodeInfo]:
        if self._listed is None:
            infos = self._infos
            self._listed = [infos[row] for row in self._rows.tolist()]
        return self._listed

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> NodeInfo: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[NodeInfo]: ...

    def __getitem__(self, index: int | slice) -> NodeInfo | Sequence[NodeInfo]:
        if isinstance(index, slice):
            return self._list()[index]
        if self._listed is not None:
            return self._listed[index]
        return self._infos[int(self._rows[index])]

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self._list())


@dataclass(slots=True)
class RowVerdict:
    """`passed[i]` says whether `rows[i]` passed; `reject(row)` is a rejected row's status.
    `reject_many(rows)`, where a plugin offers it, is `[reject(row) for row in rows]` with
    array operations (a cycle that fails reports thousands of rejected rows)."""

    passed: BoolArray
    reject: Callable[[int], Status]
    reject_many: Callable[[Rows], list[Status]] | None = None


@runtime_checkable
class RowFilterPlugin(Protocol):
    name: str

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict | None:
        """The verdict for `rows`, or None to have the runtime call `filter` per row."""
        ...


@runtime_checkable
class RowScorePlugin(Protocol):
    name: str

    def score_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> IntArray | None:
        """Raw scores of `rows` (before NormalizeScore), or None to score per node."""
        ...


@runtime_checkable
class RowNormalizePlugin(Protocol):
    def normalize_rows(self, state: CycleState, pod: PodView, scores: IntArray) -> IntArray:
        """What `normalize_score` would make of these scores (a new array)."""
        ...


class NodeFilter(Protocol):
    def __call__(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status: ...


_ALL_PASS: dict[int, BoolArray] = {}


def all_rows_pass(count: int) -> BoolArray:
    """A read-only `passed` of `count` rows all set, shared: the common verdict of a Filter that
    rejects nothing, which the framework then recognises without reading it (`passes_all`)."""
    passed = _ALL_PASS.get(count)
    if passed is None:
        if len(_ALL_PASS) >= 64:
            _ALL_PASS.clear()
        passed = _ALL_PASS[count] = np.ones(count, dtype=np.bool_)
        passed.flags.writeable = False
    return passed


def passes_all(passed: BoolArray) -> bool:
    """Whether every row passed: at once for the shared all-pass array, else one reduction."""
    return passed is _ALL_PASS.get(len(passed)) or bool(_every(passed))


_every = np.logical_and.reduce


def verdict_per_node(
    node_filter: NodeFilter,
    state: CycleState,
    pod: PodView,
    table: NodeTable,
    rows: Rows,
    check: BoolArray | None = None,
) -> RowVerdict:
    """Run `node_filter` on the rows where `check` is set (all when None); the others pass."""
    rejected: dict[int, Status] = {}
    positions = range(len(rows)) if check is None else np.flatnonzero(check).tolist()
    if not positions:  # the usual case of a check (no node tainted, ...): no row to list
        return RowVerdict(all_rows_pass(len(rows)), rejected.__getitem__)
    passed = np.ones(len(rows), dtype=np.bool_)
    infos = table.infos
    row_list = rows.tolist()
    for position in positions:
        row = row_list[position]
        status = node_filter(state, pod, infos[row])
        if not status.is_success:
            passed[position] = False
            rejected[row] = status
    return RowVerdict(passed, rejected.__getitem__)


def verdict_with_status(passed: BoolArray, status: Status) -> RowVerdict:
    """Every rejected row gets the same status."""
    return RowVerdict(passed, lambda _row: status)


def default_normalize_rows(max_priority: int, reverse: bool, scores: IntArray) -> IntArray:
    """helper.DefaultNormalizeScore over an array (scores are never negative)."""
    max_count = int(scores.max()) if len(scores) else 0
    if max_count == 0:
        if reverse:
            return np.full(len(scores), max_priority, dtype=np.int64)
        return scores.copy()
    scaled = max_priority * scores // max_count
    return max_priority - scaled if reverse else scaled
