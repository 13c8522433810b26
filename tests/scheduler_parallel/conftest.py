"""A real FilterPool (worker processes) over the default profile, shared by the area's tests:
starting workers costs about a second of CPU each, so they start once per module."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import pytest

from profiles import load_config
from scheduler.api.objects import NodeView, PodView
from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.algorithm import FitError, StartIndex, schedule_pod
from scheduler.cycle.fanout import FilterFanout
from scheduler.cycle.profile_set import ProfileSet, full_registry, registry_for_config
from scheduler.framework.interface import CycleState
from scheduler.framework.runtime import HandleDeps
from scheduler.parallel.pool import FilterPool

READY_WITHIN = 180.0  # seconds: workers import every plugin; the shared machine is slow


@dataclass
class Cluster:
    """The pool's cache (a ReplicatedCache) with a snapshot and the default profile."""

    pool: FilterPool
    snapshot: Snapshot
    profiles: ProfileSet
    nodes: list[NodeView] = field(default_factory=list)
    pods: list[PodView] = field(default_factory=list)

    def reset(self, nodes: Sequence[NodeView], pods: Sequence[PodView]) -> None:
        """Empty the cache (the workers replay the removals), then these nodes and pods."""
        cache = self.pool.cache
        for pod in self.pods:
            cache.remove_pod(pod)
        for node in self.nodes:
            cache.remove_node(node)
        for node in nodes:
            cache.add_node(node)
        for pod in pods:
            cache.add_pod(pod)
        self.nodes, self.pods = list(nodes), list(pods)

    def schedule(
        self,
        pods: Sequence[PodView],
        fanout: FilterFanout | None,
        percentage: int | None = None,
        seed: int = 1,
        before: Callable[[int], None] = lambda index: None,
    ) -> list[str]:
        """Each pod's outcome in turn (its node, or the FitError's message), assuming the placed
        ones, as the scheduling loop does."""
        fwk = self.profiles["default-scheduler"].framework
        start, rng = StartIndex(), random.Random(seed)
        outcomes: list[str] = []
        for index, pod in enumerate(pods):
            before(index)
            self.pool.cache.update_snapshot(self.snapshot)
            run = schedule_pod(
                fwk, CycleState(), pod, self.snapshot, percentage_of_nodes_to_score=percentage,
                next_start_index=start, rng=rng, cycle=index + 1, fanout=fanout,
            )  # fmt: skip
            try:
                run.send(None)
            except StopIteration as done:
                host = done.value.suggested_host
                outcomes.append(f"{host} (evaluated {done.value.evaluated_nodes})")
                placed = pod.with_node(host)
                self.pool.cache.assume_pod(placed)
                self.pods.append(placed)
            except FitError as error:
                outcomes.append(f"unschedulable: {error}")
        return outcomes


def wait_ready(pool: FilterPool, workers: int) -> None:
    deadline = time.monotonic() + READY_WITHIN
    while len(pool.ready_workers()) < workers:
        assert time.monotonic() < deadline, "filter workers not ready in time"
        time.sleep(0.2)


def default_profiles(snapshot: Snapshot) -> ProfileSet:
    """The default configuration's profile, reading `snapshot`."""
    registry = full_registry()
    config = load_config(None, registry_for_config(registry))
    return ProfileSet.build(
        config,
        registry,
        lambda name: HandleDeps(snapshot=lambda: snapshot, client=None),  # type: ignore[arg-type]
    )


@pytest.fixture(scope="package")
def cluster() -> Iterator[Cluster]:
    snapshot = Snapshot()
    profiles = default_profiles(snapshot)
    # Three shards: this process's and two workers'; a stopped worker is given up on after 2 s.
    pool = FilterPool(2, min_seconds=0.0, answer_timeout=2.0, min_rows=0)
    pool.attach(lambda: profiles, snapshot)
    try:
        wait_ready(pool, 2)
        yield Cluster(pool, snapshot, profiles)
    finally:
        pool.close()
