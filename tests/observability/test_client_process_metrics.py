"""The process-level metrics a kube-scheduler exports beside its own: client-go's
rest_client_*, leader_election_master_status and kubernetes_build_info, under upstream's names,
labels and buckets (component-base/metrics/prometheus/restclient, .../clientgo/leaderelection,
component-base/metrics/version.go), reported by a real KubeClient against a real server."""

from __future__ import annotations

import platform
import sys

import pytest
from aiohttp import web
from kubernetes_asyncio.client import Configuration
from prometheus_client.parser import text_string_to_metric_families

from observability.metrics import SchedulerMetrics
from observability.version import KUBERNETES_VERSION, aiosched_version
from scheduler.app.cli import main
from scheduler.client.rest import ApiError, ClientSettings, KubeClient


def _samples(metrics: SchedulerMetrics) -> dict[str, list[tuple[dict[str, str], float]]]:
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


def test_build_info_is_a_constant_one_with_upstream_s_labels() -> None:
    ((labels, value),) = _samples(SchedulerMetrics())["kubernetes_build_info"]

    assert value == 1
    assert set(labels) == {
        "major",
        "minor",
        "git_version",
        "git_commit",
        "git_tree_state",
        "build_date",
        "go_version",
        "compiler",
        "platform",
    }
    assert (labels["major"], labels["minor"]) == tuple(KUBERNETES_VERSION[1:].split(".")[:2])
    assert labels["git_version"] == f"{KUBERNETES_VERSION}+aiosched.{aiosched_version()}"
    assert labels["go_version"] == ""  # no Go toolchain built this


def test_leader_election_status_follows_leadership() -> None:
    metrics = SchedulerMetrics()
    assert "leader_election_master_status" not in _samples(metrics)  # no election, no series

    metrics.leading("kube-scheduler", False)
    assert _samples(metrics)["leader_election_master_status"] == [({"name": "kube-scheduler"}, 0)]
    metrics.leading("kube-scheduler", True)
    assert _samples(metrics)["leader_election_master_status"] == [({"name": "kube-scheduler"}, 1)]


async def test_a_kube_client_reports_each_request_by_code_method_and_host() -> None:
    async def handler(request: web.Request) -> web.Response:
        status = 404 if request.path.endswith("/missing") else 201
        return web.json_response({}, status=status)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    configuration = Configuration(host=f"http://127.0.0.1:{port}")
    client = KubeClient(configuration, ClientSettings(qps=1000, burst=1000))
    metrics = SchedulerMetrics()
    client.observe_requests(metrics.rest_client)
    events_client = client.with_own_rate_limit()  # a twin reports to the same metrics
    try:
        await client.request("POST", "/api/v1/namespaces/default/pods/p/binding", body={})
        await events_client.request("POST", "/apis/events.k8s.io/v1/events", body={})
        await client.request("GET", "/api/v1/missing")
    finally:
        await client.close()
        await runner.cleanup()
    unreachable = KubeClient(Configuration(host=f"http://127.0.0.1:{port}"), ClientSettings())
    unreachable.observe_requests(metrics.rest_client)
    try:
        with pytest.raises(ApiError):  # the server is gone: no answer at all
            await unreachable.request("GET", "/api/v1/nodes")
    finally:
        await unreachable.close()

    host = f"127.0.0.1:{port}"
    samples = _samples(metrics)
    requests = {
        (labels["code"], labels["method"], labels["host"]): value
        for labels, value in samples["rest_client_requests_total"]
    }
    assert requests == {
        ("201", "POST", host): 2,
        ("404", "GET", host): 1,
        ("<error>", "GET", host): 1,
    }
    counts = {
        (labels["verb"], labels["host"]): value
        for labels, value in samples["rest_client_request_duration_seconds_count"]
    }
    assert counts == {("POST", host): 2, ("GET", host): 2}
    buckets = {labels["le"] for labels, _ in samples["rest_client_request_duration_seconds_bucket"]}
    assert buckets == {
        "0.005",
        "0.025",
        "0.1",
        "0.25",
        "0.5",
        "1.0",
        "2.0",
        "4.0",
        "8.0",
        "15.0",
        "30.0",
        "60.0",
        "+Inf",
    }


def test_version_says_what_it_is_and_what_it_follows(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])

    assert exited.value.code == 0
    assert capsys.readouterr().out.splitlines() == [
        f"aiosched {aiosched_version()}",
        f"Kubernetes {KUBERNETES_VERSION} (the kube-scheduler it follows)",
        f"{platform.python_implementation()} {platform.python_version()} on "
        f"{sys.platform}/{platform.machine()}",
    ]
