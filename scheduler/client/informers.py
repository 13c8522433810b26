"""List+watch informers that keep a local store and call handlers with parsed views.

One informer per resource. It lists, then watches from the list's resourceVersion; when the watch
breaks or answers 410 Gone it relists and reconciles the fresh list against its store, emitting
exactly the adds, updates and deletes that happened meanwhile — nothing lost, nothing counted
twice. Objects that cannot be parsed are logged and skipped; they never stop the informer, and
an ``on_unparsable`` callback (the pod informer's) can make them visible to the user.

An ``optional`` informer (resource.k8s.io's, which older API servers do not serve) counts as
synced with an empty store when its list answers 404 Not Found or 403 Forbidden, and lists
again every ``max_backoff`` seconds, so that such a cluster never keeps the scheduler from
starting; the resource appears as soon as the API server serves it.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import orjson

from scheduler.api.fields import is_mapping
from scheduler.api.objects import MalformedObject
from scheduler.client.rest import ApiError, KubeClient, status_message

log = logging.getLogger(__name__)

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class Handler(Protocol[T_contra]):
    def on_add(self, obj: T_contra) -> None: ...

    def on_update(self, old: T_contra, new: T_contra) -> None: ...

    def on_delete(self, obj: T_contra) -> None: ...


class WatchExpired(Exception):
    """The API server no longer has the requested resourceVersion (410 Gone)."""


class NotServed(Exception):
    """An optional informer's list was answered 404 or 403: the resource is not available."""


@dataclass(frozen=True, slots=True)
class ResourceWatch:
    path: str  # e.g. "/api/v1/pods"
    field_selector: str = ""
    label_selector: str = ""


def object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    if not is_mapping(meta):  # malformed: the parser will say so
        return ""
    namespace = meta.get("namespace") or ""
    name = meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)


