"""The event loop every aiosched process runs on: uvloop where it is installed, else asyncio's.

`aiosched run`, `aiosched cluster` (kubesim) and `aiosched bench` start their loop here, so the
choice is made once for the scheduler and the API server alike, as upstream's kube-scheduler and
kube-apiserver both start through k8s.io/component-base/cli.Run. It lives in the bottom layer
because kubesim imports nothing of the scheduler and the scheduler nothing of kubesim.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_event_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion on a new event loop and return its result."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on every supported platform
        return asyncio.run(coro)
    result: T = uvloop.run(coro)
    return result
