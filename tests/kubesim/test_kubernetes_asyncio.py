"""An unmodified client (kubernetes-asyncio) against a listening kubesim."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config, watch
from kubernetes_asyncio.client.rest import ApiException

from kubesim.embedded import EmbeddedCluster


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[tuple[client.CoreV1Api, EmbeddedCluster]]:
    kubeconfig = tmp_path / "kubeconfig"
    async with EmbeddedCluster(nodes=2, kubeconfig_out=kubeconfig, watch_history=5) as cluster:
        api_client = await config.new_client_from_config(config_file=str(kubeconfig))
        async with api_client:
            yield client.CoreV1Api(api_client), cluster


def pod(name: str) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")]),
    )


async def test_kubeconfig_is_private_and_token_required(core: Any) -> None:
    _, cluster = core
    assert cluster.kubeconfig_path.stat().st_mode & 0o077 == 0
    assert cluster.token in cluster.kubeconfig_path.read_text()


async def test_list_then_watch(core: Any) -> None:
    api, _ = core
    nodes = await api.list_node()
    assert [n.metadata.name for n in nodes.items] == ["node-0", "node-1"]
    pods = await api.list_namespaced_pod("default")
    seen: list[tuple[str, str]] = []

    async def consume() -> None:
        async with watch.Watch().stream(
            api.list_namespaced_pod,
            "default",
            resource_version=pods.metadata.resource_version,
            timeout_seconds=5,
        ) as stream:
            async for event in stream:
                seen.append((event["type"], event["object"].metadata.name))
                if len(seen) == 2:
                    return

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.1)
    await api.create_namespaced_pod("default", pod("p1"))
    await api.delete_namespaced_pod("p1", "default")
    await asyncio.wait_for(task, 5)
    assert seen == [("ADDED", "p1"), ("DELETED", "p1")]


async def test_expired_watch_answers_410_and_relist_works(core: Any) -> None:
    api, _ = core
    start = (await api.list_namespaced_pod("default")).metadata.resource_version
    for i in range(8):  # more than the 5 events of history kept
        await api.create_namespaced_pod("default", pod(f"p{i}"))
    with pytest.raises(ApiException) as info:
        async with watch.Watch().stream(
            api.list_namespaced_pod, "default", resource_version=start, timeout_seconds=2
        ) as stream:
            async for _ in stream:
                pass
    assert info.value.status == 410
    relisted = await api.list_namespaced_pod("default")
    assert len(relisted.items) == 8


async def test_conflict_on_stale_update(core: Any) -> None:
    api, _ = core
    created = await api.create_namespaced_pod("default", pod("c"))
    created.metadata.labels = {"a": "1"}
    await api.replace_namespaced_pod("c", "default", created)
    created.metadata.labels = {"a": "2"}
    with pytest.raises(ApiException) as info:
        await api.replace_namespaced_pod("c", "default", created)
    assert info.value.status == 409


async def test_double_binding_refused(core: Any) -> None:
    api, _ = core
    await api.create_namespaced_pod("default", pod("b"))

    def body(node: str) -> client.V1Binding:
        return client.V1Binding(
            metadata=client.V1ObjectMeta(name="b"),
            target=client.V1ObjectReference(kind="Node", name=node),
        )

    # the answer is a Status, which the generated V1Binding model cannot hold: read it raw
    first = await api.create_namespaced_pod_binding(
        "b", "default", body("node-0"), _preload_content=False
    )
    assert first.status == 201
    with pytest.raises(ApiException) as info:
        await api.create_namespaced_pod_binding("b", "default", body("node-1"))
    assert info.value.status == 409
    got = await api.read_namespaced_pod("b", "default")
    assert got.spec.node_name == "node-0"


async def test_remote_bind_refused_without_flag() -> None:
    from kubesim.cluster import RemoteBindRefused

    with pytest.raises(RemoteBindRefused):
        EmbeddedCluster(host="0.0.0.0")
