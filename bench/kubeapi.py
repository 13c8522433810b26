"""The runner's own API traffic: aiohttp + orjson with the kubeconfig's bearer token.

Deliberately independent of the scheduler package, so the benchmark measures the scheduler from the
outside, the way scheduler_perf's client does.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import orjson
import yaml

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Endpoint:
    server: str
    token: str | None = None
    ca_pem: bytes | None = None
    insecure: bool = False
    # a client certificate and its key (kind's and kubeadm's admin kubeconfigs use one)
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None

    def ssl_option(self) -> ssl.SSLContext | bool:
        """What aiohttp's `ssl=` wants: the kubeconfig's CA, no checks, or the system's CAs,
        with the client certificate when there is one."""
        if self.client_cert_pem is None or self.client_key_pem is None:
            if self.insecure:
                return False
            if self.ca_pem is not None:
                return ssl.create_default_context(cadata=self.ca_pem.decode())
            return True
        context = ssl.create_default_context(
            cadata=self.ca_pem.decode() if self.ca_pem is not None else None
        )
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        # ssl loads a certificate chain only from files
        with tempfile.TemporaryDirectory() as scratch:
            cert, key = Path(scratch, "client.crt"), Path(scratch, "client.key")
            cert.write_bytes(self.client_cert_pem)
            key.write_bytes(self.client_key_pem)
            key.chmod(0o600)
            context.load_cert_chain(cert, key)
        return context


def read_kubeconfig(path: Path) -> Endpoint:
    """Server, CA, and the bearer token or client certificate of the current context."""
    doc = yaml.safe_load(path.read_text()) or {}
    contexts = {c["name"]: c.get("context") or {} for c in doc.get("contexts") or []}
    context = contexts.get(doc.get("current-context", ""), {})
    clusters = {c["name"]: c.get("cluster") or {} for c in doc.get("clusters") or []}
    users = {u["name"]: u.get("user") or {} for u in doc.get("users") or []}
    cluster = clusters.get(context.get("cluster", ""), {})
    if not cluster.get("server"):
        raise ValueError(f"{path}: the current context names no cluster server")
    user = users.get(context.get("user", ""), {})
    ca_pem: bytes | None = None
    if cluster.get("certificate-authority-data"):
        ca_pem = base64.b64decode(cluster["certificate-authority-data"])
    elif cluster.get("certificate-authority"):
        ca_pem = (path.parent / str(cluster["certificate-authority"])).read_bytes()
    return Endpoint(
        server=str(cluster["server"]).rstrip("/"),
        token=user.get("token"),
        ca_pem=ca_pem,
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        client_cert_pem=_pem(path, user, "client-certificate"),
        client_key_pem=_pem(path, user, "client-key"),
    )


def _pem(path: Path, user: dict[str, Any], field: str) -> bytes | None:
    """A kubeconfig user's `field-data` (base64) or `field` (a file, relative to it)."""
    if user.get(f"{field}-data"):
        return base64.b64decode(user[f"{field}-data"])
    if user.get(field):
        return (path.parent / str(user[field])).read_bytes()
    return None


class ApiError(RuntimeError):
    def __init__(self, status: int, method: str, path: str, body: bytes) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:300].decode(errors='replace')}")
        self.status = status


class KubeApi:
    """A small JSON client for the few calls the runner makes."""

    def __init__(self, endpoint: Endpoint, connections: int = 64) -> None:
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if endpoint.token:
            headers["Authorization"] = f"Bearer {endpoint.token}"
        self._base = endpoint.server
        self._session = aiohttp.ClientSession(
            headers=headers,
            connector=aiohttp.TCPConnector(limit=connections, ssl=endpoint.ssl_option()),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
        )

    @property
    def session(self) -> aiohttp.ClientSession:
        return self._session

    @property
    def base_url(self) -> str:
        return self._base

    async def close(self) -> None:
        await self._session.close()

    async def _request(self, method: str, path: str, body: bytes | None = None) -> Obj:
        async with self._session.request(method, self._base + path, data=body) as resp:
            raw = await resp.read()
            if resp.status >= 300:
                raise ApiError(resp.status, method, path, raw)
            result: Obj = orjson.loads(raw) if raw else {}
            return result

    async def get(self, path: str) -> Obj:
        return await self._request("GET", path)

    async def get_text(self, path: str) -> str:
        async with self._session.get(self._base + path, headers={"Accept": "text/plain"}) as resp:
            raw = await resp.read()
            if resp.status >= 300:
                raise ApiError(resp.status, "GET", path, raw)
            return raw.decode()

    async def create(self, path: str, body: bytes, *, exist_ok: bool = False) -> Obj:
        try:
            return await self._request("POST", path, body)
        except ApiError as exc:
            if exist_ok and exc.status == 409:
                return {}
            raise

    async def delete(self, path: str) -> None:
        """DELETE; an object already gone is fine."""
        try:
            await self._request("DELETE", path)
        except ApiError as exc:
            if exc.status != 404:
                raise

    async def replace(self, path: str, body: bytes) -> Obj:
        """PUT: e.g. a status subresource (creating an object resets its status)."""
        return await self._request("PUT", path, body)

    async def watch(self, path: str, resource_version: str) -> AsyncIterator[Obj]:
        """Watch events from `resource_version`, one dict per event, until the server ends it."""
        query = f"watch=1&allowWatchBookmarks=true&resourceVersion={resource_version}"
        url = f"{self._base}{path}?{query}"
        async with self._session.get(url) as resp:
            if resp.status >= 300:
                raise ApiError(resp.status, "WATCH", path, await resp.read())
            pending = b""
            async for chunk in resp.content.iter_any():
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield orjson.loads(line)


async def bulk(count: int, concurrency: int, make: Callable[[int], Awaitable[object]]) -> None:
    """Run make(0..count-1) with at most `concurrency` in flight; the first error is raised."""
    indexes: Iterable[int] = iter(range(count))

    async def worker() -> None:
        for index in indexes:
            await make(index)

    async with anyio.create_task_group() as group:
        for _ in range(min(concurrency, count)):
            group.start_soon(worker)


async def wait_http_ok(
    session: aiohttp.ClientSession, url: str, timeout: float, alive: Callable[[], bool]
) -> None:
    """Poll `url` until it answers 200; stop early if `alive()` turns false."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if not alive():
            raise RuntimeError(f"process exited before {url} answered")
        with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
            async with session.get(url, timeout=aiohttp.ClientTimeout(total=2)) as resp:
                if resp.status == 200:
                    return
        if loop.time() > deadline:
            raise TimeoutError(f"{url} did not answer 200 within {timeout:.0f}s")
        await asyncio.sleep(0.1)
