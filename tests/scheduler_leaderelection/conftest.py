"""Fakes for leader election: virtual time and an in-memory Lease API with resourceVersions.

Tests receive them through fixtures (``fake_time``, ``lease_store``) and build per-elector API
clients with ``lease_store.client()``.
"""

from __future__ import annotations

import asyncio
import copy
import heapq
import itertools
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from scheduler.client.rest import ApiError

WALL_EPOCH = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
LEASES = "/apis/coordination.k8s.io/v1/namespaces/"


class FakeTime:
    """A monotonic clock and sleep that only move when the test advances them.

    ``advance`` wakes sleepers one deadline at a time (all sleepers due at that instant together,
    so they race) and lets the event loop settle after each, so a test can check an invariant at
    every instant something happens.
    """

    def __init__(self) -> None:
        self.now = 0.0
        self._timers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> datetime:
        return WALL_EPOCH + timedelta(seconds=self.now)

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._timers, (self.now + max(0.0, seconds), next(self._seq), future))
        await future

    @staticmethod
    async def settle() -> None:
        for _ in range(60):
            await asyncio.sleep(0)

    async def advance(self, seconds: float, on_step: Callable[[], None] | None = None) -> None:
        target = self.now + seconds
        await self._step(on_step)
        while self._timers and self._timers[0][0] <= target:
            when = self._timers[0][0]
            self.now = max(self.now, when)
            while self._timers and self._timers[0][0] == when:  # simultaneous sleepers race
                future = heapq.heappop(self._timers)[2]
                if not future.done():
                    future.set_result(None)
            await self._step(on_step)
        self.now = target
        await self._step(on_step)

    async def _step(self, on_step: Callable[[], None] | None) -> None:
        await self.settle()
        if on_step is not None:
            on_step()


class LeaseStore:
    """Leases keyed by (namespace, name), with the API server's create/update conflict rules."""

    def __init__(self) -> None:
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self._versions = itertools.count(1)
        self.conflicts = 0

    def put(self, namespace: str, name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        """Write a Lease directly, as another process would (bumps resourceVersion)."""
        lease = self.leases.get((namespace, name)) or {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace},
        }
        lease = copy.deepcopy(lease)
        lease["spec"] = dict(spec)
        lease["metadata"]["resourceVersion"] = str(next(self._versions))
        self.leases[(namespace, name)] = lease
        return lease

    def spec(self, namespace: str = "kube-system", name: str = "kube-scheduler") -> dict[str, Any]:
        return dict(self.leases[(namespace, name)]["spec"])

    def client(self) -> FakeApi:
        return FakeApi(self)

    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        assert path.startswith(LEASES), path
        parts = path[len(LEASES) :].split("/")
        namespace, resource, name = parts[0], parts[1], parts[2] if len(parts) > 2 else ""
        assert resource == "leases", path
        key = (namespace, name)
        if method == "GET":
            if key not in self.leases:
                return 404, _status(404, "NotFound", f'leases "{name}" not found')
            return 200, copy.deepcopy(self.leases[key])
        if method == "POST":
            name = body["metadata"]["name"]
            if (namespace, name) in self.leases:
                self.conflicts += 1
                return 409, _status(409, "AlreadyExists", f'leases "{name}" already exists')
            return 201, copy.deepcopy(self.put(namespace, name, body["spec"]))
        if method == "PUT":
            if key not in self.leases:
                return 404, _status(404, "NotFound", f'leases "{name}" not found')
            sent = body["metadata"].get("resourceVersion")
            if sent and sent != self.leases[key]["metadata"]["resourceVersion"]:
                self.conflicts += 1
                message = (
                    f'Operation cannot be fulfilled on leases.coordination.k8s.io "{name}": '
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again"
                )
                return 409, _status(409, "Conflict", message)
            return 200, copy.deepcopy(self.put(namespace, name, body["spec"]))
        return 405, _status(405, "MethodNotAllowed", method)


class FakeApi:
    """One process's view of the API: can be cut off (``down``), fail (``status``) or hang."""

    def __init__(self, store: LeaseStore) -> None:
        self.store = store
        self.down = False
        self.status: int | None = None
        self.hang = False
        self.lose_next_answer = False  # apply the next request, then never answer it
        self.calls: list[tuple[str, str]] = []
        self.answers: list[int] = []

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        self.calls.append((method, path))
        await asyncio.sleep(0)  # a real request yields: lets racing electors interleave
        if self.hang:
            await asyncio.Event().wait()
        if self.down:
            raise ApiError(f"{method} {path}: connection refused")
        if self.status is not None:
            self.answers.append(self.status)
            return self.status, _status(self.status, "InternalError", "etcd is sad")
        status, answer = self.store.handle(method, path, copy.deepcopy(body))
        self.answers.append(status)
        if self.lose_next_answer:
            self.lose_next_answer = False
            await asyncio.Event().wait()
        return status, answer


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime()


@pytest.fixture
def lease_store() -> LeaseStore:
    return LeaseStore()
