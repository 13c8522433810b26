"""kubesim-api-N: one API front-end process of `aiosched cluster --workers N`.

It serves the Kubernetes API (TLS, HTTP, authentication and RBAC, decoding, defaults, admission,
validation, responses, watches) on the listening socket it shares with the other front-ends,
over a replica of the store (replica.py) fed by the store process through the Unix socket it was
given. It exits when the store process goes away; the store process starts it again if it dies.

    python -m kubesim.frontend --name kubesim-api-1 --store-fd 5 --listen-fd 6
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import random
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from apimachinery.certificates import server_context
from apimachinery.eventloop import run_event_loop
from kubesim import errors, openapi, process_names
from kubesim.api import Api
from kubesim.cli import tune_garbage_collector
from kubesim.controllers.setup import add_node_routes
from kubesim.replica import ReplicaStore, StoreGone, replica_stale
from kubesim.server import ServerOptions, build_app
from kubesim.store import request_committed

log = logging.getLogger(__name__)

# a request whose compare-and-swap lost to another write is computed again over the caught-up
# replica at most this many times, then answered 409 Conflict
MAX_ATTEMPTS = 5


T = TypeVar("T")


async def consistently(replica: ReplicaStore, attempt: Callable[[], Awaitable[T]]) -> T:
    """Run `attempt` once the replica reached the store's newest durable state (a consistent
    read, also for the reads a write does); again, over the newer state, while its commit lost
    the compare-and-swap to another write and it wrote nothing (at most MAX_ATTEMPTS times:
    then the 409 Conflict stands)."""
    await replica.sync()
    for tries in range(1, MAX_ATTEMPTS + 1):
        replica_stale.set(False)
        request_committed.set(False)
        try:
            result = await attempt()
        except errors.ApiError:
            if tries < MAX_ATTEMPTS and replica_stale.get() and not request_committed.get():
                continue
            raise
        if tries < MAX_ATTEMPTS and replica_stale.get() and not request_committed.get():
            continue  # the 409 was answered as a response (server._serve)
        return result
    raise AssertionError("unreachable")


def consistent_middleware(replica: ReplicaStore) -> Middleware:
    """Outermost: every request runs `consistently`."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await consistently(replica, lambda: handler(request))
        except errors.ApiError as exc:  # the store is unreachable
            return web.json_response(exc.status(), status=exc.code)

    return middleware


def build_frontend_app(replica: ReplicaStore, hello: dict[str, Any]) -> web.Application:
    """The API over `replica`, with the settings of the store's hello."""
    openapi.prepare()
    app = build_app(
        Api(replica, rng=random.Random()),
        ServerOptions(token=hello["token"], bookmark_interval=float(hello["bookmark_interval"])),
    )
    add_node_routes(app, replica.control_node)
    app.middlewares.insert(0, consistent_middleware(replica))
    return app


async def serve(name: str, store_sock: socket.socket, listen_sock: socket.socket) -> int:
    reader, writer = await asyncio.open_unix_connection(sock=store_sock)
    hello: dict[str, Any] = await ReplicaStore.read_hello(reader)
    replica = ReplicaStore(history_size=int(hello["watch_history"]))
    await replica.attach(reader, writer)
    app = build_frontend_app(replica, hello)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=False, shutdown_timeout=1.0)
    await runner.setup()
    cert, key = hello.get("cert_pem"), hello.get("key_pem")
    context = server_context(cert.encode(), key.encode()) if cert and key else None
    await web.SockSite(runner, listen_sock, ssl_context=context).start()
    tune_garbage_collector()
    following = asyncio.create_task(replica.follow(reader))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the store, which stops us
    await replica.ready()
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait([following, stopping], return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    code = 0
    if following.done():
        exc = following.exception()
        if exc is not None and not isinstance(exc, StoreGone | ConnectionError):
            print(f"{name}: the store's stream failed: {exc!r}", file=sys.stderr, flush=True)
            code = 1
    await runner.cleanup()
    following.cancel()
    writer.close()
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kubesim.frontend")
    parser.add_argument("--name", required=True, help="the process name shown by ps")
    parser.add_argument("--store-fd", type=int, required=True, help="Unix socket to the store")
    parser.add_argument("--listen-fd", type=int, required=True, help="the API's listening socket")
    args = parser.parse_args(argv)
    process_names.set_process_name(args.name)
    process_names.die_with_parent()
    store_sock = socket.socket(fileno=args.store_fd)
    listen_sock = socket.socket(fileno=args.listen_fd)
    try:
        return run_event_loop(serve(args.name, store_sock, listen_sock))
    except StoreGone:
        return 0


if __name__ == "__main__":
    sys.exit(main())
