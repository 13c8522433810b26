"""A failed attempt's Filter span says why, on an embedded cluster (issue 15): its status is
the attempt's (Unschedulable, with the FitError text), and each plugin's event says how many
nodes that plugin rejected. Every way the scheduler filters a whole cluster is covered: the
NodeTable row pass (the default profile), the row pass with a Filter plugin that has no row
method (asked per row by the framework's adapter), and the per-node scan (no table)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from prometheus_client.parser import text_string_to_metric_families
from tracing_harness import TracedHarness, traced_scheduler

from scheduler.cycle import algorithm
from scheduler.cycle.scheduler import Scheduler
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Status


class AcceptAll:
    """A Filter plugin without a row method: the row pass asks it node by node."""

    name = "AcceptAll"

    def filter(self, state: object, pod: object, node_info: object) -> Status:
        return Status.OK


def with_accept_all(scheduler: Scheduler) -> None:
    scheduler.profiles["default-scheduler"].framework.filter_plugins.insert(0, AcceptAll())


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def plugin_events(span: ReadableSpan) -> dict[str, tuple[str, int]]:
    return {
        str(e.attributes["aiosched.plugin"]): (
            str(e.attributes["aiosched.status"]),
            int(e.attributes["aiosched.nodes_rejected"]),  # type: ignore[arg-type]
        )
        for e in span.events
        if e.name == "plugin" and e.attributes is not None
    }


def filter_span(h: TracedHarness, attempt: ReadableSpan) -> ReadableSpan:
    (span,) = [c for c in h.children(attempt) if c.name == "Filter"]
    return span


def metric(h: TracedHarness, sample_name: str, **labels: str) -> float:
    text = h.scheduler.metrics.exposition().decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == sample_name and labels.items() <= sample.labels.items()
    )


@pytest.mark.parametrize("path", ["rows", "adapter", "per-node"])
async def test_filter_span_of_a_rejected_and_a_fitting_pod(
    tmp_path: Path, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = {"rows": 0, "per-node": 0}
    if path == "per-node":  # as when the snapshot has no exact table
        monkeypatch.setattr(algorithm, "row_table_for", lambda *args: None)
    for name, method in (
        ("rows", "run_filter_plugins_rows"),
        ("per-node", "run_filter_plugins"),
    ):
        original = getattr(Framework, method)

        def counted(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            calls[_name] += 1
            return _original(*args, **kw)

        monkeypatch.setattr(Framework, method, counted)

    configure = with_accept_all if path != "rows" else None
    async with traced_scheduler(tmp_path, configure=configure) as h:
        for i in range(4):
            await h.api.create_node(f"n{i}", cpu="1")
        await h.wait_nodes_cached(4)

        await h.api.create_pod("huge", cpu="2")
        (failed,) = await h.wait_for(lambda: h.attempts("huge"), what="failed attempt")
        span = filter_span(h, failed)
        assert attrs(span)["aiosched.status"] == "Unschedulable"
        assert span.status.status_code == StatusCode.ERROR
        assert span.status.description == "0/4 nodes are available: 4 Insufficient cpu."
        assert attrs(span)["aiosched.evaluated_nodes"] == 4
        assert attrs(span)["aiosched.feasible_nodes"] == 0
        events = plugin_events(span)
        assert events.pop("NodeResourcesFit") == ("UnschedulableAndUnresolvable", 4)  # 2 cpu > 1
        assert events and set(events.values()) == {("Success", 0)}
        assert ("AcceptAll" in events) == (path != "rows")

        await h.api.create_pod("small", cpu="500m")
        await h.wait_bound("small")
        (bound,) = await h.wait_for(lambda: h.attempts("small"), what="bound attempt")
        span = filter_span(h, bound)
        assert attrs(span)["aiosched.status"] == "Success"
        assert span.status.status_code == StatusCode.UNSET
        assert attrs(span)["aiosched.evaluated_nodes"] == 4
        assert attrs(span)["aiosched.feasible_nodes"] == 4
        assert set(plugin_events(span).values()) == {("Success", 0)}

        # The metrics say the same: one Filter pass failed; every node met NodeResourcesFit.
        point = "scheduler_framework_extension_point_duration_seconds_count"
        assert metric(h, point, extension_point="Filter", status="Unschedulable") >= 1
        assert metric(h, point, extension_point="Filter", status="Success") >= 1
        evaluations = metric(
            h,
            "scheduler_plugin_evaluation_total",
            extension_point="Filter",
            plugin="NodeResourcesFit",
            profile="default-scheduler",
        )
        assert evaluations >= 8  # 4 nodes for each pod
    if path == "per-node":
        assert calls["per-node"] > 0
        assert calls["rows"] == 0
    else:
        assert calls["rows"] > 0
