"""OpenAPI documents: /openapi/v2 and /openapi/v3 (+ one document per group/version).

kubectl reads them for `explain` (v3), for strategic merge patch metadata in `apply` (v3, then v2)
and to learn whether the server validates fields itself: it looks, in the v3 document of the
object's group/version, for a PATCH operation tagged with the object's
x-kubernetes-group-version-kind that lists the `fieldValidation` query parameter. When found,
kubectl sends ?fieldValidation=Strict and leaves validation to the server (unknown_fields below).
"""

from __future__ import annotations

import copy
import functools
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from kubesim import openapi_proto, schemas
from kubesim.discovery import GIT_VERSION
from kubesim.resources import RESOURCES, ResourceType, by_group_version

JSON = dict[str, Any]

_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2"


@dataclass(frozen=True)
class _Documents:
    v2: bytes
    v2_protobuf: bytes
    v3: dict[str, bytes]  # "api/v1", "apis/apps/v1" -> document
    v3_root: bytes
    definitions: dict[str, JSON]
    roots: dict[ResourceType, str]


def _gv_path(group_version: str) -> str:
    return f"apis/{group_version}" if "/" in group_version else f"api/{group_version}"


def _param(
    name: str, where: str, description: str, v3: bool, required: bool = False, kind: str = "string"
) -> JSON:
    param: JSON = {"name": name, "in": where, "description": description}
    if required:
        param["required"] = True
    if v3:
        param["schema"] = {"type": kind, "uniqueItems": True}
    else:
        param["type"] = kind
        param["uniqueItems"] = True
    return param


_FIELD_VALIDATION = (
    "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH)"
    " containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict"
)


def _write_params(v3: bool) -> list[JSON]:
    return [
        _param("dryRun", "query", "When present, modifications are not persisted.", v3),
        _param("fieldManager", "query", "a name associated with the actor making the change.", v3),
        _param("fieldValidation", "query", _FIELD_VALIDATION, v3),
    ]


def _list_params(v3: bool) -> list[JSON]:
    described = {
        "continue": "The continue option should be set when retrieving more results.",
        "fieldSelector": "A selector to restrict the list of returned objects by their fields.",
        "labelSelector": "A selector to restrict the list of returned objects by their labels.",
        "resourceVersion": "resourceVersion sets a constraint on what resource versions a "
        "request may be served from.",
    }
    params = [_param(name, "query", text, v3) for name, text in described.items()]
    params.append(
        _param(
            "limit",
            "query",
            "limit is a maximum number of responses to return.",
            v3,
            kind="integer",
        )
    )
    params.append(
        _param(
            "watch", "query", "Watch for changes to the described resources.", v3, kind="boolean"
        )
    )
    return params


def _ref(name: str, v3: bool) -> JSON:
    prefix = "#/components/schemas/" if v3 else "#/definitions/"
    return {"$ref": prefix + name}


def _operation(
    resource: ResourceType,
    action: str,
    op_id: str,
    kind_schema: str,
    params: list[JSON],
    v3: bool,
    body: bool = False,
    sub: str = "",
) -> JSON:
    gvk = {"group": resource.group, "version": resource.version, "kind": resource.kind}
    ok: JSON = {"description": "OK"}
    if v3:
        ok["content"] = {"application/json": {"schema": _ref(kind_schema, v3)}}
    else:
        ok["schema"] = _ref(kind_schema, v3)
    operation: JSON = {
        "operationId": op_id,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
        "parameters": params,
        "responses": {"200": ok, "401": {"description": "Unauthorized"}},
        "tags": [resource.group_version.replace("/", "_").replace(".", "")],
    }
    if body:
        media = (
            (
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
            )
            if action == "patch"
            else ("application/json",)
        )
        schema = {"type": "object"} if action == "patch" else _ref(kind_schema, v3)
        if v3:
            operation["requestBody"] = {
                "content": {m: {"schema": schema} for m in media},
                "required": True,
            }
        else:
            operation["parameters"] = [
                {"name": "body", "in": "body", "required": True, "schema": schema},
                *params,
            ]
            operation["consumes"] = list(media)
    del sub
    return operation


