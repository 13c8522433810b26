"""DynamicResources' queueing hints.

Upstream: dynamicresources.go isSchedulableAfterClaimChange and isSchedulableAfterPodChange.
The objects are scheduler.api.resource views and PodViews; anything unexpected answers Queue,
as upstream's hint errors do.
"""

from __future__ import annotations

from typing import Any

from scheduler.api.objects import PodView
from scheduler.api.resource import ResourceClaimView
from scheduler.framework.events import QueueingHint
from scheduler.listers.resource_objects import ResourceObjects
from scheduler.plugins.dynamicresources.claims import ClaimsNotReady, pod_claims

QUEUE = QueueingHint.QUEUE
SKIP = QueueingHint.SKIP


def schedulable_after_claim_change(
    resources: ResourceObjects, pod: Any, old: Any, new: Any
) -> QueueingHint:
    """A claim was added or updated (deletes are not registered)."""
    if not isinstance(pod, PodView) or not isinstance(new, ResourceClaimView):
        return QUEUE
    try:
        uses_claim = any(claim.uid == new.uid for claim in pod_claims(pod, resources))
    except ClaimsNotReady:
        return SKIP
    if isinstance(old, ResourceClaimView) and old.allocation is not None and new.allocation is None:
        # Deallocated: its devices are free for other pods.
        return QUEUE
    if not uses_claim:
        return SKIP
    if old is None:
        return QUEUE
    if isinstance(old, ResourceClaimView) and old.raw.get("status") == new.raw.get("status"):
        # Something other than the status changed (in practice the driver's finalizer).
        return SKIP
    return QUEUE


def schedulable_after_pod_change(
    resources: ResourceObjects, pod: Any, old: Any, new: Any
) -> QueueingHint:
    """The pod's own status gained the names of its generated claims."""
    if not isinstance(pod, PodView) or not isinstance(new, PodView):
        return QUEUE
    if pod.uid != new.uid:
        return SKIP
    try:
        pod_claims(new, resources)
    except ClaimsNotReady:
        return SKIP
    return QUEUE
