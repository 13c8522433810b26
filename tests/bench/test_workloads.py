"""bench.workloads: upstream's scheduler_perf parameters, thresholds and templates."""

from __future__ import annotations

from typing import Any

import pytest

from bench.workloads import (
    WORKLOADS,
    UnknownWorkload,
    Workload,
    node_manifest,
    pod_manifest,
    resolve,
)

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
BOTH_SCHED = ["sched-1", "sched-0"]


# test/integration/scheduler_perf/: misc/performance-config.yaml (SchedulingBasic),
# affinity/performance-config.yaml and topology_spreading/performance-config.yaml
@pytest.mark.parametrize(
    ("name", "nodes", "init_pods", "measure_pods", "threshold"),
    [
        ("SchedulingBasic/5Nodes", 5, 5, 10, None),
        ("SchedulingBasic/500Nodes", 500, 500, 1000, None),
        ("SchedulingBasic/5000Nodes", 5000, 1000, 1000, None),
        ("SchedulingBasic/5000Nodes_10000Pods", 5000, 1000, 10000, 680),
        ("SchedulingBasic/5000Nodes_50000Pods", 5000, 5000, 50000, 810),
        ("SchedulingBasic/5000Nodes_100000Pods", 5000, 5000, 100000, 810),
        ("SchedulingBasic/Smoke", 50, 20, 200, None),
        ("SchedulingPodAntiAffinity/5Nodes", 5, 1, 4, None),
        ("SchedulingPodAntiAffinity/500Nodes", 500, 100, 400, None),
        ("SchedulingPodAntiAffinity/5000Nodes", 5000, 1000, 1000, None),
        ("SchedulingPodAntiAffinity/5000Nodes_2000Pods", 5000, 1000, 2000, 60),
        ("SchedulingPodAffinity/5Nodes", 5, 5, 10, None),
        ("SchedulingPodAffinity/500Nodes", 500, 500, 1000, None),
        ("SchedulingPodAffinity/5000Nodes", 5000, 5000, 1000, None),
        ("SchedulingPodAffinity/5000Nodes_5000Pods", 5000, 5000, 5000, 35),
        ("SchedulingPreferredPodAffinity/5Nodes", 5, 5, 10, None),
        ("SchedulingPreferredPodAffinity/500Nodes", 500, 500, 1000, None),
        ("SchedulingPreferredPodAffinity/5000Nodes", 5000, 5000, 1000, None),
        ("SchedulingPreferredPodAffinity/5000Nodes_5000Pods", 5000, 5000, 5000, 90),
        ("SchedulingPreferredPodAntiAffinity/5Nodes", 5, 5, 10, None),
        ("SchedulingPreferredPodAntiAffinity/500Nodes", 500, 500, 1000, None),
        ("SchedulingPreferredPodAntiAffinity/5000Nodes", 5000, 5000, 1000, None),
        ("SchedulingPreferredPodAntiAffinity/5000Nodes_5000Pods", 5000, 5000, 5000, 90),
        ("SchedulingNodeAffinity/5Nodes", 5, 5, 10, None),
        ("SchedulingNodeAffinity/500Nodes", 500, 500, 1000, None),
        ("SchedulingNodeAffinity/5000Nodes", 5000, 5000, 1000, None),
        ("SchedulingNodeAffinity/5000Nodes_10000Pods", 5000, 5000, 10000, 220),
        ("TopologySpreading/5Nodes", 5, 10, 10, None),
        ("TopologySpreading/500Nodes", 500, 1000, 1000, None),
        ("TopologySpreading/5000Nodes", 5000, 5000, 2000, None),
        ("TopologySpreading/5000Nodes_5000Pods", 5000, 5000, 5000, 460),
        ("PreferredTopologySpreading/5Nodes", 5, 10, 10, None),
        ("PreferredTopologySpreading/500Nodes", 500, 1000, 1000, None),
        ("PreferredTopologySpreading/5000Nodes", 5000, 5000, 2000, None),
        ("PreferredTopologySpreading/5000Nodes_5000Pods", 5000, 5000, 5000, 340),
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
    ("test", "source", "namespaces", "init_template", "measure_template"),
    [
        (
            "SchedulingBasic",
            "misc/performance-config.yaml",
            ("namespace-1", "namespace-2"),
            "pod-default.yaml",
            "pod-default.yaml",
        ),
        (
            "SchedulingPodAntiAffinity",
            "affinity/performance-config.yaml",
            ("sched-0", "sched-1"),
            "pod-with-pod-anti-affinity.yaml",
            "pod-with-pod-anti-affinity.yaml",
        ),
        (
            "SchedulingPodAffinity",
            "affinity/performance-config.yaml",
            ("sched-0", "sched-1"),
            "pod-with-pod-affinity.yaml",
            "pod-with-pod-affinity.yaml",
        ),
        (
            "SchedulingPreferredPodAffinity",
            "affinity/performance-config.yaml",
            ("sched-0", "sched-1"),
            "pod-with-preferred-pod-affinity.yaml",
            "pod-with-preferred-pod-affinity.yaml",
        ),
        (
            "SchedulingPreferredPodAntiAffinity",
            "affinity/performance-config.yaml",
            ("sched-0", "sched-1"),
            "pod-with-preferred-pod-anti-affinity.yaml",
            "pod-with-preferred-pod-anti-affinity.yaml",
        ),
        (
            "SchedulingNodeAffinity",
            "affinity/performance-config.yaml",
            ("namespace-1", "namespace-2"),
            "pod-with-node-affinity.yaml",
            "pod-with-node-affinity.yaml",
        ),
        (
            "TopologySpreading",
            "topology_spreading/performance-config.yaml",
            ("namespace-1", "namespace-2"),
            "pod-default.yaml",
            "pod-with-topology-spreading.yaml",
        ),
        (
            "PreferredTopologySpreading",
            "topology_spreading/performance-config.yaml",
            ("namespace-1", "namespace-2"),
            "pod-default.yaml",
            "pod-with-preferred-topology-spreading.yaml",
        ),
    ],
)
def test_every_case_of_a_test_shares_its_shape(
    test: str,
    source: str,
    namespaces: tuple[str, str],
    init_template: str,
    measure_template: str,
) -> None:
    cases = resolve([f"{test}/"])
    assert len(cases) >= 4  # 5Nodes, 500Nodes, 5000Nodes and the CI case at least
    assert any(w.threshold is not None for w in cases)
    for w in cases:
        assert w.source == source
        assert w.namespaces == namespaces
        assert w.init_pod_template.path == f"templates/{init_template}"
        assert w.measure_pod_template.path == f"templates/{measure_template}"


def _term(color: str, topology_key: str) -> dict[str, Any]:
    return {
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": topology_key,
        "namespaces": BOTH_SCHED,
    }


def _spread(when: str) -> list[dict[str, Any]]:
    return [
        {
            "maxSkew": 5,
            "topologyKey": ZONE,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"color": "blue"}},
        }
    ]


