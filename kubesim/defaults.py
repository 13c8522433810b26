"""Defaulting and create-time admission, as the API server applies them before storing.

Defaults follow pkg/apis/core/v1/defaults.go (plus apps/v1, scheduling/v1 defaults and the
create-time strategies that fill pod and namespace status). Admission follows upstream's
NamespaceLifecycle, Priority, DefaultTolerationSeconds and DefaultStorageClass plugins.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from apimachinery.quantity import format_quantity, parse_canonical, parse_quantity_with_format
from kubesim.resources import RESOURCES
from kubesim.validation_dra import apply_dra_defaults
from kubesim.validation_workload import apply_pod_group_defaults
from kubesim.workload_defaults import WORKLOAD_DEFAULTS

Lookup = Callable[[str, str, str], "dict[str, Any] | None"]
ListAll = Callable[[str], "Iterable[dict[str, Any]]"]

SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}
PRIORITY_CLASSES_KEY = "scheduling.k8s.io/priorityclasses"
DEFAULT_TOLERATION_SECONDS = 300
_MILLI = Fraction(1, 1000)


class AdmissionError(Exception):
    """An admission rejection; the server turns it into a Status with this code and reason."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}


# --- defaulting --------------------------------------------------------------------------------


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    """The object's spec for defaulting: a `"spec": null` decodes as an empty spec, as the Go
    decoder gives a zero struct (validation then names what is missing)."""
    spec = obj.get("spec")
    if spec is None:
        spec = obj["spec"] = {}
    return spec


def _canonical_resources(resources: Any, round_to_milli: bool) -> None:
    """Quantities as the server re-serializes them ("0.5" -> "500m"), rounded up to milli."""
    if not isinstance(resources, dict):
        return
    for name, value in list(resources.items()):
        try:
            resources[name] = _canonical_text(value, round_to_milli)
        except (ValueError, TypeError):
            continue  # left for validation to report with the field path


