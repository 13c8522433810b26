"""Object validation with the API server's field paths and messages (pkg/apis/core/validation).

validate() returns field errors as `Cause`s, the entries of a 422 Status's details.causes, and
format_invalid_message() builds that Status's message, e.g.
`Pod "x" is invalid: spec.containers[0].image: Required value`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from apimachinery.decimal_int import is_decimal_integer, parse_int64_error
from apimachinery.validation import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    is_valid_path_segment_name,
)
from kubesim.resources import RESOURCES
from kubesim.validation_dra import (
    validate_device_class,
    validate_device_taint_rule,
    validate_pod_resource_claims,
    validate_resource_claim,
    validate_resource_claim_template,
    validate_resource_slice,
)
from kubesim.validation_fields import (
    NEGATIVE,
    Cause,
    duplicate,
    forbidden,
    invalid,
    invalid_each,
    not_supported,
    required,
    too_long,
)
from kubesim.validation_policy import validate_pod_disruption_budget
from kubesim.validation_rbac import validate_rbac
from kubesim.validation_resources import (
    validate_pod_level_resources,
    validate_resource_quantity,
    validate_resource_requirements,
)
from kubesim.validation_scheduling import (
    validate_affinity,
    validate_scheduling_gates,
    validate_topology_spread_constraints,
)
from kubesim.validation_storage import validate_persistent_volume, validate_persistent_volume_claim
from kubesim.validation_workload import (
    validate_pod_group,
    validate_pod_scheduling_group,
    validate_workload,
)

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}


# --- messages ----------------------------------------------------------------------------------


def _qualified_kind(kind: str) -> str:
    if "." in kind:
        return kind
    for resource in RESOURCES:
        if resource.kind == kind:
            return f"{kind}.{resource.group}" if resource.group else kind
    return kind


def format_invalid_message(kind: str, name: str, causes: Iterable[Cause]) -> str:
    """The 422 Status message: `Kind "name" is invalid: [a: ..., b: ...]` (one error: no [])."""
    errors: list[str] = []
    for cause in causes:
        text = cause.error()
        if text not in errors:  # upstream's aggregate drops repeated messages
            errors.append(text)
    head = f"{_qualified_kind(kind)} {json.dumps(name)} is invalid"
    if not errors:
        return head
    if len(errors) == 1:
        return f"{head}: {errors[0]}"
    return f"{head}: [{', '.join(errors)}]"


# --- metadata ----------------------------------------------------------------------------------

_NAME_CHECKS = {
    "Namespace": is_dns1123_label,
    "Service": is_dns1035_label,
    # pkg/apis/rbac/validation: minimalNameRequirements
    "Role": is_valid_path_segment_name,
    "ClusterRole": is_valid_path_segment_name,
    "RoleBinding": is_valid_path_segment_name,
    "ClusterRoleBinding": is_valid_path_segment_name,
}


def _namespaced(kind: str) -> bool | None:
    for resource in RESOURCES:
        if resource.kind == kind:
            return resource.namespaced
    return None


def _validate_name(kind: str, name: str, prefix: bool) -> list[str]:
    check = _NAME_CHECKS.get(kind, is_dns1123_subdomain)
    if prefix and name.endswith("-"):
        name = name[:-1] + "a"  # upstream's maskTrailingDash: generateName may end in "-"
    return check(name)


def validate_labels(labels: Any, path: str) -> list[Cause]:
    if labels is None:
        return []
    if not isinstance(labels, Mapping):
        return [invalid(path, labels, "must be a map of string keys to string values")]
    causes: list[Cause] = []
    for key, value in labels.items():
        causes += invalid_each(path, key, is_qualified_name(key))
        if not isinstance(value, str):
            causes.append(invalid(path, value, "must be a string"))
            continue
        causes += invalid_each(path, value, is_valid_label_value(value))
    return causes


def validate_annotations(annotations: Any, path: str) -> list[Cause]:
    if annotations is None:
        return []
    if not isinstance(annotations, Mapping):
        return [invalid(path, annotations, "must be a map of string keys to string values")]
    causes: list[Cause] = []
    size = 0
    for key, value in annotations.items():
        causes += invalid_each(path, key, is_qualified_name(key.lower()))
        size += len(key.encode()) + len(str(value).encode())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return causes


def validate_object_meta(kind: str, meta: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    generate_name = meta.get("generateName") or ""
    if generate_name:
        causes += invalid_each(
            "metadata.generateName", generate_name, _validate_name(kind, generate_name, True)
        )
    name = meta.get("name") or ""
    if not name:
        causes.append(required("metadata.name", "name or generateName is required"))
    else:
        causes += invalid_each("metadata.name", name, _validate_name(kind, name, False))
    namespaced = _namespaced(kind)
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            causes.append(required("metadata.namespace"))
        else:
            causes += invalid_each("metadata.namespace", namespace, is_dns1123_label(namespace))
    elif namespaced is False and namespace:
        causes.append(forbidden("metadata.namespace", "not allowed on this type"))
    causes += validate_labels(meta.get("labels"), "metadata.labels")
    causes += validate_annotations(meta.get("annotations"), "metadata.annotations")
    for i, finalizer in enumerate(meta.get("finalizers") or []):
        causes += invalid_each(
            f"metadata.finalizers[{i}]", finalizer, is_qualified_name(str(finalizer))
        )
    return causes


def validate_object_meta_update(meta: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for key in ("name", "namespace", "uid", "creationTimestamp"):
        if old.get(key) and meta.get(key) != old.get(key):
            causes.append(invalid(f"metadata.{key}", meta.get(key), "field is immutable"))
    return causes


# --- pods --------------------------------------------------------------------------------------

_PORT_RANGE = "must be between 1 and 65535, inclusive"
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _valid_port(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535


def _validate_container(
    container: Any, path: str, names: set[str], host_ports: set[str]
) -> list[Cause]:
    if not isinstance(container, Mapping):
        return [invalid(path, container, "must be an object")]
    causes: list[Cause] = []
    name = container.get("name") or ""
    if not name:
        causes.append(required(f"{path}.name"))
    else:
        causes += invalid_each(f"{path}.name", name, is_dns1123_label(name))
        if name in names:
            causes.append(duplicate(f"{path}.name", name))
        names.add(name)
    if not container.get("image"):
        causes.append(required(f"{path}.image"))
    for i, port in enumerate(container.get("ports") or []):
        port_path = f"{path}.ports[{i}]"
        if not isinstance(port, Mapping):
            causes.append(invalid(port_path, port, "must be an object"))
            continue
        if not _valid_port(port.get("containerPort")):
            causes.append(
                invalid(f"{port_path}.containerPort", port.get("containerPort"), _PORT_RANGE)
            )
        host_port = port.get("hostPort", 0)
        if host_port and not _valid_port(host_port):
            causes.append(invalid(f"{port_path}.hostPort", host_port, _PORT_RANGE))
        protocol = port.get("protocol") or ""
        if not protocol:
            causes.append(required(f"{port_path}.protocol"))
        elif protocol not in _PROTOCOLS:
            causes.append(not_supported(f"{port_path}.protocol", protocol, _PROTOCOLS))
        if host_port:
            key = f"{port.get('hostIP', '')}/{protocol}/{host_port}"
            if key in host_ports:
                causes.append(duplicate(f"{port_path}.hostPort", key))
            host_ports.add(key)
    causes += validate_resource_requirements(container.get("resources"), f"{path}.resources")
    return causes


def validate_tolerations(
    tolerations: Any, path: str, comparison_operators: bool = False
) -> list[Cause]:
    """ValidateTolerations (pkg/apis/core/validation/validation.go, v1.36). `Lt` and `Gt` are
    refused unless `comparison_operators` (PodValidationOptions'
    AllowTaintTolerationComparisonOperators: the gate on, or the old pod uses them); then
    the value must be a canonical int64."""
    causes: list[Cause] = []
    for i, tol in enumerate(tolerations or []):
        idx = f"{path}[{i}]"
        if not isinstance(tol, Mapping):
            causes.append(invalid(idx, tol, "must be an object"))
            continue
        key, operator = tol.get("key") or "", tol.get("operator") or ""
        value, effect = tol.get("value") or "", tol.get("effect") or ""
        if key:
            causes += invalid_each(f"{idx}.key", key, is_qualified_name(key))
        if not key and operator != "Exists":
            causes.append(
                invalid(
                    f"{idx}.operator",
                    operator,
                    "operator must be Exists when `key` is empty, which means "
                    '"match all values and all keys"',
                )
            )
        if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
            causes.append(
                invalid(
                    f"{idx}.effect",
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if operator in ("Equal", ""):
            errs = is_valid_label_value(value)
            if errs:
                causes.append(invalid(f"{idx}.operator", value, ";".join(errs)))
        elif operator == "Exists":
            if value:
                causes.append(
                    invalid(
                        f"{idx}.operator",
                        dict(tol),
                        "value must be empty when `operator` is 'Exists'",
                    )
                )
        elif operator in ("Lt", "Gt"):
            if not comparison_operators:
                causes.append(
                    not_supported(f"{idx}.operator", operator, ("Equal", "Exists", "Lt", "Gt"))
                )
            else:
                for message in is_decimal_integer(value):
                    causes.append(invalid(f"{idx}.value", value, message))
                parse_error = parse_int64_error(value)
                if parse_error is not None:
                    causes.append(invalid(f"{idx}.value", value, parse_error))
        else:
            causes.append(not_supported(f"{idx}.operator", operator, ("Equal", "Exists")))
        if effect and effect not in _TAINT_EFFECTS:
            causes.append(not_supported(f"{idx}.effect", effect, _TAINT_EFFECTS))
    return causes


def _enum(spec: Mapping[str, Any], key: str, path: str, allowed: tuple[str, ...]) -> list[Cause]:
    value = spec.get(key)
    if value is None:
        return []
    if value == "":
        return [required(f"{path}.{key}")]
    return [] if value in allowed else [not_supported(f"{path}.{key}", value, allowed)]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def uses_comparison_operators(spec: Any) -> bool:
    """taintTolerationComparisonOperatorsInUse (pkg/api/pod/util.go): an old spec with an `Lt`
    or `Gt` toleration lets its update keep them with the gate off."""
    if not isinstance(spec, Mapping):
        return False
    tolerations = spec.get("tolerations")
    return isinstance(tolerations, list) and any(
        isinstance(t, Mapping) and t.get("operator") in ("Lt", "Gt") for t in tolerations
    )


def validate_pod_spec(
    spec: Any,
    path: str = "spec",
    pod_name: str | None = None,
    comparison_operators: bool = False,
) -> list[Cause]:
    if not isinstance(spec, Mapping):
        return [required(path)]
    causes: list[Cause] = []
    names: set[str] = set()
    host_ports: set[str] = set()
    containers = spec.get("containers") or []
    if not containers:
        causes.append(required(f"{path}.containers"))
    for field_name in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(field_name) or []):
            causes += _validate_container(container, f"{path}.{field_name}[{i}]", names, host_ports)
    causes += _enum(spec, "restartPolicy", path, ("Always", "OnFailure", "Never"))
    causes += _enum(
        spec, "dnsPolicy", path, ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
    )
    causes += validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector")
    causes += validate_tolerations(
        spec.get("tolerations"), f"{path}.tolerations", comparison_operators
    )
    for key in ("nodeName", "schedulerName", "priorityClassName"):
        value = spec.get(key)
        if value:
            causes += invalid_each(f"{path}.{key}", value, is_dns1123_subdomain(str(value)))
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None and _is_int(grace) and grace < 0 and grace != -1:
        causes.append(invalid(f"{path}.terminationGracePeriodSeconds", grace, NEGATIVE))
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and (not _is_int(deadline) or not 1 <= deadline <= 2**31 - 1):
        causes.append(
            invalid(
                f"{path}.activeDeadlineSeconds",
                deadline,
                "must be between 1 and 2147483647, inclusive",
            )
        )
    priority = spec.get("priority")
    if priority is not None and not _is_int(priority):
        causes.append(invalid(f"{path}.priority", priority, "must be an integer"))
    causes += validate_affinity(spec.get("affinity"), f"{path}.affinity")
    causes += validate_topology_spread_constraints(
        spec.get("topologySpreadConstraints"), f"{path}.topologySpreadConstraints"
    )
    causes += validate_scheduling_gates(spec.get("schedulingGates"), f"{path}.schedulingGates")
    causes += _validate_volumes(spec.get("volumes"), f"{path}.volumes")
    causes += validate_pod_level_resources(spec, f"{path}.resources")
    causes += validate_pod_resource_claims(spec, pod_name, path)
    causes += validate_pod_scheduling_group(spec, path)
    if spec.get("overhead") is not None:  # upstream checks it as the limits of a requirement
        causes += validate_resource_requirements(
            {"limits": spec.get("overhead")}, f"{path}.overhead"
        )
    return causes


def _validate_volumes(volumes: Any, path: str) -> list[Cause]:
    """Volume names (unique DNS labels) and the claim name of a persistentVolumeClaim source."""
    causes: list[Cause] = []
    names: set[str] = set()
    for i, volume in enumerate(volumes if isinstance(volumes, list) else []):
        if not isinstance(volume, Mapping):
            continue
        idx = f"{path}[{i}]"
        name = str(volume.get("name") or "")
        if not name:
            causes.append(required(f"{idx}.name"))
        else:
            causes += invalid_each(f"{idx}.name", name, is_dns1123_label(name))
            if name in names:
                causes.append(duplicate(f"{idx}.name", name))
            names.add(name)
        claim = volume.get("persistentVolumeClaim")
        if isinstance(claim, Mapping) and not claim.get("claimName"):
            causes.append(required(f"{idx}.persistentVolumeClaim.claimName"))
    return causes


def _validate_pod_create(pod: Mapping[str, Any]) -> list[Cause]:
    """ValidatePodCreate's rules beyond the spec's own."""
    spec = pod.get("spec")
    if isinstance(spec, Mapping) and spec.get("schedulingGates") and spec.get("nodeName"):
        return [
            forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared")
        ]
    return []


_POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


def _tolerations_only_added(new: list[Any], old: list[Any]) -> bool:
    def strip(tol: Any) -> Any:
        return (
            {k: v for k, v in tol.items() if k != "tolerationSeconds"}
            if isinstance(tol, Mapping)
            else tol
        )

    stripped_new = [strip(t) for t in new]
    return all(strip(t) in stripped_new for t in old)


def _gate_names(spec: Mapping[str, Any]) -> list[str]:
    return [g.get("name", "") for g in spec.get("schedulingGates") or [] if isinstance(g, Mapping)]


def _scheduling_gates_update(new_spec: dict[str, Any], old_spec: dict[str, Any]) -> list[Cause]:
    """Gates may only be removed; while gated, nodeSelector may gain keys (upstream rules)."""
    old_gates = _gate_names(old_spec)
    causes = [
        forbidden(
            "spec.schedulingGates",
            f"only deletion is allowed, but found new scheduling gate '{gate}'",
        )
        for gate in _gate_names(new_spec)
        if gate not in old_gates
    ]
    if old_gates:
        old_selector = dict(old_spec.get("nodeSelector") or {})
        new_selector = dict(new_spec.get("nodeSelector") or {})
        if all(new_selector.get(key) == value for key, value in old_selector.items()):
            new_spec.pop("nodeSelector", None)
            old_spec.pop("nodeSelector", None)
    return causes


def _nomination_of_a_bound_pod(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """ClearingNominatedNodeNameAfterBinding (beta, on since v1.35; ValidatePodStatusUpdate in
    pkg/apis/core/validation/validation.go): a bound pod's nominatedNodeName may be cleared,
    never set or changed."""
    nominated = (new.get("status") or {}).get("nominatedNodeName") or ""
    was = (old.get("status") or {}).get("nominatedNodeName") or ""
    if (old.get("spec") or {}).get("nodeName") and nominated and nominated != was:
        return [
            forbidden(
                "status.nominatedNodeName",
                "may not be set on pods that are already bound to a node",
            )
        ]
    return []


def validate_pod_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """Upstream's ValidatePodUpdate: the spec is immutable except a few fields."""
    causes: list[Cause] = []
    new_spec = dict(new.get("spec") or {})
    old_spec = dict(old.get("spec") or {})
    new_tols = list(new_spec.get("tolerations") or [])
    old_tols = list(old_spec.get("tolerations") or [])
    if not _tolerations_only_added(new_tols, old_tols):
        causes.append(
            forbidden(
                "spec.tolerations",
                "existing toleration can not be modified except its tolerationSeconds",
            )
        )
    old_deadline = old_spec.get("activeDeadlineSeconds")
    new_deadline = new_spec.get("activeDeadlineSeconds")
    if old_deadline is not None and (new_deadline is None or new_deadline > old_deadline):
        causes.append(
            invalid(
                "spec.activeDeadlineSeconds",
                new_deadline,
                "must be less than or equal to previous value",
            )
        )
    causes += _scheduling_gates_update(new_spec, old_spec)
    causes += _nomination_of_a_bound_pod(new, old)
    # Blank out what may change, then any remaining difference is forbidden.
    for spec in (new_spec, old_spec):
        for key in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
            spec.pop(key, None)
        for field_name in ("containers", "initContainers"):
            spec[field_name] = [
                {k: v for k, v in c.items() if k != "image"} if isinstance(c, Mapping) else c
                for c in spec.get(field_name) or []
            ]
    old_grace = old_spec.get("terminationGracePeriodSeconds")
    if (
        isinstance(old_grace, int)
        and old_grace < 0
        and new_spec.get("terminationGracePeriodSeconds") == 1
    ):
        new_spec["terminationGracePeriodSeconds"] = old_grace
    if new_spec != old_spec:
        causes.append(forbidden("spec", _POD_UPDATE_FORBIDDEN))
    return causes


