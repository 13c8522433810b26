"""The scheduler's HTTP endpoints: /metrics, /healthz, /readyz, /livez and /debug/… routes
(and whatever else the server's owner routes, such as the scheduler's z-pages).

Health endpoints answer like upstream's k8s.io/apiserver healthz handlers: ``ok`` when every check
passes, ``?verbose`` lists ``[+]name ok`` lines, a failure answers 500 listing every check with
``[-]name failed: detail``, ``?exclude=name`` skips a check and ``/healthz/name`` runs one.

A ``guard`` (the secure port's delegated authentication and authorization, given by whoever runs
the server) sees every request first and may answer it instead of the handler. With a guard the
health endpoints, which answer anyone, say "reason withheld" instead of a failing check's detail
(k8s.io/apiserver/pkg/server/healthz/healthz.go: "don't include the error since this endpoint is
public"); the detail goes to the log. Without one (plain HTTP, where everything is open) they
give it.

Header limits: an Authorization header over MAX_AUTHORIZATION_BYTES is answered 431 Request
Header Fields Too Large before any check, and a header line over MAX_FIELD_BYTES is refused
by the HTTP parser; either is logged as one line, without a traceback or the header's bytes.
"""

from __future__ import annotations

import asyncio
import logging
import math
import ssl
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import orjson
import yaml
from aiohttp import ClientSession, ClientTimeout, web
from aiohttp.http_exceptions import HttpProcessingError

from apimachinery.bounded_yaml import load
from observability.explain import ExplainStore, render_text
from observability.metrics import EXPOSITION_CONTENT_TYPE, SchedulerMetrics

#: A health check: (healthy, detail shown when it is not).
HealthCheck = Callable[[], tuple[bool, str]]
#: One check (named "scheduler") or several by name.
HealthChecks = HealthCheck | Mapping[str, HealthCheck]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
#: Sees a request before its handler: None lets it through, a response refuses it.
RequestGuard = Callable[[web.Request], Awaitable[web.StreamResponse | None]]

EXPLAIN_ROUTE = "/debug/explain/{namespace}/{name}"
WHAT_IF_ROUTE = "/debug/what-if"
#: Largest what-if request body (a pod manifest and maybe a configuration file).
WHAT_IF_MAX_BODY = 1 << 20
#: The longest Authorization header served (a service-account JWT is about 1 KB), and the
#: longest header line the HTTP parser takes at all.
MAX_AUTHORIZATION_BYTES = 8192
MAX_FIELD_BYTES = 65536
#: What-if requests that may wait for their turn, and the longest wait before a 429.
WHAT_IF_MAX_WAITING = 4
WHAT_IF_MAX_WAIT = 10.0
_TEXT = "text/plain"
log = logging.getLogger(__name__)


def _ping() -> tuple[bool, str]:
    return True, ""


def _named(checks: HealthChecks | None) -> dict[str, HealthCheck]:
    named: dict[str, HealthCheck] = {"ping": _ping}
    if checks is None:
        return named
    if callable(checks):
        named["scheduler"] = checks
    else:
        named.update(checks)
    return named


def _text(body: str, status: int = 200) -> web.Response:
    return web.Response(
        text=body,
        status=status,
        content_type=_TEXT,
        charset="utf-8",
        headers={"X-Content-Type-Options": "nosniff"},
    )


def _run(check: HealthCheck) -> tuple[bool, str]:
    try:
        return check()
    except Exception as error:  # a crashing check is a failing check, not a crashing server
        return False, f"check raised {error!r}"


