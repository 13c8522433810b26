"""The secure port's guard (scheduler/server/delegated_auth.py) and its self-signed certificate
(scheduler/server/certificate.py), against a fake API server that answers the reviews."""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import ClientSession, web
from cryptography import x509

from observability.http import ObservabilityServer
from observability.metrics import SchedulerMetrics
from scheduler.server.certificate import self_signed_context, self_signed_pem
from scheduler.server.delegated_auth import (
    SUBJECT_ACCESS_REVIEWS,
    TOKEN_REVIEWS,
    DelegatedAuth,
    always_allowed,
)

READER = {
    "username": "system:serviceaccount:monitoring:prometheus",
    "uid": "u-1",
    "groups": ["system:serviceaccounts", "system:authenticated"],
}
NOBODY = {"username": "nobody", "groups": ["system:authenticated"]}


class FakeApiServer:
    """Answers TokenReviews from a token table and SubjectAccessReviews from an allow list."""

    def __init__(self) -> None:
        self.users = {"reader-token": READER, "nobody-token": NOBODY}
        self.allowed = {
            ("system:serviceaccount:monitoring:prometheus", "get", "/metrics"),
            ("system:serviceaccount:monitoring:prometheus", "get", "/debug/explain/default/web"),
        }
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.failing = False

    async def request(self, method: str, path: str, *, body: Any = None) -> tuple[int, Any]:
        assert method == "POST"
        self.requests.append((path, body))
        if self.failing:
            raise OSError("connection refused")
        spec = body["spec"]
        if path == TOKEN_REVIEWS:
            user = self.users.get(spec["token"])
            status = {"authenticated": True, "user": user} if user else {"user": {}}
            return 201, {**body, "status": status}
        assert path == SUBJECT_ACCESS_REVIEWS
        attributes = spec["nonResourceAttributes"]
        allowed = (spec["user"], attributes["verb"], attributes["path"]) in self.allowed
        return 201, {**body, "status": {"allowed": allowed}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, FakeApiServer, Clock]]:
    api, clock = FakeApiServer(), Clock()
    auth = DelegatedAuth(api, api, clock=clock)
    context, _ = self_signed_context("127.0.0.1")

    async def explain(request: web.Request) -> web.Response:
        return web.json_response({"pod": request.match_info["name"]})

    async with ObservabilityServer(
        port=0,
        metrics=SchedulerMetrics(),
        ssl_context=context,
        guard=auth.guard,
        debug_routes={"/debug/explain/{namespace}/{name}": explain},
    ) as server:
        yield server.url, api, clock


async def get(url: str, token: str | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with ClientSession() as session, session.get(url, headers=headers, ssl=False) as r:
        raw = await r.read()
        try:
            return r.status, orjson.loads(raw)
        except orjson.JSONDecodeError:
            return r.status, raw.decode()


@pytest.mark.parametrize(
    "path", ["/healthz", "/livez", "/readyz", "/readyz/ping", "/healthz?verbose"]
)
async def test_health_is_open(served: tuple[str, FakeApiServer, Clock], path: str) -> None:
    url, api, _ = served

    status, _ = await get(url + path)

    assert status == 200
    assert api.requests == []


@pytest.mark.parametrize("token", [None, "unknown-token"])
async def test_no_or_unknown_token_is_401(
    served: tuple[str, FakeApiServer, Clock], token: str | None
) -> None:
    url, _, _ = served

    status, body = await get(url + "/metrics", token)

    assert status == 401
    assert (body["kind"], body["reason"], body["message"]) == (
        "Status",
        "Unauthorized",
        "Unauthorized",
    )


async def test_a_token_without_permission_is_403_in_upstream_s_words(
    served: tuple[str, FakeApiServer, Clock],
) -> None:
    url, _, _ = served

    status, body = await get(url + "/metrics", "nobody-token")

    assert status == 403
    assert body["message"] == 'forbidden: User "nobody" cannot get path "/metrics"'


async def test_an_allowed_token_reads_metrics_and_debug(
    served: tuple[str, FakeApiServer, Clock],
) -> None:
    url, api, _ = served

    status, text = await get(url + "/metrics", "reader-token")
    assert status == 200 and "scheduler_" in text
    status, body = await get(url + "/debug/explain/default/web", "reader-token")
    assert (status, body) == (200, {"pod": "web"})
    status, _ = await get(url + "/debug/explain/default/other", "reader-token")
    assert status == 403
    review = next(body for path, body in api.requests if path == SUBJECT_ACCESS_REVIEWS)
    assert review["spec"] == {
        "user": READER["username"],
        "uid": "u-1",
        "groups": READER["groups"],
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }


async def test_reviews_are_cached_for_ten_seconds(served: tuple[str, FakeApiServer, Clock]) -> None:
    url, api, clock = served

    for _ in range(3):
        assert (await get(url + "/metrics", "reader-token"))[0] == 200
        assert (await get(url + "/metrics", "nobody-token"))[0] == 403
        assert (await get(url + "/metrics", "unknown-token"))[0] == 401
    assert len(api.requests) == 5  # 3 token reviews, 2 access reviews
    clock.now += 9.9
    assert (await get(url + "/metrics", "reader-token"))[0] == 200
    assert len(api.requests) == 5
    clock.now += 0.2
    assert (await get(url + "/metrics", "reader-token"))[0] == 200
    assert len(api.requests) == 7


async def test_an_unreachable_api_server_refuses_rather_than_allows(
    served: tuple[str, FakeApiServer, Clock],
) -> None:
    url, api, _ = served
    api.failing = True

    assert (await get(url + "/metrics", "reader-token"))[0] == 401
    api.failing = False
    assert (await get(url + "/metrics", "reader-token"))[0] == 200  # failures are not cached
    api.failing = True
    api.users["other-token"] = READER
    assert (await get(url + "/metrics", "other-token"))[0] == 401


def test_always_allowed_paths() -> None:
    assert [
        p
        for p in (
            "/healthz",
            "/livez/ping",
            "/readyz",
            "/metrics",
            "/healthzz",
            "/debug/explain/a/b",
        )
        if always_allowed(p)
    ] == ["/healthz", "/livez/ping", "/readyz"]


def test_the_self_signed_certificate_names_localhost_and_the_bound_address() -> None:
    cert_pem, _ = self_signed_pem("10.1.2.3")
    cert = x509.load_pem_x509_certificate(cert_pem)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value

    assert cert.issuer == cert.subject  # self-signed
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    assert set(names.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("10.1.2.3"),
    }
    assert (cert.not_valid_after_utc - cert.not_valid_before_utc).days >= 365
    wildcard = x509.load_pem_x509_certificate(self_signed_pem("0.0.0.0")[0])
    ips = wildcard.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ips.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]


async def test_the_generated_certificate_verifies_for_127_0_0_1() -> None:
    context, cert_pem = self_signed_context("127.0.0.1")
    trusted = ssl.create_default_context(cadata=cert_pem.decode())

    async with ObservabilityServer(port=0, ssl_context=context) as server, ClientSession() as s:
        assert server.url.startswith("https://127.0.0.1:")
        async with s.get(server.url + "/healthz", ssl=trusted) as response:
            assert (response.status, await response.text()) == (200, "ok")