class Informer(Generic[T]):
    """List+watch one resource into a store of parsed views keyed by namespace/name."""

    def __init__(
        self,
        client: KubeClient,
        watch: ResourceWatch,
        parse: Callable[[Mapping[str, Any], T | None], T],
        handler: Handler[T],
        *,
        name: str,
        rng: random.Random | None = None,
        page_size: int = 500,
        watch_timeout_seconds: int = 300,
        max_backoff: float = 30.0,
        on_unparsable: Callable[[Mapping[str, Any], str], None] | None = None,
        optional: bool = False,
    ) -> None:
        self.name = name
        self._optional = optional
        self._on_unparsable = on_unparsable
        self._client = client
        self._watch = watch
        self._parse = parse
        self._handler = handler
        self._rng = rng or random.Random()
        self._page_size = page_size
        self._watch_timeout = watch_timeout_seconds
        self._max_backoff = max_backoff
        self.store: dict[str, T] = {}
        self.synced = asyncio.Event()
        self.resource_version = ""
        self.relists = 0

    def _params(self) -> dict[str, str]:
        params: dict[str, str] = {}
        if self._watch.field_selector:
            params["fieldSelector"] = self._watch.field_selector
        if self._watch.label_selector:
            params["labelSelector"] = self._watch.label_selector
        return params

    def _parse_or_skip(self, raw: Mapping[str, Any], previous: T | None) -> T | None:
        """The view of ``raw``; ``previous`` (the stored view of its key) may share parts."""
        try:
            return self._parse(raw, previous)
        except (MalformedObject, ValueError, TypeError, KeyError, AttributeError) as exc:
            log.warning(
                "skipping malformed object",
                extra={"informer": self.name, "object": object_key(raw), "error": str(exc)},
            )
            if self._on_unparsable is not None:
                self._emit(self._on_unparsable, raw, str(exc))
            return None

    async def run(self) -> None:
        """List and watch until cancelled, relisting with jittered backoff on failures."""
        backoff = 0.0
        while True:
            try:
                await self._list_and_reconcile()
                self.synced.set()
                backoff = 0.0
                while True:
                    await self._watch_once()
                    backoff = 0.0
            except WatchExpired:
                log.info("watch expired, relisting", extra={"informer": self.name})
            except NotServed as exc:
                # An older or restricted API server: nothing of this kind exists for us.
                log.info(
                    "resource not available, listing again later",
                    extra={"informer": self.name, "error": str(exc), "retry_in": self._max_backoff},
                )
                self._reconcile({})
                self.synced.set()
                await asyncio.sleep(self._max_backoff * (0.5 + self._rng.random()))
            except (TimeoutError, ApiError, OSError, ValueError) as exc:
                backoff = min(self._max_backoff, max(0.5, backoff * 2))
                log.warning(
                    "list/watch failed, retrying",
                    extra={"informer": self.name, "error": str(exc), "retry_in": backoff},
                )
                await asyncio.sleep(backoff * (0.5 + self._rng.random()))
            self.relists += 1

    async def _list_and_reconcile(self) -> None:
        fresh: dict[str, T] = {}
        params = self._params()
        params["limit"] = str(self._page_size)
        resource_version = ""
        while True:
            status, body = await self._client.request("GET", self._watch.path, params=params)
            if status == 410:
                # The continue token expired mid-list: start the list again.
                params.pop("continue", None)
                fresh.clear()
                continue
            if self._optional and status in (403, 404):
                raise NotServed(f"list {self._watch.path}: {status} {status_message(body)}")
            if status != 200 or not isinstance(body, dict):
                raise ApiError(f"list {self._watch.path}: {status} {status_message(body)}")
            for raw in body.get("items") or ():
                key = object_key(raw)
                view = self._parse_or_skip(raw, self.store.get(key))
                if view is not None:
                    fresh[key] = view
            meta = body.get("metadata") or {}
            resource_version = meta.get("resourceVersion", "")
            token = meta.get("continue")
            if not token:
                break
            params["continue"] = token
        self._reconcile(fresh)
        self.resource_version = resource_version

    def _reconcile(self, fresh: dict[str, T]) -> None:
        """Emit the difference between the store and a fresh list, then adopt the list."""
        old_store = self.store
        self.store = fresh
        for key, old in old_store.items():
            if key not in fresh:
                self._emit(self._handler.on_delete, old)
        for key, new in fresh.items():
            old_view = old_store.get(key)
            if old_view is None:
                self._emit(self._handler.on_add, new)
            elif _resource_version(old_view) != _resource_version(new):
                self._emit(self._handler.on_update, old_view, new)

    def _emit(self, callback: Callable[..., None], *views: Any) -> None:
        """Call a handler; a handler bug is logged, it must not stop the informer."""
        try:
            callback(*views)
        except Exception:
            log.exception("event handler failed", extra={"informer": self.name})

    async def _watch_once(self) -> None:
        params = self._params()
        params.update(
            {
                "watch": "1",
                "resourceVersion": self.resource_version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": str(self._watch_timeout),
            }
        )
        async with self._client.stream(self._watch.path, params) as (status, body):
            if status == 410:
                raise WatchExpired()
            if status != 200:
                text = (await body.read())[:500].decode("utf-8", "replace")
                raise ApiError(f"watch {self._watch.path}: {status} {text}")
            async for line in body:
                if line.strip():
                    self._apply_event(orjson.loads(line))

    def _apply_event(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        raw = event.get("object") or {}
        if kind == "ERROR":
            if raw.get("code") == 410:
                raise WatchExpired()
            raise ApiError(f"watch {self._watch.path}: {status_message(raw)}")
        rv = (raw.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return
        key = object_key(raw)
        if kind in ("ADDED", "MODIFIED"):
            old = self.store.get(key)
            view = self._parse_or_skip(raw, old)
            if view is not None:
                self.store[key] = view
                if old is None:
                    self._emit(self._handler.on_add, view)
                else:
                    self._emit(self._handler.on_update, old, view)
        elif kind == "DELETED":
            old = self.store.pop(key, None)
            if old is not None:
                self._emit(self._handler.on_delete, old)
        if rv:
            self.resource_version = rv


def _resource_version(view: Any) -> str:
    return str(getattr(view, "resource_version", ""))
