"""Filter's allocations per node, kept across scheduling cycles while nothing they depend on
moved (an equivalence cache for the structured allocator).

Why: Filter runs the allocator on every node for every pod with claims. In a GPU cluster most
pods ask for one of a few shapes (one GPU, a share of one, two GPUs of some models), and one
cycle changes the devices of one node; re-solving the other nodes finds what the last cycle
found. This memo answers those nodes from the last answer instead.

What an answer for one node depends on, and so what an entry is checked against:

- the claims to allocate, by their spec (not their names: two pods asking the same get the same
  devices) and the profile's DeviceRanker, by the key it offers (`memo_key`; a ranker without
  one turns the memo off for the cycle);
- the node (labels: pools selected by node selector) and, for a ranker, what the profile's
  NodeInfo holds (a policy reads the CPU left): the NodeInfo's generation;
- the DeviceClasses, ResourceSlices and DeviceTaintRules: any change of them clears the memo;
- the allocations of the devices of the pools the node reaches: the claim tracker's per-pool
  versions (a new version number on each change, never one seen before).

The allocator's state is read in PreFilter; the memo is used only when the tracker and the
objects are still at the versions read then (a binding cycle may write between PreFilter and
Filter in a running scheduler). Answers that raise (a claim or a pool is unusable) are never
kept: they are raised again each time.

`row_verdict` is the same memo for Filter's row path (scheduler/cache/rows.py): per key, the
verdict and allocations of every row of the NodeTable, with the row's NodeInfo generation when
they were found; a call re-solves (through the plugin's `filter`) only the rows whose generation
moved or whose pools' allocations changed since the last call, so a cycle costs a few array
operations over the nodes and the allocator on the nodes that changed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from scheduler.api.node import NodeView
from scheduler.api.resource import ResourceClaimView, ResourceSliceView
from scheduler.cache.node_table import NodeTable
from scheduler.cache.rows import Rows, RowVerdict
from scheduler.framework.status import Status
from scheduler.plugins.dynamicresources.pools import SliceIndex

if TYPE_CHECKING:
    from scheduler.listers.resource_objects import ClaimTracker, ResourceObjects
    from scheduler.plugins.dynamicresources.allocation import AllocationResult
    from scheduler.plugins.dynamicresources.allocator import Allocator
    from scheduler.plugins.dynamicresources.ranking import DeviceRanker

#: Entries kept at most (shapes x nodes); beyond it the memo starts over.
MAX_ENTRIES = 200_000

PoolKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class MemoEntry:
    node_generation: int
    objects_version: int
    pools: tuple[PoolKey, ...]
    pool_versions: tuple[int, ...]
    #: None: the claims cannot all be allocated on the node.
    allocations: list[AllocationResult] | None


def claims_key(
    claims: Sequence[ResourceClaimView], ranker: DeviceRanker | None
) -> tuple[Any, ...] | None:
    """What the allocator reads of the claims and the ranker, as one hashable key; None when
    the ranker offers no key (its answers cannot be told apart, so none is kept)."""
    ranker_key: Any = None
    if ranker is not None:
        ranker_key = getattr(ranker, "memo_key", None)
        if ranker_key is None:
            return None
    specs = tuple(
        json.dumps(claim.raw.get("spec"), sort_keys=True, default=str) for claim in claims
    )
    return (specs, ranker_key)


@dataclass(slots=True, eq=False)
class _RowAnswers:
    """One key's answers per row of one NodeTable (generation -1: not known)."""

    table: NodeTable
    objects_version: int
    synced: int  # the tracker's version the generations were last checked against
    generation: npt.NDArray[np.int64]
    passed: npt.NDArray[np.bool_]
    allocations: npt.NDArray[np.object_]
    pool_rows: dict[PoolKey, set[int]] = field(default_factory=dict)

    @classmethod
    def empty(cls, table: NodeTable, objects_version: int, synced: int) -> _RowAnswers:
        size = len(table)
        return cls(
            table,
            objects_version,
            synced,
            np.full(size, -1, dtype=np.int64),
            np.zeros(size, dtype=np.bool_),
            np.empty(size, dtype=object),
        )


