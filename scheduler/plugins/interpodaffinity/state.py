"""The cycle-state values InterPodAffinity writes at PreFilter and PreScore.

Upstream: pkg/scheduler/framework/plugins/interpodaffinity/filtering.go (preFilterState,
topologyToMatchedTermCount) and scoring.go (preScoreState, scoreMap). Counts are kept as
upstream keeps them, by (topology key, value) pair with no zero entries, so both the
reference per-pod path and the table fast path produce comparable values; the row fast path
reads them as arrays indexed by a NodeTable topology column's value ids (cached per state).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

import numpy as np

from scheduler.api.podaffinity import AffinityTerm, WeightedAffinityTerm
from scheduler.plugins.interpodaffinity.terms import TopologyPair

if TYPE_CHECKING:
    from scheduler.api.objects import NodeView, PodView
    from scheduler.cache.node_table import IntArray
    from scheduler.cache.rows import Rows
    from scheduler.cache.topology_index import TopologyColumn

TopologyCounts = dict[TopologyPair, int]


def add_pair(counts: TopologyCounts, pair: TopologyPair, value: int) -> None:
    """counts[pair] += value, dropping the entry when it reaches zero (upstream's update)."""
    total = counts.get(pair, 0) + value
    if total:
        counts[pair] = total
    else:
        counts.pop(pair, None)


def values_array(counts: Mapping[TopologyPair, int], key: str, column: TopologyColumn) -> IntArray:
    """Per value id of `column` (plus a trailing 0 for rows lacking the key, id -1), the count
    of the pair (key, value)."""
    out: IntArray = np.zeros(len(column.values) + 1, dtype=np.int64)
    value_ids = column.value_ids
    for (pair_key, value), count in counts.items():
        if pair_key == key:
            value_id = value_ids.get(value)
            if value_id is not None:
                out[value_id] = count
    return out


# Which count map ("existing", "affinity", "anti") → the PreFilterState attribute holding it.
_COUNT_FIELDS = {
    "existing": "_existing",
    "affinity": "_affinity",
    "anti": "_anti",
}


class PendingCounts(Protocol):
    """Counts the fast path computed as arrays; the pair map is made only if someone reads it."""

    def any(self) -> bool: ...

    def counts(self) -> TopologyCounts: ...


class PreFilterState:
    """Counts per topology pair of: existing pods whose required anti-affinity terms match
    the incoming pod; existing pods matching all the incoming pod's required affinity terms;
    existing pods matching each of its required anti-affinity terms.

    The fast path hands the counts over as `pending` arrays: the row path reads those, and the
    pair maps (thousands of entries with hostname terms) are built only when the per-node path,
    AddPod / RemovePod or a clone asks for them."""

    __slots__ = (
        "_affinity",
        "_anti",
        "_arrays",
        "_existing",
        "_existing_keys",
        "_pending",
        "namespace_labels",
        "pod",
        "required_affinity",
        "required_anti_affinity",
    )

    def __init__(
        self,
        pod: PodView,
        required_affinity: tuple[AffinityTerm, ...],
        required_anti_affinity: tuple[AffinityTerm, ...],
        namespace_labels: Mapping[str, str] | None,
        existing_anti_affinity_counts: TopologyCounts | None = None,
        affinity_counts: TopologyCounts | None = None,
        anti_affinity_counts: TopologyCounts | None = None,
        *,
        pending: Mapping[str, PendingCounts] | None = None,
    ) -> None:
        self.pod = pod
        # The incoming pod's required terms, namespaceSelector merged into namespaces.
        self.required_affinity = required_affinity
        self.required_anti_affinity = required_anti_affinity
        self.namespace_labels = namespace_labels
        self._existing = existing_anti_affinity_counts
        self._affinity = affinity_counts
        self._anti = anti_affinity_counts
        self._pending: dict[str, PendingCounts] = dict(pending or {})
        # (which counts, key, id(column), number of values) → values_array; cleared on update.
        self._arrays: dict[tuple[str, str, int, int], IntArray] = {}
        # The topology keys of the existing counts; None until asked, cleared on update.
        self._existing_keys: list[str] | None = None

    def _counts(self, which: str) -> TopologyCounts:
        field_name = _COUNT_FIELDS[which]
        counts: TopologyCounts | None = getattr(self, field_name)
        if counts is None:
            pending = self._pending.pop(which, None)
            counts = pending.counts() if pending is not None else {}
            setattr(self, field_name, counts)
        return counts

    @property
    def existing_anti_affinity_counts(self) -> TopologyCounts:
        return self._counts("existing")

    @property
    def affinity_counts(self) -> TopologyCounts:
        return self._counts("affinity")

    @property
    def anti_affinity_counts(self) -> TopologyCounts:
        return self._counts("anti")

    def has_counts(self, which: str) -> bool:
        """Whether a count map is non-empty, without building it from pending arrays."""
        pending = self._pending.get(which)
        if pending is not None:
            return pending.any()
        return bool(self._counts(which))

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.pod,
            self.required_affinity,
            self.required_anti_affinity,
            self.namespace_labels,
            dict(self.existing_anti_affinity_counts),
            dict(self.affinity_counts),
            dict(self.anti_affinity_counts),
        )

    def same_counts(self, other: PreFilterState) -> bool:
        return (
            self.existing_anti_affinity_counts == other.existing_anti_affinity_counts
            and self.affinity_counts == other.affinity_counts
            and self.anti_affinity_counts == other.anti_affinity_counts
        )

    def update_with_pod(self, pod: PodView, node: NodeView | None, multiplier: int) -> None:
        """Upstream's updateWithPod: account for `pod` added to (1) or removed from (-1)
        `node` (PreFilterExtensions, used by preemption)."""
        self._arrays.clear()
        self._existing_keys = None
        # the maps are about to change: build them from any pending arrays first
        existing, affinity_counts, anti_counts = (
            self.existing_anti_affinity_counts,
            self.affinity_counts,
            self.anti_affinity_counts,
        )
        if node is None:
            return
        labels = node.labels
        incoming = self.pod
        for term in pod.pod_affinity.required_anti_affinity:
            if term.matches(incoming, self.namespace_labels):
                _update(existing, labels, term.topology_key, multiplier)
        affinity = self.required_affinity
        if affinity and all(term.matches(pod, None) for term in affinity):
            for term in affinity:
                _update(affinity_counts, labels, term.topology_key, multiplier)
        for term in self.required_anti_affinity:
            if term.matches(pod, None):
                _update(anti_counts, labels, term.topology_key, multiplier)

    def existing_keys(self) -> list[str]:
        """The distinct topology keys with existing pods' anti-affinity counts."""
        if self._existing_keys is None:
            counts = self.existing_anti_affinity_counts
            self._existing_keys = keys_of(pair for pair, count in counts.items() if count > 0)
        return self._existing_keys

    def seed_existing_keys(self, keys: list[str]) -> None:
        self._existing_keys = keys

    def seed_array(self, which: str, key: str, column: TopologyColumn, sums: IntArray) -> None:
        """Cache what `array` would build from the counts, given per-value sums of `column`
        (as the fast path computed the counts from)."""
        found = np.zeros(len(column.values) + 1, dtype=np.int64)
        found[: len(sums)] = sums
        self._arrays[(which, key, id(column), len(column.values))] = found

    def array(self, which: str, key: str, column: TopologyColumn) -> IntArray:
        """values_array of one of the three count maps ("existing", "affinity", "anti")."""
        cache_key = (which, key, id(column), len(column.values))
        found = self._arrays.get(cache_key)
        if found is None:
            found = self._arrays[cache_key] = values_array(self._counts(which), key, column)
        return found


