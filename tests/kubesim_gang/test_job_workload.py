"""The Job controller's Workload and PodGroup (upstream's job_scheduling_manager.go), driven
through an in-process kubesim: created for a new Job with the WorkloadWithJob gate on, wired into
the pods, left alone without the gate, for a Job that brings its own PodGroup, and for a Job that
another controller owns; the PodGroup's status subresource."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from kubesim.cluster import Cluster, ClusterConfig
from kubesim.controllers.job_workload import pod_group_name, workload_name
from kubesim.controllers.options import ControllerOptions
from kubesim.resources import ResourceType, lookup

NS = "default"


def _resource(group: str, version: str, plural: str) -> ResourceType:
    found = lookup(group, version, plural)
    assert found is not None
    return found


PODS = _resource("", "v1", "pods")
JOBS = _resource("batch", "v1", "jobs")
WORKLOADS = _resource("scheduling.k8s.io", "v1beta1", "workloads")
POD_GROUPS = _resource("scheduling.k8s.io", "v1beta1", "podgroups")


@asynccontextmanager
async def cluster_with(gate: bool) -> AsyncIterator[Cluster]:
    cluster = Cluster(
        ClusterConfig(
            nodes=1,
            tls=False,
            controllers=ControllerOptions(workload_with_job=gate, job_duration=60.0),
        )
    )
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


async def eventually(check: Callable[[], Any], timeout: float = 5.0) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = check()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not reached within {timeout}s: {check}")
        await asyncio.sleep(0.01)


def job(name: str, parallelism: int = 2, pod_spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "template": {
                "spec": pod_spec
                or {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
            },
        },
    }


def items(cluster: Cluster, resource: ResourceType) -> list[dict[str, Any]]:
    return list(cluster.store.items(resource.storage_key, NS))


def job_pods(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    return [
        p
        for p in items(cluster, PODS)
        if (p["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name") == name
    ]


async def test_new_job_gets_a_workload_and_pod_group_its_pods_name() -> None:
    async with cluster_with(gate=True) as cluster:
        created = await cluster.api.create(JOBS, NS, job("train"))
        pods = await eventually(
            lambda: len(job_pods(cluster, "train")) == 2 and job_pods(cluster, "train")
        )
        [workload] = items(cluster, WORKLOADS)
        [group] = items(cluster, POD_GROUPS)
        assert workload["metadata"]["name"] == workload_name(created)
        assert workload["spec"] == {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
            "podGroupTemplates": [{"name": "train-pgt-0", "schedulingPolicy": {"basic": {}}}],
        }
        [owner] = workload["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("Job", "train", True)
        assert group["metadata"]["name"] == pod_group_name(
            workload["metadata"]["name"], "train-pgt-0"
        )
        assert group["spec"]["workloadRef"] == {
            "workloadName": workload["metadata"]["name"],
            "templateName": "train-pgt-0",
        }
        assert group["spec"]["schedulingPolicy"] == {"basic": {}}
        assert group["spec"]["disruptionMode"] == {"single": {}}  # the API's default
        owners = [
            (r["kind"], r.get("controller", False)) for r in group["metadata"]["ownerReferences"]
        ]
        assert owners == [("Job", True), ("Workload", False)]
        assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {
            group["metadata"]["name"]
        }


async def test_without_the_gate_jobs_schedule_pod_by_pod() -> None:
    async with cluster_with(gate=False) as cluster:
        await cluster.api.create(JOBS, NS, job("plain"))
        pods = await eventually(
            lambda: len(job_pods(cluster, "plain")) == 2 and job_pods(cluster, "plain")
        )
        assert items(cluster, WORKLOADS) == [] and items(cluster, POD_GROUPS) == []
        assert all("schedulingGroup" not in p["spec"] for p in pods)


async def test_a_job_bringing_its_own_pod_group_is_left_alone() -> None:
    async with cluster_with(gate=True) as cluster:
        await cluster.api.create(
            POD_GROUPS,
            NS,
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": "gang", "namespace": NS},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
            },
        )
        await cluster.api.create(
            JOBS,
            NS,
            job(
                "byo",
                pod_spec={
                    "restartPolicy": "Never",
                    "schedulingGroup": {"podGroupName": "gang"},
                    "containers": [{"name": "c", "image": "busybox"}],
                },
            ),
        )
        pods = await eventually(
            lambda: len(job_pods(cluster, "byo")) == 2 and job_pods(cluster, "byo")
        )
        assert items(cluster, WORKLOADS) == []
        assert [g["metadata"]["name"] for g in items(cluster, POD_GROUPS)] == ["gang"]
        assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {"gang"}


async def test_a_job_another_controller_owns_gets_nothing() -> None:
    async with cluster_with(gate=True) as cluster:
        owned = job("child")
        owned["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "name": "parent",
                "uid": "1234",
                "controller": True,
            }
        ]
        await cluster.api.create(JOBS, NS, owned)
        await eventually(lambda: len(job_pods(cluster, "child")) == 2)
        assert items(cluster, WORKLOADS) == [] and items(cluster, POD_GROUPS) == []


async def test_pod_group_status_is_written_through_its_subresource_only() -> None:
    async with cluster_with(gate=False) as cluster:
        group = await cluster.api.create(
            POD_GROUPS,
            NS,
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": "g", "namespace": NS},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
                "status": {
                    "conditions": [
                        {
                            "type": "Ignored",
                            "status": "True",
                            "reason": "Set",
                            "lastTransitionTime": "2026-01-01T00:00:00Z",
                        }
                    ]
                },
            },
        )
        assert "status" not in group  # PrepareForCreate resets it
        condition = {
            "type": "PodGroupInitiallyScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/1 nodes are available",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        with_status = {**group, "status": {"conditions": [condition]}}
        after_update = await cluster.api.update(POD_GROUPS, NS, "g", with_status)
        assert "status" not in after_update  # the main resource ignores status
        written = await cluster.api.update(
            POD_GROUPS, NS, "g", {**after_update, "status": {"conditions": [condition]}}, "status"
        )
        assert written["status"]["conditions"] == [condition]
