"""kubesim.discovery: the documents kubectl's discovery client reads."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from kubesim import discovery

AGGREGATED = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)


@pytest.fixture
async def client() -> AsyncIterator[TestClient[Any, Any]]:
    app = web.Application()
    discovery.add_routes(app)
    async with TestClient(TestServer(app)) as test_client:
        yield test_client


async def get_json(
    client: TestClient[Any, Any], path: str, accept: str = "application/json"
) -> tuple[int, str, Any]:
    response = await client.get(path, headers={"Accept": accept})
    return response.status, response.headers["Content-Type"], await response.json(content_type=None)


async def test_version(client: TestClient[Any, Any]) -> None:
    status, _, body = await get_json(client, "/version")
    assert status == 200
    assert body["gitVersion"].startswith("v1.") and body["gitVersion"].endswith("-aiosched")
    assert body["major"] == "1" and body["minor"].isdigit()
    assert "/" in body["platform"]


@pytest.mark.parametrize(
    ("path", "accept", "kind", "content_type"),
    [
        ("/api", "application/json", "APIVersions", "application/json"),
        ("/api", AGGREGATED, "APIGroupDiscoveryList", discovery.AGGREGATED_V2_CONTENT_TYPE),
        ("/apis", "application/json", "APIGroupList", "application/json"),
        ("/apis", AGGREGATED, "APIGroupDiscoveryList", discovery.AGGREGATED_V2_CONTENT_TYPE),
        # v2beta1 only: answered with the legacy document, which clients accept as a fallback.
        (
            "/apis",
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
            "application/json",
            "APIGroupList",
            "application/json",
        ),
    ],
)
async def test_negotiates_aggregated_discovery(
    client: TestClient[Any, Any], path: str, accept: str, kind: str, content_type: str
) -> None:
    status, got_type, body = await get_json(client, path, accept)
    assert (status, got_type, body["kind"]) == (200, content_type, kind)


async def test_core_resource_list_has_subresources(client: TestClient[Any, Any]) -> None:
    _, _, body = await get_json(client, "/api/v1")
    by_name = {r["name"]: r for r in body["resources"]}
    assert body["groupVersion"] == "v1"
    assert by_name["pods"]["shortNames"] == ["po"] and by_name["pods"]["namespaced"]
    assert by_name["pods"]["categories"] == ["all"]
    assert by_name["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert by_name["pods/binding"]["kind"] == "Binding"
    assert by_name["pods/binding"]["verbs"] == ["create"]
    assert (by_name["pods/eviction"]["group"], by_name["pods/eviction"]["kind"]) == (
        "policy",
        "Eviction",
    )
    assert by_name["nodes"]["namespaced"] is False
    assert "deletecollection" not in by_name["namespaces"]["verbs"]


async def test_groups(client: TestClient[Any, Any]) -> None:
    _, _, body = await get_json(client, "/apis")
    names = [g["name"] for g in body["groups"]]
    assert names == [
        "apps",
        "batch",
        "events.k8s.io",
        "coordination.k8s.io",
        "scheduling.k8s.io",
        "policy",
        "storage.k8s.io",
        "rbac.authorization.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "apiextensions.k8s.io",
        "resource.k8s.io",
    ]
    _, _, group = await get_json(client, "/apis/apps")
    assert group["kind"] == "APIGroup"
    assert group["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}
    _, _, resources = await get_json(client, "/apis/storage.k8s.io/v1")
    assert resources["groupVersion"] == "storage.k8s.io/v1"
    assert {r["name"] for r in resources["resources"]} == {
        "storageclasses",
        "csinodes",
        "csidrivers",
        "csistoragecapacities",
        "volumeattachments",
        "volumeattachments/status",
    }


@pytest.mark.parametrize("path", ["/apis/nope", "/apis/apps/v2", "/api/v2"])
async def test_unknown_group_version_is_404_status(client: TestClient[Any, Any], path: str) -> None:
    status, _, body = await get_json(client, path)
    assert status == 404
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "NotFound", 404)


async def test_aggregated_matches_legacy(client: TestClient[Any, Any]) -> None:
    _, _, aggregated = await get_json(client, "/apis", AGGREGATED)
    for item in aggregated["items"]:
        for version in item["versions"]:
            _, _, legacy = await get_json(
                client, f"/apis/{item['metadata']['name']}/{version['version']}"
            )
            plain = {r["name"] for r in legacy["resources"] if "/" not in r["name"]}
            assert plain == {r["resource"] for r in version["resources"]}
    _, _, core = await get_json(client, "/api", AGGREGATED)
    pods = next(r for r in core["items"][0]["versions"][0]["resources"] if r["resource"] == "pods")
    assert pods["scope"] == "Namespaced"
    assert [s["subresource"] for s in pods["subresources"]] == [
        "status",
        "binding",
        "eviction",
        "resize",
    ]
