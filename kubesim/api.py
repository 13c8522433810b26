"""The REST semantics of kubesim, independent of HTTP: create, get, list, update, patch, delete.

Every method takes and returns plain JSON dicts and raises errors.ApiError for what a client is
told. HTTP parsing lives in server.py; binding/eviction in subresources.py.
"""

from __future__ import annotations

import base64
import copy
import random
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

from apimachinery.labels import LabelSelector
from kubesim import (
    customresources,
    defaults,
    deletion_policy,
    errors,
    field_validation,
    openapi,
    patch,
    request_options,
    resize,
    selectors,
    validation,
    validation_fields,
    views,
)
from kubesim.dryrun import DryRunStore
from kubesim.events import EventRecorder
from kubesim.meta import Clock, Obj, generate_name, new_uid, rfc3339
from kubesim.resources import RESOURCES, ResourceType
from kubesim.store import Store
from kubesim.validation_decode import decode_error
from kubesim.watch import Predicate

NAMESPACES = next(r for r in RESOURCES if r.key == "namespaces")
PODS = next(r for r in RESOURCES if r.key == "pods")
SERVER_OWNED_META = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)
PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/json-patch+json": "json",
    "application/strategic-merge-patch+json": "strategic",
}
APPLY_PATCH = "application/apply-patch+yaml"
# A deletionTimestamp lies at most this far ahead: any int64 grace period is accepted, but a
# timestamp must stay printable (upstream's time.Duration would overflow instead).
_MAX_GRACE_OFFSET = 100 * 365 * 24 * 3600


@dataclass(frozen=True, slots=True)
class ListOptions:
    label_selector: str = ""
    field_selector: str = ""
    limit: int = 0
    continue_token: str = ""


@dataclass(slots=True)
class _Snapshot:
    rv: int
    items: list[Obj]
    created: float


def _meta(obj: Obj) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def _without_rv(obj: Obj) -> Obj:
    meta = dict(obj.get("metadata") or {})
    meta.pop("resourceVersion", None)
    meta.pop("managedFields", None)
    return {**obj, "metadata": meta}


def precondition_failed(kind: str, wanted: str, actual: str) -> str:
    return f"Precondition failed: {kind} in precondition: {wanted}, {kind} in object meta: {actual}"


