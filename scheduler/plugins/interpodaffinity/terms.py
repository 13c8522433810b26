"""Affinity-term helpers shared by filtering, scoring and the queueing hints.

Upstream: pkg/scheduler/framework/plugins/interpodaffinity/plugin.go
(mergeAffinityTermNamespacesIfNotEmpty, GetNamespaceLabelsSnapshot) and filtering.go
(podMatchesAllAffinityTerms). An incoming pod's terms have their namespaceSelector resolved to
namespace names once per cycle, so matching them never needs the other pod's namespace labels;
existing pods' terms are matched against the incoming pod with the incoming pod's namespace
labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from apimachinery.labels import LabelSelector, Requirement
from scheduler.api.podaffinity import AffinityTerm, WeightedAffinityTerm

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.listers.cluster_objects import ClusterObjects

# (topology key, topology value)
TopologyPair = tuple[str, str]

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def merge_namespaces(term: AffinityTerm, cluster: ClusterObjects) -> AffinityTerm:
    """The term with its namespaceSelector resolved to names (unless it selects every
    namespace, which stays a selector: upstream keeps an Empty() selector as is)."""
    selector = term.namespace_selector
    if selector.is_everything():
        return term
    if selector.matches_nothing:
        return term
    return term.with_namespaces(cluster.namespaces_matching(selector))


def merge_all(terms: Sequence[AffinityTerm], cluster: ClusterObjects) -> tuple[AffinityTerm, ...]:
    return tuple(merge_namespaces(term, cluster) for term in terms)


def merge_weighted(
    terms: Sequence[WeightedAffinityTerm], cluster: ClusterObjects
) -> tuple[WeightedAffinityTerm, ...]:
    return tuple(WeightedAffinityTerm(merge_namespaces(t.term, cluster), t.weight) for t in terms)


def pod_matches_all(terms: Sequence[AffinityTerm], pod: PodView) -> bool:
    """Upstream's podMatchesAllAffinityTerms: false for no terms; nil namespace labels."""
    if not terms:
        return False
    for term in terms:  # noqa: SIM110 - hot path
        if not term.matches(pod, None):
            return False
    return True


def term_namespaces(term: AffinityTerm) -> frozenset[str] | None:
    """The namespaces a merged term selects pods in; None for every namespace."""
    return None if term.namespace_selector.is_everything() else term.namespaces


def conjunction(
    terms: Sequence[AffinityTerm],
) -> tuple[frozenset[str] | None, LabelSelector]:
    """(namespaces, selector) a pod must match to match every one of these merged terms."""
    namespaces: frozenset[str] | None = None
    requirements: list[Requirement] = []
    for term in terms:
        if term.selector.matches_nothing:
            return frozenset(), LabelSelector.nothing()
        selected = term_namespaces(term)
        if selected is not None:
            namespaces = selected if namespaces is None else namespaces & selected
        requirements.extend(term.selector.requirements)
    requirements.sort(key=lambda r: (r.key, r.operator))
    return namespaces, LabelSelector(tuple(requirements))


def namespace_labels(cluster: ClusterObjects, namespace: str) -> Mapping[str, str] | None:
    """Upstream's GetNamespaceLabelsSnapshot: None when the namespace is unknown."""
    return cluster.namespace_labels(namespace)


def _pod_affinity_section(pod: PodView, name: str) -> Mapping[str, Any]:
    spec = pod.raw.get("spec")
    affinity = spec.get("affinity") if isinstance(spec, Mapping) else None
    section = affinity.get(name) if isinstance(affinity, Mapping) else None
    return section if isinstance(section, Mapping) else {}


def has_preferred_terms(pod: PodView) -> tuple[bool, bool]:
    """Whether the pod's spec lists preferred pod affinity / anti-affinity terms (read from
    the spec, as upstream, so a term that failed to parse still counts)."""
    return (
        bool(_pod_affinity_section(pod, "podAffinity").get(_PREFERRED)),
        bool(_pod_affinity_section(pod, "podAntiAffinity").get(_PREFERRED)),
    )


class TermVerdicts:
    """term.matches(incoming pod, its namespace labels), for existing pods' terms (the
    reference path; the fast path matches each distinct term once through TermGroups)."""

    __slots__ = ("labels", "pod")

    def __init__(self, pod: PodView, labels: Mapping[str, str] | None) -> None:
        self.pod = pod
        self.labels = labels

    def __call__(self, term: AffinityTerm) -> bool:
        return term.matches(self.pod, self.labels)
