"""`aiosched run` exporting traces to an OTLP/HTTP receiver started here; metrics; explain."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from otlp_receiver import OtlpReceiver, ReceivedSpan
from processes import (
    Kubectl,
    aiosched,
    http_get,
    node_manifest,
    pod_manifest,
    start_cluster,
    start_scheduler,
    started,
    wait_nodes_cached,
    wait_until,
)
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""
SCHEDULING_POINTS = {"PreFilter", "Filter", "PreScore", "Score", "NormalizeScore", "Reserve"}
BINDING_POINTS = {"WaitOnPermit", "PreBind", "Bind", "PostBind"}
STATUS_OK, STATUS_ERROR = 1, 2
HUGE_MESSAGE = (
    # Reasons sorted as strings, as upstream's sort.Strings does.
    "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    " no new claims to deallocate,"
    # More cpu than any node has: no preemption can help anywhere (fit.go's Unresolvable).
    " preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)


def tainted_node_manifest(name: str, cpu: str) -> str:
    return node_manifest(name, cpu).replace(
        "\nstatus:",
        "\nspec:\n  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]\nstatus:",
    )


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    started = OtlpReceiver().start()
    try:
        yield started
    finally:
        started.stop()


def pod_spans(spans: list[ReceivedSpan], pod: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.attributes.get("k8s.pod.name") == pod]


def find(spans: list[ReceivedSpan], name: str, pod: str) -> list[ReceivedSpan]:
    return [s for s in pod_spans(spans, pod) if s.name == name]


def children(spans: list[ReceivedSpan], parent: ReceivedSpan) -> dict[str, ReceivedSpan]:
    return {s.name: s for s in spans if s.parent_span_id == parent.span_id}


def explain(scheduler_url: str, pod: str, *extra: str) -> subprocess.CompletedProcess[str]:
    address = scheduler_url.removeprefix("http://")
    return subprocess.run(
        [*aiosched(), "explain", pod, "--http-address", address, "--insecure-http", *extra],
        capture_output=True,
        text=True,
        timeout=30,
    )


def metric_samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_traces_metrics_and_explain_of_a_running_scheduler(
    tmp_path: Path, receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "aiosched-e2e")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    kubectl = Kubectl(tmp_path)
    with started(partial(start_cluster, tmp_path), partial(start_scheduler, tmp_path, CONFIG)) as (
        _,
        scheduler,
    ):
        kubectl.apply(
            node_manifest("n1", "2") + node_manifest("n2", "2") + tainted_node_manifest("gpu", "32")
        )
        # Both pods' first attempts must evaluate all three nodes.
        wait_nodes_cached(scheduler.url, 3)
        kubectl.apply(pod_manifest("web", "500m") + pod_manifest("huge", "8"))
        node = wait_until(
            lambda: kubectl.json("pod", "web")["spec"].get("nodeName"), what="web bound"
        )
        assert node in ("n1", "n2")
        web_uid = kubectl.json("pod", "web")["metadata"]["uid"]

        # --- the scheduled pod: one trace, pod span → attempt → every extension point
        spans = receiver.wait_for(
            lambda s: find(s, "PodScheduling", "web") and s, what="web's pod span"
        )
        (pod_span,) = find(spans, "PodScheduling", "web")
        assert pod_span.parent_span_id == "" and pod_span.service == "aiosched-e2e"
        assert pod_span.attributes["k8s.namespace.name"] == "default"
        assert pod_span.attributes["k8s.pod.uid"] == web_uid
        assert pod_span.attributes["k8s.node.name"] == node
        assert pod_span.attributes["aiosched.outcome"] == "bound"
        (attempt,) = find(spans, "SchedulingAttempt", "web")
        assert attempt.parent_span_id == pod_span.span_id
        assert attempt.trace_id == pod_span.trace_id
        assert attempt.status_code == STATUS_OK
        assert attempt.links == [] and pod_span.links == []
        assert {
            k: attempt.attributes[k]
            for k in ("aiosched.profile", "aiosched.attempt", "k8s.node.name", "aiosched.result")
        } == {
            "aiosched.profile": "default-scheduler",
            "aiosched.attempt": 1,
            "k8s.node.name": node,
            "aiosched.result": "scheduled",
        }
        assert attempt.attributes["aiosched.evaluated_nodes"] == 3
        assert attempt.attributes["aiosched.feasible_nodes"] == 2
        points = children(spans, attempt)
        assert points.keys() >= SCHEDULING_POINTS | {"Permit"} | BINDING_POINTS
        assert "Unreserve" not in points
        assert all(p.trace_id == attempt.trace_id for p in points.values())
        # Per-plugin timings and statuses: a "plugin" event per plugin that ran.
        filter_plugins = {
            attributes["aiosched.plugin"]: attributes
            for name, attributes in points["Filter"].events
            if name == "plugin"
        }
        # TaintToleration rejected the tainted node; NodeResourcesFit rejected none.
        for plugin, status, rejected in (
            ("TaintToleration", "UnschedulableAndUnresolvable", 1),
            ("NodeResourcesFit", "Success", 0),
        ):
            assert filter_plugins[plugin]["aiosched.status"] == status
            assert filter_plugins[plugin]["aiosched.nodes_rejected"] == rejected
            assert filter_plugins[plugin]["aiosched.duration_ms"] >= 0
        assert pod_span.start_ns <= attempt.start_ns <= attempt.end_ns <= pod_span.end_ns

        # --- the unschedulable pod: its finished attempt is exported while it stays pending
        spans = receiver.wait_for(
            lambda s: find(s, "SchedulingAttempt", "huge") and s, what="huge's attempt"
        )
        (first, *_) = sorted(
            find(spans, "SchedulingAttempt", "huge"), key=lambda s: s.attributes["aiosched.attempt"]
        )
        assert first.status_code == STATUS_ERROR
        assert first.attributes["aiosched.result"] == "unschedulable"
        assert first.attributes["aiosched.failure_message"] == HUGE_MESSAGE
        assert first.attributes["aiosched.feasible_nodes"] == 0
        failed_points = children(spans, first)
        assert {"PreFilter", "Filter"} <= failed_points.keys()
        assert not failed_points.keys() & (SCHEDULING_POINTS - {"PreFilter", "Filter"})
        assert not find(spans, "PodScheduling", "huge")
        # A complete trace of its own: a backend lists it while the pod is pending.
        assert first.parent_span_id == ""
        assert all(p.trace_id == first.trace_id for p in failed_points.values())

        # --- explain: which plugin rejected each node and why
        result = explain(scheduler.url, "default/huge")
        assert result.returncode == 0, result.stderr
        out = result.stdout
        assert "Result:   unschedulable" in out
        assert HUGE_MESSAGE in out
        rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
        assert "node(s) had untolerated taint(s)" in rows["TaintToleration"]
        assert rows["TaintToleration"].rstrip().endswith("gpu")
        assert "Insufficient cpu" in rows["NodeResourcesFit"]
        assert rows["NodeResourcesFit"].rstrip().endswith("n1, n2")
        as_json = explain(scheduler.url, "default/huge", "-o", "json")
        assert as_json.returncode == 0, as_json.stderr
        # Scheduled at its first attempt: explained too (issue 15: explain works for bound pods).
        bound = explain(scheduler.url, "default/web")
        assert bound.returncode == 0, bound.stderr
        assert f"Result:   scheduled on node {node}" in bound.stdout
        missing = explain(scheduler.url, "default/nope")
        assert missing.returncode == 1

        # --- metrics, parsed with prometheus-client's parser
        status, text = http_get(f"{scheduler.url}/metrics")
        assert status == 200
        samples = metric_samples(text)
        attempts = "scheduler_schedule_attempts_total"
        profile = ("profile", "default-scheduler")
        assert samples[(attempts, (profile, ("result", "scheduled")))] >= 1
        assert samples[(attempts, (profile, ("result", "unschedulable")))] >= 1
        points_seen = {
            dict(labels).get("extension_point")
            for (name, labels) in samples
            if name == "scheduler_framework_extension_point_duration_seconds_count"
        }
        assert {"PreFilter", "Filter", "Reserve", "Permit", "Bind"} <= points_seen

        # --- room appears: huge is scheduled; its pod span ends, the bound attempt under it
        kubectl.apply(node_manifest("big-1", "16") + node_manifest("big-2", "16"))
        huge_node = wait_until(
            lambda: kubectl.json("pod", "huge")["spec"].get("nodeName"), what="huge bound"
        )
        spans = receiver.wait_for(
            lambda s: find(s, "PodScheduling", "huge") and s, what="huge's pod span"
        )
        (huge_span,) = find(spans, "PodScheduling", "huge")
        assert huge_span.attributes["aiosched.outcome"] == "bound"
        assert huge_span.attributes["k8s.node.name"] == huge_node
        huge_attempts = find(spans, "SchedulingAttempt", "huge")
        assert huge_span.attributes["aiosched.attempts"] == len(huge_attempts) >= 2
        *failed, last = sorted(huge_attempts, key=lambda a: a.attributes["aiosched.attempt"])
        assert last.attributes["aiosched.result"] == "scheduled"
        assert last.parent_span_id == huge_span.span_id and last.trace_id == huge_span.trace_id
        # The failed attempts: roots of their own traces, linked both ways with the pod span.
        pod_link = (huge_span.trace_id, huge_span.span_id, {})
        assert all(a.parent_span_id == "" and a.links == [pod_link] for a in failed)
        assert huge_span.links == [
            (a.trace_id, a.span_id, {"aiosched.attempt": a.attributes["aiosched.attempt"]})
            for a in failed
        ]
        # Scored when both big nodes were in by then (kubectl creates them one by one).
        scored = "Score" in children(spans, last)
        assert all(s.start_ns <= s.end_ns for s in spans if s.trace_id == huge_span.trace_id), (
            "a span ends before it starts"
        )

        # explain now tells where it went, with the top nodes' per-plugin scores
        result = explain(scheduler.url, "default/huge")
        assert result.returncode == 0, result.stderr
        assert f"Result:   scheduled on node {huge_node}" in result.stdout
        if scored:
            assert "Top nodes by score:" in result.stdout
            assert "big-1" in result.stdout and "big-2" in result.stdout
