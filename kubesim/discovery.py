"""Discovery endpoints: /version, /api, /api/v1, /apis, /apis/GROUP, /apis/GROUP/VERSION.

Both forms a real API server speaks are served: the legacy documents (APIVersions, APIGroupList,
APIResourceList) and aggregated discovery (apidiscovery.k8s.io/v2 APIGroupDiscoveryList), which
kubectl >= 1.30 asks for first on /api and /apis. Answering it saves kubectl one request per
group/version on every invocation.
"""

from __future__ import annotations

import platform
import re
from collections.abc import Callable, Sequence
from typing import Any

import orjson
from aiohttp import web

from kubesim.resources import RESOURCES, ResourceType, by_group_version

# The version whose behaviour kubesim serves (v1.37, the newest release): pod-level resources
# (beta, on since v1.34), in-place pod resize through pods/resize (GA since v1.35) with its
# kubelet conditions, and in-place resize of pod-level resources (InPlacePodLevelResources-
# VerticalScaling, beta and on since v1.36): kubesim/resize.py.
GIT_VERSION = "v1.37.0-aiosched"
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


# the custom resources a cluster serves besides RESOURCES (customresources.registry_of)
CustomResources = Callable[[], Sequence[ResourceType]]


def _kube_version_key(version: str) -> tuple[int, int, int, str]:
    """version.CompareKubeAwareVersionStrings' order, highest first: GA, beta, alpha, by number,
    then other strings alphabetically."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if match is None:
        return (3, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[match.group(2)]
    return (stage, -int(match.group(1)), -int(match.group(3) or 0), "")


def _groups(extra: Sequence[ResourceType] = ()) -> dict[str, list[str]]:
    """Non-core API groups -> their versions: the built-in groups in table order, then custom
    resources' groups, each's versions in kube-aware order (the first is preferred)."""
    groups: dict[str, list[str]] = {}
    for resource in RESOURCES:
        if resource.group:
            versions = groups.setdefault(resource.group, [])
            if resource.version not in versions:
                versions.append(resource.version)
    custom: dict[str, list[str]] = {}
    for resource in extra:
        if resource.group in groups:
            continue  # a CRD in a built-in group is not served (upstream: not established)
        versions = custom.setdefault(resource.group, [])
        if resource.version not in versions:
            versions.append(resource.version)
    for group in sorted(custom):
        groups[group] = sorted(custom[group], key=_kube_version_key)
    return groups


def _by_group_version(extra: Sequence[ResourceType] = ()) -> dict[str, list[ResourceType]]:
    grouped = by_group_version()
    built_in = {r.group for r in RESOURCES}
    for resource in extra:
        if resource.group not in built_in:
            grouped.setdefault(resource.group_version, []).append(resource)
    return grouped


def _subresource_target(resource: ResourceType, sub: str) -> tuple[str, str, str, tuple[str, ...]]:
    group, version, kind, verbs = _SUBRESOURCES.get(sub, (None, None, None, ("get",)))
    return (
        resource.group if group is None else group,
        resource.version if version is None else version,
        resource.kind if kind is None else kind,
        verbs,
    )


def api_resource_list(group_version: str, extra: Sequence[ResourceType] = ()) -> JSON | None:
    resources = _by_group_version(extra).get(group_version)
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


def api_group_list(extra: Sequence[ResourceType] = ()) -> JSON:
    groups = [_api_group(name, versions) for name, versions in _groups(extra).items()]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(name: str, extra: Sequence[ResourceType] = ()) -> JSON | None:
    versions = _groups(extra).get(name)
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


def aggregated_discovery(core: bool, extra: Sequence[ResourceType] = ()) -> JSON:
    """APIGroupDiscoveryList for /api (core=True) or /apis (core=False)."""
    groups = _groups(extra)
    grouped = _by_group_version(extra)
    names = [""] if core else list(groups)
    items = []
    for name in names:
        versions = ["v1"] if core else groups[name]
        version_entries = []
        for version in versions:
            group_version = f"{name}/{version}" if name else version
            resources = grouped.get(group_version, [])
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
        "message": f"the server could not find the requested resource (get {path})",
        "reason": "NotFound",
        "details": {},
        "code": 404,
    }
    return web.Response(status=404, body=orjson.dumps(status), content_type="application/json")


async def _version(request: web.Request) -> web.Response:
    return _json(version_info())


def add_routes(app: web.Application, custom: CustomResources | None = None) -> None:
    """The discovery routes; `custom` lists the custom resources served at the time asked."""

    def extra() -> Sequence[ResourceType]:
        return custom() if custom is not None else ()

    async def api(request: web.Request) -> web.Response:
        if wants_aggregated(request.headers.get("Accept", "")):
            return _json(aggregated_discovery(core=True), AGGREGATED_V2_CONTENT_TYPE)
        return _json(api_versions(request.host))

    async def apis(request: web.Request) -> web.Response:
        if wants_aggregated(request.headers.get("Accept", "")):
            return _json(aggregated_discovery(False, extra()), AGGREGATED_V2_CONTENT_TYPE)
        return _json(api_group_list(extra()))

    async def core_version(request: web.Request) -> web.Response:
        document = api_resource_list(request.match_info["version"])
        return _json(document) if document else _not_found(request.path)

    async def group(request: web.Request) -> web.Response:
        document = api_group(request.match_info["group"], extra())
        return _json(document) if document else _not_found(request.path)

    async def group_version(request: web.Request) -> web.Response:
        name = f"{request.match_info['group']}/{request.match_info['version']}"
        document = api_resource_list(name, extra())
        return _json(document) if document else _not_found(request.path)

    app.router.add_get("/version", _version)
    app.router.add_get("/version/", _version)
    app.router.add_get("/api", api)
    app.router.add_get("/api/", api)
    app.router.add_get("/api/{version}", core_version)
    app.router.add_get("/api/{version}/", core_version)
    app.router.add_get("/apis", apis)
    app.router.add_get("/apis/", apis)
    app.router.add_get("/apis/{group}", group)
    app.router.add_get("/apis/{group}/", group)
    app.router.add_get("/apis/{group}/{version}", group_version)
    app.router.add_get("/apis/{group}/{version}/", group_version)
