"""The PodGroup scheduling cycle: the members of a gang are placed in one cycle, all or none.

Upstream: pkg/scheduler/schedule_one_podgroup.go at v1.37 (scheduleOnePodGroup,
podGroupSchedulingDefaultAlgorithm, submitPodGroupAlgorithmResult, updatePodGroupCondition).
When the queue pops a pod that names a gang PodGroup, its group's other queued members are taken
out of the queue too (upstream's PopSpecificPod), ordered by priority (highest first) then by
their first attempt. Before any member is tried, and after each one, GangScheduling's
PlacementFeasible is asked with how many members are scheduled (assumed or bound) and how many
remain: Unschedulable ends the cycle early ("minCount (4) cannot be satisfied: 3 scheduled, 0
remaining"), Wait goes on, and Wait at the end counts as Unschedulable. Each member runs the
ordinary algorithm (PreFilter, Filter, Score) against a snapshot that includes the members
already assumed in this cycle, then assume → Reserve → Permit. The algorithm itself (the
member loop and, with TopologyAwareWorkloadScheduling, the loop over placements) is
podgroup_algorithm.py's, shared with workload-aware preemption's simulation and what-if; this
module says how a member is tried here (`_place_member`) and taken back (`_roll_back`).

- The group is feasible (PlacementFeasible succeeded and a member was placed): the placed
  members go on to their binding cycles, the others are failed with their own FitError.
- Otherwise every member assumed in this cycle is rolled back (Unreserve, forgotten by the
  cache), so a group that does not fit holds nothing against another; each member that fitted
  is failed with the group's message, each that did not with its own FitError, each not tried
  with the group's status. An error (a member's algorithm error: "failed to schedule other pod
  from a pod group: ...") fails every member with it.
- The PodGroup's PodGroupInitiallyScheduled condition says so (podgroup_status.py), and
  scheduler_podgroup_schedule_attempts_total / _scheduling_attempt_duration_seconds /
  _scheduling_algorithm_duration_seconds count the cycle.

Differences from upstream, said where they are: upstream simulates the members, rolls them all
back and assumes them again for binding; with one snapshot and no event in between that yields
the same placement, so here the members of a feasible group stay assumed. Permit runs for each
member as it is placed (upstream runs it when binding starts), so a plugin's Permit rejection
counts the member as not scheduled. With TopologyAwareWorkloadScheduling on, the cycle runs
upstream's placement algorithm instead of the default one (podgroup_placement.py).

Workload-aware preemption (WorkloadAwarePreemption on; upstream's podGroupCycle and
applyPodGroupPostFilterResult): when the group is Unschedulable, its members are rolled back and
the profile's DefaultPreemption runs its PodGroupPostFilter
(scheduler/plugins/defaultpreemption/podgroup.py) with the group's scheduling function, here
`_simulation`: the default algorithm for the members on the snapshot as the preemption has
changed it, each placed member added to its node (no Reserve, no Permit, nothing assumed in the
cache), all of them removed again before it returns. An Error fails every member with it. A
success means the group waits on preemption: every member is failed with the group's status and
nominated to the node preemption found for it. Any non-empty message of the post filter is
appended to the group's status (so the PodGroup condition and the members say why preemption
did not help, e.g. "pod group preemption: No preemption victims found for incoming
preemptor"). Without a DefaultPreemption plugin in the profile the message says so, as
upstream's runWorkloadAwarePreemption does.
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from scheduler.api.objects import PodView
from scheduler.api.workload import PodGroupView
from scheduler.cache.cache import Cache
from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.algorithm import AttemptDetails, FitError, StartIndex, schedule_pod
from scheduler.cycle.instrumentation import Instrumentation
from scheduler.cycle.podgroup_algorithm import (
    default_algorithm,
    placement_algorithm,
    placement_feasible_of,
)
from scheduler.cycle.podgroup_explain import PlacementTried, group_summary
from scheduler.cycle.podgroup_outcome import MemberOutcome
from scheduler.cycle.podgroup_placement import (
    PlacementScope,
    scheduled_member_nodes,
    topology_aware_enabled,
)
from scheduler.cycle.podgroup_status import PodGroupStatusWriter
from scheduler.cycle.profile_set import ProfileSet, SchedulingProfile
from scheduler.cycle.scheduling_cycle import (
    PLUGIN_METRICS_SAMPLE_PERCENT,
    Attempt,
    FailureHandler,
    LoopStats,
    forget_assumed,
)
from scheduler.framework.events import ActionType, ClusterEvent, EventResource
from scheduler.framework.interface import (
    CycleState,
    MutableNodes,
    PodGroupPostFilterPlugin,
    PodGroupPostFilterResult,
    ProposedAssignment,
)
from scheduler.framework.runtime.placement import NO_POD_GROUP_POST_FILTER
from scheduler.framework.status import Code, Status
from scheduler.listers.workload_objects import (
    WorkloadObjects,
    workload_aware_preemption_enabled,
)
from scheduler.queue.scheduling_queue import SchedulingQueue

if TYPE_CHECKING:
    from observability.metrics import SchedulerMetrics
    from observability.tracing import GroupSpan, NoopGroupSpan
from scheduler.queue.types import QueuedPodInfo

log = logging.getLogger("scheduler.cycle.scheduler")


#: The plugin that implements PodGroupPostFilter upstream (and here).
DEFAULT_PREEMPTION_PLUGIN = "DefaultPreemption"
# The PodGroupPostFilter contract moved to the framework (scheduler/framework/interface.py);
# re-exported for the callers that import it from here.
__all__ = [
    "DEFAULT_PREEMPTION_PLUGIN",
    "NO_POD_GROUP_POST_FILTER",
    "MutableNodes",
    "PodGroupPostFilterPlugin",
    "PodGroupPostFilterResult",
    "ProposedAssignment",
]


@dataclass(slots=True)
class SimulatedMember:
    """One member's try in workload-aware preemption's simulation: its assignment when it
    was added to the simulation's snapshot."""

    failure: Status | None
    assignment: ProposedAssignment | None = None


