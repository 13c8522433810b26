"""The DynamicResources plugin: ResourceClaims allocated and reserved as part of scheduling.

Upstream: pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go (v1.36). The
extension points, in the order a pod meets them:

- PreEnqueue: the pod waits (gated, unschedulable) until each of its claims exists, is not
  being deleted and, when generated from a template, is the pod's.
- PreFilter: reads the claims; Skip for pods without any (so Filter, Score and the rest do
  nothing for them). A claim allocated and reserved up to the limit for other pods rejects
  the pod; an allocated claim's node selector restricts the nodes (checked in Filter); claims
  still to allocate get a structured Allocator over the devices allocated by every claim and
  every in-flight allocation.
- Filter: per node, allocated claims must be available there and the others allocatable.
- PostFilter: deallocates one allocated claim the pod cannot use that nobody else uses.
- Score: prefers nodes where earlier `firstAvailable` alternatives were allocated.
- Reserve: the allocation decided for the chosen node goes in flight (its devices count as
  allocated for every later pod) until PreBind has written it; Unreserve takes it back.
- PreBind: writes `status.allocation` (with the finalizer first) and adds the pod to
  `status.reservedFor`, retrying on conflicts with a fresh claim.

Pods without claims cost a tuple test at PreEnqueue, a state write at PreFilter (Skip), and a
state read at Reserve and PreBind.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from scheduler.api.errors import MalformedObject
from scheduler.api.objects import PodView
from scheduler.api.resource import ResourceClaimView, ResourceSliceView
from scheduler.api.selectors import NodeSelector
from scheduler.cache.node_table import IntArray, NodeTable
from scheduler.cache.rows import Rows, RowVerdict, default_normalize_rows
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    NodeDetails,
    NodeScore,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    ScoreExtensions,
    SignFragment,
)
from scheduler.framework.status import Status
from scheduler.listers.resource_objects import ResourceObjects
from scheduler.plugins.dynamicresources import binding, extended, hints, writes
from scheduler.plugins.dynamicresources.allocator import (
    AllocatedState,
    AllocationError,
    AllocationResult,
    Allocator,
    FailedAllocationOnNode,
)
from scheduler.plugins.dynamicresources.args import (
    BINDING_TIMEOUT_DEFAULT,
    DynamicResourcesArgs,
    validate_dynamic_resources_args,
)
from scheduler.plugins.dynamicresources.cel import CelCache
from scheduler.plugins.dynamicresources.claims import ClaimsNotReady, pod_claims
from scheduler.plugins.dynamicresources.diagnosis import diagnose
from scheduler.plugins.dynamicresources.features import Features
from scheduler.plugins.dynamicresources.memo import AllocationMemo, claims_key
from scheduler.plugins.dynamicresources.ranking import DeviceRanker, profile_device_ranker
from scheduler.plugins.dynamicresources.results import (
    allocation_span_attributes,
    prioritized_list_score,
)
from scheduler.plugins.dynamicresources.selector_worker import (
    WAITING_MESSAGE,
    SelectorGate,
    claim_selectors,
)
from scheduler.plugins.dynamicresources.writes import (
    CONFLICT_DELAY,
    CONFLICT_RETRIES,
)
from scheduler.plugins.dynamicresources.writes import BindError as _BindError
from scheduler.plugins.dynamicresources.writes import api_message as _api_message
from scheduler.plugins.dynamicresources.writes import claim_path as _claim_path
from scheduler.plugins.normalize_score import default_normalize_score

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.interface import PreFilterExtensions

log = logging.getLogger(__name__)

NAME = "DynamicResources"
STATE_KEY = NAME
# resourceapi.ResourceClaimReservedForMaxSize
RESERVED_FOR_MAX_SIZE = 256

ERR_CANNOT_ALLOCATE = "cannot allocate all claims"
ERR_NOT_AVAILABLE = "resourceclaim not available on the node"
ERR_TIMED_OUT = "timed out trying to allocate devices"


def _unschedulable(message: str) -> Status:
    """Upstream's statusUnschedulable: UnschedulableAndUnresolvable (preemption cannot
    free devices)."""
    return Status.unresolvable(message)


@dataclass(slots=True, eq=False)
class _ClaimInfo:
    # Where an allocated claim is available (its allocation's node selector).
    available_on_nodes: NodeSelector | None = None
    # Set by Reserve, written by PreBind; None when nothing had to be allocated.
    allocation: AllocationResult | None = None


@dataclass(slots=True, eq=False)
class DRAState:
    """PreFilter's findings for one attempt (upstream's stateData). `clone` returns itself,
    as upstream's: preemption's dry runs share it."""

    claims: list[ResourceClaimView] = field(default_factory=list)
    infos: list[_ClaimInfo] = field(default_factory=list)
    allocator: Allocator | None = None
    # Indices of allocated claims some node could not use (for PostFilter).
    unavailable_claims: set[int] = field(default_factory=set)
    # Filter's allocation results per node name, in the order of the claims to allocate.
    node_allocations: dict[str, list[AllocationResult]] = field(default_factory=dict)
    # DRAExtendedResource: the index of the extended-resource claim in `claims` (-1: none),
    # the claim Filter filled for each node (None: the node needs no device for them), and
    # the pod itself (PreBind records the claim in its status)
    extended_index: int = -1
    # allocated claims whose binding conditions failed or timed out
    binding_stuck: set[int] = field(default_factory=set)
    special_uid: str = ""  # the in-memory claim's uid, under which Reserve put it in flight
    node_extended: dict[str, extended.NodeClaim | None] = field(default_factory=dict)
    # The AllocationMemo's key for this attempt (None: not memoised), and the tracker's and
    # the objects' versions the allocator's state was read at
    memo_key: tuple[Any, ...] | None = None
    memo_versions: tuple[int, int] = (0, 0)

    def clone(self) -> DRAState:
        return self

    def to_allocate(self) -> list[tuple[int, ResourceClaimView]]:
        return [(i, c) for i, c in enumerate(self.claims) if c.allocation is None]

    def to_allocate_on(self, node_name: str) -> list[tuple[int, ResourceClaimView]]:
        """The claims to allocate on one node: the extended-resource claim as Filter filled
        it there, or left out where the node needs no device for the pod's resources."""
        pairs = self.to_allocate()
        if self.extended_index < 0 or self.claims[self.extended_index].allocation is not None:
            return pairs
        node_claim = self.node_extended.get(node_name)
        return [
            (i, node_claim.claim if i == self.extended_index and node_claim else c)
            for i, c in pairs
            if i != self.extended_index or node_claim is not None
        ]


