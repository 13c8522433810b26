"""kubesim's request counts (kubesim/request_metrics.py): how requests are classified, and the
/metrics text round trip the benchmark relies on."""

from __future__ import annotations

import pytest

from kubesim.request_metrics import (
    RequestCounter,
    client_of,
    parse_exposition,
    resource_of,
    verb_of,
)

# (method, path, query, verb, resource, subresource)
CASES = [
    ("POST", "/api/v1/namespaces/ns/pods/p/binding", {}, "POST", "pods", "binding"),
    ("POST", "/apis/events.k8s.io/v1/namespaces/ns/events", {}, "POST", "events", ""),
    ("GET", "/api/v1/pods", {"watch": "1"}, "WATCH", "pods", ""),
    ("GET", "/api/v1/pods", {}, "LIST", "pods", ""),
    ("GET", "/api/v1/namespaces/ns/pods", {}, "LIST", "pods", ""),
    ("GET", "/api/v1/namespaces/ns/pods/p", {}, "GET", "pods", ""),
    ("GET", "/api/v1/namespaces/ns", {}, "GET", "namespaces", ""),
    ("PUT", "/api/v1/namespaces/ns/finalize", {}, "PUT", "namespaces", "finalize"),
    ("PATCH", "/api/v1/namespaces/ns/pods/p/status", {}, "PATCH", "pods", "status"),
    ("GET", "/apis/apps/v1/replicasets", {"watch": "true"}, "WATCH", "replicasets", ""),
    ("GET", "/api", {}, "GET", "", ""),
    ("GET", "/openapi/v2", {}, "GET", "", ""),
]


@pytest.mark.parametrize(("method", "path", "query", "verb", "resource", "sub"), CASES)
def test_requests_are_classified_as_the_api_server_does(
    method: str, path: str, query: dict[str, str], verb: str, resource: str, sub: str
) -> None:
    assert verb_of(method, path, query) == verb
    assert resource_of(path) == (resource, sub)


@pytest.mark.parametrize(
    ("agent", "client"),
    [
        ("kubectl/v1.31.0 (linux/amd64) kubernetes/abc", "kubectl"),
        ("aiosched", "aiosched"),
        ("Python/3.11 aiohttp/3.9", "Python"),
        ("", "unknown"),
    ],
)
def test_client_is_the_user_agents_product(agent: str, client: str) -> None:
    assert client_of(agent) == client


def test_exposition_round_trips() -> None:
    counter = RequestCounter()
    counter.counts[("aiosched", "POST", "pods", "binding", 201)] = 7
    counter.counts[("kubectl", "LIST", "pods", "", 200)] = 2
    text = counter.exposition()
    assert "# TYPE kubesim_requests_total counter" in text
    assert parse_exposition(text) == counter.counts