# The templates under test/integration/scheduler_perf/templates/: the measured pod's labels and
# the spec fields beyond pod-default.yaml.
@pytest.mark.parametrize(
    ("name", "labels", "spec"),
    [
        ("SchedulingBasic/5000Nodes_10000Pods", None, {}),
        (
            "SchedulingPodAntiAffinity/500Nodes",
            {"color": "green"},
            {
                "affinity": {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [_term("green", HOSTNAME)]
                    }
                }
            },
        ),
        (
            "SchedulingPodAffinity/500Nodes",
            {"color": "blue"},
            {
                "affinity": {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [_term("blue", ZONE)]
                    }
                }
            },
        ),
        (
            "SchedulingPreferredPodAffinity/500Nodes",
            {"color": "red"},
            {
                "affinity": {
                    "podAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"podAffinityTerm": _term("red", HOSTNAME), "weight": 1}
                        ]
                    }
                }
            },
        ),
        (
            "SchedulingPreferredPodAntiAffinity/500Nodes",
            {"color": "yellow"},
            {
                "affinity": {
                    "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"podAffinityTerm": _term("yellow", HOSTNAME), "weight": 1}
                        ]
                    }
                }
            },
        ),
        (
            "SchedulingNodeAffinity/500Nodes",
            None,
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {
                                            "key": ZONE,
                                            "operator": "In",
                                            "values": ["zone1", "zone2"],
                                        }
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
        ),
        (
            "TopologySpreading/500Nodes",
            {"color": "blue"},
            {"topologySpreadConstraints": _spread("DoNotSchedule")},
        ),
        (
            "PreferredTopologySpreading/500Nodes",
            {"color": "blue"},
            {"topologySpreadConstraints": _spread("ScheduleAnyway")},
        ),
    ],
)
def test_measured_pod_carries_the_templates_terms(
    name: str, labels: dict[str, str] | None, spec: dict[str, Any]
) -> None:
    w = WORKLOADS[name]
    pod = pod_manifest(w, 3, measured=True)
    assert pod["metadata"].get("labels") == labels
    assert pod["metadata"]["name"] == "pod-3"
    assert pod["metadata"]["namespace"] == w.measure_namespace
    assert {k: v for k, v in pod["spec"].items() if k != "containers"} == spec
    (container,) = pod["spec"]["containers"]
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "500Mi"}


