"""Validation and defaults of scheduling.k8s.io/v1beta1 Workload and PodGroup (workload-aware
scheduling, KEP-4671) and of the pod field that names a PodGroup, `spec.schedulingGroup`.

Upstream v1.37 validates these kinds mostly declaratively: the `+k8s:` tags of
staging/src/k8s.io/api/scheduling/v1beta1/types.go (required, minimum, format, maxItems, unions,
immutable, NoSet/NoUnset, NoAddItem/NoRemoveItem) with the messages of
k8s.io/apimachinery/pkg/api/validate; the rest is pkg/apis/scheduling/validation/validation.go
(ValidateWorkloadSpec's priority rule, ValidatePodGroupStatusUpdate) and the strategies in
pkg/registry/scheduling/{workload,podgroup}/strategy.go (status reset on create, the status
subresource). Fields behind the CompositePodGroup gate (alpha, off by default in v1.37) are
forbidden, as upstream forbids them with the gate off; schedulingConstraints, resourceClaims and
preemptionPolicy are accepted (their gates' features are what the scheduler side serves).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

from apimachinery.validation import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_path_segment_name,
)
from kubesim.validation_fields import (
    Cause,
    duplicate,
    forbidden,
    invalid,
    invalid_each,
    not_supported,
    required,
    too_many,
)

GROUP = "scheduling.k8s.io"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"
WORKLOAD_MAX_POD_GROUP_TEMPLATES = 8  # WorkloadMaxPodGroupTemplates
MAX_POD_GROUP_RESOURCE_CLAIMS = 4  # MaxPodGroupResourceClaims
MAX_TOPOLOGY_CONSTRAINTS = 1  # +k8s:maxItems=1 on schedulingConstraints.topology
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")
CONDITION_STATUSES = ("True", "False", "Unknown")
IMMUTABLE = "field is immutable"  # validate.Immutable / +k8s:immutable

Obj = dict[str, Any]


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _union(
    obj: Mapping[str, Any], members: tuple[str, ...], path: str, required_one: bool = True
) -> list[Cause]:
    """validate.Union: exactly one member set (`+union` / `+k8s:unionMember`)."""
    listed = ", ".join(f"`{m}`" for m in members)
    chosen = [m for m in members if obj.get(m) is not None]
    if not chosen and required_one:
        return [invalid(path, "", f"must specify one of: {listed}")]
    if len(chosen) > 1:
        shown = "{" + ", ".join(f"`{m}`" for m in chosen) + "}"
        return [invalid(path, shown, f"must specify exactly one of: {listed}")]
    return []


def _name_field(value: Any, path: str, check: Callable[[str], list[str]]) -> list[Cause]:
    """+k8s:required + +k8s:format: "" is missing, else the format's messages."""
    if value in (None, ""):
        return [required(path)]
    if not isinstance(value, str):
        return [invalid(path, value, "must be a string")]
    return invalid_each(path, value, check(value))


def _optional_format(value: Any, path: str, check: Callable[[str], list[str]]) -> list[Cause]:
    if value in (None, ""):
        return []
    return _name_field(value, path, check)


def _validate_list_map(
    items: Any, limit: int, path: str, check: Callable[[Any, str], list[Cause]]
) -> list[Cause]:
    """+k8s:listType=map +k8s:listMapKey=name +k8s:maxItems: too many short-circuits, then a
    repeated key is a Duplicate of the item, then each item is checked."""
    values = _list(items)
    if len(values) > limit:
        return [too_many(path, len(values), limit)]
    causes: list[Cause] = []
    seen: set[Any] = set()
    for index, item in enumerate(values):
        key = _map(item).get("name")
        if isinstance(key, str) and key in seen:
            causes.append(duplicate(f"{path}[{index}]", {"name": key}))
        elif isinstance(key, str):
            seen.add(key)
        causes += check(item, f"{path}[{index}]")
    return causes


