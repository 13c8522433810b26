"""A filter worker process (`aiosched-filter-N` in ps): the Filter row pass over shards of nodes.

Started by FilterPool (pool.py) as ``python -m scheduler.parallel.worker NAME FD PARENT_PID``
with one end of a socketpair as FD. It keeps a replica of the scheduler's cache (replica.py:
a bootstrap, then every change the scheduler's cache applies, in order), builds the same
profiles' frameworks from the configuration it is sent, and answers each shard of a cycle with
what `Framework.run_filter_plugins_rows` answers over those rows: the positions that pass, and
each plugin's rejected positions with their statuses. Before the first shard of a cycle it
brings its snapshot up to date and checks that it holds as many nodes, pods and assumed pods as
the scheduler's cache: a replica out of step says so instead of answering.

It ends when the socket closes or its parent dies (PR_SET_PDEATHSIG, as the API I/O workers).
"""

from __future__ import annotations

import logging
import os
import random
import socket
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
import orjson

from apimachinery.child_process import die_with_parent, name_process
from profiles.config import ResolvedConfig
from scheduler.api.pod import pod_view_from_dict
from scheduler.api.request_gates import RequestGates, set_request_gates
from scheduler.cache.cache import Cache
from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.profile_set import ProfileSet, full_registry
from scheduler.framework.interface import CycleState
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.framework.runtime.core import NoopObserver
from scheduler.parallel import replica, wire

log = logging.getLogger(__name__)


class _Evaluations(NoopObserver):
    """Counts scheduler_plugin_evaluation_total's increments, which the scheduler adds."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def on_plugin_evaluated(self, point: str, plugin: str, count: int) -> None:
        if point == "Filter":
            self.counts[plugin] = self.counts.get(plugin, 0) + count


class _NoApi:
    """The workers never call the API server: Filter plugins do not write."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"a filter worker has no API client (asked for {name})")


class Replica:
    """The worker's state: the cache replica, its snapshot, the frameworks, the current cycle."""

    def __init__(self) -> None:
        self.cache = Cache()
        self.snapshot = Snapshot()
        self.evaluations = _Evaluations()
        self.frameworks: dict[str, Framework] = {}
        self.profiles_version: object = None
        self.cycle: object = None
        self.pod: Any = None
        self.state = CycleState()

    def boot(self, changes: list[tuple[int, bytes | str]], order: list[str]) -> tuple[Any, ...]:
        self.cache = Cache()
        self.snapshot = Snapshot()
        replica.apply(self.cache, changes)
        got = self.cache.update_snapshot(self.snapshot)
        names = [info.node_name for info in got.node_info_list]
        if names != order:
            return ("failed", "the replica's node order differs from the scheduler's")
        return ("ready", os.getpid())

    def use_profiles(
        self, version: object, config: ResolvedConfig, gates: Mapping[str, bool]
    ) -> None:
        def deps_for(profile: str) -> HandleDeps:
            return HandleDeps(
                snapshot=lambda: self.snapshot,
                client=_NoApi(),  # never called by Filter plugins
                parallelism=1,
                observer=self.evaluations,
                rng=random.Random(0),
                opportunistic_batching=False,
                feature_gates=gates,
            )

        built = ProfileSet.build(config, full_registry(), deps_for)
        self.frameworks = {name: built[name].framework for name in built}
        self.profiles_version = version

    def begin_cycle(self, cycle: object, payload: tuple[Any, ...]) -> str | None:
        """The cycle's pod and PreFilter state; an error text when the replica is out of step."""
        pod_json, data, skip, counts = payload
        self.cache.update_snapshot(self.snapshot)
        mine = (self.cache.node_count(), self.cache.pod_count(), self.cache.assumed_pod_count())
        if mine != tuple(counts):
            return f"replica out of step: (nodes, pods, assumed) {mine} against {tuple(counts)}"
        self.cycle = cycle
        self.pod = pod_view_from_dict(orjson.loads(pod_json))
        table = self.snapshot.node_table()
        cache = self.cache

        def resolve(name: tuple[Any, ...]) -> Any:
            kind = name[0]
            if kind == "table":
                return table
            if kind == "pod":
                return self.pod
            if kind == "node":
                return table.infos[name[1]]
            if kind == "cached":
                return cache.get_pod(name[1])
            raise LookupError(f"unknown shared object {name!r}")

        state = CycleState()
        for key, value in wire.loads(data, resolve).items():
            state.write(key, value)
        state.skip_filter_plugins = set(skip)
        self.state = state
        return None

    def filter(self, profile: str, rows: np.ndarray) -> tuple[Any, ...]:
        fwk = self.frameworks[profile]
        table = self.snapshot.node_table()
        self.evaluations.counts = {}
        alive, rejections = fwk.run_filter_plugins_rows(self.state, self.pod, table, rows)
        rejected = []
        for r in rejections:
            reject = r.verdict.reject
            statuses = [reject(row) for row in rows[r.positions].tolist()]
            rejected.append((r.plugin, r.positions, statuses))
        return ("filtered", alive, rejected, self.evaluations.counts)


def serve(sock: socket.socket) -> None:
    state = Replica()
    while True:
        try:
            message = wire.receive(sock)
        except wire.WorkerLost:
            return  # the scheduler is gone
        kind = message[0]
        if kind == "changes":
            replica.apply(state.cache, message[1])
        elif kind == "boot":
            wire.send(sock, state.boot(message[1], message[2]))
        elif kind == "profiles":
            state.use_profiles(message[1], message[2], message[3])
        elif kind == "filter":
            _, version, profile, cycle, payload, rows = message
            try:
                if version != state.profiles_version:
                    raise LookupError("profiles not received")
                if payload is not None:
                    problem = state.begin_cycle(cycle, payload)
                    if problem is not None:
                        wire.send(sock, ("error", problem))
                        continue
                elif cycle != state.cycle:
                    raise LookupError("a shard of a cycle that was not begun")
                answer = state.filter(profile, rows)
            except Exception as exc:  # reported: the scheduler falls back
                answer = ("error", f"{type(exc).__name__}: {exc}")
            wire.send(sock, answer)
        else:
            wire.send(sock, ("error", f"unknown message {kind!r}"))


def main(argv: list[str]) -> int:
    name, fd, parent = argv[0], int(argv[1]), int(argv[2])
    if len(argv) > 3:
        # the scheduler's PodLevelResources / InPlacePodLevelResourcesVerticalScaling: the
        # replica counts pods as its cache does (set before the bootstrap's first pod view)
        set_request_gates(RequestGates.from_argument(argv[3]))
    name_process(name)
    die_with_parent(parent)
    logging.basicConfig(level=logging.WARNING, format=f"{name}: %(message)s")
    sock = socket.socket(fileno=fd)
    sock.setblocking(True)
    try:
        serve(sock)
    finally:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
