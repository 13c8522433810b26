"""Views of the workload-aware scheduling kinds (`scheduling.k8s.io/v1alpha2`): Workload and
PodGroup, and the pod's reference to its group (`spec.schedulingGroup.podGroupName`).

aiosched follows kube-scheduler v1.36, the newest release: its scheduling.k8s.io/v1alpha2 types
(staging/src/k8s.io/api/scheduling/v1alpha2/types.go) with a Workload as a set of PodGroup
templates and the PodGroup as the runtime object the scheduler schedules:

    PodGroup.spec.schedulingPolicy:      {basic: {}} | {gang: {minCount: N}}   (exactly one)
    PodGroup.spec.schedulingConstraints: {topology: [{key: <node label key>}]} (at most one)
    PodGroup.spec.podGroupTemplateRef:   {workload: {workloadName, podGroupTemplateName}}
    PodGroup.status.conditions:          metav1.Condition, type PodGroupScheduled
    Workload.spec.podGroupTemplates[]:   {name, schedulingPolicy, schedulingConstraints}
    Pod.spec.schedulingGroup:            {podGroupName: <PodGroup in the pod's namespace>}

Each view keeps its decoded JSON (`raw`) so that the scheduler can write status back without
losing fields it does not model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.fields import as_int, as_list, as_mapping, as_str

SCHEDULING_GROUP = "scheduling.k8s.io"
#: The version aiosched reads and writes (kube-scheduler v1.36).
SCHEDULING_VERSION = "v1alpha2"
SCHEDULING_API = f"/apis/{SCHEDULING_GROUP}/{SCHEDULING_VERSION}"

# Well-known condition type and reasons (v1alpha2 types.go).
POD_GROUP_SCHEDULED = "PodGroupScheduled"
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"


@dataclass(frozen=True, slots=True)
class PodGroupView:
    """A PodGroup: which pods form one group and how they are to be scheduled."""

    raw: Mapping[str, Any] = field(repr=False)
    uid: str
    namespace: str
    name: str
    resource_version: str
    # None for the basic policy (every pod on its own); the gang's minCount otherwise.
    min_count: int | None
    # schedulingConstraints.topology[*].key: every member within one domain of each key.
    topology_keys: tuple[str, ...] = ()
    workload_name: str = ""
    template_name: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_gang(self) -> bool:
        return self.min_count is not None

    def condition(self, type_: str) -> Mapping[str, Any] | None:
        status = as_mapping(self.raw.get("status"), "status")
        for condition in as_list(status.get("conditions"), "status.conditions"):
            if isinstance(condition, Mapping) and condition.get("type") == type_:
                return condition
        return None

    @staticmethod
    def from_dict(obj: Mapping[str, Any]) -> PodGroupView:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        min_count = _gang_min_count(spec.get("schedulingPolicy"), "spec.schedulingPolicy")
        ref = as_mapping(
            as_mapping(spec.get("podGroupTemplateRef"), "spec.podGroupTemplateRef").get("workload"),
            "spec.podGroupTemplateRef.workload",
        )
        return PodGroupView(
            raw=obj,
            uid=as_str(meta.get("uid"), "metadata.uid"),
            namespace=as_str(meta.get("namespace"), "metadata.namespace", "default"),
            name=as_str(meta.get("name"), "metadata.name"),
            resource_version=as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            min_count=min_count,
            topology_keys=_topology_keys(
                spec.get("schedulingConstraints"), "spec.schedulingConstraints"
            ),
            workload_name=as_str(ref.get("workloadName"), "workloadName"),
            template_name=as_str(ref.get("podGroupTemplateName"), "podGroupTemplateName"),
        )


@dataclass(frozen=True, slots=True)
class PodGroupTemplateView:
    name: str
    min_count: int | None
    topology_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WorkloadView:
    """A Workload: the templates its controller creates PodGroups from. The scheduler itself
    schedules PodGroups; the Workload is kept for explain and tools."""

    raw: Mapping[str, Any] = field(repr=False)
    uid: str
    namespace: str
    name: str
    resource_version: str
    templates: tuple[PodGroupTemplateView, ...]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @staticmethod
    def from_dict(obj: Mapping[str, Any]) -> WorkloadView:
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        templates = []
        for i, item in enumerate(as_list(spec.get("podGroupTemplates"), "spec.podGroupTemplates")):
            path = f"spec.podGroupTemplates[{i}]"
            template = as_mapping(item, path)
            templates.append(
                PodGroupTemplateView(
                    name=as_str(template.get("name"), f"{path}.name"),
                    min_count=_gang_min_count(
                        template.get("schedulingPolicy"), f"{path}.schedulingPolicy"
                    ),
                    topology_keys=_topology_keys(
                        template.get("schedulingConstraints"), f"{path}.schedulingConstraints"
                    ),
                )
            )
        return WorkloadView(
            raw=obj,
            uid=as_str(meta.get("uid"), "metadata.uid"),
            namespace=as_str(meta.get("namespace"), "metadata.namespace", "default"),
            name=as_str(meta.get("name"), "metadata.name"),
            resource_version=as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            templates=tuple(templates),
        )


def pod_scheduling_group(value: Any) -> str | None:
    """The PodGroup name of a pod's `spec.schedulingGroup` (None: the pod has no group)."""
    if value is None:
        return None
    group = as_mapping(value, "spec.schedulingGroup")
    name = group.get("podGroupName")
    if name is None:
        return None
    return as_str(name, "spec.schedulingGroup.podGroupName") or None


def _gang_min_count(value: Any, path: str) -> int | None:
    policy = as_mapping(value, path)
    gang = policy.get("gang")
    if gang is None:
        return None
    return as_int(as_mapping(gang, f"{path}.gang").get("minCount"), f"{path}.gang.minCount")


def _topology_keys(value: Any, path: str) -> tuple[str, ...]:
    constraints = as_mapping(value, path)
    keys = []
    for i, item in enumerate(as_list(constraints.get("topology"), f"{path}.topology")):
        entry = as_mapping(item, f"{path}.topology[{i}]")
        key = as_str(entry.get("key"), f"{path}.topology[{i}].key")
        if key:
            keys.append(key)
    return tuple(keys)
