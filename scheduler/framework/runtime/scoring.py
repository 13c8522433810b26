"""PreScore, Score and NormalizeScore (upstream's RunPreScorePlugins, RunScorePlugins), per
node and over NodeTable rows, with the generic per-node adapter for plugins without row
methods; and the split upstream made for opportunistic batching's re-scoring
(RunRawScorePlugins on one node, NormalizeScores over kept raw scores)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from scheduler.cache.rows import (
    RowNormalizePlugin,
    Rows,
    RowScorePlugin,
)
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    CycleState,
    NodeScore,
    ScoreExtensions,
    ScorePlugin,
    extensions_of,
)
from scheduler.framework.results import NodePluginScores, PluginScore
from scheduler.framework.runtime.core import (
    FrameworkCore,
    _error,
)
from scheduler.framework.status import Status

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cache.node_info import NodeInfo
    from scheduler.cache.node_table import IntArray, NodeTable


@dataclass(slots=True)
class RowScores:
    """Weighted scores of the rows passed to `run_score_plugins_rows`, per plugin and total."""

    plugins: list[str]
    weighted: list[IntArray]
    total: IntArray

    def node_plugin_scores(self, names: Sequence[str]) -> list[NodePluginScores]:
        """The per-node form prioritize_nodes returns (`names` of the rows, in order)."""
        columns = [
            (plugin, column.tolist())
            for plugin, column in zip(self.plugins, self.weighted, strict=True)
        ]
        return [
            NodePluginScores(name, [PluginScore(p, column[i]) for p, column in columns], total)
            for i, (name, total) in enumerate(zip(names, self.total.tolist(), strict=True))
        ]


_largest = np.maximum.reduce
_INT64 = np.dtype(np.int64)


def _first_invalid_score(values: IntArray) -> int | None:
    """The first score outside [MIN_NODE_SCORE, MAX_NODE_SCORE], None if every one is in.

    Read every cycle for every plugin: for int64 scores one reduction over their unsigned view
    answers (MIN_NODE_SCORE is 0, so a negative score reads as at least 2**63 there)."""
    if not len(values):
        return None
    unsigned_view_answers = MIN_NODE_SCORE == 0 and values.dtype == _INT64
    if unsigned_view_answers and _largest(values.view(np.uint64)) <= MAX_NODE_SCORE:
        return None
    invalid = np.flatnonzero((values > MAX_NODE_SCORE) | (values < MIN_NODE_SCORE))
    return int(values[invalid[0]]) if len(invalid) else None


# Score failures in upstream's words; the per-node and the row paths must say the same.
def _score_failed(plugin: str, status: Status) -> Status:
    return _error(f'running Score plugins: plugin "{plugin}" failed with: {status.message}')


def _normalize_failed(plugin: str, status: Status) -> Status:
    return _error(
        f'running Normalize on Score plugins: plugin "{plugin}" failed with: {status.message}'
    )


def _invalid_score(plugin: str, score: int) -> Status:
    return _error(
        "applying score defaultWeights on Score plugins: "
        f'plugin "{plugin}" returns an invalid score {score}, it should '
        f"in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
    )


class Scoring(FrameworkCore):
    """PreScore, Score and NormalizeScore, per node and over NodeTable rows."""

    # ---- Score --------------------------------------------------------------------------

    def run_pre_score_plugins(
        self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
    ) -> Status:
        start = self._now()
        skip: set[str] = set()
        returned = Status.OK
        try:
            for plugin in self.pre_score_plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                status = plugin.pre_score(state, pod, nodes)
                if state.record_plugin_metrics:
                    self._plugin_done("PreScore", plugin.name, status, plugin_start, state)
                if status.is_skip:
                    skip.add(plugin.name)
                    continue
                self.observer.on_plugin_evaluated("PreScore", plugin.name, 1)
                if not status.is_success:
                    returned = _error(f'running PreScore plugin "{plugin.name}": {status.message}')
                    return returned
            return returned
        finally:
            state.skip_score_plugins = skip
            self._point_done("PreScore", returned, start, state)

    def run_score_plugins(
        self,
        state: CycleState,
        pod: PodView,
        nodes: Sequence[NodeInfo],
        raw_out: list[IntArray] | None = None,
    ) -> tuple[list[NodePluginScores], Status]:
        """Per-node weighted plugin scores and totals; scores outside [0, 100] after
        normalizing are an error, as upstream. `raw_out`, when given, receives each plugin's
        scores before NormalizeScore (upstream's RawScores, kept for the batch's re-scoring)."""
        start = self._now()
        returned = Status.OK
        try:
            plugins = [p for p in self.score_plugins if p.name not in state.skip_score_plugins]
            per_plugin: list[list[NodeScore]] = []
            for plugin in plugins:
                scores, status = self._score_one_plugin(state, pod, plugin, nodes)
                if not status.is_success:
                    returned = _score_failed(plugin.name, status)
                    return [], returned
                per_plugin.append(scores)
            if raw_out is not None:
                raw_out.extend(
                    np.fromiter((s.score for s in scores), dtype=np.int64, count=len(scores))
                    for scores in per_plugin
                )
            status = self._normalize_scores(state, pod, plugins, per_plugin)
            if not status.is_success:
                returned = status
                return [], returned
            results = [NodePluginScores(info.node_name) for info in nodes]
            for plugin, scores in zip(plugins, per_plugin, strict=True):
                weight = self.score_weights.get(plugin.name, 1)
                for node_scores, node_score in zip(results, scores, strict=True):
                    score = node_score.score
                    if score > MAX_NODE_SCORE or score < MIN_NODE_SCORE:
                        returned = _invalid_score(plugin.name, score)
                        return [], returned
                    weighted = score * weight
                    node_scores.scores.append(PluginScore(plugin.name, weighted))
                    node_scores.total_score += weighted
            return results, returned
        finally:
            self._point_done("Score", returned, start, state)

    def _normalize_scores(
        self,
        state: CycleState,
        pod: PodView,
        plugins: Sequence[ScorePlugin],
        per_plugin: Sequence[list[NodeScore]],
    ) -> Status:
        """Score extensions' NormalizeScore over NodeScores, in place."""
        return self._normalize_each(
            state,
            plugins,
            lambda index, plugin, extensions: extensions.normalize_score(
                state, pod, per_plugin[index]
            ),
        )

    def _normalize_each(
        self,
        state: CycleState,
        plugins: Sequence[ScorePlugin],
        normalize: Callable[[int, ScorePlugin, ScoreExtensions], Status],
    ) -> Status:
        """The NormalizeScore frame both score paths share: ``normalize(index, plugin,
        extensions)`` for each plugin with score extensions, timed per plugin, stopping at the
        first failure; a separate span (as upstream's) when traced."""
        tracer = self.cycle_tracer(state) if self._trace_cycles else None
        start = self._now() if tracer is not None else 0.0
        returned = Status.OK
        for index, plugin in enumerate(plugins):
            extensions = extensions_of(plugin, "score_extensions")
            if extensions is None:
                continue
            plugin_start = self._now() if state.record_plugin_metrics else 0.0
            status = normalize(index, plugin, extensions)
            if state.record_plugin_metrics:
                self._plugin_done(
                    "ScoreExtensionNormalize", plugin.name, status, plugin_start, state
                )
            if not status.is_success:
                returned = _normalize_failed(plugin.name, status)
                break
        if tracer is not None:
            tracer.on_extension_point("NormalizeScore", returned, start, self._now())
        return returned

    def _score_one_plugin(
        self, state: CycleState, pod: PodView, plugin: ScorePlugin, nodes: Sequence[NodeInfo]
    ) -> tuple[list[NodeScore], Status]:
        record = state.record_plugin_metrics
        plugin_start = self._now() if record else 0.0
        status = Status.OK
        scores: list[NodeScore] = []
        for info in nodes:
            value, status = plugin.score(state, pod, info)
            if not status.is_success:
                break
            scores.append(NodeScore(info.node_name, value))
        ran = len(scores) + (0 if status.is_success else 1)
        self.observer.on_plugin_evaluated("Score", plugin.name, ran)
        if record:
            self._plugin_done("Score", plugin.name, status, plugin_start, state)
        if not status.is_success:
            return [], status
        return scores, Status.OK

    # ---- Score over NodeTable rows (the fast path) ---------------------------------------

    def run_score_plugins_rows(
        self,
        state: CycleState,
        pod: PodView,
        table: NodeTable,
        rows: Rows,
        raw_out: list[IntArray] | None = None,
    ) -> tuple[RowScores | None, Status]:
        """run_score_plugins over table rows: the same scores, errors and messages (and the
        same `raw_out`).

        A plugin without `score_rows` (or declining it for this pod) goes through the generic
        per-node adapter: `score` on each row's NodeInfo, as run_score_plugins calls it (the
        same evaluation counts, timings and error messages), and NormalizeScore over
        NodeScores when it has no `normalize_rows` (`_normalize_rows`)."""
        start = self._now()
        returned = Status.OK
        try:
            plugins = [p for p in self.score_plugins if p.name not in state.skip_score_plugins]
            infos: list[NodeInfo] | None = None
            per_plugin: list[IntArray] = []
            for plugin in plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                values = None
                if plugin.name in self._capabilities.row_score:
                    values = cast(RowScorePlugin, plugin).score_rows(state, pod, table, rows)
                    if values is not None:
                        self.observer.on_plugin_evaluated("Score", plugin.name, len(rows))
                if values is None:  # the generic per-node adapter
                    if infos is None:
                        infos = [table.infos[row] for row in rows.tolist()]
                    scores, status = self._score_one_plugin(state, pod, plugin, infos)
                    if not status.is_success:
                        returned = _score_failed(plugin.name, status)
                        return None, returned
                    values = np.fromiter(
                        (s.score for s in scores), dtype=np.int64, count=len(scores)
                    )
                elif state.record_plugin_metrics:
                    self._plugin_done("Score", plugin.name, Status.OK, plugin_start, state)
                per_plugin.append(values)
            if raw_out is not None:  # copies: a row normaliser may work in place
                raw_out.extend(values.copy() for values in per_plugin)
            status = self._normalize_rows(state, pod, table, rows, plugins, per_plugin)
            if not status.is_success:
                returned = status
                return None, returned
            total = np.zeros(len(rows), dtype=np.int64)
            weighted: list[IntArray] = []
            for plugin, values in zip(plugins, per_plugin, strict=True):
                score = _first_invalid_score(values)
                if score is not None:
                    returned = _invalid_score(plugin.name, score)
                    return None, returned
                column = values * self.score_weights.get(plugin.name, 1)
                weighted.append(column)
                total += column
            return RowScores([p.name for p in plugins], weighted, total), returned
        finally:
            self._point_done("Score", returned, start, state)

    def _normalize_rows(
        self,
        state: CycleState,
        pod: PodView,
        table: NodeTable,
        rows: Rows,
        plugins: Sequence[ScorePlugin],
        per_plugin: list[IntArray],
    ) -> Status:
        """NormalizeScore in place of `per_plugin`; plugins without a row path get NodeScores."""

        def normalize(index: int, plugin: ScorePlugin, extensions: ScoreExtensions) -> Status:
            if plugin.name in self._capabilities.row_normalize:
                per_plugin[index] = cast(RowNormalizePlugin, plugin).normalize_rows(
                    state, pod, per_plugin[index]
                )
                return Status.OK
            names = [table.names[row] for row in rows.tolist()]
            scores = [
                NodeScore(name, value)
                for name, value in zip(names, per_plugin[index].tolist(), strict=True)
            ]
            status = extensions.normalize_score(state, pod, scores)
            per_plugin[index] = np.fromiter(
                (s.score for s in scores), dtype=np.int64, count=len(scores)
            )
            return status

        return self._normalize_each(state, plugins, normalize)

    # ---- Re-scoring one node for opportunistic batching ----------------------------------

    def run_raw_score_plugins(
        self, state: CycleState, pod: PodView, node_info: NodeInfo
    ) -> tuple[list[str], list[int], Status]:
        """The Score plugins not skipped at PreScore and their scores of one node, before
        NormalizeScore (upstream's RunRawScorePlugins, which the batch uses to re-score the
        node the previous pod went to)."""
        start = self._now()
        returned = Status.OK
        names: list[str] = []
        values: list[int] = []
        try:
            for plugin in self.score_plugins:
                if plugin.name in state.skip_score_plugins:
                    continue
                scores, status = self._score_one_plugin(state, pod, plugin, (node_info,))
                if not status.is_success:
                    returned = _score_failed(plugin.name, status)
                    return names, [], returned
                names.append(plugin.name)
                values.append(scores[0].score)
            return names, values, returned
        finally:
            self._point_done("Score", returned, start, state)

    def normalize_scores(
        self,
        state: CycleState,
        pod: PodView,
        plugins: Sequence[str],
        raw: list[IntArray],
        count: int,
        names: Callable[[], Sequence[str]],
    ) -> tuple[IntArray | None, Status]:
        """Weighted totals of candidates from their raw scores (`raw`: one column per plugin
        of `plugins`, normalised in place; `count` candidates), as run_score_plugins_rows
        computes them (upstream's NormalizeScores). `names` gives the candidates' node names,
        asked only for a plugin that normalises NodeScores. Every candidate scores 1 without
        Score plugins (prioritize_nodes), 0 when PreScore skipped them all."""
        if not plugins:
            fill = 0 if self.score_plugins else 1
            return np.full(count, fill, dtype=np.int64), Status.OK
        by_name = {plugin.name: plugin for plugin in self.score_plugins}
        chosen = [by_name[name] for name in plugins]
        listed: list[Sequence[str]] = []

        def normalize(index: int, plugin: ScorePlugin, extensions: ScoreExtensions) -> Status:
            if plugin.name in self._capabilities.row_normalize:
                raw[index] = cast(RowNormalizePlugin, plugin).normalize_rows(state, pod, raw[index])
                return Status.OK
            if not listed:
                listed.append(names())
            scores = [
                NodeScore(name, value)
                for name, value in zip(listed[0], raw[index].tolist(), strict=True)
            ]
            status = extensions.normalize_score(state, pod, scores)
            raw[index] = np.fromiter((s.score for s in scores), dtype=np.int64, count=count)
            return status

        status = self._normalize_each(state, chosen, normalize)
        if not status.is_success:
            return None, status
        total = np.zeros(count, dtype=np.int64)
        for plugin, values in zip(chosen, raw, strict=True):
            score = _first_invalid_score(values)
            if score is not None:
                return None, _invalid_score(plugin.name, score)
            total += values * self.score_weights.get(plugin.name, 1)
        return total, Status.OK
