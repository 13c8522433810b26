"""PrioritySort (QueueSort): higher priority first, then the earlier queue timestamp.

Upstream: pkg/scheduler/framework/plugins/queuesort/priority_sort.go.
"""

from __future__ import annotations

from typing import Any

from scheduler.framework.interface import Handle
from scheduler.queue.types import QueuedPodInfo


class PrioritySort:
    name = "PrioritySort"

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        pass

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        p1, p2 = a.pod.priority, b.pod.priority
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)

    def sort_key(self, pinfo: QueuedPodInfo) -> tuple[int, float]:
        """A key ordered as `less` orders (equal keys: neither is less): activeQ then compares
        keys in C instead of calling `less` a dozen times per pod (scheduler/queue/active.py)."""
        return -pinfo.pod.priority, pinfo.timestamp
