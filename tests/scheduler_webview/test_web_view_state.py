"""The web view's JSON (/debug/view/state) from a real Scheduler on the embedded cluster: nodes
filled by their pods' requests, the queue, pending pods with their last explain, recent attempts
with their time per extension point and trace links, gangs and their quorum; and the page's
routes behind the secure port's guard, self-contained (nothing fetched from elsewhere)."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from tracing_harness import traced_scheduler

from observability.http import ObservabilityServer
from observability.recent_attempts import (
    RecentAttempts,
    measured_point_durations,
    point_durations,
)
from observability.spans import ExtensionPoint
from scheduler.api.resource import ResourceClaimView, ResourceSliceView
from scheduler.app.cli import build_parser
from scheduler.app.web_view import WebViewState, devices_per_node, gangs
from scheduler.cycle.scheduler import Scheduler, SchedulerOptions
from scheduler.framework.interface import CycleState
from scheduler.framework.runtime.core import NoopObserver
from scheduler.framework.status import Status
from scheduler.listers.cluster_objects import ClusterObjects
from scheduler.listers.resource_objects import ResourceObjects
from scheduler.server.webview import PAGE, STATE_PATH, VIEW_PATH, web_view_routes
from scheduler.testing.builders import MakeNode
from scheduler.testing.runner import build_framework, handle_deps
from tests.scheduler_gang.gang_builders import member, pod_group

TRACE_UI = "http://localhost:16686/trace/{trace_id}"


async def test_state_shows_nodes_queue_pending_and_timed_attempts(tmp_path: Path) -> None:
    attempts = RecentAttempts()

    def configure(scheduler: Scheduler) -> None:
        scheduler.instrumentation.attempts = attempts

    async with traced_scheduler(tmp_path, configure=configure) as h:
        for name in ("node-a", "node-b"):
            await h.api.create_node(name, cpu="2", memory="4Gi", pods="10")
        await h.wait_nodes_cached(2)
        await h.api.create_pod("web", cpu="500m", memory="1Gi")
        await h.api.create_pod("huge", cpu="64")
        host = await h.wait_bound("web")
        await h.wait_for(lambda: h.explain.get("default", "huge"), what="failed attempt")
        view = WebViewState(lambda: h.scheduler, h.explain, attempts, TRACE_UI)
        await h.wait_for(
            lambda: view()["nodes"][0 if host == "node-a" else 1]["requested"]["pods"] == 1,
            what="the binding in the cache",
        )
        state = view()

    assert state["ready"] is True and state["profiles"] == ["default-scheduler"]
    by_name = {node["name"]: node for node in state["nodes"]}
    assert sorted(by_name) == ["node-a", "node-b"] and state["nodesOmitted"] == 0
    assert by_name[host]["allocatable"] == {"cpu": 2000, "memory": 4 << 30, "pods": 10}
    assert by_name[host]["requested"] == {"cpu": 500, "memory": 1 << 30, "pods": 1}
    other = "node-b" if host == "node-a" else "node-a"
    assert by_name[other]["requested"] == {"cpu": 0, "memory": 0, "pods": 0}
    assert "devices" not in by_name[host]  # no ResourceSlice names it

    queue = state["queue"]
    assert set(queue) == {"active", "backoff", "unschedulable", "gated"}
    assert queue["backoff"] + queue["unschedulable"] == 1

    [pending] = state["pending"]
    assert pending["pod"] == {"namespace": "default", "name": "huge"}
    assert pending["queue"] in ("backoff", "unschedulable")
    assert pending["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    assert pending["filterVerdicts"] == [
        {"plugin": "NodeResourcesFit", "reason": "Insufficient cpu", "count": 2}
    ]

    by_pod = {item["pod"]["name"]: item for item in state["attempts"]}
    scheduled, failed = by_pod["web"], by_pod["huge"]
    assert scheduled["result"] == "scheduled" and scheduled["node"] == host
    points = [point["point"] for point in scheduled["extensionPoints"]]
    assert {"PreFilter", "Filter", "Score", "Bind"} <= set(points), points
    assert all(point["ms"] >= 0 for point in scheduled["extensionPoints"])
    assert re.fullmatch(r"[0-9a-f]{32}", scheduled["traceId"])
    assert scheduled["traceUrl"] == TRACE_UI.replace("{trace_id}", scheduled["traceId"])
    assert failed["result"] == "unschedulable" and "Insufficient cpu" in failed["message"]
    assert "PostFilter" in [point["point"] for point in failed["extensionPoints"]]
    assert failed["traceId"] != scheduled["traceId"]  # a failed attempt has a trace of its own


async def test_untraced_attempts_show_the_timings_the_metrics_measured(tmp_path: Path) -> None:
    """Without a tracer every attempt still shows its time per extension point (the runtime's
    own measurements for scheduler_framework_extension_point_duration_seconds), but no link."""
    attempts = RecentAttempts()

    def configure(scheduler: Scheduler) -> None:
        scheduler.instrumentation.attempts = attempts

    async with traced_scheduler(tmp_path, tracing_enabled=False, configure=configure) as h:
        await h.api.create_node("node-a", cpu="2")
        await h.wait_nodes_cached(1)
        await h.api.create_pod("web")
        await h.api.create_pod("huge", cpu="64")
        await h.wait_bound("web")
        await h.wait_for(lambda: len(attempts) == 2, what="both attempts recorded")
        items = WebViewState(lambda: h.scheduler, h.explain, attempts, TRACE_UI)()["attempts"]
        assert h.scheduler.instrumentation._point_seconds == {}  # nothing left behind
    by_pod = {item["pod"]["name"]: item for item in items}
    scheduled, failed = by_pod["web"], by_pod["huge"]
    assert scheduled["result"] == "scheduled" and scheduled["node"] == "node-a"
    points = [point["point"] for point in scheduled["extensionPoints"]]
    assert {"PreFilter", "Filter", "Reserve", "Permit", "Bind", "PostBind"} <= set(points)
    assert points.index("PreFilter") < points.index("Bind")  # in the order they ended
    assert all(point["ms"] >= 0 for point in scheduled["extensionPoints"])
    assert "PostFilter" in [point["point"] for point in failed["extensionPoints"]]
    for item in items:
        assert "traceId" not in item and "traceUrl" not in item


async def test_without_the_web_view_attempts_keep_no_timings(tmp_path: Path) -> None:
    """RecentAttempts(0) (the Instrumentation's default): no list per attempt at all."""
    states: list[CycleState] = []

    def configure(scheduler: Scheduler) -> None:
        begin = scheduler.instrumentation.begin_attempt

        def spy(pinfo: Any, profile: str, state: CycleState, *args: Any, **kw: Any) -> Any:
            states.append(state)
            return begin(pinfo, profile, state, *args, **kw)

        scheduler.instrumentation.begin_attempt = spy  # type: ignore[method-assign]

    async with traced_scheduler(tmp_path, tracing_enabled=False, configure=configure) as h:
        await h.api.create_node("node-a")
        await h.wait_nodes_cached(1)
        await h.api.create_pod("web")
        await h.wait_bound("web")
        assert not h.scheduler.instrumentation.attempts.enabled
    assert states and all(state.point_seconds is None for state in states)


def test_the_runtime_keeps_the_very_durations_it_reports_to_the_metric() -> None:
    seen: list[float] = []

    class Observer(NoopObserver):
        def on_extension_point(self, point: str, status: Status, seconds: float) -> None:
            seen.append(seconds)

    ticks = iter([1.0, 1.25, 2.0, 2.5])
    deps = handle_deps()
    deps.clock = lambda: next(ticks)
    deps.observer = Observer()
    framework = build_framework([], deps)
    state = CycleState()
    framework.record_extension_point("PreFilter", Status(), framework.now(), state)
    state.point_seconds = []
    framework.record_extension_point("Filter", Status(), framework.now(), state)
    assert seen == [0.25, 0.5]
    assert state.point_seconds == ["Filter", 0.5] and state.point_seconds[1] is seen[1]
    assert state.clone().point_seconds is None  # preemption's dry runs record nothing


def test_measured_point_durations_sum_repeated_points_in_end_order() -> None:
    flat: list[str | float] = ["PreFilter", 0.001, "Filter", 0.002, "Score", 0.0005]
    flat += ["Filter", 0.001, "Bind"]  # a binding task still appending: the odd tail is skipped
    assert measured_point_durations(flat) == [
        {"point": "PreFilter", "ms": 1.0},
        {"point": "Filter", "ms": 3.0},
        {"point": "Score", "ms": 0.5},
    ]
    ring = RecentAttempts(clock=lambda: 5.0)
    ring.record(
        "ns", "p", profile="x", attempt=1, result="scheduled", detail="n", point_seconds=flat
    )
    ring.record("ns", "q", profile="x", attempt=1, result="error", detail="boom")
    newest, oldest = ring.items(10)
    assert "extensionPoints" not in newest  # nothing measured (e.g. the attempt never ran)
    assert [point["point"] for point in oldest["extensionPoints"]] == [
        "PreFilter",
        "Filter",
        "Score",
    ]


async def test_gangs_show_members_scheduled_and_quorum(tmp_path: Path) -> None:
    async with traced_scheduler(tmp_path, tracing_enabled=False) as h:
        workloads = h.scheduler.cluster_objects.workloads
        workloads.add(pod_group("trainers", 3), pod_group("solo"))
        for pod in (
            member("t-0", "trainers", node="n1"),
            member("t-1", "trainers", node="n1"),
            member("t-2", "trainers"),
        ):
            workloads.states.pod_added(pod)
        by_name = {group["name"]: group for group in gangs(h.scheduler)}
    assert by_name["trainers"] == {
        "namespace": "default",
        "name": "trainers",
        "minCount": 3,
        "members": 3,
        "scheduled": 2,
        "quorum": False,
    }
    assert by_name["solo"]["minCount"] is None and by_name["solo"]["quorum"] is True
    # reading never creates a state for a group no pod names
    assert workloads.states.find("default", "solo") is None


def test_point_durations_sum_repeated_points_and_skip_plugin_timings() -> None:
    class Ok:
        code_name = "Success"

    entries = [
        ("Filter", "NodeResourcesFit", Ok(), 0.001, 1.0),  # a plugin's timing: not a point
        ("Filter", None, Ok(), 1.0, 1.002),
        ("Filter", None, Ok(), 2.0, 2.001),
        ExtensionPoint("Bind", 0, 1_000_000, 4_000_000, "Success"),
    ]
    assert point_durations(entries) == [
        {"point": "Filter", "ms": 3.0},
        {"point": "Bind", "ms": 3.0},
    ]


def test_state_before_the_scheduler_exists() -> None:
    state = WebViewState(lambda: None, None, RecentAttempts(), None)()  # type: ignore[arg-type]
    assert state["ready"] is False and state["traceUiUrl"] is None


def test_the_page_is_self_contained() -> None:
    """No build step and no CDN: inline style and script, no external URL, no src attribute."""
    assert "<style>" in PAGE and "<script>" in PAGE
    assert not re.search(r"https?://", PAGE)
    assert not re.search(r"\bsrc=|<link\b|@import", PAGE)


async def test_routes_sit_behind_the_guard_like_debug_explain() -> None:
    seen: list[str] = []

    async def guard(request: web.Request) -> web.StreamResponse | None:
        seen.append(request.path)
        if request.headers.get("Authorization") != "Bearer good":
            return web.json_response({"kind": "Status", "code": 403}, status=403)
        return None

    routes = web_view_routes(lambda: {"queue": {"active": 1}})
    server = ObservabilityServer(port=0, debug_routes=routes, guard=guard)
    async with server, aiohttp.ClientSession() as session:
        for path in (VIEW_PATH, STATE_PATH):
            async with session.get(server.url + path) as response:
                assert response.status == 403
        good = {"Authorization": "Bearer good"}
        async with session.get(server.url + VIEW_PATH, headers=good) as response:
            assert response.status == 200
            assert response.content_type == "text/html"
            assert "default-src 'none'" in response.headers["Content-Security-Policy"]
            assert await response.text() == PAGE
        async with session.get(server.url + STATE_PATH, headers=good) as response:
            assert response.status == 200 and await response.json() == {"queue": {"active": 1}}
    assert seen == [VIEW_PATH, STATE_PATH, VIEW_PATH, STATE_PATH]


def test_trace_ui_url_flag_needs_its_placeholder(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def parse(*argv: str) -> Any:
        parser, _ = build_parser()
        return parser.parse_args(["run", *argv])

    monkeypatch.delenv("AIOSCHED_TRACE_UI_URL", raising=False)
    assert parse().trace_ui_url is None
    assert parse("--trace-ui-url", TRACE_UI).trace_ui_url == TRACE_UI
    with pytest.raises(SystemExit):
        parse("--trace-ui-url", "http://localhost:16686/trace/")
    assert "has no {trace_id} placeholder" in capsys.readouterr().err
    phoenix = "http://127.0.0.1:6006/redirects/traces/{trace_id}"
    monkeypatch.setenv("AIOSCHED_TRACE_UI_URL", phoenix)
    assert parse().trace_ui_url == phoenix


def _slice(name: str, pool: str, devices: list[dict[str, Any]], **where: Any) -> Any:
    return ResourceSliceView.from_dict(
        {
            "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"},
            "spec": {
                "driver": "dra.example.com",
                "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
                **where,
            },
        }
    )


def test_devices_are_drawn_on_every_node_their_slice_reaches() -> None:
    """nodeName, allNodes and nodeSelector slices and (DRAPartitionableDevices) per-device node
    selection, matched as the DynamicResources plugin matches them; allocated ones marked."""
    region = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "region", "operator": "In", "values": ["r2"]}]}]}  # fmt: skip
    parts = [{"name": "part-a", "nodeName": "node-a"}, {"name": "part-all", "allNodes": True}]
    claim = {
        "metadata": {"name": "c", "namespace": "default", "uid": "c"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {
            "deviceClassName": "nic"}}]}},
        "status": {"allocation": {"devices": {"results": [{"request": "r",
            "driver": "dra.example.com", "pool": "net", "device": "nic-0"}]}}},
    }  # fmt: skip
    resources = ResourceObjects()
    resources.add(
        _slice("local", "node-a", [{"name": "gpu-0"}], nodeName="node-a"),
        _slice("net", "net", [{"name": "nic-0"}, {"name": "nic-1"}], allNodes=True),
        _slice("r2", "r2", [{"name": "fpga-0"}], nodeSelector=region),
        _slice("parts", "parts", parts, perDeviceNodeSelection=True),
        ResourceClaimView.from_dict(claim),
    )
    cluster = ClusterObjects()
    cluster.resources = resources
    scheduler = SimpleNamespace(cluster_objects=cluster, options=SchedulerOptions())
    shown = [
        MakeNode("node-a").label("region", "r1").obj(),
        MakeNode("node-b").label("region", "r2").obj(),
        MakeNode("node-c").obj(),
    ]

    def drawn(gates: dict[str, bool]) -> dict[str, Any]:
        scheduler.options.feature_gates = gates
        found = devices_per_node(shown, scheduler)  # type: ignore[arg-type]
        return {
            node: (
                boxes["allocated"], boxes["total"],
                {d["name"]: (d["allocated"], d["shared"]) for d in boxes["list"]},
            )
            for node, boxes in found.items()
        }  # fmt: skip

    free, taken = (False, True), (True, True)
    assert drawn({}) == {
        "node-a": (1, 5, {"gpu-0": (False, False), "nic-0": taken, "nic-1": free,
                          "part-a": (False, False), "part-all": free}),
        "node-b": (1, 4, {"nic-0": taken, "nic-1": free, "fpga-0": free, "part-all": free}),
        "node-c": (1, 3, {"nic-0": taken, "nic-1": free, "part-all": free}),
    }  # fmt: skip
    without_partitions = drawn({"DRAPartitionableDevices": False})
    assert set(without_partitions["node-c"][2]) == {"nic-0", "nic-1"}
    assert without_partitions["node-a"][1] == 3
