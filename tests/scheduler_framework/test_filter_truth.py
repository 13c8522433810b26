"""Filter spans and framework metrics say what the plugins returned (issue 15).

Each case runs the same cluster through the three ways Filter is run: the NodeTable row pass
(a real `Snapshot`), the per-node scan (a plain snapshot: each node is filtered alone) and the
nominated pass (pods nominated on every node: each node is filtered with them, then without
them when that passed).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from prometheus_client.parser import text_string_to_metric_families

from observability.metrics import SchedulerMetrics
from observability.tracing import AttemptSpan, tracing_with_processor
from scheduler.cache.cache import Cache
from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.algorithm import StartIndex, schedule_pod
from scheduler.cycle.instrumentation import AttemptTrace
from scheduler.cycle.scheduler import MetricsObserver
from scheduler.framework.interface import CycleState, SnapshotLister
from scheduler.framework.results import FitError
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.framework.status import Status
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.tainttoleration import TaintToleration
from scheduler.testing import (
    ListSnapshot,
    RecordingClient,
    StaticNominator,
    make_node,
    make_node_info,
    make_pod,
)

PROFILE = "default-scheduler"
PATHS = ("rows", "per-node", "nominated")


@dataclass(frozen=True)
class Case:
    name: str
    cpus: Sequence[str]
    unschedulable: Sequence[bool]
    pod_cpu: str
    # the Filter span: status code, span status message, evaluated and feasible nodes
    status: str
    message: str
    evaluated: int
    feasible: int
    # plugin -> (status code of its event, nodes it rejected)
    plugins: dict[str, tuple[str, int]]


CASES = [
    Case(
        "no node has the cpu",
        ["1", "1", "1", "1"],
        [False] * 4,
        "2",
        "Unschedulable",
        "0/4 nodes are available: 4 Insufficient cpu.",
        4,
        0,
        {
            "NodeUnschedulable": ("Success", 0),
            "TaintToleration": ("Success", 0),
            "NodeResourcesFit": ("UnschedulableAndUnresolvable", 4),
        },
    ),
    Case(
        "two plugins reject one node each",
        ["4", "1", "4", "4"],
        [True, False, False, False],
        "2",
        "Success",
        "",
        4,
        2,
        {
            "NodeUnschedulable": ("UnschedulableAndUnresolvable", 1),
            "TaintToleration": ("Success", 0),
            "NodeResourcesFit": ("UnschedulableAndUnresolvable", 1),
        },
    ),
    Case(
        "every node fits",
        ["4", "4", "4", "4"],
        [False] * 4,
        "1",
        "Success",
        "",
        4,
        4,
        {
            "NodeUnschedulable": ("Success", 0),
            "TaintToleration": ("Success", 0),
            "NodeResourcesFit": ("Success", 0),
        },
    ),
    Case(
        "one node rejected as unschedulable, the rest lack cpu",
        ["1", "1", "1", "4"],
        [False, False, False, True],
        "2",
        "Unschedulable",
        "0/4 nodes are available: 1 node(s) were unschedulable, 3 Insufficient cpu.",
        4,
        0,
        {
            "NodeUnschedulable": ("UnschedulableAndUnresolvable", 1),
            "TaintToleration": ("Success", 0),
            "NodeResourcesFit": ("UnschedulableAndUnresolvable", 3),
        },
    ),
]


def nodes(case: Case) -> list[Any]:
    return [
        make_node(f"node{i}", {"cpu": cpu, "memory": "1Gi", "pods": "10"}, unschedulable=flag)
        for i, (cpu, flag) in enumerate(zip(case.cpus, case.unschedulable, strict=True))
    ]


def snapshot_for(path: str, case: Case) -> SnapshotLister:
    if path == "rows":
        cache = Cache()
        for node in nodes(case):
            cache.add_node(node)
        return cache.update_snapshot(Snapshot())
    return ListSnapshot([make_node_info(node) for node in nodes(case)])


def nominator_for(path: str, case: Case) -> StaticNominator | None:
    """Nominated pass: a pod that asks for nothing, nominated on every node at a higher
    priority, makes every node go through Filter alone (the answer does not change)."""
    if path != "nominated":
        return None
    nominated = make_pod(name="nominated", uid="nominated", priority=1000, containers=[{}])
    return StaticNominator({f"node{i}": [nominated] for i in range(len(case.cpus))})


def framework(
    snapshot: SnapshotLister,
    metrics: SchedulerMetrics,
    *,
    traced: bool,
    nominator: StaticNominator | None = None,
    extra: dict[str, list[tuple[Any, int]]] | None = None,
) -> Framework:
    fit = NodeResourcesFit(None)
    plugins: dict[str, list[tuple[Any, int]]] = {
        "preFilter": [(fit, 0)],
        "filter": [(NodeUnschedulable(), 0), (TaintToleration(), 0), (fit, 0)],
        "preScore": [(fit, 0)],
        "score": [(fit, 1)],
        **(extra or {}),
    }
    deps = HandleDeps(
        snapshot=lambda: snapshot,
        client=RecordingClient(),
        observer=MetricsObserver(PROFILE, metrics),
        trace_cycles=traced,
    )
    if nominator is not None:
        deps.nominator = nominator
    return Framework(PROFILE, plugins, deps)


async def run(fwk: Framework, state: CycleState, snapshot: SnapshotLister, pod_cpu: str) -> None:
    with contextlib.suppress(FitError):  # the cases where no node fits
        await schedule_pod(
            fwk,
            state,
            make_pod(name="incoming", uid="incoming", containers=[{"cpu": pod_cpu}]),
            snapshot,
            percentage_of_nodes_to_score=None,
            next_start_index=StartIndex(),
            rng=random.Random(1),
        )


@dataclass
class Traced:
    exporter: InMemorySpanExporter
    attempt: AttemptSpan

    def filter_spans(self) -> list[ReadableSpan]:
        self.attempt.end("unschedulable")
        return [s for s in self.exporter.get_finished_spans() if s.name == "Filter"]


@pytest.fixture
def traced_state() -> Iterator[tuple[CycleState, Traced]]:
    exporter = InMemorySpanExporter()
    tracing = tracing_with_processor(SimpleSpanProcessor(exporter))
    pod_span = tracing.pod_span("default/incoming", "incoming", "default", "incoming")
    attempt = tracing.attempt(pod_span, PROFILE, 1)
    assert isinstance(attempt, AttemptSpan)
    state = CycleState()
    state.record_plugin_metrics = True
    # the metrics sample: plugin durations also go to the histograms
    state.tracer = AttemptTrace(attempt, lambda: 0.0, sample_plugin_metrics=True)
    yield state, Traced(exporter, attempt)
    tracing.shutdown()


def plugin_events(span: ReadableSpan) -> dict[str, tuple[str, int]]:
    out = {}
    for event in span.events:
        attributes = dict(event.attributes or {})
        if event.name == "plugin":
            out[str(attributes["aiosched.plugin"])] = (
                str(attributes["aiosched.status"]),
                int(attributes["aiosched.nodes_rejected"]),  # type: ignore[arg-type]
            )
    return out


def samples(metrics: SchedulerMetrics, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Sample values of `name` (a sample name, e.g. ``..._count``) by sorted label pairs."""
    text = metrics.exposition().decode()
    return {
        tuple(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    }


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
async def test_filter_span_reports_each_plugins_rejections(
    path: str, case: Case, traced_state: tuple[CycleState, Traced]
) -> None:
    state, traced = traced_state
    snapshot = snapshot_for(path, case)
    fwk = framework(snapshot, SchedulerMetrics(), traced=True, nominator=nominator_for(path, case))
    await run(fwk, state, snapshot, case.pod_cpu)

    (span,) = traced.filter_spans()
    attributes = dict(span.attributes or {})
    assert attributes["aiosched.status"] == case.status
    assert attributes["aiosched.evaluated_nodes"] == case.evaluated
    assert attributes["aiosched.feasible_nodes"] == case.feasible
    if case.status == "Success":
        assert span.status.status_code == StatusCode.UNSET
    else:
        assert span.status.status_code == StatusCode.ERROR
        assert span.status.description == case.message
    assert plugin_events(span) == case.plugins
    # a plugin event per plugin, in the order they ran
    assert [e.attributes["aiosched.plugin"] for e in span.events if e.attributes] == list(
        case.plugins
    )


def label_set(**labels: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("traced", [False, True], ids=["sampled", "traced"])
async def test_filter_metrics_carry_the_status_plugins_returned(
    path: str, traced: bool, traced_state: tuple[CycleState, Traced]
) -> None:
    case = CASES[0]  # NodeResourcesFit rejects all 4 nodes
    metrics = SchedulerMetrics()
    snapshot = snapshot_for(path, case)
    fwk = framework(snapshot, metrics, traced=traced, nominator=nominator_for(path, case))
    if traced:
        state = traced_state[0]
    else:
        state = CycleState()
        state.record_plugin_metrics = True  # this cycle is in upstream's 10 % sample
    await run(fwk, state, snapshot, case.pod_cpu)

    plugin_counts = samples(metrics, "scheduler_plugin_execution_duration_seconds_count")
    fit_filter = {
        labels: count
        for labels, count in plugin_counts.items()
        if ("plugin", "NodeResourcesFit") in labels and ("extension_point", "Filter") in labels
    }
    assert fit_filter, plugin_counts
    # 2 cpu on nodes of 1: over their allocatable (fit.go's Unresolvable).
    assert {dict(labels)["status"] for labels in fit_filter} == {"UnschedulableAndUnresolvable"}
    assert (
        plugin_counts[
            label_set(extension_point="Filter", plugin="NodeUnschedulable", status="Success")
        ]
        >= 1
    )

    point_counts = samples(metrics, "scheduler_framework_extension_point_duration_seconds_count")
    filter_points = {
        dict(labels)["status"]: count
        for labels, count in point_counts.items()
        if ("extension_point", "Filter") in labels
    }
    assert filter_points == {"Unschedulable": 1}

    # Every node went through every Filter plugin (none rejected before NodeResourcesFit).
    evaluations = samples(metrics, "scheduler_plugin_evaluation_total")
    for plugin in ("NodeUnschedulable", "TaintToleration", "NodeResourcesFit"):
        # With nominated pods every node fails, so none is filtered again without them
        # (upstream's RunFilterPluginsWithNominatedPods counts one RunFilterPlugins per pass).
        nodes_evaluated = 4
        key = label_set(extension_point="Filter", plugin=plugin, profile=PROFILE)
        assert evaluations[key] == nodes_evaluated, plugin
    assert (
        evaluations[
            label_set(extension_point="PreFilter", plugin="NodeResourcesFit", profile=PROFILE)
        ]
        == 1
    )


async def test_unsampled_untraced_cycle_still_counts_evaluations_only() -> None:
    case = CASES[1]
    metrics = SchedulerMetrics()
    snapshot = snapshot_for("rows", case)
    fwk = framework(snapshot, metrics, traced=False)
    await run(fwk, CycleState(), snapshot, case.pod_cpu)

    assert samples(metrics, "scheduler_plugin_execution_duration_seconds_count") == {}
    evaluations = samples(metrics, "scheduler_plugin_evaluation_total")
    by_plugin = {
        dict(labels)["plugin"]: count
        for labels, count in evaluations.items()
        if ("extension_point", "Filter") in labels
    }
    # node0 leaves at NodeUnschedulable, so the later plugins see 3 nodes.
    assert by_plugin == {"NodeUnschedulable": 4, "TaintToleration": 3, "NodeResourcesFit": 3}
    scores = {
        (dict(labels)["extension_point"], dict(labels)["plugin"]): count
        for labels, count in evaluations.items()
        if dict(labels)["extension_point"] in ("PreScore", "Score")
    }
    assert scores == {("PreScore", "NodeResourcesFit"): 1, ("Score", "NodeResourcesFit"): 2}


class FailingScore:
    name = "FailingScore"

    def score(self, state: CycleState, pod: object, node_info: object) -> tuple[int, Status]:
        return 0, Status.error("out of order")

    def score_extensions(self) -> None:
        return None


async def test_failed_score_plugin_is_timed_with_its_error() -> None:
    case = CASES[2]
    metrics = SchedulerMetrics()
    snapshot = snapshot_for("per-node", case)
    fwk = framework(snapshot, metrics, traced=False, extra={"score": [(FailingScore(), 1)]})
    state = CycleState()
    state.record_plugin_metrics = True
    with pytest.raises(Exception, match="out of order"):
        await run(fwk, state, snapshot, case.pod_cpu)

    plugin_counts = samples(metrics, "scheduler_plugin_execution_duration_seconds_count")
    assert (
        plugin_counts[label_set(extension_point="Score", plugin="FailingScore", status="Error")]
        == 1
    )
    evaluations = samples(metrics, "scheduler_plugin_evaluation_total")
    assert (
        evaluations[label_set(extension_point="Score", plugin="FailingScore", profile=PROFILE)] == 1
    )


class HoldAtPermit:
    name = "HoldAtPermit"

    def permit(self, state: object, pod: object, node_name: str) -> tuple[Status, float]:
        return Status.wait(plugin=self.name), 30.0


@pytest.mark.parametrize(
    ("release", "result"),
    [("allow", "Success"), ("reject", "Unschedulable")],
)
async def test_permit_wait_is_observed_with_how_it_ended(release: str, result: str) -> None:
    metrics = SchedulerMetrics()
    snapshot = snapshot_for("per-node", CASES[2])
    fwk = framework(snapshot, metrics, traced=False, extra={"permit": [(HoldAtPermit(), 0)]})
    pod = make_pod(name="held", uid="held", containers=[{"cpu": "1"}])
    assert fwk.run_permit_plugins(CycleState(), pod, "node0").is_wait
    waiting = fwk.get_waiting_pod("held")
    assert waiting is not None
    if release == "allow":
        waiting.allow("HoldAtPermit")
    else:
        waiting.reject("HoldAtPermit", "not today")
    await fwk.wait_on_permit(pod)

    waits = samples(metrics, "scheduler_permit_wait_duration_seconds_count")
    assert waits == {label_set(result=result): 1}


async def test_no_permit_wait_is_observed_when_nothing_waited() -> None:
    metrics = SchedulerMetrics()
    fwk = framework(snapshot_for("per-node", CASES[2]), metrics, traced=False)
    await fwk.wait_on_permit(make_pod(name="free", uid="free"))
    assert samples(metrics, "scheduler_permit_wait_duration_seconds_count") == {}