def _paths(resource: ResourceType, v3: bool) -> dict[str, JSON]:
    """Collection, item and subresource paths of one resource, as upstream lists them."""
    root = "/api/v1" if not resource.group else f"/apis/{resource.group_version}"
    name_param = _param("name", "path", f"name of the {resource.kind}", v3, required=True)
    ns_param = _param("namespace", "path", "object name and auth scope", v3, required=True)
    scope = [ns_param] if resource.namespaced else []
    base = (
        f"{root}/namespaces/{{namespace}}/{resource.plural}"
        if resource.namespaced
        else (f"{root}/{resource.plural}")
    )
    kind_id = resource.kind + ("Namespaced" if resource.namespaced else "")
    group_id = "".join(p.capitalize() for p in resource.group.split(".")[:1]) or "Core"
    op_prefix = f"{group_id}{resource.version.capitalize()}"
    schema_name = _definition_name(resource)
    list_name = schema_name + "List"
    verbs = set(resource.verbs)
    paths: dict[str, JSON] = {}
    collection: JSON = {"parameters": scope}
    if "list" in verbs:
        collection["get"] = _operation(
            resource, "list", f"list{op_prefix}{kind_id}", list_name, _list_params(v3), v3
        )
    if "create" in verbs:
        collection["post"] = _operation(
            resource,
            "post",
            f"create{op_prefix}{kind_id}",
            schema_name,
            _write_params(v3),
            v3,
            body=True,
        )
    if "deletecollection" in verbs:
        collection["delete"] = _operation(
            resource,
            "deletecollection",
            f"deleteCollection{op_prefix}{kind_id}",
            "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
            _list_params(v3),
            v3,
        )
    paths[base] = collection
    item: JSON = {"parameters": [name_param, *scope]}
    if "get" in verbs:
        item["get"] = _operation(resource, "get", f"read{op_prefix}{kind_id}", schema_name, [], v3)
    if "update" in verbs:
        item["put"] = _operation(
            resource,
            "put",
            f"replace{op_prefix}{kind_id}",
            schema_name,
            _write_params(v3),
            v3,
            body=True,
        )
    if "patch" in verbs:
        force = _param(
            "force", "query", "Force is going to force Apply requests.", v3, kind="boolean"
        )
        item["patch"] = _operation(
            resource,
            "patch",
            f"patch{op_prefix}{kind_id}",
            schema_name,
            [*_write_params(v3), force],
            v3,
            body=True,
        )
    if "delete" in verbs:
        item["delete"] = _operation(
            resource,
            "delete",
            f"delete{op_prefix}{kind_id}",
            "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
            [],
            v3,
        )
    if len(item) > 1:  # a create-only resource (bindings) has no item path
        paths[f"{base}/{{name}}"] = item
    if "status" in resource.subresources:
        status: JSON = {"parameters": [name_param, *scope]}
        status["get"] = _operation(
            resource, "get", f"read{op_prefix}{kind_id}Status", schema_name, [], v3
        )
        status["put"] = _operation(
            resource,
            "put",
            f"replace{op_prefix}{kind_id}Status",
            schema_name,
            _write_params(v3),
            v3,
            body=True,
        )
        status["patch"] = _operation(
            resource,
            "patch",
            f"patch{op_prefix}{kind_id}Status",
            schema_name,
            _write_params(v3),
            v3,
            body=True,
        )
        paths[f"{base}/{{name}}/status"] = status
    if resource.namespaced and "list" in verbs:
        paths[f"{root}/{resource.plural}"] = {
            "get": _operation(
                resource,
                "list",
                f"list{op_prefix}{resource.kind}ForAllNamespaces",
                list_name,
                _list_params(v3),
                v3,
            )
        }
    return paths


@functools.cache
def _schema_set() -> schemas.SchemaSet:
    return schemas.build()


def _definition_name(resource: ResourceType) -> str:
    return _schema_set().roots[resource]


def _reachable(definitions: dict[str, JSON], start: list[str]) -> list[str]:
    seen: list[str] = []
    pending = list(start)
    while pending:
        name = pending.pop()
        if name in seen or name not in definitions:
            continue
        seen.append(name)
        pending.extend(_refs(definitions[name]))
    return sorted(seen)