def _update(counts: TopologyCounts, labels: Mapping[str, str], key: str, value: int) -> None:
    topology_value = labels.get(key)
    if topology_value is not None:
        add_pair(counts, (key, topology_value), value)


ScoreMap = dict[str, dict[str, int]]


class PendingScores(Protocol):
    """A score map the fast path computed as arrays (scoring.ScoreTally)."""

    def any(self) -> bool: ...

    def score_map(self) -> ScoreMap: ...

    def score_rows(self, rows: Rows) -> IntArray: ...


class PreScoreState:
    """Upstream's preScoreState: topology key → value → summed weights. From the fast path
    the map stays `pending` arrays, which Score over rows reads directly; the map itself is
    built when the per-node Score (or a test) reads `topology_score`."""

    __slots__ = (
        "_pending",
        "_topology_score",
        "namespace_labels",
        "pod",
        "preferred_affinity",
        "preferred_anti_affinity",
    )

    def __init__(
        self,
        topology_score: ScoreMap | None,
        pod: PodView,
        preferred_affinity: tuple[WeightedAffinityTerm, ...] = (),
        preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = (),
        namespace_labels: Mapping[str, str] | None = None,
        *,
        pending: PendingScores | None = None,
    ) -> None:
        self._topology_score = topology_score
        self._pending = pending
        self.pod = pod
        self.preferred_affinity = preferred_affinity
        self.preferred_anti_affinity = preferred_anti_affinity
        self.namespace_labels = namespace_labels

    @property
    def topology_score(self) -> ScoreMap:
        if self._topology_score is None:
            pending = self._pending
            self._topology_score = pending.score_map() if pending is not None else {}
        return self._topology_score

    def has_scores(self) -> bool:
        if self._topology_score is None and self._pending is not None:
            return self._pending.any()
        return bool(self.topology_score)

    @property
    def pending(self) -> PendingScores | None:
        """The arrays, while the map has not been built (Score over rows reads them)."""
        return self._pending if self._topology_score is None else None

    def clone(self) -> PreScoreState:
        return self  # read-only once written, as upstream


def add_score(scores: ScoreMap, key: str, value: str, amount: int) -> None:
    """scoreMap[key][value] += amount, creating the entry (even for a zero amount)."""
    values = scores.get(key)
    if values is None:
        values = scores[key] = {}
    values[value] = values.get(value, 0) + amount


def score_node(scores: ScoreMap, labels: Mapping[str, str]) -> int:
    total = 0
    for key, values in scores.items():
        value = labels.get(key)
        if value is not None:
            total += values.get(value, 0)
    return total


def keys_of(counts: Iterable[TopologyPair]) -> list[str]:
    """The distinct topology keys of these pairs, in first-seen order."""
    return list(dict.fromkeys(key for key, _ in counts))
