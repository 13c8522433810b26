"""The garbage collector: dependents follow their owners' deletion by ownerReferences.

Upstream: pkg/controller/garbagecollector/garbagecollector.go (attemptToDeleteItem,
orphanDependents, processDeletingDependentsItem) and graph_builder.go. Background deletion: an
object whose owners are all gone is deleted. Foreground: an owner deleted with the
`foregroundDeletion` finalizer waits until its dependents with blockOwnerDeletion are gone, then
the finalizer is removed. Orphan: the `orphan` finalizer makes the collector remove the owner's
references from its dependents, then the finalizer.

Items are (store key, namespace, name), carried in the manager's namespace slot as "key ns".
The owner index (owner uid -> dependents) is rebuilt from the store on start.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesim.api import Api
from kubesim.controllers import common as c
from kubesim.controllers.manager import Due, Key
from kubesim.deletion_policy import FOREGROUND, ORPHAN
from kubesim.meta import Obj
from kubesim.resources import RESOURCES
from kubesim.watch import Event

Item = tuple[str, str, str]  # (store key, namespace, name)
_BY_KIND: dict[tuple[str, str], tuple[str, bool]] = {
    (r.group, r.kind): (r.key, r.namespaced) for r in RESOURCES if not r.stored_as
}


def _slot(key: str, namespace: str) -> str:
    return f"{key} {namespace}"


def _unslot(slot: str) -> tuple[str, str]:
    key, _, namespace = slot.partition(" ")
    return key, namespace


def _refs(obj: Obj | None) -> list[dict[str, Any]]:
    return [] if obj is None else c.owner_refs(obj)


def _finalizers(obj: Obj) -> list[str]:
    return list((obj.get("metadata") or {}).get("finalizers") or [])


class GarbageCollector:
    name = "GarbageCollector"
    owned_only: tuple[str, ...] = ()

    def __init__(self, api: Api) -> None:
        self.api = api
        self.watches = tuple(r.key for r in RESOURCES if not r.stored_as)
        self._dependents: dict[str, set[Item]] = {}

    # ---- the owner index ---------------------------------------------------------------------
    def _index(
        self, item: Item, old_refs: list[dict[str, Any]], new_refs: list[dict[str, Any]]
    ) -> None:
        for ref in old_refs:
            deps = self._dependents.get(str(ref.get("uid")))
            if deps is not None:
                deps.discard(item)
                if not deps:
                    del self._dependents[str(ref.get("uid"))]
        for ref in new_refs:
            self._dependents.setdefault(str(ref.get("uid")), set()).add(item)

    def dependents(self, owner_uid: str) -> list[Item]:
        return sorted(self._dependents.get(owner_uid, ()))

    def _owner(self, ref: dict[str, Any], namespace: str) -> tuple[bool, Obj | None]:
        """(resolvable, the stored owner if it is the one referenced by uid)."""
        group = str(ref.get("apiVersion") or "").rpartition("/")[0]
        found = _BY_KIND.get((group, str(ref.get("kind") or "")))
        if found is None:
            return False, None
        key, namespaced = found
        owner = self.api.store.get(key, namespace if namespaced else "", str(ref.get("name")))
        if owner is None or c.uid(owner) != ref.get("uid"):
            return True, None
        return True, owner

    # ---- events ------------------------------------------------------------------------------
    def on_event(self, key: str, event: Event) -> Iterable[Due]:
        obj, old = event.obj, event.old
        meta = obj["metadata"]
        if (
            event.type == "MODIFIED"
            and not meta.get("deletionTimestamp")
            and not meta.get("ownerReferences")
            and not (old is not None and old["metadata"].get("ownerReferences"))
        ):
            return ()  # nothing the collector acts on changed (a bare pod's status, a bind)
        namespace = meta.get("namespace", "")
        item = (key, namespace, meta["name"])
        new_refs = [] if event.type == "DELETED" else _refs(obj)
        old_refs = _refs(old)
        changed = new_refs != old_refs
        due: list[Due] = []
        if changed:
            self._index(item, old_refs, new_refs)
            if new_refs:
                due.append((_slot(key, namespace), meta["name"], 0.0))
            for ref in old_refs:  # an owner waiting for its dependents may be done
                due.extend(self._owner_item(ref, namespace))
        if event.type == "DELETED":
            for dep_key, dep_ns, dep_name in self.dependents(str(meta.get("uid"))):
                due.append((_slot(dep_key, dep_ns), dep_name, 0.0))
        elif meta.get("deletionTimestamp"):
            finalizers = meta.get("finalizers") or ()
            if ORPHAN in finalizers or FOREGROUND in finalizers:
                due.append((_slot(key, namespace), meta["name"], 0.0))
                if FOREGROUND in finalizers:
                    for dep_key, dep_ns, dep_name in self.dependents(str(meta.get("uid"))):
                        due.append((_slot(dep_key, dep_ns), dep_name, 0.0))
        return due

    def _owner_item(self, ref: dict[str, Any], namespace: str) -> list[Due]:
        group = str(ref.get("apiVersion") or "").rpartition("/")[0]
        found = _BY_KIND.get((group, str(ref.get("kind") or "")))
        if found is None:
            return []
        key, namespaced = found
        return [(_slot(key, namespace if namespaced else ""), str(ref.get("name")), 0.0)]

    def initial(self) -> Iterable[Key]:
        self._dependents.clear()
        work: list[Key] = []
        for key, obj in self.api.store.iter_all():
            meta = obj["metadata"]
            item = (key, meta.get("namespace", ""), meta["name"])
            refs = _refs(obj)
            if refs:
                self._index(item, [], refs)
                work.append((_slot(key, item[1]), item[2]))
            finalizers = meta.get("finalizers") or ()
            if meta.get("deletionTimestamp") and (ORPHAN in finalizers or FOREGROUND in finalizers):
                work.append((_slot(key, item[1]), item[2]))
        return work

    # ---- sync --------------------------------------------------------------------------------
    async def sync(self, namespace: str, name: str) -> Iterable[Due]:
        key, namespace = _unslot(namespace)
        obj = self.api.store.get(key, namespace, name)
        if obj is None:
            return []
        if c.deleting(obj):
            finalizers = _finalizers(obj)
            if ORPHAN in finalizers:
                await self._orphan_dependents(key, obj)
                return []
            if FOREGROUND in finalizers:
                await self._finish_foreground(key, obj)
        if _refs(obj):
            await self._attempt_to_delete(key, obj)
        return []

    async def _orphan_dependents(self, key: str, owner: Obj) -> None:
        owner_uid = c.uid(owner)
        for dep_key, dep_ns, dep_name in self.dependents(owner_uid):
            dep = self.api.store.get(dep_key, dep_ns, dep_name)
            if dep is None:
                continue
            kept = [r for r in _refs(dep) if r.get("uid") != owner_uid]
            await c.write_meta(self.api, dep_key, dep, {"ownerReferences": kept or None})
        current = self.api.store.get(key, owner["metadata"].get("namespace", ""), c.name(owner))
        if current is not None and c.uid(current) == owner_uid:
            kept_finalizers = [f for f in _finalizers(current) if f != ORPHAN]
            await c.write_meta(self.api, key, current, {"finalizers": kept_finalizers or None})

    async def _finish_foreground(self, key: str, owner: Obj) -> None:
        owner_uid = c.uid(owner)
        for dep_key, dep_ns, dep_name in self.dependents(owner_uid):
            dep = self.api.store.get(dep_key, dep_ns, dep_name)
            if dep is None:
                continue
            if any(r.get("uid") == owner_uid and r.get("blockOwnerDeletion") for r in _refs(dep)):
                return  # processDeletingDependentsItem: still blocked
        kept = [f for f in _finalizers(owner) if f != FOREGROUND]
        await c.write_meta(self.api, key, owner, {"finalizers": kept or None})

    async def _attempt_to_delete(self, key: str, obj: Obj) -> None:
        """attemptToDeleteItem: classify owners as solid, dangling or waiting for dependents."""
        namespace = obj["metadata"].get("namespace", "")
        solid, dangling, waiting = [], [], []
        for ref in _refs(obj):
            resolvable, owner = self._owner(ref, namespace)
            if not resolvable:
                solid.append(ref)  # a kind kubesim does not serve: never act on a guess
            elif owner is None:
                dangling.append(ref)
            elif c.deleting(owner) and FOREGROUND in _finalizers(owner):
                waiting.append(ref)
            else:
                solid.append(ref)
        if solid:
            if dangling or waiting:
                gone = {r.get("uid") for r in dangling + waiting}
                kept = [r for r in _refs(obj) if r.get("uid") not in gone]
                await c.write_meta(self.api, key, obj, {"ownerReferences": kept})
            return
        if c.deleting(obj) and not (
            waiting and FOREGROUND not in _finalizers(obj) and self.dependents(c.uid(obj))
        ):
            return  # already on its way out
        finalizers = _finalizers(obj)
        if ORPHAN in finalizers:
            policy = "Orphan"
        elif FOREGROUND in finalizers or (waiting and self.dependents(c.uid(obj))):
            policy = "Foreground"
        else:
            policy = "Background"
        await c.delete(self.api, key, obj, {"propagationPolicy": policy})