# ---- shared pieces of PodGroupTemplate and PodGroupSpec -----------------------------------------
def validate_scheduling_policy(policy: Any, path: str) -> list[Cause]:
    """PodGroupSchedulingPolicy: a union of `basic` and `gang`; gang.minCount >= 1."""
    if not isinstance(policy, Mapping):
        return [required(path)]
    causes = _union(policy, ("basic", "gang"), path)
    gang = policy.get("gang")
    if isinstance(gang, Mapping):
        min_count = gang.get("minCount")
        min_path = f"{path}.gang.minCount"
        if min_count in (None, 0):
            causes.append(required(min_path))
        elif not _is_int(min_count):
            causes.append(invalid(min_path, min_count, "must be an integer"))
        elif min_count < 1:
            causes.append(invalid(min_path, min_count, "must be greater than or equal to 1"))
    return causes


def _validate_constraints(constraints: Any, path: str) -> list[Cause]:
    if constraints is None:
        return []
    topology = _list(_map(constraints).get("topology"))
    topo_path = f"{path}.topology"
    if len(topology) > MAX_TOPOLOGY_CONSTRAINTS:
        return [too_many(topo_path, len(topology), MAX_TOPOLOGY_CONSTRAINTS)]
    causes: list[Cause] = []
    for index, item in enumerate(topology):
        causes += _name_field(_map(item).get("key"), f"{topo_path}[{index}].key", is_qualified_name)
    return causes


def _validate_resource_claim(claim: Any, path: str) -> list[Cause]:
    claim = _map(claim)
    causes = _name_field(claim.get("name"), f"{path}.name", is_dns1123_label)
    causes += _union(claim, ("resourceClaimName", "resourceClaimTemplateName"), path)
    for key in ("resourceClaimName", "resourceClaimTemplateName"):
        causes += _optional_format(claim.get(key), f"{path}.{key}", is_dns1123_subdomain)
    return causes


