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

from scheduler.api.podaffinity import AffinityTerm, WeightedAffinityTerm
from scheduler.api.selectors import LabelSelector, Requirement

if TYPE_CHECKING:
    from scheduler.api.objects import PodView
    from scheduler.cluster_objects import ClusterObjects

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
    """term.matches(incoming pod, its namespace labels) for existing pods' terms.

    Pods of one workload carry equal terms, so with `interner` each distinct term is matched
    once per cycle. Equal terms are recognised through the interner, which remembers each
    term object it has seen (existing pods' views live across cycles), so hashing a term's
    selector happens once per pod object, not once per cycle.
    """

    __slots__ = ("_interner", "_verdicts", "labels", "pod")

    def __init__(
        self, pod: PodView, labels: Mapping[str, str] | None, interner: TermInterner | None
    ) -> None:
        self.pod = pod
        self.labels = labels
        self._interner = interner
        self._verdicts: dict[int, bool] = {}

    def __call__(self, term: AffinityTerm) -> bool:
        interner = self._interner
        if interner is None:
            return term.matches(self.pod, self.labels)
        index = interner.index(term)
        found = self._verdicts.get(index)
        if found is None:
            found = self._verdicts[index] = term.matches(self.pod, self.labels)
        return found


class TermInterner:
    """A small integer per distinct AffinityTerm, looked up by object identity first.

    Entries keep their term alive, so an id is never reused while remembered. `trim` forgets
    everything when far more terms are remembered than the last pass used (pods went away).
    """

    __slots__ = ("_by_id", "_index")

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[AffinityTerm, int]] = {}
        self._index: dict[AffinityTerm, int] = {}

    def index(self, term: AffinityTerm) -> int:
        entry = self._by_id.get(id(term))
        if entry is not None and entry[0] is term:
            return entry[1]
        index = self._index.get(term)
        if index is None:
            index = self._index[term] = len(self._index)
        self._by_id[id(term)] = (term, index)
        return index

    def trim(self, used: int) -> None:
        if len(self._by_id) > 2 * used + 4096:
            self._by_id.clear()
            self._index.clear()

    def __len__(self) -> int:
        return len(self._by_id)
