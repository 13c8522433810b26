"""Discovery endpoints: /version, /api, /api/v1, /apis, /apis/GROUP, /apis/GROUP/VERSION.

Both forms a real API server speaks are served: the legacy documents (APIVersions, APIGroupList,
APIResourceList) and aggregated discovery (apidiscovery.k8s.io/v2 APIGroupDiscoveryList), which
kubectl >= 1.30 asks for first on /api and /apis. Answering it saves kubectl one request per
group/version on every invocation.
"""

from __future__ import annotations

import platform
from typing import Any

import orjson
from aiohttp import web

from kubesim.resources import RESOURCES, ResourceType, by_group_version

# The version whose behaviour kubesim serves: pod-level resources (beta, on since v1.34),
# in-place pod resize through pods/resize (GA in v1.35) and its kubelet conditions.
GIT_VERSION = "v1.35.0-aiosched"
AGGREGATED_V2_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

# Subresource -> (group, version, kind, verbs) of what it answers, as upstream's discovery says.
_SUBRESOURCES: dict[str, tuple[str | None, str | None, str | None, tuple[str, ...]]] = {
    "status": (None, None, None, ("get", "patch", "update")),
    "binding": ("", "v1", "Binding", ("create",)),
    "eviction": ("policy", "v1", "Eviction", ("create",)),
    "token": ("authentication.k8s.io", "v1", "TokenRequest", ("create",)),
    "scale": ("autoscaling", "v1", "Scale", ("get", "patch", "update")),
    "resize": (None, None, None, ("get", "patch", "update")),
}

JSON = dict[str, Any]


def version_info() -> JSON:
    major, minor = GIT_VERSION[1:].split(".")[:2]
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
    return {
        "major": major,
        "minor": minor,
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2024-01-01T00:00:00Z",
        "goVersion": "python" + platform.python_version(),
        "compiler": "cpython",
        "platform": f"{platform.system().lower()}/{arch}",
    }


def _groups() -> dict[str, list[str]]:
    """Non-core API groups -> their versions, in table order."""
    groups: dict[str, list[str]] = {}
    for resource in RESOURCES:
        if resource.group:
            versions = groups.setdefault(resource.group, [])
            if resource.version not in versions:
                versions.append(resource.version)
    return groups


def _subresource_target(resource: ResourceType, sub: str) -> tuple[str, str, str, tuple[str, ...]]:
    group, version, kind, verbs = _SUBRESOURCES.get(sub, (None, None, None, ("get",)))
    return (
        resource.group if group is None else group,
        resource.version if version is None else version,
        resource.kind if kind is None else kind,
        verbs,
    )


def api_resource_list(group_version: str) -> JSON | None:
    resources = by_group_version().get(group_version)
    if resources is None:
        return None
    entries: list[JSON] = []
    for resource in resources:
        entry: JSON = {
            "name": resource.plural,
            "singularName": resource.singular,
            "namespaced": resource.namespaced,
            "kind": resource.kind,
            "verbs": list(resource.verbs),
        }
        if resource.short_names:
            entry["shortNames"] = list(resource.short_names)
        if resource.categories:
            entry["categories"] = list(resource.categories)
        entries.append(entry)
        for sub in resource.subresources:
            group, version, kind, verbs = _subresource_target(resource, sub)
            sub_entry: JSON = {
                "name": f"{resource.plural}/{sub}",
                "singularName": "",
                "namespaced": resource.namespaced,
                "kind": kind,
                "verbs": list(verbs),
            }
            if (group, version) != (resource.group, resource.version):
                sub_entry["group"] = group
                sub_entry["version"] = version
            entries.append(sub_entry)
    document: JSON = {"kind": "APIResourceList", "groupVersion": group_version}
    if "/" in group_version:
        document["apiVersion"] = "v1"
    document["resources"] = entries
    return document


def api_versions(server_address: str) -> JSON:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _api_group(name: str, versions: list[str]) -> JSON:
    listed = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": listed, "preferredVersion": listed[0]}


def api_group_list() -> JSON:
    groups = [_api_group(name, versions) for name, versions in _groups().items()]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(name: str) -> JSON | None:
    versions = _groups().get(name)
    if versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_api_group(name, versions)}


