"""Filter workers count pods as the scheduler does under PodLevelResources and
InPlacePodLevelResourcesVerticalScaling off: the gates travel on their command line, so their
replicas count a bound pod's containers, not its spec.resources (types.go CalculateResource),
and the decisions split across them are the in-process ones."""

from __future__ import annotations

from scheduler.api.request_gates import gates_set
from scheduler.cache.snapshot import Snapshot
from scheduler.parallel.pool import FilterPool
from scheduler.testing import MakePod, make_node
from tests.scheduler_parallel.conftest import Cluster, default_profiles, wait_ready


def test_workers_ignore_pod_level_requests_with_the_gates_off() -> None:
    with gates_set(pod_level_resources=False, pod_level_status=False):
        nodes = [make_node(f"n{i}", {"cpu": "2", "memory": "8Gi", "pods": "10"}) for i in range(40)]
        # each node holds a pod asking 1800m at the pod level, 100m by its container
        bound = [
            MakePod(f"b{i}", "default")
            .uid(f"b{i}")
            .container({"cpu": "100m"})
            .pod_resources({"cpu": "1800m"})
            .node(f"n{i}")
            .obj()
            for i in range(40)
        ]
        incoming = [
            MakePod(f"p{i}", "default").uid(f"p{i}").container({"cpu": "1"}).obj() for i in range(3)
        ]
        snapshot = Snapshot()
        profiles = default_profiles(snapshot)
        pool = FilterPool(1, min_seconds=0.0, answer_timeout=2.0, min_rows=0)
        pool.attach(lambda: profiles, snapshot)
        try:
            wait_ready(pool, 1)
            cluster = Cluster(pool, snapshot, profiles)
            cluster.reset(nodes, bound)
            in_process = cluster.schedule(incoming, None)
            cluster.reset(nodes, bound)
            in_workers = cluster.schedule(incoming, pool)
            assert pool.fanned_out > 0
            assert pool.restarts == 0
        finally:
            pool.close()
    assert in_workers == in_process
    assert not any(outcome.startswith("unschedulable") for outcome in in_process)
