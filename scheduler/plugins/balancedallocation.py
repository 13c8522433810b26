"""NodeResourcesBalancedAllocation (PreScore, Score): favour nodes whose balance of resource
usage fractions the pod improves.

Upstream: pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go and
resource_allocation.go (v1.33+: best-effort pods are skipped; v1.36: the score is the
improvement in balance, balancedResourceScorer). Unlike NodeResourcesFit's scoring it uses the
actual requests (useRequested), not the non-zero defaults, for both the pod and the node.
balance = (1 - std) * 100 over the fractions requested / allocatable (each capped at 1);
resources the node has none of, or extended resources the pod does not request, are left out.
score = 50 + (50 + balance with the pod - balance without it) / 2, in Go's integer division.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.api.objects import PodView
from scheduler.cache.node_table import FloatArray, IntArray, NodeTable, fits_int64
from scheduler.cache.row_memo import RowMemo
from scheduler.cache.rows import Rows
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    ScoreExtensions,
    SignFragment,
)
from scheduler.framework.registry import (
    ArgsError,
    PluginEntry,
    check_args_kind,
    check_known_fields,
)
from scheduler.framework.runtime import batch as signers
from scheduler.framework.status import Status
from scheduler.plugins.noderesources.args import DEFAULT_RESOURCES, ResourceSpec

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo

NAME = "NodeResourcesBalancedAllocation"
# The NodeTable columns Score reads per resource: allocatable and the actual requests.
_SCORE_COLUMNS = {
    "cpu": ("alloc_cpu", "req_cpu"),
    "memory": ("alloc_memory", "req_memory"),
    "ephemeral-storage": ("alloc_ephemeral", "req_ephemeral"),
}
PRE_SCORE_STATE_KEY = "PreScore" + NAME


@dataclass(frozen=True, slots=True)
class NodeResourcesBalancedAllocationArgs:
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES


def decode_balanced_allocation_args(
    raw: Mapping[str, Any] | None,
) -> NodeResourcesBalancedAllocationArgs:
    """v1 defaults (cpu and memory; weight 0 means 1) and ValidateNodeResourcesBalanced-
    AllocationArgs (no duplicate names, every weight 1); the first problem raises ArgsError."""
    raw = raw or {}
    check_known_fields(raw, ("apiVersion", "kind", "resources"))
    check_args_kind(raw, "NodeResourcesBalancedAllocationArgs")
    items = raw.get("resources") or []
    if not isinstance(items, list):
        raise ArgsError("resources", f"expected a list, got {type(items).__name__}")
    specs: list[ResourceSpec] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        path = f"resources[{index}]"
        if not isinstance(item, Mapping):
            raise ArgsError(path, f"expected an object, got {type(item).__name__}")
        check_known_fields(item, ("name", "weight"), path)
        name = item.get("name", "")
        weight = item.get("weight", 0)
        if not isinstance(name, str):
            raise ArgsError(f"{path}.name", "expected a string")
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise ArgsError(f"{path}.weight", "expected an integer")
        weight = weight or 1
        if name in seen:
            raise ArgsError(f"{path}.name", f'Duplicate value: "{name}"')
        seen.add(name)
        if weight != 1:
            raise ArgsError(f"{path}.weight", f"Invalid value: {weight}: must be 1")
        specs.append(ResourceSpec(name, weight))
    return NodeResourcesBalancedAllocationArgs(tuple(specs) or DEFAULT_RESOURCES)


def pod_request(pod: PodView, name: str) -> int:
    """The pod's actual request (cpu in millicores), overhead and init containers included."""
    return pod.requests.get(name)


