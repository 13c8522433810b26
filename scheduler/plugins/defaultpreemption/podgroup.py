"""Workload-aware preemption: DefaultPreemption's PodGroupPostFilter, preempting on behalf of a
whole gang whose PodGroup cycle failed (feature gate WorkloadAwarePreemption).

Upstream: pkg/scheduler/framework/preemption/podgrouppreemption.go (PodGroupEvaluator.Preempt,
selectVictimsOnDomain, preemptorEligibleToPreemptOthers, isOngoingPreemption,
buildCurrentNominatingInfos), types.go (podGroupPreemptor, resolvePreemptionPolicy, the
cluster domain and its victims: getCrossNodesVictims, NewPodVictim), util.go
(MoreImportantVictim, GetPodPriority, FilterVictimsWithPDBViolation), executor.go
(actuatePodGroupPreemption) and pkg/scheduler/util's PodGroupPriority, as of the newest
versions of them read (kubernetes/kubernetes master on scheduling.k8s.io/v1beta1, where the
PodGroup carries priority, disruptionMode and preemptionPolicy; their tests:
podgrouppreemption_test.go). Newer still, master moves victim generation and the "ongoing
preemption" check behind a PreemptionManager; what it decides for a PodGroup is the same.
What they specify:

- The domain is the whole cluster. A victim is a unit: one pod, or every scheduled pod of a
  PodGroup whose disruptionMode is `all`. A pod's priority is its PodGroup's (spec.priority,
  0 when unset) when it names one that exists, else its own; so is a group victim's.
- The preemptor is the gang: its priority is the PodGroup's; its preemptionPolicy
  (resolvePreemptionPolicy, v1.37) with the PodGroupPreemptionPolicy gate on the PodGroup's,
  PreemptLowerPriority when unset (a group created with the gate off), whatever its members
  say; with the gate off (the default) Never when any member says Never, else
  PreemptLowerPriority, whatever the PodGroup says. Never: Unschedulable "not eligible due to
  preemptionPolicy=Never.". A lower-priority pod terminating by preemption on
  a member's nominated node means an earlier preemption is still under way: Success "ongoing
  preemption on nominated nodes", every member keeping its nomination.
- Potential victims are those of lower priority, ordered most important first
  (MoreImportantVictim: priority, then group before pod, then more pods, then the earlier
  start, then the lower UID), PDB-violating ones first (a unit violates when any of its pods
  would take a budget below zero). None: Unschedulable "No preemption victims found for
  incoming preemptor" (the newest Preempt; an earlier selectVictimsOnDomain said
  UnschedulableAndUnresolvable).
- All of them are removed from the snapshot and the group's scheduling function runs once; if
  the gang still does not fit, that status is the answer. Otherwise each victim, in that
  order, is added back (PreFilter extensions' AddPod for every proposed assignment) and every
  assignment is filtered again in the cycle's order, each assigned pod added to its node as it
  passes; a failure removes the victim again (RemovePod) and it stays a victim.
- DefaultPreemption.PodGroupPostFilter (default_preemption.go) backs the snapshot up before
  (StartMutations) and restores it after (EndMutations), refuses a group with a topology
  constraint (Unschedulable "not supported with topology constraints": the newest sources
  evaluate placements before preemption; v1.36's cycle refused such groups too) and prefixes
  every message with "pod group preemption: ".
- The victims left are preempted (DisruptionTarget, delete, a "Preempted by podgroup <uid> on
  node cluster" event) and every assigned member is nominated to its node (ModeOverride):
  Success "found a placement for podgroup, preempting N victims".

Differences, said where they are: the reprieve does not run Reserve for the proposed
assignments (aiosched's stateful Reserve plugins, volumes and DRA claims, share caches with
the running cycle; node-local filters see the assigned pods on their nodes all the same).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from scheduler.cache.node_info import NodeInfo
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.interface import CycleState, Preemption, PreemptionHandle
from scheduler.framework.status import Code, Status
from scheduler.plugins.defaultpreemption.util import (
    BudgetLookup,
    pod_start_time,
    pod_terminating_by_preemption,
    sorted_most_important_first,
)

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.api.workload import PodGroupView
    from scheduler.listers.workload_objects import WorkloadObjects

log = logging.getLogger(__name__)

NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
ONGOING_PREEMPTION = "ongoing preemption on nominated nodes"
NO_VICTIMS_FOUND = "No preemption victims found for incoming preemptor"
#: Candidate.Name() of a workload-aware preemption (the domain is the cluster).
CLUSTER_DOMAIN = "cluster"
#: upstream's podGroupExecutorPreemptor.Type()
PREEMPTOR_TYPE = "podgroup"


def found_placement_message(victims: int) -> str:
    return f"found a placement for podgroup, preempting {victims} victims"


POD_GROUP_PREEMPTION_PREFIX = "pod group preemption: "
NOT_SUPPORTED_WITH_TOPOLOGY = "not supported with topology constraints"

# A proposed assignment of the group's scheduling function: the member (with its node set),
# the node and the CycleState its PreFilter filled (upstream's fwk.ProposedAssignment).
Assignment = tuple["PodView", str, CycleState]
# The group's scheduling function (upstream's PodGroupSchedulingFunc): the group's status and
# the members it placed, run on the snapshot as the nodes it is given have it (it adds the
# members it places to them as it goes and removes them before it returns).
GroupSchedulingFunc = Callable[["MutableNodes"], Awaitable[tuple[Status, list[Assignment]]]]


class MutableNodes(Protocol):
    """The snapshot as workload-aware preemption changes it (upstream's
    MutableSnapshotSharedLister); the caller backs the snapshot up before and restores it
    after (scheduler/cycle/podgroup_placement.py's SnapshotBackup)."""

    def get(self, node_name: str) -> NodeInfo | None: ...

    def add_pod(self, pod: PodView, node_name: str) -> None: ...

    def remove_pod(self, pod: PodView, node_name: str) -> None: ...


class SnapshotBackup:
    """The scheduler's snapshot made writable for one preemption attempt (upstream's
    StartMutations / EndMutations): a node is copied the first time a pod is added to or
    removed from it, its copy put in the snapshot's place, and `restore` puts every original
    back, so the cache's incremental update (by generation) never sees the difference."""

    __slots__ = ("_index", "_originals", "_snapshot")

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._originals: dict[str, NodeInfo] = {}
        self._index: dict[str, int] | None = None

    def get(self, node_name: str) -> NodeInfo | None:
        return self._snapshot.node_info_map.get(node_name)

    def add_pod(self, pod: PodView, node_name: str) -> None:
        self._writable(node_name).add_pod(pod)
        self._changed()

    def remove_pod(self, pod: PodView, node_name: str) -> None:
        self._writable(node_name).remove_pod(pod)
        self._changed()

    def _writable(self, node_name: str) -> NodeInfo:
        snapshot = self._snapshot
        info = snapshot.node_info_map.get(node_name)
        if info is None:
            raise LookupError(f'node "{node_name}" not found in the snapshot')
        if node_name in self._originals:
            return info
        if self._index is None:
            self._index = {n.node_name: i for i, n in enumerate(snapshot.node_info_list)}
        copy = info.snapshot()
        self._originals[node_name] = info
        snapshot.node_info_map[node_name] = copy
        snapshot.node_info_list[self._index[node_name]] = copy
        return copy

    def _changed(self) -> None:
        # Plugins read the affinity lists and the row table: both follow the copies.
        self._snapshot.rebuild_derived_lists()
        self._snapshot.invalidate_table()

    def restore(self) -> None:
        if not self._originals:
            return
        snapshot = self._snapshot
        index = self._index or {}
        for name, info in self._originals.items():
            snapshot.node_info_map[name] = info
            snapshot.node_info_list[index[name]] = info
        self._originals.clear()
        self._changed()


@dataclass(frozen=True, slots=True)
class Victim:
    """A unit preemption evicts whole (upstream's Victim): one pod, or the scheduled pods of a
    PodGroup whose disruptionMode is `all`. `is_group`: its pods name a PodGroup (upstream's
    PodGroupKeyType, which a single pod of a group has too)."""

    pods: tuple[PodView, ...]
    priority: int
    is_group: bool

    @property
    def earliest_start_time(self) -> float:
        return min(pod_start_time(pod) for pod in self.pods)


def pod_group_priority(group: PodGroupView) -> int:
    """util.PodGroupPriority: spec.priority, 0 when unset."""
    return group.priority if group.priority is not None else 0


def effective_priority(pod: PodView, workloads: WorkloadObjects) -> int:
    """GetPodPriority: the priority of the pod's PodGroup when it names one that exists."""
    name = pod.scheduling_group
    if name is None:
        return pod.priority
    group = workloads.pod_group(pod.namespace, name)
    return pod.priority if group is None else pod_group_priority(group)


def more_important_victim(first: Victim, second: Victim) -> bool:
    """MoreImportantVictim: higher priority; a group before a pod; more pods; the earlier
    start; the lower UID (upstream's deterministic tie-break)."""
    if first.priority != second.priority:
        return first.priority > second.priority
    if first.is_group != second.is_group:
        return first.is_group
    if len(first.pods) != len(second.pods):
        return len(first.pods) > len(second.pods)
    start1, start2 = first.earliest_start_time, second.earliest_start_time
    if start1 != start2:
        return start1 < start2
    return first.pods[0].uid < second.pods[0].uid


def sort_victims(victims: Iterable[Victim]) -> list[Victim]:
    """Most important first."""
    return sorted_most_important_first(victims, more_important_victim)


def cluster_victims(nodes: Sequence[NodeInfo], workloads: WorkloadObjects) -> list[Victim]:
    """getCrossNodesVictims: every pod on the nodes as its own victim, except the pods of a
    PodGroup with disruptionMode `all`, which form one victim across the cluster (in the
    order their group was first met)."""
    victims: list[Victim | str] = []
    group_pods: dict[str, list[PodView]] = {}
    group_priority: dict[str, int] = {}
    for info in nodes:
        for pod in info.pods:
            name = pod.scheduling_group
            group = None if name is None else workloads.pod_group(pod.namespace, name)
            if group is None or not group.disruption_mode_all:
                priority = pod.priority if group is None else pod_group_priority(group)
                victims.append(Victim((pod,), priority, name is not None))
                continue
            key = group.key
            if key not in group_pods:
                group_pods[key] = []
                group_priority[key] = pod_group_priority(group)
                victims.append(key)
            group_pods[key].append(pod)
    return [
        Victim(tuple(group_pods[v]), group_priority[v], True) if isinstance(v, str) else v
        for v in victims
    ]


def split_by_pdb_violation(
    victims: Sequence[Victim], budgets_for: BudgetLookup
) -> tuple[list[tuple[Victim, int]], list[Victim]]:
    """FilterVictimsWithPDBViolation: (violating victims with how many of their pods violate,
    non-violating victims), each in the input order. A pod already in a budget's
    disruptedPods does not count against it; a pod violates at the first budget it takes
    below zero (the budgets it matches before that are charged)."""
    allowed: dict[tuple[str, str], int] = {}

    def violates(pod: PodView) -> bool:
        for budget in budgets_for(pod):
            if pod.name in budget.disrupted_pods:
                continue
            key = (budget.namespace, budget.name)
            left = allowed.get(key, budget.disruptions_allowed) - 1
            allowed[key] = left
            if left < 0:
                return True
        return False

    violating: list[tuple[Victim, int]] = []
    non_violating: list[Victim] = []
    for victim in victims:
        count = sum(1 for pod in victim.pods if violates(pod))
        if count:
            violating.append((victim, count))
        else:
            non_violating.append(victim)
    return violating, non_violating


#: The alpha gate (v1.37, off by default) under which a PodGroup's own preemptionPolicy counts.
POD_GROUP_PREEMPTION_POLICY = "PodGroupPreemptionPolicy"


def preemptor_policy(
    group: PodGroupView, members: Sequence[PodView], group_policy: bool = False
) -> str:
    """resolvePreemptionPolicy (preemption/types.go, v1.37): with the PodGroupPreemptionPolicy
    gate (`group_policy`) the PodGroup's, PreemptLowerPriority when it has none; without it,
    Never when a member's is Never."""
    if group_policy:
        return group.preemption_policy or "PreemptLowerPriority"
    if any(pod.preemption_policy == "Never" for pod in members):
        return "Never"
    return "PreemptLowerPriority"


@dataclass(frozen=True, slots=True)
class GroupPreemptionResult:
    """PodGroupPostFilterResult: each member's node to nominate, by pod uid."""

    nominations: Mapping[str, str]


class PodGroupEvaluator:
    """One workload-aware preemption attempt (upstream's PodGroupEvaluator)."""

    def __init__(
        self, handle: PreemptionHandle, plugin_name: str, group_policy: bool = False
    ) -> None:
        self.handle = handle
        self.plugin_name = plugin_name
        # the PodGroupPreemptionPolicy gate (NewPodGroupEvaluator's enablePodGroupPreemptionPolicy)
        self.group_policy = group_policy

    async def preempt(
        self,
        group: PodGroupView,
        members: Sequence[PodView],
        nodes: MutableNodes,
        schedule_group: GroupSchedulingFunc,
    ) -> tuple[GroupPreemptionResult | None, Status]:
        workloads = self.handle.cluster_objects.workloads
        priority = pod_group_priority(group)
        if preemptor_policy(group, members, self.group_policy) == "Never":
            log.debug("Preemptor is not eligible for preemption", extra={"podGroup": group.key})
            return None, Status.unschedulable(NOT_ELIGIBLE_NEVER)
        if self._ongoing_preemption(members, priority, workloads):
            current = {pod.uid: pod.nominated_node_name for pod in members}
            return GroupPreemptionResult(current), Status(Code.SUCCESS, ONGOING_PREEMPTION)

        all_nodes = list(self.handle.snapshot().list())
        victims = sort_victims(
            v for v in cluster_victims(all_nodes, workloads) if v.priority < priority
        )
        budgets_for = self.handle.cluster_objects.disruption_budgets_for
        violating, non_violating = split_by_pdb_violation(victims, budgets_for)
        ordered = [(v, count) for v, count in violating] + [(v, 0) for v in non_violating]
        if not ordered:
            return None, Status.unschedulable(NO_VICTIMS_FOUND)

        chosen, status, assignments = await self._select_victims(ordered, nodes, schedule_group)
        if not status.is_success:
            return None, status
        pods = tuple(pod for victim, _ in chosen for pod in victim.pods)
        self.handle.start_preemption(
            Preemption(
                preemptor=members[0],
                node_name=CLUSTER_DOMAIN,
                victims=pods,
                preemptor_type=PREEMPTOR_TYPE,
                preemptor_uid=group.uid,
            )
        )
        nominations = {pod.uid: node for pod, node, _ in assignments}
        return GroupPreemptionResult(nominations), Status(
            Code.SUCCESS, found_placement_message(len(pods))
        )

    def _ongoing_preemption(
        self, members: Sequence[PodView], priority: int, workloads: WorkloadObjects
    ) -> bool:
        """isOngoingPreemption: a lower-priority pod terminating by preemption on a node some
        member is nominated to."""
        snapshot = self.handle.snapshot()
        for node_name in {pod.nominated_node_name for pod in members if pod.nominated_node_name}:
            info = snapshot.get(node_name)
            if info is None:
                continue
            for pod in info.pods:
                if effective_priority(pod, workloads) < priority and pod_terminating_by_preemption(
                    pod
                ):
                    return True
        return False

    async def _select_victims(
        self,
        ordered: Sequence[tuple[Victim, int]],
        nodes: MutableNodes,
        schedule_group: GroupSchedulingFunc,
    ) -> tuple[list[tuple[Victim, int]], Status, list[Assignment]]:
        """selectVictimsOnDomain: the victims that must go (most important first, violating
        ones first), the status, and the proposed assignments."""
        handle = self.handle

        for victim, _ in ordered:
            for pod in victim.pods:
                nodes.remove_pod(pod, pod.node_name)
        status, proposed = await schedule_group(nodes)
        if not status.is_success:
            return [], status, []
        assignments = [a for a in proposed if a[1]]

        def node(name: str) -> NodeInfo:
            info = nodes.get(name)
            if info is None:
                raise LookupError(f'node "{name}" not found in the snapshot')
            return info

        def add_victim(victim: Victim) -> None:
            for pod in victim.pods:
                nodes.add_pod(pod, pod.node_name)
                info = node(pod.node_name)
                for member, _, state in assignments:
                    result = handle.run_pre_filter_extension_add_pod(state, member, pod, info)
                    if not result.is_success:
                        raise _ExtensionFailed(result)

        def remove_victim(victim: Victim) -> None:
            for pod in victim.pods:
                nodes.remove_pod(pod, pod.node_name)
                info = node(pod.node_name)
                for member, _, state in assignments:
                    result = handle.run_pre_filter_extension_remove_pod(state, member, pod, info)
                    if not result.is_success:
                        raise _ExtensionFailed(result)

        def reprieve(victim: Victim) -> bool:
            add_victim(victim)
            added: list[tuple[PodView, str]] = []
            try:
                for member, node_name, state in assignments:
                    info = node(node_name)
                    fits = handle.run_filter_plugins_with_nominated_pods(state, member, info)
                    if not fits.is_success:
                        remove_victim(victim)
                        return False
                    # The member as assumed: later members' filters see it on its node
                    # (their CycleStates were made with it assumed already).
                    nodes.add_pod(member, node_name)
                    added.append((member, node_name))
                return True
            finally:
                for member, node_name in reversed(added):
                    nodes.remove_pod(member, node_name)

        chosen: list[tuple[Victim, int]] = []
        try:
            for victim, violations in ordered:
                if not reprieve(victim):
                    chosen.append((victim, violations))
        except _ExtensionFailed as failed:
            return [], Status.error(failed.status.message or failed.status.code_name), []
        except LookupError as err:
            return [], Status.error(str(err)), []
        return chosen, Status.OK, assignments


async def pod_group_post_filter(
    evaluator: PodGroupEvaluator,
    group: PodGroupView,
    members: Sequence[PodView],
    schedule_group: GroupSchedulingFunc,
) -> tuple[GroupPreemptionResult | None, Status]:
    """DefaultPreemption.PodGroupPostFilter: the evaluator between a backup and a restore of
    the snapshot, its message prefixed."""
    if group.topology_keys:
        return None, Status.unschedulable(POD_GROUP_PREEMPTION_PREFIX + NOT_SUPPORTED_WITH_TOPOLOGY)
    snapshot = evaluator.handle.snapshot()
    if not isinstance(snapshot, Snapshot):
        return None, Status.error(
            POD_GROUP_PREEMPTION_PREFIX + "failed to start mutations: the snapshot is read-only"
        )
    backup = SnapshotBackup(snapshot)
    try:
        result, status = await evaluator.preempt(group, members, backup, schedule_group)
    finally:
        backup.restore()
    if status.message:
        return result, Status(status.code, POD_GROUP_PREEMPTION_PREFIX + status.message)
    return result, status


class _ExtensionFailed(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status
