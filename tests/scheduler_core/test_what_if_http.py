"""POST /debug/what-if over HTTP: the secure port's authorization, bad requests, spacing."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest
from aiohttp import ClientSession
from test_what_if import CANDIDATE, manifest, node, scheduler_with

from observability.http import WHAT_IF_MAX_BODY, ObservabilityServer, what_if_routes
from scheduler.cycle.what_if import WhatIf
from scheduler.server.delegated_auth import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS, DelegatedAuth

USERS = {"admin-token": "admin", "reader-token": "reader"}
#: reader may GET /debug/* (aiosched:metrics-reader) but not POST the what-if.
ALLOWED = {("admin", "post", "/debug/what-if"), ("reader", "get", "/debug/explain/default/web")}


class FakeApiServer:
    """TokenReviews from USERS, SubjectAccessReviews from ALLOWED."""

    async def request(self, method: str, path: str, *, body: Any = None) -> tuple[int, Any]:
        spec = body["spec"]
        if path == TOKEN_REVIEWS:
            user = USERS.get(spec["token"])
            status = {"authenticated": True, "user": {"username": user}} if user else {}
            return 201, {**body, "status": status}
        assert path == SUBJECT_ACCESS_REVIEWS
        attributes = spec["nonResourceAttributes"]
        allowed = (spec["user"], attributes["verb"], attributes["path"]) in ALLOWED
        return 201, {**body, "status": {"allowed": allowed}}


def engine() -> Callable[[Any, str | None, str | None], Any]:
    scheduler = scheduler_with([node("small", "1"), node("large", "8")])
    return WhatIf(scheduler, scheduler.registry).answer


async def serve(answer: Any, guarded: bool = False, **routes: Any) -> ObservabilityServer:
    api = FakeApiServer()
    guard = DelegatedAuth(api, api).guard if guarded else None
    server = ObservabilityServer(
        port=0, guard=guard, debug_post_routes=what_if_routes(answer, **routes)
    )
    await server.start()
    return server


@pytest.fixture
async def url() -> AsyncIterator[str]:
    server = await serve(engine())
    try:
        yield server.url + "/debug/what-if"
    finally:
        await server.stop()


async def post(
    url: str, body: bytes | Any, token: str | None = None
) -> tuple[int, Any, dict[str, str]]:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with ClientSession() as session, session.post(url, data=data, headers=headers) as r:
        raw = await r.read()
        try:
            return r.status, orjson.loads(raw), dict(r.headers)
        except orjson.JSONDecodeError:
            return r.status, raw.decode(), dict(r.headers)


async def test_answers_a_bare_pod_manifest_in_json_or_yaml(url: str) -> None:
    status, answer, _ = await post(url, manifest("web", "2"))
    assert status == 200, answer
    assert (answer["result"], answer["node"]) == ("schedulable", "large")
    yaml_body = b"""apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: c, image: pause, resources: {requests: {cpu: "2"}}}]
"""
    status, answer, _ = await post(url, yaml_body)
    assert (status, answer["node"]) == (200, "large")


async def test_wrapped_request_with_profile_and_candidate_config(url: str) -> None:
    body = {"pod": manifest("web", "500m"), "schedulerName": "default-scheduler"}
    status, answer, _ = await post(url, {**body, "config": CANDIDATE})
    assert status == 200, answer
    # The candidate packs: the smaller node that fits.
    assert (answer["node"], answer["whatIf"]["configuration"]) == ("small", "candidate")
    status, answer, _ = await post(url, body)
    assert (answer["node"], answer["whatIf"]["configuration"]) == ("large", "live")


async def test_text_format_reads_like_explain(url: str) -> None:
    status, text, _ = await post(url + "?format=text", manifest("huge", "64"))
    assert status == 200
    assert "Result:   unschedulable" in text
    assert "would need preemption" in text
    assert "NodeResourcesFit" in text


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        (b"", 400, "empty request body"),
        (b"kind: Pod\nmetadata: {name: [unclosed", 400, "neither JSON nor YAML"),
        (b"- a list", 400, "must be a Pod manifest"),
        ({"schedulerName": "x"}, 400, "has no pod"),
        ({"kind": "ConfigMap", "metadata": {"name": "x"}}, 400, "expected kind Pod"),
        ({"pod": manifest("x", "1"), "schedulerName": 7}, 400, "schedulerName must be"),
        ({"pod": manifest("x", "1"), "config": {"kind": "x"}}, 400, "config must be"),
        ({"pod": manifest("x", "1"), "schedulerName": "nobody"}, 404, "no profile"),
        ({"pod": manifest("x", "1"), "config": "apiVersion: nope"}, 400, "invalid configuration"),
        (b"x" * (WHAT_IF_MAX_BODY + 1), 413, "larger than"),
    ],
)
async def test_bad_requests_get_a_clear_4xx(
    url: str, body: Any, status: int, fragment: str
) -> None:
    got, answer, _ = await post(url, body)
    assert got == status, answer
    assert fragment in answer["error"]


async def test_what_ifs_are_spaced_by_their_own_duration() -> None:
    now = [100.0]
    slept: list[float] = []

    def slow_answer(pod: Any, name: str | None, config: str | None) -> dict[str, Any]:
        now[0] += 2.5 if pod["metadata"]["name"] != "long" else 20.0  # of the loop's time
        return {"ok": True}

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    server = await serve(slow_answer, clock=lambda: now[0], sleep=sleep)
    try:
        url = server.url + "/debug/what-if"
        assert (await post(url, manifest("a", "1")))[0] == 200
        # The next one waits as long as the first one held the loop, then runs.
        assert (await post(url, manifest("b", "1")))[0] == 200
        assert slept == [2.5]
        now[0] += 2.5
        assert (await post(url, manifest("long", "1")))[0] == 200
        # 20 s of loop time: the next turn is too far away to wait for.
        status, answer, headers = await post(url, manifest("c", "1"))
        assert (status, headers["Retry-After"]) == (429, "20")
        assert "busy" in answer["error"]
        assert slept == [2.5]
    finally:
        await server.stop()


async def test_a_failing_engine_is_a_500_not_a_dead_endpoint() -> None:
    def broken(pod: Any, name: str | None, config: str | None) -> dict[str, Any]:
        raise RuntimeError("boom")

    server = await serve(broken, clock=time.monotonic)
    try:
        status, answer, _ = await post(server.url + "/debug/what-if", manifest("a", "1"))
        assert (status, "boom" in answer["error"]) == (500, True)
    finally:
        await server.stop()


@pytest.mark.parametrize(
    ("token", "status"),
    [(None, 401), ("unknown", 401), ("reader-token", 403), ("admin-token", 200)],
)
async def test_needs_the_same_authorization_as_debug(token: str | None, status: int) -> None:
    server = await serve(engine(), guarded=True)
    try:
        got, answer, _ = await post(server.url + "/debug/what-if", manifest("a", "1"), token)
        assert got == status, answer
        if status == 403:  # a POST is asked for as the non-resource verb "post" (requestinfo.go)
            assert answer["message"] == 'forbidden: User "reader" cannot post path "/debug/what-if"'
    finally:
        await server.stop()