# --- other kinds -------------------------------------------------------------------------------


def _validate_resource_list(values: Any, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for name, value in (values or {}).items():
        causes += validate_resource_quantity(name, value, f"{path}.{name}")
    return causes


def validate_node(node: Mapping[str, Any]) -> list[Cause]:
    status = node.get("status") or {}
    causes = _validate_resource_list(status.get("capacity"), "status.capacity")
    causes += _validate_resource_list(status.get("allocatable"), "status.allocatable")
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate((node.get("spec") or {}).get("taints") or []):
        idx = f"spec.taints[{i}]"
        if not isinstance(taint, Mapping):
            causes.append(invalid(idx, taint, "must be an object"))
            continue
        key, effect = taint.get("key") or "", taint.get("effect") or ""
        causes += invalid_each(f"{idx}.key", key, is_qualified_name(key))
        value = taint.get("value") or ""
        causes += invalid_each(f"{idx}.value", value, is_valid_label_value(value))
        if not effect:
            causes.append(required(f"{idx}.effect"))
        elif effect not in _TAINT_EFFECTS:
            causes.append(not_supported(f"{idx}.effect", effect, _TAINT_EFFECTS))
        if (key, effect) in seen:
            detail = "taints must be unique by key and effect pair"
            causes.append(duplicate(idx, dict(taint), detail))
        seen.add((key, effect))
    return causes


def validate_priority_class(pc: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    causes: list[Cause] = []
    name = (pc.get("metadata") or {}).get("name") or ""
    value = pc.get("value")
    if not _is_int(value):
        causes.append(
            required("value") if value is None else invalid("value", value, "must be an integer")
        )
    elif name.startswith("system-"):
        if SYSTEM_PRIORITY_CLASSES.get(name) != value:
            causes.append(
                forbidden(
                    "metadata.name",
                    "priority class names with 'system-' prefix are reserved for system use only. "
                    f"error: {name!s} is not a known system priority class",
                )
            )
    elif isinstance(value, int) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        causes.append(
            forbidden(
                "value",
                f"maximum allowed value of a user defined priority is "
                f"{HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    policy = pc.get("preemptionPolicy")
    if policy is not None and policy not in ("Never", "PreemptLowerPriority"):
        causes.append(not_supported("preemptionPolicy", policy, ("Never", "PreemptLowerPriority")))
    if old is not None:
        if value != old.get("value"):
            causes.append(forbidden("value", "may not be changed in an update."))
        if policy != old.get("preemptionPolicy"):
            causes.append(invalid("preemptionPolicy", policy, "field is immutable"))
    return causes


def validate_lease(lease: Mapping[str, Any]) -> list[Cause]:
    spec = lease.get("spec") or {}
    causes: list[Cause] = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and (not _is_int(duration) or duration <= 0):
        causes.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if transitions is not None and (not _is_int(transitions) or transitions < 0):
        causes.append(invalid("spec.leaseTransitions", transitions, NEGATIVE))
    return causes


# Kinds whose spec.template.spec is a pod spec, validated as one (ValidatePodTemplateSpec).
_TEMPLATE_KINDS = (
    "ReplicaSet", "StatefulSet", "ReplicationController", "Deployment", "DaemonSet", "Job",
)  # fmt: skip


def validate(
    kind: str,
    obj: dict[str, Any],
    old: dict[str, Any] | None,
    comparison_operators: bool = False,
) -> list[Cause]:
    """Field errors for creating (old is None) or updating `obj` of `kind`; empty when valid.
    `comparison_operators` is the API server's TaintTolerationComparisonOperators gate.

    An update is not refused for an error the stored object already had (one stored before a
    check existed, or written around the API): like upstream's ratcheting validation, that keeps
    status updates and bindings of such objects working."""
    causes = _validate(kind, obj, old, comparison_operators)
    if old is not None and causes:
        inherited = set(_validate(kind, old, None, comparison_operators))
        causes = [cause for cause in causes if cause not in inherited]
    return causes


def _pod_spec_of(kind: str, obj: Mapping[str, Any] | None) -> Any:
    """The pod spec of a Pod or of a workload's template (None for other kinds)."""
    if obj is None:
        return None
    spec = obj.get("spec")
    if kind == "Pod" or not isinstance(spec, Mapping):
        return spec
    template = spec.get("template")
    return template.get("spec") if isinstance(template, Mapping) else None


def _validate(
    kind: str, obj: dict[str, Any], old: dict[str, Any] | None, comparison_operators: bool
) -> list[Cause]:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return [required("metadata.name", "name or generateName is required")]
    causes = validate_object_meta(kind, meta)
    if old is not None:
        causes += validate_object_meta_update(meta, old.get("metadata") or {})
    # GetValidationOptionsFromPodSpecAndMeta / ...FromPodTemplate: the gate, or an old object
    # already using the operators.
    compare = comparison_operators or uses_comparison_operators(_pod_spec_of(kind, old))
    if kind == "Pod":
        causes += validate_pod_spec(
            obj.get("spec"), pod_name=str(meta.get("name") or ""), comparison_operators=compare
        )
        if old is not None:
            causes += validate_pod_update(obj, old)
        else:
            causes += _validate_pod_create(obj)
    elif kind in _TEMPLATE_KINDS:
        template = (obj.get("spec") or {}).get("template")
        if isinstance(template, Mapping) and template.get("spec") is not None:
            causes += validate_pod_spec(
                template.get("spec"), "spec.template.spec", comparison_operators=compare
            )
    elif kind == "Node":
        causes += validate_node(obj)
    elif kind == "PersistentVolume":
        causes += validate_persistent_volume(obj)
    elif kind == "PersistentVolumeClaim":
        causes += validate_persistent_volume_claim(obj)
    elif kind == "PodDisruptionBudget":
        causes += validate_pod_disruption_budget(obj)
    elif kind == "PriorityClass":
        causes += validate_priority_class(obj, old)
    elif kind == "Lease":
        causes += validate_lease(obj)
    elif kind == "ResourceClaim":
        causes += validate_resource_claim(obj, old)
    elif kind == "ResourceClaimTemplate":
        causes += validate_resource_claim_template(obj, old)
    elif kind == "DeviceClass":
        causes += validate_device_class(obj)
    elif kind == "ResourceSlice":
        causes += validate_resource_slice(obj, old)
    elif kind == "DeviceTaintRule":
        causes += validate_device_taint_rule(obj)
    elif kind == "Workload":
        causes += validate_workload(obj, old)
    elif kind == "PodGroup":
        causes += validate_pod_group(obj, old)
    elif kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"):
        causes += validate_rbac(kind, obj, old)
    return causes
