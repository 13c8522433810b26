"""The DRA shapes (issue 24): upstream's names, params, floors and templates
(test/integration/scheduler_perf/dra/), the driver op's slices, allocResourceClaims, and one
small run end to end."""

from __future__ import annotations

import asyncio
import random
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench import dra
from bench import workloads as wl
from bench.processes import aiosched_command
from bench.results import BenchResult, format_table
from bench.runner import RunOptions, WorkloadRun
from bench.workloads import WORKLOADS, Workload
from kubesim.defaults import apply_defaults
from kubesim.validation import validate

# (name, nodesWithDRA, nodesWithoutDRA, maxClaimsPerNode, initPods, measurePods, initClaims,
#  duration, threshold): dra/performance-config.yaml and dra/prioritizedlist/performance-config.yaml
UPSTREAM_CASES = [
    ("SchedulingWithResourceClaimTemplate/fast", 1, 1, 10, 0, 10, 0, 0, None),
    ("SchedulingWithResourceClaimTemplate/2000pods_100nodes", 100, 0, 20, 1000, 1000, 0, 0, None),
    ("SchedulingWithResourceClaimTemplate/2000pods_200nodes", 200, 0, 10, 1000, 1000, 0, 0, None),
    ("SchedulingWithResourceClaimTemplate/5000pods_500nodes", 500, 0, 10, 2500, 2500, 0, 0, 40),
    ("SteadyStateClusterResourceClaimTemplate/fast", 1, 1, 10, 0, 10, 0, 2, None),
    ("SteadyStateClusterResourceClaimTemplate/empty_100nodes", 100, 0, 10, 0, 10, 0, 10, None),
    ("SteadyStateClusterResourceClaimTemplate/empty_200nodes", 200, 0, 10, 0, 10, 0, 10, None),
    ("SteadyStateClusterResourceClaimTemplate/empty_500nodes", 500, 0, 10, 0, 10, 0, 10, 64),
    ("SteadyStateClusterResourceClaimTemplate/half_100nodes", 100, 0, 10, 0, 10, 500, 10, None),
    ("SteadyStateClusterResourceClaimTemplate/half_200nodes", 200, 0, 10, 0, 10, 1000, 10, None),
    ("SteadyStateClusterResourceClaimTemplate/half_500nodes", 500, 0, 10, 0, 10, 2500, 10, 70),
    ("SteadyStateClusterResourceClaimTemplate/full_100nodes", 100, 0, 10, 0, 10, 990, 10, None),
    ("SteadyStateClusterResourceClaimTemplate/full_200nodes", 200, 0, 10, 0, 10, 1990, 10, None),
    ("SteadyStateClusterResourceClaimTemplate/full_500nodes", 500, 0, 10, 0, 10, 4990, 10, 60),
    ("FirstAvailable/fast", 1, 1, 10, 0, 10, 0, 0, None),
]


def test_every_dra_case_is_upstreams_and_no_other() -> None:
    ported = sorted(name for name, w in WORKLOADS.items() if w.dra is not None)
    assert ported == sorted(case[0] for case in UPSTREAM_CASES)
    assert not any("QueueingHints" in name for name in WORKLOADS)


@pytest.mark.parametrize(
    (
        "name",
        "with_dra",
        "without_dra",
        "max_claims",
        "init_pods",
        "measure",
        "claims",
        "secs",
        "floor",
    ),
    UPSTREAM_CASES,
)
def test_dra_case_has_upstreams_params_and_floor(
    name: str,
    with_dra: int,
    without_dra: int,
    max_claims: int,
    init_pods: int,
    measure: int,
    claims: int,
    secs: float,
    floor: float | None,
) -> None:
    w = WORKLOADS[name]
    assert w.dra is not None
    assert (w.init_nodes, w.dra.nodes_with_dra, w.dra.max_claims_per_node) == (
        with_dra + without_dra,
        with_dra,
        max_claims,
    )
    assert (w.init_pods, w.measure_pods, w.dra.init_claims) == (init_pods, measure, claims)
    assert (w.dra.steady_seconds, w.threshold) == (secs, floor)
    assert (w.init_namespace, w.measure_namespace) == ("init", "test")
    source = "dra/prioritizedlist/" if name.startswith("FirstAvailable") else "dra/"
    assert w.source == f"{source}performance-config.yaml"


