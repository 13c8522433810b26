"""Jobs: run pods to completion (completions, parallelism), then Complete.

Upstream: pkg/controller/job/job_controller.go (syncJob, manageJob, conditions and their
reasons). Pods end on the simulated kubelet (kubesim/nodes.py) after --job-duration seconds or
the pod's JOB_DURATION_ANNOTATION. Succeeded/failed counts never go down when finished pods are
deleted (upstream tracks them with the batch.kubernetes.io/job-tracking finalizer).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubesim import events
from kubesim.api import Api
from kubesim.controllers import common as c
from kubesim.controllers.job_workload import ensure_pod_group
from kubesim.controllers.manager import Due, Key
from kubesim.meta import Obj, rfc3339
from kubesim.patch import copy_json
from kubesim.watch import Event

JOBS = "batch/jobs"
CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"


def _finished(job: Obj) -> bool:
    return any(
        x.get("type") in ("Complete", "Failed") and x.get("status") == "True"
        for x in c.status(job).get("conditions") or []
        if isinstance(x, dict)
    )


def _condition(kind: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": "True",
        "lastProbeTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


class JobController:
    name = "Job"
    watches: tuple[str, ...] = (JOBS, c.PODS)
    owned_only: tuple[str, ...] = (c.PODS,)

    def __init__(self, api: Api, workload_with_job: bool = False) -> None:
        self.api = api
        # the WorkloadWithJob feature gate: a Workload and a PodGroup per new Job (job_workload)
        self.workload_with_job = workload_with_job

    def on_event(self, key: str, event: Event) -> Iterable[Due]:
        if key == JOBS:
            return (
                []
                if event.type == "DELETED"
                else [(event.namespace, event.obj["metadata"]["name"], 0.0)]
            )
        owner = c.owned_by(event.obj, "Job")
        return [] if owner is None else [(event.namespace, owner, 0.0)]

    def initial(self) -> Iterable[Key]:
        return [
            (j["metadata"].get("namespace", ""), j["metadata"]["name"])
            for j in self.api.store.items(JOBS)
        ]

    async def sync(self, namespace: str, name: str) -> Iterable[Due]:
        job = self.api.store.get(JOBS, namespace, name)
        if job is None or c.deleting(job):
            return []
        job = await self._ensure_selector(job)
        spec = c.spec(job)
        pods = c.controlled_pods(self.api, job)
        running = [p for p in pods if c.active(p)]
        old = c.status(job)
        succeeded = max(
            int(old.get("succeeded") or 0),
            sum(1 for p in pods if c.status(p).get("phase") == "Succeeded"),
        )
        failed = max(
            int(old.get("failed") or 0),
            sum(1 for p in pods if c.status(p).get("phase") == "Failed"),
        )
        now = rfc3339(self.api.clock())
        new_status: dict[str, Any] = {**old, "startTime": old.get("startTime") or now}
        conditions = [x for x in old.get("conditions") or [] if isinstance(x, dict)]
        if not _finished(job) and not spec.get("suspend"):
            completions = spec.get("completions")
            parallelism = c.int_field(spec, "parallelism", 1)
            backoff_limit = c.int_field(spec, "backoffLimit", 6)
            if failed > backoff_limit:
                conditions += [
                    _condition(
                        "FailureTarget",
                        "BackoffLimitExceeded",
                        "Job has reached the specified backoff limit",
                        now,
                    ),
                    _condition(
                        "Failed",
                        "BackoffLimitExceeded",
                        "Job has reached the specified backoff limit",
                        now,
                    ),
                ]
                wanted = 0
            elif (completions is not None and succeeded >= completions) or (
                completions is None and succeeded > 0 and not running
            ):
                conditions += [
                    _condition(
                        "SuccessCriteriaMet",
                        "CompletionsReached",
                        "Reached expected number of succeeded pods",
                        now,
                    ),
                    _condition(
                        "Complete",
                        "CompletionsReached",
                        "Reached expected number of succeeded pods",
                        now,
                    ),
                ]
                new_status["completionTime"] = now
                wanted = 0
            elif completions is None:
                wanted = 0 if succeeded else parallelism
            else:
                wanted = min(parallelism, int(completions) - succeeded)
            group = None
            if self.workload_with_job and wanted > len(running):
                group = await ensure_pod_group(self.api, job, pods)
            await self._manage(job, running, wanted, group)
            running = [p for p in c.controlled_pods(self.api, job) if c.active(p)]
        new_status.update(
            {
                "active": len(running),
                "succeeded": succeeded,
                "failed": failed,
                "ready": sum(1 for p in running if c.ready(p)),
                "terminating": sum(1 for p in c.controlled_pods(self.api, job) if c.deleting(p)),
                "uncountedTerminatedPods": {},
                "conditions": conditions,
            }
        )
        for key in ("active", "succeeded", "failed", "conditions"):
            if not new_status[key]:
                new_status.pop(key)
        await c.write_status(self.api, JOBS, job, new_status)
        if not _finished(job):
            await self._record_finished(job, conditions)
        return []

    async def _record_finished(self, job: Obj, conditions: list[dict[str, Any]]) -> None:
        """recordJobFinished (job_controller.go): "Completed" when the Job completes, else a
        Warning with the Failed condition's reason and message."""
        for condition in conditions:
            if condition.get("status") != "True":
                continue
            if condition.get("type") == "Complete":
                await c.record(
                    self.api,
                    events.JOB_CONTROLLER,
                    job,
                    "Job",
                    "batch/v1",
                    events.NORMAL,
                    "Completed",
                    "Job completed",
                )
            elif condition.get("type") == "Failed":
                await c.record(
                    self.api,
                    events.JOB_CONTROLLER,
                    job,
                    "Job",
                    "batch/v1",
                    events.WARNING,
                    str(condition.get("reason") or ""),
                    str(condition.get("message") or ""),
                )

    async def _ensure_selector(self, job: Obj) -> Obj:
        """generateSelector (pkg/registry/batch/job/strategy.go), done at first sync: the uid is
        only known once the job is stored."""
        spec = c.spec(job)
        if spec.get("selector") or spec.get("manualSelector"):
            return job
        job_uid, job_name = c.uid(job), c.name(job)
        labels = {
            CONTROLLER_UID: job_uid,
            JOB_NAME: job_name,
            "controller-uid": job_uid,
            "job-name": job_name,
        }
        template = copy_json(spec.get("template") or {})
        template_meta = template.setdefault("metadata", {})
        template_meta["labels"] = {**(template_meta.get("labels") or {}), **labels}
        new_spec = {
            **spec,
            "selector": {"matchLabels": {CONTROLLER_UID: job_uid}},
            "template": template,
        }
        new = {**job, "metadata": dict(job["metadata"]), "spec": new_spec}
        return await self.api.store.put(JOBS, new, job)

    async def _manage(
        self, job: Obj, running: list[Obj], wanted: int, pod_group: str | None = None
    ) -> None:
        if len(running) < wanted:
            ref = c.new_controller_ref(job, "batch/v1", "Job")
            for _ in range(wanted - len(running)):
                pod = c.pod_from_template(job, ref, f"{c.name(job)}-", generate=True)
                if pod_group is not None:
                    pod["spec"]["schedulingGroup"] = {"podGroupName": pod_group}
                await c.create_pod(self.api, events.JOB_CONTROLLER, job, "Job", "batch/v1", pod)
        elif len(running) > wanted:
            newest_first = sorted(
                running, key=lambda p: p["metadata"].get("creationTimestamp", ""), reverse=True
            )
            for pod in newest_first[: len(running) - wanted]:
                await c.delete_pod(self.api, events.JOB_CONTROLLER, job, "Job", "batch/v1", pod)
