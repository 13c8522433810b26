"""kubesim.openapi: the documents kubectl explain / apply / validation read, and strict fields."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from kubesim import openapi
from kubesim.resources import RESOURCES, lookup

POD = lookup("", "v1", "pods")
PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


@pytest.fixture
async def client() -> AsyncIterator[TestClient[Any, Any]]:
    app = web.Application()
    openapi.add_routes(app)
    async with TestClient(TestServer(app)) as test_client:
        yield test_client


@pytest.mark.parametrize(
    ("obj", "unknown"),
    [
        (
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "a", "labels": {"x": "y"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
            [],
        ),
        ({"metadata": {"name": "a", "bogus": 1}}, ["metadata.bogus"]),
        (
            {
                "spec": {
                    "foo": 1,
                    "containers": [{"name": "c"}, {"name": "d", "imagePullPolice": 1}],
                }
            },
            ["spec.foo", "spec.containers[1].imagePullPolice"],
        ),
        (
            {"spec": {"containers": [{"ports": [{"containerPort": 80, "bar": 1}]}]}},
            ["spec.containers[0].ports[0].bar"],
        ),
        ({"spec": {"nodeSelector": {"any": "thing"}, "overhead": {"cpu": "1"}}}, []),
        (
            {"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}, "limitz": {}}}]}},
            ["spec.containers[0].resources.limitz"],
        ),
        ({"metadata": {"managedFields": [{"fieldsV1": {"f:spec": {}}}]}}, []),
        ({"spec": {"containers": [{"livenessProbe": {"httpGet": {"port": "http"}}}]}}, []),
        (
            {"status": {"conditions": [{"type": "Ready", "extra": True}]}},
            ["status.conditions[0].extra"],
        ),
        ({"extraTop": 1}, ["extraTop"]),
    ],
)
def test_unknown_fields(obj: dict[str, Any], unknown: list[str]) -> None:
    assert POD is not None
    assert openapi.unknown_fields(POD, obj) == unknown


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: f"{r.group}/{r.kind}")
def test_every_resource_accepts_its_metadata(resource: Any) -> None:
    obj = {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": "x", "labels": {"a": "b"}},
    }
    assert openapi.unknown_fields(resource, obj) == []


def _supports_field_validation(doc: dict[str, Any], group: str, version: str, kind: str) -> bool:
    """kubectl's check (cli-runtime resource/query_param_verifier_v3.go supportsQueryParamV3)."""
    for item in doc["paths"].values():
        patch = item.get("patch")
        if patch is None:
            continue
        if patch.get("x-kubernetes-group-version-kind") != {
            "group": group,
            "version": version,
            "kind": kind,
        }:
            continue
        return any(p["name"] == "fieldValidation" for p in patch["parameters"])
    return False


async def test_v3_documents_advertise_field_validation(client: TestClient[Any, Any]) -> None:
    root = await (await client.get("/openapi/v3")).json()
    assert set(root["paths"]) == {
        "api/v1",
        "apis/apps/v1",
        "apis/batch/v1",
        "apis/events.k8s.io/v1",
        "apis/coordination.k8s.io/v1",
        "apis/scheduling.k8s.io/v1",
        "apis/policy/v1",
        "apis/storage.k8s.io/v1",
        "apis/rbac.authorization.k8s.io/v1",
        "apis/authentication.k8s.io/v1",
        "apis/authorization.k8s.io/v1",
        "apis/apiextensions.k8s.io/v1",
        "apis/resource.k8s.io/v1",
        "apis/scheduling.k8s.io/v1beta1",
        "apis/resource.k8s.io/v1beta2",
    }
    for resource in RESOURCES:
        url = root["paths"][("apis/" if resource.group else "api/") + resource.group_version][
            "serverRelativeURL"
        ]
        response = await client.get(url)
        assert response.status == 200
        doc = await response.json()
        assert doc["openapi"].startswith("3.")
        if "patch" in resource.verbs:
            assert _supports_field_validation(doc, resource.group, resource.version, resource.kind)
        kinds = [
            s.get("x-kubernetes-group-version-kind") for s in doc["components"]["schemas"].values()
        ]
        assert [
            {"group": resource.group, "version": resource.version, "kind": resource.kind}
        ] in kinds


async def test_v3_pod_schema_carries_patch_metadata(client: TestClient[Any, Any]) -> None:
    doc = await (await client.get("/openapi/v3/api/v1")).json()
    schemas = doc["components"]["schemas"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    assert schemas["io.k8s.api.core.v1.Container"]["required"] == ["name"]
    metadata = schemas["io.k8s.api.core.v1.Pod"]["properties"]["metadata"]
    meta_ref = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    assert metadata.get("$ref") == meta_ref or metadata["allOf"] == [{"$ref": meta_ref}]
    node_name = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["nodeName"]
    assert node_name["type"] == "string" and "NodeName" in node_name["description"]
    taints = schemas["io.k8s.api.core.v1.NodeSpec"]["properties"]["taints"]
    assert "x-kubernetes-patch-strategy" not in taints  # upstream: atomic replace


async def test_v3_unknown_group_version_is_404(client: TestClient[Any, Any]) -> None:
    assert (await client.get("/openapi/v3/apis/nope/v1")).status == 404


async def test_v2_json_and_protobuf(client: TestClient[Any, Any]) -> None:
    response = await client.get("/openapi/v2", headers={"Accept": "application/json"})
    doc = await response.json()
    assert doc["swagger"] == "2.0"
    assert doc["definitions"]["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "version": "v1", "kind": "Pod"}
    ]
    response = await client.get("/openapi/v2", headers={"Accept": PROTOBUF})
    assert response.status == 200
    assert response.headers["Content-Type"].endswith("+protobuf")
    fields = _top_level_fields(await response.read())
    assert fields[1] == [b"2.0"]
    assert set(fields) == {1, 2, 8, 9}
    definition_names = {
        _top_level_fields(entry)[1][0] for entry in _top_level_fields(fields[9][0])[1]
    }
    assert b"io.k8s.api.core.v1.Pod" in definition_names


def _top_level_fields(data: bytes) -> dict[int, list[bytes]]:
    """Length-delimited fields of one protobuf message (all kubesim's v2 document uses)."""

    def varint(pos: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = data[pos]
            value |= (byte & 0x7F) << shift
            pos += 1
            shift += 7
            if not byte & 0x80:
                return value, pos

    fields: dict[int, list[bytes]] = {}
    pos = 0
    while pos < len(data):
        key, pos = varint(pos)
        assert key & 7 == 2, "only length-delimited fields at these levels"
        length, pos = varint(pos)
        fields.setdefault(key >> 3, []).append(data[pos : pos + length])
        pos += length
    return fields