@pytest.mark.parametrize(
    ("name", "measured", "has_terms"),
    [
        ("TopologySpreading/500Nodes", False, False),  # init pods: pod-default.yaml
        ("PreferredTopologySpreading/500Nodes", False, False),
        ("SchedulingPodAntiAffinity/500Nodes", False, True),  # one template for both phases
        ("SchedulingNodeAffinity/500Nodes", False, True),
    ],
)
def test_init_pods_use_the_init_template(name: str, measured: bool, has_terms: bool) -> None:
    w = WORKLOADS[name]
    pod = pod_manifest(w, 0, measured=measured)
    assert pod["metadata"]["namespace"] == w.init_namespace
    assert (set(pod["spec"]) != {"containers"}) == has_terms


def test_templates_are_not_shared_between_manifests() -> None:
    w = WORKLOADS["SchedulingPodAntiAffinity/500Nodes"]
    first = pod_manifest(w, 0, measured=True)
    first["spec"]["affinity"]["podAntiAffinity"].clear()
    first["metadata"]["labels"]["color"] = "changed"
    second = pod_manifest(w, 1, measured=True)
    assert second["spec"]["affinity"]["podAntiAffinity"]
    assert second["metadata"]["labels"] == {"color": "green"}


# Node labels: upstream's node preparer sets kubernetes.io/hostname, then labelNodePrepareStrategy
# hands out its labelValues round robin.
@pytest.mark.parametrize(
    ("name", "index", "labels"),
    [
        ("SchedulingBasic/500Nodes", 7, None),  # unchanged: no labels
        ("SchedulingPodAntiAffinity/500Nodes", 7, {HOSTNAME: "scheduler-perf-7"}),
        ("SchedulingPreferredPodAffinity/500Nodes", 7, {HOSTNAME: "scheduler-perf-7"}),
        ("SchedulingPreferredPodAntiAffinity/500Nodes", 7, {HOSTNAME: "scheduler-perf-7"}),
        ("SchedulingPodAffinity/500Nodes", 7, {HOSTNAME: "scheduler-perf-7", ZONE: "zone1"}),
        ("SchedulingNodeAffinity/500Nodes", 7, {HOSTNAME: "scheduler-perf-7", ZONE: "zone1"}),
        ("TopologySpreading/500Nodes", 0, {HOSTNAME: "scheduler-perf-0", ZONE: "moon-1"}),
        ("TopologySpreading/500Nodes", 1, {HOSTNAME: "scheduler-perf-1", ZONE: "moon-2"}),
        ("TopologySpreading/500Nodes", 2, {HOSTNAME: "scheduler-perf-2", ZONE: "moon-3"}),
        ("TopologySpreading/500Nodes", 3, {HOSTNAME: "scheduler-perf-3", ZONE: "moon-1"}),
        ("PreferredTopologySpreading/500Nodes", 5, {HOSTNAME: "scheduler-perf-5", ZONE: "moon-3"}),
    ],
)
def test_node_labels(name: str, index: int, labels: dict[str, str] | None) -> None:
    node = node_manifest(WORKLOADS[name], index)
    assert node["metadata"].get("labels") == labels
    assert node["metadata"]["name"] == f"scheduler-perf-{index}"
    assert node["status"]["capacity"] == {"pods": "110", "cpu": "4", "memory": "32Gi"}


def test_zones_are_balanced() -> None:
    w = WORKLOADS["TopologySpreading/5000Nodes_5000Pods"]
    zones = [node_manifest(w, i)["metadata"]["labels"][ZONE] for i in range(w.init_nodes)]
    assert {z: zones.count(z) for z in set(zones)} == {
        "moon-1": 1667,
        "moon-2": 1667,
        "moon-3": 1666,
    }


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["SchedulingBasic/500Nodes"], ["SchedulingBasic/500Nodes"]),
        (
            ["SchedulingBasic/Smoke", "SchedulingBasic/5Nodes"],
            ["SchedulingBasic/Smoke", "SchedulingBasic/5Nodes"],
        ),
        (
            ["SchedulingBasic/"],
            [
                "SchedulingBasic/Smoke",
                "SchedulingBasic/5Nodes",
                "SchedulingBasic/500Nodes",
                "SchedulingBasic/5000Nodes",
                "SchedulingBasic/5000Nodes_10000Pods",
                "SchedulingBasic/5000Nodes_50000Pods",
                "SchedulingBasic/5000Nodes_100000Pods",
            ],
        ),
        (
            ["SchedulingPodAffinity/"],
            [
                "SchedulingPodAffinity/5Nodes",
                "SchedulingPodAffinity/500Nodes",
                "SchedulingPodAffinity/5000Nodes",
                "SchedulingPodAffinity/5000Nodes_5000Pods",
            ],
        ),
    ],
)
def test_resolve_keeps_order_and_expands_prefixes(names: list[str], expected: list[str]) -> None:
    assert [w.name for w in resolve(names)] == expected