def _validate_group_fields(spec: Mapping[str, Any], path: str) -> list[Cause]:
    """The fields PodGroupTemplate and PodGroupSpec share, with the same tags."""
    causes = validate_scheduling_policy(spec.get("schedulingPolicy"), f"{path}.schedulingPolicy")
    causes += _validate_constraints(
        spec.get("schedulingConstraints"), f"{path}.schedulingConstraints"
    )
    causes += _validate_list_map(
        spec.get("resourceClaims"),
        MAX_POD_GROUP_RESOURCE_CLAIMS,
        f"{path}.resourceClaims",
        _validate_resource_claim,
    )
    disruption = spec.get("disruptionMode")
    if disruption is not None:
        causes += _union(_map(disruption), ("single", "all"), f"{path}.disruptionMode")
    causes += _optional_format(
        spec.get("priorityClassName"), f"{path}.priorityClassName", is_dns1123_subdomain
    )
    priority = spec.get("priority")
    if _is_int(priority) and priority > HIGHEST_USER_DEFINABLE_PRIORITY:
        causes.append(
            invalid(
                f"{path}.priority",
                priority,
                f"must be less than or equal to {HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    policy = spec.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        causes.append(not_supported(f"{path}.preemptionPolicy", policy, PREEMPTION_POLICIES))
    return causes


# fields `+k8s:immutable` on both PodGroupTemplate and PodGroupSpec
_IMMUTABLE_GROUP_FIELDS = (
    "schedulingConstraints",
    "resourceClaims",
    "disruptionMode",
    "priorityClassName",
    "priority",
    "preemptionPolicy",
)


def _group_update(new: Mapping[str, Any], old: Mapping[str, Any], path: str) -> list[Cause]:
    """Update rules of the shared fields: the immutable ones, basic immutable, gang NoSet and
    NoUnset (its minCount stays mutable for elastic gangs)."""
    causes = [
        forbidden(f"{path}.{key}", IMMUTABLE)
        for key in _IMMUTABLE_GROUP_FIELDS
        if new.get(key) != old.get(key)
    ]
    new_policy, old_policy = _map(new.get("schedulingPolicy")), _map(old.get("schedulingPolicy"))
    policy_path = f"{path}.schedulingPolicy"
    if new_policy.get("basic") != old_policy.get("basic"):
        causes.append(forbidden(f"{policy_path}.basic", IMMUTABLE))
    if old_policy.get("gang") is None and new_policy.get("gang") is not None:
        causes.append(forbidden(f"{policy_path}.gang", "field cannot be set once created"))
    if old_policy.get("gang") is not None and new_policy.get("gang") is None:
        causes.append(forbidden(f"{policy_path}.gang", "field cannot be cleared once set"))
    return causes


# ---- Workload -----------------------------------------------------------------------------------
def _validate_controller_ref(ref: Any, path: str) -> list[Cause]:
    ref = _map(ref)
    causes = _optional_format(ref.get("apiGroup"), f"{path}.apiGroup", is_dns1123_subdomain)
    causes += _name_field(ref.get("kind"), f"{path}.kind", is_valid_path_segment_name)
    causes += _name_field(ref.get("name"), f"{path}.name", is_valid_path_segment_name)
    return causes


def _validate_pod_group_template(template: Any, path: str) -> list[Cause]:
    template = _map(template)
    causes = _name_field(template.get("name"), f"{path}.name", is_dns1123_label)
    return causes + _validate_group_fields(template, path)


def _priority_key(template: Mapping[str, Any]) -> tuple[Any, Any]:
    return (template.get("priorityClassName") or "", template.get("priority"))


def validate_workload(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return [required("spec")]
    causes: list[Cause] = []
    if spec.get("controllerRef") is not None:
        causes += _validate_controller_ref(spec["controllerRef"], "spec.controllerRef")
    if spec.get("compositePodGroupTemplates") is not None:
        # +k8s:ifDisabled("CompositePodGroup")=+k8s:forbidden (alpha, off by default)
        causes.append(forbidden("spec.compositePodGroupTemplates", ""))
    causes += _union(spec, ("podGroupTemplates", "compositePodGroupTemplates"), "spec")
    templates = spec.get("podGroupTemplates")
    causes += _validate_list_map(
        templates,
        WORKLOAD_MAX_POD_GROUP_TEMPLATES,
        "spec.podGroupTemplates",
        _validate_pod_group_template,
    )
    # validateWorkloadPriority: every template the same priority and priorityClassName
    keys = {_priority_key(_map(t)) for t in _list(templates)}
    if len(keys) > 1:
        causes.append(invalid("spec", None, "detected multiple priority configurations"))
    if old is not None:
        causes += _workload_update(spec, _map(old.get("spec")))
    return causes


def _workload_update(spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    if old_spec.get("controllerRef") is not None and spec.get("controllerRef") != old_spec.get(
        "controllerRef"
    ):
        causes.append(forbidden("spec.controllerRef", IMMUTABLE))
    new_by_name = {_map(t).get("name"): _map(t) for t in _list(spec.get("podGroupTemplates"))}
    old_by_name = {_map(t).get("name"): _map(t) for t in _list(old_spec.get("podGroupTemplates"))}
    path = "spec.podGroupTemplates"
    if set(new_by_name) - set(old_by_name):  # +k8s:update=NoAddItem
        causes.append(forbidden(path, "items may not be added"))
    if set(old_by_name) - set(new_by_name):  # +k8s:update=NoRemoveItem
        causes.append(forbidden(path, "items may not be removed"))
    for index, template in enumerate(_list(spec.get("podGroupTemplates"))):
        before = old_by_name.get(_map(template).get("name"))
        if before is not None:
            causes += _group_update(_map(template), before, f"{path}[{index}]")
    return causes


# ---- PodGroup -----------------------------------------------------------------------------------
def apply_pod_group_defaults(obj: Obj) -> None:
    """PrepareForCreate drops a status set on create; disruptionMode defaults to single
    (`+default={"single": {}}`)."""
    obj.pop("status", None)
    spec = obj.get("spec")
    if isinstance(spec, dict) and spec.get("disruptionMode") is None:
        spec["disruptionMode"] = {"single": {}}


def validate_pod_group(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return [required("spec")]
    causes: list[Cause] = []
    if spec.get("parentCompositePodGroupName") is not None:
        causes.append(forbidden("spec.parentCompositePodGroupName", ""))
    ref = spec.get("workloadRef")
    if ref is not None:
        ref = _map(ref)
        causes += _name_field(
            ref.get("workloadName"), "spec.workloadRef.workloadName", is_dns1123_subdomain
        )
        causes += _name_field(
            ref.get("templateName"), "spec.workloadRef.templateName", is_dns1123_label
        )
    causes += _validate_group_fields(spec, "spec")
    causes += _validate_pod_group_status(_map(obj.get("status")), spec)
    if old is not None:
        old_spec = _map(old.get("spec"))
        if spec.get("workloadRef") != old_spec.get("workloadRef"):
            causes.append(forbidden("spec.workloadRef", IMMUTABLE))
        causes += _group_update(spec, old_spec, "spec")
    return causes


def _validate_pod_group_status(status: Mapping[str, Any], spec: Mapping[str, Any]) -> list[Cause]:
    """ValidatePodGroupStatusUpdate: metav1 conditions, and claim statuses naming a claim."""
    causes = validate_conditions(status.get("conditions"), "status.conditions")
    claims = {_map(c).get("name") for c in _list(spec.get("resourceClaims"))}
    for index, entry in enumerate(_list(status.get("resourceClaimStatuses"))):
        name = _map(entry).get("name")
        if name not in claims:
            causes.append(
                invalid(
                    f"status.resourceClaimStatuses[{index}].name",
                    name,
                    "must match the name of an entry in `spec.resourceClaims`",
                )
            )
    return causes


_REASON_MESSAGE = (
    "a condition reason must start with alphabetic character, optionally "
    "followed by a string of alphanumeric characters or '_,:', and must end with an "
    "alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or "
    "'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is "
    "'[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')"
)
_REASON = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
_CONDITION_MESSAGE_MAX = 32 * 1024


def validate_conditions(conditions: Any, path: str) -> list[Cause]:
    """metav1validation.ValidateConditions (apimachinery/pkg/apis/meta/v1/validation)."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for index, condition in enumerate(_list(conditions)):
        item = _map(condition)
        at = f"{path}[{index}]"
        kind = item.get("type")
        if kind in (None, ""):
            causes.append(required(f"{at}.type", "must be set"))
        elif isinstance(kind, str):
            causes += invalid_each(f"{at}.type", kind, is_qualified_name(kind))
            if kind in seen:
                causes.append(duplicate(f"{at}.type", kind))
            seen.add(kind)
        state = item.get("status")
        if state not in CONDITION_STATUSES:
            causes.append(not_supported(f"{at}.status", state, CONDITION_STATUSES))
        generation = item.get("observedGeneration")
        if _is_int(generation) and generation < 0:
            causes.append(
                invalid(
                    f"{at}.observedGeneration", generation, "must be greater than or equal to zero"
                )
            )
        if not item.get("lastTransitionTime"):
            causes.append(required(f"{at}.lastTransitionTime", "must be set"))
        reason = item.get("reason")
        if reason in (None, ""):
            causes.append(required(f"{at}.reason", "must be set"))
        elif isinstance(reason, str):
            if not _REASON.fullmatch(reason):
                causes.append(invalid(f"{at}.reason", reason, _REASON_MESSAGE))
            if len(reason) > 1024:
                causes.append(
                    Cause(
                        f"{at}.reason",
                        "FieldValueTooLong",
                        "Too long: may not be more than 1024 bytes",
                    )
                )
        message = item.get("message")
        if isinstance(message, str) and len(message.encode()) > _CONDITION_MESSAGE_MAX:
            causes.append(
                Cause(
                    f"{at}.message",
                    "FieldValueTooLong",
                    f"Too long: may not be more than {_CONDITION_MESSAGE_MAX} bytes",
                )
            )
    return causes


# ---- the pod's spec.schedulingGroup -------------------------------------------------------------
def validate_pod_scheduling_group(spec: Mapping[str, Any], path: str) -> list[Cause]:
    """spec.schedulingGroup.podGroupName: required when schedulingGroup is set, a PodGroup's
    name (ValidatePodGroupName: a DNS subdomain). Immutable with the rest of the pod's spec."""
    group = spec.get("schedulingGroup")
    if group is None:
        return []
    return _name_field(
        _map(group).get("podGroupName"),
        f"{path}.schedulingGroup.podGroupName",
        is_dns1123_subdomain,
    )
