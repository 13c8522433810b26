"""How KubeClient's requests reach the API server: the seam between the client and the wire.

KubeClient (rest.py) keeps what must stay with the caller: client-go's rate limiter, JSON
encoding of request bodies and decoding of answers. A transport moves bytes: (method, path,
query, body bytes, content type) in, (status, body bytes) out, and watch streams as lines.

- ``HttpTransport``: the aiohttp session in this process (TLS, auth headers, proxy), as the
  scheduler always had it. The API I/O worker processes run one each.
- ``ProcessTransport`` (process_transport.py): forwards each request to an API I/O worker
  process (io_process.py) over a framed socket, so that HTTP, TLS and reading watch streams
  cost the scheduling loop's process nothing but a frame.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import urllib.request
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

import aiohttp
from kubernetes_asyncio.client import Configuration
from yarl import URL

JSON = "application/json"


class ApiError(Exception):
    """A request that failed without an HTTP answer (connection refused, reset, timeout).

    ``reason`` is the cause in a few words ("Connection refused"); ``untrusted_certificate`` says
    the API server's TLS certificate failed verification. Both survive the trip from an API I/O
    worker, where the underlying exception itself stays behind.
    """

    def __init__(
        self, message: str, *, reason: str = "", untrusted_certificate: bool = False
    ) -> None:
        super().__init__(message)
        self.reason = reason or " ".join(message.split())
        self.untrusted_certificate = untrusted_certificate


def failure_reason(exc: BaseException) -> str:
    """The cause of a failed request in a few words."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return " ".join(str(exc.certificate_error).split())
    if isinstance(exc, aiohttp.ClientConnectorError):
        if exc.errno:
            return os.strerror(exc.errno)  # "Connection refused", not "Connect call failed"
        if exc.strerror:
            return exc.strerror
    return " ".join(str(exc).split()) or type(exc).__name__


def api_error(what: str, exc: BaseException) -> ApiError:
    """The ApiError for ``what`` (e.g. "GET /version") failing with ``exc``."""
    return ApiError(
        f"{what}: {exc or type(exc).__name__}",
        reason=failure_reason(exc),
        untrusted_certificate=isinstance(
            exc, aiohttp.ClientConnectorCertificateError | ssl.SSLError
        ),
    )


class StreamBody(Protocol):
    """A streaming answer's body: iterated line by line (a watch), or read whole (an error)."""

    def __aiter__(self) -> AsyncIterator[bytes]: ...

    async def read(self) -> bytes: ...


class Transport(Protocol):
    """Moves one request's bytes to the API server and its answer back."""

    @property
    def host(self) -> str: ...

    async def send(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        data: bytes | None,
        content_type: str | None,
    ) -> tuple[int, bytes]:
        """(HTTP status, body bytes); raises ApiError when there is no HTTP answer."""
        ...

    def stream(
        self, path: str, params: Mapping[str, str]
    ) -> AbstractAsyncContextManager[tuple[int, StreamBody]]:
        """A streaming GET (a watch): (status, body) until the caller exits."""
        ...

    async def failed(self) -> None:
        """Return never; raise when the transport cannot carry requests any more."""
        ...

    async def close(self) -> None: ...


def ssl_context_for(configuration: Configuration) -> ssl.SSLContext:
    """The TLS context kubernetes-asyncio's REST client builds from the same configuration."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if getattr(configuration, "disable_strict_ssl_verification", False):
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


def proxy_for(host_url: str) -> str | None:
    """The proxy the environment names for ``host_url`` (None when NO_PROXY covers it)."""
    url = URL(host_url)
    if not url.host:
        return None
    proxy = urllib.request.getproxies().get(url.scheme)
    if not proxy or urllib.request.proxy_bypass(url.host):
        return None
    return proxy


class HttpTransport:
    """An aiohttp session to the API server, with kubernetes-asyncio's credentials.

    The session is not kubernetes-asyncio's own: that one trusts the environment, and aiohttp
    then looks up proxy variables and reads ~/.netrc (in a worker thread) on every request,
    which was a third of the scheduler's CPU at 500 pods/s. The proxy the environment names
    for the API server (HTTPS_PROXY / HTTP_PROXY, minus NO_PROXY, as client-go reads them) is
    resolved once instead.
    """

    def __init__(self, configuration: Configuration, user_agent: str, max_connections: int) -> None:
        self._configuration = configuration
        connector = aiohttp.TCPConnector(limit=max_connections, ssl=ssl_context_for(configuration))
        # trust_env=False: see the class docstring; read_bufsize as kubernetes-asyncio's (a
        # watch event can carry an object up to etcd's 1.5 MiB).
        self._session = aiohttp.ClientSession(
            connector=connector, trust_env=False, read_bufsize=2**21
        )
        self._host = (configuration.host or "").rstrip("/")
        self._proxy = configuration.proxy or proxy_for(self._host)
        self._proxy_headers = configuration.proxy_headers if self._proxy else None
        self._user_agent = user_agent

    @property
    def host(self) -> str:
        return self._host

    async def failed(self) -> None:
        await asyncio.get_running_loop().create_future()  # a session does not fail as a whole

    async def close(self) -> None:
        await self._session.close()

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": JSON, "User-Agent": self._user_agent}
        if content_type is not None:
            headers["Content-Type"] = content_type
        for setting in (await self._configuration.auth_settings()).values():
            headers[setting["key"]] = setting["value"]
        return headers

    async def send(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        data: bytes | None,
        content_type: str | None,
    ) -> tuple[int, bytes]:
        headers = await self._headers(content_type if data is not None else None)
        try:
            async with self._session.request(
                method,
                self._host + path,
                params=params,
                data=data,
                headers=headers,
                server_hostname=self._configuration.tls_server_name,
                proxy=self._proxy,
                proxy_headers=self._proxy_headers,
            ) as response:
                return response.status, await response.read()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise api_error(f"{method} {path}", exc) from exc

    @asynccontextmanager
    async def stream(
        self, path: str, params: Mapping[str, str]
    ) -> AsyncIterator[tuple[int, StreamBody]]:
        headers = await self._headers(None)
        try:
            async with self._session.get(
                self._host + path,
                params=params,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=None, sock_read=None),
                server_hostname=self._configuration.tls_server_name,
                proxy=self._proxy,
                proxy_headers=self._proxy_headers,
            ) as response:
                yield response.status, response.content
        except (aiohttp.ClientError, OSError) as exc:
            raise api_error(f"watch {path}", exc) from exc
