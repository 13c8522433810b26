"""`PodView`, a pod as the scheduler sees it, and how it is built from the pod's decoded JSON.

What the pod requests (and its non-zero variant for scoring) comes from
scheduler.api.requests.scheduler_requests, upstream's resourcehelper.PodRequests as
pkg/scheduler/framework/types.go applies it: containers, init containers and sidecars, pod-level
resources, overhead, and the larger of desired and allocated/actuated amounts during a resize.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.api.fast_replace import replacer
from scheduler.api.fields import (
    EMPTY,
    as_int,
    as_list,
    as_mapping,
    as_str,
    as_str_map,
    is_mapping,
)
from scheduler.api.interning import intern_all_but_spec, intern_metadata, intern_strings
from scheduler.api.podaffinity import NO_POD_AFFINITY, PodAffinityInfo, pod_affinity_from_spec
from scheduler.api.request_gates import request_gates
from scheduler.api.requests import (
    is_pod_level_requests_set,
    requests_with_pod_level,
    scheduler_requests,
    status_matters,
)
from scheduler.api.resource import (
    NO_CLAIM_STATUSES,
    PodResourceClaim,
    pod_resource_claim_statuses,
    pod_resource_claims,
)
from scheduler.api.selectors import NodeSelector, parse_node_selector_term
from scheduler.api.values import (
    HostPort,
    OwnerReference,
    PreferredSchedulingTerm,
    Resource,
    Toleration,
    parse_owner_references,
)
from scheduler.api.workload import pod_scheduling_group


@dataclass(frozen=True, slots=True, eq=False)
class PodView:
    """A pod as the scheduler sees it. Identity is the uid (two views of one pod compare equal)."""

    raw: Mapping[str, Any] = field(repr=False)
    uid: str
    namespace: str
    name: str
    resource_version: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    owner_references: tuple[OwnerReference, ...]
    creation_timestamp: str
    deletion_timestamp: str | None
    node_name: str  # "" while unbound
    nominated_node_name: str
    scheduler_name: str
    phase: str
    priority: int  # spec.priority, 0 when unset
    preemption_policy: str  # "PreemptLowerPriority" (default) | "Never"
    scheduling_gates: tuple[str, ...]
    # scheduler.api.requests.scheduler_requests: what the pod requests (pod-level resources,
    # resize status included), and the same with the 100m / 200Mi defaults (scoring only).
    requests: Resource
    non_zero_milli_cpu: int
    non_zero_memory: int
    host_ports: tuple[HostPort, ...]
    tolerations: tuple[Toleration, ...]
    node_selector: Mapping[str, str]
    required_node_affinity: NodeSelector | None
    preferred_node_affinity: tuple[PreferredSchedulingTerm, ...]
    images: tuple[str, ...]  # container and init container images, normalized (":latest" added)
    pvc_names: tuple[str, ...]  # spec.volumes[*].persistentVolumeClaim.claimName
    # spec.affinity.podAffinity / podAntiAffinity, parsed (InterPodAffinity)
    pod_affinity: PodAffinityInfo = NO_POD_AFFINITY
    # spec.resourceClaims (DynamicResources), and status.resourceClaimStatuses: entry name →
    # the claim the resourceclaim controller generated from its template (None: none needed)
    resource_claims: tuple[PodResourceClaim, ...] = ()
    resource_claim_statuses: Mapping[str, str | None] = field(
        default_factory=lambda: NO_CLAIM_STATUSES
    )
    # spec.schedulingGroup.podGroupName (workload-aware scheduling): None for a pod without a
    # group, so that such pods cost one attribute test in the PodGroup paths.
    scheduling_group: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def is_bound(self) -> bool:
        return bool(self.node_name)

    @property
    def is_terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PodView):
            return NotImplemented
        return self.uid == other.uid and self.resource_version == other.resource_version

    def __hash__(self) -> int:
        return hash(self.uid)

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: PodView | None = None) -> PodView:
        return pod_view_from_dict(obj, previous)

    def with_node(self, node_name: str) -> PodView:
        """A copy bound to `node_name` (what the cache assumes before the API confirms it)."""
        return pod_view_with_node(self, node_name)


_replace = replacer(PodView)


def pod_view_from_dict(
    obj: Mapping[str, Any], previous: PodView | None = None, *, template: PodView | None = None
) -> PodView:
    """The view of one pod; raises MalformedObject naming the field that cannot be read.

    ``previous``, the view of an earlier version of the same pod, lets an update whose spec did
    not change but for spec.nodeName (a binding, status changes) reuse what was derived from
    the spec: most watch events of a pod are of that kind, and the spec is the costly part.
    ``template``, the view of another pod (PodParser: a recent one of the same owner), does the
    same for a new pod whose spec equals the template's but for spec.nodeName: the pods of one
    ReplicaSet, Job or benchmark template.
    """
    raw = as_mapping(obj, "pod")
    meta = as_mapping(raw.get("metadata"), "metadata")
    spec = as_mapping(raw.get("spec"), "spec")
    status = as_mapping(raw.get("status"), "status")
    if previous is not None and _same_spec_but_node(spec, previous.raw.get("spec")):
        # only the rest is interned: the status of a later version is mostly its own
        spec, outside = _with_spec_of(previous, raw, meta, spec, status, intern_metadata)
        if previous.pod_affinity.uses_label_keys and outside["labels"] != previous.labels:
            # matchLabelKeys read the pod's own labels
            outside["pod_affinity"] = _pod_affinity(spec, outside)
        return _replace(previous, outside)
    if (
        previous is None
        and template is not None
        and _same_spec_but_node(spec, template.raw.get("spec"))
    ):
        spec, outside = _with_spec_of(template, raw, meta, spec, status, intern_all_but_spec)
        # what reads more than the spec: generic ephemeral volumes name their claims after the
        # pod, pod affinity terms default to its namespace and read its labels
        outside["pvc_names"] = _pvc_names(spec.get("volumes"), outside["name"])
        if template.pod_affinity is not NO_POD_AFFINITY:
            outside["pod_affinity"] = _pod_affinity(spec, outside)
        return _replace(template, outside)

    intern_strings(raw)  # the view keeps raw: share its repeated strings with other pods
    containers = as_list(spec.get("containers"), "spec.containers")
    init_containers = as_list(spec.get("initContainers"), "spec.initContainers")
    host_ports, images = _containers(containers, init_containers)
    requests, non_zero_milli_cpu, non_zero_memory = scheduler_requests(spec, status)

    affinity = as_mapping(spec.get("affinity"), "spec.affinity")
    node_affinity = as_mapping(
        affinity.get("nodeAffinity"),
        "spec.affinity.nodeAffinity",
    )
    required, preferred = _node_affinity(node_affinity)
    outside_spec = _outside_spec(raw, meta, spec, status)
    priority = spec.get("priority")
    return PodView(
        **outside_spec,
        scheduler_name=as_str(spec.get("schedulerName"), "spec.schedulerName", "default-scheduler"),
        priority=0 if priority is None else as_int(priority, "spec.priority"),
        preemption_policy=as_str(
            spec.get("preemptionPolicy"), "spec.preemptionPolicy", "PreemptLowerPriority"
        ),
        scheduling_gates=_scheduling_gates(spec.get("schedulingGates")),
        requests=requests,
        non_zero_milli_cpu=non_zero_milli_cpu,
        non_zero_memory=non_zero_memory,
        host_ports=host_ports,
        tolerations=_tolerations(spec.get("tolerations")),
        node_selector=as_str_map(spec.get("nodeSelector"), "spec.nodeSelector"),
        required_node_affinity=required,
        preferred_node_affinity=preferred,
        images=images,
        pvc_names=_pvc_names(spec.get("volumes"), outside_spec["name"]),
        pod_affinity=_pod_affinity(spec, outside_spec),
        resource_claims=pod_resource_claims(spec.get("resourceClaims")),
        scheduling_group=pod_scheduling_group(spec.get("schedulingGroup")),
    )


def _with_spec_of(
    source: PodView,
    raw: Mapping[str, Any],
    meta: Mapping[str, Any],
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
    intern: Callable[[Any], None],
) -> tuple[Mapping[str, Any], dict[str, Any]]:
    """`raw`'s spec, now made of `source`'s spec objects, and the fields to replace in `source`,
    a view whose spec equals `raw`'s but for nodeName (an earlier version of the pod, or a
    template). The spec objects are interned already (`intern` does the rest of `raw`), and
    everything derived from the spec stays `source`'s but the requests during an in-place
    resize of either pod, counted again from this pod's spec and status (test_views.py and
    test_pod_templates.py in tests/scheduler_api hold the result to a fresh parse)."""
    spec = _share_spec(raw, spec, source.raw.get("spec"))
    intern(raw)
    outside = _outside_spec(raw, meta, spec, status)
    source_status = source.raw.get("status")
    pod_level_status = request_gates().pod_level_status
    if status_matters(spec, status, pod_level_status) or status_matters(
        spec, source_status if is_mapping(source_status) else EMPTY, pod_level_status
    ):
        requests, outside["non_zero_milli_cpu"], outside["non_zero_memory"] = scheduler_requests(
            spec, status
        )
        outside["requests"] = requests
    return spec, outside


class PodParser:
    """The pod informer's parse function: pod_view_from_dict with, for a pod it has not seen,
    the last pod it parsed of the same namespace and owner (its first owner reference, else
    its generateName) as the template. A pod of ever new specs costs one dict comparison
    more. Holds at most MAX_TEMPLATES views (of pods the informer holds anyway, mostly)."""

    MAX_TEMPLATES = 256

    def __init__(self) -> None:
        self._templates: dict[tuple[str, str], PodView] = {}

    def __call__(self, obj: Mapping[str, Any], previous: PodView | None = None) -> PodView:
        if previous is not None:
            return pod_view_from_dict(obj, previous)
        key = _template_key(obj)
        template = self._templates.get(key) if key is not None else None
        view = pod_view_from_dict(obj, template=template)
        if key is not None:
            if len(self._templates) >= self.MAX_TEMPLATES and key not in self._templates:
                self._templates.clear()
            self._templates[key] = view
        return view


def _template_key(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(namespace, owner uid or generateName) of a decoded pod; None when either is not a
    string (pod_view_from_dict then names what is wrong)."""
    meta = obj.get("metadata") if is_mapping(obj) else None
    if not is_mapping(meta):
        return None
    namespace = meta.get("namespace", "")
    owners = meta.get("ownerReferences")
    owner = owners[0] if owners.__class__ is list and owners else None
    family = owner.get("uid") if is_mapping(owner) else meta.get("generateName", "")
    if namespace.__class__ is not str or family.__class__ is not str:
        return None
    return namespace, family


