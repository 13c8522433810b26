"""The API calls of a preemption decided in the scheduling cycle, run after it.

Upstream: pkg/scheduler/framework/preemption/preemption.go (prepareCandidate and its async
variant, PreemptPod) and util.ClearNominatedNodeName. For each victim, in order:
- a victim still waiting on Permit is rejected there (it is not bound yet, nothing to delete);
- otherwise it gets a `DisruptionTarget` condition (reason PreemptionByScheduler), then is
  deleted, and a `Preempted` event names the preemptor;
then the lower-priority pods nominated to the same node lose their nomination. The preemptor's
own `nominatedNodeName` is written with its PodScheduled=False condition by the failure
handler. A victim already gone (404) is not an error. With SchedulerAsyncAPICalls on, the
nominations are cleared through the API dispatcher, as upstream; victims are deleted directly
in both cases (upstream's executor does not route deletes through it either).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any

from scheduler.api.objects import PodView
from scheduler.api.times import format_time
from scheduler.apicalls.calls import CallSkipped, PodStatus, PodStatusPatchCall
from scheduler.apicalls.dispatcher import ApiDispatcher
from scheduler.apicalls.pods import pod_status, status_patch
from scheduler.client.recorder import EventRecorder
from scheduler.client.rest import STRATEGIC_MERGE_PATCH, ApiError, KubeClient, status_message
from scheduler.framework.interface import Preemption

log = logging.getLogger(__name__)

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_REASON = "PreemptionByScheduler"


class PreemptionCalls:
    def __init__(
        self,
        client: KubeClient,
        recorder: EventRecorder,
        wall_clock: Callable[[], datetime],
        reject_waiting_pod: Callable[[str], bool],
        clear_nomination: Callable[[PodView], None],
        dispatcher: ApiDispatcher | None = None,
    ) -> None:
        self._dispatcher = dispatcher
        self._client = client
        self._recorder = recorder
        self._wall_clock = wall_clock
        self._reject_waiting_pod = reject_waiting_pod
        self._clear_nomination = clear_nomination

    async def run(self, preemption: Preemption, profile: str) -> None:
        preemptor = preemption.preemptor
        for victim in preemption.victims:
            if self._reject_waiting_pod(victim.uid):
                continue  # waiting on Permit: rejecting it frees its resources
            if victim.deletion_timestamp is not None:
                continue  # already being deleted: no second call
            if await self._disrupt(victim, profile, preemption.preemptor_type):
                self._recorder.record(
                    victim,
                    "Normal",
                    "Preempted",
                    "Preempting",
                    f"Preempted by {preemption.preemptor_type} "
                    f"{preemption.preemptor_uid or preemptor.uid} on node {preemption.node_name}",
                    profile,
                )
        for pod in preemption.nominations_to_clear:
            self._clear_nomination(pod)
            if self._dispatcher is None:
                await self._patch_status(pod, {"nominatedNodeName": None})
                continue
            # SchedulerAsyncAPICalls: executor.go clearNominatedNodeName through the APICacher.
            send = partial(self._send_status_patch, pod)
            with contextlib.suppress(CallSkipped):
                self._dispatcher.add(PodStatusPatchCall(pod.uid, pod_status(pod), None, "", send))

    async def _send_status_patch(self, pod: PodView, old: PodStatus, new: PodStatus) -> None:
        await self._patch_status(pod, status_patch(old, new))

    async def _disrupt(self, victim: PodView, profile: str, preemptor_type: str) -> bool:
        """Condition then delete; whether the victim was deleted (or was already gone)."""
        condition = {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": PREEMPTION_REASON,
            "message": f"{profile}: preempting to accommodate a higher priority {preemptor_type}",
            "lastTransitionTime": format_time(self._wall_clock()),
        }
        if not await self._patch_status(victim, {"conditions": [condition]}):
            return False
        path = f"/api/v1/namespaces/{victim.namespace}/pods/{victim.name}"
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": victim.uid}}
        try:
            status, answer = await self._client.request("DELETE", path, body=body)
        except ApiError as exc:
            log.warning(
                "deleting a preemption victim failed", extra={"pod": victim.key, "error": str(exc)}
            )
            return False
        if status >= 300 and status != 404:
            log.warning(
                "deleting a preemption victim refused",
                extra={"pod": victim.key, "status": status, "error": status_message(answer)},
            )
            return False
        return status != 404

    async def _patch_status(self, pod: PodView, status_patch: dict[str, Any]) -> bool:
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status"
        try:
            status, answer = await self._client.request(
                "PATCH", path, body={"status": status_patch}, content_type=STRATEGIC_MERGE_PATCH
            )
        except ApiError as exc:
            log.warning("pod status patch failed", extra={"pod": pod.key, "error": str(exc)})
            return False
        if status >= 300:
            if status != 404:
                log.warning(
                    "pod status patch refused",
                    extra={"pod": pod.key, "status": status, "error": status_message(answer)},
                )
            return False
        return True
