"""Ask a running scheduler where a pod would go right now, and why, without scheduling it.

Sends the Pod manifest (POD.yaml, or - for standard input) to the scheduler's POST
/debug/what-if and prints the node it would choose, which plugin rejected each node and the
per-plugin scores of the best nodes, in the form `aiosched explain` uses. The pod is not
created, bound or queued, and the scheduler's queue and cache are not changed. --scheduler-name
picks the profile (default: the pod's spec.schedulerName, else default-scheduler); --config
evaluates with a KubeSchedulerConfiguration that is not live (to try a profile change before
reloading it). When no node fits, the answer says that the pod would need preemption: what-if
does not run PostFilter (preemption) or extenders. Authentication and TLS options are those of
`aiosched explain` (--token, else your kubeconfig user's bearer token); the token must be
allowed to POST /debug/what-if.

For a gang, give a scheduling.k8s.io/v1beta1 PodGroup and its member Pods (several YAML
documents, or a `kind: List`), or Pods naming a PodGroup the cluster has, or one Pod with
--replicas N (N copies named NAME-0 ... NAME-(N-1)). The scheduler runs the PodGroup cycle's
algorithm (GangScheduling's PlacementFeasible; topology placements when
TopologyAwareWorkloadScheduling is on) and answers whether minCount members can be placed,
which member would go where, and which member blocks the quorum and why.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import sys
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

from observability.explain import render_text
from scheduler.app.commands.explain import (
    add_connection_arguments,
    authorization_header,
    foreign_listener,
    refusal_hint,
    tls_setting,
)
from scheduler.client.kubeconfig import KubeconfigError

PROG = "aiosched what-if"


class UsageError(Exception):
    """Bad local input: reported as one line, before anything is sent."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "pod",
        metavar="POD.yaml",
        help="the Pod manifest, or - to read stdin; for a gang: a PodGroup and its Pods "
        "(several documents or a List), or Pods naming a PodGroup the cluster has",
    )
    parser.add_argument(
        "--replicas",
        type=_replicas,
        metavar="N",
        help="ask about N copies of the one Pod in POD.yaml (named NAME-0 ... NAME-(N-1)) as a "
        "gang; the Pod names its PodGroup in spec.schedulingGroup.podGroupName, or POD.yaml "
        "also holds the PodGroup",
    )
    parser.add_argument(
        "--scheduler-name",
        metavar="NAME",
        help="the profile to evaluate with (default: the pod's spec.schedulerName, else "
        "default-scheduler)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="evaluate with this KubeSchedulerConfiguration instead of the live one; it is "
        "validated and built as a reload would, but not installed",
    )
    add_connection_arguments(parser)


def _read(path: str, what: str) -> str:
    try:
        if path == "-":
            return sys.stdin.read()
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {what} {path}: {exc}") from None


def _replicas(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid count {text!r}") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError("must be between 1 and 1000")
    return value


def _documents(path: str) -> list[Any]:
    try:
        documents = [d for d in yaml.safe_load_all(_read(path, "pod manifest")) if d is not None]
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "unreadable"
        raise UsageError(f"{path}: invalid YAML: {first}") from None
    items: list[Any] = []
    for document in documents:
        if isinstance(document, dict) and document.get("kind") == "List":
            items.extend(document.get("items") or [])
        else:
            items.append(document)
    return items


def load_pod(path: str, replicas: int | None = None) -> dict[str, Any]:
    """The manifest in `path`: one Pod, or for a gang a `kind: List` of a PodGroup and Pods."""
    items = _documents(path)
    for item in items:
        if not isinstance(item, dict) or item.get("kind") not in ("Pod", "PodGroup"):
            kind = item.get("kind") if isinstance(item, dict) else type(item).__name__
            raise UsageError(f"{path}: expected kind Pod or PodGroup, got {kind!r}")
    pods = [item for item in items if item["kind"] == "Pod"]
    groups = [item for item in items if item["kind"] == "PodGroup"]
    if replicas is not None:
        if len(pods) != 1:
            raise UsageError(f"{path}: --replicas copies one Pod, found {len(pods)}")
        pods = [_copy_named(pods[0], i) for i in range(replicas)]
    elif len(items) == 1 and pods:
        single: dict[str, Any] = pods[0]  # one Pod: the single-pod what-if
        return single
    if not pods:
        raise UsageError(f"{path}: no Pod manifest")
    return {"apiVersion": "v1", "kind": "List", "items": [*groups, *pods]}


def _copy_named(pod: dict[str, Any], index: int) -> dict[str, Any]:
    meta = dict(pod.get("metadata") or {})
    meta["name"] = f"{meta.get('name', 'pod')}-{index}"
    return {**pod, "metadata": meta}


def request_body(args: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {"pod": load_pod(args.pod, args.replicas)}
    if args.scheduler_name:
        body["schedulerName"] = args.scheduler_name
    if args.config:
        body["config"] = _read(args.config, "configuration")
    return body


async def _post(args: argparse.Namespace, body: dict[str, Any]) -> tuple[int, Any]:
    scheme = "http" if args.insecure_http else "https"
    url = f"{scheme}://{args.http_address}/debug/what-if"
    headers = {"Content-Type": "application/json"}
    authorization = await authorization_header(args)
    if authorization:
        headers["Authorization"] = authorization
    ssl_setting = True if args.insecure_http else tls_setting(args)
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session,
        session.post(url, data=orjson.dumps(body), headers=headers, ssl=ssl_setting) as response,
    ):
        raw = await response.read()
        try:
            return response.status, orjson.loads(raw)
        except orjson.JSONDecodeError:
            return response.status, {"error": raw.decode("utf-8", "replace").strip()}


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def main(args: argparse.Namespace) -> int:
    try:
        body = request_body(args)
    except UsageError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    refusal = foreign_listener(args.http_address)
    if refusal is not None:
        print(f"{PROG}: {refusal}", file=sys.stderr)
        return 1
    try:
        status, answer = asyncio.run(_post(args, body))
    except KubeconfigError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        hint = ""
        if isinstance(exc, aiohttp.ClientConnectorCertificateError | ssl.SSLError):
            hint = " (pass --certificate-authority, or --insecure-skip-tls-verify)"
        elif isinstance(exc, aiohttp.ServerDisconnectedError | aiohttp.ClientOSError):
            hint = " (an `aiosched run --insecure-http` is asked with --insecure-http)"
        print(f"{PROG}: cannot reach {args.http_address}: {_one_line(exc)}{hint}", file=sys.stderr)
        return 1
    message = answer.get("error") or answer.get("message") if isinstance(answer, dict) else answer
    if status in (401, 403):
        hint = refusal_hint(status, "post /debug/what-if")
        print(f"{PROG}: {args.http_address} refused the request ({_one_line(message)}): "
              f"{hint}", file=sys.stderr)  # fmt: skip
        return 1
    if status != 200:
        print(f"{PROG}: {_one_line(message)} (HTTP {status})", file=sys.stderr)
        return 1
    if args.output == "json":
        sys.stdout.write(orjson.dumps(answer, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(render_text(answer))
    return 0
