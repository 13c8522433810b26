"""What the scheduling loop tells the outside about each attempt: spans, explain entries, logs.

One :class:`Instrumentation` per Scheduler. The loop calls it at fixed points of an attempt
(begin, scheduled, bound, failed) and when a pod goes away; everything here reuses what the
attempt computed anyway. With tracing off nothing is allocated per attempt for spans and the
runtime is never handed a tracer; the explain store only groups statuses that already exist.
While the web view keeps recent attempts, an untraced attempt gets one small list in which the
runtime keeps the extension-point durations it measures for its metrics anyway.

Extension points reach the trace through :class:`AttemptTrace`, a CycleTracer the loop writes
into the attempt's CycleState: the binding task and the PostFilter task get the same CycleState,
so their spans join the attempt's trace explicitly, whatever task runs them.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

from observability.explain import ExplainStore, FilterDetails, ResolvedDetails
from observability.logs import V, pod_keys
from observability.recent_attempts import RecentAttempts
from observability.spans import PointAnnotation
from observability.tracing import (
    NOOP_TRACING,
    AnyPodSpan,
    AttemptSpan,
    GroupSpan,
    NoopGroupSpan,
    Tracing,
)
from scheduler.framework.interface import CycleState, FilterDetailsPlugin, NodeToStatus
from scheduler.framework.results import Diagnosis, NodePluginScores, ScheduleResult
from scheduler.framework.status import Status

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.api.workload import PodGroupView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.cycle.algorithm import AttemptDetails
    from scheduler.framework.runtime import RowScores
    from scheduler.queue.types import QueuedPodInfo

log = logging.getLogger("scheduler.cycle.scheduler")

#: Runtime point names whose plugin timings belong to a differently named span.
_SPAN_OF_POINT: Mapping[str, str] = {"ScoreExtensionNormalize": "NormalizeScore"}
#: Shown as the rejecting plugin for nodes a PreFilter result excluded without naming one.
PRE_FILTER = "PreFilter"

_total_score = attrgetter("total_score")


class AttemptTrace:
    """The CycleTracer of one sampled attempt: what the framework reports is appended, as it
    comes, to the attempt span's log (see observability.spans.AttemptLog); the export thread
    turns it into extension-point spans with a "plugin" event per plugin that ran. Nothing
    else happens on the scheduling loop."""

    __slots__ = ("_append", "sample_plugin_metrics", "span")

    def __init__(
        self,
        span: AttemptSpan,
        clock: Callable[[], float],
        sample_plugin_metrics: bool,
        trace_empty_points: bool = True,
    ) -> None:
        self.span = span
        self.sample_plugin_metrics = sample_plugin_metrics
        log = span.log
        log.keep_empty_points = trace_empty_points
        # Read back to back, so that mapped start times never fall after real end times.
        log.set_clock(clock(), time.time_ns())
        self._append = log.entries.append

    def on_plugin(
        self, point: str, plugin: str, status: Status, seconds: float, end: float
    ) -> None:
        self._append((_SPAN_OF_POINT.get(point, point), plugin, status, seconds, end))

    def on_extension_point(self, point: str, status: Status, start: float, end: float) -> None:
        self._append((point, None, status, start, end))

    def annotate(self, point: str, attributes: Mapping[str, object]) -> None:
        """A plugin's attributes for the span of `point` (CycleState.annotate_span)."""
        self._append(PointAnnotation(point, dict(attributes)))


# ---------------------------------------------------------------------------------- explain