_NO_CLAIMS = DRAState()


class DynamicResources:
    name = NAME
    #: Ranks the devices a request may get on a node (ranking.py); None, as in every
    #: built-in profile: upstream's order. Set by a subclass registered out of tree.
    device_ranker: ClassVar[DeviceRanker | None] = None

    def __init__(self, args: DynamicResourcesArgs | None = None, handle: Handle | None = None):
        if handle is None:
            raise ValueError("DynamicResources needs a framework handle")
        self._handle = handle
        self.features = Features.from_gates(getattr(handle, "feature_gates", None))
        args = args if args is not None else DynamicResourcesArgs()
        # Decoded with the default gates (check-config); held to the running ones here.
        validate_dynamic_resources_args(args, self.features)
        self.args = args
        self.filter_timeout = (args.filter_timeout or 0.0) if self.features.filter_timeout else 0.0
        self.binding_timeout = (
            args.binding_timeout if args.binding_timeout is not None else BINDING_TIMEOUT_DEFAULT
        )
        self._allocator_features = self.features.allocator_features()
        # Compiled CEL selectors (upstream: an LRU of 10) and their results per device,
        # shared by every cycle's Allocator.
        self._cel_cache = CelCache(consumable_capacity=self._allocator_features.consumable_capacity)
        # Selectors too expensive for a scheduling cycle, evaluated on a worker thread while
        # their pod waits (selector_worker.py); without the queue's activator, inline.
        self._selector_gate = SelectorGate(self._cel_cache, getattr(handle, "pod_activator", None))
        # Filter's answers per node across cycles (memo.py), forgotten when a class, slice or
        # taint rule changes.
        self._memo = AllocationMemo()
        resources = handle.cluster_objects.resources
        for store in (resources.classes, resources.slices, resources.taint_rules):
            store.subscribe(self._memo.objects_changed)
        # Unreserve's API calls (Unreserve is not a coroutine): held until done.
        self._background: set[asyncio.Task[None]] = set()

    @property
    def resources(self) -> ResourceObjects:
        return self._handle.cluster_objects.resources

    # -- batching --------------------------------------------------------------------------

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Upstream's SignPod: pods with claims are never batched (kubernetes#134986), nor
        (NodeResourcesFit's SignPod) pods asking for an extended resource a class backs."""
        if pod.resource_claims:
            return (), Status.unschedulable("pods with dra resource claims are not signable")
        if (
            self.features.extended_resource
            and pod.requests.scalar
            and extended.backed_by_dra(pod, self.resources)
        ):
            return (), Status.unschedulable(
                "signature disabled when dra extended resources are used in the cluster"
            )
        return (), Status.OK

    # -- queueing --------------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """Upstream's EventsToRegister with queueing hints on (no UpdateNodeTaint)."""
        resources = self.resources
        return (
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE,
                    ActionType.ADD
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_ALLOCATABLE,
                )
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE),
                lambda pod, old, new: hints.schedulable_after_claim_change(
                    resources, pod, old, new
                ),
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                lambda pod, old, new: hints.schedulable_after_pod_change(resources, pod, old, new),
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)
            ),
        )

    def pre_enqueue(self, pod: PodView) -> Status:
        if not pod.resource_claims:
            return Status.OK
        resources = self.resources
        try:
            claims = pod_claims(pod, resources)
        except ClaimsNotReady as err:
            return _unschedulable(str(err))
        if self._selectors_pending(pod, claims, lambda: list(resources.slices.list())):
            return _unschedulable(WAITING_MESSAGE)
        return Status.OK

    def _selectors_pending(
        self,
        pod: PodView,
        claims: Sequence[ResourceClaimView],
        slices: Callable[[], Sequence[ResourceSliceView]],
    ) -> bool:
        """Whether the pod waits for selectors compiled or evaluated off the event loop."""
        expressions = claim_selectors(claims, self.resources.classes.by_key.get)
        return self._selector_gate.pending(pod, expressions, slices)

    # -- PreFilter -------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        resources = self.resources
        wants_extended = (
            self.features.extended_resource
            and bool(pod.requests.scalar)
            and extended.backed_by_dra(pod, resources)
        )
        if not pod.resource_claims and not wants_extended:
            state.write(STATE_KEY, _NO_CLAIMS)
            return None, Status.skip()
        s = DRAState()
        state.write(STATE_KEY, s)
        try:
            claims = pod_claims(pod, resources) if pod.resource_claims else []
        except ClaimsNotReady as err:
            return None, _unschedulable(str(err))
        if wants_extended:
            s.extended_index = len(claims)
            found = extended.find_claim(pod, resources)
            if found is None:
                found = extended.special_claim(pod)
                s.special_uid = found.uid
            claims.append(found)
        if not claims:
            return None, Status.skip()
        tracker = resources.tracker
        infos = [_ClaimInfo() for _ in claims]
        to_allocate = 0
        for index, claim in enumerate(claims):
            if claim.allocation is not None:
                if self.features.binding_conditions and binding.claim_stuck(
                    claim, self.binding_timeout
                ):
                    # failed or timed out: PostFilter may deallocate it to try other devices
                    s.binding_stuck.add(index)
                if len(claim.reserved_for) >= RESERVED_FOR_MAX_SIZE and not claim.is_reserved_for(
                    pod.uid
                ):
                    return None, _unschedulable("resourceclaim in use")
                selector = claim.allocation.node_selector
                if selector is not None:
                    if selector.parse_errors:
                        return None, Status.error("; ".join(selector.parse_errors))
                    infos[index].available_on_nodes = selector
                continue
            to_allocate += 1
            if tracker.has_pending_allocation(claim.uid):
                return None, _unschedulable(
                    f"resource claim {claim.namespace}/{claim.name} is in the process of "
                    "being allocated"
                )
            status = self._check_requests(claim)
            if status is not None:
                return None, status
        if to_allocate:
            shared, consumed = tracker.allocated_shared()
            devices = tracker.allocated_devices()
            if not self._allocator_features.consumable_capacity:
                # foreachAllocatedDevice: without the feature a share is a whole device
                devices = devices | {device for device, _ in shared}
                shared, consumed = frozenset(), {}
            allocated = AllocatedState(
                devices=devices,
                shared_device_ids=shared,
                consumed_capacity=consumed,
            )
            # a subclass's ranker, else one a Score plugin of the profile offers
            ranker = self.device_ranker or profile_device_ranker(self._handle, pod)
            slices, slice_index = self._memo.slices(
                resources,
                self.features.device_taint_rules,
                self._allocator_features.partitionable_devices,
            )
            try:
                s.allocator = Allocator(
                    features=self._allocator_features,
                    allocated=allocated,
                    classes=resources.classes.by_key,
                    slices=slices,
                    cel_cache=self._cel_cache,
                    ranker=ranker,
                    index=slice_index,
                )
            except AllocationError as err:
                return None, Status.error(str(err))
            # The slices may have changed since PreEnqueue: the cycle never evaluates an
            # expensive selector itself.
            allocator = s.allocator
            if self._selectors_pending(pod, claims, lambda: allocator.slices):
                return None, _unschedulable(WAITING_MESSAGE)
            if s.extended_index < 0:  # the extended-resource claim differs per node
                s.memo_key = claims_key([c for c in claims if c.allocation is None], ranker)
                s.memo_versions = (tracker.version, self._memo.objects_version)
        s.claims = claims
        s.infos = infos
        return None, Status.OK

    def _check_requests(self, claim: ResourceClaimView) -> Status | None:
        """Every request's class must exist (validateDeviceClass)."""
        for request in claim.requests:
            if request.exactly is not None:
                status = self._check_class(request.exactly.device_class_name, request.name)
            elif request.first_available:
                if not self.features.prioritized_list:
                    return _unschedulable(
                        f"resource claim {claim.namespace}/{claim.name}, request {request.name}: "
                        "has subrequests, but the DRAPrioritizedList feature is disabled"
                    )
                status = None
                for sub in request.first_available:
                    status = self._check_class(sub.device_class_name, f"{request.name}/{sub.name}")
                    if status is not None:
                        break
            else:
                return _unschedulable(
                    f"resource claim {claim.namespace}/{claim.name}, request {request.name}: "
                    "unknown request type"
                )
            if status is not None:
                return status
        return None

    def _check_class(self, class_name: str, request_name: str) -> Status | None:
        if not class_name:
            return Status.error(f"request {request_name}: unsupported request type")
        if self.resources.device_class(class_name) is None:
            # Unschedulable until a DeviceClass event.
            return _unschedulable(
                f"request {request_name}: device class {class_name} does not exist"
            )
        return None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    # -- Filter ----------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        s = _read_state(state)
        if s is None:
            return Status.error(f'reading "{STATE_KEY}" from cycleState: not found')
        if not s.claims:
            return Status.OK
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        unavailable = [
            index
            for index, info in enumerate(s.infos)
            if index in s.binding_stuck
            or (
                info.available_on_nodes is not None
                and not info.available_on_nodes.matches(node.labels, node.name)
            )
        ]
        allocations: list[AllocationResult] | None = None
        if s.extended_index >= 0 and s.claims[s.extended_index].allocation is None:
            try:
                s.node_extended[node.name] = extended.node_claim(
                    pod,
                    s.claims[s.extended_index],
                    self.resources,
                    lambda name: node_info.allocatable.scalar.get(name),
                )
            except extended.CannotFit as err:
                return _unschedulable(str(err))
        if s.allocator is not None:
            to_allocate = [claim for _, claim in s.to_allocate_on(node.name)]
            tracker = self.resources.tracker
            try:
                allocations, timed_out = self._memo.allocate(
                    s.allocator,
                    self._memo.current_key(s.memo_key, s.memo_versions, tracker),
                    node,
                    node_info.generation,
                    to_allocate,
                    tracker,
                    self.filter_timeout,
                )
            except FailedAllocationOnNode as err:
                # This node's pools are unusable: the node is out, with the reason.
                return _unschedulable(str(err))
            except AllocationError as err:
                # Something is wrong with a claim or class: abort this attempt.
                return Status.error(str(err))
            if timed_out:
                # Upstream cancels the allocation at the deadline; ours cannot be interrupted,
                # so the verdict is the same, only later.
                return _unschedulable(ERR_TIMED_OUT)
            if allocations is None or len(allocations) != len(to_allocate):
                return _unschedulable(ERR_CANNOT_ALLOCATE)
        if unavailable:
            s.unavailable_claims.update(unavailable)
            return _unschedulable(ERR_NOT_AVAILABLE)
        if allocations is not None:
            s.node_allocations[node.name] = allocations
        return Status.OK

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict | None:
        """Filter over rows from the memo of earlier cycles (memo.py), the allocator on the
        rows that moved; None (the per-node adapter) when this attempt is not memoised or a
        claim is allocated already (their checks are per node)."""
        s = _read_state(state)
        if s is None or s.memo_key is None or s.allocator is None or s.binding_stuck:
            return None
        if any(info.available_on_nodes is not None for info in s.infos):
            return None
        tracker = self.resources.tracker
        key = self._memo.current_key(s.memo_key, s.memo_versions, tracker)
        if key is None:
            return None
        infos = table.infos
        return self._memo.row_verdict(
            key,
            table,
            rows,
            tracker,
            lambda row: self.filter(state, pod, infos[row]),
            s.node_allocations,
            _unschedulable(ERR_CANNOT_ALLOCATE),
        )

    # -- explain ---------------------------------------------------------------------------

    def filter_details(
        self, state: CycleState, pod: PodView, node_names: Sequence[str]
    ) -> NodeDetails:
        """Per node Filter rejected, which claim and request could not be satisfied and why
        (FilterDetailsPlugin): the Filter message stays upstream's "cannot allocate all
        claims"; explain and what-if show these beside it. Computed here, after the attempt,
        from the cycle's Allocator (diagnosis.py), never during Filter."""
        s = _read_state(state)
        if s is None or not s.claims:
            return {}
        snapshot = self._handle.snapshot()
        to_allocate = [claim for _, claim in s.to_allocate()]
        details: dict[str, list[dict[str, str]]] = {}
        for name in node_names:
            node_info = snapshot.get(name)
            node = node_info.node if node_info is not None else None
            if node is None:
                continue
            entries = [
                {
                    "claim": f"{claim.namespace}/{claim.name}",
                    "request": "",
                    "reason": "allocated already, to devices this node cannot reach "
                    "(the allocation's node selector does not match)",
                }
                for claim, info in zip(s.claims, s.infos, strict=True)
                if info.available_on_nodes is not None
                and not info.available_on_nodes.matches(node.labels, node.name)
            ]
            if s.allocator is not None and to_allocate:
                entries += [d.to_dict() for d in diagnose(s.allocator, node, to_allocate)]
            if entries:
                details[name] = entries
        return details

    # -- PostFilter ------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodView, filtered: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Without the API (preemption's tests, what-if): says what it would deallocate."""
        claim, status = self._claim_to_deallocate(state, pod)
        if claim is not None:
            return None, Status.unschedulable("deallocation of ResourceClaim completed")
        return None, status

    async def post_filter_async(
        self, state: CycleState, pod: PodView, filtered: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """Upstream's PostFilter: deallocate one allocated claim that is unavailable on some
        node and reserved for nobody but this pod (status update: no reservedFor, allocation
        or devices)."""
        claim, status = self._claim_to_deallocate(state, pod)
        if claim is None:
            return None, status
        body = copy.deepcopy(dict(claim.raw))
        claim_status = dict(body.get("status") or {})
        for key in ("reservedFor", "allocation", "devices"):
            claim_status.pop(key, None)
        body["status"] = claim_status
        try:
            code, answer = await self._handle.client.request(
                "PUT", _claim_path(claim, status=True), body=body
            )
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as err:
            return None, Status.error(str(err))
        if not 200 <= code < 300:
            return None, Status.error(_api_message(code, answer))
        return None, Status.unschedulable("deallocation of ResourceClaim completed")

    def _claim_to_deallocate(
        self, state: CycleState, pod: PodView
    ) -> tuple[ResourceClaimView | None, Status]:
        s = _read_state(state)
        if s is None:
            return None, Status.error(f'reading "{STATE_KEY}" from cycleState: not found')
        if not s.claims:
            return None, Status.unschedulable("no new claims to deallocate")
        # Upstream walks a set in random order; any candidate will do, so take the first.
        for index in sorted(s.unavailable_claims):
            claim = s.claims[index]
            reserved = claim.reserved_for
            if not reserved or (len(reserved) == 1 and reserved[0].uid == pod.uid):
                return claim, Status.OK
        return None, Status.unschedulable("still not schedulable")

    # -- Score -----------------------------------------------------------------------------

    def score(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> tuple[int, Status]:
        s = _read_state(state)
        if s is None:
            return 0, Status.error(f'reading "{STATE_KEY}" from cycleState: not found')
        if not s.claims:
            return 0, Status.OK
        allocations = s.node_allocations.get(node_info.node_name)
        if allocations is None:
            return 0, Status.OK
        return prioritized_list_score(s.to_allocate(), allocations), Status.OK

    def score_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> IntArray | None:
        """Zero everywhere for pods without claims (the common case) and for claims without
        `firstAvailable` requests (only a picked alternative scores); else per node."""
        s = _read_state(state)
        if s is not None and (
            not s.node_allocations
            or not any(r.first_available for _, c in s.to_allocate() for r in c.requests)
        ):
            return np.zeros(len(rows), dtype=np.int64)
        return None

    def score_extensions(self) -> ScoreExtensions | None:
        return self

    def normalize_score(self, state: CycleState, pod: PodView, scores: list[NodeScore]) -> Status:
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    def normalize_rows(self, state: CycleState, pod: PodView, scores: IntArray) -> IntArray:
        return default_normalize_rows(MAX_NODE_SCORE, False, scores)

    # -- Reserve / Unreserve ---------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        s = _read_state(state)
        if s is None:
            return Status.error(f'reading "{STATE_KEY}" from cycleState: not found')
        to_allocate = s.to_allocate_on(node_name) if s.claims else []
        if not to_allocate or s.allocator is None:
            # Allocated claims are reserved for real in PreBind; a conflict there retries.
            if s.claims and state.tracer is not None:
                state.annotate_span("Reserve", allocation_span_attributes(s.claims, s.infos))
            return Status.OK
        allocations = s.node_allocations.get(node_name)
        if allocations is None:
            return Status.error("claim allocation not found for node")
        if len(allocations) != len(to_allocate):
            return Status.error(
                f"internal error, have {len(allocations)} allocations, {len(to_allocate)} "
                f"claims to allocate, want {len(to_allocate)} claims"
            )
        tracker = self.resources.tracker
        for (index, claim), allocation in zip(to_allocate, allocations, strict=True):
            s.infos[index].allocation = allocation
            tracker.signal_pending_allocation(claim, tuple(allocation.devices))
        if state.tracer is not None:
            state.annotate_span("Reserve", allocation_span_attributes(s.claims, s.infos))
        return Status.OK

    def unreserve(self, state: CycleState, pod: PodView, node_name: str) -> None:
        s = _read_state(state)
        if s is None or not s.claims:
            return
        tracker = self.resources.tracker
        for index, claim in enumerate(s.claims):
            if tracker.remove_pending_allocation(claim.uid):
                tracker.restore(claim.namespace, claim.name)
            if index == s.extended_index:
                if s.special_uid:
                    tracker.remove_pending_allocation(s.special_uid)
                if claim.name != extended.SPECIAL_CLAIM_NAME:
                    # the claim created for this attempt (deleteClaim)
                    self._spawn(writes.delete_claim(self._handle.client, claim))
                continue
            if claim.allocation is not None and claim.is_reserved_for(pod.uid):
                self._spawn(writes.remove_reservation(self._handle.client, claim, pod))

    def _spawn(self, coroutine: Any) -> None:
        try:
            task = asyncio.get_running_loop().create_task(coroutine)
        except RuntimeError:  # no loop (a synchronous test): nothing can be written
            coroutine.close()
            return
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def drain(self) -> None:
        """Wait for Unreserve's API calls (tests)."""
        while self._background:
            await asyncio.gather(*tuple(self._background), return_exceptions=True)

    # -- PreBind ---------------------------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        """Upstream's PreBindPreFlight: PreBind has work only when the pod has claims."""
        s = _read_state(state)
        if s is None:
            return Status.error(f'reading "{STATE_KEY}" from cycleState: not found')
        return Status.OK if s.claims else Status.skip()

    async def pre_bind(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        s = _read_state(state)
        if s is None:
            return Status.error(f'reading "{STATE_KEY}" from cycleState: not found')
        for index, claim in enumerate(s.claims):
            if claim.is_reserved_for(pod.uid):
                continue
            node_claim = s.node_extended.get(node_name) if index == s.extended_index else None
            if index == s.extended_index and claim.allocation is None and node_claim is None:
                continue  # the node needs no device for the pod's extended resources
            try:
                if node_claim is not None and claim.name == extended.SPECIAL_CLAIM_NAME:
                    s.claims[index] = await writes.create_extended_claim(
                        self._handle.client, node_claim, claim
                    )
                s.claims[index] = await self._bind_claim(s, index, pod)
                if index == s.extended_index:
                    if s.special_uid:
                        self.resources.tracker.remove_pending_allocation(s.special_uid)
                    await writes.record_extended_claim(
                        self._handle.client, pod, s.claims[index], node_claim
                    )
            except _BindError as err:
                return Status.error(str(err))
        if s.claims and state.tracer is not None:
            state.annotate_span("PreBind", allocation_span_attributes(s.claims, s.infos))
        if self.features.binding_conditions and binding.has_binding_conditions(s.claims):
            resources = self.resources
            failure = await binding.wait_until_ready(
                s.claims, lambda c: resources.claim(c.namespace, c.name), self.binding_timeout
            )
            return Status.OK if failure is None else Status.error(failure)
        return Status.OK

    async def _bind_claim(self, s: DRAState, index: int, pod: PodView) -> ResourceClaimView:
        """Record the allocation from Reserve (if any) and the pod's reservation (bindClaim)."""
        claim = s.claims[index]
        allocation = s.infos[index].allocation
        tracker = self.resources.tracker
        written: ResourceClaimView | None = None
        try:
            raw: dict[str, Any] = copy.deepcopy(dict(claim.raw))
            conflict = ""
            for attempt in range(CONFLICT_RETRIES):
                if attempt:
                    await asyncio.sleep(CONFLICT_DELAY)
                    raw = await writes.get_claim(self._handle.client, claim)
                outcome = await writes.write_claim(
                    self._handle.client,
                    raw,
                    claim,
                    allocation,
                    pod,
                    self.features.binding_conditions,
                )
                if isinstance(outcome, str):
                    conflict = outcome  # a conflict: again with the latest claim
                    continue
                written = ResourceClaimView.from_dict(outcome)
                return written
            raise _BindError(conflict)
        except MalformedObject as err:
            raise _BindError(f"claim {claim.key}: malformed response: {err}") from None
        finally:
            if written is not None:
                tracker.assume(written)
            if allocation is not None:
                tracker.remove_pending_allocation(claim.uid)


def _read_state(state: CycleState) -> DRAState | None:
    try:
        value = state.read(STATE_KEY)
    except KeyError:
        return None
    return value if isinstance(value, DRAState) else None
