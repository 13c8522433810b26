"""DefaultPreemption (PostFilter): when no node fits a pod, find lower-priority pods whose
removal would make it fit, choose the node where that hurts least, and have them preempted.

Upstream: pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go (PostFilter,
calculateNumCandidates, GetOffsetAndNumCandidates, CandidatesToVictimsMap, SelectVictimsOnNode,
PodEligibleToPreemptOthers, isPreemptionAllowed). Runs synchronously inside the scheduling
cycle on its snapshot; the chosen victims are deleted by the scheduler after the cycle
(`Handle.start_preemption`). The workload-aware path, PodGroupPostFilter, is in podgroup.py:
the PodGroup cycle calls `pod_group_post_filter` when a gang does not fit and
WorkloadAwarePreemption is on; a pod without a group never reaches it. The async-preemption
PreEnqueue gate of newer upstream is not part of this plugin.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from scheduler.cache.snapshot import node_table_for
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.extender import Extender, Victims
from scheduler.framework.interface import (
    CycleState,
    NodeToStatus,
    PostFilterResult,
    PreemptionHandle,
)
from scheduler.framework.status import Code, Status
from scheduler.listers.workload_objects import workload_aware_preemption_enabled
from scheduler.plugins.defaultpreemption.args import (
    DefaultPreemptionArgs,
    validate_default_preemption_args,
)
from scheduler.plugins.defaultpreemption.evaluator import (
    Candidate,
    Evaluator,
    ScoreFunc,
    ShortcutFunc,
)
from scheduler.plugins.defaultpreemption.podgroup import (
    POD_GROUP_PREEMPTION_POLICY,
    GroupPreemptionResult,
    GroupSchedulingFunc,
    PodGroupEvaluator,
    Victim,
    pod_group_post_filter,
    pod_group_priority,
    sort_victims,
    split_by_pdb_violation,
)
from scheduler.plugins.defaultpreemption.resource_shortcut import ResourceShortcut
from scheduler.plugins.defaultpreemption.util import (
    BudgetLookup,
    MoreImportantPodFunc,
    filter_pods_with_pdb_violation,
    more_important_pod,
    pod_terminating_by_preemption,
    sort_by_importance,
)

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.api.workload import PodGroupView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.cache.node_table import NodeTable
    from scheduler.listers.workload_objects import WorkloadObjects

NAME = "DefaultPreemption"
PREEMPTION_PREFIX = "preemption: "
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
NO_VICTIMS_FOUND = "No preemption victims found for incoming pod"
#: LowestPriorities' value for a node without pods: above any pod's priority (an int32).
NO_POD = 2**31

# (node, victim, preemptor) → whether the victim may be preempted, on top of having a lower
# priority than the preemptor (upstream's IsEligiblePodFunc).
IsEligiblePodFunc = Callable[["NodeInfo", "PodView", "PodView"], bool]


def _prefixed(
    result: PostFilterResult | None, status: Status
) -> tuple[PostFilterResult | None, Status]:
    """Upstream's PostFilter prefixes every message of the evaluator with "preemption: "."""
    if status.message:
        return result, Status(status.code, PREEMPTION_PREFIX + status.message)
    return result, status


def _always_eligible(node_info: NodeInfo, victim: PodView, preemptor: PodView) -> bool:
    return True