def requests_for_resize_hints(pod: PodView) -> Resource:
    """The pod's requests as the queue's scale-down event (events.go extractPodScaleDown) and
    NodeResourcesFit's hint (isSchedulableAfterPodScaleDown) count them: pod-level requests
    included even with PodLevelResources off (scheduler.api.requests.requests_with_pod_level).
    Only a pod with pod-level requests under that gate off differs from ``pod.requests``."""
    if request_gates().pod_level_resources:
        return pod.requests
    spec = pod.raw.get("spec")
    if not isinstance(spec, Mapping) or not spec.get("resources"):
        return pod.requests
    if not is_pod_level_requests_set(spec):
        return pod.requests
    status = pod.raw.get("status")
    return requests_with_pod_level(spec, status if isinstance(status, Mapping) else EMPTY)


def _pod_affinity(spec: Mapping[str, Any], outside_spec: Mapping[str, Any]) -> PodAffinityInfo:
    affinity = as_mapping(spec.get("affinity"), "spec.affinity")
    if not affinity:
        return NO_POD_AFFINITY
    return pod_affinity_from_spec(affinity, outside_spec["namespace"], outside_spec["labels"])


def _outside_spec(
    raw: Mapping[str, Any],
    meta: Mapping[str, Any],
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
) -> dict[str, Any]:
    """The PodView fields read from metadata, status and spec.nodeName."""
    return {
        "raw": raw,
        "uid": as_str(meta.get("uid"), "metadata.uid"),
        "namespace": as_str(meta.get("namespace"), "metadata.namespace", "default"),
        "name": as_str(meta.get("name"), "metadata.name"),
        "resource_version": as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
        "labels": as_str_map(meta.get("labels"), "metadata.labels"),
        "annotations": as_str_map(meta.get("annotations"), "metadata.annotations"),
        "owner_references": parse_owner_references(meta.get("ownerReferences")),
        "creation_timestamp": as_str(meta.get("creationTimestamp"), "metadata.creationTimestamp"),
        "deletion_timestamp": _optional_str(
            meta.get("deletionTimestamp"), "metadata.deletionTimestamp"
        ),
        "node_name": as_str(spec.get("nodeName"), "spec.nodeName"),
        "nominated_node_name": as_str(status.get("nominatedNodeName"), "status.nominatedNodeName"),
        "phase": as_str(status.get("phase"), "status.phase"),
        "resource_claim_statuses": pod_resource_claim_statuses(status.get("resourceClaimStatuses")),
    }