class FilterVerdictView(Mapping[str, tuple[str, str]]):
    """node → (rejecting plugin, reasons), read straight off the attempt's NodeToStatus.

    ``absent_nodes`` are nodes the statuses do not list (a PreFilter rejected or excluded them):
    they get the ``absent`` status. No copy is made; the explain store groups while iterating.
    """

    __slots__ = ("_absent", "_absent_nodes", "_statuses")

    def __init__(self, node_to_status: NodeToStatus, absent_nodes: Sequence[str] = ()) -> None:
        self._statuses = node_to_status.statuses
        self._absent = node_to_status.absent
        self._absent_nodes = absent_nodes

    def __len__(self) -> int:
        return len(self._statuses) + len(self._absent_nodes)

    def __iter__(self) -> Iterator[str]:
        yield from self._statuses
        yield from self._absent_nodes

    def __getitem__(self, node: str) -> tuple[str, str]:
        status = self._statuses.get(node)
        if status is None:
            if node not in self._absent_nodes:
                raise KeyError(node)
            status = self._absent
        return _verdict(status)

    def items(self) -> Iterator[tuple[str, tuple[str, str]]]:  # type: ignore[override]
        for node, status in self._statuses.items():
            yield node, _verdict(status)
        if self._absent_nodes:
            absent = _verdict(self._absent)
            for node in self._absent_nodes:
                yield node, absent


def _verdict(status: Status) -> tuple[str, str]:
    return status.plugin or PRE_FILTER, status.message or status.code_name


def absent_node_names(diagnosis: Diagnosis, all_nodes: Callable[[], Sequence[str]]) -> list[str]:
    """Nodes a failed attempt rejected without a per-node status (PreFilter), if it says why."""
    node_to_status = diagnosis.node_to_status
    if not node_to_status.absent.reasons:
        return []
    statuses = node_to_status.statuses
    return [name for name in all_nodes() if name not in statuses]


def plugin_filter_details(
    plugins: Mapping[str, object], state: CycleState, pod: PodView, diagnosis: Diagnosis
) -> FilterDetails:
    """What the plugins that rejected nodes add to their verdicts (FilterDetailsPlugin), per
    node. Only plugins that rejected some node are asked, each for the nodes it rejected; a
    profile without such a plugin costs a set walk. Explain must never fail an attempt, so a
    plugin's exception is logged and its details left out."""
    askable = [
        name
        for name in diagnosis.unschedulable_plugins
        if isinstance(plugins.get(name), FilterDetailsPlugin)
    ]
    if not askable:
        return {}
    rejected: dict[str, list[str]] = {name: [] for name in askable}
    for node, status in diagnosis.node_to_status.statuses.items():
        nodes = rejected.get(status.plugin)
        if nodes is not None and status.is_rejected:
            nodes.append(node)
    details: dict[str, Sequence[Mapping[str, str]]] = {}
    for name, nodes in rejected.items():
        plugin = plugins[name]
        assert isinstance(plugin, FilterDetailsPlugin)
        if not nodes:
            continue
        try:
            details.update(plugin.filter_details(state, pod, nodes))
        except Exception:
            log.exception("filter details failed", extra={"plugin": name, "pod": pod.key})
    return details


TopScores = tuple[dict[str, dict[str, int]], dict[str, int]]


def top_row_scores(
    row_scores: RowScores, nodes: Sequence[NodeInfo], k: int, chosen_row: int | None = None
) -> TopScores:
    """:func:`top_node_scores` for the row path: reads only the ``k`` best rows of the arrays
    (``chosen_row``, the row selectHost picked, always among them)."""
    total = row_scores.total
    count = len(total)
    if count == 0 or k <= 0:
        return {}, {}
    if count > k:
        best_rows = np.argpartition(total, count - k)[count - k :].tolist()
    else:
        best_rows = list(range(count))
    if chosen_row is not None and chosen_row not in best_rows:
        best_rows[best_rows.index(min(best_rows, key=lambda row: total[row]))] = chosen_row
    picked = np.asarray(best_rows)
    names = [nodes[row].node_name for row in best_rows]
    columns = [
        (plugin, column[picked].tolist())
        for plugin, column in zip(row_scores.plugins, row_scores.weighted, strict=True)
    ]
    per_plugin = {
        name: {plugin: values[i] for plugin, values in columns} for i, name in enumerate(names)
    }
    totals = dict(zip(names, total[picked].tolist(), strict=True))
    return per_plugin, totals