def allocatable_and_requested(node_info: NodeInfo, name: str, request: int) -> tuple[int, int]:
    """(allocatable, requested incl. the pod) with the node's actual requests (useRequested);
    (0, 0) leaves the resource out of the score."""
    allocatable = node_info.allocatable
    requested = node_info.requested
    if name == "cpu":
        return allocatable.milli_cpu, requested.milli_cpu + request
    if name == "memory":
        return allocatable.memory, requested.memory + request
    if name == "ephemeral-storage":
        return allocatable.ephemeral_storage, requested.ephemeral_storage + request
    if name == "pods" or request == 0:
        # An extended resource the pod does not request is not scored.
        return 0, 0
    capacity = allocatable.scalar.get(name)
    if capacity is None:
        return 0, 0
    return capacity, requested.scalar.get(name, 0) + request


def balanced_resource_scorer(
    requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]
) -> int:
    """Upstream's balancedResourceScorer (v1.36): the improvement in balance that placing the
    pod brings, mapped back to [MaxNodeScore/2, MaxNodeScore] (75 when it changes nothing)."""
    with_pod = balanced_resource_score(requested, allocatable)
    without_pod = balanced_resource_score(allocated, allocatable)
    return MAX_NODE_SCORE // 2 + _go_div2(MAX_NODE_SCORE // 2 + with_pod - without_pod)


def _go_div2(value: int) -> int:
    """value / 2 in Go's int64 division (truncates toward zero; Python's // floors)."""
    return value // 2 if value >= 0 else -(-value // 2)


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """Upstream's balancedResourceScore: the balance of one set of requests, in the same
    float64 operations."""
    fractions: list[float] = []
    total = 0.0
    for req, alloc in zip(requested, allocatable, strict=True):
        if alloc == 0:
            continue
        fraction = float(req) / float(alloc)
        if fraction > 1:
            fraction = 1.0
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = math.fabs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / float(len(fractions))
        squares = 0.0
        for fraction in fractions:
            squares = squares + (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / float(len(fractions)))
    return int((1 - std) * float(MAX_NODE_SCORE))


