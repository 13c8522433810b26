"""Pods being scheduled right now and the cluster events that arrived meanwhile.

Upstream keeps one list of pod markers and events (active_queue.go inFlightPods/inFlightEvents):
when a pod comes back unschedulable, only the events recorded after it was popped matter, and
events older than the oldest in-flight pod can be forgotten. Here the list is a Python list with
absolute positions so that trimming its front is cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scheduler.framework.events import ClusterEvent
from scheduler.queue.types import QueuedPodInfo


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    event: ClusterEvent
    old: Any
    new: Any


class InFlight:
    __slots__ = ("_base", "_log", "_pods")

    def __init__(self) -> None:
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
        self._pods.pop(pinfo.uid, None)  # keep the dict in pop order
        self._pods[pinfo.uid] = (pinfo, self._base + len(self._log))

    def record(self, event: ClusterEvent, old: Any, new: Any) -> bool:
        """Remember an event for the pods in flight; False (nothing kept) if none is."""
        if not self._pods:
            return False
        self._log.append(RecordedEvent(event, old, new))
        return True

    def events_since_popped(self, uid: str) -> list[RecordedEvent]:
        found = self._pods.get(uid)
        if found is None:
            return []
        return self._log[found[1] - self._base :]

    def finish(self, uid: str) -> QueuedPodInfo | None:
        """The pod left the scheduling cycle; drop events no remaining in-flight pod needs."""
        found = self._pods.pop(uid, None)
        if not self._pods:
            self._base += len(self._log)
            self._log.clear()
        elif found is not None:
            # Pods enter in pop order and dicts keep insertion order: the first is the oldest.
            oldest = next(iter(self._pods.values()))[1]
            if oldest > self._base:
                del self._log[: oldest - self._base]
                self._base = oldest
        return found[0] if found is not None else None

    def pods(self) -> list[QueuedPodInfo]:
        return [pinfo for pinfo, _ in self._pods.values()]
