"""Unknown fields of built-in kinds are dropped as upstream's decoder drops them, on create,
update and every patch type, whatever ?fieldValidation says; Strict refuses them with upstream's
messages (create.go / update.go: a 400 through transformDecodeError; patch.go: a 422 on
`patch`), Warn answers one Warning header each, Ignore nothing. Fields of the real v1.36
schema, newer status fields included, are kept: kubesim's definitions match upstream's
published document property for property (data/upstream_v1_36_properties.json)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from kubesim import field_validation, openapi
from kubesim.resources import RESOURCES
from tests.kubesim_api import test_bounded_input as bounded_input

TOKEN = bounded_input.TOKEN
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PODS, JSON_PATCH, MERGE_PATCH = (
    bounded_input.PODS,
    bounded_input.JSON_PATCH,
    bounded_input.MERGE_PATCH,
)
STRATEGIC_PATCH = bounded_input.STRATEGIC_PATCH
pod = bounded_input.pod
UPSTREAM = Path(__file__).parent / "data" / "upstream_v1_36_properties.json"


class Http:
    def __init__(self, client: TestClient[Any, Any]) -> None:
        self.client = client

    async def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json",
        query: str = "",
    ) -> tuple[int, Any, list[str]]:  # fmt: skip
        headers = {**AUTH, "Content-Type": content_type}
        data = None if body is None else orjson.dumps(body)
        async with self.client.request(method, path + query, data=data, headers=headers) as r:
            raw = await r.read()
            return r.status, orjson.loads(raw) if raw else None, r.headers.getall("Warning", [])


@pytest.fixture
async def http() -> AsyncIterator[Http]:
    async with bounded_input.serving(TOKEN) as client:
        yield Http(client)


def test_definitions_match_upstreams_property_for_property() -> None:
    upstream = json.loads(UPSTREAM.read_text())
    ours = openapi.definitions()
    pruned_roots = {
        openapi._definition_name(r) for r in RESOURCES if not r.custom and openapi.prunes(r)
    }
    assert pruned_roots == set(upstream["roots"])
    by_short_name = {name.rsplit(".", 1)[-1]: d for name, d in ours.items()}
    for name, properties in upstream["definitions"].items():
        # kubesim files TopologySelectorTerm under storage.v1; Time, RawExtension, FieldsV1 and
        # the like it inlines (a string, any JSON): upstream declares no properties for those
        mine = ours.get(name) or by_short_name.get(name.rsplit(".", 1)[-1])
        if mine is None:
            assert properties == [], name
            continue
        assert sorted(mine.get("properties") or {}) == properties, name
    unpruned = [r for r in RESOURCES if not r.custom and not openapi.prunes(r)]
    assert sorted(f"{r.api_version}/{r.kind}" for r in unpruned) == sorted(openapi.UNPRUNED)


def test_pruning_copies_only_what_changes() -> None:
    body = pod("p", foo=1)
    body["status"] = {"conditions": [{"type": "Ready", "status": "True", "bar": 2}]}
    containers = body["spec"]["containers"]
    frozen = orjson.dumps(body)
    pruned, unknown = openapi.prune_unknown_fields(RESOURCES_BY_KIND["Pod"], body)
    assert unknown == ["spec.foo", "status.conditions[0].bar"]
    assert orjson.dumps(body) == frozen  # the input is left as it was
    assert pruned["spec"]["containers"] is containers  # what had nothing removed is shared
    assert "foo" not in pruned["spec"] and "bar" not in pruned["status"]["conditions"][0]


RESOURCES_BY_KIND = {r.kind: r for r in RESOURCES if r.api_version == "v1"}


@pytest.mark.parametrize("mode", ["", "Warn", "Ignore"])
async def test_create_and_update_drop_unknown_fields(http: Http, mode: str) -> None:
    query = f"?fieldValidation={mode}" if mode else ""
    body = pod("p", foo={"a": 1})
    body["metadata"]["bar"] = "x"
    status, created, warnings = await http.call("POST", PODS, body, query=query)
    assert status == 201, created
    expected = [] if mode == "Ignore" else [
        '299 - "unknown field \\"metadata.bar\\""', '299 - "unknown field \\"spec.foo\\""'
    ]  # fmt: skip
    assert warnings == expected
    assert "foo" not in created["spec"] and "bar" not in created["metadata"]
    created["spec"]["containers"][0]["baz"] = True
    status, updated, warnings = await http.call("PUT", f"{PODS}/p", created, query=query)
    assert status == 200, updated
    if mode != "Ignore":
        assert warnings == ['299 - "unknown field \\"spec.containers[0].baz\\""']
    status, stored, _ = await http.call("GET", f"{PODS}/p")
    assert "baz" not in stored["spec"]["containers"][0] and "foo" not in stored["spec"]


async def test_strict_create_and_update_are_refused_as_upstream(http: Http) -> None:
    body = pod("p", foo=1, bar=2)
    status, answer, _ = await http.call("POST", PODS, body, query="?fieldValidation=Strict")
    assert (status, answer["reason"], answer["message"]) == (
        400,
        "BadRequest",
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.foo", unknown field "spec.bar"',
    )
    assert (await http.call("GET", f"{PODS}/p"))[0] == 404
    status, created, _ = await http.call("POST", PODS, pod("p"))
    created["spec"]["foo"] = 1
    status, answer, _ = await http.call(
        "PUT", f"{PODS}/p", created, query="?fieldValidation=Strict"
    )
    assert (status, answer["message"]) == (
        400,
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.foo"',
    )


PATCHES = [
    (JSON_PATCH, [{"op": "add", "path": "/spec/foo", "value": "x<y"}]),
    (MERGE_PATCH, {"spec": {"foo": "x<y"}}),
    (STRATEGIC_PATCH, {"spec": {"foo": "x<y"}}),
]


@pytest.mark.parametrize(("content_type", "patch"), PATCHES)
@pytest.mark.parametrize("mode", ["", "Warn", "Ignore"])
async def test_patches_drop_unknown_fields(
    http: Http, content_type: str, patch: Any, mode: str
) -> None:
    await http.call("POST", PODS, pod("p"))
    query = f"?fieldValidation={mode}" if mode else ""
    status, patched, warnings = await http.call("PATCH", f"{PODS}/p", patch, content_type, query)
    assert status == 200, patched
    assert warnings == ([] if mode == "Ignore" else ['299 - "unknown field \\"spec.foo\\""'])
    assert "foo" not in patched["spec"]
    assert "foo" not in (await http.call("GET", f"{PODS}/p"))[1]["spec"]


@pytest.mark.parametrize(("content_type", "patch"), PATCHES)
async def test_strict_patches_are_refused_as_upstream(
    http: Http, content_type: str, patch: Any
) -> None:
    status, before, _ = await http.call("POST", PODS, pod("p"))
    status, answer, _ = await http.call(
        "PATCH", f"{PODS}/p", patch, content_type, "?fieldValidation=Strict"
    )
    assert (status, answer["reason"]) == (422, "Invalid"), answer
    if content_type == STRATEGIC_PATCH:  # the patch, as Go's %+v prints a map
        shown = '"map[spec:map[foo:x<y]]"'
    else:  # the patched object's JSON, keys sorted, `<` escaped
        assert answer["message"].startswith(' "" is invalid: patch: Invalid value: "{\\"apiVersion')
        shown = answer["message"].split("Invalid value: ", 1)[1].rsplit(": strict", 1)[0]
        assert '\\"foo\\":\\"x\\\\u003cy\\"' in shown  # %q doubles the backslash
    cause = f'Invalid value: {shown}: strict decoding error: unknown field "spec.foo"'
    assert answer["message"] == f' "" is invalid: patch: {cause}'
    assert answer["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": cause, "field": "patch"}
    ]
    assert (await http.call("GET", f"{PODS}/p"))[1] == before


async def test_fields_of_the_real_schema_are_kept(http: Http) -> None:
    """Status fields of recent versions, managed fields and maps of objects are not pruned."""
    status, created, _ = await http.call("POST", PODS, pod("p"))
    created["status"] = {
        "observedGeneration": 1,
        "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu"}],
        "extendedResourceClaimStatus": {
            "resourceClaimName": "p-extended",
            "requestMappings": [
                {"containerName": "c", "resourceName": "example.com/gpu", "requestName": "r0"}
            ],
        },
        "hostIPs": [{"ip": "10.0.0.1"}],
    }
    status, updated, warnings = await http.call(
        "PUT", f"{PODS}/p/status", created, query="?fieldValidation=Strict"
    )
    assert (status, warnings) == (200, []), updated
    for key, value in created["status"].items():
        assert updated["status"][key] == value, key


async def test_custom_resources_keep_their_crd_pruning_and_strict_message(http: Http) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                "openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}],
        },
    }  # fmt: skip
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert (await http.call("POST", crds, crd))[0] == 201
    widgets = "/apis/example.com/v1/namespaces/default/widgets"
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
              "spec": {"size": 1, "color": "red"}}  # fmt: skip
    status, answer, _ = await http.call("POST", widgets, widget, query="?fieldValidation=Strict")
    assert (status, answer["message"]) == (
        400,
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
        'unknown field "spec.color"',
    )
    status, created, warnings = await http.call("POST", widgets, widget)
    assert (status, warnings) == (201, ['299 - "unknown field \\"spec.color\\""'])
    assert created["spec"] == {"size": 1}


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"b": [1, 2.5, None, True], "a": "s"}, "map[a:s b:[1 2.5 <nil> true]]"),
        (1e6, "1e+06"),
        (123456.0, "123456"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1.5e300, "1.5e+300"),
    ],
)
def test_go_value_text(value: Any, text: str) -> None:
    assert field_validation.go_value_text(value) == text


def test_go_quote() -> None:
    assert field_validation.go_quote('a"b\\c\n\x01é') == '"a\\"b\\\\c\\n\\x01é"'
