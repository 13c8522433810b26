"""The shapes ported for issue 22: upstream's counts, thresholds and templates, and the runner's
ops they need (gated-pod barrier, pod deletion at a rate, recreate churn)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bench import workloads as wl
from bench.runner import WorkloadRun, gated_pending_pods, scheduler_config_for
from bench.workloads import WORKLOADS, Workload, resolve
from kubesim.defaults import apply_defaults
from kubesim.validation import validate

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
DEVOPS = {"matchLabels": {"team": "devops"}}

# (name, nodes, init pods, namespaces of init pods, measured, gated, threshold), from
# test/integration/scheduler_perf/misc, affinity and batching performance-config.yaml
UPSTREAM_CASES = [
    ("SchedulingDaemonset/5Nodes", 5, 0, 0, 10, 0, None),
    ("SchedulingDaemonset/15000Nodes", 15000, 0, 0, 30000, 0, 1100),
    ("SchedulingRequiredPodAntiAffinityWithNSSelector/10Nodes", 10, 4, 2, 6, 0, None),
    ("SchedulingRequiredPodAntiAffinityWithNSSelector/500Nodes", 500, 40, 10, 100, 0, None),
    ("SchedulingRequiredPodAntiAffinityWithNSSelector/5000Nodes", 5000, 4000, 100, 1000, 0, None),
    (
        "SchedulingRequiredPodAntiAffinityWithNSSelector/5000Nodes_2000Pods",
        6000,
        4000,
        100,
        2000,
        0,
        24,
    ),
    ("SchedulingPreferredAntiAffinityWithNSSelector/10Nodes", 10, 4, 2, 10, 0, None),
    ("SchedulingPreferredAntiAffinityWithNSSelector/500Nodes", 500, 40, 10, 100, 0, None),
    ("SchedulingPreferredAntiAffinityWithNSSelector/5000Nodes", 5000, 4000, 100, 1000, 0, None),
    (
        "SchedulingPreferredAntiAffinityWithNSSelector/5000Nodes_2000Pods",
        5000,
        4000,
        100,
        2000,
        0,
        55,
    ),
    ("SchedulingRequiredPodAffinityWithNSSelector/10Nodes", 10, 4, 2, 10, 0, None),
    ("SchedulingRequiredPodAffinityWithNSSelector/500Nodes", 500, 40, 10, 100, 0, None),
    ("SchedulingRequiredPodAffinityWithNSSelector/5000Nodes", 5000, 5000, 100, 1000, 0, None),
    (
        "SchedulingRequiredPodAffinityWithNSSelector/5000Nodes_2000Pods",
        5000,
        5000,
        100,
        2000,
        0,
        35,
    ),
    ("SchedulingPreferredAffinityWithNSSelector/10Nodes", 10, 4, 2, 10, 0, None),
    ("SchedulingPreferredAffinityWithNSSelector/500Nodes", 500, 40, 10, 100, 0, None),
    ("SchedulingPreferredAffinityWithNSSelector/5000Nodes", 5000, 5000, 100, 1000, 0, None),
    (
        "SchedulingPreferredAffinityWithNSSelector/5000Nodes_5000Pods",
        5000,
        5000,
        100,
        5000,
        0,
        90,
    ),
    (
        "SchedulingGatedPodsWithPodAffinityImpactForThroughput/1Node_10GatedPods",
        0,
        0,
        0,
        10,
        10,
        None,
    ),
    (
        "SchedulingGatedPodsWithPodAffinityImpactForThroughput/1Node_10000GatedPods",
        0,
        0,
        0,
        20000,
        10000,
        110,
    ),
    ("SchedulingWhileGated/1Node_10GatedPods", 0, 10, 0, 10, 10, None),
    ("SchedulingWhileGated/1Node_10000GatedPods", 0, 20000, 0, 20000, 10000, 910),
    ("SchedulingWithMixedChurn/10Nodes", 10, 0, 0, 100, 0, None),
    ("SchedulingWithMixedChurn/1000Nodes", 1000, 0, 0, 1000, 0, None),
    ("SchedulingWithMixedChurn/5000Nodes", 5000, 0, 0, 2000, 0, None),
    ("SchedulingWithMixedChurn/5000Nodes_10000Pods", 5000, 0, 0, 10000, 0, 710),
    *[
        (f"{test}/{size}", nodes, 0, 0, nodes, 0, None)
        for test in ("HostPortConflict", "ResourceSaturation")
        for nodes, size in [
            (10, "10Nodes_10Pods_10BatchSize"),
            *[
                (20000, f"20000Nodes_20000Pods_{batch}BatchSize")
                for batch in (10, 100, 1000, 5000, 20000)
            ],
        ]
    ],
]


@pytest.mark.parametrize(
    ("name", "nodes", "init", "pod_sets", "measured", "gated", "threshold"), UPSTREAM_CASES
)
def test_new_shapes_have_upstreams_parameters(
    name: str,
    nodes: int,
    init: int,
    pod_sets: int,
    measured: int,
    gated: int,
    threshold: float | None,
) -> None:
    w = WORKLOADS[name]
    assert (w.init_nodes, w.init_pods, w.init_pod_sets, w.measure_pods, w.gated_pods) == (
        nodes,
        init,
        pod_sets,
        measured,
        gated,
    )
    assert w.threshold == threshold
    assert w.description


@pytest.mark.parametrize(
    ("test", "ours"),
    [
        ("SchedulingDaemonset/", ["SchedulingDaemonset/5000Nodes_10000Pods"]),
        ("HostPortConflict/", ["HostPortConflict/5000Nodes_5000Pods_1000BatchSize"]),
        ("ResourceSaturation/", ["ResourceSaturation/5000Nodes_5000Pods_1000BatchSize"]),
    ],
)
def test_only_the_sizes_that_fit_this_machine_are_ours(test: str, ours: list[str]) -> None:
    upstream = {case[0] for case in UPSTREAM_CASES}
    names = [w.name for w in resolve([test])]
    assert [n for n in names if n not in upstream] == ours
    for name in ours:
        assert "ours" in WORKLOADS[name].description
        assert WORKLOADS[name].threshold is None


def _new_workloads() -> list[Workload]:
    return list(wl.NEW_WORKLOADS)


def _manifests(w: Workload) -> list[tuple[str, dict[str, Any]]]:
    """One of each object the runner creates for `w`, by kind."""
    objects: list[tuple[str, dict[str, Any]]] = [
        ("Namespace", wl.namespace_manifest(name, w.namespace_labels)) for name in w.namespaces
    ]
    objects.append(("Node", wl.node_manifest(w, 0)))
    objects.append(("Pod", wl.pod_manifest(w, 0, measured=True)))
    if w.named_node:
        objects.append(("Node", wl.named_node_manifest()))
    if w.gated_pods:
        objects.append(("Pod", wl.gated_pod_manifest(w, 0)))
    if w.init_pod_sets:
        objects.append(("Pod", wl.pod_set_manifest(w, wl.pod_set_namespace(0), 0)))
    elif w.init_pods:
        objects.append(("Pod", wl.pod_manifest(w, 0, measured=False)))
    if w.recreate_churn:
        for churn in wl.recreate_churn_manifests():
            churn = {**churn, "metadata": {**churn["metadata"], "name": "churn-0"}}
            if churn["kind"] != "Node":
                churn["metadata"]["namespace"] = w.recreate_churn_namespace
            objects.append((churn["kind"], churn))
    return objects


@pytest.mark.parametrize("workload", _new_workloads(), ids=lambda w: w.name)
def test_every_object_of_the_new_shapes_validates(workload: Workload) -> None:
    for kind, obj in _manifests(workload):
        apply_defaults(kind, obj)  # as the API server does before validating a create
        assert validate(kind, obj, None) == [], (kind, obj)


def _spec(name: str, measured: bool = True) -> dict[str, Any]:
    pod = wl.pod_manifest(WORKLOADS[name], 1, measured=measured)
    return {k: v for k, v in pod["spec"].items() if k != "containers"}


def test_daemonset_pods_are_upstreams_template() -> None:
    w = WORKLOADS["SchedulingDaemonset/5Nodes"]
    pod = wl.pod_manifest(w, 1, measured=True)
    assert pod["metadata"] == {"name": "pod-1", "namespace": "namespace-2"}
    (container,) = pod["spec"]["containers"]
    assert container == {"image": wl.PAUSE_IMAGE, "name": "pause"}  # no resources, no ports
    term = {
        "matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["scheduler-perf-node"]}
        ]
    }
    assert _spec(w.name) == {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    }
    named = wl.named_node_manifest()
    assert named["metadata"] == {
        "name": "scheduler-perf-node",
        "labels": {HOSTNAME: "scheduler-perf-node"},
    }
    assert named["status"]["capacity"] == {"pods": "90000", "cpu": "4", "memory": "32Gi"}
    assert w.named_node and wl.node_manifest(w, 3)["metadata"]["labels"] == {
        HOSTNAME: "scheduler-perf-3"
    }


def _ns_term(color: str, key: str) -> dict[str, Any]:
    return {
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": key,
        "namespaceSelector": DEVOPS,
    }


@pytest.mark.parametrize(
    ("test", "color", "affinity", "node_labels"),
    [
        (
            "SchedulingRequiredPodAntiAffinityWithNSSelector",
            "green",
            {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_ns_term("green", HOSTNAME)]
                }
            },
            {HOSTNAME: "scheduler-perf-0"},
        ),
        (
            "SchedulingPreferredAntiAffinityWithNSSelector",
            "green",
            {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"podAffinityTerm": _ns_term("green", HOSTNAME), "weight": 1}
                    ]
                }
            },
            {HOSTNAME: "scheduler-perf-0"},
        ),
        (
            "SchedulingRequiredPodAffinityWithNSSelector",
            "blue",
            {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_ns_term("blue", ZONE)]
                }
            },
            {HOSTNAME: "scheduler-perf-0", ZONE: "zone1"},
        ),
        (
            "SchedulingPreferredAffinityWithNSSelector",
            "red",
            {
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"podAffinityTerm": _ns_term("red", HOSTNAME), "weight": 1}
                    ]
                }
            },
            {HOSTNAME: "scheduler-perf-0"},
        ),
    ],
)
def test_namespace_selector_shapes(
    test: str, color: str, affinity: dict[str, Any], node_labels: dict[str, str]
) -> None:
    w = WORKLOADS[f"{test}/500Nodes"]
    assert w.namespaces == (*[f"init-ns-{i}" for i in range(10)], "measure-ns-0")
    assert wl.namespace_manifest("init-ns-3", w.namespace_labels)["metadata"] == {
        "name": "init-ns-3",
        "labels": {"team": "devops"},
    }
    assert w.pods_per_set == 4
    for pod in (
        wl.pod_manifest(w, 0, measured=True),
        wl.pod_set_manifest(w, "init-ns-7", 2),
    ):
        assert pod["metadata"]["labels"] == {"color": color}
        assert pod["spec"]["affinity"] == affinity
        assert pod["spec"]["containers"][0]["resources"]["requests"] == {
            "cpu": "100m",
            "memory": "500Mi",
        }
    assert wl.pod_set_manifest(w, "init-ns-7", 2)["metadata"]["namespace"] == "init-ns-7"
    assert wl.node_manifest(w, 0)["metadata"]["labels"] == node_labels


def test_gated_shapes_use_upstreams_templates_and_namespaces() -> None:
    affinity = WORKLOADS["SchedulingGatedPodsWithPodAffinityImpactForThroughput/1Node_10GatedPods"]
    gated = wl.gated_pod_manifest(affinity, 4)
    assert gated["metadata"] == {
        "name": "gated-4",
        "namespace": "namespace-1",
        "labels": {"app": "scheduler-perf"},
    }
    assert gated["spec"]["schedulingGates"] == [{"name": "scheduling-gate-1"}]
    assert gated["spec"]["affinity"]["podAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ] == [{"labelSelector": {"matchLabels": {"app": "scheduler-perf"}}, "topologyKey": HOSTNAME}]
    measured = wl.pod_manifest(affinity, 0, measured=True)
    assert measured["metadata"]["namespace"] == "namespace-3"
    assert measured["metadata"]["labels"] == {"app": "scheduler-perf"}
    assert measured["spec"] == {"containers": [{"image": wl.PAUSE_IMAGE, "name": "pause"}]}

    while_gated = WORKLOADS["SchedulingWhileGated/1Node_10GatedPods"]
    assert while_gated.namespaces == ("namespace-1", "namespace-3", "namespace-5")
    assert wl.gated_pod_manifest(while_gated, 0)["spec"]["schedulingGates"] == [
        {"name": "test.k8s.io/hold"}
    ]
    for measured_phase in (False, True):
        light = wl.pod_manifest(while_gated, 0, measured=measured_phase)
        assert light["spec"] == {
            "terminationGracePeriodSeconds": 0,
            "containers": [{"image": wl.PAUSE_IMAGE, "name": "pause"}],
        }
    assert while_gated.delete_init_pods_per_second == 50


def test_mixed_churn_recreates_upstreams_three_templates() -> None:
    w = WORKLOADS["SchedulingWithMixedChurn/10Nodes"]
    assert w.namespaces == ("namespace-1", "namespace-2")
    assert w.needs_high_priority
    node, pod, service = wl.recreate_churn_manifests()
    assert node["metadata"] == {"generateName": "node-churn-"}
    assert node["status"]["capacity"] == {"pods": "0"}
    assert pod["metadata"] == {"generateName": "pod-h-"}
    assert pod["spec"]["priorityClassName"] == wl.HIGH_PRIORITY_CLASS
    assert pod["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "9", "memory": "500Mi"}
    }
    assert service["spec"] == {
        "selector": {"app": "foo"},
        "ports": [{"protocol": "TCP", "port": 8080, "targetPort": 8080}],
    }


@pytest.mark.parametrize(
    ("name", "batch", "container"),
    [
        (
            "HostPortConflict/10Nodes_10Pods_10BatchSize",
            10,
            {
                "image": wl.PAUSE_IMAGE,
                "name": "pause",
                "ports": [{"containerPort": 80, "hostPort": 80}],
                "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}},
            },
        ),
        (
            "ResourceSaturation/20000Nodes_20000Pods_1000BatchSize",
            1000,
            {
                "image": wl.PAUSE_IMAGE,
                "name": "pause",
                "resources": {"requests": {"cpu": "3", "memory": "1Gi"}},
            },
        ),
    ],
)
def test_batching_shapes(name: str, batch: int, container: dict[str, Any]) -> None:
    w = WORKLOADS[name]
    assert w.signature_batch_size == batch
    assert w.measure_namespace == "namespace-1"
    labels = [
        wl.pod_manifest(w, i, measured=True)["metadata"]["labels"]["signature"]
        for i in (0, batch - 1, batch, 2 * batch + 1)
    ]
    assert labels == [
        "signature-label-0",
        "signature-label-0",
        "signature-label-1",
        "signature-label-2",
    ]
    assert wl.pod_manifest(w, 0, measured=True)["spec"]["containers"] == [container]
    config = scheduler_config_for(w)
    assert config.endswith(
        "profiles:\n"
        "- schedulerName: default-scheduler\n"
        "  pluginConfig:\n"
        "  - name: PodTopologySpread\n"
        "    args:\n"
        "      defaultingType: List\n"
        "      defaultConstraints: []\n"
    )


def test_the_first_shapes_keep_their_config_and_labels() -> None:
    basic = WORKLOADS["SchedulingBasic/500Nodes"]
    assert "profiles" not in scheduler_config_for(basic)
    assert "labels" not in wl.pod_manifest(basic, 0, measured=True)["metadata"]
    assert wl.namespace_manifest("namespace-1") == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "namespace-1"},
    }


def test_gated_pending_pods_reads_the_gated_queue() -> None:
    text = (
        "# TYPE scheduler_pending_pods gauge\n"
        'scheduler_pending_pods{queue="active"} 3.0\n'
        'scheduler_pending_pods{queue="gated"} 10000.0\n'
    )
    assert gated_pending_pods(text) == 10000
    assert gated_pending_pods('scheduler_pending_pods{queue="active"} 3\n') == 0


class _RecordingApi:
    """Records the runner's create and delete calls; creates answer with a generated name."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    async def create(self, path: str, body: bytes, *, exist_ok: bool = False) -> dict[str, Any]:
        self.calls.append(("create", path))
        return {"metadata": {"name": f"made-{len(self.calls)}"}}

    async def delete(self, path: str) -> None:
        self.calls.append(("delete", path))


