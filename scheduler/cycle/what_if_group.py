"""What-if for a whole gang: could this PodGroup's quorum be placed right now, which member
would go where, and which member blocks the quorum and why, without scheduling anything.

`aiosched what-if` sends a `kind: List` of a scheduling.k8s.io/v1beta1 PodGroup and its member
Pods (or only Pods naming a PodGroup the cluster has); what_if.py hands it here. The group
algorithm is the one the PodGroup cycle runs, podgroup_algorithm.py's (GangScheduling's
PlacementFeasible before and after each member, members ordered by priority; with
TopologyAwareWorkloadScheduling the placements of podgroup_placement.py, each tried on its
nodes alone, the one placing the most members chosen), run on what-if's private snapshot:

- a member that fits is added to a private copy of its node's NodeInfo (SnapshotOverlay), so
  the members after it see it, as they see the members the cycle assumes; the copies are
  dropped when the evaluation ends, and the cache, the queue and the cluster are never touched
  (nothing is assumed, reserved, permitted or bound);
- Reserve, Permit, PostFilter (preemption) and extenders are not run, as for one pod's
  what-if: a member that fits here but that a Permit plugin would reject is reported as fitting;
- members of the group already bound or assumed in the cluster count as scheduled, as in the
  cycle (and fix the topology domain).

The answer reuses explain's ``podGroup`` section (podgroup_explain.py), with what-if's words:
a member is ``schedulable`` (it would be placed: the quorum can be), ``fitted`` (it fits but the
quorum cannot be placed), ``unschedulable``, ``error`` or ``notTried``.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from observability.http import BadRequest
from scheduler.api.errors import MalformedObject
from scheduler.api.objects import PodView
from scheduler.api.workload import PodGroupView
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.algorithm import (
    AttemptDetails,
    FitError,
    NoNodesAvailable,
    SchedulingError,
    StartIndex,
    schedule_pod,
)
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
from scheduler.cycle.profile_set import SchedulingProfile
from scheduler.cycle.scheduling_cycle import Attempt
from scheduler.cycle.what_if_manifest import pod_from_manifest
from scheduler.framework.interface import CycleState
from scheduler.framework.status import Status
from scheduler.listers.workload_objects import PodGroupStates, WorkloadObjects
from scheduler.queue.types import QueuedPodInfo

#: Member names listed per filter-verdict group of the blocking member (explain's default).
MAX_NAMES = 10
#: The PodGroup version a what-if reads (the one the scheduler watches).
POD_GROUP_API_VERSION = "scheduling.k8s.io/v1beta1"
#: A group what-if evaluates at most this many hypothetical members.
MAX_MEMBERS = 1000


@dataclass(frozen=True, slots=True)
class GroupRequest:
    """The gang to evaluate: its PodGroup, the hypothetical members, and where it came from."""

    group: PodGroupView
    pods: tuple[PodView, ...]
    # "manifest": the PodGroup was sent; "cluster": the pods name one the cluster has.
    source: str


def is_group_manifest(obj: Any) -> bool:
    """Whether a what-if body is a group (`kind: List`) rather than one Pod."""
    return isinstance(obj, Mapping) and obj.get("kind") == "List"


def group_request(obj: Mapping[str, Any], workloads: WorkloadObjects) -> GroupRequest:
    """The PodGroup and member Pods of a `kind: List` manifest; BadRequest says what is wrong."""
    items = obj.get("items")
    if not isinstance(items, list) or not items:
        raise BadRequest("a group what-if is a List with a PodGroup and its Pods in items")
    group_objs = [i for i in items if isinstance(i, Mapping) and i.get("kind") == "PodGroup"]
    pod_objs = [i for i in items if isinstance(i, Mapping) and i.get("kind") == "Pod"]
    others = len(items) - len(group_objs) - len(pod_objs)
    if others:
        raise BadRequest(f"items must be one PodGroup and Pods; {others} item(s) are neither")
    if len(group_objs) > 1:
        raise BadRequest(f"items hold {len(group_objs)} PodGroups; a what-if evaluates one")
    if not pod_objs:
        raise BadRequest("items hold no Pod: send the group's member Pods")
    if len(pod_objs) > MAX_MEMBERS:
        raise BadRequest(f"{len(pod_objs)} Pods: a group what-if evaluates at most {MAX_MEMBERS}")
    group: PodGroupView | None = None
    source = "cluster"
    if group_objs:
        group = _group_from_manifest(group_objs[0], pod_objs)
        source = "manifest"
    pods: list[PodView] = []
    for raw in pod_objs:
        if group is not None:
            raw = _naming_group(raw, group)
        pod = pod_from_manifest(raw)
        pods.append(pod)
    names = {(p.namespace, p.scheduling_group) for p in pods}
    if len(names) != 1 or None in {n for _, n in names}:
        listed = ", ".join(sorted(f"{ns}/{n}" for ns, n in names if n)) or "none"
        raise BadRequest(
            "every Pod must name the same PodGroup in spec.schedulingGroup.podGroupName, in "
            f"one namespace (found: {listed}; a Pod without one counts as none)"
        )
    namespace, name = next(iter(names))
    assert name is not None
    if group is None:
        group = workloads.pod_group(namespace, name)
        if group is None:
            raise BadRequest(
                f"the cluster has no PodGroup {namespace}/{name}: send its manifest in items",
                status=404,
            )
    if not group.is_gang:
        raise BadRequest(
            f"PodGroup {group.key} has the basic policy (no spec.schedulingPolicy.gang): its "
            "pods are scheduled one by one; ask what-if about one Pod"
        )
    uids = {pod.uid for pod in pods}
    seen: set[str] = set()
    for pod in pods:
        if pod.name in seen:
            raise BadRequest(f"two Pods are named {pod.namespace}/{pod.name}")
        seen.add(pod.name)
    assert len(uids) == len(pods)
    return GroupRequest(group, tuple(pods), source)


def _group_from_manifest(obj: Mapping[str, Any], pods: Sequence[Any]) -> PodGroupView:
    if obj.get("apiVersion") not in (None, POD_GROUP_API_VERSION):
        raise BadRequest(
            f"expected PodGroup of apiVersion {POD_GROUP_API_VERSION}, "
            f"got {obj.get('apiVersion')!r}"
        )
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        raise BadRequest("the PodGroup has no metadata.name")
    namespace = meta.get("namespace")
    if namespace is None:  # the members' namespace, as kubectl applies both to one namespace
        member_meta = pods[0].get("metadata") if pods else None
        namespace = (member_meta or {}).get("namespace") or "default"
    meta = {"uid": f"what-if-{uuid.uuid4()}", **meta, "namespace": namespace}
    try:
        return PodGroupView.from_dict({**obj, "metadata": meta})
    except MalformedObject as exc:
        raise BadRequest(f"invalid PodGroup: {exc}") from None


def _naming_group(raw: Mapping[str, Any], group: PodGroupView) -> Mapping[str, Any]:
    """A member Pod that names no group is taken to name the one sent with it."""
    spec = raw.get("spec")
    if not isinstance(spec, Mapping) or spec.get("schedulingGroup"):
        return raw
    meta = raw.get("metadata")
    meta = {"namespace": group.namespace, **(meta if isinstance(meta, Mapping) else {})}
    return {
        **raw,
        "metadata": meta,
        "spec": {**spec, "schedulingGroup": {"podGroupName": group.name}},
    }


class SnapshotOverlay:
    """Members placed during a group what-if, on private copies of their nodes' NodeInfos in
    the what-if snapshot; `restore` puts the snapshot's own NodeInfos back. The snapshot's
    NodeInfos are themselves what-if's copies of the cache's: the cache is never written.
    Within a PlacementScope the copies replace NodeInfos in the scope's lists only, which the
    scope's `forget` drops: `restore` after it only clears the overlay for the next one."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._originals: dict[str, NodeInfo] = {}

    def place(self, pod: PodView) -> None:
        snapshot = self._snapshot
        name = pod.node_name
        assert name is not None
        info = snapshot.node_info_map[name]
        if name not in self._originals:
            self._originals[name] = info
            copy = info.clone()
            self._swap(info, copy)
            info = copy
        info.add_pod(pod)
        snapshot.rebuild_derived_lists()
        snapshot.invalidate_table()

    def restore(self) -> None:
        if not self._originals:
            return
        snapshot = self._snapshot
        for name, original in self._originals.items():
            self._swap(snapshot.node_info_map[name], original)
        self._originals.clear()
        snapshot.rebuild_derived_lists()
        snapshot.invalidate_table()

    def _swap(self, old: NodeInfo, new: NodeInfo) -> None:
        snapshot = self._snapshot
        snapshot.node_info_map[new.node_name] = new
        nodes = snapshot.node_info_list
        for i, info in enumerate(nodes):
            if info is old:
                nodes[i] = new
                break


