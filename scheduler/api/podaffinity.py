"""A pod's inter-pod affinity terms, parsed once per pod (upstream's PodInfo affinity fields).

Upstream: pkg/scheduler/framework/types.go (AffinityTerm, WeightedAffinityTerm, newAffinityTerm,
getNamespacesFromPodAffinityTerm, AffinityTerm.Matches). A term's namespaces are its
`namespaces` list, or the pod's own namespace when it names neither namespaces nor a
namespaceSelector; a missing namespaceSelector matches no namespace, an empty one matches all.

`matchLabelKeys` / `mismatchLabelKeys` are merged into the label selector as `key in (value)` /
`key notin (value)` with the value read from the pod's own labels (keys the pod lacks are
ignored). Since v1.31 kube-apiserver does this merge when the pod is created; doing it again
here changes nothing on such servers (the same requirement twice) and keeps older servers right.

A term that cannot be parsed (an invalid selector) does not make the pod unreadable: the error
is kept in `parse_error`, and InterPodAffinity reports it at PreFilter as upstream reports
NewPodInfo's error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apimachinery.labels import IN, NOT_IN, LabelSelector, Requirement
from scheduler.api.errors import MalformedObject
from scheduler.api.fields import as_int, as_list, as_mapping, as_str

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """One PodAffinityTerm, ready to match pods (upstream's framework.AffinityTerm)."""

    namespaces: frozenset[str]
    selector: LabelSelector
    topology_key: str
    namespace_selector: LabelSelector

    def matches(self, pod: Any, namespace_labels: Mapping[str, str] | None) -> bool:
        """Whether `pod` (a PodView) is selected by this term; `namespace_labels` are the labels
        of the pod's namespace (None or {} when unknown)."""
        if pod.namespace in self.namespaces or self.namespace_selector.matches(
            namespace_labels or {}
        ):
            return self.selector.matches(pod.labels)
        return False

    def with_namespaces(self, extra: frozenset[str]) -> AffinityTerm:
        """The term with `extra` namespaces added and no namespace selector (upstream's
        mergeAffinityTermNamespacesIfNotEmpty, once the selector was resolved to names)."""
        return AffinityTerm(
            self.namespaces | extra, self.selector, self.topology_key, LabelSelector.nothing()
        )


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodAffinityInfo:
    """A pod's parsed podAffinity and podAntiAffinity."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    # Why a term could not be parsed (the terms are then all empty); None when all parsed.
    parse_error: str | None = None
    # Whether a term uses matchLabelKeys / mismatchLabelKeys (so depends on the pod's labels).
    uses_label_keys: bool = False


NO_POD_AFFINITY = PodAffinityInfo()


def pod_affinity_from_spec(
    affinity: Mapping[str, Any], namespace: str, labels: Mapping[str, str]
) -> PodAffinityInfo:
    """Parse spec.affinity's podAffinity and podAntiAffinity for a pod in `namespace` with
    `labels`. Wrong JSON types raise MalformedObject; invalid selectors set `parse_error`."""
    base = "spec.affinity"
    pod_affinity = as_mapping(affinity.get("podAffinity"), f"{base}.podAffinity")
    anti_affinity = as_mapping(affinity.get("podAntiAffinity"), f"{base}.podAntiAffinity")
    if not pod_affinity and not anti_affinity:
        return NO_POD_AFFINITY
    parser = _TermParser(namespace, labels)
    try:
        info = PodAffinityInfo(
            required_affinity=parser.required(pod_affinity, f"{base}.podAffinity"),
            required_anti_affinity=parser.required(anti_affinity, f"{base}.podAntiAffinity"),
            preferred_affinity=parser.preferred(pod_affinity, f"{base}.podAffinity"),
            preferred_anti_affinity=parser.preferred(anti_affinity, f"{base}.podAntiAffinity"),
            uses_label_keys=parser.uses_label_keys,
        )
    except _InvalidTerm as err:
        return PodAffinityInfo(parse_error=str(err), uses_label_keys=parser.uses_label_keys)
    return info


class _InvalidTerm(Exception):
    pass


class _TermParser:
    def __init__(self, namespace: str, labels: Mapping[str, str]) -> None:
        self.namespace = namespace
        self.labels = labels
        self.uses_label_keys = False

    def required(self, section: Mapping[str, Any], path: str) -> tuple[AffinityTerm, ...]:
        items = as_list(section.get(_REQUIRED), f"{path}.{_REQUIRED}")
        return tuple(self.term(item, f"{path}.{_REQUIRED}[{i}]") for i, item in enumerate(items))

    def preferred(self, section: Mapping[str, Any], path: str) -> tuple[WeightedAffinityTerm, ...]:
        items = as_list(section.get(_PREFERRED), f"{path}.{_PREFERRED}")
        terms: list[WeightedAffinityTerm] = []
        for index, item in enumerate(items):
            item_path = f"{path}.{_PREFERRED}[{index}]"
            item = as_mapping(item, item_path)
            weight = as_int(item.get("weight"), f"{item_path}.weight")
            term = self.term(item.get("podAffinityTerm"), f"{item_path}.podAffinityTerm")
            terms.append(WeightedAffinityTerm(term, weight))
        return tuple(terms)

    def term(self, raw: Any, path: str) -> AffinityTerm:
        term = as_mapping(raw, path)
        raw_namespaces = as_list(term.get("namespaces"), f"{path}.namespaces")
        namespaces = [as_str(n, f"{path}.namespaces[{i}]") for i, n in enumerate(raw_namespaces)]
        raw_ns_selector = term.get("namespaceSelector")
        try:
            selector = LabelSelector.from_dict(term.get("labelSelector"), f"{path}.labelSelector")
            ns_selector = LabelSelector.from_dict(raw_ns_selector, f"{path}.namespaceSelector")
        except MalformedObject as err:
            raise _InvalidTerm(str(err)) from None
        extra = [
            *self._label_key_requirements(term, "matchLabelKeys", IN, path),
            *self._label_key_requirements(term, "mismatchLabelKeys", NOT_IN, path),
        ]
        if extra and not selector.matches_nothing:
            selector = LabelSelector(tuple(sorted((*selector.requirements, *extra), key=_order)))
        if not namespaces and raw_ns_selector is None:
            namespaces = [self.namespace]
        return AffinityTerm(
            frozenset(namespaces),
            selector,
            as_str(term.get("topologyKey"), f"{path}.topologyKey"),
            ns_selector,
        )

    def _label_key_requirements(
        self, term: Mapping[str, Any], field: str, operator: str, path: str
    ) -> list[Requirement]:
        keys = as_list(term.get(field), f"{path}.{field}")
        if keys:
            self.uses_label_keys = True
        out: list[Requirement] = []
        for index, key in enumerate(keys):
            key = as_str(key, f"{path}.{field}[{index}]")
            value = self.labels.get(key)
            if value is not None:
                out.append(Requirement(key, operator, frozenset((value,))))
        return out


def _order(requirement: Requirement) -> tuple[str, str]:
    return (requirement.key, requirement.operator)
