"""OpenAPI definitions of scheduling.k8s.io/v1beta1 Workload and PodGroup, written by hand.

kubernetes_asyncio's generated models stop at v1alpha2 (Kubernetes v1.36), so schemas.py cannot
derive these kinds from models as it does for every other served kind. The definitions follow
staging/src/k8s.io/api/scheduling/v1beta1/types.go (v1.37): field names, types, required fields,
list types and patch strategies; kubectl explain, field validation (unknown fields) and
`kubectl apply`'s patch computation read them.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]
PACKAGE = "io.k8s.api.scheduling.v1beta1."
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."


def _obj(description: str, properties: JSON, required: tuple[str, ...] = ()) -> JSON:
    definition: JSON = {"type": "object", "description": description, "properties": properties}
    if required:
        definition["required"] = list(required)
    return definition


def _ref(name: str, description: str = "") -> JSON:
    schema: JSON = {"$ref": name if name.startswith("io.") else PACKAGE + name}
    if description:
        schema["description"] = description
    return schema


def _str(description: str) -> JSON:
    return {"type": "string", "description": description}


def _int32(description: str) -> JSON:
    return {"type": "integer", "format": "int32", "description": description}


def _map_list(item: str, description: str, key: str = "name", patch: bool = False) -> JSON:
    schema: JSON = {
        "type": "array",
        "items": _ref(item),
        "description": description,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": [key],
    }
    if patch:
        schema["x-kubernetes-patch-strategy"] = "merge,retainKeys"
        schema["x-kubernetes-patch-merge-key"] = key
    return schema


_EMPTY: JSON = {"type": "object", "properties": {}}

_GROUP_FIELDS: JSON = {
    "schedulingConstraints": _ref(
        "PodGroupSchedulingConstraints",
        "schedulingConstraints defines optional scheduling "
        "constraints (e.g. topology). This field is immutable.",
    ),
    "resourceClaims": _map_list(
        "PodGroupResourceClaim",
        "resourceClaims defines which ResourceClaims may be shared "
        "among Pods in the group. This field is immutable.",
        patch=True,
    ),
    "disruptionMode": _ref(
        "DisruptionMode",
        "disruptionMode defines the mode in which a given "
        "PodGroup can be disrupted. One of Single, All. This field is "
        "immutable.",
    ),
    "priorityClassName": _str(
        "priorityClassName indicates the priority that should be "
        "considered when scheduling the pod group. This field is "
        "immutable."
    ),
    "priority": _int32(
        "priority is the value of priority of the pod group. This field is immutable."
    ),
    "preemptionPolicy": {
        **_str(
            "preemptionPolicy is the Policy for preempting pods/podgroups "
            "with lower priority. One of Never, PreemptLowerPriority."
        ),
        "enum": ["Never", "PreemptLowerPriority"],
    },
}

DEFINITIONS: dict[str, JSON] = {
    PACKAGE + "Workload": _obj(
        "Workload allows for expressing scheduling constraints that should be used when "
        "managing the lifecycle of workloads from the scheduling perspective, including "
        "scheduling, preemption, eviction and other phases.",
        {
            "apiVersion": _str(
                "APIVersion defines the versioned schema of this representation of an object."
            ),
            "kind": _str(
                "Kind is a string value representing the REST resource this object represents."
            ),
            "metadata": _ref(_META + "ObjectMeta", "metadata is the standard object metadata."),
            "spec": _ref("WorkloadSpec", "spec defines the desired behavior of a Workload."),
        },
        ("spec",),
    ),
    PACKAGE + "WorkloadList": _obj(
        "WorkloadList contains a list of Workload resources.",
        {
            "apiVersion": _str(
                "APIVersion defines the versioned schema of this representation of an object."
            ),
            "kind": _str(
                "Kind is a string value representing the REST resource this object represents."
            ),
            "metadata": _ref(_META + "ListMeta", "metadata is the standard list metadata."),
            "items": {
                "type": "array",
                "items": _ref("Workload"),
                "description": "items is the list of Workloads.",
            },
        },
        ("items",),
    ),
    PACKAGE + "WorkloadSpec": _obj(
        "WorkloadSpec defines the desired state of a Workload.",
        {
            "controllerRef": _ref(
                "TypedLocalObjectReference",
                "controllerRef is an optional reference to the controlling "
                "object, such as a Deployment or Job. This field is immutable.",
            ),
            "podGroupTemplates": _map_list(
                "PodGroupTemplate",
                "podGroupTemplates is the list of templates that make "
                "up the Workload. The maximum number of templates is 8.",
            ),
            "compositePodGroupTemplates": {
                "type": "array",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "description": "compositePodGroupTemplates is the list of CompositePodGroup "
                "templates (CompositePodGroup feature gate).",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
            },
        },
    ),
    PACKAGE + "TypedLocalObjectReference": _obj(
        "TypedLocalObjectReference allows to reference typed object inside the same namespace.",
        {
            "apiGroup": _str("apiGroup is the group for the resource being referenced."),
            "kind": _str("kind is the type of resource being referenced."),
            "name": _str("name is the name of resource being referenced."),
        },
        ("kind", "name"),
    ),
    PACKAGE + "PodGroupTemplate": _obj(
        "PodGroupTemplate represents a template for a set of pods with a scheduling policy.",
        {
            "name": _str(
                "name is a unique identifier for the PodGroupTemplate within the "
                "Workload. It must be a DNS label. This field is immutable."
            ),
            "schedulingPolicy": _ref(
                "PodGroupSchedulingPolicy",
                "schedulingPolicy defines the scheduling policy for this PodGroupTemplate.",
            ),
            **_GROUP_FIELDS,
        },
        ("name", "schedulingPolicy"),
    ),
    PACKAGE + "PodGroupSchedulingPolicy": _obj(
        "PodGroupSchedulingPolicy defines the scheduling configuration for a PodGroup. "
        "Exactly one policy must be set.",
        {
            "basic": _ref(
                "BasicSchedulingPolicy",
                "basic specifies that the pods in this group "
                "should be scheduled using standard Kubernetes scheduling behavior.",
            ),
            "gang": _ref(
                "GangSchedulingPolicy",
                "gang specifies that the pods in this group "
                "should be scheduled using all-or-nothing semantics.",
            ),
        },
    ),
    PACKAGE + "BasicSchedulingPolicy": {
        **_EMPTY,
        "description": "BasicSchedulingPolicy "
        "indicates that standard Kubernetes scheduling "
        "behavior should be used.",
    },
    PACKAGE + "GangSchedulingPolicy": _obj(
        "GangSchedulingPolicy defines the parameters for gang scheduling.",
        {
            "minCount": _int32(
                "minCount is the minimum number of pods that must be schedulable "
                "or scheduled at the same time for the scheduler to admit the "
                "entire group. It must be a positive integer."
            )
        },
        ("minCount",),
    ),
    PACKAGE + "PodGroupSchedulingConstraints": _obj(
        "PodGroupSchedulingConstraints defines scheduling constraints (e.g. topology) for a "
        "PodGroup.",
        {
            "topology": {
                "type": "array",
                "items": _ref("TopologyConstraint"),
                "x-kubernetes-list-type": "atomic",
                "description": "topology defines the topology constraints for the pod "
                "group. Currently only a single topology constraint can "
                "be specified.",
            }
        },
    ),
    PACKAGE + "TopologyConstraint": _obj(
        "TopologyConstraint defines a topology constraint for a PodGroup.",
        {
            "key": _str(
                "key specifies the key of the node label representing the topology "
                "domain. All pods within the PodGroup must be colocated within the same "
                "domain instance."
            )
        },
        ("key",),
    ),
    PACKAGE + "PodGroupResourceClaim": _obj(
        "PodGroupResourceClaim references exactly one ResourceClaim, either directly or by "
        "naming a ResourceClaimTemplate which is then turned into a ResourceClaim for the "
        "PodGroup.",
        {
            "name": _str("name uniquely identifies this resource claim inside the PodGroup."),
            "resourceClaimName": _str(
                "resourceClaimName is the name of a ResourceClaim object "
                "in the same namespace as this PodGroup."
            ),
            "resourceClaimTemplateName": _str(
                "resourceClaimTemplateName is the name of a "
                "ResourceClaimTemplate object in the same "
                "namespace as this PodGroup."
            ),
        },
        ("name",),
    ),
    PACKAGE + "DisruptionMode": _obj(
        "DisruptionMode defines how individual entities within a group can be disrupted. "
        "Exactly one mode can be set.",
        {
            "single": _ref(
                "SingleDisruptionMode",
                "single specifies that children can be disrupted independently from each other.",
            ),
            "all": _ref(
                "AllDisruptionMode",
                "all specifies that all children can only be disrupted together.",
            ),
        },
    ),
    PACKAGE + "SingleDisruptionMode": {
        **_EMPTY,
        "description": "SingleDisruptionMode "
        "specifies that children can be disrupted "
        "independently.",
    },
    PACKAGE + "AllDisruptionMode": {
        **_EMPTY,
        "description": "AllDisruptionMode specifies that children can only be disrupted together.",
    },
    PACKAGE + "PodGroup": _obj(
        "PodGroup represents a runtime instance of pods grouped together. PodGroups are "
        "created by workload controllers (Job, LWS, JobSet, etc...) from "
        "Workload.podGroupTemplates.",
        {
            "apiVersion": _str(
                "APIVersion defines the versioned schema of this representation of an object."
            ),
            "kind": _str(
                "Kind is a string value representing the REST resource this object represents."
            ),
            "metadata": _ref(_META + "ObjectMeta", "metadata is the standard object metadata."),
            "spec": _ref("PodGroupSpec", "spec defines the desired state of the PodGroup."),
            "status": _ref(
                "PodGroupStatus", "status represents the current observed state of the PodGroup."
            ),
        },
        ("spec",),
    ),
    PACKAGE + "PodGroupList": _obj(
        "PodGroupList contains a list of PodGroup resources.",
        {
            "apiVersion": _str(
                "APIVersion defines the versioned schema of this representation of an object."
            ),
            "kind": _str(
                "Kind is a string value representing the REST resource this object represents."
            ),
            "metadata": _ref(_META + "ListMeta", "Standard list metadata."),
            "items": {
                "type": "array",
                "items": _ref("PodGroup"),
                "description": "Items is the list of PodGroups.",
            },
        },
        ("items",),
    ),
    PACKAGE + "PodGroupSpec": _obj(
        "PodGroupSpec defines the desired state of a PodGroup.",
        {
            "parentCompositePodGroupName": _str(
                "parentCompositePodGroupName contains the name "
                "of the parent composite pod group "
                "(CompositePodGroup feature gate)."
            ),
            "workloadRef": _ref(
                "WorkloadReference",
                "workloadRef references an optional "
                "PodGroup template within the Workload object that was used to "
                "create the PodGroup. This field is immutable.",
            ),
            "schedulingPolicy": _ref(
                "PodGroupSchedulingPolicy",
                "schedulingPolicy defines the scheduling policy for this instance of the PodGroup.",
            ),
            **_GROUP_FIELDS,
        },
        ("schedulingPolicy",),
    ),
    PACKAGE + "WorkloadReference": _obj(
        "WorkloadReference references the Workload object together with the template that "
        "was used to create a particular PodGroup.",
        {
            "workloadName": _str("workloadName is the name of the Workload object."),
            "templateName": _str(
                "templateName is the name of a template within the Workload object."
            ),
        },
        ("templateName", "workloadName"),
    ),
    PACKAGE + "PodGroupStatus": _obj(
        "PodGroupStatus represents information about the status of a pod group.",
        {
            "conditions": {
                "type": "array",
                "items": _ref(_META + "Condition"),
                "description": "conditions represent the latest observations of the "
                "PodGroup's state (PodGroupInitiallyScheduled, "
                "DisruptionTarget).",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-patch-merge-key": "type",
            },
            "resourceClaimStatuses": _map_list(
                "PodGroupResourceClaimStatus",
                "resourceClaimStatuses is status of resource claims.",
                patch=True,
            ),
        },
    ),
    PACKAGE + "PodGroupResourceClaimStatus": _obj(
        "PodGroupResourceClaimStatus stores the generated name for the ResourceClaim of a "
        "PodGroupResourceClaim which references a ResourceClaimTemplate.",
        {
            "name": _str("name uniquely identifies this resource claim inside the PodGroup."),
            "resourceClaimName": _str(
                "resourceClaimName is the name of the ResourceClaim that "
                "was generated for the PodGroup."
            ),
        },
        ("name",),
    ),
}

# the root definition of each kind kubesim serves from this table
ROOTS = {"Workload": PACKAGE + "Workload", "PodGroup": PACKAGE + "PodGroup"}
