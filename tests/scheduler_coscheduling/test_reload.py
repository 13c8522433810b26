"""A reload that enables Coscheduling starts what Coscheduling reads: the PodGroup informer, the
informer of the labelled pods and the PodGroup status controller (scheduler/cycle/scheduler.py,
_start_watching_pod_groups). Against an in-process kubesim with scheduler-plugins' PodGroup CRD;
the scheduler starts with the default profile, which has no Coscheduling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from profiles.api import load_config_text
from scheduler.cycle.profile_set import registry_for_config
from scheduler.plugins.registry import in_tree_registry
from tests.scheduler_core.harness import Harness, running_scheduler

CRD = yaml.safe_load_all(
    (Path(__file__).parents[1] / "kubesim_crd" / "podgroup_crd.yaml").read_text()
)
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"
COSCHEDULING = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled: [{name: Coscheduling}]
    queueSort:
      enabled: [{name: Coscheduling}]
      disabled: [{name: "*"}]
"""


async def _create_member(harness: Harness, name: str) -> None:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"scheduling.x-k8s.io/pod-group": "pair"}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]},
    }
    await harness.api.create("/api/v1/namespaces/default/pods", pod)


async def _scheduled_message(harness: Harness, name: str) -> str:
    pod = await harness.api.get_pod(name)
    for condition in pod.get("status", {}).get("conditions") or ():
        if condition["type"] == "PodScheduled" and condition["status"] == "False":
            return str(condition["message"])
    return ""


async def test_a_reload_enabling_coscheduling_starts_its_informers_and_controller(
    tmp_path: Path,
) -> None:
    async with running_scheduler(tmp_path) as harness:
        scheduler = harness.scheduler
        assert scheduler.pod_group_status is None
        for crd in CRD:
            if crd:
                await harness.api.create(
                    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
                )
        await harness.api.create_node("n0")
        await harness.wait_nodes_cached(1)
        config = load_config_text(COSCHEDULING, registry_for_config(in_tree_registry()))
        scheduler.swap_profiles(scheduler.build_profiles(config))
        assert scheduler.pod_group_status is not None
        await harness.api.create(
            PODGROUPS,
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "kind": "PodGroup",
                "metadata": {"name": "pair"},
                "spec": {"minMember": 2},
            },
        )

        # The status controller runs: the new group's phase is written.
        async def phase() -> str:
            status, group = await harness.api.request("GET", f"{PODGROUPS}/pair")
            assert status == 200, group
            return str((group.get("status") or {}).get("phase", ""))

        await harness.wait_for(phase, what="the PodGroup's phase")
        await harness.wait_for(
            lambda: scheduler.cluster_objects.pod_groups.get("default", "pair"),
            what="the PodGroup informed",
        )
        # One member of two: the plugin sees the group and its pods, so PreFilter refuses it
        # with upstream's message (without the informers: "PodGroup not found" at Permit).
        await _create_member(harness, "pair-0")
        message = await harness.wait_for(
            lambda: _scheduled_message(harness, "pair-0"), what="pair-0 refused"
        )
        assert message == (
            "0/1 nodes are available: pre-filter pod pair-0 cannot find enough sibling pods, "
            "current pods number: 1, minMember of group: 2. no new claims to deallocate, "
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling., "
            "PodGroup default/pair gets rejected due to Pod pair-0 is unschedulable even after "
            "PostFilter"
        )
        # The second member: both bind.
        await _create_member(harness, "pair-1")
        assert await harness.wait_bound("pair-0", timeout=20)
        assert await harness.wait_bound("pair-1", timeout=20)
