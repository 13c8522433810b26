"""scheduler-plugins' Coscheduling end to end, as its users run it: `aiosched cluster` with the
PodGroup CRD applied by kubectl from scheduler-plugins' published manifest
(tests/kubesim_crd/podgroup_crd.yaml), `aiosched run` with the configuration scheduler-plugins'
Coscheduling README documents (pkg/coscheduling/README.md; permitWaitingTimeSeconds as in
manifests/coscheduling/scheduler-config.yaml), and pods labelled
`scheduling.x-k8s.io/pod-group: <group>`, as separate processes driven with kubectl.

Every node takes one 3-CPU member (4 CPUs each), so "n nodes" means "n members fit".
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from manifests import PAUSE, to_yaml
from processes import (
    Kubectl,
    node_manifest,
    start_cluster,
    start_scheduler,
    stopping,
    wait_nodes_cached,
    wait_until,
)

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl"),
]

CRD = (Path(__file__).parents[1] / "kubesim_crd" / "podgroup_crd.yaml").read_text()

# scheduler-plugins' pkg/coscheduling/README.md "Config" (its v1beta2 apiVersion is v1 today),
# with manifests/coscheduling/scheduler-config.yaml's pluginConfig.
CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
  plugins:
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
    preFilter:
      enabled:
      - name: Coscheduling
    postFilter:
      enabled:
      - name: Coscheduling
    permit:
      enabled:
      - name: Coscheduling
    reserve:
      enabled:
      - name: Coscheduling
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
"""
# kubesim serves scheduling.k8s.io's own PodGroups as well, and kubectl resolves a bare
# "podgroups" to the built-in group first, as on any API server serving both: scheduler-plugins'
# users then name the CRD's resource in full or by its short name "pg".
PODGROUPS = "podgroups.scheduling.x-k8s.io"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
JOB_DURATION = "kubesim.io/job-duration-seconds"


def _pod_group(name: str, min_member: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member, "scheduleTimeoutSeconds": 10},
    }


def _container() -> dict[str, Any]:
    return {"name": "c", "image": PAUSE, "resources": {"requests": {"cpu": "3", "memory": "100Mi"}}}


def _member(name: str, group: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {GROUP_LABEL: group}},
        "spec": {"containers": [_container()]},
    }


