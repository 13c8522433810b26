"""Open the scheduler's web view in a browser: a local proxy that adds your bearer token.

A browser sends no bearer token, and the secure port wants one on every /debug request: the
scheduler asks the API server who the token is (TokenReview) and whether that user may `get`
the path (SubjectAccessReview), as kube-scheduler does. Like `kubectl proxy`, `aiosched view`
listens on loopback (127.0.0.1) and forwards the web view's requests to the scheduler's secure
port with the bearer token of your kubeconfig's current user (its `token`, `tokenFile` or
`exec` plugin; --token or $AIOSCHED_TOKEN instead). The scheduler still reviews the token on
every request: the page shows only if the API server lets your user `get` /debug/view and
/debug/view/state (deploy/kubernetes's aiosched:metrics-reader grants `get` on /debug/*).

It lends your token to nothing else: it forwards only GET and HEAD of /debug/view and
/debug/view/state, only to requests addressed to localhost, 127.0.0.1 or [::1] (a web page
elsewhere cannot reach it through DNS rebinding), and listens only on a loopback address. The
token never appears in a URL or a log line. aiosched's secure port authenticates bearer tokens
only: a kubeconfig user with just a client certificate needs --token (e.g. `kubectl create
token SERVICEACCOUNT`).

    aiosched view --http-address HOST:10259 --insecure-skip-tls-verify
    # Open http://127.0.0.1:PORT/debug/view in your browser
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import ssl
import sys
from typing import Final

import aiohttp
from aiohttp import web
from kubernetes_asyncio.client import Configuration

from apimachinery.netutil import is_loopback
from scheduler.app.commands.explain import (
    TOKEN_VARIABLE,
    add_kubeconfig_arguments,
    add_tls_arguments,
    bearer_of,
    foreign_listener,
    tls_setting,
)
from scheduler.client.kubeconfig import KubeconfigError, resolve_configuration
from scheduler.server.webview import STATE_PATH, VIEW_PATH

#: What the proxy forwards: the page and the JSON it polls, nothing else under /debug.
FORWARDED_PATHS: Final = frozenset({VIEW_PATH, STATE_PATH})
#: Host names a request to the proxy may carry (kubectl proxy's default --accept-hosts).
LOOPBACK_HOSTS: Final = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
#: Headers of the scheduler's answer passed on to the browser.
_PASSED_HEADERS: Final = ("Content-Type", "Cache-Control", "Content-Security-Policy")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--http-address",
        default="127.0.0.1:10259",
        metavar="HOST:PORT",
        help="the scheduler's secure port, where `aiosched run` serves /metrics and /debug "
        "(default %(default)s; `kubectl port-forward` one in a cluster)",
    )
    parser.add_argument(
        "--address",
        default="127.0.0.1",
        help="loopback address to listen on (default %(default)s; others are refused)",
    )
    parser.add_argument(
        "--port", type=int, default=0, help="port to listen on (default: a free one)"
    )
    add_kubeconfig_arguments(parser)
    parser.add_argument(
        "--token",
        metavar="TOKEN",
        help=f"bearer token to send instead of the kubeconfig's (default: ${TOKEN_VARIABLE}, "
        "which keeps it out of the process list)",
    )
    add_tls_arguments(parser)
    parser.add_argument(
        "--insecure-http",
        action="store_true",
        help="forward over plain HTTP (an `aiosched run --insecure-http`; no token is needed)",
    )


class Credentials:
    """The Authorization header to send: a fixed token, or the kubeconfig user's, read again
    for each request so that an exec plugin's expired token is refreshed."""

    def __init__(self, token: str = "", configuration: Configuration | None = None) -> None:
        self._token = token
        self._configuration = configuration

    async def authorization(self) -> str:
        if self._token:
            return f"Bearer {self._token}"
        if self._configuration is None:
            return ""
        return await bearer_of(self._configuration)


def host_is_loopback(host: str) -> bool:
    """Whether a request's Host header (with or without a port) names this machine."""
    if host.startswith("["):
        name = host[: host.find("]") + 1]
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    return name.lower() in LOOPBACK_HOSTS


