"""scheduler.client.rest: the session's TLS and proxy settings come from the kubeconfig and the
environment once, not per request."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from kubernetes_asyncio.client import Configuration

from kubesim.embedded import EmbeddedCluster
from scheduler.client.rest import ApiError, ClientSettings, KubeClient, proxy_for, ssl_context_for


@pytest.mark.parametrize(
    ("environ", "url", "expected"),
    [
        ({}, "https://api:6443", None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://api:6443", "http://proxy:3128"),
        ({"https_proxy": "http://proxy:3128"}, "https://api:6443", "http://proxy:3128"),
        ({"HTTP_PROXY": "http://proxy:3128"}, "https://api:6443", None),  # wrong scheme
        ({"HTTP_PROXY": "http://proxy:3128"}, "http://api:8080", "http://proxy:3128"),
        (
            {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "api,.cluster.local"},
            "https://api:6443",
            None,
        ),
        (
            {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": ".cluster.local"},
            "https://kubernetes.default.svc.cluster.local",
            None,
        ),
        ({"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "*"}, "https://api:6443", None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "", None),
    ],
)
def test_proxy_for_reads_the_environment_like_client_go(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], url: str, expected: str | None
) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert proxy_for(url) == expected


def test_ssl_context_follows_verify_ssl() -> None:
    configuration = Configuration()
    configuration.verify_ssl = False
    context = ssl_context_for(configuration)
    assert (context.verify_mode, context.check_hostname) == (ssl.CERT_NONE, False)
    assert ssl_context_for(Configuration()).verify_mode == ssl.CERT_REQUIRED


async def test_requests_honour_the_proxy_resolved_at_connect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with EmbeddedCluster(kubeconfig_out=tmp_path / "kubeconfig") as cluster:
        settings = ClientSettings(kubeconfig=str(cluster.kubeconfig_path), qps=0)
        for name in ("NO_PROXY", "no_proxy", "https_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")  # nothing listens there
        proxied = await KubeClient.connect(settings)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        direct = await KubeClient.connect(settings)
        monkeypatch.delenv("NO_PROXY")  # read at connect time only: direct stays direct
        try:
            status, body = await direct.request("GET", "/api/v1/namespaces/default")
            assert status == 200 and body["metadata"]["name"] == "default"
            with pytest.raises(ApiError):
                await proxied.request("GET", "/api/v1/namespaces/default")
        finally:
            await proxied.close()
            await direct.close()