def test_the_ops_of_each_test() -> None:
    template = WORKLOADS["SchedulingWithResourceClaimTemplate/fast"].dra
    steady = WORKLOADS["SteadyStateClusterResourceClaimTemplate/fast"].dra
    first = WORKLOADS["FirstAvailable/fast"].dra
    assert template is not None and steady is not None and first is not None
    # the claim template in `init` for the init pods and in `test`; the steady state has init
    # claims instead of init pods
    assert template.claim_template_namespaces == ("init", "test")
    assert steady.claim_template_namespaces == ("test",)
    assert template.device_classes == steady.device_classes == ("dra/templates/deviceclass.yaml",)
    assert first.device_classes == (
        "dra/templates/deviceclass.yaml",
        "dra/templates/deviceclass-no-devices.yaml",
    )
    assert first.claim_template == "dra/templates/resourceclaimtemplate-first-available.yaml"


def test_nodes_without_then_with_the_driver() -> None:
    """node-default.yaml first, then node-with-dra-test-driver.yaml: scheduler-perf-dra-<i>,
    the index counting on from the nodes created before (scheduler_perf's nextNodeIndex)."""
    fast = WORKLOADS["SchedulingWithResourceClaimTemplate/fast"]
    names = [wl.node_manifest(fast, i)["metadata"]["name"] for i in range(fast.init_nodes)]
    assert names == ["scheduler-perf-0", "scheduler-perf-dra-1"]
    big = WORKLOADS["SchedulingWithResourceClaimTemplate/5000pods_500nodes"]
    assert wl.workload_node_name(big, 0) == "scheduler-perf-dra-0"
    assert wl.workload_node_name(big, 499) == "scheduler-perf-dra-499"
    node = wl.node_manifest(big, 7)
    assert node["metadata"] == {
        "name": "scheduler-perf-dra-7",
        "labels": {"kubernetes.io/hostname": "scheduler-perf-dra-7"},
    }
    assert node["status"]["capacity"] == {"pods": "110", "cpu": "4", "memory": "32Gi"}


def test_pod_is_pod_with_claim_template() -> None:
    w = WORKLOADS["SchedulingWithResourceClaimTemplate/fast"]
    pod = wl.pod_manifest(w, 3, measured=True)
    assert pod["metadata"] == {"name": "pod-3", "namespace": "test"}
    assert pod["spec"] == {
        "resourceClaims": [
            {"name": "resource", "resourceClaimTemplateName": "test-claim-template"}
        ],
        "containers": [
            {
                "image": "registry.k8s.io/pause:3.10.1",
                "name": "pause",
                "resources": {"claims": [{"name": "resource"}]},
            }
        ],
    }
    assert wl.pod_manifest(w, 0, measured=False)["metadata"]["namespace"] == "init"


def test_templates_are_rendered_as_upstreams() -> None:
    assert wl.device_class_manifest("dra/templates/deviceclass.yaml") == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "test-class"},
        "spec": {
            "selectors": [{"cel": {"expression": 'device.driver == "test-driver.cdi.k8s.io"'}}]
        },
    }
    no_devices = wl.device_class_manifest("dra/templates/deviceclass-no-devices.yaml")
    assert no_devices["metadata"] == {"name": "no-devices-class"}
    assert no_devices["spec"]["selectors"][0]["cel"]["expression"] == (
        'device.driver == "no-such-driver.cdi.k8s.io"'
    )
    template = wl.claim_template_manifest("dra/templates/resourceclaimtemplate.yaml", "init")
    assert template["metadata"] == {"name": "test-claim-template", "namespace": "init"}
    assert template["spec"] == {
        "spec": {
            "devices": {
                "requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class"}}]
            }
        }
    }
    first = wl.claim_template_manifest(wl.FIRST_AVAILABLE_TEMPLATE, "test")
    assert first["spec"]["spec"]["devices"]["requests"] == [
        {
            "name": "req-0",
            "firstAvailable": [
                {"name": "sub-0", "deviceClassName": "no-devices-class"},
                {"name": "sub-1", "deviceClassName": "test-class"},
            ],
        }
    ]
    claim = wl.init_claim_manifest(4)
    assert claim["metadata"] == {"name": "test-claim-4", "namespace": "init"}
    assert claim["spec"] == template["spec"]["spec"]


def test_slices_are_scheduler_perfs() -> None:
    slice_obj = wl.resource_slice_manifest("test-driver.cdi.k8s.io", "scheduler-perf-dra-3", 2)
    assert slice_obj["metadata"] == {"name": "scheduler-perf-dra-3"}
    spec = slice_obj["spec"]
    assert (spec["driver"], spec["nodeName"]) == ("test-driver.cdi.k8s.io", "scheduler-perf-dra-3")
    assert spec["pool"] == {
        "name": "scheduler-perf-dra-3",
        "generation": 0,
        "resourceSliceCount": 1,
    }
    assert spec["devices"][1] == {
        "name": "instance-1",
        "attributes": {
            "model": {"string": "A100"},
            "family": {"string": "GPU"},
            "driverVersion": {"version": "1.2.3"},
            "dra.example.com/numa": {"int": 1},
        },
        "capacity": {"memory": {"value": "1Gi"}},
    }


