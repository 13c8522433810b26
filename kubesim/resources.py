"""The resources kubesim serves: the single table discovery, OpenAPI, routing and storage read.

Names, short names, categories and scopes are upstream's (what `kubectl api-resources` shows
against a real API server), so kubectl's RESTMapper resolves `po`, `no`, `deploy`... the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

VERBS_ALL = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()  # "status", "binding", "eviction"
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = VERBS_ALL
    # the key of another resource whose stored objects this one serves converted (views.py)
    stored_as: str = ""
    # a custom resource, served for an established CustomResourceDefinition
    # (customresources.py): the version its objects are stored in, its listKind
    custom: bool = False
    storage_version: str = ""
    custom_list_kind: str = ""

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def list_kind(self) -> str:
        return self.custom_list_kind or f"{self.kind}List"

    @property
    def key(self) -> str:
        """Storage key prefix: "pods", "apps/replicasets", "events.k8s.io/events"."""
        return f"{self.group}/{self.plural}" if self.group else self.plural

    @property
    def storage_key(self) -> str:
        """Where its objects live in the Store: its own key unless it is a view of another."""
        return self.stored_as or self.key


_R = ResourceType

RESOURCES: tuple[ResourceType, ...] = (
    _R(
        "",
        "v1",
        "Namespace",
        "namespaces",
        "namespace",
        False,
        ("ns",),
        ("status",),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    ),
    _R("", "v1", "Node", "nodes", "node", False, ("no",), ("status",)),
    _R(
        "",
        "v1",
        "Pod",
        "pods",
        "pod",
        True,
        ("po",),
        ("status", "binding", "eviction", "resize"),
        ("all",),
    ),
    # the legacy way to bind: POST namespaces/{ns}/bindings with metadata.name = the pod
    _R("", "v1", "Binding", "bindings", "binding", True, verbs=("create",)),
    _R("", "v1", "Event", "events", "event", True, ("ev",)),
    _R("", "v1", "ConfigMap", "configmaps", "configmap", True, ("cm",)),
    _R("", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True, ("sa",), ("token",)),
    _R("", "v1", "Service", "services", "service", True, ("svc",), ("status",), ("all",)),
    _R(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        "replicationcontroller",
        True,
        ("rc",),
        ("status", "scale"),
        ("all",),
    ),
    _R(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        True,
        ("pvc",),
        ("status",),
    ),
    _R(
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        "persistentvolume",
        False,
        ("pv",),
        ("status",),
    ),
    _R(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        "replicaset",
        True,
        ("rs",),
        ("status", "scale"),
        ("all",),
    ),
    _R(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        "statefulset",
        True,
        ("sts",),
        ("status", "scale"),
        ("all",),
    ),
    # workload kinds run by kubesim/controllers (kube-controller-manager's controllers)
    _R(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        "deployment",
        True,
        ("deploy",),
        ("status", "scale"),
        ("all",),
    ),
    _R("apps", "v1", "DaemonSet", "daemonsets", "daemonset", True, ("ds",), ("status",), ("all",)),
    _R("apps", "v1", "ControllerRevision", "controllerrevisions", "controllerrevision", True),
    _R("batch", "v1", "Job", "jobs", "job", True, (), ("status",), ("all",)),
    # one storage, two APIs: upstream keeps events.k8s.io/v1 Events as core Events in etcd
    _R("events.k8s.io", "v1", "Event", "events", "event", True, ("ev",), stored_as="events"),
    _R("coordination.k8s.io", "v1", "Lease", "leases", "lease", True),
    _R(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        "priorityclass",
        False,
        ("pc",),
    ),
    _R(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        True,
        ("pdb",),
        ("status",),
    ),
    _R("storage.k8s.io", "v1", "StorageClass", "storageclasses", "storageclass", False, ("sc",)),
    _R("storage.k8s.io", "v1", "CSINode", "csinodes", "csinode", False),
    _R("storage.k8s.io", "v1", "CSIDriver", "csidrivers", "csidriver", False),
    # listed and watched by kube-scheduler since v1.35 (NodeVolumeLimits counts the attached
    # volumes), which waits for every informer it started before its first cycle: without
    # it a current kube-scheduler never schedules against kubesim. Stored and served, not acted on.
    _R(
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        "volumeattachments",
        "volumeattachment",
        False,
        subresources=("status",),
    ),
    _R(
        "storage.k8s.io",
        "v1",
        "CSIStorageCapacity",
        "csistoragecapacities",
        "csistoragecapacity",
        True,
    ),
    # RBAC objects are stored and validated as upstream's and authorize the requests of
    # service account tokens and SubjectAccessReviews (rbac.py); the admin token may do anything
    _R("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "clusterrole", False),
    _R(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        "clusterrolebinding",
        False,
    ),
    _R("rbac.authorization.k8s.io", "v1", "Role", "roles", "role", True),
    _R("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", "rolebinding", True),
    # reviews: answered, never stored (reviews.py)
    _R(
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        "tokenreviews",
        "tokenreview",
        False,
        verbs=("create",),
    ),
    _R(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        "selfsubjectreview",
        False,
        verbs=("create",),
    ),
    _R(
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        "subjectaccessreview",
        False,
        verbs=("create",),
    ),
    _R(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
        False,
        verbs=("create",),
    ),
    # CRDs: stored, validated and established as apiextensions-apiserver does; each serves its
    # custom resources (customresources.py)
    _R(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        "customresourcedefinition",
        False,
        ("crd", "crds"),
        ("status",),
        categories=("api-extensions",),
    ),
    # Dynamic Resource Allocation, as a v1.34+ API server serves it (GA there): DRA drivers
    # publish ResourceSlices, users write claims and templates, the scheduler allocates
    # (staging/src/k8s.io/api/resource/v1/types.go; kubesim/dra.py: the simulated driver;
    # kubesim/controllers/resourceclaim.py: the resourceclaim controller)
    _R("resource.k8s.io", "v1", "DeviceClass", "deviceclasses", "deviceclass", False),
    _R(
        "resource.k8s.io",
        "v1",
        "ResourceClaim",
        "resourceclaims",
        "resourceclaim",
        True,
        subresources=("status",),
    ),
    _R(
        "resource.k8s.io",
        "v1",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        "resourceclaimtemplate",
        True,
    ),
    _R("resource.k8s.io", "v1", "ResourceSlice", "resourceslices", "resourceslice", False),
    # DeviceTaintRules taint devices of ResourceSlices from outside them (an admin's way to
    # drain a device); v1beta2 as v1.36 serves them (DRADeviceTaintRules)
    _R(
        "resource.k8s.io",
        "v1beta2",
        "DeviceTaintRule",
        "devicetaintrules",
        "devicetaintrule",
        False,
        subresources=("status",),
    ),
    # Workload-aware scheduling, as a v1.37 API server serves it (beta there): a Workload is the
    # template, a PodGroup the runtime group pods name in spec.schedulingGroup.podGroupName
    # (staging/src/k8s.io/api/scheduling/v1beta1/types.go; kubesim/validation_workload.py;
    # kubesim/schemas_workload.py: their OpenAPI, which kubernetes_asyncio has no models for)
    _R("scheduling.k8s.io", "v1beta1", "Workload", "workloads", "workload", True),
    _R(
        "scheduling.k8s.io",
        "v1beta1",
        "PodGroup",
        "podgroups",
        "podgroup",
        True,
        subresources=("status",),
    ),
)


def by_group_version() -> dict[str, list[ResourceType]]:
    """Resources grouped by "group/version" ("v1" for core), in table order."""
    grouped: dict[str, list[ResourceType]] = {}
    for resource in RESOURCES:
        grouped.setdefault(resource.group_version, []).append(resource)
    return grouped


def lookup(group: str, version: str, plural: str) -> ResourceType | None:
    for resource in RESOURCES:
        if resource.group == group and resource.version == version and resource.plural == plural:
            return resource
    return None
