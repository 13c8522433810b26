"""An embedded cluster (kubesim, over HTTPS in this event loop) with a Scheduler running on it.

The test talks to the cluster through its own aiohttp session, like any outside client; the
scheduler reaches it through its normal client. Nothing is faked.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from kubesim.embedded import EmbeddedCluster
from profiles.api import load_config_text
from scheduler.client.rest import ClientSettings, KubeClient
from scheduler.cycle.profile_set import registry_for_config
from scheduler.cycle.scheduler import Scheduler, SchedulerOptions
from scheduler.framework.registry import Registry
from scheduler.plugins.registry import in_tree_registry

MINIMAL_CONFIG = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


class Api:
    """Raw JSON requests against the cluster as an outside client."""

    def __init__(self, cluster: EmbeddedCluster) -> None:
        self._url = cluster.url
        self._session = aiohttp.ClientSession(
            headers={"Authorization": f"Bearer {cluster.token}"},
            connector=aiohttp.TCPConnector(ssl=cluster.client_ssl()),
        )

    async def close(self) -> None:
        await self._session.close()

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        data = None if body is None else orjson.dumps(body)
        async with self._session.request(
            method, self._url + path, data=data, headers={"Content-Type": content_type}
        ) as response:
            raw = await response.read()
            return response.status, orjson.loads(raw) if raw else None

    async def create(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        status, answer = await self.request("POST", path, body)
        assert status == 201, (status, answer)
        return dict(answer)

    async def create_node(
        self,
        name: str,
        cpu: str = "4",
        memory: str = "32Gi",
        pods: str = "110",
        labels: Mapping[str, str] | None = None,
        taints: list[dict[str, str]] | None = None,
    ) -> dict[str, Any]:
        resources = {"cpu": cpu, "memory": memory, "pods": pods}
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            },
            "spec": {"taints": taints} if taints else {},
            "status": {"capacity": resources, "allocatable": resources},
        }
        return await self.create("/api/v1/nodes", node)

    async def create_pod(
        self,
        name: str,
        cpu: str = "100m",
        memory: str = "100Mi",
        *,
        namespace: str = "default",
        scheduler_name: str | None = None,
        gates: list[str] | None = None,
        extra_spec: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
            **(extra_spec or {}),
        }
        if scheduler_name:
            spec["schedulerName"] = scheduler_name
        if gates:
            spec["schedulingGates"] = [{"name": gate} for gate in gates]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
        return await self.create(f"/api/v1/namespaces/{namespace}/pods", pod)

    async def create_priority_class(self, name: str, value: int) -> dict[str, Any]:
        return await self.create(
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )

    async def get_pod(self, name: str, namespace: str = "default") -> dict[str, Any]:
        status, pod = await self.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
        assert status == 200, (status, pod)
        return dict(pod)

    async def events_for(self, name: str, namespace: str = "default") -> list[dict[str, Any]]:
        status, body = await self.request(
            "GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
        )
        assert status == 200, body
        return [e for e in body["items"] if e.get("regarding", {}).get("name") == name]


class BindingRecorder:
    """Watches pods from the start and records every transition to bound, per uid."""

    def __init__(self) -> None:
        self.bindings: dict[str, list[str]] = {}

    async def run(self, cluster: EmbeddedCluster) -> None:
        seen: dict[str, str] = {}
        headers = {"Authorization": f"Bearer {cluster.token}"}
        connector = aiohttp.TCPConnector(ssl=cluster.client_ssl())
        async with aiohttp.ClientSession(headers=headers, connector=connector) as session:
            url = f"{cluster.url}/api/v1/pods?watch=1&resourceVersion=0"
            timeout = aiohttp.ClientTimeout(total=None)
            async with session.get(url, timeout=timeout) as response:
                async for line in response.content:
                    event = orjson.loads(line)
                    pod = event["object"]
                    uid = pod["metadata"]["uid"]
                    node = pod.get("spec", {}).get("nodeName", "")
                    if node and not seen.get(uid):
                        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
                        self.bindings.setdefault(key, []).append(node)
                    seen[uid] = node


@dataclass
class Harness:
    cluster: EmbeddedCluster
    api: Api
    scheduler: Scheduler
    bindings: BindingRecorder

    async def wait_for(
        self, predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition"
    ) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if asyncio.iscoroutine(result):
                result = await result
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}")
            await asyncio.sleep(0.05)

    async def wait_nodes_cached(self, count: int) -> None:
        """Wait until the scheduler's cache holds `count` nodes, so a pod created next
        is scheduled on its first attempt (its watch event could otherwise win the race)."""
        await self.wait_for(
            lambda: self.scheduler.cache.node_count() >= count, what=f"{count} nodes in cache"
        )

    async def wait_bound(self, name: str, timeout: float = 10.0) -> str:
        async def bound() -> str:
            pod = await self.api.get_pod(name)
            return str(pod.get("spec", {}).get("nodeName", ""))

        return str(await self.wait_for(bound, timeout, f"pod {name} to be bound"))


@contextlib.asynccontextmanager
async def running_scheduler(
    tmp_path: Path,
    config_text: str = MINIMAL_CONFIG,
    registry: Registry | None = None,
    nodes: int = 0,
    feature_gates: Mapping[str, bool] | None = None,
) -> AsyncIterator[Harness]:
    registry = registry if registry is not None else in_tree_registry()
    async with EmbeddedCluster(nodes=nodes, kubeconfig_out=tmp_path / "kubeconfig") as cluster:
        api = Api(cluster)
        client = await KubeClient.connect(
            ClientSettings(kubeconfig=str(cluster.kubeconfig_path), qps=0)
        )
        config = load_config_text(config_text, registry_for_config(registry))
        options = SchedulerOptions(seed=7, feature_gates=dict(feature_gates or {}))
        scheduler = Scheduler(client, config, registry, options)
        recorder = BindingRecorder()
        async with asyncio.TaskGroup() as group:
            watch = group.create_task(recorder.run(cluster))
            run = group.create_task(scheduler.run())
            await asyncio.wait_for(scheduler.wait_for_cache_sync(), 10)
            try:
                yield Harness(cluster, api, scheduler, recorder)
            finally:
                run.cancel()
                watch.cancel()
                # Both must have ended before their client closes: a scheduler still stopping
                # (its event writers, say) would otherwise use a closed session.
                await asyncio.wait({run, watch})
                await client.close()
                await api.close()
