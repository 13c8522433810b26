"""The assume cache: in-memory updates of PersistentVolumes and PersistentVolumeClaims laid over
the informer-fed store until the API server confirms them.

Upstream: pkg/scheduler/util/assumecache/assume_cache.go (AssumeCache) and
pkg/scheduler/framework/plugins/volumebinding/assume_cache.go (PVAssumeCache, PVCAssumeCache).

Semantics kept from upstream:
- `get` / `list` answer the latest object: the assumed one while it is assumed, else the
  informer's; `get_api` always answers the informer's.
- An assumed object holds until the informer delivers a version with a greater
  resourceVersion (or deletes the object), or until `restore` drops it.
- `assume` refuses an object older than the latest one ("... is out of sync") and an object
  the informer does not have ("could not find ...").

Instead of copying the informer's objects, the cache reads them from the `KeyedStore` the
informer feeds, and compares versions when an assumed object is read: the outcome is the one
upstream's add/update handlers produce, without subscribing to the store (so a cache per plugin
instance costs nothing when profiles are rebuilt).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from scheduler.listers.storage_objects import KeyedStore

T = TypeVar("T")

PV_DESCRIPTION = "v1.PersistentVolume"
PVC_DESCRIPTION = "v1.PersistentVolumeClaim"


class AssumeCacheError(Exception):
    """An assume-cache operation failed; the message is upstream's."""


class NotFoundError(AssumeCacheError):
    def __init__(self, description: str, key: str) -> None:
        super().__init__(f'could not find {description} "{key}"')
        self.key = key


def parse_resource_version(obj: Any, description: str, key: str) -> int:
    """strconv.ParseInt(resourceVersion, 10, 64) as upstream's getObjVersion does it."""
    text = str(getattr(obj, "resource_version", ""))
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or not digits.isascii() or not digits.isdigit():
        raise AssumeCacheError(
            f'error parsing ResourceVersion "{text}" for {description} "{key}": '
            f'strconv.ParseInt: parsing "{text}": invalid syntax'
        )
    number = int(text)
    if not -(2**63) <= number < 2**63:
        raise AssumeCacheError(
            f'error parsing ResourceVersion "{text}" for {description} "{key}": '
            f'strconv.ParseInt: parsing "{text}": value out of range'
        )
    return number


class AssumeCache(Generic[T]):
    """Assumed objects by key over a `KeyedStore` (the informer's objects)."""

    def __init__(self, store: KeyedStore[T], description: str) -> None:
        self._store = store
        self.description = description
        self._assumed: dict[str, T] = {}

    def _latest(self, key: str) -> T | None:
        api = self._store.get(key)
        assumed = self._assumed.get(key)
        if assumed is None:
            return api
        if api is None:
            # Deleted by the informer: upstream's delete handler drops the whole entry.
            del self._assumed[key]
            return None
        if api is assumed:
            return api
        try:
            newer = parse_resource_version(api, self.description, key) > parse_resource_version(
                assumed, self.description, key
            )
        except AssumeCacheError:
            # Upstream's add handler logs a version it cannot parse and keeps what it had.
            return assumed
        if newer:
            # The informer delivered a newer version: it replaces the assumed one.
            del self._assumed[key]
            return api
        return assumed

    def get(self, key: str) -> T:
        """The latest object (assumed or the informer's); NotFoundError if there is none."""
        obj = self._latest(key)
        if obj is None:
            raise NotFoundError(self.description, key)
        return obj

    def get_api(self, key: str) -> T:
        """The informer's object; NotFoundError if there is none."""
        obj = self._store.get(key)
        if obj is None:
            raise NotFoundError(self.description, key)
        return obj

    def list(self, where: Callable[[T], bool] | None = None) -> Iterator[T]:
        """The latest objects, those `where` accepts (upstream lists by an index over them)."""
        assumed = self._assumed
        for key, api in self._store.by_key.items():
            obj = self._latest(key) if key in assumed else api
            if obj is not None and (where is None or where(obj)):
                yield obj

    def assume(self, obj: T) -> None:
        """Make `obj` the latest version of its key in memory only."""
        key = str(getattr(obj, "key", ""))
        latest = self._latest(key)
        if latest is None:
            raise NotFoundError(self.description, key)
        new_version = parse_resource_version(obj, self.description, key)
        stored_version = parse_resource_version(latest, self.description, key)
        if new_version < stored_version:
            raise AssumeCacheError(
                f'{self.description} "{key}" is out of sync '
                f"(stored: {stored_version}, assume: {new_version})"
            )
        self._assumed[key] = obj

    def restore(self, key: str) -> None:
        """Back to the informer's version of `key` (nothing to do if it is not assumed)."""
        self._assumed.pop(key, None)

    def is_assumed(self, key: str) -> bool:
        return self._latest(key) is not None and key in self._assumed
