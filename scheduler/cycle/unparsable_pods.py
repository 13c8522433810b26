"""Pods the API server accepted but the scheduler cannot read still get a visible reason.

The pod informer skips an object it cannot parse (a quantity "abc", an affinity that is a
string, ...): there is no view to queue. For a pending pod that one of our profiles owns, that
would leave it Pending with nothing to explain why. Upstream treats any error of a scheduling
attempt this way (schedule_one.go handleSchedulingFailure): a Warning event, reason
FailedScheduling, and a PodScheduled=False condition with reason SchedulerError (Unschedulable is
kept for pods that no node fits), both carrying the error, which here names the field.

Reported once per pod and problem: writing the condition changes the pod's resourceVersion and
comes back through the watch still unparsable, which must not start a loop. A later version that
parses is scheduled as usual; one with a different problem is reported again.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from scheduler.api.times import format_time
from scheduler.client.recorder import EventRecorder, ObjectRef
from scheduler.client.rest import STRATEGIC_MERGE_PATCH, ApiError, KubeClient, status_message

log = logging.getLogger(__name__)

DEFAULT_SCHEDULER_NAME = "default-scheduler"
REASON = "SchedulerError"  # upstream's v1.PodReasonSchedulerError
PATCH_ATTEMPTS = 5
FIRST_RETRY_SLEEP = 0.5
REMEMBERED = 10_000  # (uid, problem) pairs already reported


def message_for(error: str) -> str:
    return f"cannot read the pod: {error}"


class UnparsablePodReporter:
    """Event + PodScheduled=False for pending pods of ours that cannot be parsed.

    ``report`` is called from the informer and returns at once; ``run`` writes the conditions.
    """

    def __init__(
        self,
        recorder: EventRecorder,
        client: KubeClient,
        owns: Callable[[str], bool],
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        first_retry_sleep: float = FIRST_RETRY_SLEEP,
    ) -> None:
        self._recorder = recorder
        self._client = client
        self._owns = owns  # is this schedulerName one of our profiles?
        self._wall_clock = wall_clock
        self._first_retry_sleep = first_retry_sleep
        self._reported: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._patches: asyncio.Queue[tuple[ObjectRef, str]] = asyncio.Queue()

    def report(self, raw: Mapping[str, Any], error: str) -> None:
        meta = raw.get("metadata")
        spec = raw.get("spec")
        spec = spec if isinstance(spec, Mapping) else {}
        if not isinstance(meta, Mapping) or meta.get("deletionTimestamp"):
            return
        ref = _object_ref(meta)
        scheduler_name = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME
        if (
            ref is None
            or spec.get("nodeName")  # bound: not ours to explain
            or not isinstance(scheduler_name, str)
            or not self._owns(scheduler_name)
        ):
            return
        key = (ref.uid, error)
        if key in self._reported:
            return
        self._reported[key] = None
        if len(self._reported) > REMEMBERED:
            self._reported.popitem(last=False)
        message = message_for(error)
        log.warning("cannot parse pod", extra={"pod": ref.key, "error": error})
        self._recorder.record(
            ref, "Warning", "FailedScheduling", "Scheduling", message, scheduler_name
        )
        if not _has_condition(raw, message):
            self._patches.put_nowait((ref, message))

    async def run(self) -> None:
        """Write queued conditions until cancelled."""
        while True:
            ref, message = await self._patches.get()
            await self._patch_condition(ref, message)

    async def _patch_condition(self, ref: ObjectRef, message: str) -> None:
        """PATCH PodScheduled=False on the version that was reported, retrying while the API
        server does not answer or answers 429/5xx. A conflict means a newer version exists; the
        watch brings it, and it is reported (or scheduled) on its own."""
        path = f"/api/v1/namespaces/{ref.namespace}/pods/{ref.name}/status"
        now = format_time(self._wall_clock())
        patch = {
            "metadata": {"resourceVersion": ref.resource_version},  # a precondition
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": REASON,
                        "message": message,
                        "lastProbeTime": None,
                        "lastTransitionTime": now,
                    }
                ]
            },
        }
        sleep = self._first_retry_sleep
        for attempt in range(1, PATCH_ATTEMPTS + 1):
            try:
                status, body = await self._client.request(
                    "PATCH", path, body=patch, content_type=STRATEGIC_MERGE_PATCH
                )
            except ApiError as exc:
                status, body = None, str(exc)  # no answer: retried
            if status is not None:
                if status < 300 or status in (404, 409):
                    return  # written, or the pod is gone or has moved on
                if status != 429 and status < 500:
                    break  # refused for good
            if attempt < PATCH_ATTEMPTS:
                await asyncio.sleep(sleep)
                sleep *= 2
        log.warning(
            "pod status update failed",
            extra={"pod": ref.key, "status": status, "error": status_message(body)},
        )


def _object_ref(meta: Mapping[str, Any]) -> ObjectRef | None:
    fields = [meta.get(k) for k in ("namespace", "name", "uid", "resourceVersion")]
    if not all(isinstance(f, str) and f for f in fields):
        return None
    namespace, name, uid, version = (str(f) for f in fields)
    return ObjectRef(namespace, name, uid, version)


def _has_condition(raw: Mapping[str, Any], message: str) -> bool:
    """The pod already says so (a restart, or a relist, met it again)."""
    status = raw.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for condition in conditions if isinstance(conditions, list) else ():
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == REASON
            and condition.get("message") == message
        ):
            return True
    return False
