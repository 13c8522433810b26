"""`aiosched cluster --workers N`: this process becomes kubesim-store and runs N API front-ends.

The store process keeps what must be one: the store (ordering, resourceVersions, the write-ahead
log, watch history), the simulated kubelets and the controllers. The front-ends
(kubesim-api-1 ... N, frontend.py) accept connections on one listening socket they share, and
do the rest of each request over their replica. A front-end that dies is started again (its
unanswered requests are lost, never an acknowledged write: it acknowledges only what the store
made durable); one that keeps dying ends the cluster with a non-zero exit status.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import time
from collections import deque
from collections.abc import Coroutine
from typing import Any

from kubesim.cluster import Cluster
from kubesim.store_server import StoreServer

log = logging.getLogger(__name__)

STORE_NAME = "kubesim-store"
# a front-end must serve within this long of its start
START_TIMEOUT = 120.0
# more restarts than this within RESTART_WINDOW seconds: something is wrong, stop the cluster
MAX_RESTARTS = 5
RESTART_WINDOW = 60.0
STOP_TIMEOUT = 5.0


class FrontendFailed(RuntimeError):
    """A front-end could not be started, or kept dying."""


def default_workers() -> int:
    """One process on one or two cores, where the store's extra work costs more than a second
    API process gains (measured); otherwise a front-end for every three cores, 2 to 6: a
    front-end spends about 1.5 ms of CPU per pod and the store a fifth of that, so 3000 pods/s
    take about five front-ends and the store's core (docs/kubesim-performance.md)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return 1 if cores <= 2 else max(2, min(6, cores // 3))


class Workers:
    """The front-end processes around `cluster`'s store; `await start()`, then `failed`."""

    def __init__(
        self, cluster: Cluster, count: int, command: tuple[str, ...] = ("-m", "kubesim.frontend")
    ) -> None:
        self.cluster = cluster
        self.count = count
        self._command = command  # what runs a front-end, after the Python interpreter
        self.failed: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._listener: socket.socket | None = None
        self._server: StoreServer | None = None
        self._processes: dict[int, asyncio.subprocess.Process] = {}
        self._restarts: deque[float] = deque()
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = False

    async def start(self) -> None:
        cluster = self.cluster
        cluster.open_store()
        self._listener = cluster.bind()
        self._listener.listen(1024)
        cert = cluster.cert
        hello = {
            "token": cluster.token,
            "cert_pem": cert.cert_pem.decode() if cert is not None else None,
            "key_pem": cert.key_pem.decode() if cert is not None else None,
            "bookmark_interval": cluster.config.bookmark_interval,
            "watch_history": cluster.config.watch_history,
        }
        self._server = StoreServer(cluster.store, hello, cluster.switch_kubelet)
        starting = [self._start_frontend(index) for index in range(1, self.count + 1)]
        await asyncio.gather(*starting)
        # after the front-ends connected: their watch history holds the bootstrap's writes, as
        # the one process's does (a watch from resourceVersion 1 is served, not 410 Gone)
        await cluster.bootstrap()
        cluster.announce()
        await cluster.start_controllers()

    @staticmethod
    def name(index: int) -> str:
        return f"kubesim-api-{index}"

    async def _start_frontend(self, index: int) -> None:
        assert self._listener is not None and self._server is not None
        ours, theirs = socket.socketpair()
        listen_fd = self._listener.fileno()
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            *self._command,
            "--name",
            self.name(index),
            "--store-fd",
            str(theirs.fileno()),
            "--listen-fd",
            str(listen_fd),
            pass_fds=(theirs.fileno(), listen_fd),
        )
        theirs.close()
        self._processes[index] = process
        reader, writer = await asyncio.open_unix_connection(sock=ours)
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def on_ready() -> None:
            if not ready.done():
                ready.set_result(None)

        self._spawn(self._server.serve(reader, writer, on_ready))
        exited: asyncio.Future[Any] = asyncio.ensure_future(process.wait())
        await asyncio.wait([ready, exited], timeout=START_TIMEOUT, return_when="FIRST_COMPLETED")
        if not ready.done():
            exited.cancel()
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            raise FrontendFailed(
                f"{self.name(index)} did not start (exit status {process.returncode})"
            )
        exited.cancel()
        self._spawn(self._watch(index, process))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _watch(self, index: int, process: asyncio.subprocess.Process) -> None:
        code = await process.wait()
        if self._stopping:
            return
        name = self.name(index)
        now = time.monotonic()
        self._restarts.append(now)
        while self._restarts and self._restarts[0] < now - RESTART_WINDOW:
            self._restarts.popleft()
        if len(self._restarts) > MAX_RESTARTS:
            self._fail(
                f"{name} exited with status {code}, {len(self._restarts)} times within "
                f"{RESTART_WINDOW:.0f} s"
            )
            return
        print(
            f"kubesim: {name} exited with status {code}; starting it again",
            file=sys.stderr,
            flush=True,
        )
        try:
            await self._start_frontend(index)
        except (FrontendFailed, OSError) as exc:
            self._fail(str(exc))

    def _fail(self, why: str) -> None:
        if not self.failed.done():
            self.failed.set_result(why)

    async def stop(self) -> None:
        """Stop the front-ends (SIGTERM, then SIGKILL after STOP_TIMEOUT), then the store."""
        self._stopping = True
        for process in self._processes.values():
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
        for process in self._processes.values():
            try:
                await asyncio.wait_for(process.wait(), STOP_TIMEOUT)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.cluster.stop()
        if self._listener is not None:
            self._listener.close()
