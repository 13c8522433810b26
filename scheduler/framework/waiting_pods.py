"""Pods parked at Permit until every waiting plugin allows them (upstream's waiting_pods_map.go).

Each plugin that answered Wait gets its own timer; the first timer to fire rejects the pod with
upstream's "rejected due to timeout after waiting 10s at plugin X". Allow from every pending
plugin lets the pod through; one Reject from anyone stops it. The first outcome wins.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from scheduler.framework.status import Status

if TYPE_CHECKING:
    from scheduler.api.objects import PodView


def format_go_duration(seconds: float) -> str:
    """A duration as Go's time.Duration.String() prints it ("10s", "1m30s", "500ms", "0s")."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return sign + _fraction(nanos, size) + unit
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _fraction(rest, 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def _fraction(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}." + f"{frac:0{digits}d}".rstrip("0")


class WaitingPod:
    """One pod waiting on Permit. Create it inside a running event loop."""

    def __init__(self, pod: PodView, plugin_timeouts: Mapping[str, float]) -> None:
        loop = asyncio.get_running_loop()
        self._pod = pod
        self._outcome: asyncio.Future[Status] = loop.create_future()
        self._timers: dict[str, asyncio.TimerHandle] = {
            plugin: loop.call_later(timeout, self._time_out, plugin, timeout)
            for plugin, timeout in plugin_timeouts.items()
        }

    @property
    def pod(self) -> PodView:
        return self._pod

    def pending_plugins(self) -> list[str]:
        return list(self._timers)

    def allow(self, plugin: str) -> None:
        timer = self._timers.pop(plugin, None)
        if timer is not None:
            timer.cancel()
        if not self._timers:
            self._settle(Status.OK)

    def reject(self, plugin: str, message: str) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._settle(Status.unschedulable(message, plugin=plugin))

    async def wait(self) -> Status:
        """The outcome: Success once all allowed, else the rejection (Unschedulable)."""
        return await asyncio.shield(self._outcome)

    def _time_out(self, plugin: str, timeout: float) -> None:
        message = (
            f"rejected due to timeout after waiting {format_go_duration(timeout)} "
            f"at plugin {plugin}"
        )
        self.reject(plugin, message)

    def _settle(self, status: Status) -> None:
        if not self._outcome.done():
            self._outcome.set_result(status)


class WaitingPods:
    """Waiting pods by pod uid."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, waiting_pod: WaitingPod) -> None:
        self._pods[waiting_pod.pod.uid] = waiting_pod

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def __iter__(self) -> Iterator[WaitingPod]:
        # A copy: callbacks may allow / reject (and so remove) pods while we iterate.
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)