def _canonical_text(value: Any, round_to_milli: bool) -> str:
    amount, text, fmt = parse_canonical(value)
    if round_to_milli and (amount / _MILLI).denominator != 1:
        sign = 1 if amount > 0 else -1
        return format_quantity(sign * Fraction(-(-abs(amount) // _MILLI)) * _MILLI, fmt)
    return text


def _image_pull_policy(image: str) -> str:
    # Always for ":latest" or no tag at all (a digest counts as pinned), as SetDefaults_Container.
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return "Always"
    return "Always" if last.rsplit(":", 1)[1] == "latest" else "IfNotPresent"


def _default_probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    http_get = probe.get("httpGet")
    if isinstance(http_get, dict):
        http_get.setdefault("path", "/")
        http_get.setdefault("scheme", "HTTP")


def _default_container(container: Any, host_network: bool) -> None:
    if not isinstance(container, dict):
        return
    if "imagePullPolicy" not in container and isinstance(container.get("image"), str):
        container["imagePullPolicy"] = _image_pull_policy(container["image"])
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if host_network and not port.get("hostPort") and "containerPort" in port:
                port["hostPort"] = port["containerPort"]
    for env in container.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(container.get(probe))
    resources = container.setdefault("resources", {})
    if isinstance(resources, dict):
        limits, requests = resources.get("limits"), resources.get("requests")
        _canonical_resources(limits, round_to_milli=True)
        _canonical_resources(requests, round_to_milli=True)
        # SetDefaults_Pod: a resource with only a limit gets the limit as its request.
        if isinstance(limits, dict) and limits:
            requests = resources.setdefault("requests", {})
            if isinstance(requests, dict):
                for name, value in limits.items():
                    requests.setdefault(name, value)


def _default_volume(volume: Any) -> None:
    if not isinstance(volume, dict):
        return
    sources = [k for k in volume if k != "name"]
    if not sources:
        volume["emptyDir"] = {}
    for source in ("configMap", "secret", "downwardAPI", "projected"):
        if isinstance(volume.get(source), dict):
            volume[source].setdefault("defaultMode", 420)


def default_pod_spec(spec: dict[str, Any]) -> None:
    """SetDefaults_PodSpec and the container/volume defaults it implies (also for templates)."""
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("securityContext", {})
    spec.setdefault("terminationGracePeriodSeconds", 30)
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    spec.setdefault("enableServiceLinks", True)
    host_network = bool(spec.get("hostNetwork"))
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or []:
            _default_container(container, host_network)
    for volume in spec.get("volumes") or []:
        _default_volume(volume)
    _canonical_resources(spec.get("overhead"), round_to_milli=True)


def _sum_positive(containers: Iterable[Any], part: str) -> dict[str, Fraction]:
    totals: dict[str, Fraction] = {}
    for container in containers:
        resources = (container.get("resources") or {}) if isinstance(container, dict) else {}
        for name, value in (resources.get(part) or {}).items():
            if name not in ("cpu", "memory"):
                continue
            try:
                amount, _ = parse_quantity_with_format(value)
            except (ValueError, TypeError):
                continue
            if amount > 0:
                totals[name] = totals.get(name, Fraction(0)) + amount
    return totals


def pod_qos_class(spec: dict[str, Any]) -> str:
    """Upstream's GetPodQOS over cpu and memory of all (init) containers."""
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    requests = _sum_positive(containers, "requests")
    limits = _sum_positive(containers, "limits")
    if not requests and not limits:
        return "BestEffort"
    guaranteed = all({"cpu", "memory"} <= set(_sum_positive([c], "limits")) for c in containers)
    if (
        guaranteed
        and requests.keys() == limits.keys()
        and all(requests[k] == limits[k] for k in requests)
    ):
        return "Guaranteed"
    return "Burstable"


def _default_pod(pod: dict[str, Any]) -> None:
    spec = _spec(pod)
    if isinstance(spec, dict):
        default_pod_spec(spec)
    status = pod.setdefault("status", {})
    if isinstance(status, dict) and isinstance(spec, dict):
        status.setdefault("phase", "Pending")
        status["qosClass"] = pod_qos_class(spec)


def _default_template(obj: dict[str, Any]) -> None:
    spec = _spec(obj)
    template = spec.get("template") if isinstance(spec, dict) else None
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        default_pod_spec(template["spec"])


def _default_node(node: dict[str, Any]) -> None:
    status = node.get("status")
    if not isinstance(status, dict):
        return
    _canonical_resources(status.get("capacity"), round_to_milli=False)
    _canonical_resources(status.get("allocatable"), round_to_milli=False)
    if "allocatable" not in status and isinstance(status.get("capacity"), dict):
        status["allocatable"] = dict(status["capacity"])


def _default_namespace(ns: dict[str, Any]) -> None:
    meta = ns.setdefault("metadata", {})
    name = meta.get("name")
    if name:
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = name
    finalizers = _spec(ns).setdefault("finalizers", [])
    if "kubernetes" not in finalizers:
        finalizers.append("kubernetes")
    ns.setdefault("status", {}).setdefault("phase", "Active")


def _default_service(svc: dict[str, Any]) -> None:
    spec = _spec(svc)
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "targetPort" not in port and "port" in port:
                port["targetPort"] = port["port"]


def _default_replicated(obj: dict[str, Any], kind: str) -> None:
    spec = _spec(obj)
    spec.setdefault("replicas", 1)
    if kind == "ReplicationController":
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
        if labels and not spec.get("selector"):
            spec["selector"] = dict(labels)
    if kind == "StatefulSet":
        spec.setdefault("podManagementPolicy", "OrderedReady")
        spec.setdefault(
            "updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
        )
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault(
            "persistentVolumeClaimRetentionPolicy",
            {"whenDeleted": "Retain", "whenScaled": "Retain"},
        )
    _default_template(obj)


def _default_claim(claim: dict[str, Any]) -> None:
    spec = _spec(claim)
    if isinstance(spec, dict):
        spec.setdefault("volumeMode", "Filesystem")
    status = claim.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("phase", "Pending")


def _default_volume_object(volume: dict[str, Any]) -> None:
    spec = _spec(volume)
    if isinstance(spec, dict):
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        spec.setdefault("volumeMode", "Filesystem")
    status = volume.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("phase", "Pending")


def _default_storage_class(storage_class: dict[str, Any]) -> None:
    storage_class.setdefault("reclaimPolicy", "Delete")
    storage_class.setdefault("volumeBindingMode", "Immediate")


def _default_csi_driver(driver: dict[str, Any]) -> None:
    spec = _spec(driver)
    if not isinstance(spec, dict):
        return
    for key, value in (
        ("attachRequired", True),
        ("podInfoOnMount", False),
        ("requiresRepublish", False),
        ("storageCapacity", False),
        ("seLinuxMount", False),
        ("fsGroupPolicy", "ReadWriteOnceWithFSType"),
    ):
        spec.setdefault(key, value)
    spec.setdefault("volumeLifecycleModes", ["Persistent"])


# core/v1 and storage/v1 SetDefaults_PersistentVolume(Claim), _StorageClass, _CSIDriver
_STORAGE_DEFAULTS: dict[str, Callable[[dict[str, Any]], None]] = {
    "PersistentVolumeClaim": _default_claim,
    "PersistentVolume": _default_volume_object,
    "StorageClass": _default_storage_class,
    "CSIDriver": _default_csi_driver,
}


def _default_binding(binding: dict[str, Any]) -> None:
    """rbac/v1 SetDefaults_(Cluster)RoleBinding and SetDefaults_Subject: the RBAC group where
    it may be left out (a ServiceAccount subject has none)."""
    group = "rbac.authorization.k8s.io"
    ref = binding.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = group
    for subject in binding.get("subjects") or []:
        if (
            isinstance(subject, dict)
            and not subject.get("apiGroup")
            and subject.get("kind") in ("User", "Group")
        ):
            subject["apiGroup"] = group


def apply_defaults(kind: str, obj: dict[str, Any]) -> None:
    """Fill the defaults the API server would, in place."""
    if kind == "Pod":
        _default_pod(obj)
    elif kind in ("ReplicaSet", "StatefulSet", "ReplicationController"):
        _default_replicated(obj, kind)
    elif kind in WORKLOAD_DEFAULTS:
        WORKLOAD_DEFAULTS[kind](obj)
        _default_template(obj)
    elif kind == "Node":
        _default_node(obj)
    elif kind == "Namespace":
        _default_namespace(obj)
    elif kind == "Service":
        _default_service(obj)
    elif kind == "PriorityClass":
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    elif kind in _STORAGE_DEFAULTS:
        _STORAGE_DEFAULTS[kind](obj)
    elif kind in ("RoleBinding", "ClusterRoleBinding"):
        _default_binding(obj)
    elif kind in ("ResourceClaim", "ResourceClaimTemplate"):
        apply_dra_defaults(kind, obj)
    elif kind == "PodGroup":
        apply_pod_group_defaults(obj)


# --- admission ---------------------------------------------------------------------------------


def _resource_of(kind: str) -> tuple[str, str, bool]:
    """(plural, group, namespaced) of a kind; the core group wins for "Event"."""
    for resource in RESOURCES:
        if resource.kind == kind:
            return resource.plural, resource.group, resource.namespaced
    return kind.lower() + "s", "", True


def _forbidden(kind: str, obj: dict[str, Any], reason: str) -> AdmissionError:
    plural, group, _ = _resource_of(kind)
    name = (obj.get("metadata") or {}).get("name") or ""
    qualified = f"{plural}.{group}" if group else plural
    return AdmissionError(
        403,
        "Forbidden",
        f"{qualified} {json.dumps(name)} is forbidden: {reason}",
        {"name": name, "group": group, "kind": plural},
    )


def _admit_namespace(kind: str, obj: dict[str, Any], lookup: Lookup) -> None:
    namespace = (obj.get("metadata") or {}).get("namespace") or ""
    if not namespace:
        return
    ns = lookup("namespaces", "", namespace)
    if ns is None:
        raise AdmissionError(
            404,
            "NotFound",
            f'namespaces "{namespace}" not found',
            {"name": namespace, "kind": "namespaces"},
        )
    terminating = (ns.get("status") or {}).get("phase") == "Terminating" or (
        ns.get("metadata") or {}
    ).get("deletionTimestamp")
    if terminating:
        raise _forbidden(
            kind,
            obj,
            f"unable to create new content in namespace {namespace} because it is being terminated",
        )


def _builtin_priority_class(name: str) -> dict[str, Any] | None:
    if name not in SYSTEM_PRIORITY_CLASSES:
        return None
    return {
        "metadata": {"name": name},
        "value": SYSTEM_PRIORITY_CLASSES[name],
        "preemptionPolicy": "PreemptLowerPriority",
    }


def _global_default(list_all: ListAll | None) -> dict[str, Any] | None:
    """The globalDefault PriorityClass with the lowest value, as upstream picks among several."""
    if list_all is None:
        return None
    defaults = [pc for pc in list_all(PRIORITY_CLASSES_KEY) if pc.get("globalDefault")]
    if not defaults:
        return None
    return min(defaults, key=lambda pc: int(pc.get("value") or 0))


def _priority_from_class(
    kind: str, obj: dict[str, Any], lookup: Lookup, list_all: ListAll | None
) -> tuple[int, str | None]:
    """The priority and preemption policy priority admission computes for a Pod or a PodGroup
    (upstream plugin/pkg/admission/priority/admission.go): an empty priorityClassName takes the
    global default's name, value and policy (none: "", 0 and no policy); a named class must
    exist ("no PriorityClass with name X was found", 403); a given spec.priority must equal the
    value computed."""
    spec = _spec(obj)
    class_name = spec.get("priorityClassName") or ""
    preemption: str | None = None
    if not class_name:
        default = _global_default(list_all)
        priority = 0
        if default is not None:
            spec["priorityClassName"] = (default.get("metadata") or {}).get("name", "")
            priority = int(default.get("value") or 0)
            preemption = default.get("preemptionPolicy")
    else:
        pc = lookup(PRIORITY_CLASSES_KEY, "", class_name) or _builtin_priority_class(class_name)
        if pc is None:
            raise _forbidden(kind, obj, f"no PriorityClass with name {class_name} was found")
        priority = int(pc.get("value") or 0)
        preemption = pc.get("preemptionPolicy") or "PreemptLowerPriority"
    given = spec.get("priority")
    if given is not None and given != priority:
        # The PodGroup's message was not in the stored Go sources: it follows the pod's.
        where = "pod spec" if kind == "Pod" else "pod group spec"
        raise _forbidden(
            kind,
            obj,
            f"the integer value of priority ({given}) must not be provided in {where}; priority "
            f"admission controller computed {priority} from the given PriorityClass name",
        )
    spec["priority"] = priority
    return priority, preemption


def _admit_priority(obj: dict[str, Any], lookup: Lookup, list_all: ListAll | None) -> None:
    _, preemption = _priority_from_class("Pod", obj, lookup, list_all)
    if preemption is not None:
        spec = _spec(obj)
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != preemption:
            raise _forbidden(
                "Pod",
                obj,
                f"the string value of PreemptionPolicy ({given_policy}) must not be provided in "
                f"pod spec; priority admission controller computed {preemption} from the given "
                "PriorityClass name",
            )
        spec["preemptionPolicy"] = preemption


def _admit_pod_group_priority(
    obj: dict[str, Any], lookup: Lookup, list_all: ListAll | None
) -> None:
    """Priority admission of a scheduling.k8s.io PodGroup on create (TestAdmitPodGroup): as a
    pod's, without the preemption policy. Workload templates are not admitted (upstream
    #139907: "PodGroupTemplate is not affected by admission - only PodGroup is"); updates leave
    a PodGroup as it is. spec.preemptionPolicy is filled only behind the alpha
    PodGroupPreemptionPolicy gate, off in v1.37, so it is left alone. kubesim serves v1beta1 as
    v1.37 does, where the fields are part of GenericWorkload (on), so the admission always
    runs."""
    _priority_from_class("PodGroup", obj, lookup, list_all)


def _admit_default_tolerations(obj: dict[str, Any]) -> None:
    spec = _spec(obj)
    tolerations = spec.get("tolerations") or []

    def tolerated(taint_key: str) -> bool:
        return any(
            isinstance(t, dict)
            and (t.get("key") in (taint_key, "", None))
            and (t.get("effect") in ("NoExecute", "", None))
            for t in tolerations
        )

    added = [
        {
            "key": key,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
        }
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
        if not tolerated(key)
    ]
    if added:
        spec["tolerations"] = [*tolerations, *added]


def _admit_priority_class(obj: dict[str, Any], list_all: ListAll | None) -> None:
    if not obj.get("globalDefault"):
        return
    current = _global_default(list_all)
    if current is not None:
        current_name = (current.get("metadata") or {}).get("name")
        raise _forbidden(
            "PriorityClass",
            obj,
            f"PriorityClass {current_name} is already marked as default. Only one default can "
            "exist",
        )


STORAGE_CLASSES_KEY = "storage.k8s.io/storageclasses"
DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def default_storage_class(classes: Iterable[dict[str, Any]]) -> str | None:
    """The default StorageClass's name: the newest of those marked default, ties by name
    (upstream pkg/volume/util GetDefaultClass)."""
    marked = []
    for storage_class in classes:
        meta = storage_class.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        if isinstance(annotations, dict) and any(
            annotations.get(key) == "true" for key in DEFAULT_CLASS_ANNOTATIONS
        ):
            marked.append((str(meta.get("creationTimestamp") or ""), str(meta.get("name") or "")))
    if not marked:
        return None
    newest = max(created for created, _ in marked)
    return min(name for created, name in marked if created == newest)


def _admit_default_storage_class(claim: dict[str, Any], list_all: ListAll | None) -> None:
    """DefaultStorageClass admission: a claim with no class field at all (nil, not "") gets
    the default class (plugin/pkg/admission/storage/storageclass/setdefault)."""
    spec = _spec(claim)
    if not isinstance(spec, dict) or spec.get("storageClassName") is not None:
        return
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    if "volume.beta.kubernetes.io/storage-class" in annotations or list_all is None:
        return
    name = default_storage_class(list_all(STORAGE_CLASSES_KEY))
    if name is not None:
        spec["storageClassName"] = name


def admit_create(
    kind: str,
    obj: dict[str, Any],
    lookup: Lookup,
    list_all: ListAll | None = None,
) -> None:
    """Run create-time admission in place; raises AdmissionError to reject.

    lookup(resource_key, namespace, name) fetches one stored object; list_all(resource_key),
    when given, lists a resource (needed for the globalDefault PriorityClass and the default
    StorageClass).
    """
    _, _, namespaced = _resource_of(kind)
    if namespaced:
        _admit_namespace(kind, obj, lookup)
    if kind == "Pod":
        _admit_default_tolerations(obj)
        _admit_priority(obj, lookup, list_all)
    elif kind == "PriorityClass":
        _admit_priority_class(obj, list_all)
    elif kind == "PersistentVolumeClaim":
        _admit_default_storage_class(obj, list_all)
    elif kind == "PodGroup":
        _admit_pod_group_priority(obj, lookup, list_all)


def admit_update(kind: str, obj: dict[str, Any], old: dict[str, Any]) -> None:
    """Priority admission on update: keep the priority fields computed at create."""
    if kind != "Pod":
        return
    spec, old_spec = _spec(obj), old.get("spec") or {}
    for key in ("priority", "preemptionPolicy"):
        if spec.get(key) is None and old_spec.get(key) is not None:
            spec[key] = old_spec[key]