def _same_spec_but_node(spec: Mapping[str, Any], old: Any) -> bool:
    """Whether `spec` equals `old` but for spec.nodeName: one dict comparison, made in C."""
    if not is_mapping(old):
        return False
    node_name = spec.get("nodeName", _ABSENT)
    if node_name != old.get("nodeName", _ABSENT):
        old = dict(old)
        if node_name is _ABSENT:
            del old["nodeName"]
        else:
            old["nodeName"] = node_name
    return bool(spec == old)


_ABSENT = object()


def _share_spec(raw: Mapping[str, Any], spec: Mapping[str, Any], old: Any) -> Mapping[str, Any]:
    """The spec of `raw`, equal to `old` but for nodeName, rebuilt from `old`'s objects so
    that versions of one pod share them (pod_view_with_node shares them the same way)."""
    if raw.__class__ is not dict or old.__class__ is not dict:
        return spec
    shared = {key: value for key, value in old.items() if key != "nodeName"}
    if "nodeName" in spec:
        shared["nodeName"] = spec["nodeName"]
    raw["spec"] = shared
    return shared


def pod_view_with_node(view: PodView, node_name: str) -> PodView:
    """A copy of `view` bound to `node_name`; `raw` shows spec.nodeName too."""
    raw = dict(view.raw)
    raw["spec"] = {**as_mapping(raw.get("spec"), "spec"), "nodeName": node_name}
    return _replace(view, {"raw": raw, "node_name": node_name})


