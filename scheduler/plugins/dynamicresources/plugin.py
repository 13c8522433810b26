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
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from scheduler.api.errors import MalformedObject
from scheduler.api.objects import PodView
from scheduler.api.resource import ResourceClaimView
from scheduler.api.selectors import NodeSelector
from scheduler.cache.node_table import IntArray, NodeTable
from scheduler.cache.rows import Rows, default_normalize_rows
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
from scheduler.listers.resource_objects import RESOURCE_API, ResourceObjects
from scheduler.plugins.dynamicresources import hints
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
from scheduler.plugins.dynamicresources.ranking import DeviceRanker, profile_device_ranker
from scheduler.plugins.normalize_score import default_normalize_score

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.interface import PreFilterExtensions

log = logging.getLogger(__name__)

NAME = "DynamicResources"
STATE_KEY = NAME
# resourceapi.Finalizer, ResourceClaimReservedForMaxSize, FirstAvailableDeviceRequestMaxSize
FINALIZER = "resource.kubernetes.io/delete-protection"
RESERVED_FOR_MAX_SIZE = 256
FIRST_AVAILABLE_MAX_SIZE = 8
# client-go's retry.DefaultRetry: 5 steps of 10 ms.
CONFLICT_RETRIES = 5
CONFLICT_DELAY = 0.01

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

    def clone(self) -> DRAState:
        return self

    def to_allocate(self) -> list[tuple[int, ResourceClaimView]]:
        return [(i, c) for i, c in enumerate(self.claims) if c.allocation is None]


_NO_CLAIMS = DRAState()


def _claim_path(claim: ResourceClaimView, status: bool = False) -> str:
    path = f"{RESOURCE_API}/namespaces/{claim.namespace}/resourceclaims/{claim.name}"
    return f"{path}/status" if status else path


def _api_message(status: int, body: Any) -> str:
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        return str(body["message"])
    return f"the server responded with the status code {status}"