def _aggregated_resource(resource: ResourceType) -> JSON:
    entry: JSON = {
        "resource": resource.plural,
        "responseKind": {
            "group": resource.group,
            "version": resource.version,
            "kind": resource.kind,
        },
        "scope": "Namespaced" if resource.namespaced else "Cluster",
        "singularResource": resource.singular,
        "verbs": list(resource.verbs),
    }
    if resource.short_names:
        entry["shortNames"] = list(resource.short_names)
    if resource.categories:
        entry["categories"] = list(resource.categories)
    subresources = []
    for sub in resource.subresources:
        group, version, kind, verbs = _subresource_target(resource, sub)
        subresources.append(
            {
                "subresource": sub,
                "responseKind": {"group": group, "version": version, "kind": kind},
                "verbs": list(verbs),
            }
        )
    if subresources:
        entry["subresources"] = subresources
    return entry


def aggregated_discovery(core: bool) -> JSON:
    """APIGroupDiscoveryList for /api (core=True) or /apis (core=False)."""
    names = [""] if core else list(_groups())
    items = []
    for name in names:
        versions = ["v1"] if core else _groups()[name]
        version_entries = []
        for version in versions:
            group_version = f"{name}/{version}" if name else version
            resources = by_group_version().get(group_version, [])
            version_entries.append(
                {
                    "version": version,
                    "resources": [_aggregated_resource(r) for r in resources],
                    "freshness": "Current",
                }
            )
        metadata: JSON = {"creationTimestamp": None}
        if name:
            metadata["name"] = name
        items.append({"metadata": metadata, "versions": version_entries})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }


def wants_aggregated(accept_header: str) -> bool:
    """True when the client accepts apidiscovery.k8s.io/v2 APIGroupDiscoveryList as JSON."""
    for media_range in accept_header.split(","):
        parts = [p.strip() for p in media_range.split(";")]
        if parts[0] not in ("application/json", "*/*"):
            continue
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        if (
            params.get("g") == "apidiscovery.k8s.io"
            and params.get("v") == "v2"
            and params.get("as") == "APIGroupDiscoveryList"
        ):
            return True
    return False


def _json(body: JSON, content_type: str = "application/json") -> web.Response:
    response = web.Response(body=orjson.dumps(body))
    response.headers["Content-Type"] = content_type
    response.headers["Vary"] = "Accept"
    return response


def _not_found(path: str) -> web.Response:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'the server could not find the requested resource (get {path})',
        "reason": "NotFound",
        "details": {},
        "code": 404,
    }
    return web.Response(status=404, body=orjson.dumps(status), content_type="application/json")


async def _version(request: web.Request) -> web.Response:
    return _json(version_info())


async def _api(request: web.Request) -> web.Response:
    if wants_aggregated(request.headers.get("Accept", "")):
        return _json(aggregated_discovery(core=True), AGGREGATED_V2_CONTENT_TYPE)
    return _json(api_versions(request.host))


async def _apis(request: web.Request) -> web.Response:
    if wants_aggregated(request.headers.get("Accept", "")):
        return _json(aggregated_discovery(core=False), AGGREGATED_V2_CONTENT_TYPE)
    return _json(api_group_list())


async def _core_version(request: web.Request) -> web.Response:
    document = api_resource_list(request.match_info["version"])
    return _json(document) if document else _not_found(request.path)


async def _group(request: web.Request) -> web.Response:
    document = api_group(request.match_info["group"])
    return _json(document) if document else _not_found(request.path)


async def _group_version(request: web.Request) -> web.Response:
    group_version = f"{request.match_info['group']}/{request.match_info['version']}"
    document = api_resource_list(group_version)
    return _json(document) if document else _not_found(request.path)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/version", _version)
    app.router.add_get("/version/", _version)
    app.router.add_get("/api", _api)
    app.router.add_get("/api/", _api)
    app.router.add_get("/api/{version}", _core_version)
    app.router.add_get("/api/{version}/", _core_version)
    app.router.add_get("/apis", _apis)
    app.router.add_get("/apis/", _apis)
    app.router.add_get("/apis/{group}", _group)
    app.router.add_get("/apis/{group}/", _group)
    app.router.add_get("/apis/{group}/{version}", _group_version)
    app.router.add_get("/apis/{group}/{version}/", _group_version)
