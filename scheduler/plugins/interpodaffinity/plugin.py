"""InterPodAffinity (PreFilter, Filter, PreScore, Score, EnqueueExtensions).

Upstream: pkg/scheduler/framework/plugins/interpodaffinity/plugin.go, filtering.go and
scoring.go (queueing hints enabled). The counts and scores are computed in filtering.py and
scoring.py; this module holds the extension points and chooses the fast path (over the
snapshot's NodeTable) when the nodes are the snapshot's own list, else the reference per-pod
walk. Both give the same state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from scheduler.api.podaffinity import NO_POD_AFFINITY
from scheduler.cache.rows import Rows, RowVerdict
from scheduler.cache.snapshot import node_table_for
from scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from scheduler.framework.interface import (
    CycleState,
    Handle,
    NodeScore,
    PreFilterResult,
    SignFragment,
)
from scheduler.framework.runtime import batch as signers
from scheduler.framework.status import Status
from scheduler.plugins.interpodaffinity import filtering, scoring
from scheduler.plugins.interpodaffinity.args import InterPodAffinityArgs
from scheduler.plugins.interpodaffinity.hints import (
    schedulable_after_node_change,
    schedulable_after_pod_change,
)
from scheduler.plugins.interpodaffinity.state import PreFilterState, PreScoreState, score_node
from scheduler.plugins.interpodaffinity.terms import (
    TermVerdicts,
    has_preferred_terms,
    merge_all,
    merge_weighted,
)

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.cache.node_table import IntArray, NodeTable

NAME = "InterPodAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

_STATUSES: dict[int, Status] = {
    filtering.AFFINITY_FAILED: Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH),
    filtering.ANTI_AFFINITY_FAILED: Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH),
    filtering.EXISTING_ANTI_AFFINITY_FAILED: Status.unschedulable(
        ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH
    ),
}


def _missing(key: str) -> Status:
    return Status.error(f'error reading "{key}" from cycleState: not found')


class InterPodAffinity:
    name = NAME

    def sign_pod(self, pod: PodView) -> tuple[Sequence[SignFragment], Status]:
        """A pod with pod affinity or anti-affinity cannot be signed; otherwise the existing
        pods' terms read its labels, unless their preferred terms are ignored (upstream SignPod)."""
        affinity = pod.raw.get("spec", {}).get("affinity") or {}
        if affinity.get("podAffinity") or affinity.get("podAntiAffinity"):
            return signers.cannot_sign("pods with pod affinity are not signable")
        if self.args.ignore_preferred_terms_of_existing_pods:
            return signers.OK_NO_FRAGMENTS
        return [signers.labels_fragment(pod)], Status.OK

    def __init__(self, args: InterPodAffinityArgs | None, handle: Handle) -> None:
        self.args = args or InterPodAffinityArgs()
        self._handle = handle

    # PreFilter

    def pre_filter(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        snapshot = self._handle.snapshot()
        info = pod.pod_affinity
        if info is NO_POD_AFFINITY and not snapshot.have_pods_with_required_anti_affinity_list():
            # The common case, answered before building anything: nothing to count.
            return None, Status.skip()
        if info.parse_error is not None:
            return None, Status.unresolvable(f"parsing pod: {info.parse_error}")
        cluster = self._handle.cluster_objects
        affinity = merge_all(info.required_affinity, cluster)
        anti_affinity = merge_all(info.required_anti_affinity, cluster)
        ns_labels = cluster.namespace_labels(pod.namespace)
        matches = TermVerdicts(pod, ns_labels)
        table = node_table_for(snapshot, nodes)
        if table is not None:
            tallies = dict(
                zip(
                    ("existing", "affinity", "anti"),
                    (
                        filtering.existing_anti_affinity_counts_fast(table, matches),
                        *filtering.incoming_counts_fast(affinity, anti_affinity, table),
                    ),
                    strict=True,
                )
            )
            pre_filter = PreFilterState(pod, affinity, anti_affinity, ns_labels, pending=tallies)
            for which, tally in tallies.items():
                tally.seed(pre_filter, which)
        else:
            existing = filtering.existing_anti_affinity_counts(
                snapshot.have_pods_with_required_anti_affinity_list(), matches
            )
            affinity_counts, anti_counts = filtering.incoming_counts_reference(
                affinity, anti_affinity, nodes
            )
            pre_filter = PreFilterState(
                pod, affinity, anti_affinity, ns_labels, existing, affinity_counts, anti_counts
            )
        if not pre_filter.has_counts("existing") and not affinity and not anti_affinity:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, pre_filter)
        return None, Status.OK

    def pre_filter_extensions(self) -> InterPodAffinity:
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: PodView, pod_to_add: PodView, node_info: NodeInfo
    ) -> Status:
        return self._update(state, pod_to_add, node_info, 1)

    def remove_pod(
        self,
        state: CycleState,
        pod_to_schedule: PodView,
        pod_to_remove: PodView,
        node_info: NodeInfo,
    ) -> Status:
        return self._update(state, pod_to_remove, node_info, -1)

    def _update(self, state: CycleState, pod: PodView, node_info: NodeInfo, sign: int) -> Status:
        try:
            pre_filter: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            return _missing(PRE_FILTER_STATE_KEY)
        pre_filter.update_with_pod(pod, node_info.node, sign)
        return Status.OK

    # Filter

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        try:
            pre_filter: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            return _missing(PRE_FILTER_STATE_KEY)
        node = node_info.node
        if node is None:
            return Status.error("node not found")
        verdict = filtering.node_verdict(pre_filter, node.labels)
        return Status.OK if verdict == filtering.PASS else _STATUSES[verdict]

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict | None:
        try:
            pre_filter: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            return None  # the per-node path reports the error
        verdicts = filtering.row_verdicts(pre_filter, table, rows)
        by_row: IntArray = np.zeros(len(table), dtype=np.int64)
        by_row[rows] = verdicts
        return RowVerdict(verdicts == filtering.PASS, lambda row: _STATUSES[int(by_row[row])])

    # PreScore / Score

    def pre_score(self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]) -> Status:
        if (
            pod.pod_affinity is NO_POD_AFFINITY
            and not self._handle.snapshot().have_pods_with_affinity_list()
        ):
            return Status.skip()  # no term on either side: every score would be 0
        has_affinity, has_anti_affinity = has_preferred_terms(pod)
        has_constraints = has_affinity or has_anti_affinity
        if self.args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip()
        info = pod.pod_affinity
        if info.parse_error is not None:
            return Status.error(f"failed to parse pod: {info.parse_error}")
        snapshot = self._handle.snapshot()
        cluster = self._handle.cluster_objects
        affinity = merge_weighted(info.preferred_affinity, cluster)
        anti_affinity = merge_weighted(info.preferred_anti_affinity, cluster)
        ns_labels = cluster.namespace_labels(pod.namespace)
        matches = TermVerdicts(pod, ns_labels)
        hard_weight = self.args.hard_pod_affinity_weight
        table = node_table_for(snapshot)
        if table is not None:
            tally = scoring.topology_score_fast(
                table,
                affinity if has_constraints else (),
                anti_affinity if has_constraints else (),
                hard_weight,
                matches,
            )
            if not tally.any():
                return Status.skip()
            state.write(
                PRE_SCORE_STATE_KEY,
                PreScoreState(None, pod, affinity, anti_affinity, ns_labels, pending=tally),
            )
            return Status.OK
        scores = scoring.topology_score_reference(
            snapshot.list() if has_constraints else snapshot.have_pods_with_affinity_list(),
            has_constraints,
            affinity,
            anti_affinity,
            hard_weight,
            matches,
        )
        if not scores:
            return Status.skip()
        state.write(
            PRE_SCORE_STATE_KEY, PreScoreState(scores, pod, affinity, anti_affinity, ns_labels)
        )
        return Status.OK

    def _pre_score_state(self, state: CycleState) -> PreScoreState | None:
        try:
            found: PreScoreState = state.read(PRE_SCORE_STATE_KEY)
        except KeyError:
            return None
        return found

    def score(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> tuple[int, Status]:
        pre_score = self._pre_score_state(state)
        if pre_score is None:
            return 0, _read_failed()
        node = node_info.node
        if node is None:
            return 0, Status.error("node not found")
        return score_node(pre_score.topology_score, node.labels), Status.OK

    def score_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> IntArray | None:
        pre_score = self._pre_score_state(state)
        if pre_score is None:
            return None
        pending = pre_score.pending
        if pending is not None:
            return pending.score_rows(rows)
        return scoring.score_rows(pre_score.topology_score, table, rows)

    def score_extensions(self) -> InterPodAffinity:
        return self

    def normalize_score(self, state: CycleState, pod: PodView, scores: list[NodeScore]) -> Status:
        pre_score = self._pre_score_state(state)
        if pre_score is None:
            return _read_failed()
        if pre_score.has_scores():
            scoring.normalize(scores)
        return Status.OK

    def normalize_rows(self, state: CycleState, pod: PodView, scores: IntArray) -> IntArray:
        pre_score = self._pre_score_state(state)
        if pre_score is None or not pre_score.has_scores():
            return scores.copy()
        return scoring.normalize_array(scores)

    # Queueing

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.ASSIGNED_POD,
                    ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE,
                ),
                schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                schedulable_after_node_change,
            ),
        )


def _read_failed() -> Status:
    return Status.error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
