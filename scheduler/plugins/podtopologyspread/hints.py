"""Queueing hints of PodTopologySpread.

Upstream: pkg/scheduler/framework/plugins/podtopologyspread/plugin.go (EventsToRegister with
queueing hints enabled, isSchedulableAfterPodChange, isSchedulableAfterNodeChange,
involvedInTopologySpreading, checkTopologyKeyLabelsChanged). Only the pod's hard constraints
(or the hard default constraints) matter: they are what rejects a pod.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from scheduler.api.objects import NodeView, PodView
from scheduler.framework.events import QueueingHint
from scheduler.plugins.podtopologyspread.args import HONOR
from scheduler.plugins.podtopologyspread.constraints import (
    Constraint,
    ConstraintError,
    node_labels_match_spread_constraints,
    pod_labels_match_spread_constraints,
)

HardConstraints = Callable[[PodView], tuple[Constraint, ...]]

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.SKIP


def involved_in_topology_spreading(incoming: PodView, pod: PodView) -> bool:
    """The changed pod is the pod itself, or a pod bound in the same namespace."""
    return incoming.uid == pod.uid or (
        bool(incoming.node_name) and incoming.namespace == pod.namespace
    )


def schedulable_after_pod_change(
    hard_constraints: HardConstraints, pod: Any, old: Any, new: Any
) -> QueueingHint:
    if not isinstance(pod, PodView):
        return QUEUE
    if (new is not None and not isinstance(new, PodView)) or (
        old is not None and not isinstance(old, PodView)
    ):
        return QUEUE
    if (new is not None and not involved_in_topology_spreading(new, pod)) or (
        old is not None and not involved_in_topology_spreading(old, pod)
    ):
        return SKIP
    try:
        constraints = hard_constraints(pod)
    except ConstraintError:
        return QUEUE
    if new is not None and old is not None:
        if (
            pod.uid == new.uid
            and new.tolerations != old.tolerations
            and any(c.node_taints_policy == HONOR for c in constraints)
        ):
            return QUEUE
        if dict(new.labels) == dict(old.labels):
            return SKIP
        for c in constraints:
            if c.selector.matches(old.labels) != c.selector.matches(new.labels):
                return QUEUE
        return SKIP
    changed = new if new is not None else old
    if changed is None:
        return QUEUE
    if pod_labels_match_spread_constraints(constraints, changed.labels):
        return QUEUE
    return SKIP


def _topology_labels_changed(
    old: NodeView, new: NodeView, constraints: Sequence[Constraint]
) -> bool:
    return any(
        old.labels.get(c.topology_key, "") != new.labels.get(c.topology_key, "")
        for c in constraints
    )


def schedulable_after_node_change(
    hard_constraints: HardConstraints, pod: Any, old: Any, new: Any
) -> QueueingHint:
    if not isinstance(pod, PodView):
        return QUEUE
    if (new is not None and not isinstance(new, NodeView)) or (
        old is not None and not isinstance(old, NodeView)
    ):
        return QUEUE
    try:
        constraints = hard_constraints(pod)
    except ConstraintError:
        return QUEUE
    old_matching = old is not None and node_labels_match_spread_constraints(old.labels, constraints)
    new_matching = new is not None and node_labels_match_spread_constraints(new.labels, constraints)
    if old is not None and new is not None:
        if old_matching != new_matching:
            return QUEUE
        if new_matching and (
            _topology_labels_changed(old, new, constraints) or old.taints != new.taints
        ):
            return QUEUE
        return SKIP
    if new is not None:
        return QUEUE if new_matching else SKIP
    return QUEUE if old_matching else SKIP