def proxy_app(
    upstream: str,
    credentials: Credentials,
    session: aiohttp.ClientSession,
    tls: ssl.SSLContext | bool,
) -> web.Application:
    """The proxy: `upstream` (scheme://host:port) receives the web view's GETs with the
    Authorization header `credentials` gives; everything else is refused here."""

    async def forward(request: web.Request) -> web.StreamResponse:
        if not host_is_loopback(request.host):
            return web.Response(status=403, text="aiosched view answers only to localhost\n")
        if request.path == "/":
            raise web.HTTPFound(VIEW_PATH)
        if request.path not in FORWARDED_PATHS:
            return web.Response(status=404, text=f"aiosched view forwards only {VIEW_PATH}\n")
        if request.method not in ("GET", "HEAD"):
            return web.Response(status=405, headers={"Allow": "GET, HEAD"})
        headers = {"Accept": request.headers.get("Accept", "*/*")}
        authorization = await credentials.authorization()
        if authorization:
            headers["Authorization"] = authorization
        try:
            async with session.request(
                request.method, upstream + request.path, headers=headers, ssl=tls
            ) as answer:
                body = await answer.read()
                passed = {k: answer.headers[k] for k in _PASSED_HEADERS if k in answer.headers}
                status = answer.status
        except (aiohttp.ClientError, OSError) as exc:
            print(f"aiosched view: cannot reach {upstream}: {exc}", file=sys.stderr)
            return web.Response(status=502, text=f"cannot reach the scheduler at {upstream}\n")
        if status in (401, 403):
            # the scheduler's own Status message (who was refused what); never the token
            print(
                f"aiosched view: the scheduler answered {status} for {request.path}: "
                f"{body[:300].decode('utf-8', 'replace')}",
                file=sys.stderr,
            )
        return web.Response(status=status, body=body, headers=passed)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


async def _credentials(args: argparse.Namespace) -> Credentials:
    token = args.token or os.environ.get(TOKEN_VARIABLE, "")
    if token or args.insecure_http:
        return Credentials(token)
    configuration = await resolve_configuration(args.kubeconfig, args.context)
    credentials = Credentials(configuration=configuration)
    if not await credentials.authorization():
        raise KubeconfigError(
            "the kubeconfig's user has no bearer token (aiosched's secure port authenticates "
            f"bearer tokens only): pass --token or set ${TOKEN_VARIABLE}, e.g. to "
            "`kubectl create token SERVICEACCOUNT`"
        )
    return credentials


async def serve(args: argparse.Namespace) -> None:
    credentials = await _credentials(args)
    scheme = "http" if args.insecure_http else "https"
    upstream = f"{scheme}://{args.http_address}"
    tls = False if args.insecure_http else tls_setting(args)
    async with aiohttp.ClientSession(trust_env=False) as session:
        runner = web.AppRunner(proxy_app(upstream, credentials, session, tls))
        await runner.setup()
        try:
            site = web.TCPSite(runner, args.address, args.port)
            await site.start()
            host, port = runner.addresses[0][:2]
            shown = f"[{host}]" if ":" in host else host
            print(
                f"aiosched view: forwarding to {upstream} with your credentials; "
                f"open http://{shown}:{port}{VIEW_PATH}",
                flush=True,
            )
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.add_signal_handler(signum, stop.set)
            await stop.wait()
        finally:
            await runner.cleanup()


def main(args: argparse.Namespace) -> int:
    if not is_loopback(args.address):
        print(
            f"aiosched view: --address {args.address} is not a loopback address: the proxy "
            "sends your credentials with every request, so it listens on this machine only",
            file=sys.stderr,
        )
        return 2
    refusal = foreign_listener(args.http_address)
    if refusal is not None:
        print(f"aiosched view: {refusal}", file=sys.stderr)
        return 1
    try:
        asyncio.run(serve(args))
    except KubeconfigError as exc:
        print(f"aiosched view: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"aiosched view: cannot listen on {args.address}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0
