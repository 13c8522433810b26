"""An extender served by aiohttp in the test's event loop, answering with test-given handlers."""

from __future__ import annotations

import asyncio
import inspect
import ssl
from collections.abc import Callable
from typing import Any

from aiohttp import web

Handler = Callable[[Any], Any]


class FakeExtender:
    """POST /<prefix>/<verb> → handlers[verb](request JSON); a dict/list answer is sent as
    JSON, a web.Response as is. Every request is recorded as (path, JSON body)."""

    def __init__(
        self,
        handlers: dict[str, Handler],
        *,
        prefix: str = "",
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.handlers = handlers
        self.prefix = prefix
        self.ssl_context = ssl_context
        self.requests: list[tuple[str, Any]] = []
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append((request.path, body))
        verb = request.match_info["verb"]
        handler = self.handlers.get(verb)
        if handler is None:
            return web.Response(status=404)
        answer = handler(body)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, web.StreamResponse):
            return answer
        return web.json_response(answer)

    def calls(self, verb: str) -> list[Any]:
        return [body for path, body in self.requests if path.endswith("/" + verb)]

    async def __aenter__(self) -> FakeExtender:
        app = web.Application()
        app.router.add_post(self.prefix + "/{verb}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self.ssl_context)
        await site.start()
        port = self._runner.addresses[0][1]
        scheme = "https" if self.ssl_context else "http"
        self.url = f"{scheme}://127.0.0.1:{port}{self.prefix}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


async def sleeping(seconds: float, answer: Any) -> Any:
    await asyncio.sleep(seconds)
    return answer


def node_names(args: Any) -> list[str]:
    """The candidate names of an ExtenderArgs, whichever form it came in."""
    if args.get("NodeNames") is not None:
        return list(args["NodeNames"])
    return [n["metadata"]["name"] for n in args["Nodes"]["items"]]
