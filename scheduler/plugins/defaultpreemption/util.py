"""Pod ordering, start times and PodDisruptionBudget accounting for preemption.

Upstream: pkg/scheduler/util/utils.go (MoreImportantPod, GetPodStartTime,
GetEarliestPodStartTime) and pkg/scheduler/framework/plugins/defaultpreemption/
default_preemption.go (filterPodsWithPDBViolation, podTerminatingByPreemption).

Start times: upstream reads status.startTime and uses time.Now() for a pod that has none
(assumed pods, pods not started yet). Here a missing start time is +inf: it still sorts after
every real start time, but two pods without one compare equal instead of by the order in which
time.Now() happened to be called, which keeps sorting stable and deterministic.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.listers.cluster_objects import DisruptionBudget

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"

_T = TypeVar("_T")

# (pod1, pod2) → whether pod1 is more important (less likely to be preempted) than pod2.
MoreImportantPodFunc = Callable[["PodView", "PodView"], bool]
# The PodDisruptionBudgets that select a pod.
BudgetLookup = Callable[["PodView"], Iterable["DisruptionBudget"]]


def pod_start_time(pod: PodView) -> float:
    """status.startTime as seconds since the epoch; +inf when the pod has none (see above)."""
    status = pod.raw.get("status")
    raw: Any = status.get("startTime") if isinstance(status, Mapping) else None
    if not isinstance(raw, str) or not raw:
        return math.inf
    return _timestamp(raw)


@functools.lru_cache(maxsize=65536)
def _timestamp(text: str) -> float:
    """RFC 3339 text as seconds since the epoch (+inf if malformed); cached, since every dry
    run sorts each node's victims by it and pods share start times at second precision."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return math.inf


def more_important_pod(pod1: PodView, pod2: PodView) -> bool:
    """Higher priority first; for equal priority, the pod that started earlier."""
    if pod1.priority != pod2.priority:
        return pod1.priority > pod2.priority
    return pod_start_time(pod1) < pod_start_time(pod2)


def sort_by_importance(
    pods: Iterable[PodView], more_important: MoreImportantPodFunc = more_important_pod
) -> list[PodView]:
    """`pods` from most to least important (stable for pods neither beats)."""
    if more_important is more_important_pod:
        return sorted(pods, key=lambda p: (-p.priority, pod_start_time(p)))
    return sorted_most_important_first(pods, more_important)


def sorted_most_important_first(
    items: Iterable[_T], more_important: Callable[[_T, _T], bool]
) -> list[_T]:
    """`items` ordered by a "more important than" predicate, most important first (stable for
    items neither beats), as upstream's sort.Slice with such a less function."""

    def compare(a: _T, b: _T) -> int:
        if more_important(a, b):
            return -1
        if more_important(b, a):
            return 1
        return 0

    return sorted(items, key=functools.cmp_to_key(compare))


def earliest_pod_start_time(pods: Sequence[PodView]) -> float | None:
    """The earliest start time among the highest-priority pods; None for no pods."""
    if not pods:
        return None
    earliest = pod_start_time(pods[0])
    max_priority = pods[0].priority
    for pod in pods:
        if pod.priority == max_priority:
            started = pod_start_time(pod)
            if started < earliest:
                earliest = started
        elif pod.priority > max_priority:
            max_priority = pod.priority
            earliest = pod_start_time(pod)
    return earliest


def pod_terminating_by_preemption(pod: PodView) -> bool:
    """Being deleted, and its DisruptionTarget condition says the scheduler preempted it."""
    if pod.deletion_timestamp is None:
        return False
    status = pod.raw.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, Mapping) and condition.get("type") == DISRUPTION_TARGET:
            return (
                condition.get("status") == "True"
                and condition.get("reason") == PREEMPTION_BY_SCHEDULER
            )
    return False


def filter_pods_with_pdb_violation(
    pods: Sequence[PodView], budgets_for: BudgetLookup
) -> tuple[list[PodView], list[PodView]]:
    """(violating, non-violating): whether preempting each pod, in order, would take some
    budget that selects it below zero. Stable: the input order is kept in both groups.

    A pod already in a budget's disruptedPods was processed by the API server and does not
    count against that budget again.
    """
    allowed: dict[tuple[str, str], int] = {}
    violating: list[PodView] = []
    non_violating: list[PodView] = []
    for pod in pods:
        violated = False
        # A pod with no labels matches no budget.
        if pod.labels:
            for budget in budgets_for(pod):
                if pod.name in budget.disrupted_pods:
                    continue
                key = (budget.namespace, budget.name)
                left = allowed.get(key, budget.disruptions_allowed) - 1
                allowed[key] = left
                if left < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


def budgets_from(budgets: Sequence[DisruptionBudget]) -> BudgetLookup:
    """A BudgetLookup over a fixed list of budgets (upstream passes its PDB lister's list)."""

    def lookup(pod: PodView) -> list[DisruptionBudget]:
        return [budget for budget in budgets if budget.selects(pod)]

    return lookup