class DefaultPreemption:
    name = NAME

    def __init__(self, args: DefaultPreemptionArgs | None, handle: PreemptionHandle) -> None:
        self.args = args if args is not None else DefaultPreemptionArgs()
        validate_default_preemption_args(self.args)
        self.handle = handle
        self.evaluator = Evaluator(NAME, handle, self)
        # Customisation points kept from upstream (plugins built on this one replace them).
        self.is_eligible_pod: IsEligiblePodFunc = _always_eligible
        self.more_important_pod: MoreImportantPodFunc = more_important_pod
        self._lowest_priorities = LowestPriorities()

    # ---- PostFilter ----------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodView, filtered: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        return _prefixed(*self.evaluator.preempt(state, pod, filtered))

    async def post_filter_with_extenders(
        self,
        state: CycleState,
        pod: PodView,
        filtered: NodeToStatus,
        extenders: Sequence[Extender],
    ) -> tuple[PostFilterResult | None, Status]:
        """post_filter with the candidates offered to preempting extenders first (the
        scheduler awaits this instead when such an extender is interested in the pod)."""
        result, status = await self.evaluator.preempt_with_extenders(
            state, pod, filtered, extenders
        )
        return _prefixed(result, status)

    async def pod_group_post_filter(
        self,
        group: PodGroupView,
        members: Sequence[PodView],
        schedule_group: GroupSchedulingFunc,
    ) -> tuple[GroupPreemptionResult | None, Status]:
        """PodGroupPostFilter (podgroup.py): preempt on behalf of the gang `group`, whose
        unscheduled `members` did not fit; `schedule_group` runs the group's algorithm."""
        gates: Mapping[str, bool] = getattr(self.handle, "feature_gates", None) or {}
        group_policy = gates.get(POD_GROUP_PREEMPTION_POLICY, False)
        evaluator = PodGroupEvaluator(self.handle, NAME, group_policy)
        return await pod_group_post_filter(evaluator, group, members, schedule_group)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """None: this plugin never rejects a pod by itself (upstream registers events only for
        its async-preemption PreEnqueue gate), so no event needs to requeue one for it."""
        return ()

    # ---- preemption.Interface -------------------------------------------------------------

    def calculate_num_candidates(self, num_nodes: int) -> int:
        """How many candidates the dry run looks for: a percentage of the potential nodes,
        at least the absolute minimum, at most all of them."""
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """A random start among the potential nodes (spreads preemption over the cluster)."""
        return self.handle.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def candidates_to_victims_map(self, candidates: Sequence[Candidate]) -> dict[str, Victims]:
        return {candidate.name: candidate.victims for candidate in candidates}

    def ordered_score_funcs(self, victims: dict[str, Victims]) -> list[ScoreFunc] | None:
        return None

    def dry_run_shortcut(self, state: CycleState, pod: PodView) -> ShortcutFunc | None:
        """Where sums of requests decide a node, decide it without copying it
        (resource_shortcut); not when victims are chosen by a customised eligibility, which
        the shortcut does not know. Nodes without a pod of lower priority never get here
        (`nodes_without_victims`)."""
        if self.is_eligible_pod is not _always_eligible:
            return None
        if self._victim_groups() is not None:
            return None  # victims may span nodes: every node gets the full dry run
        shortcut = ResourceShortcut.for_attempt(self.handle, state, pod, self.more_important_pod)
        return shortcut.select_victims if shortcut is not None else None

    def nodes_without_victims(
        self, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[list[bool], Status] | None:
        """Which of `nodes` have no pod of lower priority than `pod`, and their status:
        SelectVictimsOnNode says "No preemption victims found" there before anything else,
        whatever the eligibility, PDBs, nominated pods or PreFilter extensions (nothing is
        removed and no filter runs). Read from the NodeTable's rows at once where a node is
        the table's; None where victims are units that span nodes."""
        if self._victim_groups() is not None:
            return None
        priority = pod.priority
        status = Status.unresolvable(NO_VICTIMS_FOUND)
        table = node_table_for(self.handle.snapshot())
        if table is None:
            return [lowest_priority(info) >= priority for info in nodes], status
        below = self._lowest_priorities.of(table) < priority
        row_of = table.row_of
        rows = np.fromiter(
            (row_of.get(info.node_name, -1) for info in nodes), dtype=np.intp, count=len(nodes)
        )
        known = rows >= 0
        known[known] = table.generation[rows[known]] == np.fromiter(
            (info.generation for info, ok in zip(nodes, known.tolist(), strict=True) if ok),
            dtype=np.int64,
        )
        without = np.zeros(len(nodes), dtype=np.bool_)
        without[known] = ~below[rows[known]]
        flags = without.tolist()
        for index in np.flatnonzero(~known).tolist():  # not the table's NodeInfo
            flags[index] = lowest_priority(nodes[index]) >= priority
        return flags, status

    def is_preemption_allowed(
        self, node_info: NodeInfo, victim: PodView, preemptor: PodView
    ) -> bool:
        return victim.priority < preemptor.priority and self.is_eligible_pod(
            node_info, victim, preemptor
        )

    def pod_eligible_to_preempt_others(
        self, pod: PodView, nominated_node_status: Status | None
    ) -> tuple[bool, str]:
        """Not when the pod's preemptionPolicy is Never, nor while victims of an earlier
        preemption are still terminating on its nominated node (unless that node no longer
        passes the filters for good)."""
        if pod.preemption_policy == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nominated = pod.nominated_node_name
        if nominated:
            if (
                nominated_node_status is not None
                and nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            ):
                return True, ""
            node_info = self.handle.snapshot().get(nominated)
            if node_info is not None:
                for other in node_info.pods:
                    if self.is_preemption_allowed(
                        node_info, other, pod
                    ) and pod_terminating_by_preemption(other):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def select_victims_on_node(
        self, state: CycleState, pod: PodView, node_info: NodeInfo, budgets_for: BudgetLookup
    ) -> tuple[list[PodView], int, Status]:
        """The fewest pods to remove from `node_info` (a copy) for `pod` to fit: remove every
        pod it may preempt, then add back as many as still let it fit, PDB-violating ones
        first, each group from the most important down."""
        workloads = self._victim_groups()
        if workloads is not None and any(p.scheduling_group is not None for p in node_info.pods):
            return self._select_victim_units(state, pod, node_info, budgets_for, workloads)
        handle = self.handle

        def remove(victim: PodView) -> Status:
            node_info.remove_pod(victim)
            return handle.run_pre_filter_extension_remove_pod(state, pod, victim, node_info)

        def add(victim: PodView) -> Status:
            node_info.add_pod(victim)
            return handle.run_pre_filter_extension_add_pod(state, pod, victim, node_info)

        potential = [p for p in node_info.pods if self.is_preemption_allowed(node_info, p, pod)]
        for victim in potential:
            status = remove(victim)
            if not status.is_success:
                return [], 0, _as_error(status)
        if not potential:
            return [], 0, Status.unresolvable(NO_VICTIMS_FOUND)

        # Without its affinity to the victims the pod may still not fit; upstream does not
        # try harder (affinity to lower-priority pods is not a recommended configuration).
        status = handle.run_filter_plugins_with_nominated_pods(state, pod, node_info)
        if not status.is_success:
            return [], 0, status

        potential = sort_by_importance(potential, self.more_important_pod)
        violating, non_violating = filter_pods_with_pdb_violation(potential, budgets_for)
        victims: list[PodView] = []
        num_violating = 0

        def reprieve(candidate: PodView) -> tuple[bool, Status]:
            status = add(candidate)
            if not status.is_success:
                return False, status
            fits = handle.run_filter_plugins_with_nominated_pods(state, pod, node_info).is_success
            if not fits:
                status = remove(candidate)
                if not status.is_success:
                    return False, status
                victims.append(candidate)
            return fits, Status.OK

        for candidate in violating:
            fits, status = reprieve(candidate)
            if not status.is_success:
                return [], 0, _as_error(status)
            if not fits:
                num_violating += 1
        for candidate in non_violating:
            _, status = reprieve(candidate)
            if not status.is_success:
                return [], 0, _as_error(status)

        # Keep the victims ordered from most to least important.
        if violating and non_violating:
            victims = sort_by_importance(victims, self.more_important_pod)
        return victims, num_violating, Status.OK

    # ---- WorkloadAwarePreemption: victims are units -----------------------------------------

    def _victim_groups(self) -> WorkloadObjects | None:
        """The PodGroups when single-pod preemption must treat them as units: the gate on and
        some PodGroup known. Without one a pod is its own unit and the per-pod path decides
        exactly as before, so pods pay nothing for the gate while no PodGroup exists."""
        if not workload_aware_preemption_enabled(getattr(self.handle, "feature_gates", None)):
            return None
        workloads = self.handle.cluster_objects.workloads
        return workloads if workloads.pod_groups.by_key else None

    def _select_victim_units(
        self,
        state: CycleState,
        pod: PodView,
        node_info: NodeInfo,
        budgets_for: BudgetLookup,
        workloads: WorkloadObjects,
    ) -> tuple[list[PodView], int, Status]:
        """SelectVictimsOnNode with the gate on (upstream kubernetes#137981, "pod group as
        victim"; the newest types.go's NewPodVictim and searchCrossNodesVictimPods): a pod of a
        PodGroup has its group's priority, and a pod of a group with disruptionMode `all`
        stands for all of its group's scheduled pods, on any node, removed and reprieved
        together; units are ordered by MoreImportantVictim and split by PDB violation as
        units. The victims' pods on other nodes are removed from copies of those nodes (their
        PreFilter extensions see it); Filter runs on this node only."""
        handle = self.handle
        snapshot = handle.snapshot()
        others: dict[str, NodeInfo] = {}

        def info_of(victim_pod: PodView) -> NodeInfo:
            name = victim_pod.node_name
            if name == node_info.node_name:
                return node_info
            copy = others.get(name)
            if copy is None:
                original = snapshot.get(name)
                if original is None:
                    raise LookupError(f'node "{name}" not found in the snapshot')
                copy = others[name] = original.snapshot()
            return copy

        def remove(unit: Victim) -> Status:
            for member in unit.pods:
                info = info_of(member)
                info.remove_pod(member)
                status = handle.run_pre_filter_extension_remove_pod(state, pod, member, info)
                if not status.is_success:
                    return status
            return Status.OK

        def add(unit: Victim) -> Status:
            for member in unit.pods:
                info = info_of(member)
                info.add_pod(member)
                status = handle.run_pre_filter_extension_add_pod(state, pod, member, info)
                if not status.is_success:
                    return status
            return Status.OK

        potential = [
            unit
            for unit in node_victims(node_info, workloads)
            if unit.priority < pod.priority
            and all(self.is_eligible_pod(node_info, member, pod) for member in unit.pods)
        ]
        if not potential:
            return [], 0, Status.unresolvable(NO_VICTIMS_FOUND)
        try:
            for unit in potential:
                status = remove(unit)
                if not status.is_success:
                    return [], 0, _as_error(status)
            status = handle.run_filter_plugins_with_nominated_pods(state, pod, node_info)
            if not status.is_success:
                return [], 0, status
            violating, non_violating = split_by_pdb_violation(sort_victims(potential), budgets_for)
            chosen: list[Victim] = []
            num_violating = 0

            def reprieve(unit: Victim) -> tuple[bool, Status]:
                status = add(unit)
                if not status.is_success:
                    return False, status
                fits = handle.run_filter_plugins_with_nominated_pods(state, pod, node_info)
                if not fits.is_success:
                    status = remove(unit)
                    if not status.is_success:
                        return False, status
                    chosen.append(unit)
                return fits.is_success, Status.OK

            for unit, _ in violating:
                fits, status = reprieve(unit)
                if not status.is_success:
                    return [], 0, _as_error(status)
                if not fits:
                    num_violating += 1
            for unit in non_violating:
                _, status = reprieve(unit)
                if not status.is_success:
                    return [], 0, _as_error(status)
        except LookupError as err:
            return [], 0, Status.error(str(err))
        if violating and non_violating:
            chosen = sorted(chosen, key=_victim_order_key(chosen))
        return [member for unit in chosen for member in unit.pods], num_violating, Status.OK


def _victim_order_key(units: Sequence[Victim]) -> Callable[[Victim], int]:
    """A sort key giving `units` MoreImportantVictim's order (most important first)."""
    ranked = sort_victims(units)
    rank = {id(unit): index for index, unit in enumerate(ranked)}
    return lambda unit: rank[id(unit)]


def node_victims(node_info: NodeInfo, workloads: WorkloadObjects) -> list[Victim]:
    """The preemption units of one node's pods (upstream's per-node domain with the gate on):
    a pod alone, at its PodGroup's priority when it names one that exists; or, for a group
    whose disruptionMode is `all`, one unit of every scheduled pod of the group the scheduler
    knows (its bound members, wherever they run; this node's member when none is known), met
    once. The group's pods come from its state, not from a walk over the cluster."""
    units: list[Victim] = []
    seen: set[str] = set()
    for pod in node_info.pods:
        name = pod.scheduling_group
        group = None if name is None else workloads.pod_group(pod.namespace, name)
        if name is None or group is None or not group.disruption_mode_all:
            priority = pod.priority if group is None else pod_group_priority(group)
            units.append(Victim((pod,), priority, name is not None))
            continue
        if group.key in seen:
            continue
        seen.add(group.key)
        group_state = workloads.states.find(pod.namespace, name)
        members = (
            []
            if group_state is None
            else [
                member
                for uid, member in group_state.pods.items()
                if uid in group_state.assigned and member.node_name
            ]
        )
        if all(member.uid != pod.uid for member in members):
            members.append(pod)
        units.append(Victim(tuple(members), pod_group_priority(group), True))
    return units


def lowest_priority(node_info: NodeInfo) -> int:
    """The lowest priority among the node's pods; NO_POD when it has none."""
    return min((pod.priority for pod in node_info.pods), default=NO_POD)


class LowestPriorities:
    """The lowest priority among each node's pods, per row of the snapshot's NodeTable (no
    pod: above any priority), kept by the row's NodeInfo generation: one cycle changes a node
    or two, so a dry run tells the nodes without a possible victim apart with one array
    comparison instead of a walk over every pod of every node."""

    __slots__ = ("_generation", "_lowest", "_table")

    def __init__(self) -> None:
        self._table: NodeTable | None = None
        self._generation = np.zeros(0, dtype=np.int64)
        self._lowest = np.zeros(0, dtype=np.int64)

    def of(self, table: NodeTable) -> npt.NDArray[np.int64]:
        if self._table is not table or len(self._lowest) != len(table):
            self._table = table
            self._generation = np.full(len(table), -1, dtype=np.int64)
            self._lowest = np.zeros(len(table), dtype=np.int64)
        stale = np.flatnonzero(self._generation != table.generation)
        infos = table.infos
        for row in stale.tolist():
            self._lowest[row] = lowest_priority(infos[row])
            self._generation[row] = table.generation[row]
        return self._lowest


def _as_error(status: Status) -> Status:
    """fwk.AsStatus(status.AsError()): an Error carrying the message."""
    return Status.error(status.message or status.code_name)