def top_node_scores(
    scores: Sequence[NodePluginScores], k: int, chosen: str | None = None
) -> TopScores:
    """Per-plugin and total scores of the ``k`` best nodes (the chosen one always included)."""
    best = heapq.nlargest(k, scores, key=_total_score)
    if chosen is not None and best and all(entry.name != chosen for entry in best):
        picked = next((entry for entry in scores if entry.name == chosen), None)
        if picked is not None:
            best[-1] = picked
    per_plugin = {entry.name: {s.name: s.score for s in entry.scores} for entry in best}
    totals = {entry.name: entry.total_score for entry in best}
    return per_plugin, totals


class SuccessDetails:
    """A successful attempt's AttemptDetails, kept by reference and turned into verdicts and top
    scores only when explain asks (the store's LazyDetails). The arrays and lists referenced
    are the attempt's own, never reused by later cycles; the NodeInfos are the snapshot's,
    updated in place, of which only the (stable) node names are read."""

    __slots__ = ("_details", "_host")

    def __init__(self, details: AttemptDetails, host: str) -> None:
        self._details = details
        self._host = host

    def resolve(self, top_k: int) -> ResolvedDetails:
        return attempt_explanation_parts(self._details, top_k, self._host)


def attempt_explanation_parts(
    details: AttemptDetails, top_k: int, host: str | None, absent_nodes: Sequence[str] = ()
) -> ResolvedDetails:
    """Filter verdicts and the ``top_k`` best nodes' scores of an attempt's details."""
    per_plugin: dict[str, dict[str, int]] | None = None
    totals: dict[str, int] | None = None
    if details.row_scores is not None and details.scored_nodes is not None:
        per_plugin, totals = top_row_scores(
            details.row_scores, details.scored_nodes, top_k, details.chosen_row
        )
    elif details.scores:
        per_plugin, totals = top_node_scores(details.scores, top_k, host)
    diagnosis = details.diagnosis
    verdicts = (
        FilterVerdictView(diagnosis.node_to_status, absent_nodes) if diagnosis is not None else None
    )
    return verdicts, per_plugin, totals


# ------------------------------------------------------------------------------ the facade


