"""The preemption Evaluator: find candidate nodes by dry runs, pick one, hand it to the scheduler.

Upstream: pkg/scheduler/framework/preemption/preemption.go (Evaluator.Preempt, findCandidates,
DryRunPreemption, SelectCandidate, pickOneNodeForPreemption, getLowerPriorityNominatedPods) and
pkg/scheduler/framework/types.go (NodeToStatus.NodesForStatusCode, FitError).

Differences from upstream, all deliberate:
- The dry run checks nodes one after the other (upstream: parallel with early cancel, which
  upstream's own tests pin to parallelism 1 for deterministic results): it stops as soon as it
  has at least one non-PDB-violating candidate and `num_candidates` candidates in all.
- Where upstream iterates a Go map (the explicit node statuses, the candidates' victims map),
  the order here is insertion order: the statuses in filter order, the candidates in dry-run
  order. "The first such node" in pickOneNodeForPreemption is therefore the first candidate
  found, not a random one.
- The preemptor is not re-read from an informer (Preempt's step 0): the cycle's pod is used.
- The API calls (prepareCandidate) are the scheduler's: `Handle.start_preemption` runs them
  after the cycle, as upstream's async preemption does.
- Extenders (callExtenders) are asked only on the async path, `preempt_with_extenders`, which
  the scheduler awaits when a preempting extender is interested in the pod.
- Where the interface offers a `dry_run_shortcut` (DefaultPreemption: resource_shortcut.py),
  nodes it can decide from sums of requests are not copied; its answers are the full dry run's.
  Where it offers `nodes_without_victims`, the nodes without a pod it may preempt get their
  "No preemption victims found" status without a call per node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from scheduler.framework.extender import Extender, Victims
from scheduler.framework.interface import (
    CycleState,
    NodeToStatus,
    PostFilterResult,
    Preemption,
    PreemptionHandle,
)
from scheduler.framework.results import Diagnosis, fit_error_message
from scheduler.framework.status import Code, Status
from scheduler.plugins.defaultpreemption.util import BudgetLookup, earliest_pod_start_time

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.framework.interface import SnapshotLister

PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_CANDIDATE_NODE = "no candidate node for preemption"
MAX_INT32 = 2**31 - 1

ScoreFunc = Callable[[str], float]
# (node, PDB lookup) → select_victims_on_node's outcome, or None to run it
ShortcutFunc = Callable[["NodeInfo", BudgetLookup], "tuple[list[PodView], int, Status] | None"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node the preemptor fits on once `victims` are gone."""

    name: str
    victims: Victims


