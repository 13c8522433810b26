"""The PodGroupScheduled condition the scheduler writes on a PodGroup after its group cycle.

Upstream v1.36 sets `status.conditions[type=PodGroupScheduled]` (scheduling.k8s.io/v1alpha2):
True with reason Scheduled once the group is placed, False with reason Unschedulable (or
SchedulerError) and the failure's message otherwise. The write is a JSON merge patch of the
conditions list with this condition replaced and the others kept (as the scheduler's copy of the
group has them); a no-op is skipped, as the pod condition's is. It runs as a task after the
cycle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from scheduler.api.times import format_time
from scheduler.api.workload import (
    POD_GROUP_SCHEDULED,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    SCHEDULING_API,
    PodGroupView,
)
from scheduler.client.rest import MERGE_PATCH, ApiError, KubeClient
from scheduler.cycle.scheduling_cycle import MAX_MESSAGE_LENGTH, StartSoon

log = logging.getLogger(__name__)


class PodGroupStatusWriter:
    def __init__(
        self, client: KubeClient, start_soon: StartSoon, wall_clock: Callable[[], datetime]
    ) -> None:
        self._client = client
        self._start_soon = start_soon
        self._wall_clock = wall_clock

    def scheduled(self, group: PodGroupView) -> None:
        self._write(group, "True", REASON_SCHEDULED, "")

    def unschedulable(self, group: PodGroupView, message: str, errored: bool) -> None:
        reason = REASON_SCHEDULER_ERROR if errored else REASON_UNSCHEDULABLE
        self._write(group, "False", reason, message[:MAX_MESSAGE_LENGTH])

    def _write(self, group: PodGroupView, status: str, reason: str, message: str) -> None:
        patch = condition_patch(group, status, reason, message, format_time(self._wall_clock()))
        if patch is not None:
            self._start_soon(self._patch, group, patch, name=f"podgroup-status-{group.key}")

    async def _patch(self, group: PodGroupView, patch: Mapping[str, Any]) -> None:
        path = f"{SCHEDULING_API}/namespaces/{group.namespace}/podgroups/{group.name}/status"
        try:
            code, _ = await self._client.request(
                "PATCH", path, body=patch, content_type=MERGE_PATCH
            )
        except ApiError as exc:
            log.warning(
                "pod group status update failed", extra={"podGroup": group.key, "error": str(exc)}
            )
            return
        if code >= 300 and code not in (404, 409):
            log.warning(
                "pod group status update refused", extra={"podGroup": group.key, "status": code}
            )


def condition_patch(
    group: PodGroupView, status: str, reason: str, message: str, now: str
) -> dict[str, Any] | None:
    """The merge patch setting the PodGroupScheduled condition, or None when it is set so
    already. lastTransitionTime moves only when the status changes (metav1 conditions)."""
    current = group.condition(POD_GROUP_SCHEDULED)
    if (
        current is not None
        and current.get("status") == status
        and current.get("reason") == reason
        and current.get("message", "") == message
    ):
        return None
    transition = (
        current.get("lastTransitionTime", now)
        if current is not None and current.get("status") == status
        else now
    )
    condition = {
        "type": POD_GROUP_SCHEDULED,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition,
    }
    raw_status = group.raw.get("status") or {}
    others = [
        c
        for c in raw_status.get("conditions") or ()
        if isinstance(c, Mapping) and c.get("type") != POD_GROUP_SCHEDULED
    ]
    return {"status": {"conditions": [*others, condition]}}
