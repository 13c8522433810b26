"""activeQ: pods ready to be scheduled, a heap ordered by the profile's QueueSort `less`.

When the QueueSort plugin gives a `sort_key` (PrioritySort does), each heap item is the pair
(key, slot): tuples compare in C, and only pods whose keys are equal reach the slots' `less`,
which says neither is less, as it would have said directly. So the pods come out in exactly the
order `less` alone gives, at a dozen fewer Python calls per push and pop.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import Any

from scheduler.queue.types import QueuedPodInfo, SortKey

LessFn = Callable[[QueuedPodInfo, QueuedPodInfo], bool]


class _Entry:
    """A heap slot; heapq orders slots through `less`, which can be swapped by set_less."""

    __slots__ = ("less", "pinfo")

    def __init__(self, pinfo: QueuedPodInfo, less: LessFn) -> None:
        self.pinfo = pinfo
        self.less = less

    def __lt__(self, other: _Entry) -> bool:
        return self.less(self.pinfo, other.pinfo)


class ActiveQueue:
    """Heap with lazy deletion: `_entries` maps uid → the one live slot; other slots are stale.

    A queued QueuedPodInfo must not change in ways `less` looks at (a stale slot still takes part
    in heap comparisons); to change a queued pod, remove it and add a copy.
    """

    __slots__ = ("_entries", "_heap", "_key", "_less")

    def __init__(self, less: LessFn, key: SortKey | None = None) -> None:
        self._less = less
        self._key = key
        self._heap: list[Any] = []  # slots, or (key, slot) pairs with a key
        self._entries: dict[str, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, uid: object) -> bool:
        return uid in self._entries

    def get(self, uid: str) -> QueuedPodInfo | None:
        entry = self._entries.get(uid)
        return entry.pinfo if entry is not None else None

    def add(self, pinfo: QueuedPodInfo) -> None:
        entry = _Entry(pinfo, self._less)
        self._entries[pinfo.uid] = entry
        heapq.heappush(self._heap, self._item(entry))
        self._compact_if_sparse()

    def remove(self, uid: str) -> QueuedPodInfo | None:
        entry = self._entries.pop(uid, None)
        return entry.pinfo if entry is not None else None

    def pop(self) -> QueuedPodInfo | None:
        heap, keyed = self._heap, self._key is not None
        while heap:
            item = heapq.heappop(heap)
            entry: _Entry = item[1] if keyed else item
            if self._entries.get(entry.pinfo.uid) is entry:
                del self._entries[entry.pinfo.uid]
                return entry.pinfo
        return None

    def set_less(self, less: LessFn, key: SortKey | None = None) -> None:
        self._less = less
        self._key = key
        self._entries = {uid: _Entry(e.pinfo, less) for uid, e in self._entries.items()}
        self._rebuild()

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return (entry.pinfo for entry in self._entries.values())

    def _item(self, entry: _Entry) -> Any:
        return entry if self._key is None else (self._key(entry.pinfo), entry)

    def _rebuild(self) -> None:
        self._heap = [self._item(entry) for entry in self._entries.values()]
        heapq.heapify(self._heap)

    def _compact_if_sparse(self) -> None:
        if len(self._heap) > 64 and len(self._heap) > 2 * len(self._entries):
            self._rebuild()
