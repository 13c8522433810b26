"""CustomResourceDefinitions through kubesim's HTTP API: the CRD's validation and status, then
its custom resources: schema, status subresource, generation, Table columns, list and watch with
selectors, versions, deletion (customresource_handler.go, strategy.go, tableconvertor.go)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import orjson
import pytest
from crd_harness import TABLE, TOKEN, Kube

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
WIDGET_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1},
                "color": {"type": "string", "default": "blue", "enum": ["blue", "red"]},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def crd(**changes: Any) -> dict[str, Any]:
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": copy.deepcopy(WIDGET_SCHEMA)},
        "subresources": {"status": {}},
        "additionalPrinterColumns": [
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
            {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
            {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"},
        ],
    }
    body: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [version],
        },
    }
    for path, value in changes.items():
        target = body
        keys = path.split("__")
        for key in keys[:-1]:
            target = target[key] if not key.isdigit() else target[int(key)]  # type: ignore[index]
        target[keys[-1]] = value
    return body


def widget(name: str = "w1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"size": 1, **spec},
    }


async def create_crd(kube: Kube, body: dict[str, Any] | None = None) -> dict[str, Any]:
    status, created = await kube.call("POST", CRDS, body or crd())
    assert status == 201, created
    return created


# ---- the CRD -------------------------------------------------------------------------------------


async def test_crd_is_defaulted_and_established(kube: Kube) -> None:
    created = await create_crd(kube)
    names = created["spec"]["names"]
    assert names["singular"] == "widget" and names["listKind"] == "WidgetList"
    assert created["spec"]["conversion"] == {"strategy": "None"}
    status = created["status"]
    assert status["acceptedNames"] == names
    assert status["storedVersions"] == ["v1"]
    conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert conditions == {
        "NamesAccepted": ("True", "NoConflicts"),
        "Established": ("True", "InitialNamesAccepted"),
    }


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"metadata__name": "gadgets.example.com"},
            'metadata.name: Invalid value: "gadgets.example.com": must be '
            'spec.names.plural+"."+spec.group',
        ),
        (
            {"spec__group": "example", "metadata__name": "widgets.example"},
            'spec.group: Invalid value: "example": should be a domain with at least one dot',
        ),
        (
            {"spec__scope": "Global"},
            'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
        ),
        (
            {"spec__versions__0__storage": False},
            "must have exactly one version marked as storage version",
        ),
        (
            {"spec__versions__0__schema": {}},
            "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required",
        ),
        (
            {
                "spec__versions__0__schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {"spec": {"properties": {}}},
                    }
                }
            },
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must "
            "not be empty for specified object fields",
        ),
        (
            {"spec__names__kind": "widget kind"},
            'spec.names.kind: Invalid value: "widget kind": may have mixed case, but should '
            "otherwise match:",
        ),
        (
            {
                "spec__versions__0__additionalPrinterColumns": [
                    {"name": "X", "type": "map", "jsonPath": ".spec"}
                ]
            },
            'spec.versions[0].additionalPrinterColumns[0].type: Invalid value: "map": must be one '
            "of boolean,date,integer,number,string",
        ),
    ],
)
async def test_invalid_crds_are_refused(kube: Kube, changes: dict[str, Any], message: str) -> None:
    status, body = await kube.call("POST", CRDS, crd(**changes))
    assert status == 422, body
    assert body["reason"] == "Invalid"
    assert message in body["message"], body["message"]


async def test_a_crd_whose_names_are_taken_is_not_established(kube: Kube) -> None:
    await create_crd(kube)
    other = crd(metadata__name="gizmos.example.com")
    other["spec"]["names"] = {"plural": "gizmos", "kind": "Gizmo", "shortNames": ["wd"]}
    status, body = await kube.call("POST", CRDS, other)
    assert status == 201, body
    conditions = {c["type"]: c for c in body["status"]["conditions"]}
    assert conditions["NamesAccepted"]["status"] == "False"
    assert conditions["NamesAccepted"]["message"] == '"wd" is already in use'
    assert conditions["Established"]["status"] == "False"
    status, _ = await kube.call("GET", "/apis/example.com/v1/namespaces/default/gizmos")
    assert status == 404


async def test_crd_group_and_plural_are_immutable(kube: Kube) -> None:
    created = await create_crd(kube)
    created["spec"]["scope"] = "Cluster"
    status, body = await kube.call("PUT", f"{CRDS}/widgets.example.com", created)
    assert status == 422
    assert 'spec.scope: Invalid value: "Cluster": field is immutable' in body["message"]


# ---- custom resources ------------------------------------------------------------------------


async def test_discovery_lists_the_custom_resource(kube: Kube) -> None:
    await create_crd(kube)
    status, groups = await kube.call("GET", "/apis")
    assert status == 200
    group = next(g for g in groups["groups"] if g["name"] == "example.com")
    assert group["preferredVersion"] == {"groupVersion": "example.com/v1", "version": "v1"}
    status, resources = await kube.call("GET", "/apis/example.com/v1")
    assert [(r["name"], r.get("shortNames")) for r in resources["resources"]] == [
        ("widgets", ["wd"]),
        ("widgets/status", None),
    ]


async def test_create_prunes_defaults_and_validates(kube: Kube) -> None:
    await create_crd(kube)
    body = widget(extra="gone")
    body["status"] = {"ready": True}
    status, created = await kube.call("POST", WIDGETS, body)
    assert status == 201, created
    assert created["spec"] == {"size": 1, "color": "blue"}
    assert "status" not in created  # written through /status only
    meta = created["metadata"]
    assert meta["generation"] == 1 and meta["uid"] and meta["creationTimestamp"]
    status, body = await kube.call("POST", WIDGETS, widget("w2", size=0, color="green"))
    assert status == 422
    assert body["message"] == (
        'Widget.example.com "w2" is invalid: [spec.size: Invalid value: 0: spec.size in body '
        'should be greater than or equal to 1, spec.color: Unsupported value: "green": '
        'supported values: "blue", "red"]'
    )
    assert body["details"]["group"] == "example.com"
    status, body = await kube.call("POST", WIDGETS, widget("w3", extra=1), fieldValidation="Strict")
    assert status == 400
    assert body["message"] == (  # create.go's transformDecodeError
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
        'unknown field "spec.extra"'
    )


async def test_status_subresource_and_generation(kube: Kube) -> None:
    await create_crd(kube)
    _, created = await kube.call("POST", WIDGETS, widget())
    # /status writes status only
    update = {**created, "spec": {"size": 9}, "status": {"ready": True}}
    status, body = await kube.call("PUT", f"{WIDGETS}/w1/status", update)
    assert status == 200, body
    assert body["spec"]["size"] == 1 and body["status"] == {"ready": True}
    assert body["metadata"]["generation"] == 1
    # the main resource ignores status; a spec change bumps the generation
    update = {**body, "spec": {"size": 4}, "status": {"ready": False}}
    status, body = await kube.call("PUT", f"{WIDGETS}/w1", update)
    assert status == 200, body
    assert body["spec"] == {"size": 4, "color": "blue"} and body["status"] == {"ready": True}
    assert body["metadata"]["generation"] == 2
    status, body = await kube.call(
        "PATCH",
        f"{WIDGETS}/w1/status",
        {"status": {"ready": "yes"}},
        content_type="application/merge-patch+json",
    )
    assert status == 422
    assert "status.ready in body must be of type boolean" in body["message"]
    status, _ = await kube.call(
        "PATCH",
        f"{WIDGETS}/w1",
        {"spec": {"size": 2}},
        content_type="application/strategic-merge-patch+json",
    )
    assert status == 415


async def test_table_has_the_printer_columns(kube: Kube) -> None:
    await create_crd(kube)
    await kube.call("POST", WIDGETS, widget())
    status, table = await kube.call("GET", WIDGETS, accept=TABLE)
    assert status == 200
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size", "Color", "Ready"]
    assert table["rows"][0]["cells"] == ["w1", 1, "blue", None]
    status, one = await kube.call("GET", f"{WIDGETS}/w1", accept=TABLE)
    assert one["rows"][0]["cells"][0] == "w1"


async def test_without_columns_the_table_shows_name_and_age(kube: Kube) -> None:
    body = crd()
    del body["spec"]["versions"][0]["additionalPrinterColumns"]
    await create_crd(kube, body)
    await kube.call("POST", WIDGETS, widget())
    _, table = await kube.call("GET", WIDGETS, accept=TABLE)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["rows"][0]["cells"][0] == "w1"


async def test_list_with_selectors_and_cluster_wide(kube: Kube) -> None:
    await create_crd(kube)
    for name in ("a", "b"):
        await kube.call("POST", WIDGETS, widget(name))
    _, listed = await kube.call("GET", WIDGETS, labelSelector="app=b")
    assert [w["metadata"]["name"] for w in listed["items"]] == ["b"]
    assert listed["kind"] == "WidgetList" and listed["apiVersion"] == "example.com/v1"
    _, listed = await kube.call(
        "GET",
        "/apis/example.com/v1/widgets",
        fieldSelector="metadata.name=a,metadata.namespace=default",
    )
    assert [w["metadata"]["name"] for w in listed["items"]] == ["a"]
    status, body = await kube.call("GET", WIDGETS, fieldSelector="spec.size=1")
    assert status == 400, body


async def test_watch_streams_custom_objects(kube: Kube) -> None:
    await create_crd(kube)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with kube.client.get(
        WIDGETS, params={"watch": "true", "timeoutSeconds": "5"}, headers=headers
    ) as response:
        await kube.call("POST", WIDGETS, widget("w1"))
        line = await asyncio.wait_for(response.content.readline(), 5)
        event = orjson.loads(line)
    assert event["type"] == "ADDED"
    assert event["object"]["metadata"]["name"] == "w1"


async def test_versions_share_storage_with_none_conversion(kube: Kube) -> None:
    body = crd()
    v1 = body["spec"]["versions"][0]
    v1beta1 = {**copy.deepcopy(v1), "name": "v1beta1", "storage": False}
    body["spec"]["versions"] = [v1beta1, v1]
    await create_crd(kube, body)
    beta = widget()
    beta["apiVersion"] = "example.com/v1beta1"
    status, created = await kube.call(
        "POST", "/apis/example.com/v1beta1/namespaces/default/widgets", beta
    )
    assert status == 201, created
    assert created["apiVersion"] == "example.com/v1beta1"
    _, stored = await kube.call("GET", f"{WIDGETS}/w1")
    assert stored["apiVersion"] == "example.com/v1"
    _, groups = await kube.call("GET", "/apis/example.com")
    assert groups["preferredVersion"]["version"] == "v1"


async def test_deleting_the_crd_deletes_its_objects(kube: Kube) -> None:
    await create_crd(kube)
    await kube.call("POST", WIDGETS, widget())
    status, _ = await kube.call("DELETE", f"{CRDS}/widgets.example.com")
    assert status == 200
    status, _ = await kube.call("GET", WIDGETS)
    assert status == 404
    assert kube.cluster.api.store.items("example.com/widgets") == []
    await create_crd(kube)
    _, listed = await kube.call("GET", WIDGETS)
    assert listed["items"] == []


async def test_namespace_deletion_removes_custom_objects(kube: Kube) -> None:
    await create_crd(kube)
    await kube.call("POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
    team = "/apis/example.com/v1/namespaces/team/widgets"
    status, _ = await kube.call("POST", team, widget())
    assert status == 201
    await kube.call("DELETE", "/api/v1/namespaces/team")
    assert kube.cluster.api.store.items("example.com/widgets") == []


async def test_custom_objects_survive_a_restart(kube: Kube, tmp_path: Any) -> None:
    from kubesim import customresources, persistence
    from kubesim.store import Store

    await create_crd(kube)
    await kube.call("POST", WIDGETS, widget())
    persistence.write_snapshot(tmp_path, kube.cluster.api.store)
    restarted = Store()
    persistence.replay(tmp_path, restarted)
    served = customresources.registry_of(restarted).lookup("example.com", "v1", "widgets")
    assert served is not None and served.resource.namespaced
    assert [w["metadata"]["name"] for w in restarted.items("example.com/widgets")] == ["w1"]
