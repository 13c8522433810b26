"""NodeResourcesFit: Filter nodes without room for the pod's requests; Score by allocation.

Upstream: pkg/scheduler/framework/plugins/noderesources/fit.go and resource_allocation.go
(queueing hints and in-place pod resize enabled; PodLevelResources and
InPlacePodLevelResourcesVerticalScaling as the process's gates say, scheduler.api.request_gates).
The pod's requests come from scheduler.api.requests (resourcehelper.PodRequests);
a bound pod whose requests shrink (a resize down, UpdatePodScaleDown) requeues pods that want
what it frees (isSchedulableAfterPodScaleDown).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scheduler.api.objects import NodeView, PodView, Resource
from scheduler.api.pod import requests_for_resize_hints
from scheduler.api.request_gates import request_gates
from scheduler.api.requests import fit_score_requests, is_pod_level_requests_set
from scheduler.cache.node_table import IntArray, NodeTable, fits_int64
from scheduler.cache.row_memo import RowMemo
from scheduler.cache.rows import Rows, RowVerdict
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from scheduler.framework.interface import (
    CycleState,
    Handle,
    NominatedPodsVerdict,
    PreemptionHandle,
    PreFilterResult,
    ScoreExtensions,
    SignFragment,
)
from scheduler.framework.runtime import batch as signers
from scheduler.framework.status import Status
from scheduler.plugins.dynamicresources.extended import fit_delegation
from scheduler.plugins.noderesources.args import NodeResourcesFitArgs
from scheduler.plugins.noderesources.fit_alone import nominated_pods_verdict
from scheduler.plugins.noderesources.resource_view import FIT, ResourceFilter, ResourceView
from scheduler.plugins.noderesources.scoring import row_scorer_for, scorer_for

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.interface import PreFilterExtensions

NAME = FIT
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
_NATIVE = ("cpu", "memory", "ephemeral-storage", "pods")
# The NodeTable columns Score reads per resource: allocatable, and requested with upstream's
# non-zero defaults for cpu and memory (NonZeroRequested).
_SCORE_COLUMNS = {
    "cpu": ("alloc_cpu", "nonzero_cpu"),
    "memory": ("alloc_memory", "nonzero_memory"),
    "ephemeral-storage": ("alloc_ephemeral", "req_ephemeral"),
}
#: The reasons of a row rejection, by bit (`_row_rejections_of`), in `_row_rejection`'s order.
_ROW_REASONS = (
    "Too many pods",
    "Insufficient cpu",
    "Insufficient memory",
    "Insufficient ephemeral-storage",
)


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    # The request exceeds the node's allocatable, so no preemption on it can help (fit.go's
    # Unresolvable since v1.36; the pod count never is).
    unresolvable: bool = False


def is_extended_resource_name(name: str) -> bool:
    """Upstream's IsExtendedResourceName: namespaced, outside kubernetes.io, not "requests."."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def fits_request(
    request: Resource,
    node_info: ResourceView,
    ignored_resources: frozenset[str] = frozenset(),
    ignored_groups: frozenset[str] = frozenset(),
    delegated: Callable[[str, int], bool] | None = None,
) -> list[InsufficientResource]:
    """Every resource the node lacks for `request`, in upstream's order and words;
    `delegated(name, allocatable)` says which extended resources DynamicResources serves
    (DRAExtendedResource: shouldDelegateResourceToDRA)."""
    insufficient = []
    allocatable = node_info.allocatable
    requested = node_info.requested
    pod_count = node_info.num_pods  # len(pods) without building a NodeInfo's pod list
    if pod_count + 1 > allocatable.allowed_pod_number:
        insufficient.append(
            InsufficientResource(
                "pods", "Too many pods", 1, pod_count, allocatable.allowed_pod_number
            )
        )
    if (
        request.milli_cpu == 0
        and request.memory == 0
        and request.ephemeral_storage == 0
        and not any(request.scalar.values())
    ):
        return insufficient
    if request.milli_cpu > 0 and request.milli_cpu > allocatable.milli_cpu - requested.milli_cpu:
        insufficient.append(
            InsufficientResource(
                "cpu",
                "Insufficient cpu",
                request.milli_cpu,
                requested.milli_cpu,
                allocatable.milli_cpu,
                request.milli_cpu > allocatable.milli_cpu,
            )
        )
    if request.memory > 0 and request.memory > allocatable.memory - requested.memory:
        insufficient.append(
            InsufficientResource(
                "memory",
                "Insufficient memory",
                request.memory,
                requested.memory,
                allocatable.memory,
                request.memory > allocatable.memory,
            )
        )
    if (
        request.ephemeral_storage > 0
        and request.ephemeral_storage > allocatable.ephemeral_storage - requested.ephemeral_storage
    ):
        insufficient.append(
            InsufficientResource(
                "ephemeral-storage",
                "Insufficient ephemeral-storage",
                request.ephemeral_storage,
                requested.ephemeral_storage,
                allocatable.ephemeral_storage,
                request.ephemeral_storage > allocatable.ephemeral_storage,
            )
        )
    for name, amount in request.scalar.items():
        if amount == 0:
            continue
        if is_extended_resource_name(name) and (
            name in ignored_resources or name.split("/", 1)[0] in ignored_groups
        ):
            continue
        if delegated is not None and delegated(name, allocatable.scalar.get(name, 0)):
            continue
        free = allocatable.scalar.get(name, 0) - requested.scalar.get(name, 0)
        if amount > free:
            insufficient.append(
                InsufficientResource(
                    name,
                    f"Insufficient {name}",
                    amount,
                    requested.scalar.get(name, 0),
                    allocatable.scalar.get(name, 0),
                    amount > allocatable.scalar.get(name, 0),
                )
            )
    return insufficient


