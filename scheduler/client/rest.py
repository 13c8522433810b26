"""The scheduler's API client: kubernetes-asyncio's configuration, a transport, raw JSON.

kubernetes-asyncio resolves kubeconfig / in-cluster config (tokens, exec plugins, client
certificates, CA bundles, proxy-url); the transport (transport.py) gets the TLS context its REST
client would build. Its generated models are far too slow for the hot path (~100 µs per pod), so
requests and responses here are raw JSON through orjson.

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
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol
from urllib.parse import urlsplit

import orjson
from kubernetes_asyncio.client import Configuration

# ClientSettings and load_configuration live beside the kubeconfig reading, below this module and
# the API I/O workers that need them too; importable from here as before.
from scheduler.client.kubeconfig import ClientSettings as ClientSettings
from scheduler.client.kubeconfig import KubeconfigError
from scheduler.client.kubeconfig import load_configuration as load_configuration
from scheduler.client.transport import (
    JSON,
    ApiError,
    HttpTransport,
    StreamBody,
    Transport,
    proxy_for,
    ssl_context_for,
)

__all__ = ["JSON", "ApiError", "KubeClient", "proxy_for", "ssl_context_for"]

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


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


class RequestObserver(Protocol):
    """Hears of each request a KubeClient made (observability.metrics.RestClientMetrics)."""

    def request_done(self, method: str, host: str, code: int | None, seconds: float) -> None: ...


class KubeClient:
    """Raw-JSON access to one API server. Implements framework.interface.ApiClient.

    The bytes travel through a transport (transport.py): this process's aiohttp session, or
    the API I/O worker processes (process_transport.py). The rate limiter and the JSON stay
    here, on the caller's side, so qps and burst mean what they mean in client-go.
    """

    def __init__(
        self,
        configuration: Configuration,
        settings: ClientSettings,
        transport: Transport | None = None,
    ) -> None:
        self._transport: Transport = transport or HttpTransport(
            configuration, settings.user_agent, settings.max_connections
        )
        self._limiter = TokenBucket(settings.qps, settings.burst)
        self._owns_transport = True
        # who hears of each request (rest_client_* metrics); a list, so that the twins
        # with_own_rate_limit makes (sharing it, as copies) report to the same observers
        self._observers: list[RequestObserver] = []
        self._url_host = urlsplit((configuration.host or "").rstrip("/")).netloc

    @classmethod
    async def connect(cls, settings: ClientSettings, api_workers: int = 0) -> KubeClient:
        """A client for ``settings``; with ``api_workers`` > 0 its requests go through that many
        API I/O worker processes (started here, ready when this returns)."""
        configuration = await load_configuration(settings)
        try:
            transport: Transport = HttpTransport(
                configuration, settings.user_agent, settings.max_connections
            )
        except (ssl.SSLError, OSError, ValueError) as exc:  # CA bundle or client certificate
            raise KubeconfigError(
                f"cannot use the TLS settings for {configuration.host} "
                f"(certificate-authority, client-certificate or client-key): {exc}"
            ) from None
        if api_workers > 0:
            # Checked here (the TLS files load); the workers build their own from the settings.
            await transport.close()
            from scheduler.client.process_transport import ProcessTransport

            transport = await ProcessTransport.start(
                settings, configuration.host or "", api_workers
            )
        return cls(configuration, settings, transport)

    @property
    def host(self) -> str:
        return self._transport.host

    @property
    def transport(self) -> Transport:
        return self._transport

    def with_own_rate_limit(self) -> KubeClient:
        """This client with a token bucket of its own (same qps and burst) over the same
        connections. kube-scheduler writes events through a second clientset built from the
        same config (cmd/kube-scheduler/app/options createClients), so events and bindings
        never wait for each other's budget. Closing it leaves the connections open."""
        twin = copy.copy(self)
        twin.set_rate_limit(*self.rate_limit)
        twin._owns_transport = False
        return twin

    @property
    def rate_limit(self) -> tuple[float, int]:
        """(qps, burst) of this client's token bucket."""
        return self._limiter.qps, self._limiter.burst

    def set_rate_limit(self, qps: float, burst: int) -> None:
        """A fresh token bucket of ``qps`` and ``burst`` for this client."""
        self._limiter = TokenBucket(qps, burst)

    def report_request(self, method: str, code: int | None, seconds: float) -> None:
        """Tell this client's observers of a request made for it elsewhere (the events an
        API I/O worker writes for the recorder)."""
        for observer in self._observers:
            observer.request_done(method, self._url_host, code, seconds)

    def observe_requests(self, observer: RequestObserver) -> None:
        """Report every request's method, status (None: no answer) and duration to
        `observer`, as client-go reports to its rest_client metrics; this client's twins too."""
        self._observers.append(observer)

    def _observed(self, method: str, code: int | None, started: float) -> None:
        self.report_request(method, code, time.perf_counter() - started)

    async def close(self) -> None:
        if self._owns_transport:
            await self._transport.close()

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
        started = time.perf_counter()
        try:
            status, raw = await self._transport.send(
                method, path, params, data, content_type if data is not None else None
            )
        except ApiError:
            self._observed(method, None, started)
            raise
        self._observed(method, status, started)
        if not raw:
            return status, None
        try:
            return status, orjson.loads(raw)
        except orjson.JSONDecodeError:
            return status, {"message": raw[:500].decode("utf-8", "replace")}

    def stream(
        self, path: str, params: Mapping[str, str]
    ) -> AbstractAsyncContextManager[tuple[int, StreamBody]]:
        """Open a streaming GET (a watch); yields (status, body) until the caller exits.
        Iterating the body gives its lines; ApiError when the stream breaks."""
        if not self._observers:
            return self._transport.stream(path, params)
        return self._observed_stream(path, params)

    @asynccontextmanager
    async def _observed_stream(
        self, path: str, params: Mapping[str, str]
    ) -> AsyncIterator[tuple[int, StreamBody]]:
        started = time.perf_counter()
        answered = False
        try:
            async with self._transport.stream(path, params) as (status, body):
                # a watch is counted once its answer starts, as client-go counts the request
                self._observed("GET", status, started)
                answered = True
                yield status, body
        except ApiError:
            if not answered:  # a watch broken mid-stream was counted when it was answered
                self._observed("GET", None, started)
            raise


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
