"""Namespaces and the objects that select pods (Services, ReplicationControllers, ReplicaSets,
StatefulSets, PodDisruptionBudgets), kept by informers for the topology plugins and preemption.

InterPodAffinity resolves `namespaceSelector`s against namespace labels; PodTopologySpread's
system default constraints select a pod's siblings through upstream's helper.DefaultSelector
(pkg/scheduler/framework/plugins/helper/spread.go), which reads the Services, RCs, ReplicaSets
and StatefulSets of the pod's namespace. Only what those two need is kept: names, labels and
selectors.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from apimachinery.labels import IN, LabelSelector, Requirement
from scheduler.api.fields import as_int, as_mapping, as_str, as_str_map
from scheduler.api.objects import PodView
from scheduler.listers.pod_groups import PodGroupObjects
from scheduler.listers.resource_objects import ResourceObjects
from scheduler.listers.storage_objects import StorageObjects
from scheduler.listers.workload_objects import WorkloadObjects


@dataclass(frozen=True, slots=True)
class NamespaceView:
    name: str
    resource_version: str
    labels: Mapping[str, str]

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> NamespaceView:
        meta = as_mapping(as_mapping(obj, "namespace").get("metadata"), "metadata")
        return NamespaceView(
            as_str(meta.get("name"), "metadata.name"),
            as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            as_str_map(meta.get("labels"), "metadata.labels"),
        )


@dataclass(frozen=True, slots=True)
class SelectorOwner:
    """A Service, RC, ReplicaSet or StatefulSet: what it selects. `selector` is None when the
    object selects nothing (a Service or RC without a selector)."""

    kind: str
    namespace: str
    name: str
    resource_version: str
    selector: LabelSelector | None


def _meta(obj: Mapping[str, Any], kind: str) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    raw = as_mapping(obj, kind)
    return as_mapping(raw.get("metadata"), "metadata"), as_mapping(raw.get("spec"), "spec")


def _owner(kind: str, meta: Mapping[str, Any], selector: LabelSelector | None) -> SelectorOwner:
    return SelectorOwner(
        kind,
        as_str(meta.get("namespace"), "metadata.namespace", "default"),
        as_str(meta.get("name"), "metadata.name"),
        as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
        selector,
    )


def map_selector(selector: Mapping[str, str]) -> LabelSelector | None:
    """A map selector (Service, RC) as a LabelSelector; an empty or missing map selects
    nothing (upstream skips services with no selector)."""
    if not selector:
        return None
    return LabelSelector.from_dict({"matchLabels": dict(selector)}, "spec.selector")


def map_selector_owner(kind: str) -> Any:
    """A parser for Services and ReplicationControllers (`spec.selector` is a label map)."""

    def parse(obj: Mapping[str, Any], previous: Any = None) -> SelectorOwner:
        meta, spec = _meta(obj, kind)
        return _owner(kind, meta, map_selector(as_str_map(spec.get("selector"), "spec.selector")))

    return parse


def label_selector_owner(kind: str) -> Any:
    """A parser for ReplicaSets and StatefulSets (`spec.selector` is a LabelSelector)."""

    def parse(obj: Mapping[str, Any], previous: Any = None) -> SelectorOwner:
        meta, spec = _meta(obj, kind)
        raw_selector = spec.get("selector")
        selector = (
            None if raw_selector is None else LabelSelector.from_dict(raw_selector, "spec.selector")
        )
        return _owner(kind, meta, selector)

    return parse


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    """A policy/v1 PodDisruptionBudget, as preemption reads it (upstream's
    filterPodsWithPDBViolation): whom it selects, how many disruptions it still allows, and
    the pods it already counts as disrupted."""

    namespace: str
    name: str
    resource_version: str
    selector: LabelSelector | None  # None or empty: selects nothing
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    @staticmethod
    def from_dict(obj: Mapping[str, Any], previous: Any = None) -> DisruptionBudget:
        meta, spec = _meta(obj, "PodDisruptionBudget")
        status = as_mapping(as_mapping(obj, "PodDisruptionBudget").get("status"), "status")
        raw_selector = spec.get("selector")
        selector = (
            None if raw_selector is None else LabelSelector.from_dict(raw_selector, "spec.selector")
        )
        return DisruptionBudget(
            as_str(meta.get("namespace"), "metadata.namespace", "default"),
            as_str(meta.get("name"), "metadata.name"),
            as_str(meta.get("resourceVersion"), "metadata.resourceVersion"),
            selector,
            as_int(status.get("disruptionsAllowed"), "status.disruptionsAllowed"),
            frozenset(as_mapping(status.get("disruptedPods"), "status.disruptedPods")),
        )

    def selects(self, pod: PodView) -> bool:
        selector = self.selector
        return (
            pod.namespace == self.namespace
            and selector is not None
            and not selector.is_everything()
            and selector.matches(pod.labels)
        )


class _ByNamespace:
    """An informer handler keeping objects by namespace, then name."""

    def __init__(self) -> None:
        self.by_namespace: dict[str, dict[str, Any]] = {}

    def on_add(self, obj: Any) -> None:
        self.by_namespace.setdefault(obj.namespace, {})[obj.name] = obj

    def on_update(self, old: Any, new: Any) -> None:
        self.on_delete(old)
        self.on_add(new)

    def on_delete(self, obj: Any) -> None:
        names = self.by_namespace.get(obj.namespace)
        if names is not None:
            names.pop(obj.name, None)
            if not names:
                del self.by_namespace[obj.namespace]

    def get(self, namespace: str, name: str) -> Any:
        return self.by_namespace.get(namespace, {}).get(name)

    def in_namespace(self, namespace: str) -> Iterable[Any]:
        return self.by_namespace.get(namespace, {}).values()


class _Namespaces:
    def __init__(self) -> None:
        self.by_name: dict[str, NamespaceView] = {}

    def on_add(self, obj: NamespaceView) -> None:
        self.by_name[obj.name] = obj

    def on_update(self, old: NamespaceView, new: NamespaceView) -> None:
        self.by_name.pop(old.name, None)
        self.by_name[new.name] = new

    def on_delete(self, obj: NamespaceView) -> None:
        self.by_name.pop(obj.name, None)


# (apiVersion, kind) of the controllers DefaultSelector follows.
RC_API_VERSION = ("v1", "ReplicationController")
RS_API_VERSION = ("apps/v1", "ReplicaSet")
SS_API_VERSION = ("apps/v1", "StatefulSet")


_INFORMER_OF_KIND = {
    "Namespace": "namespaces",
    "Service": "services",
    "ReplicationController": "replicationcontrollers",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
    "PodDisruptionBudget": "poddisruptionbudgets",
}


class ClusterObjects:
    """What the topology plugins read besides nodes and pods. Filled by informers (see
    `informer_specs`), or directly by tests through the `add_*` helpers."""

    def __init__(self) -> None:
        self.namespaces = _Namespaces()
        self.services = _ByNamespace()
        self.replication_controllers = _ByNamespace()
        self.replica_sets = _ByNamespace()
        self.stateful_sets = _ByNamespace()
        self.disruption_budgets = _ByNamespace()
        # The volume plugins' objects; their informers also feed the scheduling queue.
        self.storage = StorageObjects()
        # DeviceClasses, ResourceSlices, ResourceClaims, templates (DynamicResources).
        self.resources = ResourceObjects()
        # PodGroups and Workloads (GangScheduling) and the pod groups' states.
        self.workloads = WorkloadObjects()
        # scheduler-plugins' PodGroups and their pods (Coscheduling).
        self.pod_groups = PodGroupObjects()

    def informer_specs(self) -> list[tuple[str, str, Any, Any]]:
        """(informer name, API path, parser, handler) for each kind this store keeps."""
        return [
            ("namespaces", "/api/v1/namespaces", NamespaceView.from_dict, self.namespaces),
            ("services", "/api/v1/services", map_selector_owner("Service"), self.services),
            (
                "replicationcontrollers",
                "/api/v1/replicationcontrollers",
                map_selector_owner("ReplicationController"),
                self.replication_controllers,
            ),
            (
                "replicasets",
                "/apis/apps/v1/replicasets",
                label_selector_owner("ReplicaSet"),
                self.replica_sets,
            ),
            (
                "statefulsets",
                "/apis/apps/v1/statefulsets",
                label_selector_owner("StatefulSet"),
                self.stateful_sets,
            ),
            (
                "poddisruptionbudgets",
                "/apis/policy/v1/poddisruptionbudgets",
                DisruptionBudget.from_dict,
                self.disruption_budgets,
            ),
        ]

    # -- for tests and embedders ---------------------------------------------------------

    def add_object(self, obj: Mapping[str, Any]) -> None:
        """Add a Namespace, Service, RC, ReplicaSet or StatefulSet given as API JSON."""
        kind = obj.get("kind")
        informer = _INFORMER_OF_KIND.get(kind) if isinstance(kind, str) else None
        if informer is None:
            raise ValueError(f"ClusterObjects does not keep objects of kind {kind!r}")
        for name, _path, parse, handler in self.informer_specs():
            if name == informer:
                handler.on_add(parse(obj, None))

    # -- namespaces ----------------------------------------------------------------------

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """The labels of namespace `name`, None when it is not known (upstream's
        GetNamespaceLabelsSnapshot logs and returns nil then)."""
        namespace = self.namespaces.by_name.get(name)
        return None if namespace is None else namespace.labels

    def namespaces_matching(self, selector: LabelSelector) -> frozenset[str]:
        """Names of the namespaces whose labels `selector` matches."""
        if selector.matches_nothing:
            return frozenset()
        return frozenset(
            name
            for name, namespace in self.namespaces.by_name.items()
            if selector.matches(namespace.labels)
        )

    # -- PodDisruptionBudgets -------------------------------------------------------------

    def disruption_budgets_for(self, pod: PodView) -> list[DisruptionBudget]:
        """The PodDisruptionBudgets that select `pod`."""
        return [b for b in self.disruption_budgets.in_namespace(pod.namespace) if b.selects(pod)]

    # -- helper.DefaultSelector ----------------------------------------------------------

    def may_select(self, pod: PodView) -> bool:
        """False when default_selector(pod) is surely empty: no Service in the pod's namespace
        and no owner (cheap enough to ask for every pod)."""
        return bool(pod.owner_references) or pod.namespace in self.services.by_namespace

    def default_selector(self, pod: PodView) -> LabelSelector:
        """The selector of the pod's siblings: the selectors of the Services selecting it
        merged, plus the selector of its controlling RC, ReplicaSet or StatefulSet.
        Everything (an empty selector) when nothing selects the pod."""
        merged: dict[str, str] = {}
        for service in self.services.in_namespace(pod.namespace):
            selector = service.selector
            if selector is not None and selector.matches(pod.labels):
                merged.update(_match_labels(selector))
        requirements: list[Requirement] = [
            Requirement(key, IN, frozenset((value,))) for key, value in merged.items()
        ]
        owner = next((ref for ref in pod.owner_references if ref.controller), None)
        if owner is not None:
            kind = (owner.api_version, owner.kind)
            if kind == RC_API_VERSION:
                rc = self.replication_controllers.get(pod.namespace, owner.name)
                if rc is not None and rc.selector is not None:
                    merged.update(_match_labels(rc.selector))
                    requirements = [
                        Requirement(key, IN, frozenset((value,))) for key, value in merged.items()
                    ]
            elif kind in (RS_API_VERSION, SS_API_VERSION):
                store = self.replica_sets if kind == RS_API_VERSION else self.stateful_sets
                found = store.get(pod.namespace, owner.name)
                if found is not None and found.selector is not None:
                    requirements.extend(found.selector.requirements)
        if not requirements:
            return LabelSelector.everything()
        requirements.sort(key=lambda r: (r.key, r.operator))
        return LabelSelector(tuple(requirements))


def _match_labels(selector: LabelSelector) -> dict[str, str]:
    """The label map a map selector was built from."""
    return {r.key: next(iter(r.values)) for r in selector.requirements}
