"""InterPodAffinity PreFilter / Filter: the counts and the per-node and per-row checks.

Upstream: pkg/scheduler/framework/plugins/interpodaffinity/filtering.go
(getExistingAntiAffinityCounts, getIncomingAffinityAntiAffinityCounts, satisfyPodAffinity,
satisfyPodAntiAffinity, satisfyExistingPodsAntiAffinity).

Two ways to compute the counts give the same maps:
- the reference path walks every pod on every node, as upstream;
- the fast path asks the snapshot's NodeTable how many pods per row match a term
  (PodGroups tests a selector once per group of identically labelled pods) and adds rows up
  per topology value with one bincount; existing pods' required anti-affinity terms come
  from TermGroups, so each distinct term is matched against the incoming pod once, whatever
  the number of pods carrying it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from scheduler.api.podaffinity import AffinityTerm
from scheduler.cache.topology_index import REQUIRED_ANTI_AFFINITY
from scheduler.plugins.interpodaffinity.state import (
    PreFilterState,
    TopologyCounts,
    add_pair,
)
from scheduler.plugins.interpodaffinity.terms import (
    TermVerdicts,
    conjunction,
    pod_matches_all,
    term_namespaces,
)

if TYPE_CHECKING:
    from scheduler.cache.node_info import NodeInfo
    from scheduler.cache.node_table import BoolArray, IntArray, NodeTable
    from scheduler.cache.rows import Rows

# Filter outcomes, per node or row.
PASS = 0
AFFINITY_FAILED = 1
ANTI_AFFINITY_FAILED = 2
EXISTING_ANTI_AFFINITY_FAILED = 3


# Existing pods' required anti-affinity


def existing_anti_affinity_counts(
    nodes: Sequence[NodeInfo], matches: TermVerdicts
) -> TopologyCounts:
    """Per topology pair, how many existing pods' required anti-affinity terms match the
    incoming pod. `nodes` are those having pods with required anti-affinity."""
    counts: TopologyCounts = {}
    for info in nodes:
        node = info.node
        if node is None:
            continue
        labels = node.labels
        for existing in info.pods_with_required_anti_affinity:
            for term in existing.pod_affinity.required_anti_affinity:
                if matches(term):
                    value = labels.get(term.topology_key)
                    if value is not None:
                        pair = (term.topology_key, value)
                        counts[pair] = counts.get(pair, 0) + 1
    return counts


def existing_anti_affinity_counts_fast(table: NodeTable, matches: TermVerdicts) -> Tally:
    """existing_anti_affinity_counts from the NodeTable's TermGroups (the same map)."""
    tally = Tally(table)
    for term, _weight, per_row in table.term_groups().of_kind(REQUIRED_ANTI_AFFINITY):
        if matches(term):
            tally.add(term.topology_key, per_row)
    return tally


class Tally:  # a state.PendingCounts
    """Pair counts summed from per-row arrays, kept per topology key as arrays over the key's
    value ids: the count map is made from them once, and the row path reads them as they are
    (a map with thousands of hostname pairs is never walked again to rebuild them)."""

    __slots__ = ("per_key", "table")

    def __init__(self, table: NodeTable) -> None:
        self.table = table
        self.per_key: dict[str, IntArray] = {}

    def add(self, key: str, per_row: IntArray) -> None:
        sums = self.table.topology(key).sums(per_row)
        total = self.per_key.get(key)
        self.per_key[key] = sums if total is None else total + sums

    def any(self) -> bool:
        return any(sums.any() for sums in self.per_key.values())

    def counts(self) -> TopologyCounts:
        out: TopologyCounts = {}
        for key, sums in self.per_key.items():
            values = self.table.topology(key).values
            present = np.flatnonzero(sums).tolist()
            pairs = [(key, values[i]) for i in present]
            out.update(zip(pairs, sums[present].tolist(), strict=True))
        return out

    def seed(self, state: PreFilterState, which: str) -> None:
        """Hand the arrays to the state's cache for its row path."""
        for key, sums in self.per_key.items():
            state.seed_array(which, key, self.table.topology(key), sums)
        if which == "existing":
            state.seed_existing_keys([key for key, sums in self.per_key.items() if sums.any()])


# The incoming pod's required terms