class AllocationMemo:
    """(claims key, node name) → the allocator's answer and what it was checked against."""

    def __init__(self) -> None:
        self._entries: dict[tuple[tuple[Any, ...], str], MemoEntry] = {}
        self._rows: dict[tuple[Any, ...], _RowAnswers] = {}
        self._slices: tuple[int, list[ResourceSliceView], SliceIndex] | None = None
        #: Moves on every change of classes, slices or taint rules (the plugin subscribes).
        self.objects_version = 0

    def objects_changed(self, old: object = None, new: object = None) -> None:
        self.objects_version += 1
        self._entries.clear()
        self._rows.clear()

    def current_key(
        self, key: tuple[Any, ...] | None, versions: tuple[int, int], tracker: ClaimTracker
    ) -> tuple[Any, ...] | None:
        """`key`, unless the tracker or the objects moved since PreFilter read them at
        `versions` (then solve and keep nothing)."""
        if key is None or versions != (tracker.version, self.objects_version):
            return None
        return key

    def slices(
        self, resources: ResourceObjects, taint_rules: bool, partitionable_devices: bool
    ) -> tuple[list[ResourceSliceView], SliceIndex]:
        """The slices an Allocator works on and their index by node, kept until a class,
        slice or taint rule changes (building the index walks every slice)."""
        kept = self._slices
        if kept is None or kept[0] != self.objects_version:
            slices = (
                resources.slices_with_taint_rules()
                if taint_rules
                else list(resources.slices.list())
            )
            kept = self._slices = (
                self.objects_version,
                slices,
                SliceIndex(slices, partitionable_devices),
            )
        return kept[1], kept[2]

    def allocate(
        self,
        allocator: Allocator,
        key: tuple[Any, ...] | None,
        node: NodeView,
        node_generation: int,
        claims: Sequence[ResourceClaimView],
        tracker: ClaimTracker,
        timeout: float,
    ) -> tuple[list[AllocationResult] | None, bool]:
        """The allocator's answer on `node` (from the memo when `key` has one that still
        holds), and whether finding it took longer than `timeout` (> 0). Raises as the
        allocator does; such answers are not kept."""
        entry = None if key is None else self.lookup(key, node.name, node_generation, tracker)
        if entry is not None:
            return entry.allocations, False
        started = time.perf_counter()
        allocations, pools = allocator.allocate_with_pools(node, claims)
        if timeout > 0 and time.perf_counter() - started > timeout:
            return None, True
        if key is not None:
            self.store(key, node.name, node_generation, tracker, pools, allocations)
        return allocations, False

    def lookup(
        self,
        key: tuple[Any, ...],
        node_name: str,
        node_generation: int,
        tracker: ClaimTracker,
    ) -> MemoEntry | None:
        entry = self._entries.get((key, node_name))
        if (
            entry is None
            or entry.node_generation != node_generation
            or entry.objects_version != self.objects_version
        ):
            return None
        for pool, version in zip(entry.pools, entry.pool_versions, strict=True):
            if tracker.pool_version(pool) != version:
                return None
        return entry

    def store(
        self,
        key: tuple[Any, ...],
        node_name: str,
        node_generation: int,
        tracker: ClaimTracker,
        pools: Sequence[PoolKey],
        allocations: list[AllocationResult] | None,
    ) -> None:
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.clear()
        self._entries[(key, node_name)] = MemoEntry(
            node_generation,
            self.objects_version,
            tuple(pools),
            tuple(tracker.pool_version(pool) for pool in pools),
            allocations,
        )

    def row_verdict(
        self,
        key: tuple[Any, ...],
        table: NodeTable,
        rows: Rows,
        tracker: ClaimTracker,
        solve: Callable[[int], Status],
        node_allocations: dict[str, list[AllocationResult]],
        cannot_allocate: Status,
    ) -> RowVerdict:
        """Filter's verdict for `rows` (see the module docstring). `solve(row)` is the plugin's
        per-node Filter, which stores what it found in this memo (`store`); rows it answers
        without storing (another rejection) are asked again each time. The allocations of the
        rows that pass go to `node_allocations`, as Filter puts them there."""
        answers = self._rows.get(key)
        if (
            answers is None
            or answers.table is not table
            or answers.objects_version != self.objects_version
        ):
            if len(self._rows) >= MAX_ENTRIES // max(len(table), 1):
                self._rows.clear()
            answers = self._rows[key] = _RowAnswers.empty(
                table, self.objects_version, tracker.version
            )
        changed = tracker.pools_changed_since(answers.synced)
        if changed is None:
            answers.generation.fill(-1)
        else:
            for pool in changed:
                for row in answers.pool_rows.get(pool, ()):
                    answers.generation[row] = -1
        answers.synced = tracker.version
        generations = table.generation[rows]
        stale = rows[answers.generation[rows] != generations]
        others: dict[int, Status] = {}
        names = table.names
        for row in stale.tolist():
            status = solve(row)
            name = names[row]
            entry = self._entries.get((key, name))
            if entry is None or entry.node_generation != int(table.generation[row]):
                # not kept (another rejection, a timeout): asked again next time
                others[row] = status
                answers.passed[row] = status.is_success
                answers.allocations[row] = node_allocations.get(name)
                continue
            answers.generation[row] = entry.node_generation
            answers.passed[row] = entry.allocations is not None
            answers.allocations[row] = entry.allocations
            for pool in entry.pools:
                answers.pool_rows.setdefault(pool, set()).add(row)
        passed = answers.passed[rows]
        passing = rows[passed]
        node_allocations.update(
            zip(
                [names[row] for row in passing.tolist()],
                answers.allocations[passing].tolist(),
                strict=True,
            )
        )

        def reject_many(rejected: Rows) -> list[Status]:
            if not others:
                return [cannot_allocate] * len(rejected)
            return [others.get(row, cannot_allocate) for row in rejected.tolist()]

        return RowVerdict(passed, lambda row: others.get(row, cannot_allocate), reject_many)

    def __len__(self) -> int:
        return len(self._entries)
