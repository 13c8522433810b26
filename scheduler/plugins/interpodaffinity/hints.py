"""InterPodAffinity queueing hints.

Upstream: pkg/scheduler/framework/plugins/interpodaffinity/plugin.go
(isSchedulableAfterPodChange, isSchedulableAfterNodeChange). The pod's terms are used as
parsed from its spec (namespaceSelector not resolved, nil namespace labels), as upstream's
GetAffinityTerms does; a pod whose terms don't parse is always queued (upstream returns the
error, which queues).
"""

from __future__ import annotations

from typing import Any

from scheduler.api.objects import NodeView, PodView
from scheduler.framework.events import QueueingHint
from scheduler.plugins.interpodaffinity.terms import pod_matches_all

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.SKIP


def _placed(pod: PodView | None) -> PodView | None:
    """The pod if it is bound or nominated to a node (so it counts), else None."""
    if pod is None or (not pod.node_name and not pod.nominated_node_name):
        return None
    return pod


def schedulable_after_pod_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    if not isinstance(pod, PodView):
        return QUEUE
    if (old is not None and not isinstance(old, PodView)) or (
        new is not None and not isinstance(new, PodView)
    ):
        return QUEUE
    if old is not None and new is not None and new.uid == pod.uid:
        # the target's own labels changed: a pod with anti-affinity to its old labels may no
        # longer keep it out
        return QUEUE
    original, modified = _placed(old), _placed(new)
    if original is None and modified is None:
        return SKIP  # an unscheduled pod changed: it doesn't count for anyone
    info = pod.pod_affinity
    if info.parse_error is not None:
        return QUEUE
    terms, anti_terms = info.required_affinity, info.required_anti_affinity
    if original is not None and modified is not None:
        # Queue when the pod now matches all affinity terms or no longer all anti-affinity
        # terms (one existing pod must satisfy every term at once).
        if not pod_matches_all(terms, original) and pod_matches_all(terms, modified):
            return QUEUE
        if pod_matches_all(anti_terms, original) and not pod_matches_all(anti_terms, modified):
            return QUEUE
        return SKIP
    if modified is not None:
        return QUEUE if pod_matches_all(terms, modified) else SKIP
    assert original is not None
    if pod_matches_all(anti_terms, original):
        return QUEUE
    # or vice versa: the deleted pod's anti-affinity kept the target out (preemption evicting
    # such a pod is what lets its preemptor in)
    deleted = original.pod_affinity
    if deleted.parse_error is not None:
        return QUEUE
    return QUEUE if pod_matches_all(deleted.required_anti_affinity, pod) else SKIP


def schedulable_after_node_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    if not isinstance(pod, PodView) or not isinstance(new, NodeView):
        return QUEUE
    if old is not None and not isinstance(old, NodeView):
        return QUEUE
    info = pod.pod_affinity
    if info.parse_error is not None:
        return QUEUE
    for term in info.required_affinity:
        key = term.topology_key
        if old is None:
            if key in new.labels:
                return QUEUE  # a node joined a domain of the pod's affinity
            continue
        old_value, new_value = old.labels.get(key), new.labels.get(key)
        if new_value is not None and old_value != new_value:
            return QUEUE  # the node got the key, or moved to another domain
    for term in info.required_anti_affinity:
        if old is None:
            return QUEUE  # any new node may take a pod with anti-affinity
        key = term.topology_key
        old_value, new_value = old.labels.get(key), new.labels.get(key)
        if old_value is not None and old_value != new_value:
            return QUEUE  # the node lost the key, or moved to another domain
    return SKIP