class Api:
    """Resource operations over a Store, with upstream's defaulting, admission and validation."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Clock = time.time,
        rng: random.Random | None = None,
        list_snapshots: int = 64,
        snapshot_ttl: float = 300.0,
        taint_comparison_operators: bool = False,
    ) -> None:
        self.store = store
        # the TaintTolerationComparisonOperators gate (kube-apiserver's and
        # kube-controller-manager's): validation accepts Lt / Gt tolerations, and the NoExecute
        # taint eviction compares their values
        self.taint_comparison_operators = taint_comparison_operators
        self.clock = clock
        self.rng = rng or random.Random()
        self._snapshots: OrderedDict[str, _Snapshot] = OrderedDict()
        self._max_snapshots = list_snapshots
        self._snapshot_ttl = snapshot_ttl
        # what the in-process controllers and kubelets write their core/v1 Events through
        self.events = EventRecorder(store, clock, self.rng)

    def dry_run(self) -> Api:
        """The same API over a store that computes writes without applying them."""
        twin = copy.copy(self)
        twin.store = DryRunStore(self.store)
        return twin

    # ---- helpers -----------------------------------------------------------------------------
    def lookup(self, resource_key: str, namespace: str, name: str) -> Obj | None:
        return self.store.get(resource_key, namespace, name)

    def require(self, resource: ResourceType, namespace: str, name: str) -> Obj:
        """The stored object (a view's stored form: see get for the resource's own form)."""
        obj = self.store.get(resource.storage_key, namespace, name)
        if obj is None:
            raise errors.not_found(resource, name)
        return obj

    def predicate(self, resource: ResourceType, options: ListOptions) -> Predicate | None:
        """Compile label and field selectors; 400 BadRequest if either does not parse."""
        checks: list[Predicate] = []
        try:
            if options.label_selector.strip():
                label = LabelSelector.parse(options.label_selector)
                checks.append(
                    lambda o: label.matches((o.get("metadata") or {}).get("labels") or {})
                )
            if options.field_selector.strip():
                # a custom resource selects by metadata.name and metadata.namespace only
                kind = "" if resource.custom else resource.kind
                fields = selectors.parse_field_selector(
                    options.field_selector, kind, views.field_labels(resource)
                )
                checks.append(fields.matches)
        except selectors.SelectorError as exc:
            raise errors.bad_request(str(exc)) from exc
        if not checks:
            return None
        if len(checks) == 1:
            return checks[0]
        return lambda o: all(check(o) for check in checks)

    @staticmethod
    def _check_decodes(resource: ResourceType, obj: Obj) -> None:
        """400 BadRequest for a value of the wrong type, as upstream's decoder answers."""
        message = decode_error(resource, obj)
        if message is not None:
            raise errors.bad_request(message)

    @staticmethod
    def _check_patched_decodes(resource: ResourceType, new: Obj) -> None:
        """A patch whose result does not decode: 422 on the field "patch", as upstream's
        patcher reports it (its Status names no kind)."""
        message = decode_error(resource, new, prefixed=False)
        if message is not None:
            shown = orjson.dumps(new).decode()
            cause = validation_fields.invalid("patch", shown, message)
            raise errors.ApiError(
                422,
                "Invalid",
                f' "" is invalid: {cause.error()}',
                {"causes": [{"reason": cause.reason, "message": cause.message, "field": "patch"}]},
            )

    def _validate(self, resource: ResourceType, obj: Obj, old: Obj | None) -> None:
        if resource.custom:
            causes = self._validate_custom(resource, obj, old)
        else:
            causes = validation.validate(resource.kind, obj, old, self.taint_comparison_operators)
        if resource.key == customresources.CRD_KEY:
            causes = [*causes, *customresources.validate_crd(obj, old)]
        if causes:
            name = str(_meta(obj).get("name") or "")
            raise errors.invalid(resource, name, [(c.field, c.reason, c.message) for c in causes])

    def _custom_version(self, resource: ResourceType) -> customresources.CustomVersion:
        version = customresources.version_of(self.store, resource)
        if version is None:  # its CRD was deleted (or changed) while the request ran
            raise errors.not_found(resource, "")
        return version

    def _validate_custom(self, resource: ResourceType, obj: Obj, old: Obj | None) -> list[Any]:
        """A custom object's metadata as every kind's, then its CRD's schema."""
        meta = _meta(obj)
        causes = validation.validate_object_meta("", meta)
        if resource.namespaced and not meta.get("namespace"):
            causes.append(validation_fields.required("metadata.namespace"))
        if old is not None:
            causes += validation.validate_object_meta_update(meta, old.get("metadata") or {})
        causes += customresources.validate_object(self._custom_version(resource), obj)
        return causes

    def _prepare_custom(self, resource: ResourceType, obj: Obj) -> Obj:
        """A custom object pruned and defaulted by its CRD's schema (a copy: a patched object
        shares parts with the stored one)."""
        obj = copy.deepcopy(obj)
        customresources.prepare_object(self._custom_version(resource), obj)
        return obj

    def _check_identity(self, resource: ResourceType, obj: Obj, namespace: str) -> None:
        expected = resource.api_version
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if kind not in (None, "", resource.kind) or api_version not in (None, "", expected):
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({expected})"
                if api_version not in (None, "", expected)
                else f"the kind in the data ({kind}) does not match the expected kind "
                f"({resource.kind})"
            )
        obj["apiVersion"], obj["kind"] = expected, resource.kind
        meta = _meta(obj)
        if resource.namespaced:
            given = meta.get("namespace")
            if given and given != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)

    # ---- reads -------------------------------------------------------------------------------
    def get(self, resource: ResourceType, namespace: str, name: str) -> Obj:
        return views.to_view(resource, self.require(resource, namespace, name))

    def list_objects(
        self, resource: ResourceType, namespace: str | None, options: ListOptions
    ) -> Obj:
        predicate = self.predicate(resource, options)
        now = self.clock()
        if options.continue_token:
            snapshot, start = self._resume(
                options.continue_token, now, resource, namespace, predicate
            )
            rv = snapshot.rv
            items = snapshot.items
        else:
            rv = self.store.resource_version
            items = self.store.items(resource.storage_key, namespace)
            if predicate is not None:
                items = [o for o in items if predicate(o)]
            start = 0
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        end = len(items) if options.limit <= 0 else min(len(items), start + options.limit)
        page = items[start:end]
        render = views.renderer(resource)
        if render is not None:
            page = [render(o) for o in page]
        if end < len(items):
            token_id = self._remember(rv, items, now, options.continue_token)
            meta["continue"] = self._token(token_id, rv, end)
            if predicate is None:
                meta["remainingItemCount"] = len(items) - end
        return {
            "kind": resource.list_kind,
            "apiVersion": resource.api_version,
            "metadata": meta,
            "items": page,
        }

    @staticmethod
    def _token(token_id: str, rv: int, offset: int) -> str:
        raw = orjson.dumps({"id": token_id, "rv": rv, "start": offset})
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def _remember(self, rv: int, items: list[Obj], now: float, token: str) -> str:
        """Keep the list as it was so later pages are consistent (etcd serves them at `rv`)."""
        if token:
            token_id = str(self._decode(token)["id"])
            if token_id in self._snapshots:
                return token_id
        token_id = new_uid(self.rng)
        self._snapshots[token_id] = _Snapshot(rv, items, now)
        while len(self._snapshots) > self._max_snapshots:
            self._snapshots.popitem(last=False)
        return token_id

    @staticmethod
    def _decode(token: str) -> dict[str, Any]:
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            doc = orjson.loads(raw)
            if not isinstance(doc, dict) or not {"id", "rv", "start"} <= doc.keys():
                raise ValueError(token)
            return doc
        except (ValueError, orjson.JSONDecodeError) as exc:
            raise errors.bad_request(f"continue key is not valid: {exc}") from exc

    def _resume(
        self,
        token: str,
        now: float,
        resource: ResourceType,
        namespace: str | None,
        predicate: Predicate | None,
    ) -> tuple[_Snapshot, int]:
        doc = self._decode(token)
        snapshot = self._snapshots.get(str(doc["id"]))
        if snapshot is None and isinstance(doc["rv"], int):
            # a page made by another API process (--workers): the list as it was at its
            # resourceVersion, from the watch history, kept here for the pages after it
            items = self.store.items_at(resource.storage_key, namespace, doc["rv"])
            if items is not None:
                if predicate is not None:
                    items = [o for o in items if predicate(o)]
                snapshot = _Snapshot(doc["rv"], items, now)
                self._snapshots[str(doc["id"])] = snapshot
                while len(self._snapshots) > self._max_snapshots:
                    self._snapshots.popitem(last=False)
        if snapshot is None or now - snapshot.created > self._snapshot_ttl:
            self._snapshots.pop(str(doc["id"]), None)
            raise errors.gone_expired(
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter, or use the "
                "continue token in this response to retrieve the remainder of the results. "
                "Continuing with the provided token results in an inconsistent list - objects "
                "that were created, modified, or deleted between the time the first chunk was "
                "returned and now may show up in the list."
            )
        return snapshot, int(doc["start"])

    # ---- create ------------------------------------------------------------------------------
    async def create(self, resource: ResourceType, namespace: str, body: Obj) -> Obj:
        obj = body
        self._check_decodes(resource, obj)
        self._check_identity(resource, obj, namespace)
        meta = _meta(obj)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = generate_name(str(meta["generateName"]), self.rng)
        name = str(meta.get("name") or "")
        for key in (*SERVER_OWNED_META, "resourceVersion", "selfLink", "managedFields"):
            meta.pop(key, None)
        if resource.custom:
            obj = self._prepare_custom(resource, obj)
            meta = _meta(obj)
            if "status" in resource.subresources:
                obj.pop("status", None)  # set through /status only (customresource strategy)
        else:
            defaults.apply_defaults(resource.kind, obj)
            try:
                defaults.admit_create(resource.kind, obj, self.lookup, self.store.items)
            except defaults.AdmissionError as exc:
                raise errors.ApiError(exc.code, exc.reason, exc.message) from exc
        if resource.key == customresources.CRD_KEY:
            customresources.default_crd(obj)
            obj.pop("status", None)
        if resource.namespaced:
            ns = self.store.get(NAMESPACES.key, "", namespace)
            if ns is None:
                raise errors.not_found(NAMESPACES, namespace)
            if ns["metadata"].get("deletionTimestamp"):
                raise errors.ApiError(
                    403,
                    "Forbidden",
                    f'{errors.qualified_resource(resource)} "{name}" is forbidden: unable to '
                    f"create new content in namespace {namespace} because it is being terminated",
                    {"name": name, "kind": resource.plural},
                )
        self._validate(resource, obj, None)
        if self.store.get(resource.storage_key, meta.get("namespace", ""), name) is not None:
            raise errors.already_exists(resource, name)
        meta["uid"] = new_uid(self.rng)
        meta["creationTimestamp"] = rfc3339(self.clock())
        if "spec" in obj or resource.custom:
            meta["generation"] = 1
        if resource.key == customresources.CRD_KEY:  # the naming and establishing controllers
            customresources.set_status(
                obj, None, self.store.items(customresources.CRD_KEY), self.clock()
            )
        stored = await self.store.put(resource.storage_key, views.from_view(resource, obj), None)
        return views.to_view(resource, stored)

    # ---- update / patch ----------------------------------------------------------------------
    async def update(
        self, resource: ResourceType, namespace: str, name: str, body: Obj, subresource: str = ""
    ) -> Obj:
        stored_old = self.require(resource, namespace, name)
        self._check_decodes(resource, body)
        self._check_identity(resource, body, namespace)
        meta = _meta(body)
        if meta.get("name") != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                f"({name})"
            )
        return await self._replace(resource, stored_old, body, subresource)

    async def patch(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        body: Any,
        subresource: str = "",
        *,
        validation_directive: str = field_validation.WARN,
        warnings: list[str] | None = None,
    ) -> Obj:
        """`validation_directive`: ?fieldValidation, for the fields of the patched object its
        schema does not declare (a custom object's: those pruning would drop): Strict refuses
        them, Warn adds them to `warnings`; they are dropped either way (upstream's patch.go,
        for every patch type)."""
        patch_type = PATCH_TYPES.get(content_type)
        if patch_type is None or (patch_type == "strategic" and resource.custom):
            # custom resources have no patch strategies (customresource_handler.go)
            raise errors.unsupported_media_type(content_type)
        stored_old = self.require(resource, namespace, name)
        old = views.to_view(resource, stored_old)
        try:
            if patch_type == "json":
                if not isinstance(body, list):
                    raise errors.bad_request("json patch must be a list of operations")
                new = patch.apply_json_patch(old, body)
            else:
                if not isinstance(body, dict):
                    raise errors.bad_request("patch body must be a JSON object")
                if patch_type == "merge":
                    new = patch.apply_merge_patch(old, body)
                else:
                    new = patch.apply_strategic_merge_patch(old, body, resource.kind)
        except patch.PatchTooLarge as exc:
            message = f"Request entity too large: {exc}"
            raise errors.ApiError(413, "RequestEntityTooLarge", message) from exc
        except patch.PatchError as exc:
            raise errors.ApiError(422, "Invalid", str(exc)) from exc
        if not isinstance(new, dict):
            raise errors.ApiError(422, "Invalid", "the patch did not produce an object")
        if _serialized_size(new) > errors.MAX_BODY_BYTES:  # etcd's request limit
            raise errors.entity_too_large()
        self._check_patched_decodes(resource, new)
        patched = new  # what Strict's answer shows: the unknown fields still in it
        if resource.custom:  # pruned in _replace, as every write of a custom object
            unknown = (
                customresources.prune_preview(self._custom_version(resource), new)
                if validation_directive != field_validation.IGNORE
                else []
            )
        elif openapi.prunes(resource):
            new, unknown = openapi.prune_unknown_fields(resource, new)
        else:
            ignored = validation_directive == field_validation.IGNORE
            unknown = [] if ignored else openapi.unknown_fields(resource, new)
        found = field_validation.on_patch(unknown, validation_directive, patch_type, body, patched)
        if warnings is not None:
            warnings.extend(found)
        # own the top level and metadata: both are edited below, the stored `old` never is
        new = {**new, "metadata": dict(new.get("metadata") or {})}
        self._check_identity(resource, new, namespace)
        meta = _meta(new)
        if meta.get("name") != name:
            raise errors.ApiError(422, "Invalid", "metadata.name: the name cannot be patched")
        # a resourceVersion set by the patch is a precondition; otherwise the patch is unconditional
        if isinstance(body, dict) and (body.get("metadata") or {}).get("resourceVersion") is None:
            meta["resourceVersion"] = old["metadata"].get("resourceVersion")
        return await self._replace(resource, stored_old, new, subresource)

    async def _replace(
        self, resource: ResourceType, stored_old: Obj, new: Obj, subresource: str
    ) -> Obj:
        """Write `new` (in the resource's form) over the stored object; returns the result in the
        resource's form."""
        if resource.custom:
            new = self._prepare_custom(resource, new)
        old = views.to_view(resource, stored_old)
        name = old["metadata"]["name"]
        old_meta = old["metadata"]
        meta = _meta(new)
        wanted_rv = meta.get("resourceVersion")
        if wanted_rv and wanted_rv != old_meta.get("resourceVersion"):
            raise errors.conflict(resource, name)
        wanted_uid = meta.get("uid")
        if wanted_uid and wanted_uid != old_meta.get("uid"):
            raise errors.conflict(
                resource, name, precondition_failed("UID", wanted_uid, old_meta.get("uid", ""))
            )
        validated_old = old
        if subresource == "resize":
            # ResizeStrategy: only the containers' resources change; ValidatePodResize judges
            # them, and ValidatePodUpdate then sees the pod as if they had always been so.
            request, new = new, resize.resized_pod(old, new)
            causes = resize.validate_pod_resize(new, old, request)
            if causes:
                raise errors.invalid(
                    resource, name, [(c.field, c.reason, c.message) for c in causes]
                )
            validated_old = resize.resized_pod(old, new)
            meta = dict(old_meta)
            new["metadata"] = meta
            if new.get("spec") != old.get("spec"):
                meta["generation"] = int(old_meta.get("generation") or 0) + 1
        elif subresource == "status":
            new = {**old, "status": new.get("status")}
            if new["status"] is None:
                del new["status"]
            meta = dict(old_meta)
            new["metadata"] = meta
        else:
            for key in SERVER_OWNED_META:
                if key in old_meta:
                    meta[key] = old_meta[key]
                else:
                    meta.pop(key, None)
            if "status" in resource.subresources:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            if self._spec_changed(resource, new, old):
                meta["generation"] = int(old_meta.get("generation") or 0) + 1
            if resource.key == customresources.CRD_KEY:
                customresources.default_crd(new)
                customresources.set_status(
                    new, old, self.store.items(customresources.CRD_KEY), self.clock()
                )
        self._validate(resource, new, validated_old)
        stored_new = views.from_view(resource, new)
        if _without_rv(stored_new) == _without_rv(stored_old):
            return old  # no-op update: no new resourceVersion, no event (as upstream)
        # the last finalizer gone: remove now (a pod on a node waits for its kubelet instead)
        on_node = resource.key == PODS.key and (new.get("spec") or {}).get("nodeName")
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and not on_node:
            stored = await self.store.delete(resource.storage_key, stored_old)
        else:
            stored = await self.store.put(resource.storage_key, stored_new, stored_old)
        return views.to_view(resource, stored)

    @staticmethod
    def _spec_changed(resource: ResourceType, new: Obj, old: Obj) -> bool:
        """Whether metadata.generation moves: a change of spec; for a custom resource (and a
        CRD) a change of anything but metadata, and status when it has the status subresource
        (customresource/strategy.go PrepareForUpdate)."""
        if not resource.custom and resource.key != customresources.CRD_KEY:
            return "spec" in new and new.get("spec") != old.get("spec")
        ignored = {"metadata", "status"} if "status" in resource.subresources else {"metadata"}
        return {k: v for k, v in new.items() if k not in ignored} != {
            k: v for k, v in old.items() if k not in ignored
        }

    # ---- delete ------------------------------------------------------------------------------
    async def delete(
        self, resource: ResourceType, namespace: str, name: str, options: Obj | None
    ) -> Obj:
        old = self.require(resource, namespace, name)
        options = options or {}
        request_options.check_delete_options(options)
        old_meta = old["metadata"]
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != old_meta.get("uid"):
            raise errors.conflict(
                resource, name, precondition_failed("UID", pre["uid"], old_meta.get("uid", ""))
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != old_meta.get("resourceVersion"):
            raise errors.conflict(
                resource,
                name,
                precondition_failed(
                    "ResourceVersion", pre["resourceVersion"], old_meta.get("resourceVersion", "")
                ),
            )
        if resource.key == NAMESPACES.key:
            return await self._delete_namespace(old)
        if resource.key == customresources.CRD_KEY:
            return await self._delete_crd(old)
        return views.to_view(resource, await self._delete_stored(resource, old, options))

    async def _delete_stored(self, resource: ResourceType, old: Obj, options: Obj) -> Obj:
        old_meta = old["metadata"]
        grace = self._grace_period(resource, old, options.get("gracePeriodSeconds"))
        # propagationPolicy: the garbage collector's orphan/foregroundDeletion finalizers
        finalizers = deletion_policy.finalizers_after_delete(resource.key, old_meta, options)
        if grace > 0 or finalizers:
            if old_meta.get("deletionTimestamp"):
                current = old_meta.get("deletionGracePeriodSeconds")
                if finalizers != (old_meta.get("finalizers") or []):
                    meta = {**old_meta, "finalizers": finalizers}
                    return await self.store.put(
                        resource.storage_key, {**old, "metadata": meta}, old
                    )
                if current is None or grace >= current:
                    return old  # already terminating; a longer grace never extends it
            meta = {
                **old_meta,
                "finalizers": finalizers,
                "deletionTimestamp": rfc3339(self.clock() + min(grace, _MAX_GRACE_OFFSET)),
                "deletionGracePeriodSeconds": grace,
            }
            if not finalizers:
                del meta["finalizers"]
            if "generation" in meta:
                meta["generation"] = int(meta["generation"]) + 1
            return await self.store.put(resource.storage_key, {**old, "metadata": meta}, old)
        return await self.store.delete(resource.storage_key, old)

    @staticmethod
    def _grace_period(resource: ResourceType, obj: Obj, requested: Any) -> int:
        """Only pods on a node terminate gracefully (upstream podStrategy.CheckGracefulDelete)."""
        if resource.key != PODS.key:
            return 0
        spec = obj.get("spec") or {}
        phase = (obj.get("status") or {}).get("phase")
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        if requested is None:
            requested = spec.get("terminationGracePeriodSeconds", 30)
        grace = int(requested)
        return max(grace, 0)

    async def _delete_crd(self, crd: Obj) -> Obj:
        """Remove the CRD with every object of its resource (the customresourcecleanup
        finalizer's work, done at once)."""
        spec = crd.get("spec") or {}
        key = f"{spec.get('group')}/{(spec.get('names') or {}).get('plural')}"
        changes: list[tuple[str, Obj | None, Obj | None]] = [
            (key, None, o) for o in self.store.items(key)
        ]
        changes.append((customresources.CRD_KEY, None, crd))
        events = await self.store.commit(changes)
        return events[-1].obj

    async def _delete_namespace(self, ns: Obj) -> Obj:
        """Remove everything in it, then the namespace itself (the namespace controller's job)."""
        name = ns["metadata"]["name"]
        changes: list[tuple[str, Obj | None, Obj | None]] = []
        keys = [r.key for r in RESOURCES if r.namespaced and not views.is_view(r)]
        custom = customresources.registry_of(self.store).resources()
        keys += sorted({r.key for r in custom if r.namespaced})
        for key in keys:
            changes.extend((key, None, o) for o in self.store.items(key, name))
        changes.append((NAMESPACES.key, None, ns))
        events = await self.store.commit(changes)
        return events[-1].obj

    async def delete_collection(
        self, resource: ResourceType, namespace: str | None, options: ListOptions, body: Obj | None
    ) -> Obj:
        predicate = self.predicate(resource, options)
        deleted: list[Obj] = []
        for obj in self.store.items(resource.storage_key, namespace):
            if predicate is not None and not predicate(obj):
                continue
            meta = obj["metadata"]
            try:
                deleted.append(
                    await self.delete(resource, meta.get("namespace", ""), meta["name"], body)
                )
            except errors.ApiError as exc:
                if exc.code != 404:
                    raise
        return {
            "kind": resource.list_kind,
            "apiVersion": resource.api_version,
            "metadata": {"resourceVersion": str(self.store.resource_version)},
            "items": deleted,
        }


def _serialized_size(obj: Obj) -> int:
    """The JSON size of a patched object (0 when too deep to serialize: the store's depth
    check refuses it with its own message)."""
    try:
        return len(orjson.dumps(obj))
    except orjson.JSONEncodeError:
        return 0
