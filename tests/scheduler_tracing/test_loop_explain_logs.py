"""Explain entries and per-profile log lines written by the scheduling loop."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from tracing_harness import traced_scheduler

from observability.explain import ExplainStore, render_text
from observability.logs import V
from observability.tracing import tracing_with_processor
from scheduler.cycle.instrumentation import (
    FilterVerdictView,
    Instrumentation,
    top_node_scores,
)
from scheduler.framework.interface import CycleState, NodeToStatus
from scheduler.framework.results import NodePluginScores, PluginScore
from scheduler.framework.status import Status

GPU_TAINT = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
HOLD_TAINT = [{"key": "hold", "value": "true", "effect": "NoSchedule"}]
HOLD_TOLERATION = {"key": "hold", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
TWO_PROFILES = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: packer
"""


def verdicts(explanation: dict[str, Any]) -> dict[tuple[str, str], list[str]]:
    return {(g["plugin"], g["reason"]): g["nodes"] for g in explanation["filterVerdicts"]}


async def test_explain_names_the_plugin_that_rejected_each_node(tmp_path: Path) -> None:
    async with traced_scheduler(tmp_path, tracing_enabled=False) as h:
        await h.api.create_node("tainted-1", cpu="8", taints=GPU_TAINT)
        await h.api.create_node("tainted-2", cpu="8", taints=GPU_TAINT)
        await h.api.create_node("small", cpu="1")
        await h.wait_nodes_cached(3)  # the explained (first) attempt must see all three
        created = await h.api.create_pod("huge", cpu="2")
        explanation = await h.wait_for(lambda: h.explain.get("default", "huge"), what="explain")

        assert explanation["pod"]["uid"] == created["metadata"]["uid"]
        assert explanation["result"] == "unschedulable"
        assert explanation["profile"] == "default-scheduler"
        assert explanation["message"] == (
            "0/3 nodes are available: 1 Insufficient cpu, "
            "2 node(s) had untolerated taint(s). "
            "no new claims to deallocate, "
            # 2 cpu is more than small's 1: no preemption there can help either.
            "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        )
        assert (explanation["evaluatedNodes"], explanation["feasibleNodes"]) == (3, 0)
        assert verdicts(explanation) == {
            ("TaintToleration", "node(s) had untolerated taint(s)"): [
                "tainted-1",
                "tainted-2",
            ],
            ("NodeResourcesFit", "Insufficient cpu"): ["small"],
        }
        text = render_text(explanation)
        assert "TaintToleration" in text and "tainted-1, tainted-2" in text

        status, _ = await h.api.request("DELETE", "/api/v1/namespaces/default/pods/huge")
        assert status == 200
        await h.wait_for(lambda: h.explain.get("default", "huge") is None, what="forgotten")


async def test_explain_of_a_pod_scheduled_after_failing_shows_top_scores(
    tmp_path: Path,
) -> None:
    async with traced_scheduler(tmp_path, tracing_enabled=False) as h:
        await h.api.create_node("tainted", cpu="8", taints=GPU_TAINT)
        await h.wait_nodes_cached(1)  # so that TaintToleration alone rejects the first attempt
        await h.api.create_pod("web", cpu="1")
        await h.wait_for(lambda: h.explain.get("default", "web"), what="failed attempt")
        # Nodes arriving one by one would retry the pod on the first of them. These come with
        # a taint the pod does not tolerate (TaintToleration's hint: no help), so the pod waits
        # until the scheduler has all three; then one event, the pod tolerating that taint,
        # lets a single attempt see all four nodes.
        for name in ("a", "b", "c"):
            await h.api.create_node(name, cpu="4", taints=HOLD_TAINT)
        await h.wait_nodes_cached(4)
        pod = await h.api.get_pod("web")
        pod["spec"]["tolerations"] = [*pod["spec"].get("tolerations", []), HOLD_TOLERATION]
        status, body = await h.api.request("PUT", "/api/v1/namespaces/default/pods/web", pod)
        assert status == 200, body
        node = await h.wait_bound("web")
        explanation = h.explain.get("default", "web")
        assert explanation is not None
        assert (explanation["result"], explanation["node"]) == ("scheduled", node)
        assert explanation["attempt"] >= 2
        assert (explanation["evaluatedNodes"], explanation["feasibleNodes"]) == (4, 3)
        assert set(verdicts(explanation)) == {
            ("TaintToleration", "node(s) had untolerated taint(s)")
        }
        top = explanation["topNodes"]
        assert {t["node"] for t in top} == {"a", "b", "c"}
        assert top[0]["total"] == max(t["total"] for t in top)
        assert node in {t["node"] for t in top if t["total"] == top[0]["total"]}
        assert all(sum(t["plugins"].values()) == t["total"] for t in top)
        assert "NodeResourcesFit" in top[0]["plugins"]


@pytest.mark.parametrize(
    ("every_attempt", "recent", "recorded"),
    # Kept by default (lazily, in the profile's ring of recent successes); a ring of 0 keeps
    # them only with --explain-every-attempt (eagerly, per pod).
    [(False, 100, True), (False, 0, False), (True, 0, True)],
)
async def test_first_attempt_successes_are_explained(
    tmp_path: Path, every_attempt: bool, recent: int, recorded: bool
) -> None:
    def configure(scheduler: Any) -> None:
        scheduler.instrumentation.explain_every_attempt = every_attempt

    store = ExplainStore(recent_per_profile=recent)
    async with traced_scheduler(
        tmp_path, tracing_enabled=False, configure=configure, explain=store
    ) as h:
        await h.api.create_node("a", cpu="4")
        await h.api.create_node("b", cpu="4")
        await h.wait_nodes_cached(2)
        await h.api.create_pod("web", cpu="1")
        node = await h.wait_bound("web")
        explanation = h.explain.get("default", "web")
        assert (explanation is not None) is recorded
        if explanation is not None:
            assert (explanation["result"], explanation["node"]) == ("scheduled", node)
            assert len(explanation["topNodes"]) == 2


async def test_explain_store_switched_off_records_nothing(tmp_path: Path) -> None:
    store = ExplainStore(max_pods=0, recent_per_profile=0)
    async with traced_scheduler(tmp_path, tracing_enabled=False, explain=store) as h:
        await h.api.create_node("a", cpu="4")
        await h.api.create_pod("web", cpu="1")
        await h.wait_bound("web")
        assert (len(store), store.recent_count(), store.get("default", "web")) == (0, 0, None)


async def test_log_lines_carry_pod_and_profile(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(V(2), logger="scheduler")
    async with traced_scheduler(tmp_path, tracing_enabled=False, config_text=TWO_PROFILES) as h:
        await h.api.create_node("a", cpu="2")
        await h.wait_nodes_cached(1)  # huge's first failure must be "Insufficient cpu"
        await h.api.create_pod("web", cpu="1", scheduler_name="packer")
        await h.api.create_pod("huge", cpu="8")
        await h.wait_bound("web")
        await h.wait_for(lambda: h.explain.get("default", "huge"), what="failed attempt")

    def lines(message: str) -> list[dict[str, Any]]:
        return [
            {k: getattr(r, k, None) for k in ("pod", "profile", "node", "err", "levelno")}
            for r in caplog.records
            if r.getMessage() == message
        ]

    assert lines("Successfully bound pod to node") == [
        {"pod": "default/web", "profile": "packer", "node": "a", "err": None, "levelno": V(2)}
    ]
    (failed, *_) = lines("Unable to schedule pod; no fit; waiting")
    assert failed == {
        "pod": "default/huge",
        "profile": "default-scheduler",
        "node": None,
        "err": "0/1 nodes are available: 1 Insufficient cpu. "
        "no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        "levelno": V(2),
    }


# ------------------------------------------------------------------------------------ units


@pytest.mark.parametrize(
    ("statuses", "absent", "absent_nodes", "expected"),
    [
        ({}, Status.unresolvable(), [], {}),
        (
            {"n1": Status.unschedulable("Insufficient cpu", plugin="NodeResourcesFit")},
            Status.unresolvable(),
            [],
            {"n1": ("NodeResourcesFit", "Insufficient cpu")},
        ),
        (
            {"n1": Status.unresolvable("a", "b", plugin="P")},
            Status.unresolvable("node(s) didn't satisfy plugin(s) [NodeAffinity]"),
            ["n2", "n3"],
            {
                "n1": ("P", "a, b"),
                "n2": ("PreFilter", "node(s) didn't satisfy plugin(s) [NodeAffinity]"),
                "n3": ("PreFilter", "node(s) didn't satisfy plugin(s) [NodeAffinity]"),
            },
        ),
    ],
)
def test_filter_verdict_view_reads_node_to_status(
    statuses: dict[str, Status],
    absent: Status,
    absent_nodes: list[str],
    expected: dict[str, tuple[str, str]],
) -> None:
    view = FilterVerdictView(NodeToStatus(statuses, absent), absent_nodes)
    assert dict(view.items()) == expected
    assert len(view) == len(expected)
    assert {node: view[node] for node in view} == expected


def _scored(name: str, *scores: tuple[str, int]) -> NodePluginScores:
    return NodePluginScores(name, [PluginScore(p, s) for p, s in scores], sum(s for _, s in scores))


@pytest.mark.parametrize(
    ("k", "chosen", "expected_nodes"),
    [
        (2, None, {"n3", "n2"}),
        (2, "n1", {"n3", "n1"}),  # the chosen node is always shown
        (5, None, {"n1", "n2", "n3"}),
    ],
)
def test_top_node_scores_keeps_the_best_and_the_chosen(
    k: int, chosen: str | None, expected_nodes: set[str]
) -> None:
    scores = [
        _scored("n1", ("A", 10), ("B", 0)),
        _scored("n2", ("A", 20), ("B", 30)),
        _scored("n3", ("A", 90), ("B", 10)),
    ]
    per_plugin, totals = top_node_scores(scores, k, chosen)
    assert set(per_plugin) == expected_nodes == set(totals)
    assert per_plugin.get("n3", {"A": 90, "B": 10}) == {"A": 90, "B": 10}
    assert all(totals[n] == sum(per_plugin[n].values()) for n in totals)


def test_tracing_off_puts_no_tracer_in_the_cycle_state() -> None:
    from scheduler.queue.types import QueuedPodInfo

    pinfo = QueuedPodInfo(pod=_pod(), timestamp=0.0, attempts=1)
    state = CycleState()
    assert (
        Instrumentation().begin_attempt(pinfo, "default-scheduler", state, time.perf_counter)
        is None
    )
    assert state.tracer is None
    assert state.record_plugin_metrics is False


def test_traced_attempt_times_every_plugin_but_samples_metrics() -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from scheduler.queue.types import QueuedPodInfo

    tracing = tracing_with_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    instrumentation = Instrumentation(tracing)
    for sampled in (False, True):
        state = CycleState()
        state.record_plugin_metrics = sampled
        pinfo = QueuedPodInfo(pod=_pod(), timestamp=0.0, attempts=1)
        trace = instrumentation.begin_attempt(pinfo, "default-scheduler", state, time.perf_counter)
        assert trace is not None and state.tracer is trace
        assert state.record_plugin_metrics is True
        assert trace.sample_plugin_metrics is sampled
    tracing.shutdown()


def _pod() -> Any:
    from scheduler.api.objects import PodView

    return PodView.from_dict(
        {
            "metadata": {"name": "p", "namespace": "default", "uid": "u1"},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
    )


class _Named:
    def __init__(self, node_name: str) -> None:
        self.node_name = node_name


@pytest.mark.parametrize(
    ("k", "chosen", "expected_nodes"),
    [
        # totals: n1 10, n2 50, n3 100, n4 100; rows 0..3
        (3, None, {"n2", "n3", "n4"}),
        (1, 3, {"n4"}),  # of tied best nodes, the one chosen is the one shown
        (1, 2, {"n3"}),
        (9, None, {"n1", "n2", "n3", "n4"}),
    ],
)
def test_top_row_scores_reads_only_the_best_rows(
    k: int, chosen: int | None, expected_nodes: set[str]
) -> None:
    import numpy as np

    from scheduler.cycle.instrumentation import top_row_scores
    from scheduler.framework.runtime import RowScores

    weighted = [np.array([10, 20, 90, 80]), np.array([0, 30, 10, 20])]
    rows = RowScores(["A", "B"], weighted, weighted[0] + weighted[1])
    nodes: Any = [_Named(f"n{i}") for i in range(1, 5)]
    per_plugin, totals = top_row_scores(rows, nodes, k, chosen)
    assert set(per_plugin) == expected_nodes == set(totals)
    assert all(totals[n] == sum(per_plugin[n].values()) for n in totals)
    if "n3" in per_plugin:
        assert per_plugin["n3"] == {"A": 90, "B": 10}
