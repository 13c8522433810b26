"""Filter workers killed (kill -9) or stopped in the middle of scheduling: every cycle
completes with the decision it would have had in process, each pod is placed once, the worker
is replaced, and the replacement (bootstrapped from the cache as it is then) serves again."""

from __future__ import annotations

import os
import signal
import time

from scheduler.api.objects import PodView
from scheduler.testing import MakePod, make_node
from tests.scheduler_parallel.conftest import Cluster, wait_ready

NODES = [
    make_node(
        f"n{i}",
        {"cpu": "4", "memory": "8Gi", "pods": "20"},
        labels={"kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": f"z{i % 3}"},
    )
    for i in range(150)
]


def _pods(prefix: str, count: int) -> list[PodView]:
    """SchedulingPodAntiAffinity's pods: one per node at most, by required anti-affinity."""
    return [
        MakePod()
        .name(f"{prefix}{i}")
        .uid(f"{prefix}{i}")
        .namespace("default")
        .labels({"app": "anti"})
        .container({"cpu": "100m", "memory": "100Mi"})
        .pod_anti_affinity_in("app", "kubernetes.io/hostname", ["anti"])
        .obj()
        for i in range(count)
    ]


def test_lost_workers_change_no_decision(cluster: Cluster) -> None:
    pool = cluster.pool
    wait_ready(pool, 2)
    bound = [pod.with_node(f"n{i}") for i, pod in enumerate(_pods("bound-", 20))]
    incoming = _pods("new-", 24)
    cluster.reset(NODES, bound)
    in_process = cluster.schedule(incoming, None)

    cluster.reset(NODES, bound)
    stopped, killed = pool.worker_pids
    restarts, split = pool.restarts, pool.fanned_out

    def lose_workers(index: int) -> None:
        if index == 6:
            os.kill(stopped, signal.SIGSTOP)  # hangs: given up on at its deadline
        if index == 12:
            os.kill(killed, signal.SIGKILL)

    began = time.monotonic()
    in_workers = cluster.schedule(incoming, pool, before=lose_workers)
    assert in_workers == in_process
    assert time.monotonic() - began < 60  # a stopped worker costs its deadline, once
    assert pool.restarts == restarts + 2
    assert pool.fanned_out > split
    assert stopped not in pool.worker_pids and killed not in pool.worker_pids  # reaped
    placed = [pod for pod in cluster.pods if pod.uid.startswith("new-")]
    assert len({pod.uid for pod in placed}) == len(placed) == len(in_process)
    assert pool.cache.pod_count() == len(bound) + len(placed)

    # The replacement boots from the cache as it is now and serves the next cycles.
    wait_ready(pool, 2)
    assert not {stopped, killed} & set(pool.worker_pids)
    split = pool.fanned_out
    more = _pods("more-", 4)
    cluster.reset(NODES, bound)
    expected = cluster.schedule([*incoming, *more], None)
    cluster.reset(NODES, bound)
    assert cluster.schedule([*incoming, *more], pool) == expected
    assert pool.fanned_out > split
    assert pool.restarts == restarts + 2
