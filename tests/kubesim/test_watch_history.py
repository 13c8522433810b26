"""Watch history: kept per resource type and large enough for a SchedulingBasic-sized run."""

from __future__ import annotations

import pytest

from kubesim import errors
from kubesim.store import DEFAULT_HISTORY, Store
from kubesim.watch import WatcherClosed

LEASES = "coordination.k8s.io/leases"


def pod(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {},
    }


def lease(name: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "kube-node-lease"}, "spec": {}}


async def drain(store: Store, key: str, since: int) -> int:
    watcher = store.watch(key, None, None, since)
    try:
        lines = await watcher.next_batch()
    except WatcherClosed:
        return -1
    return len(lines)


async def test_default_history_covers_a_scheduling_basic_run() -> None:
    # 10,000 pods each created, bound and turned Running, interleaved with lease renewals
    store = Store()
    assert DEFAULT_HISTORY >= 100_000
    start = store.resource_version
    pods: dict[str, dict[str, object]] = {}
    leases: dict[str, dict[str, object]] = {}
    for step in range(3):
        for i in range(10_000):
            name = f"p{i}"
            pods[name] = await store.put("pods", {**pod(name), "step": step}, pods.get(name))
            lease_name = f"n{i % 5000}"
            leases[lease_name] = await store.put(
                LEASES, {**lease(lease_name), "step": i}, leases.get(lease_name)
            )
    assert await drain(store, "pods", start) == 30_000  # every pod event since the start


@pytest.mark.parametrize("noise", [0, 50])
async def test_other_resources_do_not_push_out_pod_history(noise: int) -> None:
    store = Store(history_size=10)
    start = store.resource_version
    for i in range(5):
        await store.put("pods", pod(f"p{i}"), None)
        for j in range(noise):
            await store.put(LEASES, lease(f"l{i}-{j}"), None)
    assert await drain(store, "pods", start) == 5


async def test_a_watch_older_than_the_history_is_gone() -> None:
    store = Store(history_size=3)
    start = store.resource_version
    for i in range(5):
        await store.put("pods", pod(f"p{i}"), None)
    with pytest.raises(errors.ApiError) as raised:
        store.watch("pods", None, None, start)
    assert raised.value.code == 410