def _job(name: str, group: str, parallelism: int, seconds: float) -> dict[str, Any]:
    """A Job whose pods name `group` and each run `seconds` on kubesim's simulated kubelet."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "template": {
                "metadata": {
                    "labels": {GROUP_LABEL: group},
                    "annotations": {JOB_DURATION: str(seconds)},
                },
                "spec": {"restartPolicy": "Never", "containers": [_container()]},
            },
        },
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kubectl, str]]:
    workdir: Path = tmp_path_factory.mktemp("coscheduling")
    api = start_cluster(workdir)
    with stopping(api):
        kubectl = Kubectl(workdir)
        kubectl.apply(CRD)
        scheduler = start_scheduler(workdir, CONFIG)
        with stopping(scheduler):
            yield kubectl, scheduler.url


def _pods(kubectl: Kubectl, group: str) -> dict[str, dict[str, Any]]:
    items = kubectl.json("pods", "-l", f"{GROUP_LABEL}={group}")["items"]
    return {p["metadata"]["name"]: p for p in items}


def _bound(kubectl: Kubectl, group: str) -> dict[str, str]:
    return {
        name: pod["spec"]["nodeName"]
        for name, pod in _pods(kubectl, group).items()
        if pod["spec"].get("nodeName")
    }


def _pod_condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    for condition in pod.get("status", {}).get("conditions") or ():
        if condition["type"] == "PodScheduled":
            return dict(condition)
    return None


def _status(kubectl: Kubectl, group: str) -> dict[str, Any]:
    status: dict[str, Any] = kubectl.json(PODGROUPS, group).get("status") or {}
    return status


def _columns(kubectl: Kubectl, group: str) -> dict[str, str]:
    """`kubectl get pg <group>`'s row under the CRD's printer columns (AGE left out); an empty
    cell is "" (kubectl prints nothing for a JSONPath with no value)."""
    header, row = kubectl("get", "pg", group).splitlines()[:2]
    names = header.split()
    assert names == ["NAME", "PHASE", "MINMEMBER", "RUNNING", "SUCCEEDED", "FAILED", "AGE"]
    starts = [header.index(f"{name} ") if name != "AGE" else header.rindex(name) for name in names]
    ends = [*starts[1:], len(row)]
    return {name: row[a:b].strip() for name, a, b in zip(names[:-1], starts, ends, strict=False)}


def _columns_are(
    kubectl: Kubectl, group: str, phase: str, running: str = "", succeeded: str = ""
) -> bool:
    want = {
        "NAME": group,
        "PHASE": phase,
        "MINMEMBER": "4",
        "RUNNING": running,
        "SUCCEEDED": succeeded,
        "FAILED": "",
    }
    return _columns(kubectl, group) == want


def _rejected_after_post_filter(nodes: int, group: str, pod: str) -> str:
    """What a member that fits no node says: the FitError with the PostFilter plugins'
    messages (DynamicResources, DefaultPreemption, then Coscheduling's rejection of its group),
    as kube-scheduler's RunPostFilterPlugins joins them."""
    return (
        f"0/{nodes} nodes are available: {nodes} Insufficient cpu. no new claims to deallocate, "
        f"preemption: 0/{nodes} nodes are available: {nodes} No preemption victims found for "
        f"incoming pod., PodGroup default/{group} gets rejected due to Pod {pod} is "
        "unschedulable even after PostFilter"
    )


# What a member waiting on Permit says when a sibling's PostFilter rejects the group
# (coscheduling.go PostFilter: waitingPod.Reject(..., "optimistic rejection in PostFilter")).
OPTIMISTIC_REJECTION = "optimistic rejection in PostFilter"


def _messages(kubectl: Kubectl, group: str) -> dict[str, str]:
    """Each member's PodScheduled=False message ("" while it has none)."""
    found = {}
    for name, pod in _pods(kubectl, group).items():
        condition = _pod_condition(pod)
        found[name] = condition["message"] if condition and condition["status"] == "False" else ""
    return found


def test_a_gang_of_four_where_three_fit_binds_none_then_all_once_a_node_is_added(
    cluster: tuple[Kubectl, str],
) -> None:
    kubectl, scheduler_url = cluster
    kubectl.apply("".join(node_manifest(f"n{i}", "4") for i in range(3)))
    wait_nodes_cached(scheduler_url, 3)
    names = [f"train-{i}" for i in range(4)]
    kubectl.apply(to_yaml(_pod_group("train", 4), *(_member(n, "train") for n in names)))

    def refused_as_upstream_says() -> bool:
        # Three members fitted and waited on Permit; the fourth fitted nowhere and its
        # PostFilter rejected the group, so the three were rejected too.
        messages = _messages(kubectl, "train")
        failed = [n for n, m in messages.items() if m != OPTIMISTIC_REJECTION]
        return (
            len(messages) == 4
            and len(failed) == 1
            and messages[failed[0]] == _rejected_after_post_filter(3, "train", failed[0])
        )

    wait_until(refused_as_upstream_says, timeout=15, what="every member refused")
    # The PodGroup controller's status: enough members exist, none runs.
    wait_until(
        lambda: _columns_are(kubectl, "train", "Scheduling"),
        timeout=5,
        what="the PodGroup Scheduling",
    )
    assert _status(kubectl, "train") == {"phase": "Scheduling"}
    # Sample a while: never a partial placement.
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        assert _bound(kubectl, "train") == {}
        time.sleep(0.2)

    started = time.monotonic()
    kubectl.apply(node_manifest("n3", "4"))
    wait_until(lambda: len(_bound(kubectl, "train")) == 4, timeout=10, what="all four bound")
    assert time.monotonic() - started < 10
    assert len(set(_bound(kubectl, "train").values())) == 4
    wait_until(
        lambda: _columns_are(kubectl, "train", "Running", running="4"),
        timeout=10,
        what="the PodGroup Running",
    )
    kubectl("delete", "pod", *names, "--wait=true", "--grace-period=0", "--force", check=False)


def test_two_gangs_where_one_fits_at_a_time_run_one_after_the_other(
    cluster: tuple[Kubectl, str],
) -> None:
    kubectl, scheduler_url = cluster
    wait_until(lambda: not _pods(kubectl, "train"), timeout=15, what="the first test's pods gone")
    # Four nodes (the first test added them; applying them again changes nothing): one gang
    # of four fits, not two.
    kubectl.apply("".join(node_manifest(f"n{i}", "4") for i in range(4)))
    wait_nodes_cached(scheduler_url, 4)
    kubectl.apply(to_yaml(_pod_group("blue", 4), _pod_group("red", 4)))
    # Two Jobs of four pods each, every pod running 4 s on kubesim's simulated kubelet.
    kubectl.apply(to_yaml(_job("blue", "blue", 4, 4), _job("red", "red", 4, 4)))

    def one_gang_placed() -> bool:
        counts = sorted([len(_bound(kubectl, "blue")), len(_bound(kubectl, "red"))])
        return counts == [0, 4]

    wait_until(one_gang_placed, timeout=20, what="one gang placed")
    first, second = ("blue", "red") if len(_bound(kubectl, "blue")) == 4 else ("red", "blue")
    # The other waits, holding nothing: each of its members fitted nowhere and says so.
    wait_until(
        lambda: (
            (messages := _messages(kubectl, second))
            and len(messages) == 4
            and all(
                message == _rejected_after_post_filter(4, second, name)
                for name, message in messages.items()
            )
        ),
        timeout=10,
        what="the waiting gang's members refused",
    )
    wait_until(
        lambda: _columns_are(kubectl, first, "Running", running="4"),
        timeout=10,
        what="the first PodGroup Running",
    )
    assert _columns_are(kubectl, second, "Scheduling")
    assert _status(kubectl, second)["occupiedBy"] == f"default/{second}"  # the Job

    # Until every pod of the first Job has succeeded, no pod of the second is bound.
    while not _columns_are(kubectl, first, "Finished", succeeded="4"):
        pods = kubectl.json("pods", "-l", f"{GROUP_LABEL} in (blue,red)")["items"]
        mine = [p for p in pods if p["metadata"]["labels"][GROUP_LABEL] == first]
        theirs = [p for p in pods if p["metadata"]["labels"][GROUP_LABEL] == second]
        if any(p["spec"].get("nodeName") for p in theirs):
            assert all(p["status"].get("phase") == "Succeeded" for p in mine), pods
        time.sleep(0.2)
    wait_until(lambda: len(_bound(kubectl, second)) == 4, timeout=10, what="the second bound")
    wait_until(
        lambda: _columns_are(kubectl, second, "Finished", succeeded="4"),
        timeout=20,
        what="the second PodGroup Finished",
    )
    complete = kubectl(
        "get", "job", second, "-o", "jsonpath={.status.conditions[?(@.type=='Complete')].status}"
    )
    assert complete == "True"