def insufficient_status(insufficient: Sequence[InsufficientResource], plugin: str = "") -> Status:
    """Filter's status for what the node lacks: every reason, UnschedulableAndUnresolvable
    when one request exceeds the node's allocatable (fit.go's Filter)."""
    reasons = (item.reason for item in insufficient)
    if any(item.unresolvable for item in insufficient):
        return Status.unresolvable(*reasons, plugin=plugin)
    return Status.unschedulable(*reasons, plugin=plugin)


def fits(pod: PodView, node_info: NodeInfo) -> list[InsufficientResource]:
    """Whether the pod fits the node, ignoring nothing (for preemption and hints)."""
    return fits_request(pod.requests, node_info)


class _BareNode:
    """A node with no pods: enough of NodeInfo for fits_request in queueing hints."""

    def __init__(self, node: NodeView) -> None:
        self.node = node
        self.pods: list[PodView] = []
        self.num_pods = 0
        self.allocatable = node.allocatable
        self.requested = Resource()


def _fits_empty_node(pod: PodView, node: NodeView) -> bool:
    return not fits_request(pod.requests, _BareNode(node))


def _requested_resources_increased(pod: PodView, old: NodeView, new: NodeView) -> bool:
    if new.allocatable.allowed_pod_number > old.allocatable.allowed_pod_number:
        return True
    request = pod.requests
    for name in ("cpu", "memory", "ephemeral-storage", *request.scalar):
        if request.get(name) > 0 and new.allocatable.get(name) > old.allocatable.get(name):
            return True
    return False


def _pod_request_for_scoring(requests: Resource, name: str, non_zero: tuple[int, int]) -> int:
    """Non-zero requests for cpu / memory (100m / 200Mi per container without one)."""
    if name == "cpu":
        return non_zero[0]
    if name == "memory":
        return non_zero[1]
    return requests.get(name)


def _scoring_requests(pod: PodView) -> tuple[Resource, tuple[int, int]]:
    """The incoming pod's requests and non-zero cpu / memory as Score counts them
    (scheduler.api.requests.fit_score_requests): the pod level left out, so only a pod with
    pod-level requests, and only while PodLevelResources is on, is counted otherwise than
    the cache counts it."""
    spec = pod.raw.get("spec")
    if (
        isinstance(spec, Mapping)
        and spec.get("resources")
        and request_gates().pod_level_resources
        and is_pod_level_requests_set(spec)
    ):
        requests = fit_score_requests(spec)
        return requests, (requests.milli_cpu, requests.memory)
    return pod.requests, (pod.non_zero_milli_cpu, pod.non_zero_memory)


def allocatable_and_requested(node_info: NodeInfo, name: str, pod_request: int) -> tuple[int, int]:
    """(allocatable, requested incl. the pod) as upstream's calculateResourceAllocatableRequest."""
    if name == "cpu":
        return node_info.allocatable.milli_cpu, node_info.non_zero_requested.milli_cpu + pod_request
    if name == "memory":
        return node_info.allocatable.memory, node_info.non_zero_requested.memory + pod_request
    if name == "ephemeral-storage":
        return (
            node_info.allocatable.ephemeral_storage,
            node_info.requested.ephemeral_storage + pod_request,
        )
    # An extended resource the pod doesn't request is left out of the score.
    if pod_request == 0 or name not in node_info.allocatable.scalar:
        return 0, 0
    return (
        node_info.allocatable.scalar[name],
        node_info.requested.scalar.get(name, 0) + pod_request,
    )