def incoming_counts_reference(
    affinity: Sequence[AffinityTerm],
    anti_affinity: Sequence[AffinityTerm],
    nodes: Sequence[NodeInfo],
) -> tuple[TopologyCounts, TopologyCounts]:
    """(affinity counts, anti-affinity counts) by walking every pod of every node."""
    affinity_counts: TopologyCounts = {}
    anti_counts: TopologyCounts = {}
    if not affinity and not anti_affinity:
        return affinity_counts, anti_counts
    for info in nodes:
        node = info.node
        if node is None:
            continue
        labels = node.labels
        for existing in info.pods:
            if pod_matches_all(affinity, existing):
                for term in affinity:
                    value = labels.get(term.topology_key)
                    if value is not None:
                        add_pair(affinity_counts, (term.topology_key, value), 1)
            for term in anti_affinity:
                if term.matches(existing, None):
                    value = labels.get(term.topology_key)
                    if value is not None:
                        add_pair(anti_counts, (term.topology_key, value), 1)
    return affinity_counts, anti_counts


def incoming_counts_fast(
    affinity: Sequence[AffinityTerm],
    anti_affinity: Sequence[AffinityTerm],
    table: NodeTable,
) -> tuple[Tally, Tally]:
    """incoming_counts_reference over the snapshot's NodeTable (same maps)."""
    affinity_tally, anti_tally = Tally(table), Tally(table)
    groups = table.pod_groups()
    if affinity:
        namespaces, selector = conjunction(affinity)
        per_row = groups.counts(namespaces, selector, include_terminating=True)
        if per_row.any():
            for term in affinity:
                affinity_tally.add(term.topology_key, per_row)
    for term in anti_affinity:
        per_row = groups.counts(term_namespaces(term), term.selector, include_terminating=True)
        if per_row.any():
            anti_tally.add(term.topology_key, per_row)
    return affinity_tally, anti_tally


# Filter, per node


def node_verdict(state: PreFilterState, labels: Mapping[str, str]) -> int:
    """PASS or the first failed check for a node with these labels (upstream's Filter)."""
    if not _satisfies_affinity(state, labels):
        return AFFINITY_FAILED
    if not _satisfies_anti_affinity(state, labels):
        return ANTI_AFFINITY_FAILED
    if not _satisfies_existing_anti_affinity(state, labels):
        return EXISTING_ANTI_AFFINITY_FAILED
    return PASS


def _satisfies_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    counts = state.affinity_counts
    for term in state.required_affinity:
        value = labels.get(term.topology_key)
        if value is None:
            return False  # every topology key must be on the node
        if counts.get((term.topology_key, value), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # The first pod of a group with affinity to itself: no pod matches anywhere yet.
    return not counts and pod_matches_all(state.required_affinity, state.pod)


def _satisfies_anti_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    counts = state.anti_affinity_counts
    if not counts:
        return True
    for term in state.required_anti_affinity:
        value = labels.get(term.topology_key)
        if value is not None and counts.get((term.topology_key, value), 0) > 0:
            return False
    return True


def _satisfies_existing_anti_affinity(state: PreFilterState, labels: Mapping[str, str]) -> bool:
    counts = state.existing_anti_affinity_counts
    if not counts:
        return True
    for pair in labels.items():  # noqa: SIM110 - hot path
        if counts.get(pair, 0) > 0:
            return False
    return True


# Filter, per row (vectorised)


def row_verdicts(state: PreFilterState, table: NodeTable, rows: Rows) -> IntArray:
    """node_verdict for each of `rows`, computed with array lookups by topology value id."""
    size = len(rows)
    verdict: IntArray = np.zeros(size, dtype=np.int64)
    if state.required_affinity:
        keys_present: BoolArray = np.ones(size, dtype=np.bool_)
        pods_exist: BoolArray = np.ones(size, dtype=np.bool_)
        for term in state.required_affinity:
            column = table.topology(term.topology_key)
            ids = column.ids[rows]
            keys_present &= ids >= 0
            pods_exist &= state.array("affinity", term.topology_key, column)[ids] > 0
        first_pod = not state.has_counts("affinity") and pod_matches_all(
            state.required_affinity, state.pod
        )
        ok = keys_present if first_pod else keys_present & pods_exist
        verdict[~ok] = AFFINITY_FAILED
    if state.has_counts("anti"):
        failed: BoolArray = np.zeros(size, dtype=np.bool_)
        for term in state.required_anti_affinity:
            column = table.topology(term.topology_key)
            failed |= state.array("anti", term.topology_key, column)[column.ids[rows]] > 0
        verdict[failed & (verdict == PASS)] = ANTI_AFFINITY_FAILED
    if state.has_counts("existing"):
        failed = np.zeros(size, dtype=np.bool_)
        for key in state.existing_keys():
            column = table.topology(key)
            failed |= state.array("existing", key, column)[column.ids[rows]] > 0
        verdict[failed & (verdict == PASS)] = EXISTING_ANTI_AFFINITY_FAILED
    return verdict
