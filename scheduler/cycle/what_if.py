"""What-if: where would this pod go right now, and why, without scheduling it.

Runs the scheduling algorithm (PreFilter, sampled Filter, PreScore, Score, selectHost) for a pod
that is not in the cluster, with the profiles of the running configuration or of a candidate
KubeSchedulerConfiguration, over a private copy of the cache's nodes. Nothing the scheduling
loop uses is touched:

- the frameworks are built from the configuration (the way a hot reload builds them) but wired
  to the private snapshot, to no metrics observer, no tracer, no extenders and no preemption,
  and to their own random source; the live ones keep their state and metrics;
- the private snapshot is brought up to date from the cache with the same incremental update a
  cycle uses (the first call copies every node, later ones only the nodes that changed); the
  scheduler's own snapshot, its start index and its random source are left alone;
- the queue is only read (nominated pods count on their nodes, as in a cycle);
- nothing is assumed, reserved, permitted, bound or preempted. When no node fits, the answer
  says that the pod would need preemption (PostFilter), which what-if does not try. Extenders
  are not asked either (their calls may have effects of their own); the answer says so when
  the configuration has some.

The evaluation is synchronous, so it cannot interleave with the loop's serial cycle; it blocks
the event loop for its duration: measured on 5000 nodes during SchedulingBasic, about 20 ms
(the nodes bound to since the last call are copied, 10 % of the nodes filtered, 500 scored) and
about 140 ms for the first call, which copies every node and builds the frameworks. The HTTP
layer (observability.http.what_if_routes) runs one at a time and spaces them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from observability.explain import build_explanation
from observability.http import BadRequest
from profiles.api import load_config_text
from profiles.config import ConfigOverrides, ResolvedConfig
from profiles.errors import ConfigInvalidError
from scheduler.api.objects import PodView
from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.algorithm import (
    AttemptDetails,
    FitError,
    NoNodesAvailable,
    ScheduleResult,
    SchedulingError,
    StartIndex,
    schedule_pod,
)
from scheduler.cycle.instrumentation import (
    absent_node_names,
    attempt_explanation_parts,
    plugin_filter_details,
)
from scheduler.cycle.podgroup_algorithm import GANG_SCHEDULING_PLUGIN
from scheduler.cycle.podgroup_outcome import MemberOutcome
from scheduler.cycle.profile_set import ProfileSet, SchedulingProfile, registry_for_config
from scheduler.cycle.scheduler import with_ignored_resources
from scheduler.cycle.what_if_group import (
    GroupEvaluation,
    GroupEvaluator,
    cluster_members,
    group_request,
    group_section,
    is_group_manifest,
    without_suspending,
)
from scheduler.cycle.what_if_manifest import pod_from_manifest
from scheduler.extenders import ExtenderConfigError, ignored_resources
from scheduler.framework.errors import FrameworkError
from scheduler.framework.interface import CycleState
from scheduler.framework.registry import Registry
from scheduler.framework.runtime import HandleDeps

if TYPE_CHECKING:
    from scheduler.cycle.scheduler import Scheduler

DEFAULT_SCHEDULER_NAME = "default-scheduler"
#: Scored nodes listed in an answer (explain keeps 5; a what-if is read once, on demand).
TOP_NODES = 10
NEEDS_PREEMPTION_NOTE = (
    "no node fits: the pod would need preemption (PostFilter), which what-if does not run"
)
GROUP_NEEDS_PREEMPTION_NOTE = (
    "the quorum cannot be placed: the group would need preemption, which what-if does not run"
)
GROUP_NOT_RUN_NOTE = "members were filtered and scored only: Reserve and Permit were not run"


def _focus_member(evaluation: GroupEvaluation) -> MemberOutcome | None:
    """The member a group answer explains: the first that did not fit (it keeps the quorum
    out of reach, explain's blockingMember), else the first tried."""
    for outcome in evaluation.outcomes:
        if outcome.failure is not None and outcome.failure.is_rejected:
            return outcome
    return evaluation.outcomes[0] if evaluation.outcomes else None


class WhatIf:
    """Answers what-if questions against one running Scheduler (see the module docstring)."""

    def __init__(
        self,
        scheduler: Scheduler,
        registry: Registry,
        overrides: ConfigOverrides = (),
        *,
        clock: Callable[[], float] = time.time,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._scheduler = scheduler
        self._registry = registry
        self._overrides = overrides
        self._clock = clock
        self._timer = timer
        self._snapshot = Snapshot()
        # The isolated twin of the live ProfileSet, rebuilt when a reload replaces it.
        self._live_source: ProfileSet | None = None
        self._live_twin: ProfileSet | None = None

    def answer(
        self,
        pod_manifest: Any,
        scheduler_name: str | None = None,
        config_text: str | ResolvedConfig | None = None,
    ) -> dict[str, Any]:
        """The explain-format answer for `pod_manifest`, plus a ``whatIf`` section; a
        `kind: List` of a PodGroup and its Pods gets the group's answer (what_if_group.py)."""
        started = self._timer()
        if is_group_manifest(pod_manifest):
            return self._answer_group(pod_manifest, scheduler_name, config_text, started)
        pod = pod_from_manifest(pod_manifest)
        profiles, source, profile = self._profile_for(pod, scheduler_name, config_text)
        cache = self._scheduler.cache
        cache.update_snapshot(self._snapshot)
        details = AttemptDetails()
        state = CycleState()
        result: ScheduleResult | None = None
        outcome, message = "schedulable", ""
        try:
            result = without_suspending(
                schedule_pod(
                    profile.framework,
                    state,
                    pod,
                    self._snapshot,
                    percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
                    # Where the next cycle would start scanning; the loop's own index stays.
                    next_start_index=StartIndex(self._scheduler.start_index.value),
                    rng=random.Random(),
                    details=details,
                )
            )
        except FitError as fit:
            outcome, message = "unschedulable", fit.message()
        except NoNodesAvailable as exc:
            outcome, message = "unschedulable", str(exc)
        except SchedulingError as exc:
            outcome, message = "error", str(exc)
        explanation = self._explanation(pod, profile, state, details, result, outcome, message)
        notes = [NEEDS_PREEMPTION_NOTE] if outcome == "unschedulable" else []
        explanation["whatIf"] = self._what_if_section(
            profiles, source, outcome == "unschedulable", notes, started
        )
        return explanation

    def _profile_for(
        self, pod: PodView, scheduler_name: str | None, config_text: str | ResolvedConfig | None
    ) -> tuple[ProfileSet, str, SchedulingProfile]:
        if config_text is not None:
            profiles, source = self._candidate_profiles(config_text), "candidate"
        else:
            profiles, source = self._live_profiles(), "live"
        name = scheduler_name or pod.scheduler_name or DEFAULT_SCHEDULER_NAME
        profile = profiles.get(name)
        if profile is None:
            known = ", ".join(profiles.names())
            raise BadRequest(
                f"no profile for schedulerName {name!r} in the {source} configuration "
                f"(profiles: {known})",
                status=404,
            )
        return profiles, source, profile

    def _explanation(
        self,
        pod: PodView,
        profile: SchedulingProfile,
        state: CycleState,
        details: AttemptDetails,
        result: ScheduleResult | None,
        outcome: str,
        message: str,
    ) -> dict[str, Any]:
        """Explain's answer for one (hypothetical) attempt of `pod`."""
        host = result.suggested_host if result is not None else None
        absent: list[str] = []
        if outcome == "unschedulable" and details.diagnosis is not None:
            snapshot = self._snapshot
            absent = absent_node_names(
                details.diagnosis, lambda: [n.node_name for n in snapshot.node_info_list]
            )
        verdicts, scores, totals = attempt_explanation_parts(details, TOP_NODES, host, absent)
        # What the rejecting plugins add per node (DynamicResources: claim, request, why).
        filter_details = (
            plugin_filter_details(profile.framework.plugins, state, pod, details.diagnosis)
            if details.diagnosis is not None
            else None
        )
        evaluated = feasible = None
        if result is not None:
            evaluated, feasible = result.evaluated_nodes, result.feasible_nodes
        elif details.diagnosis is not None:
            evaluated, feasible = len(details.diagnosis.node_to_status.statuses), 0
        return build_explanation(
            pod.uid,
            pod.namespace,
            pod.name,
            profile=profile.name,
            attempt=0,
            timestamp=self._clock(),
            result=outcome,
            message=message,
            node=host,
            filter_verdicts=verdicts,
            scores=scores,
            totals=totals,
            evaluated_nodes=evaluated,
            feasible_nodes=feasible,
            top_k=TOP_NODES,
            filter_details=filter_details,
        ).to_dict()

    def _what_if_section(
        self,
        profiles: ProfileSet,
        source: str,
        needs_preemption: bool,
        notes: list[str],
        started: float,
    ) -> dict[str, Any]:
        extenders = len(profiles.config.extenders)
        if extenders:
            notes.append(f"the {extenders} configured extender(s) were not asked")
        return {
            "configuration": source,
            "profiles": profiles.names(),
            "snapshotNodes": len(self._snapshot.node_info_list),
            "needsPreemption": needs_preemption,
            "note": "; ".join(notes),
            "seconds": round(self._timer() - started, 6),
        }

    def _answer_group(
        self,
        manifest: Any,
        scheduler_name: str | None,
        config_text: str | ResolvedConfig | None,
        started: float,
    ) -> dict[str, Any]:
        """A gang's answer: explain's format for the member that matters (the one blocking
        the quorum, else the first placed) with the whole group under ``podGroup``."""
        scheduler = self._scheduler
        workloads = scheduler.cluster_objects.workloads
        request = group_request(manifest, workloads)
        group = request.group
        profiles, source, profile = self._profile_for(request.pods[0], scheduler_name, config_text)
        cache = scheduler.cache
        cache.update_snapshot(self._snapshot)

        def assumed_node(uid: str) -> str | None:
            if not cache.is_assumed_pod(uid):
                return None
            pod = cache.get_pod(uid)
            return pod.node_name if pod is not None else None

        in_cluster = cluster_members(workloads.states, group, assumed_node)
        evaluation = GroupEvaluator(
            profile,
            self._snapshot,
            scheduler.start_index.value,
            profile.framework.feature_gates,
        ).evaluate(group, request.pods, len(in_cluster), in_cluster)
        section = group_section(evaluation, group)
        placeable = evaluation.status.is_success
        focus = _focus_member(evaluation)
        if focus is None:  # stopped before any member was tried
            pod = evaluation.members[0].pod
            explanation = self._explanation(
                pod, profile, CycleState(), AttemptDetails(), None, "unschedulable", ""
            )
        else:
            attempt = focus.attempt
            result = None if focus.failure is not None else attempt.result
            explanation = self._explanation(
                focus.pinfo.pod,
                profile,
                attempt.state,
                attempt.details,
                result,
                "schedulable" if focus.failure is None else "unschedulable",
                "",
            )
        outcome = (
            "schedulable"
            if placeable
            else ("unschedulable" if evaluation.status.is_rejected else "error")
        )
        explanation["result"] = outcome
        explanation["message"] = evaluation.status.message
        explanation["podGroup"] = section
        notes = [GROUP_NOT_RUN_NOTE]
        if outcome == "unschedulable":
            notes.insert(0, GROUP_NEEDS_PREEMPTION_NOTE)
        if GANG_SCHEDULING_PLUGIN not in profile.framework.plugins:
            notes.append(
                f"profile {profile.name!r} has no GangScheduling plugin: the scheduler would "
                "not hold these pods to minCount (it needs --feature-gates "
                "GenericWorkload=true,GangScheduling=true)"
            )
        what_if = self._what_if_section(
            profiles, source, outcome == "unschedulable", notes, started
        )
        what_if["podGroup"] = {
            "source": request.source,
            "members": len(request.pods),
            "scheduledInCluster": len(in_cluster),
        }
        explanation["whatIf"] = what_if
        return explanation

    # ---------------------------------------------------------------------- frameworks

    def _live_profiles(self) -> ProfileSet:
        live = self._scheduler.profiles
        if self._live_twin is None or self._live_source is not live:
            self._live_twin = self._build(live.config)
            self._live_source = live
        return self._live_twin

    def parse_config(self, text: str) -> ResolvedConfig:
        """A candidate configuration's text, loaded and validated (raises BadRequest). Touches
        nothing of the scheduler's state, so the HTTP handler runs it in a thread."""
        try:
            return load_config_text(
                text,
                registry_for_config(self._registry),
                source="candidate configuration",
                overrides=self._overrides,
                feature_gates=self._scheduler.options.feature_gates,
            )
        except ConfigInvalidError as exc:
            raise BadRequest(f"invalid configuration: {exc}") from None

    def _candidate_profiles(self, candidate: str | ResolvedConfig) -> ProfileSet:
        config = self.parse_config(candidate) if isinstance(candidate, str) else candidate
        try:
            return self._build(config)
        except (FrameworkError, ExtenderConfigError) as exc:
            raise BadRequest(f"invalid configuration: {exc}") from None

    def _build(self, config: ResolvedConfig) -> ProfileSet:
        """Frameworks for `config` as a reload builds them, wired to this engine only."""
        scheduler = self._scheduler
        config = with_ignored_resources(config, ignored_resources(config.extenders), self._registry)
        snapshot = self._snapshot
        rng = random.Random()

        def deps_for(profile: str) -> HandleDeps:
            return HandleDeps(
                snapshot=lambda: snapshot,
                client=scheduler.client,
                nominator=scheduler.queue,  # read only: nominated pods count on their nodes
                parallelism=config.parallelism,
                cluster_objects=scheduler.cluster_objects,
                rng=rng,
                pod_lister=lambda namespace, name: scheduler.pod_informer.store.get(
                    f"{namespace}/{name}"
                ),
                # The gates the loop's frameworks see (TopologyAwareWorkloadScheduling, DRA).
                feature_gates=scheduler.options.feature_gates,
            )

        return ProfileSet.build(config, self._registry, deps_for)