def pod_has_affinity(view: PodView) -> bool:
    """Upstream's podWithAffinity: spec.affinity has podAffinity or podAntiAffinity."""
    affinity = _affinity(view)
    return affinity.get("podAffinity") is not None or affinity.get("podAntiAffinity") is not None


def pod_has_required_anti_affinity(view: PodView) -> bool:
    """Upstream's podWithRequiredAntiAffinity."""
    anti = _affinity(view).get("podAntiAffinity")
    return isinstance(anti, Mapping) and bool(
        anti.get("requiredDuringSchedulingIgnoredDuringExecution")
    )


def _affinity(view: PodView) -> Mapping[str, Any]:
    spec = view.raw.get("spec")
    affinity = spec.get("affinity") if is_mapping(spec) else None
    return affinity if is_mapping(affinity) else EMPTY


def normalized_image_name(name: str) -> str:
    """Upstream ImageLocality's normalizedImageName: add ":latest" when there is no tag."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def _containers(
    containers: list[Any], init_containers: list[Any]
) -> tuple[tuple[HostPort, ...], tuple[str, ...]]:
    """(host ports, images) of the pod's containers."""
    ports: list[HostPort] = []
    images: list[str] = []
    for index, container in enumerate(containers):
        path = f"spec.containers[{index}]"
        container = as_mapping(container, path)
        if "ports" in container:
            ports.extend(_host_ports(container.get("ports"), path))
        images.append(_image(container, path))
    init_images: list[str] = []
    for index, container in enumerate(init_containers):
        path = f"spec.initContainers[{index}]"
        container = as_mapping(container, path)
        restart = as_str(container.get("restartPolicy"), f"{path}.restartPolicy")
        # Sidecars hold their host ports for the pod's lifetime (upstream GetHostPorts).
        if restart == "Always" and "ports" in container:
            ports.extend(_host_ports(container.get("ports"), path))
        init_images.append(_image(container, path))
    # Upstream's ImageLocality walks init containers first.
    return tuple(ports), tuple(init_images + images)