def _run_for(name: str, tmp_path: Any) -> WorkloadRun:
    from bench.runner import RunOptions

    return WorkloadRun(WORKLOADS[name], RunOptions(workdir=tmp_path, command=("aiosched",)))


def test_recreate_churn_creates_then_deletes_each_tick_and_cleans_up(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wl, "RECREATE_CHURN_INTERVAL", 0.01)
    run = _run_for("SchedulingWithMixedChurn/10Nodes", tmp_path)
    api = _RecordingApi()

    async def churn_for_three_ticks() -> None:
        task = asyncio.create_task(run._recreate_churn(api))  # type: ignore[arg-type]
        while len(api.calls) < 9:
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(churn_for_three_ticks())
    collections = [
        "/api/v1/nodes",
        "/api/v1/namespaces/namespace-1/pods",
        "/api/v1/namespaces/namespace-1/services",
    ]
    assert api.calls[:3] == [("create", c) for c in collections]
    assert api.calls[3:6] == [("delete", f"{c}/made-{i + 1}") for i, c in enumerate(collections)]
    assert api.calls[6:9] == [("create", c) for c in collections]
    # cancelled with the third tick's objects alive: they are deleted
    assert api.calls[9:] == [("delete", f"{c}/made-{i + 7}") for i, c in enumerate(collections)]


def test_init_pods_are_deleted_at_the_shapes_rate(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run_for("SchedulingWhileGated/1Node_10GatedPods", tmp_path)
    api = _RecordingApi()
    slept: list[float] = []

    async def no_wait(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", no_wait)
    asyncio.run(run._delete_init_pods(api))  # type: ignore[arg-type]
    assert api.calls == [
        ("delete", f"/api/v1/namespaces/namespace-3/pods/pod-{i}") for i in range(10)
    ]
    assert slept == [1 / 50] * 10
