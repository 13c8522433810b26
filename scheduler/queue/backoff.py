"""backoffQ: pods waiting out their backoff, ordered by when it expires.

Upstream: pkg/scheduler/backend/queue/backoff_queue.go (calculateBackoffDuration,
lessBackoffCompleted).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

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


class BackoffQueue:
    """A heap keyed by backoff expiry with lazy deletion through a uid → live entry map."""

    __slots__ = ("_entries", "_heap", "_seq")

    def __init__(self) -> None:
        # (expiry, insertion sequence, pod info); the sequence keeps equal expiries in FIFO order.
        self._heap: list[tuple[float, int, QueuedPodInfo]] = []
        self._entries: dict[str, tuple[float, int, QueuedPodInfo]] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, uid: object) -> bool:
        return uid in self._entries

    def get(self, uid: str) -> QueuedPodInfo | None:
        entry = self._entries.get(uid)
        return entry[2] if entry is not None else None

    def add(self, pinfo: QueuedPodInfo, expiry: float) -> None:
        self._seq += 1
        entry = (expiry, self._seq, pinfo)
        self._entries[pinfo.uid] = entry
        heapq.heappush(self._heap, entry)
        self._compact_if_sparse()

    def remove(self, uid: str) -> QueuedPodInfo | None:
        entry = self._entries.pop(uid, None)
        return entry[2] if entry is not None else None

    def pop_expired(self, now: float) -> list[QueuedPodInfo]:
        """Remove and return, earliest first, every pod whose backoff ended at or before `now`."""
        done: list[QueuedPodInfo] = []
        heap = self._heap
        while heap:
            expiry, _, pinfo = heap[0]
            if self._entries.get(pinfo.uid) is not heap[0]:
                heapq.heappop(heap)  # stale: removed or re-added since
                continue
            if expiry > now:
                break
            heapq.heappop(heap)
            del self._entries[pinfo.uid]
            done.append(pinfo)
        return done

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return (entry[2] for entry in self._entries.values())

    def _compact_if_sparse(self) -> None:
        if len(self._heap) > 64 and len(self._heap) > 2 * len(self._entries):
            self._heap = list(self._entries.values())
            heapq.heapify(self._heap)
