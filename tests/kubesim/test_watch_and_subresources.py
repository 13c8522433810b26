"""Watch streams, bookmarks, 410 Expired, pods/binding and pods/eviction."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from tests.kubesim.conftest import LAYOUTS

# each test runs against one process and against two front-ends over a store (--workers)
pytestmark = pytest.mark.parametrize("layout", LAYOUTS)

Kube = Any  # the `kube` fixture (tests/kubesim/conftest.py)
PODS = "/api/v1/namespaces/default/pods"
AUTH_KEY = "Authorization"


async def read_events(kube: Kube, path: str, count: int, **params: str) -> list[dict[str, Any]]:
    """Open a watch and read `count` events (or until the server ends it)."""
    events: list[dict[str, Any]] = []
    headers = {AUTH_KEY: "Bearer test-token"}
    async with kube.client.get(path, headers=headers, params={"watch": "1", **params}) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("application/json")
        async with asyncio.timeout(5):
            while len(events) < count:
                line = await r.content.readline()
                if not line:
                    break
                events.append(orjson.loads(line))
    return events


async def test_watch_from_resource_version_sees_changes_in_order(kube: Kube) -> None:
    _status, listed = await kube.call("GET", PODS)
    rv = listed["metadata"]["resourceVersion"]
    reader = asyncio.create_task(read_events(kube, PODS, 3, resourceVersion=rv))
    await asyncio.sleep(0.05)
    await kube.create_pod("w")
    await kube.call(
        "PATCH",
        f"{PODS}/w",
        {"metadata": {"labels": {"v": "2"}}},
        content_type="application/merge-patch+json",
    )
    await kube.call("DELETE", f"{PODS}/w")
    events = await reader
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)


async def test_watch_without_resource_version_starts_with_current_state(kube: Kube) -> None:
    await kube.create_pod("a")
    await kube.create_pod("b")
    events = await read_events(kube, PODS, 2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
    ]


async def test_watch_timeout_ends_stream(kube: Kube) -> None:
    events = await read_events(kube, PODS, 10, timeoutSeconds="1", resourceVersion="1")
    assert events == []


async def test_bookmarks(kube: Kube) -> None:
    _, listed = await kube.call("GET", PODS)
    events = await read_events(
        kube,
        PODS,
        1,
        allowWatchBookmarks="true",
        resourceVersion=listed["metadata"]["resourceVersion"],
    )
    assert events[0]["type"] == "BOOKMARK"
    assert events[0]["object"]["kind"] == "Pod"
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) >= int(
        listed["metadata"]["resourceVersion"]
    )


async def test_send_initial_events_ends_with_marked_bookmark(kube: Kube) -> None:
    await kube.create_pod("a")
    events = await read_events(
        kube,
        PODS,
        2,
        sendInitialEvents="true",
        allowWatchBookmarks="true",
        resourceVersionMatch="NotOlderThan",
    )
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    annotations = events[1]["object"]["metadata"]["annotations"]
    assert annotations == {"k8s.io/initial-events-end": "true"}


async def test_too_old_resource_version_is_410_error_event(kube: Kube) -> None:
    for store in kube.stores:
        store._history_size = 2
    for i in range(5):
        await kube.create_pod(f"old{i}")
    events = await read_events(kube, PODS, 1, resourceVersion="1")
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"].startswith("too old resource version: 1 (")


async def test_label_selector_watch_sees_transitions(kube: Kube) -> None:
    _, listed = await kube.call("GET", PODS)
    reader = asyncio.create_task(
        read_events(
            kube,
            PODS,
            2,
            labelSelector="tier=web",
            resourceVersion=listed["metadata"]["resourceVersion"],
        )
    )
    await asyncio.sleep(0.05)
    await kube.create_pod("t")
    for tier in ("web", "db"):
        await kube.call(
            "PATCH",
            f"{PODS}/t",
            {"metadata": {"labels": {"tier": tier}}},
            content_type="application/merge-patch+json",
        )
    events = await reader
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]


def binding(name: str, node: str, uid: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if uid:
        meta["uid"] = uid
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": meta,
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


async def test_binding_sets_node_and_condition(kube: Kube) -> None:
    await kube.create_pod("b")
    status, body = await kube.call("POST", f"{PODS}/b/binding", binding("b", "node-0"))
    assert status == 201
    assert body["status"] == "Success"
    _, pod = await kube.call("GET", f"{PODS}/b")
    assert pod["spec"]["nodeName"] == "node-0"
    scheduled = [c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled[0]["status"] == "True"


@pytest.mark.parametrize(
    ("setup", "code", "message"),
    [
        (
            "bound",
            409,
            'Operation cannot be fulfilled on pods/binding "b": pod b is already '
            'assigned to node "node-0"',
        ),
        ("gone", 404, 'pods "b" not found'),
        ("uid", 409, None),
    ],
)
async def test_binding_refusals(kube: Kube, setup: str, code: int, message: str | None) -> None:
    if setup != "gone":
        await kube.create_pod("b")
    if setup == "bound":
        await kube.call("POST", f"{PODS}/b/binding", binding("b", "node-0"))
    uid = "00000000-0000-4000-8000-000000000000" if setup == "uid" else None
    status, body = await kube.call("POST", f"{PODS}/b/binding", binding("b", "node-1", uid))
    assert status == code
    if message:
        assert body["message"] == message
    if setup != "gone":
        _, pod = await kube.call("GET", f"{PODS}/b")
        assert pod["spec"].get("nodeName") in (None, "node-0")


async def test_eviction_honours_pdb(kube: Kube) -> None:
    for name in ("e1", "e2"):
        await kube.create_pod(name, nodeName="node-0")
        await kube.call(
            "PATCH",
            f"{PODS}/{name}",
            {"metadata": {"labels": {"app": "e"}}},
            content_type="application/merge-patch+json",
        )
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "budget"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "e"}}},
    }
    status, body = await kube.call(
        "POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb
    )
    assert status == 201, body
    for _ in range(50):
        _, pods = await kube.call("GET", PODS)
        if all(p["status"].get("phase") == "Running" for p in pods["items"]):
            break
        await asyncio.sleep(0.01)
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "e1"}}
    status, body = await kube.call("POST", f"{PODS}/e1/eviction", eviction)
    assert status == 201, body
    eviction["metadata"]["name"] = "e2"
    status, body = await kube.call("POST", f"{PODS}/e2/eviction", eviction)
    assert status == 429
    assert body["reason"] == "TooManyRequests"
    assert body["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    assert body["details"]["causes"][0]["reason"] == "DisruptionBudget"
