"""kubesim's --workers layout inside the test's event loop: a StoreServer over a cluster's store
and front-ends (replica + API app) connected to it by socket pairs, exactly as the store process
serves kubesim-api-N processes, without starting processes."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

from aiohttp import web

from kubesim.cluster import Cluster
from kubesim.frontend import build_frontend_app
from kubesim.replica import ReplicaStore
from kubesim.store import Store
from kubesim.store_server import StoreServer


class Frontend:
    def __init__(self, replica: ReplicaStore, hello: dict[str, Any], tasks: list[Any]) -> None:
        self.replica = replica
        self.hello = hello
        self._tasks = tasks

    def app(self) -> web.Application:
        return build_frontend_app(self.replica, self.hello)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def no_kubelets(name: str, action: str) -> bool:
    return False


class StoreSide:
    """One StoreServer; `connect()` adds a front-end."""

    def __init__(self, store: Store, token: str, switch: Any = no_kubelets) -> None:
        hello = {"token": token, "bookmark_interval": 0.2, "watch_history": 1000}
        self.server = StoreServer(store, hello, switch)
        self.frontends: list[Frontend] = []

    @classmethod
    def of(cls, cluster: Cluster, token: str) -> StoreSide:
        return cls(cluster.store, token, cluster.switch_kubelet)

    async def connect(self) -> Frontend:
        ours, theirs = socket.socketpair()
        store_reader, store_writer = await asyncio.open_unix_connection(sock=ours)
        serving = asyncio.create_task(self.server.serve(store_reader, store_writer))
        reader, writer = await asyncio.open_unix_connection(sock=theirs)
        hello = await ReplicaStore.read_hello(reader)
        replica = ReplicaStore(history_size=int(hello["watch_history"]))
        await replica.attach(reader, writer)
        following = asyncio.create_task(replica.follow(reader))
        frontend = Frontend(replica, hello, [following, serving])
        self.frontends.append(frontend)
        return frontend

    async def close(self) -> None:
        for frontend in self.frontends:
            await frontend.close()
