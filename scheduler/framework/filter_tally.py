"""What one traced Filter pass did, per plugin, recorded as one span when the pass ends.

The row path runs each Filter plugin over many nodes per call, and the per-node path calls
each plugin once per node, so a per-call "plugin" event could only say how long one call
took. The tally sums each plugin's calls and takes, from what the algorithm reports anyway,
how many nodes the plugin rejected and with which status code; the Filter span then carries a
"plugin" event per plugin with ``aiosched.nodes_rejected``, and ``aiosched.evaluated_nodes`` /
``aiosched.feasible_nodes``.

Only traced attempts get a tally: untraced ones count nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler.framework.results import Diagnosis, fit_error_message
from scheduler.framework.status import Code, Status, code_name

if TYPE_CHECKING:
    from observability.tracing import AttemptSpan

FILTER = "Filter"

# The status of a Filter pass that found no node, for metrics (only the code is read).
_NO_NODE_FITS = Status.unschedulable()


def no_node_fits(num_all_nodes: int, diagnosis: Diagnosis, with_message: bool) -> Status:
    """The status of a Filter pass that found no feasible node: Unschedulable, as upstream
    reports the attempt (a FitError), with the FitError's text when it will be read (a traced
    attempt); building the text counts every rejected node's reasons."""
    if not with_message:
        return _NO_NODE_FITS
    return Status.unschedulable(fit_error_message(num_all_nodes, diagnosis))


@dataclass(slots=True)
class PluginTally:
    """One Filter plugin over the whole pass: summed seconds, end of its last call (framework
    clock), nodes it rejected and the code of its last rejection (Success: none)."""

    seconds: float = 0.0
    end: float = 0.0
    rejected: int = 0
    code: Code = Code.SUCCESS

    @property
    def status(self) -> Status:
        return Status.OK if self.code == Code.SUCCESS else Status(self.code)


class FilterTally:
    """Per-plugin outcomes of one Filter pass of a traced attempt, in the order plugins ran.

    ``tracer`` is the attempt's CycleTracer; ``sample_plugin_metrics`` whether the plugin
    duration metrics are also recorded for this attempt (upstream samples them)."""

    __slots__ = ("plugins", "sample_plugin_metrics", "tracer")

    def __init__(self, tracer: Any) -> None:
        self.tracer = tracer
        self.sample_plugin_metrics: bool = tracer.sample_plugin_metrics
        self.plugins: dict[str, PluginTally] = {}

    def _of(self, plugin: str) -> PluginTally:
        tally = self.plugins.get(plugin)
        if tally is None:
            tally = self.plugins[plugin] = PluginTally()
        return tally

    def timed(self, plugin: str, seconds: float, end: float) -> None:
        tally = self._of(plugin)
        tally.seconds += seconds
        tally.end = end

    def rejected(self, plugin: str, count: int, code: Code) -> None:
        """`count` more nodes rejected by `plugin`, the last of them with `code`."""
        if count:
            tally = self._of(plugin)
            tally.rejected += count
            tally.code = code

    def rejected_statuses(self, statuses: Iterable[Status]) -> None:
        """Count rejections given as statuses attributed to their plugins (per-node paths)."""
        for status in statuses:
            self.rejected(status.plugin, 1, status.code)

    @property
    def rejected_total(self) -> int:
        return sum(tally.rejected for tally in self.plugins.values())

    def record(self, status: Status, start: float, end: float, feasible: int) -> None:
        """The Filter span: `status` of the pass, per-plugin events with their rejections,
        evaluated and feasible node counts. A tracer that does not expose its attempt span
        (a test's recorder) gets the plugins' statuses and the point as log entries."""
        tracer = self.tracer
        span: AttemptSpan | None = getattr(tracer, "span", None)
        if span is None:
            for plugin, tally in self.plugins.items():
                tracer.on_plugin(FILTER, plugin, tally.status, tally.seconds, tally.end)
            tracer.on_extension_point(FILTER, status, start, end)
            return
        with span.extension_point(FILTER, span.log.wall_ns(start)) as point:
            point.status(status.code_name, status.message)
            point.set(evaluated_nodes=feasible + self.rejected_total, feasible_nodes=feasible)
            for plugin, tally in self.plugins.items():
                point.plugin(plugin, code_name(tally.code), tally.seconds, rejected=tally.rejected)