class NodeResourcesFit(ResourceFilter):
    name = NAME

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Feasibility and scoring read the container requests and overheads (upstream SignPod)."""
        return [signers.resources_fragment(pod)], Status.OK

    def __init__(self, args: NodeResourcesFitArgs | None, handle: Handle | None = None) -> None:
        self.args = args or NodeResourcesFitArgs()
        self._ignored = frozenset(self.args.ignored_resources)
        self._ignored_groups = frozenset(self.args.ignored_resource_groups)
        self._resources = tuple(spec.name for spec in self.args.scoring_strategy.resources)
        self._scorer = scorer_for(self.args.scoring_strategy)
        self._row_scorer = row_scorer_for(self.args.scoring_strategy)
        self._memo = RowMemo()  # scores per pod requests (scheduler/cache/row_memo.py)
        self._weights = tuple(spec.weight for spec in self.args.scoring_strategy.resources)
        # Rejections of the row fast path by their reasons, built once (statuses are values).
        self._row_rejections: dict[tuple[bool | str, ...], Status] = {}
        # extended resources DynamicResources serves through DeviceClasses (None: gate off)
        self._delegated = fit_delegation(handle)

    # PreFilter / Filter

    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        state.write(PRE_FILTER_STATE_KEY, pod.requests)
        return None, Status.OK

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        return self.filter_resources(state, node_info)

    def nominated_pods_verdict(
        self, handle: PreemptionHandle, state: CycleState, pod: PodView
    ) -> NominatedPodsVerdict | None:
        """The row pass's one-step verdict on nodes with nominated pods when this plugin
        alone decides (NominatedPodsFilterPlugin; see fit_alone)."""
        return nominated_pods_verdict(handle, state, pod)

    def filter_resources(self, state: CycleState, node_info: ResourceView) -> Status:
        """`filter` on anything with a node's allocatable, requested and pods."""
        try:
            request: Resource = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            return Status.error(
                f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'
            )
        insufficient = fits_request(
            request, node_info, self._ignored, self._ignored_groups, self._delegated
        )
        if insufficient:
            return insufficient_status(insufficient)
        return Status.OK

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict | None:
        """`filter` over table rows; pods requesting extended resources go per node."""
        try:
            request: Resource = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            return None
        if any(request.scalar.values()) or not fits_int64(
            request.milli_cpu, request.memory, request.ephemeral_storage
        ):
            return None
        failed = table.pod_count[rows] + 1 > table.alloc_pods[rows]
        for amount, allocatable, requested in (
            (request.milli_cpu, table.alloc_cpu, table.req_cpu),
            (request.memory, table.alloc_memory, table.req_memory),
            (request.ephemeral_storage, table.alloc_ephemeral, table.req_ephemeral),
        ):
            if amount > 0:
                failed |= amount > allocatable[rows] - requested[rows]
        return RowVerdict(
            ~failed,
            lambda row: self._row_rejection(request, table, row),
            lambda rejected: self._row_rejections_of(request, table, rejected),
        )

    def _row_rejection(self, request: Resource, table: NodeTable, row: int) -> Status:
        reasons: list[str] = []
        unresolvable = False
        if int(table.pod_count[row]) + 1 > int(table.alloc_pods[row]):
            reasons.append("Too many pods")
        for amount, allocatable, requested, reason in (
            (request.milli_cpu, table.alloc_cpu, table.req_cpu, "Insufficient cpu"),
            (request.memory, table.alloc_memory, table.req_memory, "Insufficient memory"),
            (
                request.ephemeral_storage,
                table.alloc_ephemeral,
                table.req_ephemeral,
                "Insufficient ephemeral-storage",
            ),
        ):
            if amount > 0 and amount > int(allocatable[row]) - int(requested[row]):
                reasons.append(reason)
                unresolvable |= amount > int(allocatable[row])
        return self._rejection(unresolvable, reasons)

    def _row_rejections_of(self, request: Resource, table: NodeTable, rows: Rows) -> list[Status]:
        """`_row_rejection` of each row, with array operations: each row's reasons as bits."""
        bits = (table.pod_count[rows] + 1 > table.alloc_pods[rows]).astype(np.int64)
        unresolvable = np.zeros(len(rows), dtype=np.bool_)
        for bit, (amount, allocatable, requested) in enumerate(
            (
                (request.milli_cpu, table.alloc_cpu, table.req_cpu),
                (request.memory, table.alloc_memory, table.req_memory),
                (request.ephemeral_storage, table.alloc_ephemeral, table.req_ephemeral),
            ),
            start=1,
        ):
            if amount > 0:
                available = allocatable[rows]
                short = amount > available - requested[rows]
                bits |= short.astype(np.int64) << bit
                unresolvable |= short & (amount > available)
        bits |= unresolvable.astype(np.int64) << 4
        by_bits = {
            value: self._rejection(
                bool(value & 16),
                [reason for bit, reason in enumerate(_ROW_REASONS) if value & (1 << bit)],
            )
            for value in np.unique(bits).tolist()
        }
        return [by_bits[value] for value in bits.tolist()]

    def _rejection(self, unresolvable: bool, reasons: list[str]) -> Status:
        key: tuple[bool | str, ...] = (unresolvable, *reasons)
        status = self._row_rejections.get(key)
        if status is None:
            status = self._row_rejections[key] = (
                Status.unresolvable(*reasons, plugin=NAME)
                if unresolvable
                else Status.unschedulable(*reasons, plugin=NAME)
            )
        return status

    # PreScore / Score

    def pre_score(self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]) -> Status:
        state.write(PRE_SCORE_STATE_KEY, self._pod_requests(pod))
        return Status.OK

    def _pod_requests(self, pod: PodView) -> tuple[int, ...]:
        requests, non_zero = _scoring_requests(pod)
        return tuple(_pod_request_for_scoring(requests, name, non_zero) for name in self._resources)

    def score(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> tuple[int, Status]:
        try:
            pod_requests: tuple[int, ...] = state.read(PRE_SCORE_STATE_KEY)
        except KeyError:
            pod_requests = self._pod_requests(pod)
        return self._score(node_info, pod_requests), Status.OK

    def _score(self, node_info: NodeInfo, pod_requests: Sequence[int]) -> int:
        allocatable: list[int] = []
        requested: list[int] = []
        for name, pod_request in zip(self._resources, pod_requests, strict=True):
            alloc, req = allocatable_and_requested(node_info, name, pod_request)
            allocatable.append(alloc)
            requested.append(req)
        return self._scorer(requested, allocatable)

    def score_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> IntArray | None:
        """`score` over table rows; extended resources the pod requests go per node."""
        if self._row_scorer is None:
            return None
        try:
            pod_requests: tuple[int, ...] = state.read(PRE_SCORE_STATE_KEY)
        except KeyError:
            pod_requests = self._pod_requests(pod)
        if not fits_int64(*pod_requests):
            return None
        columns = self._score_columns(pod_requests)
        if columns is None:
            return None
        if not columns:
            return np.zeros(len(rows), dtype=np.int64)
        row_scorer = self._row_scorer
        infos = table.infos

        def some_rows(some: Rows) -> IntArray:
            allocatable = [getattr(table, alloc)[some] for alloc, _, _, _ in columns]
            requested = [getattr(table, used)[some] + request for _, used, request, _ in columns]
            return row_scorer(requested, allocatable, [weight for _, _, _, weight in columns])

        return self._memo.values(
            pod_requests, table, rows, lambda row: self._score(infos[row], pod_requests), some_rows
        )

    def _score_columns(self, pod_requests: Sequence[int]) -> list[tuple[str, str, int, int]] | None:
        """(allocatable column, requested column, pod request, weight) per scored resource;
        None when a resource the pod requests has no column (the per-node path scores it)."""
        columns = []
        for name, pod_request, weight in zip(
            self._resources, pod_requests, self._weights, strict=True
        ):
            if name in _SCORE_COLUMNS:
                columns.append((*_SCORE_COLUMNS[name], pod_request, weight))
            elif pod_request != 0:
                return None
            # else left out of the score, as allocatable_and_requested does
        return columns

    def score_extensions(self) -> ScoreExtensions | None:
        return None

    # Queueing

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN
                ),
                self._schedulable_after_pod_event,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
                ),
                self._schedulable_after_node_change,
            ),
        )

    @staticmethod
    def _schedulable_after_pod_event(pod: Any, old: Any, new: Any) -> QueueingHint:
        if new is None:
            # Only a deleted pod that held resources on a node (or was nominated to one, and so
            # counted there for pods of lower priority) can free them.
            held = isinstance(old, PodView) and (old.is_bound or bool(old.nominated_node_name))
            return QueueingHint.QUEUE if held else QueueingHint.SKIP
        if not isinstance(old, PodView) or not isinstance(new, PodView):
            return QueueingHint.QUEUE
        if new.uid == pod.uid:
            return QueueingHint.QUEUE
        if not new.is_bound:
            return QueueingHint.SKIP
        # isSchedulableAfterPodScaleDown's PodResourcesOptions leave SkipPodLevelResources
        # unset: pod-level requests count here even with PodLevelResources off (fit.go)
        wanted = requests_for_resize_hints(pod)
        before, after = requests_for_resize_hints(old), requests_for_resize_hints(new)
        for name in ("cpu", "memory", "ephemeral-storage", *wanted.scalar):
            if wanted.get(name) and before.get(name) > after.get(name):
                return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def _schedulable_after_node_change(pod: Any, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, NodeView):
            return QueueingHint.QUEUE
        if not _fits_empty_node(pod, new):
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        if isinstance(old, NodeView) and not _requested_resources_increased(pod, old, new):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE
