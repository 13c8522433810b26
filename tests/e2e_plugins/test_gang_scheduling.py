"""Gang scheduling end to end: `aiosched cluster` (serving scheduling.k8s.io/v1beta1 PodGroups as
kube-apiserver v1.37 does) and `aiosched run --feature-gates GenericWorkload=true,
GangScheduling=true` with GangScheduling enabled in the profile (it is not a default plugin),
as separate processes, driven with kubectl as a user would.

Every node takes one 3-CPU member (4 CPUs each), so "n nodes" means "n members fit".
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from processes import (
    Kubectl,
    aiosched,
    node_manifest,
    pod_manifest,
    start_cluster,
    start_scheduler,
    stopping,
    wait_nodes_cached,
    wait_until,
)

pytestmark = pytest.mark.e2e

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: GangScheduling
"""
GATES = "GenericWorkload=true,GangScheduling=true"


def _pod_group(name: str, min_count: int) -> str:
    return f"""
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {{name: {name}}}
spec:
  schedulingPolicy: {{gang: {{minCount: {min_count}}}}}
---"""


def _gang(group: str, count: int) -> tuple[list[str], str]:
    """`count` 3-CPU pods naming `group` in spec.schedulingGroup, and the manifest."""
    names = [f"{group}-{i}" for i in range(count)]
    manifest = _pod_group(group, count) + "".join(
        pod_manifest(name, "3", f"  schedulingGroup: {{podGroupName: {group}}}") for name in names
    )
    return names, manifest


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kubectl, str]]:
    workdir: Path = tmp_path_factory.mktemp("gang")
    api = start_cluster(workdir)
    with stopping(api):
        kubectl = Kubectl(workdir)
        scheduler = start_scheduler(workdir, CONFIG, "--feature-gates", GATES)
        with stopping(scheduler):
            yield kubectl, scheduler.url


def _pods(kubectl: Kubectl, names: list[str]) -> dict[str, dict[str, Any]]:
    items = kubectl.json("pods")["items"]
    return {p["metadata"]["name"]: p for p in items if p["metadata"]["name"] in names}


def _bound(kubectl: Kubectl, names: list[str]) -> dict[str, str]:
    return {
        name: pod["spec"]["nodeName"]
        for name, pod in _pods(kubectl, names).items()
        if pod["spec"].get("nodeName")
    }


def _pod_condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    for condition in pod.get("status", {}).get("conditions") or ():
        if condition["type"] == "PodScheduled":
            return dict(condition)
    return None


def _group_condition(kubectl: Kubectl, group: str) -> dict[str, Any] | None:
    obj = kubectl.json("podgroups.scheduling.k8s.io", group)
    for condition in obj.get("status", {}).get("conditions") or ():
        if condition["type"] == "PodGroupInitiallyScheduled":
            return dict(condition)
    return None


def _delete_pods(kubectl: Kubectl, names: list[str]) -> None:
    kubectl("delete", "pod", *names, "--wait=true", "--grace-period=0", "--force", check=False)


def test_a_gang_of_four_where_three_fit_binds_none_then_all_once_a_node_is_added(
    cluster: tuple[Kubectl, str],
) -> None:
    kubectl, scheduler_url = cluster
    kubectl.apply("".join(node_manifest(f"n{i}", "4") for i in range(3)))
    wait_nodes_cached(scheduler_url, 3)
    names, manifest = _gang("train", 4)
    kubectl.apply(manifest)

    def all_refused() -> bool:
        pods = _pods(kubectl, names)
        return len(pods) == 4 and all(
            (c := _pod_condition(p)) is not None and c["status"] == "False" for p in pods.values()
        )

    wait_until(all_refused, timeout=10, what="every member refused")
    assert _bound(kubectl, names) == {}
    messages = {name: _pod_condition(p) for name, p in _pods(kubectl, names).items()}
    reasons = {c["reason"] for c in messages.values() if c}
    texts = {c["message"] for c in messages.values() if c}
    # Three fitted and say why the group did not; the fourth says why it did not fit.
    assert reasons == {"Unschedulable"}
    assert texts == {
        "minCount (4) cannot be satisfied: 3 scheduled, 0 remaining",
        "0/3 nodes are available: 3 Insufficient cpu.",
    }
    condition = wait_until(
        lambda: _group_condition(kubectl, "train"), timeout=5, what="the PodGroup condition"
    )
    assert condition["status"] == "False"
    assert condition["reason"] == "Unschedulable"
    assert condition["message"] == "minCount (4) cannot be satisfied: 3 scheduled, 0 remaining"
    assert _bound(kubectl, names) == {}

    started = time.monotonic()
    kubectl.apply(node_manifest("n3", "4"))
    wait_until(lambda: len(_bound(kubectl, names)) == 4, timeout=10, what="all four bound")
    assert time.monotonic() - started < 10
    assert len(set(_bound(kubectl, names).values())) == 4
    condition = wait_until(
        lambda: (c := _group_condition(kubectl, "train")) and c["status"] == "True" and c,
        timeout=5,
        what="PodGroupInitiallyScheduled=True",
    )
    assert condition["reason"] == "Scheduled"
    _delete_pods(kubectl, names)


def test_two_gangs_where_one_fits_at_a_time_run_one_after_the_other(
    cluster: tuple[Kubectl, str],
) -> None:
    kubectl, scheduler_url = cluster
    # The previous test left four free nodes: one gang of four fits, not two.
    wait_until(
        lambda: not _pods(kubectl, [f"train-{i}" for i in range(4)]),
        timeout=10,
        what="the first test's pods gone",
    )
    wait_nodes_cached(scheduler_url, 4)
    blue, blue_manifest = _gang("blue", 4)
    red, red_manifest = _gang("red", 4)
    kubectl.apply(blue_manifest + red_manifest)

    def one_gang_placed() -> bool:
        counts = sorted([len(_bound(kubectl, blue)), len(_bound(kubectl, red))])
        return counts == [0, 4]

    wait_until(one_gang_placed, timeout=10, what="one gang placed")
    first, second = (blue, red) if len(_bound(kubectl, blue)) == 4 else (red, blue)
    second_group = second[0].rsplit("-", 1)[0]
    # The other waits, holding nothing: none of its members is bound, each says why.
    wait_until(
        lambda: all(
            (c := _pod_condition(p)) is not None and c["status"] == "False"
            for p in _pods(kubectl, second).values()
        ),
        timeout=10,
        what="the waiting gang's members refused",
    )
    time.sleep(1.0)
    assert _bound(kubectl, second) == {}
    condition = _group_condition(kubectl, second_group)
    assert condition is not None and condition["reason"] == "Unschedulable"

    # The first gang's pods go away: the second runs.
    _delete_pods(kubectl, first)
    wait_until(lambda: len(_bound(kubectl, second)) == 4, timeout=15, what="the second gang bound")
    _delete_pods(kubectl, second)


def test_lowering_a_gangs_min_count_lets_its_waiting_members_bind(
    cluster: tuple[Kubectl, str],
) -> None:
    """v1.37's elastic gangs: spec.schedulingPolicy.gang.minCount is mutable (kubesim allows the
    update as kube-apiserver does) and GangScheduling's hint requeues the members a lowered
    minCount may admit (gangscheduling.go's isSchedulableAfterPodGroupUpdated)."""
    kubectl, scheduler_url = cluster
    wait_nodes_cached(scheduler_url, 4)
    names = [f"elastic-{i}" for i in range(3)]
    wait_until(
        lambda: not _pods(kubectl, [f"{c}-{i}" for c in ("blue", "red") for i in range(4)]),
        timeout=15,
        what="the previous test's pods gone",
    )
    manifest = _pod_group("elastic", 4) + "".join(
        pod_manifest(name, "3", "  schedulingGroup: {podGroupName: elastic}") for name in names
    )
    kubectl.apply(manifest)
    time.sleep(1.0)  # three of four: they wait in PreEnqueue for a fourth
    assert _bound(kubectl, names) == {}
    kubectl(
        "patch",
        "podgroups.scheduling.k8s.io",
        "elastic",
        "--type=merge",
        "-p",
        '{"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}}',
    )
    wait_until(lambda: len(_bound(kubectl, names)) == 3, timeout=15, what="three members bound")
    _delete_pods(kubectl, names)


# -- topology-aware placement (TopologyAwareWorkloadScheduling) ------------------------------

TOPOLOGY_SCHEDULER = "topology-scheduler"
TOPOLOGY_CONFIG = CONFIG.replace("default-scheduler", TOPOLOGY_SCHEDULER)
TOPOLOGY_GATES = GATES + ",TopologyAwareWorkloadScheduling=true"
ZONE = "topology.kubernetes.io/zone"


