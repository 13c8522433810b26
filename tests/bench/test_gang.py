"""The gang shapes (issue 25): upstream's GangScheduling cases
(test/integration/scheduler_perf/podgroup/gangscheduling/), their PodGroups and members, the
gates and profile the scheduler gets, the groups/s and time-to-placement measurements, and one
small run end to end."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench import gang
from bench import workloads as wl
from bench.processes import aiosched_command
from bench.results import BenchResult, format_table
from bench.runner import RunOptions, WorkloadRun, feature_gates_args, scheduler_config_for
from bench.stats import LatencySummary
from bench.workloads import WORKLOADS
from kubesim.defaults import apply_defaults
from kubesim.validation import validate

# (name, initNodes, initPodGroups, podsPerGroup): performance-config.yaml's cases without the
# _CompositePodGroupEnabled twins (a gate aiosched does not have); no case sets a threshold
UPSTREAM_CASES = [
    ("GangScheduling/10Nodes_3Gangs", 10, 3, 3),
    ("GangScheduling/100Nodes_10Gangs", 100, 10, 3),
    ("GangScheduling/5000Nodes_1000Gangs_3000Pods", 5000, 1000, 3),
    ("GangScheduling/5000Nodes_2000Gangs_6000Pods", 5000, 2000, 3),
    ("GangScheduling/5000Nodes_3000Gangs_9000Pods", 5000, 3000, 3),
    ("GangScheduling/5000Nodes_3Gangs_3000Pods_1000PerGroup", 5000, 3, 1000),
    ("GangScheduling/5000Nodes_6Gangs_6000Pods_1000PerGroup", 5000, 6, 1000),
    ("GangScheduling/5000Nodes_9Gangs_9000Pods_1000PerGroup", 5000, 9, 1000),
    ("GangScheduling/5000Nodes_10Gangs_50000Pods_5000PerGroup", 5000, 10, 5000),
]


def test_every_gang_case_is_upstreams_and_no_other() -> None:
    ported = sorted(name for name, w in WORKLOADS.items() if w.gang is not None)
    assert ported == sorted(case[0] for case in UPSTREAM_CASES)
    assert not any("CompositePodGroup" in name for name in WORKLOADS)


@pytest.mark.parametrize(("name", "nodes", "groups", "per_group"), UPSTREAM_CASES)
def test_gang_case_has_upstreams_params(name: str, nodes: int, groups: int, per_group: int) -> None:
    w = WORKLOADS[name]
    assert w.gang == wl.GangSetup(groups, per_group)
    assert (w.init_nodes, w.init_pods, w.measure_pods) == (nodes, 0, groups * per_group)
    assert w.threshold is None
    assert w.source == "podgroup/gangscheduling/performance-config.yaml"
    assert w.namespaces == ("gang-ns-0",)  # createNamespaces prefix gang-ns, count 1
    assert w.node_template == wl.NODE  # createNodes without a template: node-default.yaml


def test_members_are_gang_pod_yaml_naming_their_group() -> None:
    w = WORKLOADS["GangScheduling/10Nodes_3Gangs"]
    pod = wl.pod_manifest(w, 4, measured=True)
    assert pod["metadata"] == {"name": "test-gang-scheduling-4", "namespace": "gang-ns-0"}
    assert pod["spec"] == {
        "schedulingGroup": {"podGroupName": "gang-1"},  # DivideInt 4 3
        "containers": [
            {
                "image": "registry.k8s.io/pause:3.10.1",
                "name": "pause",
                "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}},
            }
        ],
    }
    groups = [wl.gang_member_group(w, i) for i in range(w.measure_pods)]
    assert groups == ["gang-0"] * 3 + ["gang-1"] * 3 + ["gang-2"] * 3


def test_pod_group_is_podgroup_yaml() -> None:
    w = WORKLOADS["GangScheduling/5000Nodes_3Gangs_3000Pods_1000PerGroup"]
    assert wl.pod_group_manifest(w, 2) == {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "gang-2", "namespace": "gang-ns-0"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 1000}}},
    }


def test_every_gang_object_validates() -> None:
    w = WORKLOADS["GangScheduling/10Nodes_3Gangs"]
    objects = [
        ("Node", wl.node_manifest(w, 0)),
        ("PodGroup", wl.pod_group_manifest(w, 0)),
        ("Pod", wl.pod_manifest(w, 0, measured=True)),
    ]
    for kind, obj in objects:
        apply_defaults(kind, obj)  # as the API server does before validating a create
        assert validate(kind, obj, None) == [], (kind, obj)


def test_the_scheduler_gets_the_gates_and_the_plugin() -> None:
    from profiles.load import parse_text

    w = WORKLOADS["GangScheduling/10Nodes_3Gangs"]
    assert feature_gates_args(w) == ["--feature-gates", "GenericWorkload=true,GangScheduling=true"]
    assert feature_gates_args(WORKLOADS["SchedulingBasic/5Nodes"]) == []
    spec = parse_text(scheduler_config_for(w))
    (profile,) = spec.profiles
    assert profile.plugins is not None
    assert "GangScheduling" in [p.name for p in profile.plugins.multi_point.enabled]
    assert spec.client_connection.qps == 5000

    run = WorkloadRun(w, RunOptions(workdir=Path("/nonexistent"), scheduler_args=("--v=2",)))
    argv = run.scheduler.argv
    at = argv.index("--feature-gates")
    assert argv[at + 1] == "GenericWorkload=true,GangScheduling=true"
    assert argv.index("--v=2") > at  # the user's arguments come last and win
    assert run.cluster is not None and "--no-controllers" in run.cluster.argv

    command = ("sched", "--gates={feature_gates}", "--config={config}")
    other = WorkloadRun(w, RunOptions(workdir=Path("/w"), scheduler_command=command))
    assert other.scheduler.argv[1] == "--gates=GenericWorkload=true,GangScheduling=true"


class _FakeApi:
    def __init__(self) -> None:
        self.created: list[tuple[str, dict[str, Any]]] = []

    async def create(self, path: str, body: bytes, *, exist_ok: bool = False) -> dict[str, Any]:
        self.created.append((path, orjson.loads(body)))
        return {}


def test_create_pod_groups_creates_each_group_once() -> None:
    w = WORKLOADS["GangScheduling/100Nodes_10Gangs"]
    api = _FakeApi()
    asyncio.run(gang.create_pod_groups(api, w, 4))  # type: ignore[arg-type]
    paths = {path for path, _ in api.created}
    assert paths == {"/apis/scheduling.k8s.io/v1beta1/namespaces/gang-ns-0/podgroups"}
    names = sorted((body["metadata"]["name"] for _, body in api.created), key=lambda n: int(n[5:]))
    assert names == [f"gang-{i}" for i in range(10)]


def _times(w: wl.Workload, created: list[float], bound: list[float | None]) -> gang.GangPlacement:
    created_at = {wl.gang_pod_name(i): at for i, at in enumerate(created)}
    bound_at = {wl.gang_pod_name(i): at for i, at in enumerate(bound) if at is not None}
    return gang.measure_gangs(w, created_at, bound_at, first_created=min(created))


def test_time_to_full_placement_runs_from_first_create_to_last_bind() -> None:
    w = WORKLOADS["GangScheduling/10Nodes_3Gangs"]
    placement = _times(
        w,
        created=[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
        bound=[0.5, 0.5, 0.6, 1.0, 1.2, 1.1, 2.0, 2.0, 2.0],
    )
    # gang-0: 0.0 -> 0.6, gang-1: 0.3 -> 1.2, gang-2: 0.6 -> 2.0
    assert placement.groups == placement.placed == 3
    summary = placement.time_to_placement
    assert summary is not None
    assert (summary.p50, summary.p90, summary.p99) == pytest.approx((0.9, 1.4, 1.4))
    assert placement.groups_per_second == pytest.approx(3 / 2.0)
    assert placement.to_json() == {
        "groups": 3,
        "placed": 3,
        "groups_per_second": 1.5,
        "time_to_placement_seconds": summary.to_json(),
    }


def test_a_group_with_a_member_unbound_is_not_placed() -> None:
    w = WORKLOADS["GangScheduling/10Nodes_3Gangs"]
    placement = _times(w, created=[0.0] * 9, bound=[1.0, 1.0, 1.0, 1.0, None, 1.0] + [None] * 3)
    assert (placement.groups, placement.placed) == (3, 1)
    nothing = _times(w, created=[0.0] * 9, bound=[None] * 9)
    assert (nothing.placed, nothing.groups_per_second, nothing.time_to_placement) == (0, None, None)


def test_json_and_table_report_the_gangs() -> None:
    w = WORKLOADS["GangScheduling/10Nodes_3Gangs"]
    placement = gang.GangPlacement(3, 3, 12.5, LatencySummary(0.1, 0.2, 0.3))
    result = BenchResult(w, scheduled=9, gangs=placement)
    assert result.to_json()["gangs"] == placement.to_json()
    table = format_table([result])
    header, row = table.split("\n\n")[-1].splitlines()
    assert header.split() == ["gang", "workload", "groups", "groups/s", "place", "p50", "place",
                              "p90", "place", "p99"]  # fmt: skip
    assert row.split() == [w.name, "3/3", "12.50", "0.100", "0.200", "0.300"]
    basic = BenchResult(WORKLOADS["SchedulingBasic/5Nodes"], scheduled=10)
    assert basic.to_json()["gangs"] is None
    assert "gang workload" not in format_table([basic])


@pytest.mark.e2e
def test_gang_scheduling_10_nodes_3_gangs_end_to_end(tmp_path: Path) -> None:
    """Three PodGroups of three: every member bound, each group placed in one PodGroup cycle."""
    out = tmp_path / "out.json"
    work = tmp_path / "work"
    argv = ["bench", "GangScheduling/10Nodes_3Gangs", "--json", str(out)]
    argv += ["--timeout", "60", "--workdir", str(work)]
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
    assert result["scheduled"] == result["pods"] == 9
    gangs = result["gangs"]
    assert (gangs["groups"], gangs["placed"]) == (3, 3)
    assert gangs["groups_per_second"] > 0
    placement = gangs["time_to_placement_seconds"]
    assert 0 < placement["p50"] <= placement["p90"] <= placement["p99"]
    assert "gang workload" in proc.stdout
    log = (work / "GangScheduling_10Nodes_3Gangs" / "scheduler.log").read_text()
    for group in range(3):
        assert f'"Successfully scheduled a pod group" podGroup="gang-ns-0/gang-{group}"' in log
