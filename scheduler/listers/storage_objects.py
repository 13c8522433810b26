"""PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes, CSIDrivers and
CSIStorageCapacities, kept by informers for the volume plugins (upstream's listers).

Each change is also offered to the scheduling queue as a cluster event, so that pods a volume
plugin rejected are retried when a claim is bound, a volume or class appears, or a node's CSI
limits change (the plugins' queueing hints then decide).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from scheduler.api.storage import (
    CSIDriverView,
    CSINodeView,
    CSIStorageCapacityView,
    PersistentVolumeClaimView,
    PersistentVolumeView,
    StorageClassView,
)
from scheduler.framework.events import ActionType, ClusterEvent, EventResource

T = TypeVar("T")
# (event, old object or None, new object or None): what the scheduler hands to its queue.
EventSink = Callable[[ClusterEvent, Any, Any], None]


class KeyedStore(Generic[T]):
    """Objects by their `key` ("namespace/name" or "name"), fed by an informer. `label`
    names its events as upstream's ("Pvc" gives PvcAdd, PvcUpdate, PvcDelete)."""

    def __init__(self, resource: EventResource, label: str) -> None:
        self.resource = resource
        self._events = {
            action: ClusterEvent(resource, action, f"{label}{verb}")
            for action, verb in (
                (ActionType.ADD, "Add"),
                (ActionType.UPDATE, "Update"),
                (ActionType.DELETE, "Delete"),
            )
        }
        self.by_key: dict[str, T] = {}
        # Called with (old, new) after each change, after the store is updated (see
        # `subscribe`): the scheduling queue (`StorageObjects.connect`), and the volume binder
        # waiting for the PV controller's progress.
        self._listeners: list[Callable[[Any, Any], None]] = []

    def on_add(self, obj: T) -> None:
        self.by_key[_key(obj)] = obj
        self._notify(None, obj)

    def on_update(self, old: T, new: T) -> None:
        self.by_key.pop(_key(old), None)
        self.by_key[_key(new)] = new
        self._notify(old, new)

    def on_delete(self, obj: T) -> None:
        self.by_key.pop(_key(obj), None)
        self._notify(obj, None)

    def event_of(self, old: Any, new: Any) -> ClusterEvent:
        """The cluster event of a change: an add without `old`, a delete without `new`."""
        if old is None:
            return self._events[ActionType.ADD]
        return self._events[ActionType.DELETE if new is None else ActionType.UPDATE]

    def subscribe(self, listener: Callable[[Any, Any], None]) -> Callable[[], None]:
        """Call `listener(old, new)` after every later change (None for the missing side of
        an add or delete); returns the function that unsubscribes it."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def get(self, key: str) -> T | None:
        return self.by_key.get(key)

    def list(self) -> Iterable[T]:
        return self.by_key.values()

    def _notify(self, old: Any, new: Any) -> None:
        for listener in tuple(self._listeners):
            listener(old, new)


def _as_events(store: KeyedStore[Any], sink: EventSink) -> Callable[[Any, Any], None]:
    def send(old: Any, new: Any) -> None:
        sink(store.event_of(old, new), old, new)

    return send


def _key(obj: Any) -> str:
    return str(obj.key)


class StorageObjects:
    """The storage listers. Filled by informers (`informer_specs`) or directly by tests."""

    def __init__(self) -> None:
        self.claims: KeyedStore[PersistentVolumeClaimView] = KeyedStore(
            EventResource.PERSISTENT_VOLUME_CLAIM, "Pvc"
        )
        self.volumes: KeyedStore[PersistentVolumeView] = KeyedStore(
            EventResource.PERSISTENT_VOLUME, "Pv"
        )
        self.classes: KeyedStore[StorageClassView] = KeyedStore(
            EventResource.STORAGE_CLASS, "StorageClass"
        )
        self.csi_nodes: KeyedStore[CSINodeView] = KeyedStore(EventResource.CSI_NODE, "CSINode")
        self.csi_drivers: KeyedStore[CSIDriverView] = KeyedStore(
            EventResource.CSI_DRIVER, "CSIDriver"
        )
        self.capacities: KeyedStore[CSIStorageCapacityView] = KeyedStore(
            EventResource.CSI_STORAGE_CAPACITY, "CSIStorageCapacity"
        )

    def connect(self, sink: EventSink) -> None:
        """Send every later change to `sink` as a cluster event."""
        for _name, _path, _parse, store in self.informer_specs():
            store.subscribe(_as_events(store, sink))

    def informer_specs(self) -> list[tuple[str, str, Any, KeyedStore[Any]]]:
        """(informer name, API path, parser, store) for each kind."""
        return [
            (
                "persistentvolumeclaims",
                "/api/v1/persistentvolumeclaims",
                PersistentVolumeClaimView.from_dict,
                self.claims,
            ),
            (
                "persistentvolumes",
                "/api/v1/persistentvolumes",
                PersistentVolumeView.from_dict,
                self.volumes,
            ),
            (
                "storageclasses",
                "/apis/storage.k8s.io/v1/storageclasses",
                StorageClassView.from_dict,
                self.classes,
            ),
            ("csinodes", "/apis/storage.k8s.io/v1/csinodes", CSINodeView.from_dict, self.csi_nodes),
            (
                "csidrivers",
                "/apis/storage.k8s.io/v1/csidrivers",
                CSIDriverView.from_dict,
                self.csi_drivers,
            ),
            (
                "csistoragecapacities",
                "/apis/storage.k8s.io/v1/csistoragecapacities",
                CSIStorageCapacityView.from_dict,
                self.capacities,
            ),
        ]

    # -- listers -------------------------------------------------------------------------

    def claim(self, namespace: str, name: str) -> PersistentVolumeClaimView | None:
        return self.claims.get(f"{namespace}/{name}")

    def volume(self, name: str) -> PersistentVolumeView | None:
        return self.volumes.get(name)

    def storage_class(self, name: str) -> StorageClassView | None:
        return self.classes.get(name)

    def csi_node(self, name: str) -> CSINodeView | None:
        return self.csi_nodes.get(name)

    def csi_driver(self, name: str) -> CSIDriverView | None:
        return self.csi_drivers.get(name)

    # -- for tests -----------------------------------------------------------------------

    def add(self, *objects: Any) -> None:
        """Add views (from the `from_dict` of scheduler.api.storage) to their stores."""
        stores: dict[type, KeyedStore[Any]] = {
            PersistentVolumeClaimView: self.claims,
            PersistentVolumeView: self.volumes,
            StorageClassView: self.classes,
            CSINodeView: self.csi_nodes,
            CSIDriverView: self.csi_drivers,
            CSIStorageCapacityView: self.capacities,
        }
        for obj in objects:
            stores[type(obj)].on_add(obj)
