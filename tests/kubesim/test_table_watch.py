"""`kubectl get -w`: a watch whose Accept asks for a Table streams one-row Tables."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

Kube = Any  # the `kube` fixture (tests/kubesim/conftest.py)
PODS = "/api/v1/namespaces/default/pods"
TABLE_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


async def watch_lines(
    kube: Kube, path: str, count: int, accept: str, **params: str
) -> list[dict[str, Any]]:
    headers = {"Authorization": "Bearer test-token", "Accept": accept}
    events: list[dict[str, Any]] = []
    async with kube.client.get(path, headers=headers, params={"watch": "1", **params}) as r:
        assert r.status == 200
        async with asyncio.timeout(5):
            while len(events) < count:
                line = await r.content.readline()
                if not line:
                    break
                events.append(orjson.loads(line))
    return events


async def test_table_watch_sends_each_object_as_a_row(kube: Kube) -> None:
    _, listed = await kube.call("GET", PODS)
    rv = listed["metadata"]["resourceVersion"]
    reader = asyncio.create_task(watch_lines(kube, PODS, 2, TABLE_ACCEPT, resourceVersion=rv))
    await asyncio.sleep(0.05)
    await kube.create_pod("t1", schedulerName="nobody")
    await kube.call("DELETE", f"{PODS}/t1")
    events = await reader
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]
    for event in events:
        table = event["object"]
        assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
        assert [c["name"] for c in table["columnDefinitions"]][:3] == ["Name", "Ready", "Status"]
        (row,) = table["rows"]
        assert row["cells"][0] == "t1"
        # includeObject=Metadata (the default) carries a PartialObjectMetadata
        assert row["object"]["kind"] == "PartialObjectMetadata"
        assert row["object"]["metadata"]["name"] == "t1"
        assert table["metadata"]["resourceVersion"] == row["object"]["metadata"]["resourceVersion"]


@pytest.mark.parametrize(("accept", "kind"), [(TABLE_ACCEPT, "Table"), ("application/json", "Pod")])
async def test_only_a_table_accept_header_gets_tables(kube: Kube, accept: str, kind: str) -> None:
    await kube.create_pod("t2", schedulerName="nobody")
    (event,) = await watch_lines(kube, PODS, 1, accept)
    assert event["type"] == "ADDED" and event["object"]["kind"] == kind


async def test_bookmarks_stay_as_they_are(kube: Kube) -> None:
    await kube.create_pod("t3", schedulerName="nobody")
    events = await watch_lines(
        kube,
        PODS,
        2,
        TABLE_ACCEPT,
        sendInitialEvents="true",
        allowWatchBookmarks="true",
        resourceVersionMatch="NotOlderThan",
    )
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[1]["object"]["kind"] == "Pod"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
