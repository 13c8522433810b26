"""Test plugins that make every config generation visible in what the scheduler does.

`Generation` (PreFilter, Reserve, Permit, PreBind) carries its config generation in its args
and writes to a shared Journal which generation started each attempt, which one reserved it,
which one bound it, and whether the framework was the one in force when the cycle began.
`NewestFirst` is a second QueueSort so that a reload can change the queue's order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.objects import PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.framework.interface import CycleState, Handle, PreFilterResult
from scheduler.framework.registry import PluginEntry, Registry
from scheduler.framework.status import Status
from scheduler.plugins.registry import in_tree_registry
from scheduler.queue.types import QueuedPodInfo

STATE_KEY = "test/generation"
# "wait": allowed after ALLOW_AFTER; "expire": times out once; "hold": waits 30 s
PERMIT_LABEL = "permit"
ALLOW_AFTER = 0.2
EXPIRE_TIMEOUT = 0.5


@dataclass
class Attempt:
    uid: str
    name: str
    generation: int
    in_force: int
    reserved_by: int = -1
    bound_by: int = -1
    in_force_at_bind: int = -1


@dataclass
class Journal:
    """Everything the Generation plugins saw; `in_force(schedulerName)` is wired by the test."""

    in_force: Callable[[str], int] = lambda _name: -1
    attempts: list[Attempt] = field(default_factory=list)
    expired: dict[str, float] = field(default_factory=dict)  # pod name -> seconds waited
    _permit_started: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class GenerationArgs:
    generation: int = 0


def decode_generation_args(raw: Mapping[str, Any] | None) -> GenerationArgs:
    return GenerationArgs(int((raw or {}).get("generation", 0)))


def generation_registry(journal: Journal) -> Registry:
    """In-tree plugins plus Generation and NewestFirst bound to `journal`."""

    class Generation:
        name = "Generation"

        def __init__(self, args: GenerationArgs | None, handle: Handle) -> None:
            self.generation = (args or GenerationArgs()).generation
            self._handle = handle

        def pre_filter(
            self, state: CycleState, pod: PodView, nodes: Sequence[NodeInfo]
        ) -> tuple[PreFilterResult | None, Status]:
            attempt = Attempt(
                pod.uid, pod.name, self.generation, journal.in_force(pod.scheduler_name)
            )
            journal.attempts.append(attempt)
            state.write(STATE_KEY, attempt)
            return None, Status.OK

        def pre_filter_extensions(self) -> None:
            return None

        def reserve(self, state: CycleState, pod: PodView, node_name: str) -> Status:
            attempt: Attempt = state.read(STATE_KEY)
            attempt.reserved_by = self.generation
            return Status.OK

        def unreserve(self, state: CycleState, pod: PodView, node_name: str) -> None:
            started = journal._permit_started.pop(pod.uid, None)
            if started is not None:
                journal.expired[pod.name] = time.monotonic() - started

        def permit(self, state: CycleState, pod: PodView, node_name: str) -> tuple[Status, float]:
            mode = pod.labels.get(PERMIT_LABEL, "")
            if mode == "wait":
                loop = asyncio.get_running_loop()
                loop.call_later(ALLOW_AFTER, self._allow, pod.uid)
                return Status.wait("held briefly"), 30.0
            if mode == "hold":
                return Status.wait("held until allowed or rejected"), 30.0
            if mode == "expire" and pod.name not in journal.expired:
                journal._permit_started[pod.uid] = time.monotonic()
                return Status.wait("held until the timeout"), EXPIRE_TIMEOUT
            return Status.OK, 0.0

        def _allow(self, uid: str) -> None:
            waiting = self._handle.get_waiting_pod(uid)
            if waiting is not None:
                waiting.allow(self.name)

        async def pre_bind(self, state: CycleState, pod: PodView, node_name: str) -> Status:
            attempt: Attempt = state.read(STATE_KEY)
            attempt.bound_by = self.generation
            attempt.in_force_at_bind = journal.in_force(pod.scheduler_name)
            return Status.OK

    class NewestFirst:
        name = "NewestFirst"

        def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
            pass

        def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
            return a.timestamp > b.timestamp

    registry = in_tree_registry()
    registry.register(PluginEntry("Generation", Generation, decode_generation_args))
    registry.register(PluginEntry("NewestFirst", NewestFirst))
    return registry
