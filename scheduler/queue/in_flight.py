"""Pods being scheduled right now and the cluster events that arrived meanwhile.

Upstream keeps one list of pod markers and events (active_queue.go inFlightPods/inFlightEvents):
when a pod comes back unschedulable, only the events recorded after it was popped matter, and
events older than the oldest in-flight pod can be forgotten. Here the list is a Python list with
absolute positions so that trimming its front is cheap.

``on_change(label, delta)`` follows upstream's scheduler_inflight_events gauge: +1 "PodPopped"
per pod started, +1 per event recorded under the event's label, and the matching -1s when a pod
finishes and when events are trimmed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.framework.events import ClusterEvent
from scheduler.queue.event_labels import POD_POPPED, event_label
from scheduler.queue.types import QueuedPodInfo


def _ignore(label: str, delta: int) -> None:
    pass


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    event: ClusterEvent
    old: Any
    new: Any
    label: str = ""


class InFlight:
    __slots__ = ("_base", "_log", "_on_change", "_pods")

    def __init__(self, on_change: Callable[[str, int], None] = _ignore) -> None:
        self._on_change = on_change
        # uid → (pod info, absolute position in the log when it was popped)
        self._pods: dict[str, tuple[QueuedPodInfo, int]] = {}
        self._log: list[RecordedEvent] = []
        self._base = 0  # absolute position of _log[0]

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
        self._pods[pinfo.uid] = (pinfo, self._base + len(self._log))

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
        return self._log[found[1] - self._base :]

    def finish(self, uid: str) -> QueuedPodInfo | None:
        """The pod left the scheduling cycle; drop events no remaining in-flight pod needs."""
        found = self._pods.pop(uid, None)
        if found is not None:
            self._on_change(POD_POPPED, -1)
        if not self._pods:
            self._trim(len(self._log))
        elif found is not None:
            # Pods enter in pop order and dicts keep insertion order: the first is the oldest.
            oldest = next(iter(self._pods.values()))[1]
            if oldest > self._base:
                self._trim(oldest - self._base)
        return found[0] if found is not None else None

    def _trim(self, count: int) -> None:
        """Forget the `count` oldest events."""
        if not count:
            return
        if count == 1:
            self._on_change(self._log[0].label, -1)
        else:
            for label, n in Counter(e.label for e in self._log[:count]).items():
                self._on_change(label, -n)
        del self._log[:count]
        self._base += count

    def pods(self) -> list[QueuedPodInfo]:
        return [pinfo for pinfo, _ in self._pods.values()]