def health_handler(
    endpoint: str, checks: Mapping[str, HealthCheck], reasons: bool = True
) -> Handler:
    """The /healthz-style handler for ``checks`` (endpoint is e.g. "readyz", used in messages);
    a failing check's detail is shown only when `reasons`, else logged."""

    async def handle(request: web.Request) -> web.StreamResponse:
        excluded = set(request.query.getall("exclude", []))
        lines: list[str] = []
        failed = False
        for name, check in checks.items():
            if name in excluded:
                lines.append(f"[+]{name} excluded: ok")
                continue
            ok, detail = _run(check)
            if ok:
                lines.append(f"[+]{name} ok")
            else:
                failed = True
                shown = detail if reasons and detail else "reason withheld"
                lines.append(f"[-]{name} failed: {shown}")
                if not reasons:
                    log.info("%s check failed", endpoint, extra={"check": name, "reason": detail})
        if failed:
            return _text("\n".join([*lines, f"{endpoint} check failed"]) + "\n", status=500)
        if "verbose" in request.query:
            return _text("\n".join([*lines, f"{endpoint} check passed"]) + "\n")
        return _text("ok")

    return handle


def single_check_handler(check: HealthCheck, reasons: bool = True) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        ok, detail = _run(check)
        if ok:
            return _text("ok")
        if not reasons:
            log.info("%s failed", request.path, extra={"reason": detail})
            detail = "reason withheld"
        return _text(f"internal server error: {detail}\n", status=500)

    return handle


def metrics_handler(metrics: SchedulerMetrics) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        return web.Response(
            body=metrics.exposition(), headers={"Content-Type": EXPOSITION_CONTENT_TYPE}
        )

    return handle


def resource_metrics_handler(metrics: SchedulerMetrics) -> Handler:
    """kube-scheduler's /metrics/resources: per-pod requests and limits, computed now."""

    async def handle(request: web.Request) -> web.StreamResponse:
        return web.Response(
            body=metrics.resources_exposition(),
            headers={"Content-Type": EXPOSITION_CONTENT_TYPE},
        )

    return handle


def explain_routes(store: ExplainStore) -> dict[str, Handler]:
    """``GET /debug/explain/{namespace}/{name}``: JSON, or text with ``?format=text``."""

    async def handle(request: web.Request) -> web.StreamResponse:
        namespace, name = request.match_info["namespace"], request.match_info["name"]
        data = store.get(namespace, name)
        if data is None:
            message = (
                f"no scheduling attempt recorded for pod {namespace}/{name} (it may be "
                "deleted, not yet attempted, owned by another scheduler, or bound before its "
                "profile's last --explain-recent-attempts successes)"
            )
            if request.query.get("format") == "text":
                return _text(message + "\n", status=404)
            return _json({"error": message}, status=404)
        if request.query.get("format") == "text":
            return _text(render_text(data))
        return _json(data)

    return {EXPLAIN_ROUTE: handle}


