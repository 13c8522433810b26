"""Property: random writes seen through a watch from the start rebuild the final list."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim import errors, subresources
from kubesim.api import NAMESPACES, PODS, Api, ListOptions
from kubesim.store import Store
from kubesim.watch import Watcher, WatcherClosed

NAMES = ("a", "b", "c")
OPS = st.lists(
    st.tuples(
        st.sampled_from(["create", "update", "patch", "delete", "bind", "status"]),
        st.sampled_from(NAMES),
        st.integers(0, 3),
    ),
    max_size=30,
)


def pod(name: str, value: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"v": str(value)}},
        "spec": {"containers": [{"name": "c", "image": f"i{value}"}]},
    }


async def apply(api: Api, op: str, name: str, value: int) -> Any:
    """The object the client is answered with (None: nothing to do)."""
    current = api.store.get(PODS.key, "default", name)
    if op == "create":
        return await api.create(PODS, "default", pod(name, value))
    elif op == "update" and current is not None:
        body = orjson.loads(orjson.dumps(current))
        body["metadata"]["labels"] = {"v": str(value)}
        return await api.update(PODS, "default", name, body)
    elif op == "patch":
        patch = {"metadata": {"annotations": {"n": str(value)}}}
        return await api.patch(PODS, "default", name, "application/merge-patch+json", patch)
    elif op == "status":
        patch = {"status": {"message": str(value)}}
        return await api.patch(
            PODS, "default", name, "application/merge-patch+json", patch, "status"
        )
    elif op == "delete":
        return await api.delete(PODS, "default", name, {"gracePeriodSeconds": 0})
    elif op == "bind":
        binding = {"target": {"kind": "Node", "name": f"node-{value}"}}
        return await subresources.bind(api, "default", name, binding)
    return None


async def replay(watcher: Watcher) -> dict[str, dict[str, Any]]:
    """Stop `watcher` and rebuild, by name, the objects its events end with; asserts the events
    came in resourceVersion order."""
    watcher.close()
    lines: list[bytes] = []
    with contextlib.suppress(WatcherClosed):
        while True:
            lines.extend(await watcher.next_batch())
    seen: dict[str, dict[str, Any]] = {}
    last_rv = 0
    for line in lines:
        event = orjson.loads(line)
        obj = event["object"]
        rv = int(obj["metadata"]["resourceVersion"])
        assert rv > last_rv
        last_rv = rv
        if event["type"] == "DELETED":
            seen.pop(obj["metadata"]["name"])
        else:
            seen[obj["metadata"]["name"]] = obj
    return seen


async def run(ops: list[tuple[str, str, int]], label_selector: str) -> None:
    store = Store(history_size=1000)
    api = Api(store, rng=random.Random(0))
    await store.put(NAMESPACES.key, {"metadata": {"name": "default"}}, None)
    predicate = api.predicate(PODS, ListOptions(label_selector=label_selector))
    watcher = store.watch(PODS.key, "default", predicate, store.resource_version)
    for op, name, value in ops:
        try:
            await apply(api, op, name, value)
        except errors.ApiError as exc:
            assert exc.code in (404, 409, 422), exc.status()
    seen = await replay(watcher)
    listed = api.list_objects(PODS, "default", ListOptions(label_selector=label_selector))
    assert list(seen.values()) == [] or sorted(seen) == sorted(
        o["metadata"]["name"] for o in listed["items"]
    )
    assert {o["metadata"]["name"]: o for o in listed["items"]} == seen


@settings(max_examples=60, deadline=None)
@given(ops=OPS, label_selector=st.sampled_from(["", "v in (1,2)", "v!=0"]))
def test_watch_replays_to_final_list(ops: list[tuple[str, str, int]], label_selector: str) -> None:
    asyncio.run(run(ops, label_selector))
