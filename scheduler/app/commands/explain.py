"""Explain the last scheduling attempt of a pod: per-node filter verdicts and top scores.

Asks a running `aiosched run` over its secure port (the one serving /metrics) for
/debug/explain/NAMESPACE/POD and prints which plugin rejected each node and why, and the
per-plugin scores of the best nodes. Works for a pending pod (its last attempt) and for a bound
one: the scheduler keeps the last attempt of up to 1000 pods that failed at least once and, per
profile, its last --explain-recent-attempts first-attempt successes (100 by default), so a pod
bound long ago, among many, may be forgotten (`aiosched run --explain-every-attempt` keeps
every success with the failed ones). The secure port wants a bearer token the API server allows
to GET /debug/explain/... (`kubectl create token ...` of a service account bound to the
aiosched:metrics-reader ClusterRole, say): --token, $AIOSCHED_TOKEN, else the bearer token of
your kubeconfig's current user, as `aiosched view` and kubectl send it (--kubeconfig, --context).
It serves a self-signed certificate unless it was given one: pass --certificate-authority, or
--insecure-skip-tls-verify. An `aiosched run --insecure-http` is asked over plain HTTP with
--insecure-http.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import ssl
import sys
from typing import Any

import aiohttp
import orjson

from apimachinery.netutil import is_loopback, listener_uid
from observability.explain import render_text
from scheduler.client.kubeconfig import KubeconfigError, resolve_configuration
from scheduler.server.delegated_auth import CACHE_TTL

TOKEN_VARIABLE = "AIOSCHED_TOKEN"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pod", metavar="NAMESPACE/POD", help="the pod, e.g. default/web-0")
    add_connection_arguments(parser)


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the scheduler's secure port is and how to authenticate to it (also what-if's)."""
    parser.add_argument(
        "--http-address",
        default="127.0.0.1:10259",
        metavar="HOST:PORT",
        help="where `aiosched run` serves /metrics and /debug, its secure port (default "
        "%(default)s)",
    )
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    parser.add_argument(
        "--token",
        metavar="TOKEN",
        help=f"bearer token for the secure port (default: ${TOKEN_VARIABLE}, else the "
        "kubeconfig user's)",
    )
    add_kubeconfig_arguments(parser)
    add_tls_arguments(parser)
    parser.add_argument(
        "--insecure-http",
        action="store_true",
        help="ask over plain HTTP (an `aiosched run --insecure-http`)",
    )


def add_kubeconfig_arguments(parser: argparse.ArgumentParser) -> None:
    """Whose bearer token to send when none is given (explain, what-if and view)."""
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="whose bearer token to send (default: $KUBECONFIG, else ~/.kube/config)",
    )
    parser.add_argument("--context", help="the kubeconfig context (default: its current one)")


async def bearer_of(configuration: Any) -> str:
    """The Authorization header a kubeconfig user's configuration sends ("" when it has no
    bearer token: a client certificate, say); its exec plugin, if any, is run each time."""
    settings = await configuration.auth_settings()
    for setting in settings.values():
        if str(setting.get("key", "")).lower() == "authorization":
            return str(setting.get("value", ""))
    return ""


async def authorization_header(args: argparse.Namespace) -> str:
    """--token, else $AIOSCHED_TOKEN, else the kubeconfig user's bearer token; "" over
    --insecure-http, or when no kubeconfig gives one (the scheduler's 401 then says so)."""
    token = args.token or os.environ.get(TOKEN_VARIABLE, "")
    if token:
        return f"Bearer {token}"
    if args.insecure_http:
        return ""
    try:
        configuration = await resolve_configuration(args.kubeconfig, args.context)
    except KubeconfigError:
        if args.kubeconfig or args.context:
            raise
        return ""
    return await bearer_of(configuration)


def refusal_hint(status: int, allowed: str) -> str:
    """What to do about a 401 or 403 from the secure port; says that answers are cached, so
    that a RoleBinding created a moment ago does not look broken."""
    if status == 401:
        needs = "a bearer token the API server knows (--token, or a kubeconfig user with one)"
    else:
        needs = f"a token allowed to {allowed}"
    return (
        f"it needs {needs}; the scheduler keeps each authentication and authorization answer "
        f"{CACHE_TTL:g} s, denials included, so a token or RoleBinding created just now works "
        f"within {CACHE_TTL:g} s"
    )


def add_tls_arguments(parser: argparse.ArgumentParser) -> None:
    """How to verify the secure port's certificate (explain, what-if and view); read back by
    `tls_setting`."""
    parser.add_argument(
        "--certificate-authority",
        metavar="FILE",
        help="PEM certificate(s) to verify the secure port's certificate with",
    )
    parser.add_argument(
        "--insecure-skip-tls-verify",
        action="store_true",
        help="do not verify the secure port's certificate (the self-signed one aiosched "
        "generates when given none)",
    )


