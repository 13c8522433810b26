"""Pods being scheduled right now and the cluster events that arrived meanwhile.

Upstream keeps one list of pod markers and events (active_queue.go inFlightPods/inFlightEvents):
when a pod comes back unschedulable, only the events recorded after it was popped matter, and
events older than the oldest in-flight pod can be forgotten. Upstream's list is a linked list, so
each of those operations costs the same however many pods are in flight (thousands of pods can
be binding at once). Here the log is a Python list with absolute positions whose forgotten front
is only cut off once it is at least half the list (amortised O(1) per event, where `del
log[:n]` on every trim moved the whole rest of the list), and the oldest in-flight pod is found
through a FIFO of pop positions (a dict's first key is O(deleted slots) to reach after many
deletions from its front).

``on_change(label, delta)`` follows upstream's scheduler_inflight_events gauge: +1 "PodPopped"
per pod started, +1 per event recorded under the event's label, and the matching -1s when a pod
finishes and when events are trimmed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.framework.events import ClusterEvent
from scheduler.queue.event_labels import POD_POPPED, event_label
from scheduler.queue.types import QueuedPodInfo

# The forgotten front of the log is cut off once it is this long and at least half the list.
_MIN_COMPACT = 64


def _ignore(label: str, delta: int) -> None:
    pass


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    event: ClusterEvent
    old: Any
    new: Any
    label: str = ""


class InFlight:
    __slots__ = ("_base", "_head", "_log", "_on_change", "_order", "_pods")

    def __init__(self, on_change: Callable[[str, int], None] = _ignore) -> None:
        self._on_change = on_change
        # uid → (pod info, absolute position in the log when it was popped)
        self._pods: dict[str, tuple[QueuedPodInfo, int]] = {}
        # (position, uid) in pop order; entries of pods that finished or were popped again
        # since are stale and skipped when they reach the front.
        self._order: deque[tuple[int, str]] = deque()
        self._log: list[RecordedEvent | None] = []
        self._base = 0  # absolute position of _log[0]
        self._head = 0  # _log[:_head] is forgotten (None), cut off in _trim

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def get(self, uid: str) -> QueuedPodInfo | None:
        found = self._pods.get(uid)
        return found[0] if found is not None else None

    def start(self, pinfo: QueuedPodInfo) -> None:
        if self._pods.pop(pinfo.uid, None) is None:  # keep the dict in pop order
            self._on_change(POD_POPPED, 1)
        position = self._base + len(self._log)
        self._pods[pinfo.uid] = (pinfo, position)
        self._order.append((position, pinfo.uid))

    def record(self, event: ClusterEvent, old: Any, new: Any, label: str = "") -> bool:
        """Remember an event for the pods in flight; False (nothing kept) if none is.
        ``label`` is the event's metric label when the caller has it already."""
        if not self._pods:
            return False
        label = label or event_label(event)
        self._log.append(RecordedEvent(event, old, new, label))
        self._on_change(label, 1)
        return True

    def events_since_popped(self, uid: str) -> list[RecordedEvent]:
        found = self._pods.get(uid)
        if found is None:
            return []
        # Positions of pods still in flight are never in the forgotten front.
        return self._log[found[1] - self._base :]  # type: ignore[return-value]

    def finish(self, uid: str) -> QueuedPodInfo | None:
        """The pod left the scheduling cycle; drop events no remaining in-flight pod needs."""
        found = self._pods.pop(uid, None)
        if found is not None:
            self._on_change(POD_POPPED, -1)
        if not self._pods:
            self._order.clear()
            self._trim(self._base + len(self._log))
        elif found is not None:
            self._trim(self._oldest_position())
        return found[0] if found is not None else None

    def _oldest_position(self) -> int:
        """The pop position of the oldest pod in flight (at least one is)."""
        order, pods = self._order, self._pods
        while True:
            position, uid = order[0]
            live = pods.get(uid)
            if live is not None and live[1] == position:
                return position
            order.popleft()

    def _trim(self, keep_from: int) -> None:
        """Forget the events before absolute position `keep_from`."""
        log = self._log
        first = self._base + self._head  # the oldest event still counted
        if keep_from <= first:
            return
        start, stop = self._head, keep_from - self._base
        if stop - start == 1:
            forgotten = log[start]
            assert forgotten is not None
            self._on_change(forgotten.label, -1)
        else:
            labels: dict[str, int] = {}  # a plain dict: Counter's constructor costs more here
            for event in log[start:stop]:
                if event is not None:
                    labels[event.label] = labels.get(event.label, 0) + 1
            for label, n in labels.items():
                self._on_change(label, -n)
        for index in range(start, stop):
            log[index] = None  # release the objects the events hold
        self._head = stop
        if stop == len(log):
            log.clear()
            self._base += stop
            self._head = 0
        elif stop >= _MIN_COMPACT and 2 * stop >= len(log):
            del log[:stop]
            self._base += stop
            self._head = 0

    def log_length(self) -> int:
        """Events kept for the pods in flight (tests and the micro-benchmark)."""
        return len(self._log) - self._head

    def pods(self) -> list[QueuedPodInfo]:
        return [pinfo for pinfo, _ in self._pods.values()]
