"""Assembles a running kubesim: store (+ data dir), API, HTTP server, simulated nodes, storage
controllers and the simulated DRA driver."""

from __future__ import annotations

import logging
import random
import secrets
import socket
import ssl
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from apimachinery.netutil import is_loopback
from kubesim import identity, kubeconfig, openapi, persistence, rbac, tls
from kubesim.api import Api
from kubesim.controllers.options import ControllerOptions
from kubesim.controllers.setup import add_node_routes, build_manager, switch_kubelet
from kubesim.dra import DraOptions, SimulatedDriver
from kubesim.events import DEFAULT_EVENT_TTL, EventTTL
from kubesim.meta import Clock, Obj, new_uid, rfc3339
from kubesim.nodes import NodeSimulator, NodeTemplate
from kubesim.server import ServerOptions, build_app
from kubesim.storage.controllers import StorageControllers, StorageOptions
from kubesim.store import DEFAULT_HISTORY, Store

log = logging.getLogger(__name__)

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# the two PriorityClasses every API server creates (pkg/apis/scheduling: SystemPriorityClasses)
SYSTEM_PRIORITY_CLASSES = (
    (
        "system-node-critical",
        2000001000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2000000000,
        "Used for system critical pods that must run in the "
        "cluster, but can be moved to another node if necessary.",
    ),
)


class RemoteBindRefused(ValueError):
    """A non-loopback address was asked for without allow_remote_bind."""


@dataclass(frozen=True, slots=True)
class ClusterConfig:
    host: str = "127.0.0.1"
    port: int = 0
    allow_remote_bind: bool = False
    nodes: int = 0
    node_template: NodeTemplate = field(default_factory=NodeTemplate)
    pod_start_delay: float = 0.0
    heartbeat_interval: float = 10.0
    watch_history: int = DEFAULT_HISTORY
    bookmark_interval: float = 60.0
    data_dir: Path | None = None
    kubeconfig_out: Path | None = None
    token: str | None = None
    tls: bool = True  # kubectl sends the token only over TLS
    storage: StorageOptions = field(default_factory=StorageOptions)
    controllers: ControllerOptions = field(default_factory=ControllerOptions)
    # the simulated DRA driver gpu.kubesim.io (devices=0: none)
    dra: DraOptions = field(default_factory=DraOptions)
    # nodes whose simulated kubelet starts stopped (POST /kubesim/nodes/{name}/start wakes it)
    stopped_nodes: tuple[str, ...] = ()
    # kube-apiserver --event-ttl: seconds an Event is kept after its last write; 0: forever
    event_ttl: float = DEFAULT_EVENT_TTL
    # the TaintTolerationComparisonOperators gate (alpha, off by default): Lt / Gt tolerations
    # accepted by validation and compared by the taint eviction and DaemonSet controllers
    taint_comparison_operators: bool = False


def _exposure(host: str, use_tls: bool) -> str:
    """What listening on a non-loopback `host` exposes, in the transport actually used."""
    if use_tls:
        return (
            f"the API on {host} is reachable from other hosts over https with a self-signed "
            "certificate; anyone who can reach it and holds the admin token controls the cluster"
        )
    return (
        f"the API on {host} is reachable from other hosts over plain HTTP (--insecure-http): "
        "no TLS, so the admin token and every object cross the network unencrypted, and "
        "anyone who can reach it and sees the token controls the cluster"
    )


def remote_bind_refusal(host: str, use_tls: bool) -> str:
    return (
        f"refusing to listen on non-loopback address {host}: {_exposure(host, use_tls)}; "
        "pass --allow-remote-bind to do it anyway"
    )


def remote_bind_warning(host: str, use_tls: bool) -> str:
    return f"WARNING: listening on non-loopback address {host} (--allow-remote-bind): " + (
        _exposure(host, use_tls)
    )


