"""A columnar copy of the snapshot's nodes, for plugins' vectorised fast paths.

Row `i` describes `snapshot.node_info_list[i]`. The columns hold what the in-tree Filter and
Score plugins read on every cycle (allocatable and requested resources, pod count, the
unschedulable flag, which taint effects are present, host ports in use, images), so one NumPy
expression answers for many nodes at once. Anything rarer (extended resources, the taints
themselves, labels) stays on the NodeInfo, reachable through `infos[row]`.

The Snapshot keeps its table up to date lazily: the cache tells it which nodes it copied, and
only those rows are rewritten when a fast path next asks for the table; a new node order
rebuilds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from scheduler.api.taints import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.topology_index import PodGroups, TermGroups, TopologyColumn

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

# Values at or above this are not converted to float64 exactly and could overflow int64 once
# multiplied by a score of 100; tables holding one are not used (the per-node path is).
EXACT_LIMIT = 2**52


def fits_int64(*values: int) -> bool:
    """Whether pod-side amounts are small enough to combine with table columns exactly."""
    return all(-EXACT_LIMIT < value < EXACT_LIMIT for value in values)


_INT_COLUMNS = (
    "alloc_cpu",
    "alloc_memory",
    "alloc_ephemeral",
    "alloc_pods",
    "req_cpu",
    "req_memory",
    "req_ephemeral",
    "nonzero_cpu",
    "nonzero_memory",
    "pod_count",
)
_BOOL_COLUMNS = ("unschedulable", "no_schedule_taints", "prefer_no_schedule_taints", "used_ports")


class NodeTable:
    """Columns over a snapshot's node list (see module docstring). Read-only for plugins."""

    __slots__ = (
        "_counted",
        "_image_names",
        "_inexact_rows",
        "_pod_groups",
        "_term_groups",
        "_topology",
        "alloc_cpu",
        "alloc_ephemeral",
        "alloc_memory",
        "alloc_pods",
        "generation",
        "image_node_counts",
        "inexact",
        "infos",
        "names",
        "no_schedule_taints",
        "nonzero_cpu",
        "nonzero_memory",
        "pod_count",
        "prefer_no_schedule_taints",
        "req_cpu",
        "req_ephemeral",
        "req_memory",
        "row_of",
        "unschedulable",
        "used_ports",
    )

    alloc_cpu: IntArray
    alloc_memory: IntArray
    alloc_ephemeral: IntArray
    alloc_pods: IntArray
    req_cpu: IntArray
    req_memory: IntArray
    req_ephemeral: IntArray
    # Requests with upstream's defaults for containers requesting no cpu / memory (scoring).
    nonzero_cpu: IntArray
    nonzero_memory: IntArray
    pod_count: IntArray
    unschedulable: BoolArray
    # The node has a NoSchedule or NoExecute taint / a PreferNoSchedule taint.
    no_schedule_taints: BoolArray
    prefer_no_schedule_taints: BoolArray
    # The node has a host port in use.
    used_ports: BoolArray
    # A value too large for exact vectorised arithmetic (see EXACT_LIMIT).
    inexact: BoolArray
    # The NodeInfo's generation when the row was written (a plugin's memo of per-node answers
    # tells from it which rows moved).
    generation: IntArray

    def __init__(self, infos: Sequence[NodeInfo]) -> None:
        self.infos: list[NodeInfo] = list(infos)
        size = len(self.infos)
        self.names: list[str] = [info.node_name for info in self.infos]
        self.row_of: dict[str, int] = {name: row for row, name in enumerate(self.names)}
        for column in _INT_COLUMNS:
            setattr(self, column, np.zeros(size, dtype=np.int64))
        for column in (*_BOOL_COLUMNS, "inexact"):
            setattr(self, column, np.zeros(size, dtype=np.bool_))
        self.generation = np.zeros(size, dtype=np.int64)
        # Image name → number of rows whose node has it.
        self.image_node_counts: dict[str, int] = {}
        self._image_names: list[frozenset[str]] = [frozenset()] * size
        # Each row's NodeInfo.counted_generation when written: a node whose pods' views were
        # only swapped for views counting the same (NodeInfo.replace_pod) keeps its row.
        self._counted: list[int] = [0] * size
        # Built on first use by the topology plugins, then refreshed with the rows.
        self._pod_groups: PodGroups | None = None
        self._term_groups: TermGroups | None = None
        self._topology: dict[str, TopologyColumn] = {}
        self._inexact_rows = 0  # rows with `inexact` set: `exact` is read every cycle
        for row in range(size):
            self._write_row(row)

    def pod_groups(self) -> PodGroups:
        """Matching-pod counts per row (scheduler/cache/topology_index.py)."""
        if self._pod_groups is None:
            self._pod_groups = PodGroups(self.infos)
        return self._pod_groups

    def term_groups(self) -> TermGroups:
        """Existing pods' inter-pod affinity terms per row (scheduler/cache/topology_index.py)."""
        if self._term_groups is None:
            self._term_groups = TermGroups(self.infos)
        return self._term_groups

    def topology(self, key: str) -> TopologyColumn:
        """The value id of node label `key` per row."""
        column = self._topology.get(key)
        if column is None:
            column = self._topology[key] = TopologyColumn(key, self.infos)
        return column

    def __len__(self) -> int:
        return len(self.infos)

    @property
    def exact(self) -> bool:
        """Whether every value is small enough for the vectorised paths to match Python's."""
        return self._inexact_rows == 0

    def refresh(self, names: Iterable[str]) -> None:
        """Rewrite the rows of these nodes (their NodeInfo objects were updated in place)."""
        row_of, infos, counted = self.row_of, self.infos, self._counted
        for name in names:
            row = row_of.get(name)
            if row is None:
                continue
            info = infos[row]
            if info.counted_generation == counted[row]:
                self.generation[row] = info.generation  # plugins' memos still see the change
            else:
                self._write_row(row)

    def _write_row(self, row: int) -> None:
        info = self.infos[row]
        node = info.node
        allocatable = info.allocatable
        requested = info.requested
        values = (
            allocatable.milli_cpu,
            allocatable.memory,
            allocatable.ephemeral_storage,
            allocatable.allowed_pod_number,
            requested.milli_cpu,
            requested.memory,
            requested.ephemeral_storage,
            info.non_zero_requested.milli_cpu,
            info.non_zero_requested.memory,
            info.num_pods,
        )
        inexact = False
        for column, value in zip(_INT_COLUMNS, values, strict=True):
            if not -EXACT_LIMIT < value < EXACT_LIMIT:
                inexact = True
                value = 0
            getattr(self, column)[row] = value
        if inexact != self.inexact[row]:
            self._inexact_rows += 1 if inexact else -1
            self.inexact[row] = inexact
        self.generation[row] = info.generation
        self._counted[row] = info.counted_generation
        effects = {taint.effect for taint in node.taints} if node is not None else set()
        self.unschedulable[row] = node is not None and node.unschedulable
        self.no_schedule_taints[row] = NO_SCHEDULE in effects or NO_EXECUTE in effects
        self.prefer_no_schedule_taints[row] = PREFER_NO_SCHEDULE in effects
        self.used_ports[row] = bool(info.used_ports)
        self._set_images(row, frozenset(info.image_states))
        if self._pod_groups is not None:
            self._pod_groups.refresh_row(row, info)
        if self._term_groups is not None:
            self._term_groups.refresh_row(row, info)
        for topology in self._topology.values():
            topology.refresh_row(row, info)

    def _set_images(self, row: int, names: frozenset[str]) -> None:
        old = self._image_names[row]
        if old == names:
            return
        counts = self.image_node_counts
        for name in old - names:
            left = counts[name] - 1
            if left:
                counts[name] = left
            else:
                del counts[name]
        for name in names - old:
            counts[name] = counts.get(name, 0) + 1
        self._image_names[row] = names
