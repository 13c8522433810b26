"""The scheduler's API client: kubernetes-asyncio's configuration, an aiohttp session, raw JSON.

kubernetes-asyncio resolves kubeconfig / in-cluster config (tokens, exec plugins, client
certificates, CA bundles, proxy-url); the session gets the TLS context its REST client would
build. Its generated models are far too slow for the hot path (~100 µs per pod), so requests and
responses here are raw JSON through orjson.

The session is not kubernetes-asyncio's own: that one trusts the environment, and aiohttp then
looks up proxy variables and reads ~/.netrc (in a worker thread) on every request, which was a
third of the scheduler's CPU at 500 pods/s. The proxy the environment names for the API server
(HTTPS_PROXY / HTTP_PROXY, minus NO_PROXY, as client-go reads them) is resolved once instead.

Client-side rate limiting follows client-go: a token bucket of `qps` refilled continuously with
room for `burst` requests (clientConnection.qps / burst in KubeSchedulerConfiguration). Watches are
long-running and are not rate limited, as in client-go.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import ssl
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import aiohttp
import orjson
from kubernetes_asyncio.client import Configuration
from yarl import URL

from scheduler.client.kubeconfig import InCluster, KubeconfigError, resolve_configuration

log = logging.getLogger(__name__)

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


class ApiError(Exception):
    """A request that failed without an HTTP answer (connection refused, reset, timeout)."""


class TokenBucket:
    """client-go's flowcontrol token bucket: `qps` tokens per second, at most `burst` banked."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic):
        self.qps = qps
        self.burst = max(1, burst)
        self._tokens = float(self.burst)
        self._clock = clock
        self._last = clock()

    def delay(self) -> float:
        """Take one token; return how long the caller must wait before using it."""
        if self.qps <= 0:
            return 0.0
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.qps


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """How to reach the API server (see scheduler/client/kubeconfig.py for the order of sources)."""

    kubeconfig: str | None = None  # None: --master, else in-cluster, else ~/.kube/config
    context: str | None = None
    master: str | None = None  # kube-scheduler's --master: overrides the kubeconfig's server
    qps: float = 50.0
    burst: int = 100
    user_agent: str = "aiosched"
    max_connections: int = 64
    in_cluster: InCluster | None = None  # where a pod's service account is (None: the usual)


async def load_configuration(settings: ClientSettings) -> Configuration:
    """Resolve a kubeconfig path, --master or the in-cluster service account into
    kubernetes-asyncio's Configuration. Raises KubeconfigError (one line) when it cannot."""
    return await resolve_configuration(
        settings.kubeconfig, settings.context, settings.master, settings.in_cluster
    )


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


class RequestObserver(Protocol):
    """Hears of each request a KubeClient made (observability.metrics.RestClientMetrics)."""

    def request_done(self, method: str, host: str, code: int | None, seconds: float) -> None: ...


class KubeClient:
    """Raw-JSON access to one API server. Implements framework.interface.ApiClient."""

    def __init__(self, configuration: Configuration, settings: ClientSettings) -> None:
        self._configuration = configuration
        connector = aiohttp.TCPConnector(
            limit=settings.max_connections, ssl=ssl_context_for(configuration)
        )
        # trust_env=False: see the module docstring; read_bufsize as kubernetes-asyncio's (a
        # watch event can carry an object up to etcd's 1.5 MiB).
        self._session = aiohttp.ClientSession(
            connector=connector, trust_env=False, read_bufsize=2**21
        )
        self._host = (configuration.host or "").rstrip("/")
        self._proxy = configuration.proxy or proxy_for(self._host)
        self._proxy_headers = configuration.proxy_headers if self._proxy else None
        self._user_agent = settings.user_agent
        self._limiter = TokenBucket(settings.qps, settings.burst)
        self._owns_session = True
        # who hears of each request (rest_client_* metrics); a list, so that the twins
        # with_own_rate_limit makes (sharing it, as copies) report to the same observers
        self._observers: list[RequestObserver] = []
        self._url_host = urlsplit(self._host).netloc

    @classmethod
    async def connect(cls, settings: ClientSettings) -> KubeClient:
        configuration = await load_configuration(settings)
        try:
            return cls(configuration, settings)
        except (ssl.SSLError, OSError, ValueError) as exc:  # CA bundle or client certificate
            raise KubeconfigError(
                f"cannot use the TLS settings for {configuration.host} "
                f"(certificate-authority, client-certificate or client-key): {exc}"
            ) from None

    @property
    def host(self) -> str:
        return self._host

    def with_own_rate_limit(self) -> KubeClient:
        """This client with a token bucket of its own (same qps and burst) over the same
        connections. kube-scheduler writes events through a second clientset built from the
        same config (cmd/kube-scheduler/app/options createClients), so events and bindings
        never wait for each other's budget. Closing it leaves the connections open."""
        twin = copy.copy(self)
        twin._limiter = TokenBucket(self._limiter.qps, self._limiter.burst)
        twin._owns_session = False
        return twin

    def observe_requests(self, observer: RequestObserver) -> None:
        """Report every request's method, status (None: no answer) and duration to
        `observer`, as client-go reports to its rest_client metrics; this client's twins too."""
        self._observers.append(observer)

    def _observed(self, method: str, code: int | None, started: float) -> None:
        elapsed = time.perf_counter() - started
        for observer in self._observers:
            observer.request_done(method, self._url_host, code, elapsed)

    async def close(self) -> None:
        if self._owns_session:
            await self._session.close()

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": JSON, "User-Agent": self._user_agent}
        if content_type is not None:
            headers["Content-Type"] = content_type
        for setting in (await self._configuration.auth_settings()).values():
            headers[setting["key"]] = setting["value"]
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        content_type: str = JSON,
    ) -> tuple[int, Any]:
        """Send one request; return (status, decoded body). HTTP errors are returned, not raised.

        Raises ApiError when there is no HTTP answer at all.
        """
        wait = self._limiter.delay()
        if wait > 0:
            await asyncio.sleep(wait)
        data = None if body is None else orjson.dumps(body)
        headers = await self._headers(content_type if data is not None else None)
        started = time.perf_counter()
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
                raw = await response.read()
                status = response.status
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            self._observed(method, None, started)
            raise ApiError(f"{method} {path}: {exc or type(exc).__name__}") from exc
        self._observed(method, status, started)
        if not raw:
            return status, None
        try:
            return status, orjson.loads(raw)
        except orjson.JSONDecodeError:
            return status, {"message": raw[:500].decode("utf-8", "replace")}

    @asynccontextmanager
    async def stream(
        self, path: str, params: Mapping[str, str]
    ) -> AsyncIterator[tuple[int, aiohttp.StreamReader]]:
        """Open a streaming GET (a watch); yields (status, body reader) until the caller exits."""
        headers = await self._headers(None)
        started = time.perf_counter()
        answered = False
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
                # a watch is counted once its answer starts, as client-go counts the request
                self._observed("GET", response.status, started)
                answered = True
                yield response.status, response.content
        except (aiohttp.ClientError, OSError) as exc:
            if not answered:  # a watch broken mid-stream was counted when it was answered
                self._observed("GET", None, started)
            raise ApiError(f"watch {path}: {exc or type(exc).__name__}") from exc


def status_message(body: Any) -> str:
    """The human part of an API error body (a Status object, or whatever came back)."""
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
        reason = body.get("reason")
        if isinstance(reason, str):
            return reason
    return str(body)[:500]
