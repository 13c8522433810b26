"""Filtering in worker processes decides exactly as filtering in process.

The same random clusters and pods, every default plugin (the default profile), scheduled one
after another with each placed pod assumed: once with Filter in process (parallelism 1), once
with every row pass split across two filter workers and this process (parallelism 3). The
nodes chosen, the nodes evaluated (the stop point at numFeasibleNodesToFind) and each failure
message must be the same.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.api.objects import NodeView, PodView
from scheduler.testing import MakePod, make_node
from tests.scheduler_parallel.conftest import Cluster

ZONES = ("z1", "z2", "z3")
APPS = ("a", "b", "c")
TOPOLOGY_KEYS = ("kubernetes.io/hostname", "topology.kubernetes.io/zone")
TAINT = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}


@st.composite
def nodes(draw: st.DrawFn) -> list[NodeView]:
    count = draw(st.integers(1, 160))  # past 100: numFeasibleNodesToFind's cut-off applies
    out = []
    for i in range(count):
        labels = {
            "kubernetes.io/hostname": f"n{i}",
            "topology.kubernetes.io/zone": ZONES[draw(st.integers(0, 2))],
            "disk": draw(st.sampled_from(["ssd", "hdd"])),
        }
        cpu = draw(st.sampled_from(["1", "2", "4"]))
        out.append(
            make_node(
                f"n{i}",
                {"cpu": cpu, "memory": "8Gi", "pods": str(draw(st.integers(2, 20)))},
                labels=labels,
                taints=[TAINT] if draw(st.integers(0, 9)) == 0 else [],
                unschedulable=draw(st.integers(0, 19)) == 0,
            )
        )
    return out


def _term(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
        "topologyKey": draw(st.sampled_from(TOPOLOGY_KEYS)),
    }


@st.composite
def pods(draw: st.DrawFn, prefix: str) -> PodView:
    name = f"{prefix}{draw(st.integers(0, 10**9))}"
    pod = (
        MakePod()
        .name(name)
        .uid(name)
        .namespace("default")
        .labels({"app": draw(st.sampled_from(APPS))})
    )
    port = draw(st.sampled_from([None, 8080, 9090]))
    ports = [{"containerPort": port, "hostPort": port}] if port else []
    pod.container({"cpu": draw(st.sampled_from(["100m", "500m", "1500m"])), "memory": "1Gi"},
                  ports=ports)  # fmt: skip
    if draw(st.booleans()):
        pod.node_selector({"disk": draw(st.sampled_from(["ssd", "hdd"]))})
    if draw(st.integers(0, 3)) == 0:
        pod.toleration({"key": "dedicated", "operator": "Exists"})
    affinity: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if draw(st.integers(0, 2)) == 0:
            affinity[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(draw)]}
        elif draw(st.integers(0, 2)) == 0:
            weighted = {"weight": draw(st.integers(1, 100)), "podAffinityTerm": _term(draw)}
            affinity[kind] = {"preferredDuringSchedulingIgnoredDuringExecution": [weighted]}
    if affinity:
        pod.affinity(affinity)
    if draw(st.integers(0, 2)) == 0:
        pod.spread_constraint(
            {
                "maxSkew": draw(st.integers(1, 3)),
                "topologyKey": draw(st.sampled_from(TOPOLOGY_KEYS)),
                "whenUnsatisfiable": draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"])),
                "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(APPS))}},
            }
        )
    return pod.obj()


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[NodeView], list[PodView], list[PodView], int | None]:
    cluster_nodes = draw(nodes())
    bound = [
        p.with_node(cluster_nodes[draw(st.integers(0, len(cluster_nodes) - 1))].name)
        for p in draw(st.lists(pods("bound-"), max_size=30, unique_by=lambda p: p.uid))
    ]
    incoming = draw(st.lists(pods("new-"), min_size=1, max_size=8, unique_by=lambda p: p.uid))
    percentage = draw(st.sampled_from([None, 5, 50, 100]))
    return cluster_nodes, bound, incoming, percentage


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(clusters())
def test_filter_workers_decide_as_in_process(
    cluster: Cluster, case: tuple[list[NodeView], list[PodView], list[PodView], int | None]
) -> None:
    cluster_nodes, bound, incoming, percentage = case
    cluster.reset(cluster_nodes, bound)
    in_process = cluster.schedule(incoming, None, percentage)
    cluster.reset(cluster_nodes, bound)
    restarts = cluster.pool.restarts
    in_workers = cluster.schedule(incoming, cluster.pool, percentage)
    assert in_workers == in_process
    assert cluster.pool.restarts == restarts  # every split was answered by the workers
