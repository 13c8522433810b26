"""A pending pod's attempts in a real OTLP backend (Arize Phoenix), while it is still pending.

Run alone with ``pytest -m otlp_backend``. Needs ``.venv-otlp-backend`` (``python3 dev.py test``
installs it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from otlp_backend import PHOENIX, Phoenix, start_phoenix
from processes import (
    Kubectl,
    node_manifest,
    pod_manifest,
    start_cluster,
    start_scheduler,
    started,
    wait_nodes_cached,
    wait_until,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.otlp_backend,
    pytest.mark.skipif(
        not PHOENIX.exists(), reason=f"no {PHOENIX}: `python3 dev.py test` installs it"
    ),
]

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
"""
BLOCKED_MESSAGE = (
    "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, "
    "preemption: 0/1 nodes are available: "
    "1 Preemption is not helpful for scheduling."  # 2 cpu on a 1-cpu node: Unresolvable
)


@pytest.fixture
def phoenix(tmp_path: Path) -> Iterator[Phoenix]:
    backend = start_phoenix(tmp_path)
    try:
        yield backend
    finally:
        backend.stop()


def roots(phoenix: Phoenix, name: str, pod: str) -> list[dict[str, Any]]:
    """What the backend's trace list shows for the pod: root spans carrying its name."""
    return phoenix.spans(parent_id="null", name=name, attribute=f"k8s.pod.name:{pod}")


def by_name(spans: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {span["name"]: span for span in spans}


def test_pending_pods_attempts_are_traces_in_phoenix_before_it_is_bound(
    tmp_path: Path, phoenix: Phoenix, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.otlp_endpoint)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    # The cluster and the scheduler start while Phoenix does (it takes ~10 s).
    kubectl = Kubectl(tmp_path)
    with started(partial(start_cluster, tmp_path), partial(start_scheduler, tmp_path, CONFIG)) as (
        _,
        scheduler,
    ):
        # The start-up line says where traces go.
        log = scheduler.log.read_text()
        line = next(line for line in log.splitlines() if "Tracing is on" in line)
        assert f'endpoint="{phoenix.otlp_endpoint}/v1/traces"' in line
        assert 'protocol="http/protobuf"' in line and 'sampler="parentbased_always_on"' in line
        kubectl.apply(node_manifest("small", "1"))
        wait_nodes_cached(scheduler.url, 1)
        phoenix.wait_healthy()
        kubectl.apply(pod_manifest("blocked", "2"))

        # --- still pending: the failed attempt is a trace of its own, listed by the backend
        (attempt, *_) = wait_until(
            lambda: roots(phoenix, "SchedulingAttempt", "blocked"),
            timeout=20,
            what="blocked's failed attempt as a root span in Phoenix",
        )
        pod = kubectl.json("pod", "blocked")
        assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")
        uid = pod["metadata"]["uid"]
        assert attempt["status_code"] == "ERROR"
        attributes = attempt["attributes"]
        assert attributes["k8s.pod.uid"] == uid
        assert attributes["k8s.namespace.name"] == "default"
        assert attributes["aiosched.result"] == "unschedulable"
        assert attributes["aiosched.failure_message"] == BLOCKED_MESSAGE
        trace = phoenix.spans(trace_id=attempt["context"]["trace_id"])
        points = by_name(trace)
        assert {"SchedulingAttempt", "PreFilter", "Filter", "PostFilter"} <= points.keys()
        filter_plugins = {
            event["attributes"]["aiosched.plugin"]: event["attributes"]
            for event in points["Filter"]["events"]
            if event["name"] == "plugin"
        }
        # The Filter span tells the truth: no node passed, NodeResourcesFit rejected the one,
        # for good (the request is over the node's allocatable: Unresolvable since v1.36).
        assert points["Filter"]["status_code"] == "ERROR"
        assert filter_plugins["NodeResourcesFit"]["aiosched.status"] == (
            "UnschedulableAndUnresolvable"
        )
        assert filter_plugins["NodeResourcesFit"]["aiosched.nodes_rejected"] == 1
        assert all(
            span["parent_id"] == attempt["context"]["span_id"]
            for span in trace
            if span["name"] != "SchedulingAttempt"
        )
        assert not roots(phoenix, "PodScheduling", "blocked")  # its story goes on

        # --- room appears: bound; the pod's trace has the attempt that bound it
        kubectl.apply(node_manifest("big", "4"))
        node = wait_until(
            lambda: kubectl.json("pod", "blocked")["spec"].get("nodeName"), what="blocked bound"
        )
        assert node == "big"
        (pod_span,) = wait_until(
            lambda: roots(phoenix, "PodScheduling", "blocked"),
            timeout=20,
            what="blocked's PodScheduling span in Phoenix",
        )
        # Connected by the pod's uid (Phoenix keeps no span links; Jaeger shows them too).
        assert pod_span["attributes"]["k8s.pod.uid"] == uid
        assert pod_span["attributes"]["aiosched.outcome"] == "bound"
        attempts = pod_span["attributes"]["aiosched.attempts"]
        failed = roots(phoenix, "SchedulingAttempt", "blocked")
        assert len(failed) == attempts - 1 >= 1
        assert all(span["attributes"]["k8s.pod.uid"] == uid for span in failed)
        story = phoenix.spans(trace_id=pod_span["context"]["trace_id"])
        (bound,) = [span for span in story if span["name"] == "SchedulingAttempt"]
        assert bound["parent_id"] == pod_span["context"]["span_id"]
        assert bound["attributes"]["aiosched.result"] == "scheduled"
        assert bound["attributes"]["aiosched.attempt"] == attempts
        assert bound["attributes"]["k8s.node.name"] == "big"
        bound_points = {
            span["name"] for span in story if span["parent_id"] == bound["context"]["span_id"]
        }
        assert {"Filter", "Reserve", "Bind"} <= bound_points  # one feasible node: no Score
        assert re.fullmatch(r"[0-9a-f]{32}", pod_span["context"]["trace_id"])