def _objects(w: Workload) -> list[tuple[str, dict[str, Any]]]:
    assert w.dra is not None
    objects: list[tuple[str, dict[str, Any]]] = [
        ("Node", wl.node_manifest(w, w.init_nodes - 1)),
        ("Pod", wl.pod_manifest(w, 0, measured=True)),
        ("ResourceSlice", wl.resource_slice_manifest(wl.DRA_DRIVER, "scheduler-perf-dra-0", 10)),
        ("ResourceClaim", wl.init_claim_manifest(0)),
    ]
    objects += [("DeviceClass", wl.device_class_manifest(t)) for t in w.dra.device_classes]
    objects += [
        ("ResourceClaimTemplate", wl.claim_template_manifest(w.dra.claim_template, ns))
        for ns in w.dra.claim_template_namespaces
    ]
    return objects


@pytest.mark.parametrize(
    "name",
    ["SchedulingWithResourceClaimTemplate/fast", "FirstAvailable/fast"],
)
def test_every_dra_object_validates(name: str) -> None:
    for kind, obj in _objects(WORKLOADS[name]):
        apply_defaults(kind, obj)  # as the API server does before validating a create
        assert validate(kind, obj, None) == [], (kind, obj)


class _FakeApi:
    """Lists what it was given; records creates and status writes."""

    def __init__(self, lists: dict[str, list[dict[str, Any]]]) -> None:
        self.lists = lists
        self.created: list[tuple[str, dict[str, Any]]] = []
        self.replaced: list[tuple[str, dict[str, Any]]] = []

    async def get(self, path: str) -> dict[str, Any]:
        return {"items": self.lists.get(path, []), "metadata": {"resourceVersion": "1"}}

    async def create(self, path: str, body: bytes, *, exist_ok: bool = False) -> dict[str, Any]:
        self.created.append((path, orjson.loads(body)))
        return {}

    async def replace(self, path: str, body: bytes) -> dict[str, Any]:
        self.replaced.append((path, orjson.loads(body)))
        return {}


def _stored(obj: dict[str, Any], uid: str) -> dict[str, Any]:
    """As the API server answers a list: uid and resourceVersion set."""
    meta = {**obj["metadata"], "uid": uid, "resourceVersion": "1"}
    return {**obj, "metadata": meta}


def _node(name: str) -> dict[str, Any]:
    return _stored(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"capacity": {"pods": "110"}, "allocatable": {"pods": "110"}},
        },
        f"uid-{name}",
    )


def test_driver_publishes_one_slice_per_matching_node() -> None:
    nodes = [_node(n) for n in ("scheduler-perf-0", "scheduler-perf-dra-1", "scheduler-perf-dra-2")]
    api = _FakeApi({"/api/v1/nodes": nodes})
    names = asyncio.run(
        dra.create_resource_driver(api, wl.DRA_DRIVER, wl.DRA_NODE_GLOB, 3, 4)  # type: ignore[arg-type]
    )
    assert names == ["scheduler-perf-dra-1", "scheduler-perf-dra-2"]
    assert sorted(path for path, _ in api.created) == [dra.SLICES] * 2
    slices = sorted((body for _, body in api.created), key=lambda s: s["metadata"]["name"])
    assert [s["spec"]["nodeName"] for s in slices] == names
    assert [d["name"] for d in slices[0]["spec"]["devices"]] == [
        "instance-0",
        "instance-1",
        "instance-2",
    ]


def _allocation_api(claims: int, taken: dict[str, Any] | None = None) -> _FakeApi:
    """Two DRA nodes with one device each, test-class, `claims` init claims."""
    nodes = [_node(f"scheduler-perf-dra-{i}") for i in range(2)]
    slices = [
        _stored(wl.resource_slice_manifest(wl.DRA_DRIVER, n["metadata"]["name"], 1), f"s{i}")
        for i, n in enumerate(nodes)
    ]
    classes = [_stored(wl.device_class_manifest("dra/templates/deviceclass.yaml"), "class")]
    init = [_stored(wl.init_claim_manifest(i), f"claim-{i}") for i in range(claims)]
    everywhere = list(init)
    if taken is not None:
        everywhere.append(taken)
    return _FakeApi(
        {
            "/api/v1/nodes": nodes,
            dra.SLICES: slices,
            dra.CLASSES: classes,
            dra.claims_path("init"): init,
            f"{dra.RESOURCE}/resourceclaims": everywhere,
        }
    )