#: A member that did not fit in the simulation (its FitError is not reported).
_NOT_FITTED = SimulatedMember(Status(Code.UNSCHEDULABLE))


class PodGroupCycle:
    """scheduleOnePodGroup: see the module docstring."""

    def __init__(
        self,
        *,
        cache: Cache,
        queue: SchedulingQueue,
        snapshot: Snapshot,
        start_index: StartIndex,
        rng: random.Random,
        clock: Callable[[], float],
        stats: LoopStats,
        instrumentation: Instrumentation,
        failures: FailureHandler,
        workloads: WorkloadObjects,
        status_writer: PodGroupStatusWriter | None = None,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self._cache = cache
        self._queue = queue
        self._snapshot = snapshot
        self._start_index = start_index
        self._rng = rng
        self._clock = clock
        self._stats = stats
        self._instrumentation = instrumentation
        self._failures = failures
        self._workloads = workloads
        self._status_writer = status_writer
        self._metrics = metrics
        self._scope = PlacementScope(snapshot)
        # What explain reports of the current cycle: the last PlacementFeasible verdict, the
        # placements tried and the one chosen (TopologyAwareWorkloadScheduling).
        self._verdict: Status | None = None
        self._placements: list[PlacementTried] = []
        self._chosen: str | None = None

    def group_of(self, pod: PodView) -> PodGroupView | None:
        """The gang `pod` belongs to, when it is to be scheduled by a group cycle."""
        name = pod.scheduling_group
        if name is None:
            return None
        group = self._workloads.pod_group(pod.namespace, name)
        if group is None or group.min_count is None:
            return None
        return group

    async def schedule_group(
        self, first: QueuedPodInfo, group: PodGroupView, profiles: ProfileSet
    ) -> list[tuple[QueuedPodInfo, Attempt]]:
        """One cycle for `first`'s group; the members to bind, each with its attempt."""
        profile = profiles.get(first.pod.scheduler_name)
        if profile is None:
            self._queue.done(first.uid)
            return []
        members = self._take_members(first, group, profile)
        if not members:
            return []
        log.info(
            "Attempting to schedule pod group",
            extra={"podGroup": group.key, "pods": len(members)},
        )
        start = self._clock()
        self._cache.update_snapshot(self._snapshot)
        group_trace = self._instrumentation.begin_group(group, profile.name, len(members))
        self._verdict, self._placements, self._chosen = None, [], None
        if topology_aware_enabled(profile.framework.feature_gates):
            status, outcomes = await self._run_placement_algorithm(
                group, members, profile, group_trace
            )
        else:
            status, outcomes = await self._run_algorithm(group, members, profile, group_trace)
        if self._metrics is not None:
            self._metrics.pod_group_algorithm(self._clock() - start)
        nominations: Mapping[str, str] | None = None
        if status.code == Code.UNSCHEDULABLE and workload_aware_preemption_enabled(
            profile.framework.feature_gates
        ):
            status, nominations = await self._post_filter(group, status, members, outcomes, profile)
        self._explain(group, status, members, outcomes)
        if status.is_success:
            placed = self._submit_feasible(group, outcomes)
            result = "scheduled"
        else:
            self._submit_failed(group, status, members, outcomes, profile, nominations)
            placed = []
            if not status.is_rejected:
                result = "error"
            else:
                result = "unschedulable" if nominations is None else "waiting_on_preemption"
        if self._metrics is not None:
            self._metrics.pod_group_attempt(result, profile.name, self._clock() - start)
        self._instrumentation.end_group(group_trace, result, status.message, len(placed))
        return placed

    async def _run_algorithm(
        self,
        group: PodGroupView,
        members: Sequence[QueuedPodInfo],
        profile: SchedulingProfile,
        group_trace: GroupSpan | NoopGroupSpan | None,
    ) -> tuple[Status, list[MemberOutcome]]:
        """podGroupSchedulingDefaultAlgorithm (podgroup_algorithm.py), each member that fits
        assumed → Reserved → Permitted: the group's status and each tried member's outcome."""
        state = self._workloads.states.get(group.namespace, group.name)
        outcomes: list[MemberOutcome] = []
        status, self._verdict = await default_algorithm(
            group,
            members,
            state.scheduled_pods_count(self._cache.is_assumed_pod),
            placement_feasible_of(profile.framework),
            functools.partial(self._place_member, profile, group_trace, None),
            outcomes,
        )
        return status, outcomes

    async def _post_filter(
        self,
        group: PodGroupView,
        status: Status,
        members: Sequence[QueuedPodInfo],
        outcomes: Sequence[MemberOutcome],
        profile: SchedulingProfile,
    ) -> tuple[Status, Mapping[str, str] | None]:
        """Workload-aware preemption for a group that did not fit: the group's status with the
        post filter's message appended (or its error), and the members' nominations when the
        group now waits on preemption (None otherwise)."""
        for outcome in outcomes:
            if outcome.held:
                self._roll_back(outcome)
        self._cache.update_snapshot(self._snapshot)
        result, outcome_status = await profile.framework.run_pod_group_post_filter_plugins(
            group, [pinfo.pod for pinfo in members], self._simulation(group, members, profile)
        )
        if outcome_status.code == Code.ERROR:
            return outcome_status, None
        nominations = None
        if outcome_status.is_success:
            nominations = result.nominations if result is not None else {}
        if outcome_status.message:
            # A group waiting on preemption is retried after backoff or when a victim's
            # deletion wakes a member's rejector, not only by GangScheduling's events.
            plugin_name = status.plugin if nominations is None else ""
            status = Status(
                status.code, *status.reasons, outcome_status.message, plugin=plugin_name
            )
        return status, nominations

    def _simulation(
        self, group: PodGroupView, members: Sequence[QueuedPodInfo], profile: SchedulingProfile
    ) -> Callable[[MutableNodes], Awaitable[tuple[Status, list[ProposedAssignment]]]]:
        """The group's scheduling function workload-aware preemption runs (upstream's
        pgSchedulingFunc): podGroupSchedulingDefaultAlgorithm on the snapshot as the preemption
        has changed it, each member that fits added to its node there, nothing assumed in the
        cache, every member taken off again before it returns (see the module docstring)."""
        fwk = profile.framework

        async def simulate(nodes: MutableNodes) -> tuple[Status, list[ProposedAssignment]]:
            async def try_member(pinfo: QueuedPodInfo) -> SimulatedMember:
                cycle_state = CycleState()
                try:
                    result = await schedule_pod(
                        fwk,
                        cycle_state,
                        pinfo.pod,
                        self._snapshot,
                        percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
                        next_start_index=self._start_index,
                        rng=self._rng,
                        cycle=self._queue.scheduling_cycle,
                    )
                except FitError:
                    return _NOT_FITTED
                except Exception as exc:
                    return SimulatedMember(Status.error(str(exc)))
                host = result.suggested_host
                assumed = pinfo.pod.with_node(host)
                nodes.add_pod(assumed, host)
                return SimulatedMember(None, (assumed, host, cycle_state))

            state = self._workloads.states.get(group.namespace, group.name)
            outcomes: list[SimulatedMember] = []
            try:
                status, _ = await default_algorithm(
                    group,
                    members,
                    state.scheduled_pods_count(self._cache.is_assumed_pod),
                    placement_feasible_of(fwk),
                    try_member,
                    outcomes,
                )
            finally:
                for outcome in reversed(outcomes):
                    if outcome.assignment is not None:
                        assumed, host, _ = outcome.assignment
                        nodes.remove_pod(assumed, host)
            return status, [o.assignment for o in outcomes if o.assignment is not None]

        return simulate

    def _explain(
        self,
        group: PodGroupView,
        status: Status,
        members: Sequence[QueuedPodInfo],
        outcomes: Sequence[MemberOutcome],
    ) -> None:
        """Keep the cycle for `aiosched explain` of its members (podgroup_explain.py)."""
        store = self._instrumentation.explain
        if not store.enabled:
            return
        summary = group_summary(
            group,
            status,
            self._verdict,
            members,
            outcomes,
            scheduled=status.is_success,
            max_names=store.max_names_per_group,
            placements=self._placements,
            chosen=self._chosen,
        )
        store.record_group(group.namespace, group.name, [m.pod.name for m in members], summary)

    async def _run_placement_algorithm(
        self,
        group: PodGroupView,
        members: Sequence[QueuedPodInfo],
        profile: SchedulingProfile,
        group_trace: GroupSpan | NoopGroupSpan | None,
    ) -> tuple[Status, list[MemberOutcome]]:
        """podGroupSchedulingPlacementAlgorithm (podgroup_algorithm.py): the default algorithm
        once per placement, each rolled back, then the chosen placement's members assumed
        again (upstream assumes them for binding the same way). A member keeps one attempt
        (trace, start) across the placements of the cycle."""
        state = self._workloads.states.get(group.namespace, group.name)
        is_assumed = self._cache.is_assumed_pod
        attempts: dict[str, Attempt] = {}
        result = await placement_algorithm(
            profile.framework,
            group,
            members,
            scheduled_member_nodes(state, self._assumed_node),
            lambda: state.scheduled_pods_count(is_assumed),
            placement_feasible_of(profile.framework),
            functools.partial(self._place_member, profile, group_trace, attempts),
            self._roll_back_evaluation,
            self._scope,
            self._rng,
            self._placements,
        )
        self._verdict = result.verdict
        placement = result.chosen
        if placement is None:
            return result.status, result.outcomes
        self._chosen = placement.name
        log.info(
            "Chose a placement for the pod group",
            extra={"podGroup": group.key, "placement": placement.name},
        )
        self._cache.update_snapshot(self._snapshot)
        for outcome in result.outcomes:
            if outcome.placed:
                self._reassume(outcome)
        return result.status, result.outcomes

    def _roll_back_evaluation(self, outcomes: Sequence[MemberOutcome]) -> None:
        """After a placement's evaluation: nothing it assumed stays assumed, and the snapshot
        (all its nodes again) shows so."""
        for outcome in outcomes:
            if outcome.held:
                self._roll_back(outcome)
        self._cache.update_snapshot(self._snapshot)

    def _reassume(self, outcome: MemberOutcome) -> None:
        """Assume a member of the chosen placement again on the node it was given there:
        assume → Reserve → Permit with the state it was evaluated with."""
        attempt = outcome.attempt
        fwk = attempt.profile.framework
        assumed, host = attempt.assumed, attempt.result.suggested_host
        self._cache.assume_pod(assumed)
        status = fwk.run_reserve_plugins_reserve(attempt.state, assumed, host)
        if status.is_success:
            status = fwk.run_permit_plugins(attempt.state, assumed, host)
            if status.is_success or status.is_wait:
                outcome.permit = status
                outcome.held = True
                return
        self._roll_back(outcome)
        outcome.failure = status

    def _assumed_node(self, uid: str) -> str | None:
        if not self._cache.is_assumed_pod(uid):
            return None
        pod = self._cache.get_pod(uid)
        return pod.node_name if pod is not None else None

    # -- members -------------------------------------------------------------------------

    def _take_members(
        self, first: QueuedPodInfo, group: PodGroupView, profile: SchedulingProfile
    ) -> list[QueuedPodInfo]:
        """`first` and its group's other queued members (podGroupInfoForPod), without those
        being deleted or already assumed (skipPodGroupPodSchedule), in upstream's order."""
        members = [first]
        state = self._workloads.states.get(group.namespace, group.name)
        for pod in state.unscheduled_pods():
            if pod.uid == first.uid or pod.scheduler_name != first.pod.scheduler_name:
                continue
            pinfo = self._queue.pop_specific(pod.uid)
            if pinfo is not None:
                members.append(pinfo)
        kept = []
        for pinfo in members:
            if pinfo.pod.deletion_timestamp or self._cache.is_assumed_pod(pinfo.pod):
                self._queue.done(pinfo.uid)
            else:
                kept.append(pinfo)
        kept.sort(key=_member_order)
        return kept

    async def _place_member(
        self,
        profile: SchedulingProfile,
        group_trace: GroupSpan | NoopGroupSpan | None,
        attempts: dict[str, Attempt] | None,
        pinfo: QueuedPodInfo,
    ) -> MemberOutcome:
        """The algorithm for one member, on the snapshot with the members assumed so far;
        on success assume → Reserve → Permit. `attempts` (the placement algorithm's): each
        member's attempt in the first placement of this cycle, whose trace and start a later
        placement's evaluation continues (with a fresh CycleState, as upstream's
        per-placement podSchedulingContext)."""
        fwk = profile.framework
        state = CycleState()
        previous = attempts.get(pinfo.uid) if attempts is not None else None
        if previous is None:
            self._stats.attempts += 1
            state.record_plugin_metrics = self._rng.randrange(100) < PLUGIN_METRICS_SAMPLE_PERCENT
            trace = self._instrumentation.begin_attempt(
                pinfo, profile.name, state, fwk.now, group=group_trace
            )
            start, cycle = self._clock(), self._queue.scheduling_cycle
        else:
            trace, start, cycle = previous.trace, previous.start, previous.cycle
            state.record_plugin_metrics = previous.state.record_plugin_metrics
            state.tracer = previous.state.tracer
        attempt = Attempt(profile, state, trace, start, cycle, AttemptDetails())
        if attempts is not None and previous is None:
            attempts[pinfo.uid] = attempt
        outcome = MemberOutcome(pinfo, attempt)
        # Members assumed earlier in this cycle are in the cache: bring them into the snapshot
        # (keeping it restricted to the placement being evaluated, if any).
        self._scope.refresh(self._cache.update_snapshot)
        try:
            result = await schedule_pod(
                fwk,
                state,
                pinfo.pod,
                self._snapshot,
                percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
                next_start_index=self._start_index,
                rng=self._rng,
                details=attempt.details,
                cycle=attempt.cycle,
            )
        except FitError as fit:
            return outcome.did_not_fit(fit)
        except Exception as exc:
            log.exception("scheduling algorithm failed", extra={"pod": pinfo.pod.key})
            outcome.failure = Status.error(str(exc))
            return outcome
        host = result.suggested_host
        assumed = pinfo.pod.with_node(host)
        self._cache.assume_pod(assumed)
        attempt.assumed = assumed
        attempt.result = result
        status = fwk.run_reserve_plugins_reserve(state, assumed, host)
        if status.is_success:
            status = fwk.run_permit_plugins(state, assumed, host)
            if status.is_success or status.is_wait:
                outcome.permit = status
                outcome.held = True
                return outcome
            if status.is_rejected:
                # A member its Permit rejects did not fit (upstream wraps it in a FitError).
                status = Status(Code.UNSCHEDULABLE, *status.reasons, plugin=status.plugin)
        self._roll_back(outcome)
        outcome.failure = status
        return outcome

    def _roll_back(self, outcome: MemberOutcome) -> None:
        """Undo a member's assume, Reserve and Permit (upstream's unreserveAndForget)."""
        attempt = outcome.attempt
        fwk = attempt.profile.framework
        assumed, host = attempt.assumed, attempt.result.suggested_host
        waiting = fwk.waiting_pods.get(assumed.uid)
        if waiting is not None:
            fwk.waiting_pods.remove(assumed.uid)
            waiting.reject("", "pod group is unschedulable")  # stops its timers; nobody waits
        fwk.run_reserve_plugins_unreserve(attempt.state, assumed, host)
        forget_assumed(self._cache, assumed)
        outcome.held = False

    # -- outcomes --------------------------------------------------------------------------

    def _submit_feasible(
        self, group: PodGroupView, outcomes: Sequence[MemberOutcome]
    ) -> list[tuple[QueuedPodInfo, Attempt]]:
        to_bind = []
        for outcome in outcomes:
            if outcome.placed:
                attempt = outcome.attempt
                self._instrumentation.scheduled(
                    attempt.trace,
                    outcome.pinfo,
                    attempt.profile.name,
                    attempt.result,
                    attempt.details,
                )
                to_bind.append((outcome.pinfo, attempt))
            else:
                self._fail_member(outcome, outcome.failure or Status.error("unknown"))
        log.info(
            "Successfully scheduled a pod group",
            extra={"podGroup": group.key, "scheduledPods": len(to_bind)},
        )
        if self._status_writer is not None:
            self._status_writer.scheduled(group)
        return to_bind

    def _submit_failed(
        self,
        group: PodGroupView,
        status: Status,
        members: Sequence[QueuedPodInfo],
        outcomes: Sequence[MemberOutcome],
        profile: SchedulingProfile,
        nominations: Mapping[str, str] | None = None,
    ) -> None:
        """The group is unschedulable or failed with an error: nothing stays assumed, so a
        group that does not fit holds no room against another. `nominations`: the group waits
        on preemption; each member is nominated to its node (upstream's waitingOnPreemption)."""
        for outcome in outcomes:
            if outcome.held:
                self._roll_back(outcome)
        errored = not status.is_rejected
        tried = {outcome.pinfo.uid for outcome in outcomes}
        if nominations is not None and not errored:
            for pinfo in members:
                attempt = next((o.attempt for o in outcomes if o.pinfo is pinfo), None)
                self._failures.fail(
                    profile if attempt is None else attempt.profile,
                    pinfo,
                    status,
                    self._queue.scheduling_cycle if attempt is None else attempt.cycle,
                    self._clock() if attempt is None else attempt.start,
                    nominated_node=nominations.get(pinfo.uid),
                    trace=None if attempt is None else attempt.trace,
                )
            log.info(
                "Pod group waits on preemption",
                extra={"podGroup": group.key, "pods": len(members), "err": status.message},
            )
            if self._status_writer is not None:
                self._status_writer.unschedulable(group, status.message, errored)
            return
        for outcome in outcomes:
            failure = outcome.failure
            if errored:
                own_error = failure is not None and not failure.is_rejected
                self._fail_member(outcome, failure if own_error and failure else status)
            elif outcome.placed:
                # It fitted, but the group did not: the group's message (upstream's
                # NewStatus(Unschedulable, podGroupResult.status.Message())).
                self._fail_member(outcome, Status(Code.UNSCHEDULABLE, status.message))
            else:
                self._fail_member(outcome, failure or status)
        for pinfo in members:
            if pinfo.uid not in tried:
                self._failures.fail(
                    profile, pinfo, status, self._queue.scheduling_cycle, self._clock()
                )
        log.info(
            "Unable to schedule a pod group",
            extra={"podGroup": group.key, "unschedulablePods": len(members), "err": status.message},
        )
        if self._status_writer is not None:
            self._status_writer.unschedulable(group, status.message, errored)

    def _fail_member(self, outcome: MemberOutcome, status: Status) -> None:
        attempt = outcome.attempt
        if outcome.fit is not None and outcome.failure is status:
            self._failures.fail_unschedulable(
                attempt.profile,
                outcome.pinfo,
                outcome.fit,
                "",
                attempt.cycle,
                attempt.start,
                attempt.trace,
            )
            return
        self._failures.fail(
            attempt.profile,
            outcome.pinfo,
            status,
            attempt.cycle,
            attempt.start,
            trace=attempt.trace,
        )


class GroupAwarePodEvents:
    """The pod informer's handler with the pod groups' states kept beside it: a pod without a
    group costs one attribute test more. A pending member added also wakes its group's members
    held by GangScheduling (upstream's addPodToSchedulingQueue moves all unschedulable pods with
    UnscheduledPodAdd when GangScheduling is on; the hint only queues the same group's members,
    so only those are offered the event)."""

    def __init__(
        self, handler: PodEventSink, workloads: WorkloadObjects, queue: SchedulingQueue
    ) -> None:
        self._handler = handler
        self._workloads = workloads
        self._states = workloads.states
        self._queue = queue

    def on_add(self, pod: PodView) -> None:
        self._handler.on_add(pod)
        if pod.scheduling_group is not None:
            self._states.pod_added(pod)
            if not pod.is_bound:
                self._wake_group(pod)

    def on_update(self, old: PodView, new: PodView) -> None:
        self._handler.on_update(old, new)
        if new.scheduling_group is not None:
            self._states.pod_added(new)

    def on_delete(self, pod: PodView) -> None:
        self._handler.on_delete(pod)
        if pod.scheduling_group is not None:
            self._states.pod_deleted(pod)

    def _wake_group(self, pod: PodView) -> None:
        group, namespace = pod.scheduling_group, pod.namespace
        if group is None or self._held_by_pre_enqueue(namespace, group):
            return
        self._queue.move_all_to_active_or_backoff(
            UNSCHEDULED_POD_ADD,
            None,
            pod,
            pre_check=lambda p: p.scheduling_group == group and p.namespace == namespace,
        )

    def _held_by_pre_enqueue(self, namespace: str, group_name: str) -> bool:
        """Whether GangScheduling's PreEnqueue would hold every member of the group anyway (no
        PodGroup yet, or fewer pods than its minCount): then waking them only parks them again,
        and each member of a 1000-member gang would wake all the others before it
        (O(members²) hints; the PodGroup's own add event and the member that completes the
        quorum wake them)."""
        pod_group = self._workloads.pod_group(namespace, group_name)
        return pod_group is None or self._workloads.short_of_min_count(pod_group)


class PodEventSink(Protocol):
    def on_add(self, pod: PodView) -> None: ...

    def on_update(self, old: PodView, new: PodView) -> None: ...

    def on_delete(self, pod: PodView) -> None: ...


#: upstream's framework.EventUnscheduledPodAdd
UNSCHEDULED_POD_ADD = ClusterEvent(
    EventResource.UNSCHEDULED_POD, ActionType.ADD, "UnschedulablePodAdd"
)


def _member_order(pinfo: QueuedPodInfo) -> tuple[int, float]:
    """Highest priority first, then the earliest first attempt (podGroupInfoForPod's sort)."""
    first = pinfo.initial_attempt_timestamp
    return (-pinfo.pod.priority, first if first is not None else 0.0)
