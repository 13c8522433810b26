"""scheduler-plugins' PodGroup (scheduling.x-k8s.io/v1alpha1), as the Coscheduling plugin reads it.

Clusters that ran kubernetes-sigs/scheduler-plugins' Coscheduling keep PodGroup objects of this
CRD and label their pods `scheduling.x-k8s.io/pod-group: <name>`; aiosched reads the same
objects so that those manifests work unchanged. Upstream:
kubernetes-sigs/scheduler-plugins apis/scheduling/v1alpha1/types.go (PodGroupSpec: minMember,
minResources, scheduleTimeoutSeconds; PodGroupStatus: phase, occupiedBy, scheduled, running,
succeeded, failed, scheduleStartTime) and pkg/util/podgroup.go (the label, the full name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from apimachinery.quantity import parse_nanos
from scheduler.api.errors import MalformedObject
from scheduler.api.fields import as_int, as_mapping, as_str

GROUP = "scheduling.x-k8s.io"
VERSION = "v1alpha1"
API_PATH = f"/apis/{GROUP}/{VERSION}"
# v1alpha1.PodGroupLabel: the label naming a pod's PodGroup (in the pod's namespace).
POD_GROUP_LABEL = f"{GROUP}/pod-group"
# The GVK string upstream registers its cluster events under (coscheduling.go
# EventsToRegister: "podgroups.v1alpha1.scheduling.x-k8s.io").
POD_GROUP_GVK = f"podgroups.{VERSION}.{GROUP}"

# PodGroupPhase values (types.go).
PHASE_PENDING = "Pending"
PHASE_PRE_SCHEDULING = "PreScheduling"
PHASE_SCHEDULING = "Scheduling"
PHASE_SCHEDULED = "Scheduled"
PHASE_RUNNING = "Running"
PHASE_UNKNOWN = "Unknown"
PHASE_FINISHED = "Finished"
PHASE_FAILED = "Failed"


def pod_group_label(labels: Mapping[str, str]) -> str:
    """util.GetPodGroupLabel: the group a pod names, "" for none."""
    return labels.get(POD_GROUP_LABEL, "")


def pod_group_full_name(namespace: str, labels: Mapping[str, str]) -> str:
    """util.GetPodGroupFullName: "namespace/group", "" for a pod without a group."""
    name = pod_group_label(labels)
    return f"{namespace}/{name}" if name else ""


def parse_time(text: str) -> float | None:
    """A metav1.Time as seconds since the epoch; None when unset or unreadable."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class PodGroupStatusView:
    phase: str = ""
    occupied_by: str = ""
    scheduled: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    schedule_start_time: str = ""


@dataclass(frozen=True, slots=True)
class PodGroupView:
    namespace: str
    name: str
    uid: str
    resource_version: str
    creation_timestamp: str
    # creationTimestamp in seconds since the epoch (None: unset): the queue sort's key.
    created: float | None
    min_member: int
    # spec.minResources by resource name in nano units; None when unset (not the same as {}).
    min_resources: Mapping[str, int] | None
    schedule_timeout_seconds: int | None
    status: PodGroupStatusView
    raw: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> PodGroupView:
        top = as_mapping(obj, "podgroup")
        meta = as_mapping(top.get("metadata"), "metadata")
        spec = as_mapping(top.get("spec"), "spec")
        status = as_mapping(top.get("status"), "status")
        min_resources: dict[str, int] | None = None
        if spec.get("minResources") is not None:
            min_resources = {}
            for name, text in as_mapping(spec["minResources"], "spec.minResources").items():
                try:
                    min_resources[name] = parse_nanos(str(text))
                except ValueError as err:
                    raise MalformedObject(f"spec.minResources.{name}: {err}") from None
        timeout = spec.get("scheduleTimeoutSeconds")
        created = as_str(meta.get("creationTimestamp"), "metadata.creationTimestamp")
        return PodGroupView(
            namespace=as_str(meta.get("namespace"), "metadata.namespace", "default"),
            name=as_str(meta.get("name"), "metadata.name"),
            uid=as_str(meta.get("uid"), "metadata.uid"),
            resource_version=as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            creation_timestamp=created,
            created=parse_time(created),
            min_member=as_int(spec.get("minMember"), "spec.minMember"),
            min_resources=min_resources,
            schedule_timeout_seconds=(
                None if timeout is None else as_int(timeout, "spec.scheduleTimeoutSeconds")
            ),
            status=PodGroupStatusView(
                phase=as_str(status.get("phase"), "status.phase"),
                occupied_by=as_str(status.get("occupiedBy"), "status.occupiedBy"),
                scheduled=as_int(status.get("scheduled"), "status.scheduled"),
                running=as_int(status.get("running"), "status.running"),
                succeeded=as_int(status.get("succeeded"), "status.succeeded"),
                failed=as_int(status.get("failed"), "status.failed"),
                schedule_start_time=as_str(
                    status.get("scheduleStartTime"), "status.scheduleStartTime"
                ),
            ),
            raw=obj,
        )


def make_pod_group(
    name: str,
    namespace: str = "default",
    *,
    min_member: int = 0,
    min_resources: Mapping[str, str] | None = None,
    schedule_timeout_seconds: int | None = None,
    creation_timestamp: str = "",
    status: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A PodGroup as API JSON (scheduler-plugins' test/util MakePodGroup / MakePG)."""
    spec: dict[str, Any] = {"minMember": min_member}
    if min_resources is not None:
        spec["minResources"] = dict(min_resources)
    if schedule_timeout_seconds is not None:
        spec["scheduleTimeoutSeconds"] = schedule_timeout_seconds
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"pg-{namespace}-{name}"}
    if creation_timestamp:
        meta["creationTimestamp"] = creation_timestamp
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": spec,
        "status": dict(status or {}),
    }
