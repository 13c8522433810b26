"""`aiosched explain` names the flag to change when the scheme is wrong: a plain-HTTP port asked
over TLS suggests --insecure-http (not the certificate flags), a TLS port asked with
--insecure-http suggests dropping it, a certificate it cannot verify suggests the CA flags."""

from __future__ import annotations

import argparse
import asyncio
import ssl
import threading
from collections.abc import Iterator

import pytest
from aiohttp import web

from scheduler.app.commands import explain
from scheduler.server.certificate import self_signed_context


def _serve(ssl_context: ssl.SSLContext | None) -> Iterator[int]:
    """An aiohttp server on a loop of its own (explain.main runs asyncio.run itself)."""
    loop = asyncio.new_event_loop()
    started = threading.Event()
    port: list[int] = []
    runner = web.AppRunner(web.Application())

    async def start() -> None:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
        await site.start()
        port.append(int(runner.addresses[0][1]))
        started.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop)
    assert started.wait(10)
    try:
        yield port[0]
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@pytest.fixture
def plain_port() -> Iterator[int]:
    yield from _serve(None)


@pytest.fixture
def tls_port() -> Iterator[int]:
    yield from _serve(self_signed_context("127.0.0.1")[0])


def _explain(port: int, *flags: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    explain.add_arguments(parser)
    return parser.parse_args(["default/web", "--http-address", f"127.0.0.1:{port}", *flags])


def test_a_plain_http_port_asked_over_tls_suggests_insecure_http(
    plain_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert explain.main(_explain(plain_port)) == 1
    err = capsys.readouterr().err
    assert "the port answers plain HTTP" in err
    assert "with --insecure-http" in err
    assert "--certificate-authority" not in err


def test_a_tls_port_asked_over_plain_http_suggests_dropping_insecure_http(
    tls_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert explain.main(_explain(tls_port, "--insecure-http")) == 1
    assert "drop --insecure-http" in capsys.readouterr().err


def test_an_unverified_certificate_suggests_the_ca_flags(
    tls_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert explain.main(_explain(tls_port)) == 1
    err = capsys.readouterr().err
    assert "--certificate-authority, or --insecure-skip-tls-verify" in err
    assert "--insecure-http" not in err