class PreemptionInterface(Protocol):
    """What a preemption plugin decides (upstream's preemption.Interface)."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...

    def candidates_to_victims_map(self, candidates: Sequence[Candidate]) -> dict[str, Victims]: ...

    def pod_eligible_to_preempt_others(
        self, pod: PodView, nominated_node_status: Status | None
    ) -> tuple[bool, str]: ...

    def select_victims_on_node(
        self, state: CycleState, pod: PodView, node_info: NodeInfo, budgets_for: BudgetLookup
    ) -> tuple[list[PodView], int, Status]:
        """Victims (most important first), how many violate a PDB, and Success; or the status
        that says why preemption cannot help on this node. `state` and `node_info` are copies
        the method may change."""
        ...

    def ordered_score_funcs(self, victims: dict[str, Victims]) -> list[ScoreFunc] | None:
        """Score functions to pick the node with (each breaks the previous one's ties); None
        for upstream's defaults."""
        ...

    def dry_run_shortcut(self, state: CycleState, pod: PodView) -> ShortcutFunc | None:
        """For this attempt, a cheap function that returns what `select_victims_on_node`
        would return for a node (given the NodeInfo itself, not a copy), or None where it must
        run; None when there is no such shortcut."""
        ...


def aggregate_error_message(messages: Sequence[str]) -> str:
    """utilerrors.NewAggregate(errs).Error(): one message as is, several deduplicated in
    brackets."""
    if len(messages) == 1:
        return messages[0]
    unique = list(dict.fromkeys(messages))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


def nodes_for_status_code(
    statuses: NodeToStatus, snapshot: SnapshotLister, code: Code
) -> list[NodeInfo]:
    """NodeToStatus.NodesForStatusCode: the nodes whose status has `code` (nodes absent from
    the map have the absent status)."""
    if statuses.absent.code == code:
        all_nodes = snapshot.list()
        if not statuses.statuses:
            return list(all_nodes)
        return [info for info in all_nodes if statuses.get(info.node_name).code == code]
    found: list[NodeInfo] = []
    for name, status in statuses.statuses.items():
        if status.code == code:
            info = snapshot.get(name)
            if info is not None:
                found.append(info)
    return found


def lower_priority_nominated_pods(
    handle: PreemptionHandle, pod: PodView, node_name: str
) -> list[PodView]:
    """Pods nominated to `node_name` with a priority below `pod`'s."""
    return [
        nominated
        for nominated in handle.nominated_pods_for_node(node_name)
        if nominated.priority < pod.priority
    ]


def pick_one_node_for_preemption(
    victims: dict[str, Victims], score_funcs: Sequence[ScoreFunc] | None = None
) -> str:
    """The node to preempt on. Without custom score functions, in order of precedence:
    fewest PDB violations; lowest highest-priority victim; smallest sum of victim priorities
    (each shifted by MaxInt32+1 so negative priorities still count per pod); fewest victims;
    latest start time of the earliest-started highest-priority victim; then the first."""
    if not victims:
        return ""
    candidates = list(victims)
    if not score_funcs:

        def min_pdb_violations(node: str) -> float:
            return -victims[node].num_pdb_violations

        def min_highest_priority(node: str) -> float:
            return -victims[node].pods[0].priority

        def min_sum_priorities(node: str) -> float:
            return -sum(pod.priority + MAX_INT32 + 1 for pod in victims[node].pods)

        def min_num_pods(node: str) -> float:
            return -len(victims[node].pods)

        def latest_start_time(node: str) -> float:
            earliest = earliest_pod_start_time(victims[node].pods)
            return float("-inf") if earliest is None else earliest

        score_funcs = [
            min_pdb_violations,
            min_highest_priority,
            min_sum_priorities,
            min_num_pods,
            latest_start_time,
        ]
    for score in score_funcs:
        best: list[str] = []
        max_score = float("-inf")
        for node in candidates:
            value = score(node)
            if value > max_score:
                max_score = value
                best = []
            if value == max_score:
                best.append(node)
        if len(best) == 1:
            return best[0]
        if best:
            candidates = best
    return candidates[0]


class Evaluator:
    """Runs one preemption attempt for a PostFilter plugin (upstream's preemption.Evaluator)."""

    def __init__(
        self, plugin_name: str, handle: PreemptionHandle, interface: PreemptionInterface
    ) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.interface = interface

    def preempt(
        self, state: CycleState, pod: PodView, filtered: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """<None, Error>: a transient error; <None, Unschedulable>: not eligible now (the
        nomination is kept); <PostFilterResult(""), Unschedulable>: preemption cannot help
        (the nomination is cleared); <PostFilterResult(node), Success>: victims chosen."""
        found = self._candidates(state, pod, filtered)
        if isinstance(found, tuple):
            return found
        candidates, status = self.call_extenders(pod, found)
        return self._finish(pod, candidates, status)

    async def preempt_with_extenders(
        self,
        state: CycleState,
        pod: PodView,
        filtered: NodeToStatus,
        extenders: Sequence[Extender],
    ) -> tuple[PostFilterResult | None, Status]:
        """`preempt`, with the candidates offered to the extenders that support preemption
        and are interested in the pod (upstream's callExtenders)."""
        found = self._candidates(state, pod, filtered)
        if isinstance(found, tuple):
            return found
        candidates, status = await self.call_extenders_async(pod, found, extenders)
        return self._finish(pod, candidates, status)

    def _candidates(
        self, state: CycleState, pod: PodView, filtered: NodeToStatus
    ) -> list[Candidate] | tuple[PostFilterResult | None, Status]:
        """Steps 1 and 2: the candidates, or the outcome when there can be none."""
        # 1) Is the preemptor eligible to preempt others?
        nominated_status = filtered.get(pod.nominated_node_name)
        eligible, message = self.interface.pod_eligible_to_preempt_others(pod, nominated_status)
        if not eligible:
            return None, Status.unschedulable(message)

        # 2) Find all preemption candidates.
        all_nodes = self.handle.snapshot().list()
        candidates, node_statuses, errors = self.find_candidates(state, all_nodes, pod, filtered)
        if errors and not candidates:
            return None, Status.error(aggregate_error_message(errors))
        if not candidates:
            node_statuses.absent = Status.unresolvable(PREEMPTION_NOT_HELPFUL)
            message = fit_error_message(len(all_nodes), Diagnosis(node_to_status=node_statuses))
            return PostFilterResult(""), Status.unschedulable(message)
        return candidates

    def _finish(
        self, pod: PodView, candidates: list[Candidate], status: Status
    ) -> tuple[PostFilterResult | None, Status]:
        """Steps 4 and 5, once extenders (3) had their say."""
        if not status.is_success:
            return None, status

        # 4) Pick the best candidate.
        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, Status.unschedulable(NO_CANDIDATE_NODE)

        # 5) Hand the victims and the nominations to clear to the scheduler.
        self.handle.start_preemption(
            Preemption(
                preemptor=pod,
                node_name=best.name,
                victims=best.victims.pods,
                nominations_to_clear=tuple(
                    lower_priority_nominated_pods(self.handle, pod, best.name)
                ),
            )
        )
        return PostFilterResult(best.name), Status.OK

    def find_candidates(
        self,
        state: CycleState,
        all_nodes: Sequence[NodeInfo],
        pod: PodView,
        filtered: NodeToStatus,
    ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        """Candidates among the nodes where preemption might help (those whose filter status
        is Unschedulable), the dry run's node statuses and its error messages."""
        if not all_nodes:
            return [], NodeToStatus(), ["no nodes available"]
        potential = nodes_for_status_code(filtered, self.handle.snapshot(), Code.UNSCHEDULABLE)
        if not potential:
            return [], NodeToStatus(), []
        offset, num_candidates = self.interface.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(
            state,
            pod,
            potential,
            self.handle.cluster_objects.disruption_budgets_for,
            offset,
            num_candidates,
        )

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: PodView,
        potential_nodes: Sequence[NodeInfo],
        budgets_for: BudgetLookup,
        offset: int,
        num_candidates: int,
    ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        """Select victims on copies of the potential nodes, starting at `offset` and wrapping
        around, until there are `num_candidates` candidates of which at least one violates no
        PDB. Non-violating candidates come first in the result."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses = NodeToStatus()
        errors: list[str] = []
        shortcut = self.interface.dry_run_shortcut(state, pod)
        ordered = [*potential_nodes[offset:], *potential_nodes[:offset]]
        bulk = getattr(self.interface, "nodes_without_victims", None)
        found = None if bulk is None else bulk(pod, ordered)
        if found is not None:
            without, no_victims = found
            if all(without):  # e.g. no pod anywhere of lower priority: no candidate at all
                statuses.statuses.update((info.node_name, no_victims) for info in ordered)
                return [], statuses, []
        for index, node_info in enumerate(ordered):
            node_name = node_info.node_name
            if found is not None and found[0][index]:
                statuses.statuses[node_name] = found[1]
                continue
            outcome = None if shortcut is None else shortcut(node_info, budgets_for)
            if outcome is None:
                outcome = self.interface.select_victims_on_node(
                    state.clone(), pod, node_info.snapshot(), budgets_for
                )
            pods, num_violations, status = outcome
            if status.is_success and pods:
                candidate = Candidate(node_name, Victims(tuple(pods), num_violations))
                group = non_violating if num_violations == 0 else violating
                if len(group) < num_candidates:
                    group.append(candidate)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if status.is_success:
                status = Status.error(f'expected at least one victim pod on node "{node_name}"')
            if status.code == Code.ERROR:
                errors.append(status.message)
            statuses.statuses[node_name] = status
        return non_violating + violating, statuses, errors

    def call_extenders(
        self, pod: PodView, candidates: list[Candidate]
    ) -> tuple[list[Candidate], Status]:
        """The synchronous path has no extender to ask (the scheduler takes the async path,
        `preempt_with_extenders`, whenever one could answer)."""
        return candidates, Status.OK

    async def call_extenders_async(
        self, pod: PodView, candidates: list[Candidate], extenders: Sequence[Extender]
    ) -> tuple[list[Candidate], Status]:
        """Upstream's callExtenders: each extender that supports preemption and is interested
        in the pod may drop candidates or change their victims; an ignorable one that fails is
        skipped, any other failure ends preemption with its message."""
        victims_map = self.interface.candidates_to_victims_map(candidates)
        if not victims_map:
            return candidates, Status.OK
        for extender in extenders:
            if not extender.supports_preemption() or not extender.is_interested(pod):
                continue
            try:
                answer = await extender.process_preemption(pod, victims_map, self.handle.snapshot())
            except Exception as err:
                if extender.is_ignorable():
                    continue
                return [], Status.error(str(err))
            kept: dict[str, Victims] = {}
            for node_name, victims in answer.items():
                if victims is None or not victims.pods:
                    if extender.is_ignorable():
                        continue
                    return [], Status.error(
                        f'expected at least one victim pod on node "{node_name}"'
                    )
                kept[node_name] = Victims(tuple(victims.pods), victims.num_pdb_violations)
            victims_map = kept
            if not victims_map:
                break
        return [Candidate(name, victims) for name, victims in victims_map.items()], Status.OK

    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate | None:
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        victims = self.interface.candidates_to_victims_map(candidates)
        score_funcs = self.interface.ordered_score_funcs(victims)
        node = pick_one_node_for_preemption(victims, score_funcs)
        chosen = victims.get(node)
        if chosen is not None:
            return Candidate(node, chosen)
        return candidates[0]  # unreachable, as upstream's fallback