def test_alloc_resource_claims_writes_each_allocation_on_distinct_devices() -> None:
    api = _allocation_api(2)
    allocated = asyncio.run(dra.allocate_claims(api, "init", random.Random(1)))  # type: ignore[arg-type]
    assert allocated == 2
    assert [path for path, _ in api.replaced] == [
        f"{dra.claims_path('init')}/test-claim-{i}/status" for i in range(2)
    ]
    results = [body["status"]["allocation"]["devices"]["results"] for _, body in api.replaced]
    assert all(len(r) == 1 and r[0]["request"] == "req-0" for r in results)
    pools = {r[0]["pool"] for r in results}
    assert pools == {"scheduler-perf-dra-0", "scheduler-perf-dra-1"}  # one device per node
    assert all(r[0]["device"] == "instance-0" and r[0]["driver"] == wl.DRA_DRIVER for r in results)
    assert all("reservedFor" not in body["status"] for _, body in api.replaced)


def test_alloc_resource_claims_fails_when_a_claim_fits_nowhere() -> None:
    """A claim of another namespace already holds one of the two devices."""
    other = _stored(wl.init_claim_manifest(9), "other")
    other["metadata"]["namespace"] = "elsewhere"
    other["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "req-0",
                        "driver": wl.DRA_DRIVER,
                        "pool": "scheduler-perf-dra-0",
                        "device": "instance-0",
                    }
                ]
            }
        }
    }
    api = _allocation_api(2, taken=other)
    with pytest.raises(dra.AllocationFailed, match="init/test-claim-1"):
        asyncio.run(dra.allocate_claims(api, "init"))  # type: ignore[arg-type]
    (written,) = api.replaced
    result = written[1]["status"]["allocation"]["devices"]["results"][0]
    assert result["pool"] == "scheduler-perf-dra-1"


def test_dra_workloads_run_the_clusters_controllers(tmp_path: Path) -> None:
    """scheduler_perf starts the resourceclaim controller for its DRA tests; the other shapes
    keep a cluster without controllers."""
    options = RunOptions(workdir=tmp_path, command=("aiosched",))
    dra_run = WorkloadRun(WORKLOADS["SchedulingWithResourceClaimTemplate/fast"], options)
    basic = WorkloadRun(WORKLOADS["SchedulingBasic/5Nodes"], options)
    assert dra_run.cluster is not None and basic.cluster is not None
    assert "--no-controllers" not in dra_run.cluster.argv
    assert "--no-controllers" in basic.cluster.argv
    assert "--dra-devices" not in dra_run.cluster.argv  # the bench's driver, not kubesim's


def test_a_steady_state_is_ok_once_a_pod_was_scheduled() -> None:
    w = WORKLOADS["SteadyStateClusterResourceClaimTemplate/fast"]
    result = BenchResult(w, scheduled=308)
    assert result.ok and result.measured_pods == 308 and result.steady_seconds == 2.0
    assert result.to_json()["pods"] == 308
    assert result.to_json()["steady_state_seconds"] == 2.0
    assert "308 in 2s" in format_table([result]).splitlines()[2]
    assert not BenchResult(w).ok  # upstream: "no pod at all got scheduled"
    other = BenchResult(WORKLOADS["SchedulingWithResourceClaimTemplate/fast"], scheduled=10)
    assert other.ok and other.to_json()["steady_state_seconds"] is None


@pytest.mark.e2e
def test_scheduling_with_resource_claim_template_fast_end_to_end(tmp_path: Path) -> None:
    """Two nodes (one with the driver's 10 devices), 10 pods each with a claim from the
    template: every pod bound, its claim allocated by the scheduler's DynamicResources."""
    out = tmp_path / "out.json"
    argv = ["bench", "SchedulingWithResourceClaimTemplate/fast", "--json", str(out)]
    argv += ["--timeout", "60", "--workdir", str(tmp_path / "work")]
    proc = subprocess.run(
        [*aiosched_command(), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    (result,) = orjson.loads(out.read_bytes())
    assert result["error"] is None
    assert result["scheduled"] == result["pods"] == 10
    # each pod's claim: allocated and reserved by the scheduler (PUT status) and its finalizer
    requests = result["scheduler_requests_per_pod"]
    assert requests["PUT resourceclaims/status"] >= 1
    assert requests["POST pods/binding"] == 1