class Instrumentation:
    """Spans, explain entries and log lines for the attempts of one scheduler."""

    def __init__(
        self,
        tracing: Tracing = NOOP_TRACING,
        explain: ExplainStore | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        explain_every_attempt: bool = False,
        trace_empty_points: bool = True,
        attempts: RecentAttempts | None = None,
    ) -> None:
        self.tracing = tracing
        # The last attempts for the web view (a deque append per attempt ended).
        self.attempts = attempts if attempts is not None else RecentAttempts(0)
        self.explain = explain if explain is not None else ExplainStore(max_pods=0)
        self.explain_every_attempt = explain_every_attempt
        self.trace_empty_points = trace_empty_points
        self._clock = clock  # the queue's clock: initial_attempt_timestamp is in its units
        self._pod_spans: dict[str, AnyPodSpan] = {}
        # Untraced attempts' extension-point timings (CycleState.point_seconds) by pod UID,
        # from begin_attempt until the attempt ends, when the web view keeps attempts.
        self._point_seconds: dict[str, list[str | float]] = {}

    @property
    def tracing_enabled(self) -> bool:
        return self.tracing.enabled

    # ---- attempt lifecycle ------------------------------------------------------------

    def begin_attempt(
        self,
        pinfo: QueuedPodInfo,
        profile: str,
        state: CycleState,
        framework_clock: Callable[[], float],
        group: GroupSpan | NoopGroupSpan | None = None,
    ) -> AttemptTrace | None:
        """Start the attempt's span (and the pod's, at its first enqueue) when tracing; under
        `group`, the span of the PodGroup cycle it runs in, when there is one.

        Returns the tracer written into ``state`` or None when this attempt is not traced.
        """
        pod = pinfo.pod
        if log.isEnabledFor(V(3)):
            log.log(V(3), "Attempting to schedule pod", extra=pod_keys(pod.key, profile))
        if not self.tracing.enabled:
            if self.attempts.enabled:
                self._keep_point_seconds(pod.uid, state)
            return None
        pod_span = self._pod_spans.get(pod.uid)
        if pod_span is None:
            pod_span = self.tracing.pod_span(
                pod.key, pod.uid, pod.namespace, pod.name, self._enqueued_ns(pinfo)
            )
            self._pod_spans[pod.uid] = pod_span
        attempt = self.tracing.attempt(pod_span, profile, pinfo.attempts, group=group)
        if not isinstance(attempt, AttemptSpan):
            if self.attempts.enabled:
                self._keep_point_seconds(pod.uid, state)
            return None  # the pod's trace is not sampled
        trace = AttemptTrace(
            attempt, framework_clock, state.record_plugin_metrics, self.trace_empty_points
        )
        state.tracer = trace
        state.record_plugin_metrics = True  # time every plugin; metrics still sampled
        return trace

    def _keep_point_seconds(self, uid: str, state: CycleState) -> None:
        """Have the runtime keep this untraced attempt's extension-point durations (those it
        measures for scheduler_framework_extension_point_duration_seconds anyway): one small
        list per attempt, two appends per extension point. A traced attempt's come from its
        span log instead."""
        kept: list[str | float] = []
        state.point_seconds = kept
        self._point_seconds[uid] = kept

    def begin_group(
        self, group: PodGroupView, profile: str, members: int
    ) -> GroupSpan | NoopGroupSpan | None:
        """The span of one PodGroup cycle (None when not tracing); its members' attempts
        are begun under it."""
        if not self.tracing.enabled:
            return None
        return self.tracing.group_span(group.namespace, group.name, profile, members)

    def end_group(
        self, span: GroupSpan | NoopGroupSpan | None, result: str, message: str, placed: int
    ) -> None:
        if span is not None:
            span.end(result, message, placed)

    def _enqueued_ns(self, pinfo: QueuedPodInfo) -> int | None:
        first_seen = pinfo.initial_attempt_timestamp
        if first_seen is None:
            return None
        return time.time_ns() - int(max(self._clock() - first_seen, 0.0) * 1e9)

    def scheduled(
        self,
        trace: AttemptTrace | None,
        pinfo: QueuedPodInfo,
        profile: str,
        result: ScheduleResult,
        details: AttemptDetails,
    ) -> None:
        """The scheduling cycle picked a node and passed Reserve and Permit.

        A pod that failed before (or every pod with ``explain_every_attempt``) gets its entry
        compressed at once, in the per-pod part of the store. A first-attempt success is only
        kept by reference in its profile's ring of recent successes and compressed if explain
        asks for it: compressing every success would cost the hot path ~15 % of an untraced
        cycle.
        """
        host = result.suggested_host
        if trace is not None:
            trace.span.set(
                node=host,
                evaluated_nodes=result.evaluated_nodes,
                feasible_nodes=result.feasible_nodes,
            )
        if self.explain.enabled and (pinfo.attempts > 1 or self.explain_every_attempt):
            pod = pinfo.pod
            verdicts, per_plugin, totals = attempt_explanation_parts(
                details, self.explain.top_k, host
            )
            self.explain.record(
                pod.uid,
                pod.namespace,
                pod.name,
                profile=profile,
                attempt=pinfo.attempts,
                result="scheduled",
                node=host,
                filter_verdicts=verdicts,
                scores=per_plugin,
                totals=totals,
                evaluated_nodes=result.evaluated_nodes,
                feasible_nodes=result.feasible_nodes,
            )
        elif self.explain.keeps_recent:
            pod = pinfo.pod
            self.explain.record_recent(
                pod.uid,
                pod.namespace,
                pod.name,
                profile=profile,
                attempt=pinfo.attempts,
                node=host,
                evaluated_nodes=result.evaluated_nodes,
                feasible_nodes=result.feasible_nodes,
                details=SuccessDetails(details, host),
            )

    def bound(
        self,
        trace: AttemptTrace | None,
        pinfo: QueuedPodInfo,
        profile: str,
        host: str,
        result: ScheduleResult | None = None,
    ) -> None:
        """The binding task bound the pod (PostBind ran): end the attempt and the pod span."""
        pod = pinfo.pod
        if log.isEnabledFor(V(2)):
            counts = (
                {"evaluatedNodes": result.evaluated_nodes, "feasibleNodes": result.feasible_nodes}
                if result is not None
                else {}
            )
            log.log(
                V(2),
                "Successfully bound pod to node",
                extra=pod_keys(pod.key, profile, node=host, **counts),
            )
        if trace is not None:
            trace.span.end("scheduled", node=host)
        self.attempts.record(
            pod.namespace, pod.name, profile=profile, attempt=pinfo.attempts,
            result="scheduled", detail=host, span=trace.span if trace is not None else None,
            point_seconds=self._point_seconds.pop(pod.uid, None),
        )  # fmt: skip
        if self.tracing.enabled:
            pod_span = self._pod_spans.pop(pod.uid, None)
            if pod_span is not None:
                pod_span.bound(host, pinfo.attempts)

    def failed(
        self,
        trace: AttemptTrace | None,
        pinfo: QueuedPodInfo,
        profile: str,
        status: Status,
        diagnosis: Diagnosis | None = None,
        all_nodes: Callable[[], Sequence[str]] = tuple,
        filter_details: Callable[[Diagnosis], FilterDetails] | None = None,
    ) -> None:
        """The attempt failed (rejected or errored) in the scheduling or the binding cycle.
        ``filter_details`` (plugin_filter_details bound to the attempt) is called only when
        explain keeps the attempt."""
        pod = pinfo.pod
        rejected = status.is_rejected
        result = "unschedulable" if rejected else "error"
        message = status.message or status.code_name
        if rejected:
            if log.isEnabledFor(V(2)):
                log.log(
                    V(2),
                    "Unable to schedule pod; no fit; waiting",
                    extra=pod_keys(pod.key, profile, err=message),
                )
        else:
            log.error(
                "Error scheduling pod; retrying", extra=pod_keys(pod.key, profile, err=message)
            )
        evaluated = feasible = None
        if diagnosis is not None:
            evaluated, feasible = len(diagnosis.node_to_status.statuses), 0
        if trace is not None:
            if evaluated is not None:
                trace.span.set(evaluated_nodes=evaluated, feasible_nodes=0)
            trace.span.end(result, message)
        self.attempts.record(
            pod.namespace, pod.name, profile=profile, attempt=pinfo.attempts,
            result=result, detail=message, span=trace.span if trace is not None else None,
            point_seconds=self._point_seconds.pop(pod.uid, None),
        )  # fmt: skip
        if self.explain.enabled:
            verdicts = None
            details = None
            if diagnosis is not None:
                absent = absent_node_names(diagnosis, all_nodes)
                verdicts = FilterVerdictView(diagnosis.node_to_status, absent)
                if filter_details is not None:
                    details = filter_details(diagnosis)
            self.explain.record(
                pod.uid,
                pod.namespace,
                pod.name,
                profile=profile,
                attempt=pinfo.attempts,
                result=result,
                message=message,
                filter_verdicts=verdicts,
                evaluated_nodes=evaluated,
                feasible_nodes=feasible,
                filter_details=details,
            )

    # ---- pod lifecycle ----------------------------------------------------------------

    def pod_gone(self, uid: str) -> None:
        """The pod was deleted: end its pod span and drop its explanation."""
        self.pod_left(uid, "deleted")

    def pod_left(self, uid: str, outcome: str) -> None:
        """The pod is no longer ours to schedule (deleted, bound by someone else, handed to
        another scheduler): end its pod span with `outcome`, forget its explanation."""
        if self.tracing.enabled:
            pod_span = self._pod_spans.pop(uid, None)
            if pod_span is not None:
                pod_span.end(outcome)
        self._point_seconds.pop(uid, None)
        self.explain.forget(uid)

    def open_pod_spans(self) -> int:
        return len(self._pod_spans)
