"""Pods and the dispatcher's status patches: the status a call starts from and the patch it
sends (upstream's util.PatchPodStatus, pkg/scheduler/util/utils.go)."""

from __future__ import annotations

from typing import Any

from scheduler.api.objects import PodView
from scheduler.apicalls.calls import PodStatus


def scheduled_condition(pod: PodView) -> dict[str, Any] | None:
    """The pod's PodScheduled condition, as the API server holds it."""
    status = pod.raw.get("status") or {}
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "PodScheduled":
            return condition
    return None


def pod_status(pod: PodView) -> PodStatus:
    return PodStatus(scheduled_condition(pod), pod.nominated_node_name)


def status_patch(old: PodStatus, new: PodStatus) -> dict[str, Any]:
    """The strategic merge patch of status from ``old`` to ``new`` (util.PatchPodStatus)."""
    patch: dict[str, Any] = {}
    if new.scheduled != old.scheduled and new.scheduled is not None:
        patch["conditions"] = [dict(new.scheduled)]
    if new.nominated_node_name != old.nominated_node_name:
        patch["nominatedNodeName"] = new.nominated_node_name or None
    return patch