def tls_setting(args: argparse.Namespace) -> ssl.SSLContext | bool:
    """aiohttp's `ssl` argument for the options `add_tls_arguments` added."""
    if args.insecure_skip_tls_verify:
        return False
    if args.certificate_authority:
        return ssl.create_default_context(cafile=args.certificate_authority)
    return True


async def _fetch(args: argparse.Namespace, namespace: str, name: str) -> tuple[int, Any]:
    scheme = "http" if args.insecure_http else "https"
    url = f"{scheme}://{args.http_address}/debug/explain/{namespace}/{name}"
    authorization = await authorization_header(args)
    headers = {"Authorization": authorization} if authorization else {}
    ssl_setting = True if args.insecure_http else tls_setting(args)
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, headers=headers, ssl=ssl_setting) as response,
    ):
        body = await response.read()
        try:
            return response.status, orjson.loads(body)
        except orjson.JSONDecodeError:
            return response.status, {"error": body.decode("utf-8", "replace")}


#: OpenSSL's reasons when a TLS client hello is answered in plain HTTP (an HTTP 400 page is
#: not a TLS record): WRONG_VERSION_NUMBER, or on OpenSSL 3.2+ the record layer's complaints.
_PLAIN_HTTP_REASONS = frozenset(
    {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "HTTP_REQUEST"}
)


def _unreachable_hint(exc: BaseException, insecure_http: bool) -> str:
    """What to change when the request never got an answer: the scheme (a plain-HTTP port
    asked over TLS, or the reverse) or the certificate check."""
    # aiohttp's connector errors subclass ssl.SSLError but carry OpenSSL's reason in os_error
    tls_error = getattr(exc, "os_error", None)
    if not isinstance(tls_error, ssl.SSLError):
        tls_error = exc
    if isinstance(tls_error, ssl.SSLError):
        if getattr(tls_error, "reason", None) in _PLAIN_HTTP_REASONS:
            return (
                " (the port answers plain HTTP: an `aiosched run --insecure-http` is asked "
                "with --insecure-http)"
            )
        return (
            " (pass --certificate-authority, or --insecure-skip-tls-verify for the "
            "self-signed certificate aiosched generates)"
        )
    if isinstance(exc, aiohttp.ClientConnectorError):
        return ""  # nothing listens there: no flag of ours changes that
    if isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError):
        if insecure_http:
            return " (the port may serve TLS: drop --insecure-http)"
        return " (an `aiosched run --insecure-http` is asked with --insecure-http)"
    return ""


def foreign_listener(http_address: str) -> str | None:
    """Why not to ask `http_address`: on a shared machine, a loopback port (the default
    10259 above all) may be served by another user's process, which would get the bearer token
    and answer for a scheduler that is not yours. None when the listener is ours or unknown."""
    host, _, port = http_address.rpartition(":")
    host = host.strip("[]")
    if not is_loopback(host) or not port.isdigit():
        return None
    owner = listener_uid(host, int(port))
    if owner is None or owner == os.getuid():
        return None
    return (
        f"{http_address} is served by another user's process (uid {owner}), not by an "
        "`aiosched run` of yours: pass --http-address with your scheduler's address "
        "(its start-up line says where it serves)"
    )


def main(args: argparse.Namespace) -> int:
    refusal = foreign_listener(args.http_address)
    if refusal is not None:
        print(f"aiosched explain: {refusal}", file=sys.stderr)
        return 1
    namespace, sep, name = args.pod.partition("/")
    if not sep:
        namespace, name = "default", args.pod
    try:
        status, body = asyncio.run(_fetch(args, namespace, name))
    except KubeconfigError as exc:
        print(f"aiosched explain: {exc}", file=sys.stderr)
        return 1
    except (aiohttp.ClientError, OSError) as exc:
        hint = _unreachable_hint(exc, args.insecure_http)
        print(f"aiosched explain: cannot reach {args.http_address}: {exc}{hint}", file=sys.stderr)
        return 1
    if status in (401, 403):
        message = body.get("message") if isinstance(body, dict) else body
        print(
            f"aiosched explain: {args.http_address} refused the request ({message}): "
            f"{refusal_hint(status, 'get /debug/explain/...')}",
            file=sys.stderr,
        )
        return 1
    if status != 200:
        message = body.get("error") if isinstance(body, dict) else body
        print(f"aiosched explain: {namespace}/{name}: {message}", file=sys.stderr)
        return 1
    if args.output == "json":
        sys.stdout.write(orjson.dumps(body, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(render_text(body))
    return 0
