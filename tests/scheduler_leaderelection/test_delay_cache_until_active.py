"""delayCacheUntilActive, as kube-scheduler's Run: a standby syncs its informers while another
process holds the Lease, unless the field is true, in which case they wait for the Lease."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kubesim.embedded import EmbeddedCluster
from scheduler.api.times import format_micro_time
from scheduler.app.service import SchedulerService
from scheduler.client.rest import ClientSettings, KubeClient

LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
delayCacheUntilActive: {delay}
leaderElection:
  leaderElect: true
  resourceName: held-elsewhere
  resourceNamespace: default
  leaseDuration: 15s
  renewDeadline: 10s
  retryPeriod: 1s
"""


@pytest.mark.parametrize("delay", [False, True])
async def test_standby_syncs_caches_unless_delayed(tmp_path: Path, delay: bool) -> None:
    async with EmbeddedCluster(nodes=1, kubeconfig_out=tmp_path / "kubeconfig") as cluster:
        client = await KubeClient.connect(
            ClientSettings(kubeconfig=str(cluster.kubeconfig_path), qps=0)
        )
        try:
            now = format_micro_time(datetime.now(UTC))
            status, _ = await client.request(
                "POST",
                LEASES,
                body={
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": "held-elsewhere", "namespace": "default"},
                    "spec": {
                        "holderIdentity": "another-scheduler",
                        "leaseDurationSeconds": 3600,
                        "acquireTime": now,
                        "renewTime": now,
                    },
                },
            )
            assert status == 201
            path = tmp_path / "config.yaml"
            path.write_text(CONFIG.format(delay=str(delay).lower()))
            service = SchedulerService(config_path=path, http_host="127.0.0.1", http_port=0)
            config = service.load_initial_config()
            assert config.delay_cache_until_active is delay
            run = asyncio.create_task(service.run(client, config))
            try:
                async with asyncio.timeout(10):
                    while service.elector is None or service.elector.leader != "another-scheduler":
                        await asyncio.sleep(0.05)
                await asyncio.sleep(0.5)  # time enough for a standby's informers to sync
                assert service.scheduler is not None
                assert not service.elector.is_leader
                assert service.scheduler.synced() is (not delay)
                assert service.scheduler.stats.attempts == 0  # standing by: no scheduling
            finally:
                run.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await run
        finally:
            await client.close()