class Cluster:
    """One kubesim instance; `await start()` then `await stop()`."""

    def __init__(
        self, config: ClusterConfig, clock: Clock = time.time, rng: random.Random | None = None
    ) -> None:
        if not config.allow_remote_bind and not is_loopback(config.host):
            raise RemoteBindRefused(remote_bind_refusal(config.host, config.tls))
        self.config = config
        self.token = config.token or secrets.token_urlsafe(32)
        self.store = Store(history_size=config.watch_history)
        self.api = Api(
            self.store,
            clock=clock,
            rng=rng or random.Random(),
            taint_comparison_operators=config.taint_comparison_operators,
        )
        self.simulator = NodeSimulator(
            self.api,
            config.node_template,
            config.pod_start_delay,
            config.heartbeat_interval,
            config.controllers.job_duration,
            config.stopped_nodes,
            # the kubelets' container events come with the controllers: without them kubesim is
            # scheduler_perf's bare API server (the bench), whose store holds no such events
            events=config.controllers.enabled,
        )
        self.event_ttl = EventTTL(self.store, config.event_ttl)
        self.storage = StorageControllers(self.api, config.storage)
        self.dra = SimulatedDriver(self.api, config.dra)
        self.controllers = build_manager(self.api, config.controllers)
        self._wal: persistence.WriteAheadLog | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0
        self.cert: tls.ServingCertificate | None
        if config.data_dir is not None:  # keep token and certificate across restarts
            persistence.prepare_data_dir(config.data_dir)
            self.token, self.cert = identity.load_or_create(
                config.data_dir, config.host, config.token, config.tls
            )
        else:
            self.cert = tls.self_signed(config.host) if config.tls else None

    @property
    def url(self) -> str:
        host = self.config.host
        shown = f"[{host}]" if ":" in host else host
        scheme = "https" if self.cert is not None else "http"
        return f"{scheme}://{shown}:{self.port}"

    def client_ssl(self) -> ssl.SSLContext | bool:
        """What an aiohttp client needs to verify this server (True: plain http)."""
        return self.cert.client_context() if self.cert is not None else True

    @property
    def kubeconfig_path(self) -> Path | None:
        return self.config.kubeconfig_out

    async def start(self) -> None:
        """kubesim in this one process: store, API and controllers."""
        self.open_store()
        await self.bootstrap()
        await self.serve_http(self.bind())
        self.announce()
        await self.start_controllers()

    def open_store(self) -> None:
        """Replay the data directory, if any (`bootstrap` then adds what is missing)."""
        if self.config.data_dir is not None:
            self._wal = persistence.open_data_dir(self.config.data_dir, self.store)

    async def switch_kubelet(self, name: str, action: str) -> bool:
        return switch_kubelet(self.simulator, name, action)

    def bind(self) -> socket.socket:
        """The API's listening socket, bound (port 0 picks one: self.port tells which)."""
        sock = socket.socket(
            socket.AF_INET6 if ":" in self.config.host else socket.AF_INET, socket.SOCK_STREAM
        )
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.config.host, self.config.port))
        self.port = sock.getsockname()[1]
        return sock

    async def serve_http(self, sock: socket.socket) -> None:
        openapi.prepare()
        app = build_app(
            self.api,
            ServerOptions(token=self.token, bookmark_interval=self.config.bookmark_interval),
        )
        add_node_routes(app, self.switch_kubelet)
        if self._wal is not None:  # outermost: even a 401/403 answers only durable state
            app.middlewares.insert(0, persistence.durable_reads_middleware(self.store))
        self._runner = web.AppRunner(
            app, access_log=None, handler_cancellation=False, shutdown_timeout=1.0
        )
        await self._runner.setup()
        context = self.cert.server_context() if self.cert is not None else None
        site = web.SockSite(self._runner, sock, ssl_context=context)
        await site.start()

    def announce(self) -> None:
        """Warn about a remote bind; write the kubeconfig (once the API answers)."""
        if not is_loopback(self.config.host):
            warning = remote_bind_warning(self.config.host, self.cert is not None)
            print(f"kubesim: {warning}", file=sys.stderr, flush=True)
            if log.hasHandlers():  # else logging's last resort would print it a second time
                log.warning("%s", warning)
        if self.config.kubeconfig_out is not None:
            kubeconfig.write(
                self.config.kubeconfig_out,
                self.url,
                self.token,
                self.cert.cert_pem if self.cert is not None else None,
            )

    async def start_controllers(self) -> None:
        """The in-process controllers: simulated kubelets first, then storage, which so finds
        the initial nodes stored and writes their CSINodes in a few large commits."""
        self.event_ttl.start()
        await self.simulator.start(self.config.nodes)
        await self.storage.start()
        await self.dra.start()
        if self.config.controllers.enabled:
            await self.controllers.start()

    async def stop(self) -> None:
        await self.controllers.stop()
        await self.storage.stop()
        await self.dra.stop()
        await self.simulator.stop()
        await self.event_ttl.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._wal is not None:
            await self._wal.drain()
            self._wal.close()
            self._wal = None

    async def bootstrap(self) -> None:
        await self._bootstrap()

    async def _bootstrap(self) -> None:
        """What a fresh API server has: system namespaces and priority classes, the bootstrap
        RBAC policy (and, before any claim can be created, the simulated driver's CSIDriver and
        default StorageClass)."""
        now = rfc3339(self.api.clock())
        for name in SYSTEM_NAMESPACES:
            if self.store.get("namespaces", "", name) is None:
                await self._system_create(
                    "namespaces",
                    {
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
                        "spec": {"finalizers": ["kubernetes"]},
                        "status": {"phase": "Active"},
                    },
                    now,
                )
        for name, value, description in SYSTEM_PRIORITY_CLASSES:
            key = "scheduling.k8s.io/priorityclasses"
            if self.store.get(key, "", name) is None:
                await self._system_create(
                    key,
                    {
                        "apiVersion": "scheduling.k8s.io/v1",
                        "kind": "PriorityClass",
                        "metadata": {"name": name},
                        "value": value,
                        "globalDefault": False,
                        "description": description,
                        "preemptionPolicy": "PreemptLowerPriority",
                    },
                    now,
                )
        for key, obj in rbac.bootstrap_objects():
            if self.store.get(key, "", obj["metadata"]["name"]) is None:
                await self._system_create(key, obj, now)
        await self.storage.bootstrap()
        await self.dra.bootstrap()

    async def _system_create(self, key: str, obj: Obj, now: str) -> Any:
        meta = obj["metadata"]
        meta["uid"] = new_uid(self.api.rng)
        meta["creationTimestamp"] = now
        if "spec" in obj:
            meta["generation"] = 1
        return await self.store.put(key, obj, None)