def _host_ports(value: Any, path: str) -> list[HostPort]:
    result: list[HostPort] = []
    for index, port in enumerate(as_list(value, f"{path}.ports")):
        port_path = f"{path}.ports[{index}]"
        port = as_mapping(port, port_path)
        host_port = as_int(port.get("hostPort"), f"{port_path}.hostPort")
        if host_port <= 0:
            continue
        result.append(
            HostPort(
                ip=as_str(port.get("hostIP"), f"{port_path}.hostIP") or "0.0.0.0",
                protocol=as_str(port.get("protocol"), f"{port_path}.protocol") or "TCP",
                port=host_port,
            )
        )
    return result


def _image(container: Mapping[str, Any], path: str) -> str:
    return normalized_image_name(as_str(container.get("image"), f"{path}.image"))


def _tolerations(value: Any) -> tuple[Toleration, ...]:
    if not value:
        return ()
    result: list[Toleration] = []
    for index, item in enumerate(as_list(value, "spec.tolerations")):
        path = f"spec.tolerations[{index}]"
        item = as_mapping(item, path)
        seconds = item.get("tolerationSeconds")
        result.append(
            Toleration(
                key=as_str(item.get("key"), f"{path}.key"),
                operator=as_str(item.get("operator"), f"{path}.operator") or "Equal",
                value=as_str(item.get("value"), f"{path}.value"),
                effect=as_str(item.get("effect"), f"{path}.effect"),
                toleration_seconds=None
                if seconds is None
                else as_int(seconds, f"{path}.tolerationSeconds"),
            )
        )
    return tuple(result)


def _node_affinity(
    node_affinity: Mapping[str, Any],
) -> tuple[NodeSelector | None, tuple[PreferredSchedulingTerm, ...]]:
    if not node_affinity:
        return None, ()
    base = "spec.affinity.nodeAffinity"
    required_raw = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    required = (
        None
        if required_raw is None
        else NodeSelector.from_dict(
            required_raw, f"{base}.requiredDuringSchedulingIgnoredDuringExecution"
        )
    )
    preferred: list[PreferredSchedulingTerm] = []
    preferred_path = f"{base}.preferredDuringSchedulingIgnoredDuringExecution"
    raw_preferred = node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution")
    for index, item in enumerate(as_list(raw_preferred, preferred_path)):
        path = f"{preferred_path}[{index}]"
        item = as_mapping(item, path)
        weight = as_int(item.get("weight"), f"{path}.weight")
        term = parse_node_selector_term(item.get("preference"), f"{path}.preference")
        # Upstream's PreferredSchedulingTerms skips zero weights and empty preferences.
        if weight == 0 or term is None:
            continue
        preferred.append(PreferredSchedulingTerm(weight, NodeSelector((term,))))
    return required, tuple(preferred)


def _scheduling_gates(value: Any) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(
        as_str(
            as_mapping(gate, f"spec.schedulingGates[{i}]").get("name"),
            f"spec.schedulingGates[{i}].name",
        )
        for i, gate in enumerate(as_list(value, "spec.schedulingGates"))
    )


def _pvc_names(value: Any, pod_name: str) -> tuple[str, ...]:
    """Claims the pod uses: persistentVolumeClaim volumes, and generic ephemeral volumes
    (whose claim is named "<pod>-<volume>", upstream's ephemeral.VolumeClaimName)."""
    if not value:
        return ()
    names: list[str] = []
    for index, volume in enumerate(as_list(value, "spec.volumes")):
        path = f"spec.volumes[{index}]"
        volume = as_mapping(volume, path)
        claim = volume.get("persistentVolumeClaim")
        if claim is not None:
            claim_path = f"{path}.persistentVolumeClaim"
            names.append(
                as_str(as_mapping(claim, claim_path).get("claimName"), f"{claim_path}.claimName")
            )
        elif volume.get("ephemeral") is not None:
            names.append(f"{pod_name}-{as_str(volume.get('name'), f'{path}.name')}")
    return tuple(names)


def _optional_str(value: Any, path: str) -> str | None:
    return None if value is None else as_str(value, path)
