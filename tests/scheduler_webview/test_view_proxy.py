"""`aiosched view`: the loopback proxy that lets a browser open the web view on the secure port
by adding the user's bearer token. It forwards only the view's GETs, only to requests addressed
to localhost, never the browser's own credentials; the scheduler's guard still decides."""

from __future__ import annotations

import argparse
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from observability.http import ObservabilityServer
from scheduler.app.cli import build_parser, main
from scheduler.app.commands import view
from scheduler.app.commands.view import Credentials, host_is_loopback, proxy_app
from scheduler.client.kubeconfig import KubeconfigError
from scheduler.server.webview import PAGE, STATE_PATH, VIEW_PATH, web_view_routes


class Upstream:
    """A secure port stand-in: the web view's routes behind a guard that wants `Bearer good`
    and records the Authorization header of every request."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []

        async def guard(request: web.Request) -> web.StreamResponse | None:
            authorization = request.headers.get("Authorization")
            self.seen.append(authorization)
            if authorization is None:
                return web.json_response({"message": "Unauthorized"}, status=401)
            if authorization != "Bearer good":
                return web.json_response({"message": "forbidden"}, status=403)
            return None

        self.server = ObservabilityServer(
            port=0,
            debug_routes=web_view_routes(lambda: {"queue": {"active": 2}})
            | {"/debug/explain/x": _never},
            guard=guard,
        )


async def _never(request: web.Request) -> web.StreamResponse:
    raise AssertionError("not forwarded")


async def _proxy(upstream: Upstream, credentials: Credentials) -> tuple[web.AppRunner, str]:
    session = aiohttp.ClientSession()
    app = proxy_app(upstream.server.url, credentials, session, False)
    app.on_cleanup.append(lambda _: session.close())
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    return runner, f"http://{host}:{port}"


async def test_the_proxy_adds_the_token_and_forwards_only_the_view() -> None:
    upstream = Upstream()
    async with upstream.server, aiohttp.ClientSession() as browser:
        runner, url = await _proxy(upstream, Credentials("good"))
        try:
            async with browser.get(url + VIEW_PATH) as response:
                assert response.status == 200 and await response.text() == PAGE
                assert "default-src 'none'" in response.headers["Content-Security-Policy"]
            async with browser.get(url + STATE_PATH) as response:
                assert await response.json() == {"queue": {"active": 2}}
            async with browser.get(url + "/", allow_redirects=False) as response:
                assert response.status == 302 and response.headers["Location"] == VIEW_PATH
            for path in ("/debug/explain/x", "/metrics", "/debug/view/../explain/x"):
                async with browser.get(url + path) as response:
                    assert response.status == 404, path
            async with browser.post(url + STATE_PATH, data=b"{}") as response:
                assert response.status == 405
            # DNS rebinding: a page served by another name reaching the loopback port
            async with browser.get(url + VIEW_PATH, headers={"Host": "evil.example"}) as response:
                assert response.status == 403
        finally:
            await runner.cleanup()
    assert upstream.seen == ["Bearer good", "Bearer good"]


async def test_the_scheduler_still_decides_and_browser_credentials_are_not_passed_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    upstream = Upstream()
    async with upstream.server, aiohttp.ClientSession() as browser:
        runner, url = await _proxy(upstream, Credentials("not-allowed"))
        try:
            async with browser.get(url + STATE_PATH) as response:
                assert response.status == 403
        finally:
            await runner.cleanup()
        runner, url = await _proxy(upstream, Credentials(""))
        try:
            headers = {"Authorization": "Bearer good", "Cookie": "session=1"}
            async with browser.get(url + STATE_PATH, headers=headers) as response:
                assert response.status == 401
        finally:
            await runner.cleanup()
    assert upstream.seen == ["Bearer not-allowed", None]
    err = capsys.readouterr().err
    assert "answered 403" in err and "not-allowed" not in err  # never the token


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1:8001", True),
        ("localhost:8001", True),
        ("LOCALHOST", True),
        ("[::1]:8001", True),
        ("evil.example:8001", False),
        ("127.0.0.1.evil.example", False),
        ("10.0.0.1:8001", False),
    ],
)
def test_host_is_loopback(host: str, loopback: bool) -> None:
    assert host_is_loopback(host) is loopback


def _kubeconfig(path: Path, user: dict[str, str]) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443'}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
        f"users: [{{name: u, user: {user!r}}}]\n".replace("'", '"')
    )
    return path


def _args(*argv: str) -> argparse.Namespace:
    parser, _ = build_parser()
    return parser.parse_args(["view", *argv])


async def test_credentials_come_from_the_kubeconfig_or_the_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AIOSCHED_TOKEN", raising=False)
    config = _kubeconfig(tmp_path / "kubeconfig", {"token": "from-kubeconfig"})
    credentials = await view._credentials(_args("--kubeconfig", str(config)))
    assert await credentials.authorization() == "Bearer from-kubeconfig"
    monkeypatch.setenv("AIOSCHED_TOKEN", "from-env")
    credentials = await view._credentials(_args("--kubeconfig", str(config)))
    assert await credentials.authorization() == "Bearer from-env"
    monkeypatch.delenv("AIOSCHED_TOKEN")
    nobody = _kubeconfig(tmp_path / "nobody", {"username": "u"})
    with pytest.raises(KubeconfigError, match=r"no bearer token .* pass --token"):
        await view._credentials(_args("--kubeconfig", str(nobody)))


def test_it_listens_on_loopback_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", "--address", "0.0.0.0"]) == 2
    assert "not a loopback address" in capsys.readouterr().err