def _refs(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            found.append(ref.rsplit("/", 1)[-1])
        for value in node.values():
            found.extend(_refs(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_refs(value))
    return found


def _to_v3_schema(node: Any) -> Any:
    """v2 schema -> v3: component refs, and a described ref wrapped in allOf as upstream does."""
    if isinstance(node, list):
        return [_to_v3_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    converted = {k: _to_v3_schema(v) for k, v in node.items()}
    ref = converted.get("$ref")
    if isinstance(ref, str):
        ref = ref.replace("#/definitions/", "#/components/schemas/")
        if len(converted) > 1:
            converted.pop("$ref")
            converted["allOf"] = [{"$ref": ref}]
            converted.setdefault("default", {})
        else:
            converted["$ref"] = ref
    return converted


_SECURITY_V2 = {
    "BearerToken": {
        "type": "apiKey",
        "name": "authorization",
        "in": "header",
        "description": "Bearer Token authentication",
    }
}


def _build_v2(definitions: dict[str, JSON]) -> JSON:
    paths: dict[str, JSON] = {}
    for resource in RESOURCES:
        paths.update(_paths(resource, v3=False))
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": GIT_VERSION},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": _SECURITY_V2,
        "security": [{"BearerToken": []}],
    }


def _build_v3(
    definitions: dict[str, JSON], group_version: str, resources: list[ResourceType]
) -> JSON:
    paths: dict[str, JSON] = {}
    for resource in resources:
        paths.update(_paths(resource, v3=True))
    start = [_definition_name(r) for r in resources]
    start += [name + "List" for name in start]
    start += [
        "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    ]
    components = {n: _to_v3_schema(definitions[n]) for n in _reachable(definitions, start)}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": GIT_VERSION},
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}
            },
        },
    }


@functools.cache
def _documents() -> _Documents:
    schema_set = _schema_set()
    definitions = schema_set.definitions
    v3: dict[str, bytes] = {}
    root_paths: dict[str, JSON] = {}
    for group_version, resources in by_group_version().items():
        body = orjson.dumps(_build_v3(definitions, group_version, resources))
        path = _gv_path(group_version)
        v3[path] = body
        digest = hashlib.sha512(body).hexdigest()[:128].upper()
        root_paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    v2 = _build_v2(definitions)
    return _Documents(
        v2=orjson.dumps(v2),
        v2_protobuf=openapi_proto.document(v2),
        v3=v3,
        v3_root=orjson.dumps({"paths": root_paths}),
        definitions=definitions,
        roots=schema_set.roots,
    )


def prepare() -> None:
    """Build the documents now (about half a second) rather than on the first write's clock."""
    _documents()


def definitions() -> dict[str, JSON]:
    """A copy of the v2 definitions (for tests and tools)."""
    return copy.deepcopy(_documents().definitions)


# Kinds whose definitions are written by hand (schemas_workload.py: kubernetes_asyncio has no
# model for them) rather than derived from the models of upstream's published document, and so
# not known to be complete: their unknown fields are reported (Warn, Strict) but never pruned.
# Every other built-in kind's definitions match v1.36's api/openapi-spec/swagger.json field for
# field (tests/kubesim_api/test_field_pruning.py holds them to it).
UNPRUNED = frozenset({"scheduling.k8s.io/v1beta1/Workload", "scheduling.k8s.io/v1beta1/PodGroup"})


def prunes(resource: ResourceType) -> bool:
    """Whether kubesim drops `resource`'s unknown fields, as upstream's decoder does."""
    return not resource.custom and f"{resource.api_version}/{resource.kind}" not in UNPRUNED


def unknown_fields(resource: ResourceType, obj: dict[str, Any]) -> list[str]:
    """Paths of fields in obj that the resource's schema does not declare, in document order.

    Paths use upstream's strict-decoding notation: "spec.containers[0].foo", "metadata.bar".
    """
    return prune_unknown_fields(resource, obj)[1]


