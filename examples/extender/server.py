"""A small scheduler extender: filter, prioritize and bind over HTTP (aiohttp, one file).

Copy it and change the three handlers. kube-scheduler (and aiosched) POST JSON to
``<urlPrefix>/<verb>`` using the k8s.io/kube-scheduler/extender/v1 types, whose JSON keys are
the Go field names ("Pod", "Nodes", "NodeNames", "FailedNodes", "Host", "Score", ...).

- filter:     keeps the nodes carrying the label ``--require-label`` (KEY or KEY=VALUE); the
              others are reported in FailedNodes with a message the pod's condition will show.
- prioritize: scores each node 0..10 from the integer value of its label ``--score-label``.
- bind:       POSTs the pod's Binding to the API server named by ``--kubeconfig`` (server,
              bearer token, CA), and answers {"Error": ""} or the API server's refusal.

Run:  python examples/extender/server.py --port 8888 --kubeconfig ~/.kube/config
With nodeCacheCapable: true the scheduler sends node names only; the server then reads the
nodes' labels from the API server (needs --kubeconfig), or lets every node pass without one.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import signal
import ssl
import tempfile
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web

MAX_EXTENDER_PRIORITY = 10


def field(obj: dict[str, Any] | None, name: str) -> Any:
    """A field as Go's encoding/json matches it: exact key, else case-insensitive."""
    if not obj:
        return None
    if name in obj:
        return obj[name]
    for key, value in obj.items():
        if key.lower() == name.lower():
            return value
    return None


class ApiServer:
    """Just enough of a kubeconfig: server URL, bearer token, TLS trust, client certificate."""

    def __init__(self, kubeconfig: Path) -> None:
        doc = yaml.safe_load(kubeconfig.read_text())
        current = doc.get("current-context")
        context = next(c["context"] for c in doc["contexts"] if c["name"] == current)
        cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == context["cluster"])
        user = next(
            (u["user"] for u in doc.get("users") or () if u["name"] == context.get("user")), {}
        )
        self.server = cluster["server"].rstrip("/")
        self.headers = {"Content-Type": "application/json"}
        token = user.get("token") or (
            Path(user["tokenFile"]).read_text().strip() if user.get("tokenFile") else ""
        )
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.ssl: ssl.SSLContext | bool = True
        if self.server.startswith("https://"):
            context_ssl = ssl.create_default_context()
            if cluster.get("certificate-authority-data"):
                pem = base64.b64decode(cluster["certificate-authority-data"]).decode()
                context_ssl.load_verify_locations(cadata=pem)
            elif cluster.get("certificate-authority"):
                context_ssl.load_verify_locations(cafile=cluster["certificate-authority"])
            if cluster.get("insecure-skip-tls-verify"):
                context_ssl.check_hostname = False
                context_ssl.verify_mode = ssl.CERT_NONE
            cert, key = _pem(user, "client-certificate"), _pem(user, "client-key")
            if cert and key:
                context_ssl.load_cert_chain(cert, key)
            self.ssl = context_ssl
        self.session: aiohttp.ClientSession | None = None

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        if self.session is None:
            self.session = aiohttp.ClientSession(
                headers=self.headers, connector=aiohttp.TCPConnector(ssl=self.ssl)
            )
        data = None if body is None else json.dumps(body)
        async with self.session.request(method, self.server + path, data=data) as response:
            text = await response.text()
            return response.status, json.loads(text) if text else None

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()


def _pem(user: dict[str, Any], key: str) -> str:
    """A path to the PEM the kubeconfig names (inline *-data is written to a temp file)."""
    if user.get(key):
        return str(user[key])
    data = user.get(f"{key}-data")
    if not data:
        return ""
    fd, name = tempfile.mkstemp(suffix=".pem")
    with os.fdopen(fd, "wb") as handle:
        handle.write(base64.b64decode(data))
    return name


