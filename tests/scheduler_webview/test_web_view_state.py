"""The web view's JSON (/debug/view/state) from a real Scheduler on the embedded cluster: nodes
filled by their pods' requests, the queue, pending pods with their last explain, recent attempts
with their time per extension point and trace links, gangs and their quorum; and the page's
routes behind the secure port's guard, self-contained (nothing fetched from elsewhere)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from tracing_harness import traced_scheduler

from observability.http import ObservabilityServer
from observability.recent_attempts import RecentAttempts, point_durations
from observability.spans import ExtensionPoint
from scheduler.app.cli import build_parser
from scheduler.app.web_view import WebViewState, gangs
from scheduler.cycle.scheduler import Scheduler
from scheduler.server.webview import PAGE, STATE_PATH, VIEW_PATH, web_view_routes
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


async def test_untraced_attempts_have_no_timings_and_no_links(tmp_path: Path) -> None:
    attempts = RecentAttempts()

    def configure(scheduler: Scheduler) -> None:
        scheduler.instrumentation.attempts = attempts

    async with traced_scheduler(tmp_path, tracing_enabled=False, configure=configure) as h:
        await h.api.create_node("node-a")
        await h.wait_nodes_cached(1)
        await h.api.create_pod("web")
        await h.wait_bound("web")
        await h.wait_for(lambda: len(attempts) == 1, what="the attempt recorded")
        [item] = WebViewState(lambda: h.scheduler, h.explain, attempts, TRACE_UI)()["attempts"]
    assert item["result"] == "scheduled" and item["node"] == "node-a"
    assert "extensionPoints" not in item and "traceUrl" not in item


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
