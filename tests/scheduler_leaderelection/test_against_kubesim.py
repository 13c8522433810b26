"""Two electors against the embedded API server over HTTP: the Lease wire format and the
server's resourceVersion checks, with real (short) timings."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kubesim.embedded import EmbeddedCluster
from scheduler.client.leaderelection import LeaderElector
from scheduler.client.rest import ClientSettings, KubeClient

LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler"


async def wait_until(condition: Any, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


async def test_lease_handover_through_the_api_server(tmp_path: Path) -> None:
    async with EmbeddedCluster(kubeconfig_out=tmp_path / "kubeconfig") as cluster:
        settings = ClientSettings(kubeconfig=str(cluster.kubeconfig_path), qps=0)
        clients = [await KubeClient.connect(settings) for _ in range(2)]
        events: list[str] = []

        def elector(client: KubeClient, identity: str) -> LeaderElector:
            return LeaderElector(
                client,
                lease_namespace="kube-system",
                lease_name="kube-scheduler",
                identity=identity,
                lease_duration=5.0,
                renew_deadline=3.0,
                retry_period=0.2,
                on_started_leading=lambda: events.append(f"{identity} started"),
                on_stopped_leading=lambda: events.append(f"{identity} stopped"),
            )

        first, second = elector(clients[0], "first"), elector(clients[1], "second")
        try:
            async with asyncio.TaskGroup() as group:
                first_run = group.create_task(first.run())
                await wait_until(lambda: first.is_leader)
                second_run = group.create_task(second.run())
                await wait_until(lambda: second.leader == "first")
                assert not second.is_leader
                assert second.readiness() == (False, "not leading; leader is first")

                status, lease = await clients[0].request("GET", LEASE_PATH)
                assert status == 200
                assert lease["spec"]["holderIdentity"] == "first"
                assert lease["spec"]["leaseDurationSeconds"] == 5
                assert lease["spec"]["leaseTransitions"] == 0
                assert lease["spec"]["renewTime"].endswith("Z")

                first_run.cancel()  # shutdown: releases the Lease
                await wait_until(lambda: second.is_leader)
                second_run.cancel()
            status, lease = await clients[0].request("GET", LEASE_PATH)
        finally:
            for client in clients:
                await client.close()

        assert status == 200
        assert lease["spec"]["holderIdentity"] == ""  # released again on the second shutdown
        assert lease["spec"]["leaseTransitions"] == 1
        assert events == ["first started", "first stopped", "second started", "second stopped"]
