"""The Job controller's Workload and PodGroup, behind the WorkloadWithJob feature gate.

Upstream: pkg/controller/job/job_scheduling_manager.go (ensureWorkloadAndPodGroup). For a Job the
gate covers, the controller creates, before the Job's first pod, one Workload (controllerRef and
controller ownerReference to the Job, a single PodGroupTemplate `<job>-pgt-0`) and one PodGroup
from that template (workloadRef to it, owned by the Job as controller and by the Workload), and
its pods name the PodGroup in spec.schedulingGroup.podGroupName. A Job is left alone when its pod
template already names a PodGroup (the user brought their own), when another controller owns it
(its parent owns the Workload), or when it has started already (isNewJob): a Job that predates
the gate keeps scheduling pod by pod. Only objects controlled by the Job are reused.

The policy is upstream's default, Basic; upstream lets a Job ask for a gang through
`spec.scheduling`, a batch/v1 field kubesim's Job schema (kubernetes_asyncio's v1.36 models) does
not have, so a gang is declared by a PodGroup the Job's pod template names.
"""

from __future__ import annotations

from typing import Any

from kubesim.api import Api
from kubesim.controllers import common as c
from kubesim.meta import Obj

WORKLOADS = "scheduling.k8s.io/workloads"
PODGROUPS = "scheduling.k8s.io/podgroups"
SCHEDULING_API_VERSION = "scheduling.k8s.io/v1beta1"
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
# k8s.io/apimachinery/pkg/util/rand: SafeEncodeString's alphabet (no vowels, no 0/1/3)
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


def _safe_encode(text: str) -> str:
    return "".join(_ALPHANUMS[ord(ch) % len(_ALPHANUMS)] for ch in text)


def _fnv32a(*parts: str) -> int:
    value = 0x811C9DC5
    for part in parts:
        for byte in part.encode():
            value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def pod_group_template_name(job: Obj) -> str:
    """podGroupTemplateName: one template per Job."""
    return f"{c.name(job)}-pgt-0"


def workload_name(job: Obj) -> str:
    """computeWorkloadName: <job name, truncated>-<hash of the Job's uid>. Upstream hashes the
    uid with DeepHashObject; kubesim hashes its text with the same FNV-32a, so names are stable
    and unique per Job but not byte-equal to upstream's."""
    digest = _safe_encode(str(_fnv32a(c.uid(job))))
    prefix = c.name(job)[: DNS1123_SUBDOMAIN_MAX_LENGTH - len(digest) - 1]
    return f"{prefix}-{digest}"


def pod_group_name(workload: str, template: str) -> str:
    """computePodGroupName: <workload>-<template>-<hash>, each part truncated to fit 253."""
    digest = _safe_encode(str(_fnv32a(workload, template)))
    available = DNS1123_SUBDOMAIN_MAX_LENGTH - len(digest) - 2
    if len(workload) + len(template) > available:
        half = available // 2
        if len(workload) <= half:
            template = template[: available - len(workload)]
        elif len(template) <= half:
            workload = workload[: available - len(template)]
        else:
            workload, template = workload[: available - half], template[:half]
    return f"{workload}-{template}-{digest}"


def manages(job: Obj) -> bool:
    """shouldManageWorkloadForJob (with the gate on): not a Job whose pods name their own
    PodGroup, not a Job another controller owns (no delegation annotation is served)."""
    template_spec = (c.spec(job).get("template") or {}).get("spec") or {}
    return template_spec.get("schedulingGroup") is None and c.controller_ref(job) is None


def is_new_job(job: Obj, pods: list[Obj]) -> bool:
    """isNewJob: no pods, never started, nothing finished, never suspended."""
    status = c.status(job)
    if pods or status.get("startTime") or status.get("succeeded") or status.get("failed"):
        return False
    return not any(
        isinstance(x, dict) and x.get("type") == "Suspended" for x in status.get("conditions") or []
    )


def _controlled(api: Api, key: str, job: Obj) -> list[Obj]:
    namespace = c.meta(job).get("namespace", "")
    job_uid = c.uid(job)
    return [
        o
        for o in api.store.items(key)
        if c.meta(o).get("namespace", "") == namespace
        and (c.controller_ref(o) or {}).get("uid") == job_uid
    ]


def _refers_to_job(workload: Obj, job: Obj) -> bool:
    ref = c.spec(workload).get("controllerRef") or {}
    return (
        ref.get("apiGroup") == "batch"
        and ref.get("kind") == "Job"
        and ref.get("name") == c.name(job)
    )


async def ensure_pod_group(api: Api, job: Obj, pods: list[Obj]) -> str | None:
    """The name of the Job's PodGroup, creating the Workload and the PodGroup for a new Job;
    None when the Job schedules pod by pod (not covered, ambiguous, or started before)."""
    if not manages(job):
        return None
    new_job = is_new_job(job, pods)
    workloads = [w for w in _controlled(api, WORKLOADS, job) if _refers_to_job(w, job)]
    if len(workloads) > 1:
        return None  # upstream: "found N Workloads referencing Job", default scheduling
    if workloads:
        workload = workloads[0]
        if len(c.spec(workload).get("podGroupTemplates") or []) != 1:
            return None  # validateWorkloadStructure
    elif not new_job:
        return None
    else:
        created = await c.create(api, WORKLOADS, _workload_for(job))
        if created is None:
            return None
        workload = created
    groups = [
        g
        for g in _controlled(api, PODGROUPS, job)
        if (c.spec(g).get("workloadRef") or {}).get("workloadName") == c.name(workload)
    ]
    if len(groups) == 1:
        return c.name(groups[0])
    if groups or not new_job:
        return None
    group = await c.create(api, PODGROUPS, _pod_group_for(job, workload))
    return None if group is None else c.name(group)


def _workload_for(job: Obj) -> Obj:
    """generateWorkload with no spec.scheduling: one template, the default Basic policy."""
    namespace = c.meta(job).get("namespace", "")
    return {
        "apiVersion": SCHEDULING_API_VERSION,
        "kind": "Workload",
        "metadata": {
            "name": workload_name(job),
            "namespace": namespace,
            "ownerReferences": [c.new_controller_ref(job, "batch/v1", "Job")],
        },
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": c.name(job)},
            "podGroupTemplates": [
                {"name": pod_group_template_name(job), "schedulingPolicy": {"basic": {}}}
            ],
        },
    }


def _pod_group_for(job: Obj, workload: Obj) -> Obj:
    """createPodGroup / podGroupSpecFromTemplate: the template's policy, constraints, claims
    and disruption mode copied; owned by the Job (controller) and the Workload."""
    template: dict[str, Any] = (c.spec(workload).get("podGroupTemplates") or [{}])[0]
    spec: dict[str, Any] = {
        "workloadRef": {"workloadName": c.name(workload), "templateName": template["name"]},
        "schedulingPolicy": template.get("schedulingPolicy") or {"basic": {}},
    }
    for key in ("schedulingConstraints", "disruptionMode", "resourceClaims"):
        if template.get(key) is not None:
            spec[key] = template[key]
    workload_ref = {
        "apiVersion": SCHEDULING_API_VERSION,
        "kind": "Workload",
        "name": c.name(workload),
        "uid": c.uid(workload),
    }
    return {
        "apiVersion": SCHEDULING_API_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": pod_group_name(c.name(workload), template["name"]),
            "namespace": c.meta(job).get("namespace", ""),
            "ownerReferences": [c.new_controller_ref(job, "batch/v1", "Job"), workload_ref],
        },
        "spec": spec,
    }