_Result = TypeVar("_Result")


def without_suspending(evaluation: Coroutine[Any, Any, _Result]) -> _Result:
    """An evaluation's result (one pod's schedule_pod, or a whole group's): it runs schedule_pod
    without extenders, which never suspends (what_if.py says why it must not), so it is driven
    to its end in one step."""
    try:
        evaluation.send(None)
    except StopIteration as done:
        result: _Result = done.value
        return result
    evaluation.close()
    raise RuntimeError("schedule_pod suspended without extenders")


@dataclass(slots=True)
class GroupEvaluation:
    """What the group algorithm concluded (the same parts the cycle gives explain)."""

    status: Status
    members: list[QueuedPodInfo]
    outcomes: list[MemberOutcome]
    verdict: Status | None = None
    placements: list[PlacementTried] = field(default_factory=list)
    chosen: str | None = None


class GroupEvaluator:
    """The PodGroup cycle's algorithm (podgroup_algorithm.py: podGroupSchedulingDefaultAlgorithm
    and the placement algorithm) over what-if's snapshot, placing members on an overlay."""

    def __init__(
        self,
        profile: SchedulingProfile,
        snapshot: Snapshot,
        start_index: int,
        gates: Mapping[str, bool],
        rng: random.Random | None = None,
    ) -> None:
        self._profile = profile
        self._snapshot = snapshot
        self._start_index = StartIndex(start_index)
        self._gates = gates
        self._rng = rng or random.Random()
        self._scope = PlacementScope(snapshot)
        self._overlay = SnapshotOverlay(snapshot)

    def evaluate(
        self,
        group: PodGroupView,
        pods: Sequence[PodView],
        scheduled_before: int,
        scheduled_nodes: Sequence[tuple[str, str]],
    ) -> GroupEvaluation:
        """`scheduled_before`: the group's members bound or assumed in the cluster, on
        `scheduled_nodes` ((pod key, node) pairs)."""
        # The cycle's order (podGroupInfoForPod): highest priority first; the manifest's order
        # stands for the first-attempt time hypothetical pods do not have.
        members = [QueuedPodInfo(pod, float(i)) for i, pod in enumerate(pods)]
        members.sort(key=lambda pinfo: (-pinfo.pod.priority, pinfo.timestamp))
        return without_suspending(self._evaluate(group, members, scheduled_before, scheduled_nodes))

    async def _evaluate(
        self,
        group: PodGroupView,
        members: list[QueuedPodInfo],
        scheduled_before: int,
        scheduled_nodes: Sequence[tuple[str, str]],
    ) -> GroupEvaluation:
        placement_feasible = placement_feasible_of(self._profile.framework)
        if topology_aware_enabled(self._gates):
            tried: list[PlacementTried] = []
            result = await placement_algorithm(
                self._profile.framework,
                group,
                members,
                scheduled_nodes,
                lambda: scheduled_before,
                placement_feasible,
                self._place_member,
                self._take_back,
                self._scope,
                self._rng,
                tried,
            )
            chosen = None if result.chosen is None else result.chosen.name
            return GroupEvaluation(
                result.status, members, result.outcomes, result.verdict, tried, chosen
            )
        outcomes: list[MemberOutcome] = []
        try:
            status, verdict = await default_algorithm(
                group, members, scheduled_before, placement_feasible, self._place_member, outcomes
            )
        finally:
            self._overlay.restore()
        return GroupEvaluation(status, members, outcomes, verdict)

    async def _place_member(self, pinfo: QueuedPodInfo) -> MemberOutcome:
        """The algorithm for one member (Filter and Score only); a member that fits is added
        to the overlay, where the members after it see it."""
        profile = self._profile
        state = CycleState()
        attempt = Attempt(profile, state, None, 0.0, 0, AttemptDetails())
        outcome = MemberOutcome(pinfo, attempt)
        try:
            result = await schedule_pod(
                profile.framework,
                state,
                pinfo.pod,
                self._snapshot,
                percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
                next_start_index=self._start_index,
                rng=self._rng,
                details=attempt.details,
            )
        except FitError as fit:
            return outcome.did_not_fit(fit)
        except (NoNodesAvailable, SchedulingError) as exc:
            outcome.failure = Status.error(str(exc))
            return outcome
        attempt.result = result
        attempt.assumed = pinfo.pod.with_node(result.suggested_host)
        self._overlay.place(attempt.assumed)
        return outcome

    def _take_back(self, outcomes: Sequence[MemberOutcome]) -> None:
        """After a placement's evaluation: the members it placed leave the overlay."""
        self._overlay.restore()


def cluster_members(
    states: PodGroupStates,
    group: PodGroupView,
    assumed_node: Callable[[str], str | None],
) -> list[tuple[str, str]]:
    """(pod key, node) of the group's members the cluster has bound or the cache assumed."""
    state = states.find(group.namespace, group.name)
    if state is None:
        return []
    return scheduled_member_nodes(state, assumed_node)


def group_section(evaluation: GroupEvaluation, group: PodGroupView) -> dict[str, Any]:
    """Explain's ``podGroup`` section for the evaluation, in what-if's words (module doc)."""
    placeable = evaluation.status.is_success
    summary = group_summary(
        group,
        evaluation.status,
        evaluation.verdict,
        evaluation.members,
        evaluation.outcomes,
        scheduled=placeable,
        max_names=MAX_NAMES,
        placements=evaluation.placements,
        chosen=evaluation.chosen,
    )
    if summary["result"] == "scheduled":
        summary["result"] = "schedulable"
    for row in summary["members"]:
        if row["result"] == "scheduled":
            row["result"] = "schedulable"
    summary["quorumPlaceable"] = placeable
    return summary
