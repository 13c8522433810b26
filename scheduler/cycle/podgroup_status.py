"""The PodGroupInitiallyScheduled condition the scheduler writes on a PodGroup after its group
cycle.

Upstream v1.37 (schedule_one_podgroup.go, submitPodGroupAlgorithmResult and
updatePodGroupCondition) sets `status.conditions[type=PodGroupInitiallyScheduled]`
(scheduling.k8s.io/v1beta1; v1.36's PodGroupScheduled): True with reason Scheduled once the
group is placed, False with reason Unschedulable and the group's message ("minCount (4) cannot
be satisfied: 3 scheduled, 0 remaining"), or SchedulerError and the error, otherwise; with
observedGeneration the group's generation. The condition is terminal once True: a later cycle
for extra members never sets it back to False. The write is a JSON merge patch of the
conditions list with this condition replaced and the others kept (as the scheduler's copy of the
group has them); a no-op is skipped (apimeta.SetStatusCondition reports no change). It runs as a
task after the cycle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from scheduler.api.times import format_time
from scheduler.api.workload import (
    POD_GROUP_INITIALLY_SCHEDULED,
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
    """The merge patch setting the PodGroupInitiallyScheduled condition, or None when it is
    set so already or is True already (terminal). lastTransitionTime moves only when the status
    changes (metav1 conditions)."""
    current = group.condition(POD_GROUP_INITIALLY_SCHEDULED)
    if current is not None and current.get("status") == "True" and status != "True":
        return None  # already scheduled once: never regress to False
    if (
        current is not None
        and current.get("status") == status
        and current.get("reason") == reason
        and current.get("message", "") == message
        and current.get("observedGeneration", 0) == group.generation
    ):
        return None
    transition = (
        current.get("lastTransitionTime", now)
        if current is not None and current.get("status") == status
        else now
    )
    condition: dict[str, Any] = {
        "type": POD_GROUP_INITIALLY_SCHEDULED,
        "status": status,
        "observedGeneration": group.generation,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    }
    raw_status = group.raw.get("status") or {}
    others = [
        c
        for c in raw_status.get("conditions") or ()
        if isinstance(c, Mapping) and c.get("type") != POD_GROUP_INITIALLY_SCHEDULED
    ]
    return {"status": {"conditions": [*others, condition]}}