class Extender:
    def __init__(self, require_label: str, score_label: str, api: ApiServer | None) -> None:
        key, _, value = require_label.partition("=")
        self.require_key, self.require_value = key, value if "=" in require_label else None
        self.score_label = score_label
        self.api = api

    # ---- helpers --------------------------------------------------------------------------

    async def nodes_of(self, args: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The candidate nodes as objects; None when only names came and no API server is
        configured to look them up."""
        node_list = field(args, "Nodes")
        if node_list is not None:
            return list(node_list.get("items") or [])
        names = field(args, "NodeNames") or []
        if self.api is None:
            return None
        nodes = []
        for name in names:
            status, node = await self.api.request("GET", f"/api/v1/nodes/{name}")
            nodes.append(node if status == 200 else {"metadata": {"name": name}})
        return nodes

    def allowed(self, node: dict[str, Any]) -> bool:
        labels = (node.get("metadata") or {}).get("labels") or {}
        if self.require_key not in labels:
            return False
        return self.require_value is None or labels[self.require_key] == self.require_value

    def score(self, node: dict[str, Any]) -> int:
        labels = (node.get("metadata") or {}).get("labels") or {}
        try:
            value = int(labels.get(self.score_label, "0"))
        except ValueError:
            value = 0
        return max(0, min(MAX_EXTENDER_PRIORITY, value))

    # ---- verbs ----------------------------------------------------------------------------

    async def filter(self, request: web.Request) -> web.Response:
        args = await request.json()
        names_only = field(args, "Nodes") is None
        nodes = await self.nodes_of(args)
        if nodes is None:  # names only and no way to read labels: let every node pass
            return web.json_response({"NodeNames": field(args, "NodeNames") or []})
        kept, failed = [], {}
        for node in nodes:
            name = node["metadata"]["name"]
            if self.allowed(node):
                kept.append(node)
            else:
                failed[name] = f"node(s) didn't have label {self.require_key}"
        result: dict[str, Any] = {"FailedNodes": failed, "Error": ""}
        if names_only:
            result["NodeNames"] = [n["metadata"]["name"] for n in kept]
        else:
            result["Nodes"] = {"metadata": {}, "items": kept}
        return web.json_response(result)

    async def prioritize(self, request: web.Request) -> web.Response:
        args = await request.json()
        nodes = await self.nodes_of(args)
        if nodes is None:
            nodes = [{"metadata": {"name": n}} for n in field(args, "NodeNames") or []]
        return web.json_response(
            [{"Host": n["metadata"]["name"], "Score": self.score(n)} for n in nodes]
        )

    async def bind(self, request: web.Request) -> web.Response:
        args = await request.json()
        if self.api is None:
            return web.json_response({"Error": "extender has no --kubeconfig to bind with"})
        namespace, name = field(args, "PodNamespace"), field(args, "PodName")
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": field(args, "PodUID")},
            "target": {"apiVersion": "v1", "kind": "Node", "name": field(args, "Node")},
        }
        try:
            status, body = await self.api.request(
                "POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", binding
            )
        except aiohttp.ClientError as exc:
            return web.json_response({"Error": f"binding failed: {exc}"})
        if status >= 300:
            message = (body or {}).get("message") if isinstance(body, dict) else None
            return web.json_response({"Error": message or f"binding failed: HTTP {status}"})
        print(f"extender: bound {namespace}/{name} to {field(args, 'Node')}", flush=True)
        return web.json_response({"Error": ""})


def make_app(extender: Extender, prefix: str = "") -> web.Application:
    app = web.Application()
    app.router.add_post(f"{prefix}/filter", extender.filter)
    app.router.add_post(f"{prefix}/prioritize", extender.prioritize)
    app.router.add_post(f"{prefix}/bind", extender.bind)
    return app


async def serve(args: argparse.Namespace) -> None:
    api = ApiServer(args.kubeconfig) if args.kubeconfig else None
    extender = Extender(args.require_label, args.score_label, api)
    runner = web.AppRunner(make_app(extender, args.prefix.rstrip("/")), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.port)
    await site.start()
    port = runner.addresses[0][1]
    print(f"extender: serving on http://{args.host}:{port}{args.prefix.rstrip('/')}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        if api is not None:
            await api.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8888, help="0 picks a free port")
    parser.add_argument("--prefix", default="", help="URL path prefix, e.g. /scheduler")
    parser.add_argument("--kubeconfig", type=Path, help="API server to bind with")
    parser.add_argument(
        "--require-label",
        default="extender.example/allowed",
        help="filter: nodes must carry this label (KEY or KEY=VALUE)",
    )
    parser.add_argument(
        "--score-label",
        default="extender.example/score",
        help="prioritize: a node's score is this label's integer value (0..10)",
    )
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
