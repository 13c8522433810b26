"""Views of the workload-aware scheduling kinds (`scheduling.k8s.io/v1beta1`): Workload and
PodGroup, and the pod's reference to its group (`spec.schedulingGroup.podGroupName`).

aiosched follows kube-scheduler v1.37, the newest release: kubernetes/kubernetes#140184 promoted
the Workload-aware scheduling API to scheduling.k8s.io/v1beta1 and dropped v1alpha2
(staging/src/k8s.io/api/scheduling/v1beta1/types.go, `prerelease-lifecycle-gen:introduced=1.37`);
the embedded cluster serves the same version (kubesim/schemas_workload.py). What the scheduler
reads of it:

    PodGroup.spec.schedulingPolicy:      {basic: {}} | {gang: {minCount: N}}   (exactly one)
    PodGroup.spec.schedulingConstraints: {topology: [{key: <node label key>}]} (at most one)
    PodGroup.spec.workloadRef:           {workloadName, templateName}  (v1alpha2:
                                         podGroupTemplateRef.workload.podGroupTemplateName)
    PodGroup.spec.priority:              the group's priority (optional; 0 when unset)
    PodGroup.spec.disruptionMode:        {single: {}} | {all: {}}: whether preemption may
                                         evict one member or only the whole group
    PodGroup.spec.preemptionPolicy:      Never | PreemptLowerPriority (optional)
    PodGroup.status.conditions:          metav1.Condition, type PodGroupInitiallyScheduled
                                         (v1alpha2: PodGroupScheduled), reasons Unschedulable,
                                         SchedulerError; and DisruptionTarget
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
#: The version aiosched reads and writes (kube-scheduler v1.37).
SCHEDULING_VERSION = "v1beta1"
SCHEDULING_API = f"/apis/{SCHEDULING_GROUP}/{SCHEDULING_VERSION}"

# Well-known condition types and reasons (v1beta1 types.go). PodGroupInitiallyScheduled is
# terminal once True: the scheduler never sets it back to False (schedule_one_podgroup.go's
# updatePodGroupCondition). "Scheduled" is the reason the scheduler writes with True; types.go
# names no constant for it.
POD_GROUP_INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
DISRUPTION_TARGET = "DisruptionTarget"
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
    generation: int = 0
    priority: int | None = None
    # spec.disruptionMode.all: workload-aware preemption evicts the group only as a whole.
    disruption_mode_all: bool = False
    # spec.preemptionPolicy ("Never" | "PreemptLowerPriority"); None when unset.
    preemption_policy: str | None = None

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
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> PodGroupView:
        """The informer's parser (it passes the previous view too, which is not needed)."""
        meta = as_mapping(obj.get("metadata"), "metadata")
        spec = as_mapping(obj.get("spec"), "spec")
        min_count = _gang_min_count(spec.get("schedulingPolicy"), "spec.schedulingPolicy")
        ref = as_mapping(spec.get("workloadRef"), "spec.workloadRef")
        priority = spec.get("priority")
        disruption = as_mapping(spec.get("disruptionMode"), "spec.disruptionMode")
        policy = spec.get("preemptionPolicy")
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
            workload_name=as_str(ref.get("workloadName"), "spec.workloadRef.workloadName"),
            template_name=as_str(ref.get("templateName"), "spec.workloadRef.templateName"),
            generation=as_int(meta.get("generation", 0), "metadata.generation"),
            priority=None if priority is None else as_int(priority, "spec.priority"),
            disruption_mode_all=disruption.get("all") is not None,
            preemption_policy=None
            if policy is None
            else as_str(policy, "spec.preemptionPolicy") or None,
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
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> WorkloadView:
        """The informer's parser (it passes the previous view too, which is not needed)."""
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
