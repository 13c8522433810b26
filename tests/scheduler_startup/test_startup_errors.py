"""Start-up failures are one line that says what to do next (scheduler/app/startup.py)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from kubernetes_asyncio.client import Configuration

from kubesim.tls import self_signed
from observability.tracing import TracingConfigError, resolve_tracing_config
from scheduler.app.service import SchedulerService
from scheduler.app.startup import StartupError, check_api_server, load_serving_certificate
from scheduler.client.rest import ClientSettings, KubeClient


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def client_for(url: str) -> KubeClient:
    return KubeClient(Configuration(host=url), ClientSettings(qps=0))


@pytest.fixture
async def answering() -> AsyncIterator[int]:
    """An HTTP server answering /version with 401, as an API server does to a bad token."""

    async def version(request: web.Request) -> web.Response:
        return web.json_response({"kind": "Status", "code": 401}, status=401)

    app = web.Application()
    app.router.add_get("/version", version)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield int(runner.addresses[0][1])
    await runner.cleanup()


async def test_unreachable_api_server() -> None:
    port = closed_port()
    client = await client_for(f"http://127.0.0.1:{port}")
    try:
        with pytest.raises(StartupError) as error:
            await check_api_server(client)
    finally:
        await client.close()
    assert str(error.value) == (
        f"cannot reach the API server at http://127.0.0.1:{port} (Connection refused); check "
        "--master, --kubeconfig or clientConnection.kubeconfig, and that the API server is "
        "running"
    )


async def test_api_server_that_never_answers() -> None:
    async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)
        writer.close()

    server = await asyncio.start_server(mute, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = await client_for(f"http://127.0.0.1:{port}")
    try:
        with pytest.raises(StartupError, match=r"did not answer within 0\.2s; check --master"):
            await check_api_server(client, timeout=0.2)
    finally:
        await client.close()
        server.close()


async def test_credentials_refused(answering: int) -> None:
    client = await client_for(f"http://127.0.0.1:{answering}")
    try:
        with pytest.raises(StartupError) as error:
            await check_api_server(client)
    finally:
        await client.close()
    assert str(error.value).startswith(
        f"the API server at http://127.0.0.1:{answering} refused our credentials (401 "
        "Unauthorized); check the user"
    )


async def test_untrusted_api_server_certificate(tmp_path: Path) -> None:
    cert = self_signed("127.0.0.1")
    app = web.Application()
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=cert.server_context())
    await site.start()
    port = runner.addresses[0][1]
    client = await client_for(f"https://127.0.0.1:{port}")  # no CA: the system's roots
    try:
        with pytest.raises(StartupError) as error:
            await check_api_server(client)
    finally:
        await client.close()
        await runner.cleanup()
    message = str(error.value)
    assert message.startswith(
        f"cannot verify the TLS certificate of the API server at https://127.0.0.1:{port} ("
    )
    assert message.endswith("); check certificate-authority in the kubeconfig")
    assert "\n" not in message


async def test_port_in_use_for_the_http_endpoints() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        service = SchedulerService(config_path=None, http_host="127.0.0.1", http_port=port)
        config = service.load_initial_config()
        client = await client_for("http://127.0.0.1:9")
        try:
            with pytest.raises(StartupError) as error:
                await service.run(client, config)
        finally:
            await client.close()
    assert str(error.value) == (
        f"cannot serve /metrics and /healthz on 127.0.0.1:{port}: the port is already in use "
        "(another aiosched or kube-scheduler?); stop that process or choose another port with "
        "--secure-port (0 picks a free one)"
    )


async def test_bind_address_not_on_this_machine() -> None:
    service = SchedulerService(config_path=None, http_host="192.0.2.1", http_port=0)
    client = await client_for("http://127.0.0.1:9")
    try:
        with pytest.raises(StartupError, match=r"192\.0\.2\.1 is not an address of this machine"):
            await service.run(client, service.load_initial_config())
    finally:
        await client.close()


def test_serving_certificate_errors(tmp_path: Path) -> None:
    cert, other = self_signed("127.0.0.1"), self_signed("127.0.0.1")
    (tmp_path / "tls.crt").write_bytes(cert.cert_pem)
    (tmp_path / "other.key").write_bytes(other.key_pem)
    with pytest.raises(StartupError) as missing:
        load_serving_certificate(str(tmp_path / "tls.crt"), str(tmp_path / "nope.key"))
    assert "no such file; fix --tls-cert-file / --tls-private-key-file" in str(missing.value)
    with pytest.raises(StartupError) as mismatch:
        load_serving_certificate(str(tmp_path / "tls.crt"), str(tmp_path / "other.key"))
    assert str(mismatch.value).startswith(f"cannot use --tls-cert-file {tmp_path / 'tls.crt'}")
    assert "give a PEM certificate and the PEM key that matches it" in str(mismatch.value)


@pytest.mark.parametrize(
    ("protocol", "expected"),
    [
        ("http/json", "--otel-protocol http/json: the OpenTelemetry Python SDK has no OTLP/JSON "
                      "exporter; supported: grpc (OTLP/gRPC, usually port 4317) and "
                      "http/protobuf (OTLP/HTTP, usually port 4318)"),
        ("bogus", "--otel-protocol bogus: unsupported OTLP protocol; supported: grpc"),
    ],
)  # fmt: skip
def test_unsupported_otlp_protocol(protocol: str, expected: str) -> None:
    with pytest.raises(TracingConfigError) as error:
        resolve_tracing_config(endpoint="http://127.0.0.1:4318", protocol=protocol, environ={})
    assert str(error.value).startswith(expected)
    assert "\n" not in str(error.value)