class NodeResourcesBalancedAllocation:
    name = NAME

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Filtering and scoring read the container requests and overheads (upstream SignPod)."""
        return [signers.resources_fragment(pod)], Status.OK

    def __init__(
        self, args: NodeResourcesBalancedAllocationArgs | None = None, handle: Handle | None = None
    ) -> None:
        self.args = args or NodeResourcesBalancedAllocationArgs()
        self._resources = tuple(spec.name for spec in self.args.resources)
        self._memo = RowMemo()  # scores per pod requests (scheduler/cache/row_memo.py)

    def _pod_requests(self, pod: PodView) -> tuple[int, ...]:
        return tuple(pod_request(pod, name) for name in self._resources)

    def pre_score(self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]) -> Status:
        requests = self._pod_requests(pod)
        if not any(requests):
            # Best-effort pods would all pile onto one node otherwise (upstream issue 129138).
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, requests)
        return Status.OK

    def _state_requests(self, state: CycleState, pod: PodView) -> tuple[int, ...]:
        try:
            requests: tuple[int, ...] = state.read(PRE_SCORE_STATE_KEY)
        except KeyError:
            requests = self._pod_requests(pod)  # PreScore disabled: compute here, as upstream
        return requests

    def _score(self, node_info: NodeInfo, requests: Sequence[int]) -> int:
        allocatable: list[int] = []
        requested: list[int] = []
        allocated: list[int] = []
        for name, request in zip(self._resources, requests, strict=True):
            alloc, req = allocatable_and_requested(node_info, name, request)
            allocatable.append(alloc)
            requested.append(req if alloc else 0)
            allocated.append(req - request if alloc else 0)
        return balanced_resource_scorer(requested, allocated, allocatable)

    def score(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> tuple[int, Status]:
        requests = self._state_requests(state, pod)
        if not any(requests):
            return 0, Status.OK
        return self._score(node_info, requests), Status.OK

    def score_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> IntArray | None:
        """`score` over table rows; extended resources the pod requests go per node."""
        requests = self._state_requests(state, pod)
        if not any(requests):
            return np.zeros(len(rows), dtype=np.int64)
        if not fits_int64(*requests):
            return None
        columns = self._score_columns(requests)
        if columns is None:
            return None
        infos = table.infos

        def some_rows(some: Rows) -> IntArray:
            return _balanced_rows(table, some, columns)

        return self._memo.values(
            requests, table, rows, lambda row: self._score(infos[row], requests), some_rows
        )

    def _score_columns(self, requests: Sequence[int]) -> list[tuple[str, str, int]] | None:
        """(allocatable column, requested column, pod request) per scored resource; None when
        a resource the pod requests has no column (the per-node path scores it)."""
        columns = []
        for name, request in zip(self._resources, requests, strict=True):
            if name in _SCORE_COLUMNS:
                columns.append((*_SCORE_COLUMNS[name], request))
            elif name != "pods" and request != 0:
                return None
            # else not scored, as allocatable_and_requested decides
        return columns

    def score_extensions(self) -> ScoreExtensions | None:
        return None


def _balanced_rows(table: NodeTable, rows: Rows, columns: list[tuple[str, str, int]]) -> IntArray:
    """The score of `rows` from the table's columns (`_score_columns`)."""
    allocatable = [getattr(table, alloc)[rows] for alloc, _, _ in columns]
    allocated = [getattr(table, used)[rows] for _, used, _ in columns]
    requested = [used + request for used, (_, _, request) in zip(allocated, columns, strict=True)]
    size = len(rows)
    with_pod = balanced_resource_score_rows(requested, allocatable, size)
    without_pod = balanced_resource_score_rows(allocated, allocatable, size)
    change = MAX_NODE_SCORE // 2 + with_pod - without_pod
    # Go's int64 division by 2 truncates toward zero.
    halved = np.where(change >= 0, change // 2, -(-change // 2))
    scores: IntArray = MAX_NODE_SCORE // 2 + halved
    return scores


def balanced_resource_score_rows(
    requested: Sequence[IntArray], allocatable: Sequence[IntArray], size: int
) -> IntArray:
    """`balanced_resource_score` per row, in the same float64 operations and order."""
    if len(allocatable) == 2 and allocatable[0].all() and allocatable[1].all():
        # Two resources counted on every row (cpu and memory, the default): the deviation is
        # half the fractions' difference, the masks of the general case change nothing.
        first = np.minimum(requested[0] / allocatable[0], 1.0)
        second = np.minimum(requested[1] / allocatable[1], 1.0)
        deviation = np.abs((first - second) / 2)
        two: IntArray = ((1 - deviation) * float(MAX_NODE_SCORE)).astype(np.int64)
        return two
    included = [alloc != 0 for alloc in allocatable]
    fractions: list[FloatArray] = []
    for req, alloc, counted in zip(requested, allocatable, included, strict=True):
        divisor = np.where(counted, alloc, 1).astype(np.float64)
        fraction = np.minimum(req.astype(np.float64) / divisor, 1.0)
        fractions.append(np.where(counted, fraction, 0.0))
    count = np.zeros(size, dtype=np.int64)
    total = np.zeros(size, dtype=np.float64)
    first = np.zeros(size, dtype=np.float64)
    second = np.zeros(size, dtype=np.float64)
    for fraction, counted in zip(fractions, included, strict=True):
        first = np.where(counted & (count == 0), fraction, first)
        second = np.where(counted & (count == 1), fraction, second)
        count += counted
        total = total + fraction  # excluded resources add 0.0, which changes nothing
    std = np.where(count == 2, np.abs((first - second) / 2), 0.0)
    if len(fractions) > 2:
        many = count > 2
        mean = total / np.where(many, count, 1).astype(np.float64)
        squares = np.zeros(size, dtype=np.float64)
        for fraction, counted in zip(fractions, included, strict=True):
            deviation = fraction - mean
            squares = squares + np.where(counted, deviation * deviation, 0.0)
        spread = np.sqrt(squares / np.where(many, count, 1).astype(np.float64))
        std = np.where(many, spread, std)
    scores: IntArray = ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
    return scores


PLUGIN_ENTRY = PluginEntry(NAME, NodeResourcesBalancedAllocation, decode_balanced_allocation_args)
