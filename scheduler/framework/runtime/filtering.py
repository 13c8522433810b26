"""PreFilter, Filter and PostFilter (upstream's RunPreFilterPlugins, RunFilterPlugins,
RunFilterPluginsWithNominatedPods, RunPostFilterPlugins), per node and over NodeTable rows:
the row pass is the one fast path, with the generic per-node adapter for plugins that have
no row method."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from scheduler.cache.rows import (
    RowFilterPlugin,
    Rows,
    RowVerdict,
    passes_all,
    verdict_per_node,
)
from scheduler.framework.filter_tally import FilterTally
from scheduler.framework.interface import (
    CycleState,
    NodeToStatus,
    NominatedPodsFilterPlugin,
    NominatedPodsVerdict,
    PostFilterResult,
    PreemptionHandle,
    PreFilterResult,
    extensions_of,
)
from scheduler.framework.runtime.core import (
    FrameworkCore,
    _error,
)
from scheduler.framework.status import Code, Status

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.cache.node_table import NodeTable


@dataclass(slots=True)
class RowRejections:
    """Rows one Filter plugin rejected in a row pass: `positions` index the rows passed in."""

    plugin: str
    positions: npt.NDArray[np.intp]
    verdict: RowVerdict


class _PostFilterRun:
    """One PostFilter run's bookkeeping, shared by the plain and the extender-aware runner:
    stop at the first Success / Unresolvable / Error, else combine the rejections."""

    __slots__ = ("_fwk", "_state", "reasons", "rejector", "result", "returned", "start")

    def __init__(self, fwk: FrameworkCore, state: CycleState) -> None:
        self._fwk = fwk
        self._state = state
        self.start = fwk.now()
        self.returned = Status.OK
        self.result: PostFilterResult | None = None
        self.reasons: list[str] = []
        self.rejector = ""

    def record(
        self, plugin: str, outcome: tuple[PostFilterResult | None, Status], plugin_start: float
    ) -> tuple[PostFilterResult | None, Status] | None:
        """The run's answer if this plugin's outcome ends it, else None."""
        plugin_result, status = outcome
        if self._state.record_plugin_metrics:
            self._fwk._plugin_done("PostFilter", plugin, status, plugin_start, self._state)
        if status.is_success:
            self.returned = status
            return plugin_result, status
        if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            self.returned = status.with_plugin(plugin)
            return plugin_result, self.returned
        if not status.is_rejected:
            self.returned = _error(status.message, plugin)
            return None, self.returned
        if plugin_result is not None:
            self.result = plugin_result
        self.reasons.extend(status.reasons)
        self.rejector = self.rejector or plugin
        return None

    def combined(self) -> tuple[PostFilterResult | None, Status]:
        self.returned = Status.unschedulable(*self.reasons, plugin=self.rejector)
        return self.result, self.returned


class Filtering(FrameworkCore):
    """PreFilter, Filter (per node, over NodeTable rows, with nominated pods) and PostFilter."""

    # ---- PreFilter / Filter -------------------------------------------------------------

    def run_pre_filter_plugins(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status, set[str]]:
        """(merged node subset or None for all, status, plugins that restricted the nodes).

        Skip puts the plugin in state.skip_filter_plugins. UnschedulableAndUnresolvable stops at
        once; Unschedulable is remembered while the others run (so preemption can use their
        state). A merged subset that is empty rejects the pod as upstream words it.
        """
        start = self._now()
        skip: set[str] = set()
        result: PreFilterResult | None = None
        plugins_with_nodes: list[str] = []
        returned = Status.OK
        try:
            for plugin in self.pre_filter_plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                plugin_result, status = plugin.pre_filter(state, pod, nodes)
                if state.record_plugin_metrics:
                    self._plugin_done("PreFilter", plugin.name, status, plugin_start, state)
                if status.is_skip:
                    skip.add(plugin.name)
                    continue
                self.observer.on_plugin_evaluated("PreFilter", plugin.name, 1)
                if not status.is_success:
                    status = status.with_plugin(plugin.name)
                    if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                        returned = status
                        return None, status, set()
                    if status.code == Code.UNSCHEDULABLE:
                        returned = status
                        continue
                    returned = _error(
                        f'running PreFilter plugin "{plugin.name}": {status.message}', plugin.name
                    )
                    return None, returned, set()
                if plugin_result is not None and not plugin_result.all_nodes():
                    plugins_with_nodes.append(plugin.name)
                result = plugin_result if result is None else result.merge(plugin_result)
                if result is not None and result.node_names is not None and not result.node_names:
                    if len(plugins_with_nodes) == 1:
                        message = f"node(s) didn't satisfy plugin {plugins_with_nodes[0]}"
                    else:
                        names = " ".join(plugins_with_nodes)
                        message = f"node(s) didn't satisfy plugin(s) [{names}] simultaneously"
                    returned = Status.unresolvable(message)
                    return result, returned, set(plugins_with_nodes)
            return result, returned, set(plugins_with_nodes)
        finally:
            state.skip_filter_plugins = skip
            self._point_done("PreFilter", returned, start, state)

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod: PodView, pod_to_add: PodView, node_info: NodeInfo
    ) -> Status:
        return self._run_pre_filter_extension("AddPod", state, pod, pod_to_add, node_info)

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod: PodView, pod_to_remove: PodView, node_info: NodeInfo
    ) -> Status:
        return self._run_pre_filter_extension("RemovePod", state, pod, pod_to_remove, node_info)

    def _run_pre_filter_extension(
        self, op: str, state: CycleState, pod: PodView, other: PodView, node_info: NodeInfo
    ) -> Status:
        for plugin in self.pre_filter_plugins:
            if plugin.name in state.skip_filter_plugins:
                continue
            extensions = extensions_of(plugin, "pre_filter_extensions")
            if extensions is None:
                continue
            plugin_start = self._now() if state.record_plugin_metrics else 0.0
            if op == "AddPod":
                status = extensions.add_pod(state, pod, other, node_info)
            else:
                status = extensions.remove_pod(state, pod, other, node_info)
            if state.record_plugin_metrics:
                self._plugin_done(
                    f"PreFilterExtension{op}", plugin.name, status, plugin_start, state
                )
            if not status.is_success:
                return _error(f'running {op} on PreFilter plugin "{plugin.name}": {status.message}')
        return Status.OK

    def run_filter_plugins(
        self,
        state: CycleState,
        pod: PodView,
        node_info: NodeInfo,
        tally: FilterTally | None = None,
    ) -> Status:
        """The first non-success Filter status, attributed to its plugin; non-rejections → Error.

        `tally`: the Filter pass this node belongs to (traced attempts), which times plugins."""
        skip = state.skip_filter_plugins
        record = state.record_plugin_metrics
        evaluated = self.observer.on_plugin_evaluated
        for plugin in self.filter_plugins:
            if plugin.name in skip:
                continue
            evaluated("Filter", plugin.name, 1)
            if record:
                plugin_start = self._now()
                status = plugin.filter(state, pod, node_info)
                self._filter_plugin_done(plugin.name, status, plugin_start, state, tally)
            else:
                status = plugin.filter(state, pod, node_info)
            if not status.is_success:
                return self._filter_failure(plugin.name, status)
        return Status.OK

    @staticmethod
    def _filter_failure(plugin: str, status: Status) -> Status:
        if not status.is_rejected:
            return _error(f'running "{plugin}" filter plugin: {status.message}', plugin)
        return status.with_plugin(plugin)

    # ---- Filter over NodeTable rows (the fast path) --------------------------------------

    def has_nominated_pods(self) -> bool:
        """Whether any pod is nominated anywhere (a nominator that can't tell: assume so)."""
        probe = getattr(self._deps.nominator, "has_nominated_pods", None)
        return True if probe is None else bool(probe())

    def can_list_nominated_nodes(self) -> bool:
        return hasattr(self._deps.nominator, "nominated_node_names")

    def nodes_needing_nominated_pass(self, pod: PodView) -> list[str] | None:
        """The nodes where filtering `pod` must consider pods nominated there (see
        needs_nominated_pods_pass); None when the nominator cannot list its nodes."""
        lister = getattr(self._deps.nominator, "nominated_node_names", None)
        if lister is None:
            return None
        names: list[str] = lister()
        return [name for name in names if self.needs_nominated_pods_pass(pod, name)]

    def per_node_filters(self, state: CycleState) -> list[str]:
        """The Filter plugins that run this cycle without a row method of their own: the row
        pass asks them per node, through the generic adapter (`verdict_per_node`)."""
        row_filter = self._capabilities.row_filter
        skip = state.skip_filter_plugins
        return [
            p.name for p in self.filter_plugins if p.name not in row_filter and p.name not in skip
        ]

    def run_filter_plugins_rows(
        self,
        state: CycleState,
        pod: PodView,
        table: NodeTable,
        rows: Rows,
        tally: FilterTally | None = None,
    ) -> tuple[npt.NDArray[np.intp], list[RowRejections]]:
        """Positions (into `rows`) that pass every Filter, and each plugin's rejections.

        As run_filter_plugins per node: plugins run in order and a row leaves at its first
        rejection. Statuses are left for the caller to build, except that a sampled plugin
        timing is labelled with the code of the plugin's first rejected row in the call
        (Success: none rejected).

        A plugin without `filter_rows` (an out-of-tree plugin, say), or declining it for this
        pod, goes through the generic per-node adapter: its `filter` on each candidate row's
        NodeInfo, the answers kept as a RowVerdict, so it is counted, timed, attributed and
        traced as any row method. A non-rejection it returns (an error) is not reported here:
        the caller then hands the cycle to the per-node path, which reports it in its words.
        """
        alive: npt.NDArray[np.intp] = np.arange(len(rows), dtype=np.intp)
        rejections: list[RowRejections] = []
        record = state.record_plugin_metrics
        skip = state.skip_filter_plugins
        row_filter = self._capabilities.row_filter
        narrowed = False  # until a row is rejected, the candidates are `rows` themselves
        for plugin in self.filter_plugins:
            if not len(alive):
                break
            if plugin.name in skip:
                continue
            plugin_start = self._now() if record else 0.0
            candidates = rows[alive] if narrowed else rows
            self.observer.on_plugin_evaluated("Filter", plugin.name, len(candidates))
            verdict = None
            if plugin.name in row_filter:
                verdict = cast(RowFilterPlugin, plugin).filter_rows(state, pod, table, candidates)
            if verdict is None:  # the generic per-node adapter
                verdict = verdict_per_node(plugin.filter, state, pod, table, candidates)
            passed = verdict.passed
            all_passed = passes_all(passed)
            if record:
                status = Status.OK
                if not all_passed:
                    status = verdict.reject(int(candidates[int(np.argmin(passed))]))
                self._filter_plugin_done(plugin.name, status, plugin_start, state, tally)
            if not all_passed:
                rejections.append(RowRejections(plugin.name, alive[~passed], verdict))
                alive = alive[passed]
                narrowed = True
        return alive, rejections

    def needs_nominated_pods_pass(self, pod: PodView, node_name: str) -> bool:
        """Whether filtering on this node must consider pods nominated to it."""
        return any(
            nominated.priority >= pod.priority and nominated.uid != pod.uid
            for nominated in self._deps.nominator.nominated_pods_for_node(node_name)
        )

    def nominated_pods_that_count(self, pod: PodView, node_name: str) -> list[PodView]:
        """The pods nominated to `node_name` that filtering `pod` must add: those of equal or
        higher priority, other than the pod itself."""
        return [
            other
            for other in self._deps.nominator.nominated_pods_for_node(node_name)
            if other.priority >= pod.priority and other.uid != pod.uid
        ]

    def nominated_pods_verdict(
        self, state: CycleState, pod: PodView
    ) -> NominatedPodsVerdict | None:
        """The one-step verdict on nodes with nominated pods that a Filter plugin offers for
        this attempt (NominatedPodsFilterPlugin), or None: filter those nodes with and without
        the pods (run_filter_plugins_with_nominated_pods)."""
        offering = self._capabilities.nominated_pods_filter
        skip = state.skip_filter_plugins
        handle = cast(PreemptionHandle, self)  # a part of Framework, which is the Handle
        for plugin in self.filter_plugins:
            if plugin.name in offering and plugin.name not in skip:
                verdict = cast(NominatedPodsFilterPlugin, plugin).nominated_pods_verdict(
                    handle, state, pod
                )
                if verdict is not None:
                    return verdict
        return None

    def run_filter_plugins_with_nominated_pods(
        self,
        state: CycleState,
        pod: PodView,
        node_info: NodeInfo,
        tally: FilterTally | None = None,
    ) -> Status:
        """Filters with equal-or-higher priority nominated pods added, then (if that passed and
        any were added) without them: the pod must fit both ways, as upstream decides."""
        status = Status.OK
        pods_added = False
        for attempt in range(2):
            state_to_use, info_to_use = state, node_info
            if attempt == 0:
                added = self._add_nominated_pods(state, pod, node_info)
                if isinstance(added, Status):
                    return added
                pods_added, state_to_use, info_to_use = added
            elif not pods_added or not status.is_success:
                break
            status = self.run_filter_plugins(state_to_use, pod, info_to_use, tally)
            if not status.is_success and not status.is_rejected:
                return status
        return status

    def _add_nominated_pods(
        self, state: CycleState, pod: PodView, node_info: NodeInfo
    ) -> tuple[bool, CycleState, NodeInfo] | Status:
        nominated = self.nominated_pods_that_count(pod, node_info.node_name)
        if not nominated:
            return False, state, node_info
        info_out = node_info.snapshot()
        state_out = state.clone()
        for other in nominated:
            info_out.add_pod(other)
            status = self.run_pre_filter_extension_add_pod(state_out, pod, other, info_out)
            if not status.is_success:
                return status
        return True, state_out, info_out

    async def run_post_filter_plugins(
        self,
        state: CycleState,
        pod: PodView,
        filtered: NodeToStatus,
        extenders: Sequence[Any] = (),
    ) -> tuple[PostFilterResult | None, Status]:
        """Until the first Success / Unresolvable / Error; otherwise the rejections combined.

        `extenders`: those supporting preemption that are interested in the pod; plugins
        offering `post_filter_with_extenders` (DefaultPreemption) are then awaited with them,
        as upstream's preemption calls its extenders. Without extenders nothing here suspends."""
        run = _PostFilterRun(self, state)
        try:
            for plugin in self.post_filter_plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                with_extenders = (
                    getattr(plugin, "post_filter_with_extenders", None) if extenders else None
                )
                # A plugin whose PostFilter writes to the API server as upstream's does inside
                # the cycle (DynamicResources' deallocation) offers a coroutine twin.
                awaited = getattr(plugin, "post_filter_async", None)
                if with_extenders is not None:
                    outcome = await with_extenders(state, pod, filtered, extenders)
                elif awaited is not None:
                    outcome = await awaited(state, pod, filtered)
                else:
                    outcome = plugin.post_filter(state, pod, filtered)
                done = run.record(plugin.name, outcome, plugin_start)
                if done is not None:
                    return done
            return run.combined()
        finally:
            self._point_done("PostFilter", run.returned, run.start, state)
