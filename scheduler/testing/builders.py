"""Pod and node builders (upstream's pkg/scheduler/testing/wrappers.go, in Python).

Objects are written as API JSON and parsed by the real views (`PodView.from_dict`,
`NodeView.from_dict`), so a test exercises the same parsing and request arithmetic as the
scheduler. Two spellings build the same objects:

- `make_pod(...)` / `make_node(...)`: one call with keyword arguments, for the common cases;
- `MakePod()` / `MakeNode()`: upstream's fluent wrappers (`MakePod().name("p").req(cpu="1")
  .node("n1").obj()`), for the long tail (affinity terms, volumes, conditions...).

`make_pod` is a thin front for `MakePod`, so both spellings stay one implementation.
Selector and term helpers (`exists`, `match_labels`, `expr`, `term`, `weighted`,
`pod_affinity`, `spread`) return the JSON fragments the builders take.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from scheduler.api.objects import NodeView, PodView

Obj = dict[str, Any]
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
# metadata.deletionTimestamp of a terminating object (the value itself is never compared).
DELETION_TIMESTAMP = "2024-01-01T00:00:00Z"

_numbers = itertools.count(1)


# -- JSON fragments ------------------------------------------------------------------------------


def expr(key: str, operator: str, *values: str) -> Obj:
    """A label selector requirement: expr("app", "In", "web", "db")."""
    out: Obj = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def exists(*keys: str) -> Obj:
    """A label selector of Exists requirements (st.MakeLabelSelector().Exists(key)...)."""
    return {"matchExpressions": [expr(key, "Exists") for key in keys]}


def match_labels(**labels: str) -> Obj:
    """A label selector of matchLabels."""
    return {"matchLabels": dict(labels)}


def term(
    topology_key: str,
    *exprs: Obj,
    match_labels: Mapping[str, str] | None = None,
    namespaces: Sequence[str] | None = None,
    namespace_selector: Obj | None = None,
    no_selector: bool = False,
) -> Obj:
    """A PodAffinityTerm; `no_selector` leaves labelSelector out (it then matches nothing)."""
    out: Obj = {"topologyKey": topology_key}
    if not no_selector:
        selector: Obj = {}
        if exprs:
            selector["matchExpressions"] = list(exprs)
        if match_labels:
            selector["matchLabels"] = dict(match_labels)
        out["labelSelector"] = selector
    if namespaces is not None:
        out["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        out["namespaceSelector"] = namespace_selector
    return out


def weighted(weight: int, affinity_term: Obj) -> Obj:
    """A WeightedPodAffinityTerm."""
    return {"weight": weight, "podAffinityTerm": affinity_term}


def pod_affinity(
    required: Sequence[Obj] = (),
    preferred: Sequence[Obj] = (),
    anti_required: Sequence[Obj] = (),
    anti_preferred: Sequence[Obj] = (),
) -> Obj:
    """A spec.affinity with the given podAffinity / podAntiAffinity terms."""
    out: Obj = {}
    if required or preferred:
        section: Obj = {}
        if required:
            section[REQUIRED] = list(required)
        if preferred:
            section[PREFERRED] = list(preferred)
        out["podAffinity"] = section
    if anti_required or anti_preferred:
        section = {}
        if anti_required:
            section[REQUIRED] = list(anti_required)
        if anti_preferred:
            section[PREFERRED] = list(anti_preferred)
        out["podAntiAffinity"] = section
    return out


def required_node_affinity(*exprs: Obj) -> Obj:
    """A spec.affinity requiring nodes that match all these expressions (one term)."""
    return {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": list(exprs)}]}}}


def spread(
    max_skew: int,
    key: str,
    action: str = "DoNotSchedule",
    selector: Mapping[str, Any] | None = None,
    min_domains: int | None = None,
    node_affinity_policy: str | None = None,
    node_taints_policy: str | None = None,
    match_label_keys: Sequence[str] | None = None,
) -> Obj:
    """A TopologySpreadConstraint: st.MakePod().SpreadConstraint(maxSkew, key, action,
    selector, minDomains, nodeAffinityPolicy, nodeTaintsPolicy, matchLabelKeys)."""
    c: Obj = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": action}
    if selector is not None:
        c["labelSelector"] = dict(selector)
    if min_domains is not None:
        c["minDomains"] = min_domains
    if node_affinity_policy is not None:
        c["nodeAffinityPolicy"] = node_affinity_policy
    if node_taints_policy is not None:
        c["nodeTaintsPolicy"] = node_taints_policy
    if match_label_keys is not None:
        c["matchLabelKeys"] = list(match_label_keys)
    return c


def pvc_volume(claim: str, volume_name: str = "") -> Obj:
    """A persistentVolumeClaim volume, named after the claim unless `volume_name` says
    (st.MakePod().PVC(name))."""
    return {"name": volume_name or claim, "persistentVolumeClaim": {"claimName": claim}}


def ephemeral_volume(name: str) -> Obj:
    """A generic ephemeral volume; its claim is named "<pod>-<name>"."""
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}


def csi_volume(driver: str, name: str = "") -> Obj:
    """An inline CSI volume of `driver`."""
    return {"name": name or f"csi-{driver}", "csi": {"driver": driver}}


def empty_dir_volume(name: str = "scratch") -> Obj:
    return {"name": name, "emptyDir": {}}


# -- pods ----------------------------------------------------------------------------------------


class MakePod:
    """A pod builder (upstream's st.MakePod()): chain setters, then `.obj()` for a PodView.

    Starts as upstream's does: no containers and the empty namespace; the name and uid default
    to "pod-N" / "uid-N" with N unique in the process. The phase is Running once the pod has a
    node, else Pending (only Succeeded and Failed mean anything to the scheduler).
    """

    def __init__(self, name: str = "", namespace: str = "") -> None:
        number = next(_numbers)
        self._meta: Obj = {
            "name": name or f"pod-{number}",
            "namespace": namespace,
            "uid": f"uid-{number}",
            "resourceVersion": "1",
            "labels": {},
        }
        self._spec: Obj = {"containers": []}
        self._status: Obj = {}
        self._affinity: Obj = {}

    # metadata

    def name(self, name: str) -> MakePod:
        self._meta["name"] = name
        return self

    def namespace(self, namespace: str) -> MakePod:
        self._meta["namespace"] = namespace
        return self

    def uid(self, uid: str) -> MakePod:
        self._meta["uid"] = uid
        return self

    def resource_version(self, version: str) -> MakePod:
        """metadata.resourceVersion ("1" unless set): an update is a new version of a pod."""
        self._meta["resourceVersion"] = version
        return self

    def label(self, key: str, value: str) -> MakePod:
        self._meta["labels"][key] = value
        return self

    def labels(self, labels: Mapping[str, str]) -> MakePod:
        self._meta["labels"].update(labels)
        return self

    def annotation(self, key: str, value: str) -> MakePod:
        self._meta.setdefault("annotations", {})[key] = value
        return self

    def terminating(self) -> MakePod:
        """metadata.deletionTimestamp set (st.MakePod().Terminating())."""
        self._meta["deletionTimestamp"] = DELETION_TIMESTAMP
        return self

    def creation_timestamp(self, timestamp: str) -> MakePod:
        self._meta["creationTimestamp"] = timestamp
        return self

    def owner(self, api_version: str, kind: str, name: str) -> MakePod:
        """A controller owner reference (st.MakePod().OwnerReference(name, gvk))."""
        self._meta["ownerReferences"] = [
            {
                "apiVersion": api_version,
                "kind": kind,
                "name": name,
                "uid": f"owner-{name}",
                "controller": True,
            }
        ]
        return self

    # containers and resources

    def container(
        self,
        requests: Mapping[str, str] | None = None,
        limits: Mapping[str, str] | None = None,
        *,
        image: str = "pause",
        ports: Sequence[Mapping[str, Any]] = (),
    ) -> MakePod:
        """Append a container "c<i>" with these requests and limits."""
        containers: list[Obj] = self._spec["containers"]
        resources: Obj = {}
        if requests is not None:
            resources["requests"] = dict(requests)
        if limits is not None:
            resources["limits"] = dict(limits)
        container: Obj = {"name": f"c{len(containers)}", "image": image, "resources": resources}
        if ports:
            container["ports"] = [dict(p) for p in ports]
        containers.append(container)
        return self

    def req(self, requests: Mapping[str, str] | None = None, **more: str) -> MakePod:
        """Append a container requesting these resources (st.MakePod().Req(resMap))."""
        return self.container({**dict(requests or {}), **more})

    def init_container(
        self,
        requests: Mapping[str, str] | None = None,
        limits: Mapping[str, str] | None = None,
        *,
        image: str = "pause",
    ) -> MakePod:
        """Append an init container "i<i>" with these requests and limits."""
        init: list[Obj] = self._spec.setdefault("initContainers", [])
        resources: Obj = {}
        if requests is not None:
            resources["requests"] = dict(requests)
        if limits is not None:
            resources["limits"] = dict(limits)
        init.append({"name": f"i{len(init)}", "image": image, "resources": resources})
        return self

    def pod_resources(
        self, requests: Mapping[str, str], limits: Mapping[str, str] | None = None
    ) -> MakePod:
        """spec.resources: pod-level requests (and limits), PodLevelResources."""
        resources: Obj = {"requests": dict(requests)}
        if limits is not None:
            resources["limits"] = dict(limits)
        self._spec["resources"] = resources
        return self

    def overhead(self, overhead: Mapping[str, str]) -> MakePod:
        self._spec["overhead"] = dict(overhead)
        return self

    # placement

    def node(self, node_name: str) -> MakePod:
        """spec.nodeName: the pod is bound (st.MakePod().Node(name))."""
        self._spec["nodeName"] = node_name
        return self

    def nominated(self, node_name: str) -> MakePod:
        """status.nominatedNodeName."""
        self._status["nominatedNodeName"] = node_name
        return self

    def priority(self, priority: int) -> MakePod:
        self._spec["priority"] = priority
        return self

    def preemption_policy(self, policy: str) -> MakePod:
        self._spec["preemptionPolicy"] = policy
        return self

    def scheduler_name(self, name: str) -> MakePod:
        self._spec["schedulerName"] = name
        return self

    def scheduling_gates(self, *gates: str) -> MakePod:
        self._spec["schedulingGates"] = [{"name": gate} for gate in gates]
        return self

    def toleration(self, toleration: Mapping[str, Any]) -> MakePod:
        self._spec.setdefault("tolerations", []).append(dict(toleration))
        return self

    def node_selector(self, selector: Mapping[str, str]) -> MakePod:
        self._spec["nodeSelector"] = dict(selector)
        return self

    def affinity(self, spec_affinity: Mapping[str, Any]) -> MakePod:
        """Replace spec.affinity."""
        self._affinity = copy.deepcopy(dict(spec_affinity))
        return self

    def _add_affinity(self, section: str, kind: str, item: Obj) -> MakePod:
        self._affinity.setdefault(section, {}).setdefault(kind, []).append(item)
        return self

    def node_affinity(self, *exprs: Obj) -> MakePod:
        """One more required nodeSelectorTerm made of these match expressions."""
        required = self._affinity.setdefault("nodeAffinity", {}).setdefault(REQUIRED, {})
        required.setdefault("nodeSelectorTerms", []).append({"matchExpressions": list(exprs)})
        return self

    def node_affinity_in(self, key: str, values: Sequence[str]) -> MakePod:
        return self.node_affinity(expr(key, "In", *values))

    def pod_affinity(self, topology_key: str, selector: Obj, *, anti: bool = False) -> MakePod:
        """A required pod (anti-)affinity term with this label selector."""
        item = {"labelSelector": selector, "topologyKey": topology_key}
        return self._add_affinity("podAntiAffinity" if anti else "podAffinity", REQUIRED, item)

    def pod_affinity_in(self, key: str, topology_key: str, values: Sequence[str]) -> MakePod:
        return self.pod_affinity(topology_key, {"matchExpressions": [expr(key, "In", *values)]})

    def pod_affinity_not_in(self, key: str, topology_key: str, values: Sequence[str]) -> MakePod:
        selector = {"matchExpressions": [expr(key, "NotIn", *values)]}
        return self.pod_affinity(topology_key, selector)

    def pod_affinity_exists(self, key: str, topology_key: str) -> MakePod:
        return self.pod_affinity(topology_key, exists(key))

    def pod_anti_affinity_in(self, key: str, topology_key: str, values: Sequence[str]) -> MakePod:
        selector = {"matchExpressions": [expr(key, "In", *values)]}
        return self.pod_affinity(topology_key, selector, anti=True)

    def pod_anti_affinity_not_in(
        self, key: str, topology_key: str, values: Sequence[str]
    ) -> MakePod:
        selector = {"matchExpressions": [expr(key, "NotIn", *values)]}
        return self.pod_affinity(topology_key, selector, anti=True)

    def pod_anti_affinity_exists(self, key: str, topology_key: str) -> MakePod:
        return self.pod_affinity(topology_key, exists(key), anti=True)

    def spread_constraint(self, constraint: Mapping[str, Any]) -> MakePod:
        """Append a topologySpreadConstraint (see `spread`)."""
        self._spec.setdefault("topologySpreadConstraints", []).append(dict(constraint))
        return self

    # volumes

    def volume(self, volume: Mapping[str, Any]) -> MakePod:
        """Append a volume as written."""
        self._spec.setdefault("volumes", []).append(dict(volume))
        return self

    def pvc(self, claim: str, volume_name: str = "") -> MakePod:
        """A claim volume (see `pvc_volume`)."""
        return self.volume(pvc_volume(claim, volume_name))

    # status

    def phase(self, phase: str) -> MakePod:
        self._status["phase"] = phase
        return self

    def start_time(self, timestamp: str) -> MakePod:
        self._status["startTime"] = timestamp
        return self

    def condition(self, condition: Mapping[str, Any]) -> MakePod:
        self._status.setdefault("conditions", []).append(dict(condition))
        return self

    def obj(self) -> PodView:
        spec = copy.deepcopy(self._spec)
        if self._affinity:
            spec["affinity"] = copy.deepcopy(self._affinity)
        status = copy.deepcopy(self._status)
        status.setdefault("phase", "Running" if spec.get("nodeName") else "Pending")
        return PodView.from_dict(
            {"metadata": copy.deepcopy(self._meta), "spec": spec, "status": status}
        )


def make_pod(
    name: str = "",
    *,
    namespace: str = "default",
    uid: str = "",
    resource_version: str = "1",
    labels: Mapping[str, str] | None = None,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    containers: Sequence[Mapping[str, str]] = (),
    init_containers: Sequence[Mapping[str, str]] = (),
    overhead: Mapping[str, str] | None = None,
    node_name: str = "",
    nominated_node_name: str = "",
    priority: int | None = None,
    preemption_policy: str = "",
    scheduler_name: str = "",
    scheduling_gates: Sequence[str] = (),
    tolerations: Sequence[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    spread_constraints: Sequence[Mapping[str, Any]] = (),
    pvcs: Sequence[str] = (),
    volumes: Sequence[Mapping[str, Any]] = (),
    terminating: bool = False,
    owner: tuple[str, str, str] | None = None,
    creation_timestamp: str = "",
    start_time: str = "",
    conditions: Sequence[Mapping[str, Any]] = (),
) -> PodView:
    """A pod in one call; see `MakePod` for the defaults (except the namespace: "default").

    `requests`/`limits` make one container; `containers` makes one container per entry, each a
    map of requests (a pod with neither has no containers). `pvcs` adds a claim volume per
    claim, before `volumes`. `owner` is (apiVersion, kind, name) of a controller.
    """
    pod = MakePod(name, namespace).resource_version(resource_version)
    if uid:
        pod.uid(uid)
    if labels:
        pod.labels(labels)
    if requests is not None or limits is not None:
        if containers:
            raise ValueError("make_pod: give either requests/limits or containers")
        pod.container(requests, limits)
    for container_requests in containers:
        pod.container(container_requests)
    for init_requests in init_containers:
        pod.init_container(init_requests)
    if overhead:
        pod.overhead(overhead)
    if node_name:
        pod.node(node_name)
    if nominated_node_name:
        pod.nominated(nominated_node_name)
    if priority is not None:
        pod.priority(priority)
    if preemption_policy:
        pod.preemption_policy(preemption_policy)
    if scheduler_name:
        pod.scheduler_name(scheduler_name)
    if scheduling_gates:
        pod.scheduling_gates(*scheduling_gates)
    for toleration in tolerations:
        pod.toleration(toleration)
    if node_selector is not None:
        pod.node_selector(node_selector)
    if affinity:
        pod.affinity(affinity)
    for constraint in spread_constraints:
        pod.spread_constraint(constraint)
    for claim in pvcs:
        pod.pvc(claim)
    for volume in volumes:
        pod.volume(volume)
    if terminating:
        pod.terminating()
    if owner is not None:
        pod.owner(*owner)
    if creation_timestamp:
        pod.creation_timestamp(creation_timestamp)
    if start_time:
        pod.start_time(start_time)
    for condition in conditions:
        pod.condition(condition)
    return pod.obj()


# -- nodes ---------------------------------------------------------------------------------------


class MakeNode:
    """A node builder (upstream's st.MakeNode()): `MakeNode("n1").label(...).obj()`.

    The uid is "node-<name>". Nothing is allocatable until `allocatable` or `capacity` says so;
    `capacity` follows upstream's NodeWrapper.Capacity: capacity and allocatable both, with 32
    pods unless the map names pods.
    """

    def __init__(self, name: str = "") -> None:
        self._meta: Obj = {
            "name": name,
            "uid": f"node-{name}",
            "resourceVersion": "1",
            "labels": {},
        }
        self._spec: Obj = {}
        self._status: Obj = {"allocatable": {}}

    def name(self, name: str) -> MakeNode:
        self._meta["name"] = name
        return self

    def uid(self, uid: str) -> MakeNode:
        self._meta["uid"] = uid
        return self

    def resource_version(self, version: str) -> MakeNode:
        self._meta["resourceVersion"] = version
        return self

    def label(self, key: str, value: str) -> MakeNode:
        self._meta["labels"][key] = value
        return self

    def labels(self, labels: Mapping[str, str]) -> MakeNode:
        self._meta["labels"].update(labels)
        return self

    def annotation(self, key: str, value: str) -> MakeNode:
        self._meta.setdefault("annotations", {})[key] = value
        return self

    def allocatable(self, resources: Mapping[str, str]) -> MakeNode:
        """status.allocatable exactly as given."""
        self._status["allocatable"] = dict(resources)
        return self

    def capacity(self, resources: Mapping[str, str]) -> MakeNode:
        """status.capacity and allocatable; pods default to 32 (upstream's Capacity)."""
        both = {"pods": "32", **dict(resources)}
        self._status["capacity"] = dict(both)
        self._status["allocatable"] = dict(both)
        return self

    def images(self, images: Mapping[str, int]) -> MakeNode:
        """status.images: image name → size in bytes."""
        self._status["images"] = [
            {"names": [image], "sizeBytes": size} for image, size in images.items()
        ]
        return self

    def image(self, names: Sequence[str], size_bytes: int) -> MakeNode:
        """Append one status.images entry known by several names (tags of one image)."""
        self._status.setdefault("images", []).append(
            {"names": list(names), "sizeBytes": size_bytes}
        )
        return self

    def taint(self, taint: Mapping[str, Any]) -> MakeNode:
        self._spec.setdefault("taints", []).append(dict(taint))
        return self

    def unschedulable(self, unschedulable: bool = True) -> MakeNode:
        self._spec["unschedulable"] = unschedulable
        return self

    def obj(self) -> NodeView:
        return NodeView.from_dict(
            {
                "metadata": copy.deepcopy(self._meta),
                "spec": copy.deepcopy(self._spec),
                "status": copy.deepcopy(self._status),
            }
        )


def make_node(
    name: str,
    allocatable: Mapping[str, str] | None = None,
    *,
    capacity: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    images: Mapping[str, int] | None = None,
    uid: str = "",
    resource_version: str = "1",
) -> NodeView:
    """A node in one call; see `MakeNode` (`allocatable` exactly, `capacity` as upstream's)."""
    node = MakeNode(name).resource_version(resource_version)
    if uid:
        node.uid(uid)
    if capacity is not None:
        node.capacity(capacity)
    if allocatable is not None:
        node.allocatable(allocatable)
    if labels:
        node.labels(labels)
    for taint in taints:
        node.taint(taint)
    if unschedulable:
        node.unschedulable()
    if images:
        node.images(images)
    return node.obj()
