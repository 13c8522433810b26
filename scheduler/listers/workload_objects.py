"""PodGroups and Workloads (scheduling.k8s.io/v1beta1), kept by informers, and the state of
each pod group as the scheduler sees it.

Upstream: kube-scheduler v1.37's PodGroupManager (pkg/scheduler/framework's PodGroupState:
AllPodsCount, ScheduledPodsCount, UnscheduledPods), fed by the pod informer; whether a member
is assumed is the cache's to say (upstream's cache feeds its PodGroupStates on assume and
forget). Here `PodGroupStates` is fed by the pod events of pods that name a group
(`GroupAwarePodEvents` in the cycle calls it; a pod without a group costs one attribute test),
and the PodGroup cycle asks it with the cache's `is_assumed_pod`.

The API is optional, as resource.k8s.io is: a cluster that does not serve scheduling.k8s.io/
v1beta1 (GenericWorkload off, the upstream default at v1.37) answers 404 and the stores stay
empty; a pod that names a group then waits in PreEnqueue for its PodGroup, as upstream's does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from scheduler.api.objects import PodView
from scheduler.api.workload import SCHEDULING_API, PodGroupView, WorkloadView
from scheduler.framework.events import EventResource
from scheduler.listers.storage_objects import EventSink, KeyedStore

# The workload-aware scheduling feature gates and their defaults at kube-scheduler v1.37;
# what aiosched honours of each: scheduler/plugins/gangscheduling/features.py.
# - GenericWorkload: alpha in v1.35, beta in v1.37 and still off by default (the scheduler's
#   versioned feature table, pkg/scheduler/features at v1.37).
# - TopologyAwareWorkloadScheduling: alpha since v1.36, off (same table).
# - GangScheduling (alpha since v1.35, off) and WorkloadAwarePreemption (alpha since v1.36,
#   off): the v1.37 sources read (search corpus) show no change to either entry, so their
#   v1.36 defaults stand.
GENERIC_WORKLOAD = "GenericWorkload"
GANG_SCHEDULING = "GangScheduling"
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING = "TopologyAwareWorkloadScheduling"
WORKLOAD_AWARE_PREEMPTION = "WorkloadAwarePreemption"
WORKLOAD_GATE_DEFAULTS: Mapping[str, bool] = {
    GENERIC_WORKLOAD: False,
    GANG_SCHEDULING: False,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: False,
    WORKLOAD_AWARE_PREEMPTION: False,
}


def gang_scheduling_enabled(gates: Mapping[str, bool] | None) -> bool:
    """GangScheduling on, with the GenericWorkload it depends on."""
    values = dict(WORKLOAD_GATE_DEFAULTS)
    values.update({k: v for k, v in (gates or {}).items() if k in WORKLOAD_GATE_DEFAULTS})
    return values[GANG_SCHEDULING] and values[GENERIC_WORKLOAD]


def workload_aware_preemption_enabled(gates: Mapping[str, bool] | None) -> bool:
    """WorkloadAwarePreemption on, with the GangScheduling (and GenericWorkload) it depends on:
    a gang whose PodGroup cycle fails runs DefaultPreemption's PodGroupPostFilter. The newest
    upstream scheduler keys the group path on this gate alone (DefaultPreemption's
    fts.EnableWorkloadAwarePreemption); the v1.37 docs fold its API fields (PodGroup
    priority, disruptionMode, preemptionPolicy) into GenericWorkload, which the API server
    serves."""
    value = (gates or {}).get(WORKLOAD_AWARE_PREEMPTION)
    if value is None:
        value = WORKLOAD_GATE_DEFAULTS[WORKLOAD_AWARE_PREEMPTION]
    return value and gang_scheduling_enabled(gates)


class PodGroupState:
    """The pods of one group the scheduler knows: every non-terminal pod naming the group and
    which of them are bound."""

    __slots__ = ("assigned", "pods")

    def __init__(self) -> None:
        self.pods: dict[str, PodView] = {}
        self.assigned: set[str] = set()

    def all_pods_count(self) -> int:
        return len(self.pods)

    def scheduled_pods_count(self, is_assumed: Callable[[str], bool]) -> int:
        """Assumed (in the cache) or bound: upstream's ScheduledPodsCount."""
        return sum(1 for uid in self.pods if uid in self.assigned or is_assumed(uid))

    def unscheduled_pods(self) -> list[PodView]:
        """The members not bound yet (the cycle skips those the cache has assumed)."""
        return [pod for uid, pod in self.pods.items() if uid not in self.assigned]