class _BindError(Exception):
    """PreBind could not record a claim's allocation or reservation (upstream's error)."""


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
        self._cel_cache = CelCache(
            consumable_capacity=self._allocator_features.consumable_capacity
        )
        # Unreserve's API calls (Unreserve is not a coroutine): held until done.
        self._background: set[asyncio.Task[None]] = set()

    @property
    def resources(self) -> ResourceObjects:
        return self._handle.cluster_objects.resources

    # -- batching --------------------------------------------------------------------------

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """Upstream's SignPod: pods with claims are never batched (kubernetes#134986)."""
        if pod.resource_claims:
            return (), Status.unschedulable("pods with dra resource claims are not signable")
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
        try:
            pod_claims(pod, self.resources)
        except ClaimsNotReady as err:
            return _unschedulable(str(err))
        return Status.OK

    # -- PreFilter -------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.resource_claims:
            state.write(STATE_KEY, _NO_CLAIMS)
            return None, Status.skip()
        s = DRAState()
        state.write(STATE_KEY, s)
        resources = self.resources
        try:
            claims = pod_claims(pod, resources)
        except ClaimsNotReady as err:
            return None, _unschedulable(str(err))
        if not claims:
            return None, Status.skip()
        tracker = resources.tracker
        infos = [_ClaimInfo() for _ in claims]
        to_allocate = 0
        for index, claim in enumerate(claims):
            if claim.allocation is not None:
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
            try:
                s.allocator = Allocator(
                    features=self._allocator_features,
                    allocated=allocated,
                    classes=resources.classes.by_key,
                    slices=list(resources.slices.list()),
                    cel_cache=self._cel_cache,
                    # a subclass's ranker, else one a Score plugin of the profile offers
                    ranker=self.device_ranker or profile_device_ranker(self._handle, pod),
                )
            except AllocationError as err:
                return None, Status.error(str(err))
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
            if info.available_on_nodes is not None
            and not info.available_on_nodes.matches(node.labels, node.name)
        ]
        allocations: list[AllocationResult] | None = None
        if s.allocator is not None:
            to_allocate = [claim for _, claim in s.to_allocate()]
            started = time.perf_counter()
            try:
                allocations = s.allocator.allocate(node, to_allocate)
            except FailedAllocationOnNode as err:
                # This node's pools are unusable: the node is out, with the reason.
                return _unschedulable(str(err))
            except AllocationError as err:
                # Something is wrong with a claim or class: abort this attempt.
                return Status.error(str(err))
            if self.filter_timeout > 0 and time.perf_counter() - started > self.filter_timeout:
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
        return _prioritized_list_score(s, allocations), Status.OK

    def score_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> IntArray | None:
        """Zero everywhere for pods without claims (the common case); else per node."""
        s = _read_state(state)
        if s is not None and not s.node_allocations:
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
        to_allocate = s.to_allocate() if s.claims else []
        if not to_allocate or s.allocator is None:
            # Allocated claims are reserved for real in PreBind; a conflict there retries.
            if s.claims and state.tracer is not None:
                state.annotate_span("Reserve", _allocation_attributes(s))
            return Status.OK
        allocations = s.node_allocations.get(node_name)
        if not allocations:
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
            state.annotate_span("Reserve", _allocation_attributes(s))
        return Status.OK

    def unreserve(self, state: CycleState, pod: PodView, node_name: str) -> None:
        s = _read_state(state)
        if s is None or not s.claims:
            return
        tracker = self.resources.tracker
        for claim in s.claims:
            if tracker.remove_pending_allocation(claim.uid):
                tracker.restore(claim.namespace, claim.name)
            if claim.allocation is not None and claim.is_reserved_for(pod.uid):
                self._spawn(self._remove_reservation(claim, pod))

    def _spawn(self, coroutine: Any) -> None:
        try:
            task = asyncio.get_running_loop().create_task(coroutine)
        except RuntimeError:  # no loop (a synchronous test): nothing can be written
            coroutine.close()
            return
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _remove_reservation(self, claim: ResourceClaimView, pod: PodView) -> None:
        """A strategic merge patch removes one reservedFor entry without the latest claim."""
        patch = {
            "metadata": {"uid": claim.uid},
            "status": {"reservedFor": [{"$patch": "delete", "uid": pod.uid}]},
        }
        try:
            code, answer = await self._handle.client.request(
                "PATCH",
                _claim_path(claim, status=True),
                body=patch,
                content_type="application/strategic-merge-patch+json",
            )
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as err:
            code, answer = 0, {"message": str(err)}
        if not 200 <= code < 300:
            # The next attempt gets here again.
            log.warning(
                "unreserve failed",
                extra={"resourceclaim": claim.key, "error": _api_message(code, answer)},
            )

    async def drain(self) -> None:
        """Wait for Unreserve's API calls (tests)."""
        while self._background:
            await asyncio.gather(*tuple(self._background), return_exceptions=True)

    # -- PreBind ---------------------------------------------------------------------------

    async def pre_bind(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        s = _read_state(state)
        if s is None:
            return Status.error(f'reading "{STATE_KEY}" from cycleState: not found')
        for index, claim in enumerate(s.claims):
            if claim.is_reserved_for(pod.uid):
                continue
            try:
                s.claims[index] = await self._bind_claim(s, index, pod)
            except _BindError as err:
                return Status.error(str(err))
        if s.claims and state.tracer is not None:
            state.annotate_span("PreBind", _allocation_attributes(s))
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
                    raw = await self._get_claim(claim)
                outcome = await self._write_claim(raw, claim, allocation, pod)
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

    async def _request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        try:
            return await self._handle.client.request(method, path, body=body)
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as err:
            return 0, {"message": str(err)}

    async def _get_claim(self, claim: ResourceClaimView) -> dict[str, Any]:
        code, answer = await self._request("GET", _claim_path(claim))
        if code != 200 or not isinstance(answer, Mapping):
            raise _BindError(
                f"get updated claim {claim.key} after conflict: {_api_message(code, answer)}"
            )
        return dict(answer)

    async def _write_claim(
        self,
        raw: dict[str, Any],
        claim: ResourceClaimView,
        allocation: AllocationResult | None,
        pod: PodView,
    ) -> Mapping[str, Any] | str:
        """One try: the updated claim, or on a conflict the error (the caller retries)."""
        meta = dict(raw.get("metadata") or {})
        raw["metadata"] = meta
        if meta.get("deletionTimestamp") is not None:
            raise _BindError(f"claim {claim.key} got deleted in the meantime")
        status = dict(raw.get("status") or {})
        raw["status"] = status
        if allocation is not None:
            if status.get("allocation") is not None:
                raise _BindError(f"claim {claim.key} got allocated elsewhere in the meantime")
            finalizers = list(meta.get("finalizers") or [])
            if FINALIZER not in finalizers:
                # The finalizer needs a normal update, before the status one.
                meta["finalizers"] = [*finalizers, FINALIZER]
                code, answer = await self._request("PUT", _claim_path(claim), raw)
                if code == 409:
                    return f"add finalizer to claim {claim.key}: {_api_message(code, answer)}"
                if not 200 <= code < 300 or not isinstance(answer, Mapping):
                    raise _BindError(
                        f"add finalizer to claim {claim.key}: {_api_message(code, answer)}"
                    )
                raw = dict(answer)
                status = dict(raw.get("status") or {})
                raw["status"] = status
            status["allocation"] = allocation.to_dict()
        status["reservedFor"] = [
            *(status.get("reservedFor") or []),
            {"resource": "pods", "name": pod.name, "uid": pod.uid},
        ]
        code, answer = await self._request("PUT", _claim_path(claim, status=True), raw)
        what = "allocation and reservation" if allocation is not None else "reservation"
        if code == 409:
            return f"add {what} to claim {claim.key}: {_api_message(code, answer)}"
        if not 200 <= code < 300 or not isinstance(answer, Mapping):
            raise _BindError(f"add {what} to claim {claim.key}: {_api_message(code, answer)}")
        return answer


def _read_state(state: CycleState) -> DRAState | None:
    try:
        value = state.read(STATE_KEY)
    except KeyError:
        return None
    return value if isinstance(value, DRAState) else None


#: Span attributes of Reserve and PreBind (traced attempts only): the pod's claims
#: ("namespace/name") and each device they hold ("namespace/claim/request: driver/pool/device").
CLAIMS_ATTRIBUTE = "aiosched.dra.claims"
DEVICES_ATTRIBUTE = "aiosched.dra.devices"


def _allocation_attributes(s: DRAState) -> dict[str, tuple[str, ...]]:
    """The claims and their devices: the allocation Reserve decided, or the one the claim
    already had."""
    claims: list[str] = []
    devices: list[str] = []
    for claim, info in zip(s.claims, s.infos, strict=False):
        key = f"{claim.namespace}/{claim.name}"
        claims.append(key)
        allocated = (
            info.allocation.devices
            if info.allocation is not None
            else claim.allocation.devices
            if claim.allocation is not None
            else ()
        )
        devices += [f"{key}/{d.request}: {d.driver}/{d.pool}/{d.device}" for d in allocated]
    return {CLAIMS_ATTRIBUTE: tuple(claims), DEVICES_ATTRIBUTE: tuple(devices)}


def _prioritized_list_score(s: DRAState, allocations: Sequence[AllocationResult]) -> int:
    """computeScore: for each claim allocated here, each `firstAvailable` alternative that was
    picked scores FirstAvailableDeviceRequestMaxSize minus its position."""
    score = 0
    for (_, claim), allocation in zip(s.to_allocate(), allocations, strict=False):
        picked = {result.request for result in allocation.devices if "/" in result.request}
        for request in claim.requests:
            if request.exactly is not None:
                continue
            for position, sub in enumerate(request.first_available):
                if f"{request.name}/{sub.name}" in picked:
                    score += FIRST_AVAILABLE_MAX_SIZE - position
    return score
