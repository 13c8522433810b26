"""kubesim in the caller's event loop, for `aiosched run --embedded` and tests.

async with EmbeddedCluster(port=0, nodes=3, kubeconfig_out=path) as cluster:
    cluster.url, cluster.token, cluster.kubeconfig_path
"""

from __future__ import annotations

import ssl
from pathlib import Path
from types import TracebackType

from kubesim.cluster import Cluster, ClusterConfig
from kubesim.controllers.options import ControllerOptions
from kubesim.dra import DraOptions
from kubesim.nodes import NodeTemplate
from kubesim.storage.controllers import StorageOptions
from kubesim.store import DEFAULT_HISTORY


class EmbeddedCluster:
    def __init__(
        self,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        nodes: int = 0,
        kubeconfig_out: Path | str | None = None,
        data_dir: Path | str | None = None,
        pod_start_delay: float = 0.0,
        heartbeat_interval: float = 10.0,
        watch_history: int = DEFAULT_HISTORY,
        bookmark_interval: float = 60.0,
        node_template: NodeTemplate | None = None,
        token: str | None = None,
        tls: bool = True,
        zones: int = 0,
        csi_driver: bool = True,
        csi_attach_limit: int = 0,
        storage_provisioners: tuple[str, ...] = (),
        storage_delay: float = 0.0,
        controllers: bool = True,
        job_duration: float = 5.0,
        node_monitor_grace_period: float = 40.0,
        dra_devices: int = 0,
        dra_models: tuple[str, ...] = (),
        taint_comparison_operators: bool = False,
    ) -> None:
        self._cluster = Cluster(
            ClusterConfig(
                host=host,
                port=port,
                nodes=nodes,
                node_template=node_template or NodeTemplate(zones=zones),
                pod_start_delay=pod_start_delay,
                heartbeat_interval=heartbeat_interval,
                watch_history=watch_history,
                bookmark_interval=bookmark_interval,
                data_dir=Path(data_dir) if data_dir is not None else None,
                kubeconfig_out=Path(kubeconfig_out) if kubeconfig_out is not None else None,
                token=token,
                tls=tls,
                storage=StorageOptions(
                    csi_driver=csi_driver,
                    attach_limit=csi_attach_limit,
                    extra_provisioners=tuple(storage_provisioners),
                    delay=storage_delay,
                ),
                controllers=ControllerOptions(
                    enabled=controllers,
                    job_duration=job_duration,
                    node_monitor_grace_period=node_monitor_grace_period,
                ),
                dra=DraOptions(devices=dra_devices, models=tuple(dra_models) or ("a100",)),
                taint_comparison_operators=taint_comparison_operators,
            )
        )

    @property
    def cluster(self) -> Cluster:
        return self._cluster

    @property
    def url(self) -> str:
        return self._cluster.url

    @property
    def token(self) -> str:
        return self._cluster.token

    def client_ssl(self) -> ssl.SSLContext | bool:
        """Pass as aiohttp's ssl= to verify the server."""
        return self._cluster.client_ssl()

    @property
    def kubeconfig_path(self) -> Path | None:
        return self._cluster.kubeconfig_path

    async def __aenter__(self) -> EmbeddedCluster:
        await self._cluster.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._cluster.stop()