class PodGroupStates:
    """PodGroupState by "namespace/podGroupName"; a group's state exists once a pod names it."""

    def __init__(self) -> None:
        self._states: dict[str, PodGroupState] = {}

    def get(self, namespace: str, name: str) -> PodGroupState:
        key = f"{namespace}/{name}"
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = PodGroupState()
        return state

    def find(self, namespace: str, name: str) -> PodGroupState | None:
        """The group's state if a pod names it, without creating one (readers: the web view)."""
        return self._states.get(f"{namespace}/{name}")

    def of(self, pod: PodView) -> PodGroupState | None:
        if pod.scheduling_group is None:
            return None
        return self.get(pod.namespace, pod.scheduling_group)

    # -- pod events (only pods with a group are passed) ------------------------------------

    def pod_added(self, pod: PodView) -> None:
        state = self.of(pod)
        if state is None:
            return
        state.pods[pod.uid] = pod
        if pod.is_bound:
            state.assigned.add(pod.uid)

    def pod_deleted(self, pod: PodView) -> None:
        state = self.of(pod)
        if state is None:
            return
        state.pods.pop(pod.uid, None)
        state.assigned.discard(pod.uid)
        if not state.pods:
            self._states.pop(f"{pod.namespace}/{pod.scheduling_group}", None)


class WorkloadObjects:
    """The scheduling.k8s.io listers and the pod groups' states. Filled by informers
    (`informer_specs`) or by tests (`add`)."""

    def __init__(self) -> None:
        self.pod_groups: KeyedStore[PodGroupView] = KeyedStore(
            EventResource.POD_GROUP, "scheduling.k8s.io/PodGroup"
        )
        # Kept for tools (explain); no plugin's queueing hint reads Workloads.
        self.workloads: KeyedStore[WorkloadView] = KeyedStore(
            EventResource.WILDCARD, "scheduling.k8s.io/Workload"
        )
        self.states = PodGroupStates()
        # Moves pods to activeQ now (the scheduler sets it to the queue's activate):
        # upstream's Handle.Activate.
        self.activate: Callable[[Iterable[PodView]], None] = lambda pods: None

    def connect(self, sink: EventSink) -> None:
        """Send every later PodGroup change to `sink` as a cluster event."""
        store = self.pod_groups

        def send(old: Any, new: Any) -> None:
            sink(store.event_of(old, new), old, new)

        store.subscribe(send)

    def informer_specs(self) -> list[tuple[str, str, Any, KeyedStore[Any]]]:
        return [
            ("podgroups", f"{SCHEDULING_API}/podgroups", PodGroupView.from_dict, self.pod_groups),
            ("workloads", f"{SCHEDULING_API}/workloads", WorkloadView.from_dict, self.workloads),
        ]

    def pod_group(self, namespace: str, name: str) -> PodGroupView | None:
        return self.pod_groups.get(f"{namespace}/{name}")

    def short_of_min_count(self, group: PodGroupView) -> bool:
        """A gang whose pods known so far are fewer than its minCount: GangScheduling's
        PreEnqueue holds its members, and waking them would only park them again."""
        if group.min_count is None:
            return False  # only gangs are held
        return self.states.get(group.namespace, group.name).all_pods_count() < group.min_count

    def add(self, *objects: Any) -> None:
        """For tests: add PodGroupViews / WorkloadViews to their stores."""
        for obj in objects:
            (self.pod_groups if isinstance(obj, PodGroupView) else self.workloads).on_add(obj)
