"""Explain the last scheduling attempt of a pod: per-node filter verdicts and top scores.

Asks a running `aiosched run` over its HTTP address (the one serving /metrics) for
/debug/explain/NAMESPACE/POD and prints which plugin rejected each node and why, and the
per-plugin scores of the best nodes.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import aiohttp
import orjson

from observability.explain import render_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pod", metavar="NAMESPACE/POD", help="the pod, e.g. default/web-0")
    parser.add_argument(
        "--http-address",
        default="127.0.0.1:10259",
        metavar="HOST:PORT",
        help="where `aiosched run` serves /metrics and /debug (default %(default)s)",
    )
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")


async def _fetch(address: str, namespace: str, name: str) -> tuple[int, Any]:
    url = f"http://{address}/debug/explain/{namespace}/{name}"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        body = await response.read()
        try:
            return response.status, orjson.loads(body)
        except orjson.JSONDecodeError:
            return response.status, {"error": body.decode("utf-8", "replace")}


def main(args: argparse.Namespace) -> int:
    namespace, sep, name = args.pod.partition("/")
    if not sep:
        namespace, name = "default", args.pod
    try:
        status, body = asyncio.run(_fetch(args.http_address, namespace, name))
    except (aiohttp.ClientError, OSError) as exc:
        print(f"aiosched explain: cannot reach {args.http_address}: {exc}", file=sys.stderr)
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