class BadRequest(Exception):
    """A request a debug handler refuses: answered with `status` and the message as JSON."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


#: Answers a what-if: (pod manifest, schedulerName or None, configuration text, or what
#: parse_config made of it, or None).
WhatIfAnswer = Callable[[Any, str | None, Any], Mapping[str, Any]]


def what_if_routes(
    answer: WhatIfAnswer,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    parse_config: Callable[[str], Any] | None = None,
) -> dict[str, Handler]:
    """``POST /debug/what-if``: where a pod would go now, in explain's JSON (text with
    ``?format=text``). The body (JSON or YAML, at most WHAT_IF_MAX_BODY bytes) is a Pod
    manifest, or ``{"pod": MANIFEST, "schedulerName": NAME, "config": YAML TEXT}``; a
    ``schedulerName`` query parameter also picks the profile.

    `answer` runs on the event loop and holds it while it runs, so what-ifs are spaced: one at
    a time, and the next one only after the loop had as long again to itself (what-if takes at
    most half of it, however hard it is asked). A request waits its turn, unless
    WHAT_IF_MAX_WAITING others already wait or its turn is more than WHAT_IF_MAX_WAIT seconds
    away: then it gets 429 and Retry-After. `parse_config` (a candidate configuration's text ->
    what `answer` takes instead of it) runs in a thread, in the request's turn: the loop keeps
    running while a large configuration is parsed.
    """
    turn = asyncio.Lock()
    busy_until = 0.0
    waiting = 0

    def busy(wait: float, text: bool) -> web.Response:
        retry = {"Retry-After": str(max(1, math.ceil(wait)))}
        return _error("what-if is busy; retry shortly", 429, text, retry)

    async def handle(request: web.Request) -> web.StreamResponse:
        nonlocal busy_until, waiting
        text = request.query.get("format") == "text"
        try:
            pod, scheduler_name, config = await _what_if_request(request)
        except BadRequest as exc:
            return _error(str(exc), exc.status, text)
        if waiting >= WHAT_IF_MAX_WAITING:
            return busy(max(busy_until - clock(), 1.0), text)
        waiting += 1
        try:
            async with turn:
                wait = busy_until - clock()
                if wait > WHAT_IF_MAX_WAIT:
                    return busy(wait, text)
                if wait > 0:
                    await sleep(wait)
                started = clock()
                try:
                    if config is not None and parse_config is not None:
                        config = await asyncio.to_thread(parse_config, config)
                    data = answer(pod, scheduler_name, config)
                except BadRequest as exc:
                    return _error(str(exc), exc.status, text)
                except Exception as exc:  # a bug in one what-if must not take the endpoint down
                    return _error(f"what-if failed: {exc!r}", 500, text)
                finally:
                    ended = clock()
                    busy_until = ended + (ended - started)
        finally:
            waiting -= 1
        if text:
            return _text(render_text(data))
        return _json(data)

    return {WHAT_IF_ROUTE: handle}


async def _what_if_request(request: web.Request) -> tuple[Any, str | None, str | None]:
    length = request.content_length
    if length is not None and length > WHAT_IF_MAX_BODY:
        raise BadRequest(f"request body larger than {WHAT_IF_MAX_BODY} bytes", status=413)
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise BadRequest(f"request body larger than {WHAT_IF_MAX_BODY} bytes", status=413) from None
    if not body.strip():
        raise BadRequest("empty request body: send a Pod manifest (JSON or YAML)")
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        try:  # parsed in a thread, aliases bounded (a what-if body comes from outside)
            payload = await asyncio.to_thread(load, body, max_bytes=WHAT_IF_MAX_BODY)
        except yaml.YAMLError as exc:
            first = str(exc).splitlines()[0] if str(exc) else "unreadable"
            raise BadRequest(f"the body is neither JSON nor YAML: {first}") from None
    if not isinstance(payload, dict):
        raise BadRequest("the body must be a Pod manifest or {pod, schedulerName, config}")
    scheduler_name = request.query.get("schedulerName")
    config: Any = None
    if "kind" in payload:
        pod: Any = payload
    else:
        pod = payload.get("pod")
        if pod is None:
            raise BadRequest("the body has no pod")
        scheduler_name = payload.get("schedulerName", scheduler_name)
        config = payload.get("config")
    if scheduler_name is not None and not isinstance(scheduler_name, str):
        raise BadRequest("schedulerName must be a string")
    if config is not None and not isinstance(config, str):
        raise BadRequest("config must be the text of a KubeSchedulerConfiguration file")
    return pod, scheduler_name or None, config


def _error(
    message: str, status: int, text: bool, headers: Mapping[str, str] | None = None
) -> web.Response:
    response = _text(message + "\n", status=status) if text else _json({"error": message}, status)
    response.headers.update(headers or {})
    return response


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=orjson.dumps(data, option=orjson.OPT_INDENT_2),
        status=status,
        content_type="application/json",
    )


async def fetch_explanation(
    base_url: str,
    namespace: str,
    name: str,
    timeout: float = 10.0,
    token: str | None = None,
    ssl_context: ssl.SSLContext | bool = True,
) -> dict[str, Any] | None:
    """Client side of ``aiosched explain``: the JSON for a pod, or None when none is kept."""
    url = f"{base_url.rstrip('/')}/debug/explain/{namespace}/{name}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        ClientSession(timeout=ClientTimeout(total=timeout)) as session,
        session.get(url, headers=headers, ssl=ssl_context) as response,
    ):
        if response.status == 404:
            return None
        response.raise_for_status()
        data: dict[str, Any] = orjson.loads(await response.read())
        return data


@web.middleware
async def _header_limits(request: web.Request, handler: Handler) -> web.StreamResponse:
    """431 for an Authorization header over MAX_AUTHORIZATION_BYTES, before any token review
    (Go's net/http answers 431 to headers over its MaxHeaderBytes)."""
    if len(request.headers.get("Authorization", "")) > MAX_AUTHORIZATION_BYTES:
        log.warning(
            "refused a request: Authorization header over %d bytes",
            MAX_AUTHORIZATION_BYTES,
            extra={"remote": request.remote, "path": request.path[:200]},
        )
        return _text("431 Request Header Fields Too Large\n", status=431)
    return await handler(request)


class _MalformedRequestLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's server logger: a request its parser refuses (a header line over
    MAX_FIELD_BYTES...) becomes one warning naming the problem, not a traceback that quotes
    the header's first bytes (a token, possibly)."""

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        problem = kwargs.get("exc_info")
        if isinstance(problem, HttpProcessingError):
            what = str(problem.message).split(":", 1)[0]
            self.logger.log(min(level, logging.WARNING), "refused a malformed request: %s", what)
            return
        super().log(level, msg, *args, **kwargs)


