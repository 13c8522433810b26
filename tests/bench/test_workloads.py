"""bench.workloads: upstream's SchedulingBasic parameters and templates."""

from __future__ import annotations

import pytest

from bench.workloads import (
    WORKLOADS,
    UnknownWorkload,
    node_manifest,
    pod_manifest,
    resolve,
)


# test/integration/scheduler_perf/misc/performance-config.yaml, SchedulingBasic
@pytest.mark.parametrize(
    ("name", "nodes", "init_pods", "measure_pods", "threshold"),
    [
        ("SchedulingBasic/5Nodes", 5, 5, 10, None),
        ("SchedulingBasic/500Nodes", 500, 500, 1000, None),
        ("SchedulingBasic/5000Nodes", 5000, 1000, 1000, None),
        ("SchedulingBasic/5000Nodes_10000Pods", 5000, 1000, 10000, 680),
        ("SchedulingBasic/5000Nodes_50000Pods", 5000, 5000, 50000, 810),
        ("SchedulingBasic/Smoke", 50, 20, 200, None),
    ],
)
def test_workload_parameters(
    name: str, nodes: int, init_pods: int, measure_pods: int, threshold: float | None
) -> None:
    w = WORKLOADS[name]
    assert (w.init_nodes, w.init_pods, w.measure_pods, w.threshold) == (
        nodes,
        init_pods,
        measure_pods,
        threshold,
    )


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["SchedulingBasic/500Nodes"], ["SchedulingBasic/500Nodes"]),
        (
            ["SchedulingBasic/Smoke", "SchedulingBasic/5Nodes"],
            ["SchedulingBasic/Smoke", "SchedulingBasic/5Nodes"],
        ),
        (["SchedulingBasic/"], list(WORKLOADS)),
    ],
)
def test_resolve_keeps_order_and_expands_prefixes(names: list[str], expected: list[str]) -> None:
    assert [w.name for w in resolve(names)] == expected


@pytest.mark.parametrize("name", ["SchedulingBasic/50Nodes", "Nope/", "SchedulingBasic"])
def test_resolve_names_the_unknown_workload(name: str) -> None:
    with pytest.raises(UnknownWorkload, match="SchedulingBasic/500Nodes"):
        resolve([name])


def test_node_is_upstreams_default_node() -> None:
    node = node_manifest("scheduler-perf-7")
    assert node["metadata"]["name"] == "scheduler-perf-7"
    assert node["status"]["capacity"] == {"pods": "110", "cpu": "4", "memory": "32Gi"}
    assert node["status"]["conditions"] == [{"status": "True", "type": "Ready"}]


def test_pod_is_upstreams_default_pod() -> None:
    pod = pod_manifest("pod-3", "namespace-2")
    assert pod["metadata"] == {"name": "pod-3", "namespace": "namespace-2"}
    (container,) = pod["spec"]["containers"]
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "500Mi"}
    assert container["resources"]["limits"] == {"cpu": "100m", "memory": "500Mi"}
    assert container["ports"] == [{"containerPort": 80}]
    assert "nodeName" not in pod["spec"] and "schedulerName" not in pod["spec"]
