"""The task group of a long-lived kubesim object that start() opens and stop() closes.

DESIGN asks that every background task belong to a task group owned by the object that started
it. kubesim's controllers, simulated kubelets, write-ahead log and API handler start work in
start() (or on an event) and end it in stop(), two calls that may come from different tasks (a
test fixture's setup and teardown, aiohttp's startup and cleanup), while an anyio task group must
be entered and left by one task. So each owner keeps one `BackgroundTasks`: a host task, held and
awaited by its owner, that keeps an anyio task group open until the owner closes it. Every task
the owner starts runs in that group; closing cancels (or waits for) them all and returns only
when none is left, raising what any of them raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
from anyio.abc import TaskGroup

TaskFunction = Callable[..., Coroutine[Any, Any, Any]]


class BackgroundTasks:
    """Owns the background tasks of one object; see the module docstring."""

    def __init__(self, owner: str) -> None:
        self._owner = owner
        self._group: TaskGroup | None = None
        self._host: asyncio.Task[None] | None = None
        self._pending: list[tuple[TaskFunction, tuple[Any, ...], str | None]] = []
        self._closing = asyncio.Event()
        self._cancelled = False

    @property
    def running(self) -> bool:
        """True from the first start_soon() until close(), unless a task ended the group by
        raising."""
        return self._host is not None and not self._host.done()

    def start_soon(self, func: TaskFunction, *args: Any, name: str | None = None) -> None:
        """Run `func(*args)` in the group, opening it if needed (callable from sync code)."""
        if self._group is not None:
            self._group.start_soon(func, *args, name=name)
            return
        self._pending.append((func, args, name))
        if self._host is None:
            self._closing = asyncio.Event()
            self._cancelled = False
            self._host = asyncio.get_running_loop().create_task(
                self._hold(), name=f"{self._owner} tasks"
            )

    async def _hold(self) -> None:
        try:
            async with anyio.create_task_group() as group:
                self._group = group
                if self._cancelled:  # closed before this task first ran: start nothing
                    self._pending.clear()
                    return
                for func, args, name in self._pending:
                    group.start_soon(func, *args, name=name)
                self._pending.clear()
                await self._closing.wait()
        finally:
            self._group = None

    async def close(self, *, cancel: bool = True) -> None:
        """Cancel every task (or, with cancel=False, let each finish) and wait until none is
        left; re-raises, as an ExceptionGroup, what a task raised."""
        host = self._host
        if host is None:
            return
        if cancel:
            self._cancelled = True
            if self._group is not None:
                self._group.cancel_scope.cancel()
        self._closing.set()
        try:
            await host
        finally:
            self._host = None
