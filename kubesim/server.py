"""The aiohttp application: auth, routing of /api and /apis paths, and HTTP <-> Api mapping."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web
from aiohttp.typedefs import Middleware

from apimachinery.bounded_yaml import excerpt
from apimachinery.labels import parse_int64
from kubesim import (
    authn,
    customresources,
    discovery,
    dryrun,
    errors,
    field_validation,
    json_limits,
    openapi,
    protobuf,
    rbac,
    request_options,
    reviews,
    scale,
    subresources,
    tables,
    views,
)
from kubesim.api import APPLY_PATCH, NAMESPACES, PODS, Api, ListOptions
from kubesim.background import BackgroundTasks
from kubesim.request_metrics import RequestCounter
from kubesim.resources import RESOURCES, ResourceType
from kubesim.watch import WatcherClosed

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
OPEN_PATHS = frozenset({"/healthz", "/livez", "/readyz"})
JSON_TYPE = "application/json"
_BY_PATH: dict[tuple[str, str, str], ResourceType] = {
    (r.group, r.version, r.plural): r for r in RESOURCES
}
_TRUE = ("1", "true", "True")
BINDINGS = "bindings"
_OPTIONS_KIND = {"PUT": "UpdateOptions", "PATCH": "PatchOptions", "DELETE": "DeleteOptions"}


@dataclass(frozen=True, slots=True)
class ServerOptions:
    token: str
    bookmark_interval: float = 60.0
    max_watch_seconds: float = 1800.0  # upstream's default upper bound for a watch request


@dataclass(frozen=True, slots=True)
class Target:
    """What a path names: a resource, a namespace scope, an optional name and subresource."""

    resource: ResourceType
    namespace: str | None
    name: str
    subresource: str


def _verb(method: str, named: bool, watch: bool) -> str:
    """The API verb a request on a resource (not a subresource) asks for."""
    if method == "GET":
        return "get" if named else ("watch" if watch else "list")
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def json_response(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type=JSON_TYPE)


def error_response(error: errors.ApiError) -> web.Response:
    return json_response(error.status(), error.code)


def parse_target(
    group: str,
    version: str,
    tail: str,
    custom: customresources.Registry | None = None,
) -> Target:
    parts = tail.strip("/").split("/")
    namespace: str | None = None
    if len(parts) >= 3 and parts[0] == "namespaces" and parts[2] not in ("status", "finalize"):
        namespace, parts = parts[1], parts[2:]
    if not parts or len(parts) > 3 or not all(parts):
        raise errors.not_acceptable_404(tail)
    resource = _BY_PATH.get((group, version, parts[0]))
    if resource is None and custom is not None:
        served = custom.lookup(group, version, parts[0])
        resource = served.resource if served is not None else None
    if resource is None:
        raise errors.not_acceptable_404(tail)
    name = parts[1] if len(parts) > 1 else ""
    sub = parts[2] if len(parts) > 2 else ""
    if sub and sub not in resource.subresources:
        raise errors.not_acceptable_404(tail)
    if resource.namespaced and name and namespace is None:
        raise errors.not_acceptable_404(tail)
    if not resource.namespaced and namespace is not None:
        raise errors.not_acceptable_404(tail)
    return Target(resource, namespace, name, sub)


def _int_param(request: web.Request, key: str) -> int | None:
    raw = request.query.get(key)
    if raw in (None, ""):
        return None
    number = parse_int64(raw)  # strconv.ParseInt(raw, 10, 64), as the API server reads it
    if number is None:
        raise errors.bad_request(f"invalid {key}: {excerpt(raw)}")
    return number


async def read_json(request: web.Request, required: bool = True) -> Any:
    """The body as JSON (or decoded from protobuf, for the kinds typed clients send so)."""
    if request.content_length is not None and request.content_length > errors.MAX_BODY_BYTES:
        raise errors.entity_too_large()
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge as exc:
        raise errors.entity_too_large() from exc
    if not raw:
        if required:
            raise errors.bad_request("the body of the request is empty")
        return None
    if request.method != "PATCH":  # a patch's media type names its patch type instead
        request_options.check_body_media_type(
            request.headers.get("Content-Type"), request.content_type
        )
    if request.content_type == protobuf.MEDIA_TYPE:
        body: Any = _decode_protobuf(raw)
    else:
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise errors.bad_request(f"couldn't get version/kind; json parse error: {exc}") from exc
    json_limits.check_request_depth(body)  # before any (recursive) code reads it
    return body


async def read_object(request: web.Request, required: bool = True) -> Any:
    """The body, which must be one JSON object (an API object or options), as read_json."""
    body = await read_json(request, required)
    if body is None and not required:
        return None
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    return body


# subresource -> (kind, apiVersion, {object-valued field: its Go type})
_SUBRESOURCE_OBJECTS: dict[str, tuple[str, str, dict[str, str]]] = {
    "binding": ("Binding", "v1", {"metadata": "v1.ObjectMeta", "target": "v1.ObjectReference"}),
    "eviction": (
        "Eviction",
        "policy/v1",
        {"metadata": "v1.ObjectMeta", "deleteOptions": "v1.DeleteOptions"},
    ),
}


def _check_subresource_body(subresource: str, body: dict[str, Any]) -> None:
    """400 when a Binding's or Eviction's object fields are not objects, as upstream's decoder
    answers (the subresource code reads them as objects)."""
    kind, version, fields = _SUBRESOURCE_OBJECTS.get(subresource, ("", "", {}))
    for field, go_type in fields.items():
        value = body.get(field)
        if value is not None and not isinstance(value, dict):
            got = request_options.json_type(value)
            raise errors.bad_request(
                f'{kind} in version "{version.rpartition("/")[2]}" cannot be handled as a '
                f"{kind}: json: cannot unmarshal {got} into Go struct field {kind}.{field} of "
                f"type {go_type}"
            )


def _decode_protobuf(raw: bytes) -> dict[str, Any]:
    try:
        return protobuf.decode_object(raw)
    except protobuf.UnsupportedKind as exc:
        raise errors.ApiError(
            415,
            "UnsupportedMediaType",
            f"the body of the request was in an unknown format ({protobuf.MEDIA_TYPE}) for "
            f"{exc} - send it as application/json",
        ) from exc
    except protobuf.ProtobufError as exc:
        raise errors.bad_request(f"couldn't decode the protobuf body: {exc}") from exc


class KubeApiHandler:
    """Maps HTTP requests to Api calls for every resource path."""

    def __init__(self, api: Api, options: ServerOptions) -> None:
        self.api = api
        self.options = options
        self.authenticator = authn.Authenticator(options.token, api.store.get)
        self.authorizer = rbac.Authorizer(api.store.get, api.store.items)
        self._pdb_refresh_pending: set[str] = set()
        self.tasks = BackgroundTasks("API handler")  # closed with the app (build_app)

    # ---- entry points ------------------------------------------------------------------------
    async def core(self, request: web.Request) -> web.StreamResponse:
        return await self.dispatch(request, parse_target("", "v1", request.match_info["tail"]))

    async def grouped(self, request: web.Request) -> web.StreamResponse:
        info = request.match_info
        custom = customresources.registry_of(self.api.store)
        return await self.dispatch(
            request, parse_target(info["group"], info["version"], info["tail"], custom)
        )

    async def dispatch(self, request: web.Request, target: Target) -> web.StreamResponse:
        method = request.method
        if not target.subresource:
            verb = _verb(method, bool(target.name), request.query.get("watch") in _TRUE)
            if verb not in target.resource.verbs:
                raise errors.method_not_allowed(method, target.resource.plural)
        if target.resource.key == BINDINGS:
            return await self.legacy_binding(request, target)
        if target.resource.key in reviews.REVIEW_KEYS:
            return await self.review(request, target)
        if target.subresource == "token":
            return await self.token_request(request, target)
        if not target.name:
            if method == "GET":
                if request.query.get("watch") in _TRUE:
                    return await self.watch(request, target)
                return self.list_collection(request, target)
            if method == "POST":
                return await self.create(request, target)
            if method == "DELETE":
                return await self.delete_collection(request, target)
        elif target.subresource == "scale":
            return await self.scale(request, target)
        elif target.subresource in ("", "status", "resize"):
            if method == "GET":
                return self.respond(request, target.resource, self.get(target))
            if method == "PUT":
                return await self.update(request, target)
            if method == "PATCH":
                return await self.patch(request, target)
            if method == "DELETE" and not target.subresource:
                return await self.delete(request, target)
        elif method == "POST":
            body = await read_object(request)
            namespace = target.namespace or ""
            _check_subresource_body(target.subresource, body)
            if target.subresource == "binding":
                result = await subresources.bind(
                    self._writer(request), namespace, target.name, body
                )
            else:
                result = await subresources.evict(
                    self._writer(request), namespace, target.name, body
                )
            return json_response(result, 201)
        raise errors.method_not_allowed(method, target.resource.plural)

    async def scale(self, request: web.Request, target: Target) -> web.Response:
        """GET/PUT/PATCH .../{name}/scale: an autoscaling/v1 Scale over spec.replicas."""
        namespace, resource = target.namespace or "", target.resource
        if request.method == "GET":
            return json_response(scale.scale_of(resource, self.get(target)))
        if request.method == "PUT":
            body = await read_object(request)
            return json_response(
                await scale.write_replicas(
                    self._writer(request), resource, namespace, target.name, body
                )
            )
        if request.method == "PATCH":
            body = await read_json(request)
            return json_response(
                await scale.patch_scale(
                    self._writer(request),
                    resource,
                    namespace,
                    target.name,
                    request.content_type,
                    body,
                )
            )
        raise errors.method_not_allowed(request.method, resource.plural)

    async def review(self, request: web.Request, target: Target) -> web.Response:
        """POST of a TokenReview, SubjectAccessReview or a self review: answered, not stored."""
        body = await read_object(request)
        user = request.get(USER_KEY, authn.ADMIN)
        answer = reviews.review(
            target.resource.key,
            body,
            user,
            self.authenticator,
            self.authorizer,
            self.api.clock(),
        )
        return json_response(answer, 201)

    async def token_request(self, request: web.Request, target: Target) -> web.Response:
        """POST serviceaccounts/NAME/token (`kubectl create token NAME`)."""
        if request.method != "POST":
            raise errors.method_not_allowed(request.method, "serviceaccounts/token")
        body = await read_object(request)
        namespace = target.namespace or ""
        account = self.api.store.get(target.resource.storage_key, namespace, target.name)
        answer = reviews.token_request(
            target.resource,
            account,
            namespace,
            target.name,
            body,
            self.authenticator,
            self.api.clock(),
        )
        return json_response(answer, 201)

    async def legacy_binding(self, request: web.Request, target: Target) -> web.Response:
        """POST namespaces/{ns}/bindings: a Binding whose metadata.name is the pod, as
        pods/{name}/binding (upstream's BindingREST serves both paths)."""
        body = await read_object(request)
        _check_subresource_body("binding", body)
        name = str((body.get("metadata") or {}).get("name") or "")
        if not name:
            raise errors.ApiError(
                422,
                "Invalid",
                'Binding "" is invalid: metadata.name: Required value: name or generateName is '
                "required",
                {
                    "kind": "Binding",
                    "causes": [
                        {
                            "reason": "FieldValueRequired",
                            "message": "Required value: name or generateName is required",
                            "field": "metadata.name",
                        }
                    ],
                },
            )
        namespace = target.namespace or ""
        result = await subresources.bind(self._writer(request), namespace, name, body)
        return json_response(result, 201)

    # ---- reads -------------------------------------------------------------------------------
    def get(self, target: Target) -> dict[str, Any]:
        return self.api.get(target.resource, target.namespace or "", target.name)

    def _custom(self, resource: ResourceType) -> customresources.CustomVersion | None:
        return customresources.version_of(self.api.store, resource) if resource.custom else None

    def respond(
        self, request: web.Request, resource: ResourceType, obj: dict[str, Any], status: int = 200
    ) -> web.Response:
        if tables.wants_table(request.headers.get("Accept", "")):
            include = request.query.get("includeObject", "Metadata")
            table = tables.to_table(resource, [obj], include, custom=self._custom(resource))
            return json_response(table, status)
        return json_response(obj, status)

    @staticmethod
    def list_options(request: web.Request) -> ListOptions:
        query = request.query
        return ListOptions(
            label_selector=query.get("labelSelector", ""),
            field_selector=query.get("fieldSelector", ""),
            limit=_int_param(request, "limit") or 0,
            continue_token=query.get("continue", ""),
        )

    def list_collection(self, request: web.Request, target: Target) -> web.Response:
        request_options.check_list_options(request.query, watch=False)
        doc = self.api.list_objects(target.resource, target.namespace, self.list_options(request))
        if tables.wants_table(request.headers.get("Accept", "")):
            include = request.query.get("includeObject", "Metadata")
            table = tables.to_table(
                target.resource, doc["items"], include, custom=self._custom(target.resource)
            )
            table["metadata"] = doc["metadata"]
            return json_response(table)
        return json_response(doc)

    async def watch(self, request: web.Request, target: Target) -> web.StreamResponse:
        resource = target.resource
        request_options.check_list_options(request.query, watch=True)
        predicate = self.api.predicate(resource, self.list_options(request))
        raw_rv = request.query.get("resourceVersion", "")
        initial = request.query.get("sendInitialEvents") in _TRUE
        since: int | None = None
        if raw_rv not in ("", "0") and not initial:
            try:
                since = int(raw_rv)
            except ValueError as exc:
                raise errors.bad_request(f"invalid resource version: {raw_rv}") from exc
        bookmarks = request.query.get("allowWatchBookmarks") in _TRUE
        as_table = tables.wants_table(request.headers.get("Accept", ""))
        include = request.query.get("includeObject", "Metadata")
        timeout = float(_int_param(request, "timeoutSeconds") or self.options.max_watch_seconds)
        store = self.api.store
        response = web.StreamResponse(headers={"Content-Type": JSON_TYPE})
        response.enable_chunked_encoding()
        try:
            watcher = store.watch(
                resource.storage_key, target.namespace, predicate, since, views.renderer(resource)
            )
        except errors.ApiError as exc:
            # upstream answers an expired watch with 200 and an ERROR event carrying the Status
            await response.prepare(request)
            await response.write(orjson.dumps({"type": "ERROR", "object": exc.status()}) + b"\n")
            await response.write_eof()
            return response
        if initial:
            watcher.push_line(self._bookmark(resource, store.resource_version, True), 0)
        await response.prepare(request)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                wait = min(remaining, self.options.bookmark_interval) if bookmarks else remaining
                try:
                    async with asyncio.timeout(wait):
                        lines = await watcher.next_batch()
                except TimeoutError:
                    if bookmarks and loop.time() < deadline:
                        rv = store.published_resource_version
                        await response.write(self._bookmark(resource, rv, False))
                    continue
                if as_table:  # `kubectl get -w`: every object as a one-row Table
                    custom = self._custom(resource)
                    lines = [
                        tables.watch_event_as_table(resource, line, include, custom=custom)
                        for line in lines
                    ]
                await response.write(b"".join(lines))
        except (WatcherClosed, ConnectionResetError):
            pass
        finally:
            store.stop_watch(resource.storage_key, watcher)
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response

    @staticmethod
    def _bookmark(resource: ResourceType, rv: int, initial_end: bool) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": meta}
        return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"

    # ---- writes ------------------------------------------------------------------------------
    def _field_validation(
        self, request: web.Request, resource: ResourceType, obj: Any
    ) -> tuple[Any, list[str]]:
        """The body without the fields its kind's schema does not declare, and the warnings
        for them, per ?fieldValidation (upstream's create.go / update.go: Strict refuses them
        with a 400, Warn answers them as Warning headers, Ignore drops them silently).
        Custom objects are pruned by their CRD's schema later (customresources)."""
        request_options.check_field_validation(
            request.query, _OPTIONS_KIND.get(request.method, "CreateOptions")
        )
        mode = request.query.get("fieldValidation") or field_validation.WARN
        if not isinstance(obj, dict):
            return obj, []
        if resource.custom:  # what pruning would drop (customresources.prepare_object)
            if mode == field_validation.IGNORE:
                return obj, []
            served = self._custom(resource)
            unknown = customresources.prune_preview(served, obj) if served is not None else []
        elif openapi.prunes(resource):
            obj, unknown = openapi.prune_unknown_fields(resource, obj)
        elif mode == field_validation.IGNORE:
            return obj, []
        else:
            unknown = openapi.unknown_fields(resource, obj)
        return obj, field_validation.on_write(
            unknown, mode, obj, resource.kind, resource.api_version
        )

    @staticmethod
    def _with_warnings(response: web.Response, warnings: list[str]) -> web.Response:
        for warning in warnings:
            escaped = warning.replace("\\", "\\\\").replace('"', '\\"')
            # a field name may hold any character; a header line must not (CR, LF, NUL...)
            printable = "".join(
                c if c.isprintable() else c.encode("unicode_escape").decode() for c in escaped
            )
            response.headers.add("Warning", f'299 - "{printable}"')
        return response

    def _writer(self, request: web.Request) -> Api:
        """The Api a write goes through: a dry-running twin for ?dryRun=All."""
        options_kind = _OPTIONS_KIND.get(request.method, "CreateOptions")
        dry = dryrun.parse(request.query.getall("dryRun", []), options_kind)
        return self.api.dry_run() if dry else self.api

    async def create(self, request: web.Request, target: Target) -> web.Response:
        body = await read_object(request)
        resource = target.resource
        if resource.key == NAMESPACES.key and target.namespace is None:
            namespace = ""
        else:
            namespace = target.namespace or ""
            if resource.namespaced and not namespace:
                namespace = str((body.get("metadata") or {}).get("namespace") or "")
                if not namespace:
                    raise errors.not_acceptable_404(request.path)
        body, warnings = self._field_validation(request, resource, body)
        api = self._writer(request)
        created = await api.create(resource, namespace, body)
        self._after_write(api, resource, created)
        return self._with_warnings(self.respond(request, resource, created, 201), warnings)

    async def update(self, request: web.Request, target: Target) -> web.Response:
        body = await read_object(request)
        body, warnings = self._field_validation(request, target.resource, body)
        api = self._writer(request)
        updated = await api.update(
            target.resource, target.namespace or "", target.name, body, target.subresource
        )
        self._after_write(api, target.resource, updated)
        return self._with_warnings(self.respond(request, target.resource, updated), warnings)

    async def patch(self, request: web.Request, target: Target) -> web.Response:
        content_type = request.content_type
        if content_type == APPLY_PATCH:
            raise errors.unsupported_media_type(content_type)
        request_options.check_field_validation(request.query, "PatchOptions")
        body = await read_json(request)
        api = self._writer(request)
        warnings: list[str] = []
        patched = await api.patch(
            target.resource,
            target.namespace or "",
            target.name,
            content_type,
            body,
            target.subresource,
            validation_directive=request.query.get("fieldValidation") or field_validation.WARN,
            warnings=warnings,
        )
        self._after_write(api, target.resource, patched)
        return self._with_warnings(self.respond(request, target.resource, patched), warnings)

    async def delete(self, request: web.Request, target: Target) -> web.Response:
        options = await read_object(request, required=False)
        grace = _int_param(request, "gracePeriodSeconds")
        if grace is not None:
            options = {**(options or {}), "gracePeriodSeconds": grace}
        api = self._writer(request)
        deleted = await api.delete(target.resource, target.namespace or "", target.name, options)
        self._after_write(api, target.resource, deleted)
        return self.respond(request, target.resource, deleted)

    async def delete_collection(self, request: web.Request, target: Target) -> web.Response:
        request_options.check_list_options(request.query, watch=False)
        options = await read_object(request, required=False)
        doc = await self._writer(request).delete_collection(
            target.resource, target.namespace, self.list_options(request), options
        )
        return json_response(doc)

    def _after_write(self, api: Api, resource: ResourceType, obj: dict[str, Any]) -> None:
        """Keep PDB status current when pods or PDBs change (the disruption controller's job)."""
        if api is not self.api or resource.key not in (PODS.key, subresources.PDBS.key):
            return
        namespace = obj["metadata"].get("namespace", "")
        if namespace in self._pdb_refresh_pending:
            return
        if not self.api.store.count(subresources.PDBS.key, namespace):
            return
        self._pdb_refresh_pending.add(namespace)
        self.tasks.start_soon(self._refresh, namespace, name="refresh PDBs")

    async def _refresh(self, namespace: str) -> None:
        await asyncio.sleep(0)
        self._pdb_refresh_pending.discard(namespace)
        try:
            await subresources.refresh_pdbs(self.api, namespace)
        except errors.ApiError as exc:
            log.warning("refreshing PodDisruptionBudgets in %s failed: %s", namespace, exc.message)
        except Exception:  # a bug: log it here, or it would end the handler's task group
            log.exception("refreshing PodDisruptionBudgets in %s failed", namespace)


def auth_middleware(
    token: str,
    counter: RequestCounter | None = None,
    handler_state: KubeApiHandler | None = None,
) -> Middleware:
    """The admin token may do anything; a service account token kubesim issued is authorized
    by RBAC (403 with upstream's message when denied); anything else is 401. Impersonation
    headers (`kubectl --as`) switch to the user they name, whose request RBAC then decides."""
    expected = f"Bearer {token}".encode()

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path not in OPEN_PATHS:
            given = request.headers.get("Authorization", "")
            admin = hmac.compare_digest(given.encode(), expected)
            if not admin or _impersonating(request):
                denied = _authorize_other(request, given, admin, handler_state)
                if denied is not None:
                    return denied
        response = await _serve(request, handler)
        if counter is not None:
            counter.record(request, response.status)
        return response

    return middleware


# who the request is from, for the self reviews (aiohttp >= 3.12 wants a typed key)
USER_KEY: Any = (
    web.RequestKey("kubesim.user", rbac.UserInfo) if hasattr(web, "RequestKey") else "kubesim.user"
)


def _impersonating(request: web.Request) -> bool:
    return "Impersonate-User" in request.headers or "Impersonate-Group" in request.headers


def _authorize_other(
    request: web.Request, header: str, admin: bool, state: KubeApiHandler | None
) -> web.Response | None:
    """None when the request may go on (its user is then kept on the request), else the 401
    or 403 to answer."""
    if state is None:
        return error_response(errors.unauthorized())
    if admin:
        user = authn.ADMIN
    else:
        token = authn.bearer_token(header)
        now = state.api.clock()
        found = state.authenticator.authenticate_request(token, now) if token else None
        if found is None:
            return error_response(errors.unauthorized())
        user = found.user
    if _impersonating(request):
        impersonated, checks = _impersonation(request, user)
        for check in checks:
            if not state.authorizer.authorize(check).allowed:
                return error_response(_forbidden(check))
        user = impersonated
    attributes = rbac.request_attributes(user, request.method, request.path, dict(request.query))
    if state.authorizer.authorize(attributes).allowed:
        request[USER_KEY] = user
        return None
    return error_response(_forbidden(attributes))


def _impersonation(
    request: web.Request, requester: rbac.UserInfo
) -> tuple[rbac.UserInfo, list[rbac.Attributes]]:
    """The user the Impersonate-* headers name and the `impersonate` checks the requester must
    pass, as k8s.io/apiserver/pkg/endpoints/filters/impersonation.go builds them."""
    name = request.headers.get("Impersonate-User", "")
    groups = list(request.headers.getall("Impersonate-Group", []))
    uid = request.headers.get("Impersonate-Uid", "")
    checks: list[rbac.Attributes] = []
    namespace, sep, account = name.removeprefix(rbac.SERVICE_ACCOUNT_PREFIX).partition(":")
    if name.startswith(rbac.SERVICE_ACCOUNT_PREFIX) and sep:
        checks.append(
            rbac.Attributes(
                requester,
                "impersonate",
                True,
                resource="serviceaccounts",
                namespace=namespace,
                name=account,
            )
        )
        if not groups:
            groups = list(authn.service_account_user(namespace, account).groups)
    elif name:
        checks.append(rbac.Attributes(requester, "impersonate", True, resource="users", name=name))
    checks += [
        rbac.Attributes(requester, "impersonate", True, resource="groups", name=group)
        for group in groups
    ]
    if uid:
        checks.append(
            rbac.Attributes(
                requester,
                "impersonate",
                True,
                api_group="authentication.k8s.io",
                resource="uids",
                name=uid,
            )
        )
    if name and not {rbac.ALL_AUTHENTICATED, rbac.ALL_UNAUTHENTICATED} & set(groups):
        groups.append(rbac.ALL_AUTHENTICATED)
    return rbac.UserInfo(name, uid, tuple(groups)), checks


def _forbidden(attributes: rbac.Attributes) -> errors.ApiError:
    """responsewriters.Forbidden: `pods "x" is forbidden: User "u" cannot get resource ...`."""
    reason = rbac.forbidden_message(attributes)
    if not attributes.resource_request:
        return errors.ApiError(403, "Forbidden", f"forbidden: {reason}", {})
    resource = attributes.resource
    qualified = f"{resource}.{attributes.api_group}" if attributes.api_group else resource
    head = f'{qualified} "{attributes.name}"' if attributes.name else qualified
    details: dict[str, Any] = {"group": attributes.api_group, "kind": resource}
    if attributes.name:
        details = {"name": attributes.name, **details}
    return errors.ApiError(403, "Forbidden", f"{head} is forbidden: {reason}", details)


async def _serve(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The handler's response; errors become upstream-shaped Status responses."""
    try:
        return await handler(request)
    except errors.ApiError as exc:
        return error_response(exc)
    except web.HTTPNotFound:
        return error_response(errors.not_acceptable_404(request.path))
    except web.HTTPMethodNotAllowed:
        return error_response(errors.method_not_allowed(request.method, request.path))
    except web.HTTPException:
        raise
    except Exception as exc:  # an unexpected bug must still answer a Status, not a traceback
        log.exception("internal error serving %s %s", request.method, request.path)
        return error_response(errors.internal(f"{type(exc).__name__}: {exc}"))


async def _healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


def build_app(api: Api, options: ServerOptions) -> web.Application:
    counter = RequestCounter()
    handler = KubeApiHandler(api, options)
    app = web.Application(
        middlewares=[auth_middleware(options.token, counter, handler)],
        client_max_size=errors.MAX_BODY_BYTES + 1,
    )
    for path in OPEN_PATHS:
        app.router.add_get(path, _healthz)

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(text=counter.exposition(), content_type="text/plain")

    app.router.add_get("/metrics", metrics)
    discovery.add_routes(app, lambda: customresources.registry_of(api.store).resources())
    openapi.add_routes(app)
    app.router.add_route("*", "/api/v1/{tail:.+}", handler.core)
    app.router.add_route("*", "/apis/{group}/{version}/{tail:.+}", handler.grouped)

    async def finish_background_tasks(app: web.Application) -> None:
        # each is one short PDB status write: let it land rather than cut it
        await handler.tasks.close(cancel=False)

    app.on_cleanup.append(finish_background_tasks)
    return app