@pytest.fixture(scope="module")
def topology_scheduler(
    cluster: tuple[Kubectl, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A second scheduler on the same cluster, with the gate on, for its own schedulerName."""
    kubectl, _ = cluster
    workdir: Path = tmp_path_factory.mktemp("gang-topology")
    (workdir / "kubeconfig").write_text(kubectl.kubeconfig.read_text())
    scheduler = start_scheduler(workdir, TOPOLOGY_CONFIG, "--feature-gates", TOPOLOGY_GATES)
    with stopping(scheduler):
        yield scheduler.url


def test_a_topology_constrained_gang_lands_in_one_zone(
    cluster: tuple[Kubectl, str], topology_scheduler: str
) -> None:
    kubectl, _ = cluster
    # Zone a takes two 3-CPU members, zone b three: only zone b holds the gang of three, which
    # the unlabelled nodes the earlier tests left (and zone a) would otherwise share.
    kubectl.apply(
        "".join(node_manifest(f"za{i}", "4", labels=f", {ZONE}: a") for i in range(2))
        + "".join(node_manifest(f"zb{i}", "4", labels=f", {ZONE}: b") for i in range(3))
    )
    wait_nodes_cached(topology_scheduler, 5)
    names = [f"ring-{i}" for i in range(3)]
    group = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: ring}
spec:
  schedulingPolicy: {gang: {minCount: 3}}
  schedulingConstraints: {topology: [{key: topology.kubernetes.io/zone}]}
---"""
    extra = f"  schedulingGroup: {{podGroupName: ring}}\n  schedulerName: {TOPOLOGY_SCHEDULER}"
    kubectl.apply(group + "".join(pod_manifest(name, "3", extra) for name in names))
    wait_until(lambda: len(_bound(kubectl, names)) == 3, timeout=15, what="the gang bound")
    assert sorted(_bound(kubectl, names).values()) == ["zb0", "zb1", "zb2"]
    condition = wait_until(
        lambda: (c := _group_condition(kubectl, "ring")) and c["status"] == "True" and c,
        timeout=5,
        what="PodGroupInitiallyScheduled=True",
    )
    assert condition["reason"] == "Scheduled"
    _delete_pods(kubectl, names)


def test_aiosched_explain_of_a_member_says_which_member_blocks_the_quorum(
    cluster: tuple[Kubectl, str], topology_scheduler: str
) -> None:
    kubectl, _ = cluster
    names = [f"wide-{i}" for i in range(4)]
    wait_until(
        lambda: not _pods(kubectl, [f"ring-{i}" for i in range(3)]),
        timeout=10,
        what="the previous test's pods gone",
    )
    # No zone holds four 3-CPU members (the previous test's zones: a two, b three).
    group = """
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: wide}
spec:
  schedulingPolicy: {gang: {minCount: 4}}
  schedulingConstraints: {topology: [{key: topology.kubernetes.io/zone}]}
---"""
    extra = f"  schedulingGroup: {{podGroupName: wide}}\n  schedulerName: {TOPOLOGY_SCHEDULER}"
    kubectl.apply(group + "".join(pod_manifest(name, "3", extra) for name in names))
    wait_until(
        lambda: (
            all(
                (c := _pod_condition(p)) is not None and c["status"] == "False"
                for p in _pods(kubectl, names).values()
            )
            and len(_pods(kubectl, names)) == 4
        ),
        timeout=10,
        what="every member refused",
    )
    address = topology_scheduler.removeprefix("http://")
    command = [*aiosched(), "explain", "default/wide-0", "--http-address", address,
               "--insecure-http"]  # fmt: skip
    result = subprocess.run([*command, "-o", "json"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    section = json.loads(result.stdout)["podGroup"]
    assert section["name"] == "wide" and section["result"] == "unschedulable"
    assert section["message"].startswith(
        "0/2 placements are available, first placement status: minCount (4) cannot be satisfied"
    )
    assert section["placementFeasible"]["code"] == "Unschedulable"
    blocking = section["blockingMember"]
    assert blocking["message"] == "0/2 nodes are available: 2 Insufficient cpu."
    assert [g["plugin"] for g in blocking["filterVerdicts"]] == ["NodeResourcesFit"]
    text = subprocess.run(command, capture_output=True, text=True, timeout=30).stdout
    assert f"Blocking the quorum: {blocking['pod']}:" in text
    _delete_pods(kubectl, names)


# -- workload-aware preemption (WorkloadAwarePreemption) --------------------------------------

PREEMPTING_SCHEDULER = "preempting-scheduler"
PREEMPTING_CONFIG = CONFIG.replace("default-scheduler", PREEMPTING_SCHEDULER)
PREEMPTING_GATES = GATES + ",WorkloadAwarePreemption=true"


@pytest.fixture(scope="module")
def preempting_scheduler(
    cluster: tuple[Kubectl, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A scheduler with WorkloadAwarePreemption on, for its own schedulerName."""
    kubectl, _ = cluster
    workdir: Path = tmp_path_factory.mktemp("gang-preemption")
    (workdir / "kubeconfig").write_text(kubectl.kubeconfig.read_text())
    scheduler = start_scheduler(workdir, PREEMPTING_CONFIG, "--feature-gates", PREEMPTING_GATES)
    with stopping(scheduler):
        yield scheduler.url


def _preempting_pods(names: list[str], cpu: str, extra: str) -> str:
    spec = f'  schedulerName: {PREEMPTING_SCHEDULER}\n  nodeSelector: {{wap: "yes"}}\n{extra}'
    return "".join(pod_manifest(name, cpu, spec) for name in names)


def _group_with_priority(name: str, min_count: int, priority_class: str, mode: str = "") -> str:
    """A PodGroup whose spec.priority kubesim's priority admission fills from its class."""
    disruption = f"\n  disruptionMode: {{{mode}: {{}}}}" if mode else ""
    return f"""
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {{name: {name}}}
spec:
  schedulingPolicy: {{gang: {{minCount: {min_count}}}}}
  priorityClassName: {priority_class}{disruption}
---"""


def test_a_higher_priority_gang_preempts_lower_priority_pods_and_binds_every_member(
    cluster: tuple[Kubectl, str], preempting_scheduler: str
) -> None:
    kubectl, _ = cluster
    kubectl.apply(
        """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: wap-low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: wap-high}
value: 1000
---"""
        + "".join(node_manifest(f"wap-{i}", "4", labels=', wap: "yes"') for i in range(2))
    )
    wait_nodes_cached(preempting_scheduler, 2)
    # Four 2-CPU low-priority pods fill both 4-CPU nodes.
    low = [f"low-{i}" for i in range(4)]
    kubectl.apply(_preempting_pods(low, "2", "  priorityClassName: wap-low"))
    wait_until(lambda: len(_bound(kubectl, low)) == 4, timeout=10, what="the low pods bound")
    # A gang of two 3-CPU members fits only once both pods on each node are gone.
    members = [f"urgent-{i}" for i in range(2)]
    extra = "  priorityClassName: wap-high\n  schedulingGroup: {podGroupName: urgent}"
    kubectl.apply(
        _group_with_priority("urgent", 2, "wap-high") + _preempting_pods(members, "3", extra)
    )
    wait_until(lambda: len(_bound(kubectl, members)) == 2, timeout=15, what="the gang bound")
    assert sorted(_bound(kubectl, members).values()) == ["wap-0", "wap-1"]
    assert _pods(kubectl, low) == {}  # every victim deleted
    events = kubectl.json("events")["items"]
    preempted = {
        e["involvedObject"]["name"]: e["message"] for e in events if e.get("reason") == "Preempted"
    }
    uid = kubectl.json("podgroups.scheduling.k8s.io", "urgent")["metadata"]["uid"]
    assert preempted == dict.fromkeys(low, f"Preempted by podgroup {uid} on node cluster")


def test_a_gang_below_everything_running_stays_pending_and_says_why(
    cluster: tuple[Kubectl, str], preempting_scheduler: str
) -> None:
    kubectl, _ = cluster
    # The previous test's gang holds 3 of the 4 CPUs of both nodes, at priority 1000.
    members = [f"humble-{i}" for i in range(2)]
    extra = "  schedulingGroup: {podGroupName: humble}"
    humble_class = (
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
        "metadata: {name: wap-humble}\nvalue: 5\n---"
    )
    kubectl.apply(
        humble_class
        + _group_with_priority("humble", 2, "wap-humble")
        + _preempting_pods(members, "3", extra)
    )
    condition = wait_until(
        lambda: (c := _group_condition(kubectl, "humble")) and c["status"] == "False" and c,
        timeout=10,
        what="the PodGroup condition",
    )
    assert condition["reason"] == "Unschedulable"
    assert condition["message"] == (
        "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, "
        "pod group preemption: No preemption victims found for incoming preemptor"
    )
    time.sleep(0.5)
    assert _bound(kubectl, members) == {}
    assert len(_bound(kubectl, ["urgent-0", "urgent-1"])) == 2  # nobody was preempted
    _delete_pods(kubectl, [*members, "urgent-0", "urgent-1"])


def test_a_single_pod_preempting_one_member_of_an_all_mode_gang_deletes_the_whole_gang(
    cluster: tuple[Kubectl, str], preempting_scheduler: str
) -> None:
    kubectl, _ = cluster
    # A low-priority gang whose disruptionMode is all: one 3-CPU member on each 4-CPU node.
    members = [f"unit-{i}" for i in range(2)]
    extra = "  priorityClassName: wap-low\n  schedulingGroup: {podGroupName: unit}"
    kubectl.apply(
        _group_with_priority("unit", 2, "wap-low", mode="all")
        + _preempting_pods(members, "3", extra)
    )
    wait_until(lambda: len(_bound(kubectl, members)) == 2, timeout=10, what="the gang bound")
    # A single high-priority pod needs one node: preempting one member takes both.
    kubectl.apply(_preempting_pods(["solo"], "3", "  priorityClassName: wap-high"))
    wait_until(lambda: _pods(kubectl, members) == {}, timeout=10, what="the whole gang deleted")
    wait_until(lambda: len(_bound(kubectl, ["solo"])) == 1, timeout=10, what="the pod bound")
    _delete_pods(kubectl, ["solo"])