@pytest.mark.parametrize(
    ("name", "guide"),
    [
        ("SchedulingBasic/50Nodes", "\tSchedulingBasic/500Nodes\n"),
        ("Nope/", "Run 'aiosched bench --list'"),  # nothing close: where the names are
        ("SchedulingBasic", "\tSchedulingBasic/\n"),
    ],
)
def test_resolve_names_the_unknown_workload(name: str, guide: str) -> None:
    """The unknown name, and the way to a known one (the close names, or --list), rather than
    every name (tests/bench/test_suggest.py has the message's shape)."""
    with pytest.raises(UnknownWorkload) as raised:
        resolve([name])
    assert f"unknown workload {name!r}" in str(raised.value)
    assert guide in str(raised.value)


def test_basic_node_is_upstreams_default_node_unchanged() -> None:
    assert node_manifest(WORKLOADS["SchedulingBasic/Smoke"], 7) == {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "scheduler-perf-7"},
        "spec": {},
        "status": {
            "capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
            "conditions": [{"status": "True", "type": "Ready"}],
            "phase": "Running",
        },
    }


@pytest.mark.parametrize("measured", [False, True])
def test_basic_pod_is_upstreams_default_pod_unchanged(measured: bool) -> None:
    w: Workload = WORKLOADS["SchedulingBasic/500Nodes"]
    assert pod_manifest(w, 3, measured=measured) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pod-3", "namespace": "namespace-2" if measured else "namespace-1"},
        "spec": {
            "containers": [
                {
                    "image": "registry.k8s.io/pause:3.10.1",
                    "name": "pause",
                    "ports": [{"containerPort": 80}],
                    "resources": {
                        "limits": {"cpu": "100m", "memory": "500Mi"},
                        "requests": {"cpu": "100m", "memory": "500Mi"},
                    },
                }
            ]
        },
    }


# default_preemption/performance-config.yaml: (name, nodes, init, measured, threshold)
PREEMPTION_CASES = [
    ("PreemptionBasic/5Nodes", 5, 20, 5, None),
    ("PreemptionBasic/1000Nodes", 1000, 4000, 1000, None),
    ("PreemptionAsync/5Nodes", 5, 20, 5, None),
    ("PreemptionAsync/500Nodes", 500, 2000, 500, None),
    ("PreemptionAsync/5000Nodes", 5000, 20000, 5000, 570),
    ("Unschedulable/5Nodes/1Init/10Pods", 5, 1, 10, None),
    ("Unschedulable/500Nodes/10Init/1kPods", 500, 10, 1000, None),
    ("Unschedulable/5kNodes/100Init/1kPods", 5000, 100, 1000, None),
    ("Unschedulable/5kNodes/100Init/10kPods", 5000, 100, 10000, 590),
    ("Unschedulable/5kNodes/20kInit/10kPods", 5000, 20000, 10000, 600),
]


@pytest.mark.parametrize(("name", "nodes", "init", "measured", "threshold"), PREEMPTION_CASES)
def test_preemption_shapes_have_upstreams_parameters(
    name: str, nodes: int, init: int, measured: int, threshold: float | None
) -> None:
    w = WORKLOADS[name]
    assert (w.init_nodes, w.init_pods, w.measure_pods, w.threshold) == (
        nodes,
        init,
        measured,
        threshold,
    )
    assert w.source == "default_preemption/performance-config.yaml"


def test_preemption_templates_request_what_upstreams_do() -> None:
    from bench.workloads import churn_pod_manifest, pod_manifest, priority_class_manifest

    basic = WORKLOADS["PreemptionBasic/5Nodes"]
    low = pod_manifest(basic, 0, measured=False)
    high = pod_manifest(basic, 0, measured=True)
    assert low["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "900m",
        "memory": "500Mi",
    }
    assert "priorityClassName" not in low["spec"]
    assert low["spec"]["terminationGracePeriodSeconds"] == 0
    assert high["spec"]["priorityClassName"] == priority_class_manifest()["metadata"]["name"]
    assert priority_class_manifest()["value"] == 10
    assert high["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "3000m"
    assert basic.needs_high_priority and basic.churn_pod_template is None

    unschedulable = WORKLOADS["Unschedulable/5Nodes/1Init/10Pods"]
    churn = churn_pod_manifest(unschedulable, 3)
    assert churn["metadata"] == {"name": "churn-3", "namespace": "churn"}
    resources = churn["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"cpu": "9", "memory": "500Mi"}}  # no limits upstream
    assert unschedulable.namespaces == ("namespace-1", "namespace-2", "churn")
    assert pod_manifest(unschedulable, 0, measured=True)["spec"].get("priorityClassName") is None