def prune_unknown_fields(
    resource: ResourceType, obj: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """`obj` without the fields the resource's schema does not declare, and their paths (as
    unknown_fields). `obj` itself is never changed: what had a field removed is a copy, the
    rest is shared. Upstream's JSON decoder drops them the same way for every built-in kind
    (apimachinery's serializer/json, strict mode only reporting them)."""
    docs = _documents()
    found: list[str] = []
    pruned = _prune(
        docs.definitions, {"$ref": "#/definitions/" + docs.roots[resource]}, obj, "", found
    )
    return pruned, found


def _resolve(definitions: dict[str, JSON], schema: JSON) -> JSON:
    ref = schema.get("$ref")
    while isinstance(ref, str):
        schema = definitions[ref.rsplit("/", 1)[-1]]
        ref = schema.get("$ref")
    return schema


def _prune(
    definitions: dict[str, JSON], schema: JSON, value: Any, path: str, found: list[str]
) -> Any:
    """`value` without its undeclared fields (copied only where one was removed)."""
    schema = _resolve(definitions, schema)
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return value
    if isinstance(value, list) and "items" in schema:
        return _prune_elements(definitions, schema["items"], value, enumerate(value), path, found)
    if not isinstance(value, dict):
        return value
    if "additionalProperties" in schema:
        values = schema["additionalProperties"]
        if not isinstance(values, dict):
            return value
        return _prune_elements(definitions, values, value, value.items(), path, found)
    properties = schema.get("properties")
    if properties is None:
        return value
    result: dict[str, Any] | None = None
    for key, item in value.items():
        child = f"{path}.{key}" if path else key
        if key not in properties:
            found.append(child)
            if result is None:
                result = dict(value)
            del result[key]
        elif isinstance(item, (dict, list)):  # a scalar has no fields to check
            pruned = _prune(definitions, properties[key], item, child, found)
            if pruned is not item:
                if result is None:
                    result = dict(value)
                result[key] = pruned
    return value if result is None else result


def _prune_elements(
    definitions: dict[str, JSON],
    schema: JSON,
    container: Any,
    elements: Iterable[tuple[Any, Any]],
    path: str,
    found: list[str],
) -> Any:
    """A list's items or a map's values pruned by their one schema (`[index]`, `[key]`)."""
    changed: dict[Any, Any] = {}
    for key, item in elements:
        if isinstance(item, (dict, list)):
            pruned = _prune(definitions, schema, item, f"{path}[{key}]", found)
            if pruned is not item:
                changed[key] = pruned
    if not changed:
        return container
    copied = list(container) if isinstance(container, list) else dict(container)
    for key, pruned in changed.items():
        copied[key] = pruned
    return copied


def _wants_protobuf(accept: str) -> bool:
    """True when the client accepts only the protobuf form of /openapi/v2."""
    ranges = [part.split(";")[0].strip() for part in accept.split(",") if part.strip()]
    json_ok = any(r in ("application/json", "*/*", "application/*") for r in ranges)
    return not json_ok and any(r.startswith(_V2_PROTOBUF) for r in ranges)


async def _openapi_v2(request: web.Request) -> web.Response:
    if _wants_protobuf(request.headers.get("Accept", "")):
        response = web.Response(body=_documents().v2_protobuf)
        response.headers["Content-Type"] = _V2_PROTOBUF + ".v1.0+protobuf"
        return response
    return web.Response(body=_documents().v2, content_type="application/json")


async def _openapi_v3_root(request: web.Request) -> web.Response:
    return web.Response(body=_documents().v3_root, content_type="application/json")


async def _openapi_v3_group_version(request: web.Request) -> web.Response:
    body = _documents().v3.get(request.match_info["path"])
    if body is None:
        return web.Response(status=404, text="404 page not found", content_type="text/plain")
    response = web.Response(body=body, content_type="application/json")
    if request.query.get("hash"):
        response.headers["Cache-Control"] = "public, immutable"
    return response


def add_routes(app: web.Application) -> None:
    app.router.add_get("/openapi/v2", _openapi_v2)
    app.router.add_get("/openapi/v3", _openapi_v3_root)
    app.router.add_get("/openapi/v3/", _openapi_v3_root)
    app.router.add_get("/openapi/v3/{path:.+}", _openapi_v3_group_version)
