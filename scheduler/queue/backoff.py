"""backoffQ: pods waiting out their backoff, ordered by when it expires.

Upstream: pkg/scheduler/backend/queue/backoff_queue.go (calculateBackoffDuration,
lessBackoffCompleted, lessBackoffCompletedWithPriority, podBackoffQ and podErrorBackoffQ,
popBackoff).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from scheduler.queue.active import LessFn
from scheduler.queue.types import QueuedPodInfo


def backoff_duration(attempts: int, initial: float, maximum: float) -> float:
    """initial * 2**(attempts-1), capped at maximum; a pod never attempted owes no backoff."""
    if attempts <= 0:
        return 0.0
    duration = initial
    for _ in range(1, attempts):
        if duration >= maximum - duration:  # doubling would pass the cap
            return maximum
        duration += duration
    return min(duration, maximum)


class _Slot:
    """A heap slot: (expiry, then `less` when given, then insertion order)."""

    __slots__ = ("expiry", "less", "pinfo", "seq")

    def __init__(self, expiry: float, seq: int, pinfo: QueuedPodInfo, less: LessFn | None):
        self.expiry = expiry
        self.seq = seq
        self.pinfo = pinfo
        self.less = less

    def __lt__(self, other: _Slot) -> bool:
        if self.expiry != other.expiry:
            return self.expiry < other.expiry
        less = self.less
        if less is not None:
            if less(self.pinfo, other.pinfo):
                return True
            if less(other.pinfo, self.pinfo):
                return False
        return self.seq < other.seq


class BackoffQueue:
    """Two heaps keyed by backoff expiry, with lazy deletion through a uid → live slot map:
    pods rejected by plugins (podBackoffQ) and pods whose attempt ended in an error
    (podErrorBackoffQ). With SchedulerPopFromBackoffQ, `pop_head` takes the first of the
    former when activeQ is empty; pods of one expiry are then in activeQ's order (`less`,
    lessBackoffCompletedWithPriority), the error ones never popped early."""

    __slots__ = ("_entries", "_heaps", "_less", "_poppable", "_seq")

    def __init__(self, less: LessFn | None = None) -> None:
        # _heaps[False]: rejected by plugins; _heaps[True]: errors.
        self._heaps: dict[bool, list[_Slot]] = {False: [], True: []}
        self._entries: dict[str, tuple[bool, _Slot]] = {}
        self._seq = 0
        self._less = less
        self._poppable = 0  # live slots in _heaps[False]

    def set_less(self, less: LessFn | None) -> None:
        """New ties order for slots added from now on (a reload's QueueSort)."""
        self._less = less

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, uid: object) -> bool:
        return uid in self._entries

    def get(self, uid: str) -> QueuedPodInfo | None:
        entry = self._entries.get(uid)
        return entry[1].pinfo if entry is not None else None

    def add(self, pinfo: QueuedPodInfo, expiry: float, error: bool = False) -> None:
        self.remove(pinfo.uid)
        self._seq += 1
        slot = _Slot(expiry, self._seq, pinfo, self._less)
        self._entries[pinfo.uid] = (error, slot)
        heapq.heappush(self._heaps[error], slot)
        self._poppable += not error
        self._compact_if_sparse(error)

    def remove(self, uid: str) -> QueuedPodInfo | None:
        entry = self._entries.pop(uid, None)
        if entry is None:
            return None
        self._poppable -= not entry[0]
        return entry[1].pinfo

    def poppable(self) -> int:
        """How many pods `pop_head` could take (upstream's lenBackoff)."""
        return self._poppable

    def pop_head(self) -> QueuedPodInfo | None:
        """Remove and return the first pod rejected by plugins, backing off or not."""
        heap = self._heaps[False]
        while heap:
            slot = heapq.heappop(heap)
            entry = self._entries.get(slot.pinfo.uid)
            if entry is not None and entry[1] is slot:
                del self._entries[slot.pinfo.uid]
                self._poppable -= 1
                return slot.pinfo
        return None

    def pop_expired(self, now: float, inclusive: bool = True) -> list[QueuedPodInfo]:
        """Remove and return, earliest first, every pod whose backoff ended at or before `now`
        (before it, when not `inclusive`)."""
        done: list[_Slot] = []
        for error in (False, True):
            heap = self._heaps[error]
            while heap:
                slot = heap[0]
                entry = self._entries.get(slot.pinfo.uid)
                if entry is None or entry[1] is not slot:
                    heapq.heappop(heap)  # stale: removed or re-added since
                    continue
                if slot.expiry > now or (not inclusive and slot.expiry == now):
                    break
                heapq.heappop(heap)
                del self._entries[slot.pinfo.uid]
                self._poppable -= not error
                done.append(slot)
        # popAllBackoffCompleted: podBackoffQ's pods, then podErrorBackoffQ's.
        return [slot.pinfo for slot in done]

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return (entry[1].pinfo for entry in self._entries.values())

    def _compact_if_sparse(self, error: bool) -> None:
        heap = self._heaps[error]
        if len(heap) > 64 and len(heap) > 2 * len(self._entries):
            live = [slot for e, slot in self._entries.values() if e is error]
            heapq.heapify(live)
            self._heaps[error] = live