def _guarding(guard: RequestGuard) -> Any:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        refused = await guard(request)
        if refused is not None:
            return refused
        return await handler(request)

    return middleware


class ObservabilityServer:
    """aiohttp server for the endpoints; ``await start()`` returns the bound port."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 10259,
        metrics: SchedulerMetrics | None = None,
        health: HealthChecks | None = None,
        ready: HealthChecks | None = None,
        debug_routes: Mapping[str, Handler] | None = None,
        live: HealthChecks | None = None,
        ssl_context: ssl.SSLContext | None = None,
        guard: RequestGuard | None = None,
        debug_post_routes: Mapping[str, Handler] | None = None,
        routes: Iterable[tuple[str, str, Handler]] = (),
    ) -> None:
        self.host = host
        self.requested_port = port
        # HTTPS with this context (given or self-signed), else plain HTTP.
        self.ssl_context = ssl_context
        self._app = self._build_app(metrics, health, ready, live, debug_routes or {}, guard)
        for path, handler in (debug_post_routes or {}).items():
            self._app.router.add_post(path, handler)
        # (method, path, handler); method "*" takes every method (the handler answers them)
        for method, path, handler in routes:
            self._app.router.add_route(method, path, handler)
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    @staticmethod
    def _build_app(
        metrics: SchedulerMetrics | None,
        health: HealthChecks | None,
        ready: HealthChecks | None,
        live: HealthChecks | None,
        debug_routes: Mapping[str, Handler],
        guard: RequestGuard | None = None,
    ) -> web.Application:
        middlewares = [_header_limits] if guard is None else [_header_limits, _guarding(guard)]
        app = web.Application(middlewares=middlewares)
        reasons = guard is None
        if metrics is not None:
            app.router.add_get("/metrics", metrics_handler(metrics))
            app.router.add_get("/metrics/resources", resource_metrics_handler(metrics))
        # livez defaults to the health checks: both mean "the process is not wedged".
        for endpoint, checks in (
            ("healthz", health),
            ("livez", live if live is not None else health),
            ("readyz", ready),
        ):
            named = _named(checks)
            app.router.add_get(f"/{endpoint}", health_handler(endpoint, named, reasons))
            for name, check in named.items():
                app.router.add_get(f"/{endpoint}/{name}", single_check_handler(check, reasons))
        for path, handler in debug_routes.items():
            app.router.add_get(path, handler)
        return app

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("server not started")
        return self._port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://{host}:{self.port}"

    async def start(self) -> int:
        runner = web.AppRunner(
            self._app,
            access_log=None,
            max_field_size=MAX_FIELD_BYTES,
            logger=_MalformedRequestLog(log, {}),
        )
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.requested_port, ssl_context=self.ssl_context)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        return self._port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ObservabilityServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
