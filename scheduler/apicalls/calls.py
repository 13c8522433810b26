"""The API calls the scheduler can send through the dispatcher, and how two calls for one object
combine.

Upstream: pkg/scheduler/framework/api_calls/api_calls.go (call types and relevances),
pod_status_patch.go and pod_binding.go. A call carries its own sender (a coroutine function):
the dispatcher decides whether and when a call runs, the sender how its request is made.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

# api_calls.go: the call types, and which replaces which when both are pending for one object.
POD_STATUS_PATCH: Final = "pod_status_patch"
POD_BINDING: Final = "pod_binding"
RELEVANCES: Final[Mapping[str, int]] = {POD_STATUS_PATCH: 1, POD_BINDING: 2}


class CallSkipped(Exception):
    """fwk.ErrCallSkipped: the call was not sent (no effect, or a more relevant one pending)."""


class CallOverwritten(Exception):
    """fwk.ErrCallOverwritten: a newer call for the object replaced this pending one."""


def is_unexpected_error(error: BaseException | None) -> bool:
    """fwk.IsUnexpectedError: anything but nothing, a skip or an overwrite."""
    return error is not None and not isinstance(error, CallSkipped | CallOverwritten)


class ApiCall(Protocol):
    """fwk.APICall: one API call for one object, as the call queue handles it."""

    @property
    def call_type(self) -> str: ...

    @property
    def uid(self) -> str: ...

    async def execute(self) -> None:
        """Send the call; raise on failure."""
        ...

    def sync(self, status: PodStatus) -> PodStatus:
        """The object's status as it will be once this call is sent; may refresh the call."""
        ...

    def merge(self, old: ApiCall) -> None:
        """Take over what a pending call of the same type would still have done."""
        ...

    def is_noop(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class PodStatus:
    """The part of a pod's status the scheduler writes: PodScheduled and nominatedNodeName."""

    scheduled: Mapping[str, Any] | None = None
    nominated_node_name: str = ""


def condition_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """pod_status_patch.go conditionNeedsUpdate: status, reason, message or lastProbeTime."""
    if old is None:
        return True
    return any(
        new.get(field) != old.get(field)
        for field in ("status", "reason", "message", "lastProbeTime")
    )


def update_condition(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
    """podutil.UpdatePodCondition: lastTransitionTime kept while the status does not change."""
    updated = dict(new)
    if old is not None and old.get("status") == new.get("status"):
        updated["lastTransitionTime"] = old.get("lastTransitionTime")
    return updated


def sync_status(
    status: PodStatus, condition: Mapping[str, Any] | None, nominated: str | None
) -> PodStatus | None:
    """pod_status_patch.go syncStatus: the status with the call applied, None when unchanged.

    ``nominated`` None is NominatingInfo's ModeNoop, a name (or "" to clear) ModeOverride."""
    nominated_changes = nominated is not None and nominated != status.nominated_node_name
    scheduled = status.scheduled
    if condition is not None:
        updated = update_condition(scheduled, condition)
        if updated != (dict(scheduled) if scheduled is not None else None):
            scheduled = updated
        elif not nominated_changes:
            return None
    elif not nominated_changes:
        return None
    return PodStatus(scheduled, nominated if nominated is not None else status.nominated_node_name)


StatusSender = Callable[[PodStatus, PodStatus], Awaitable[None]]


class PodStatusPatchCall:
    """pod_status_patch.go PodStatusPatchCall: PodScheduled and/or nominatedNodeName.

    ``send(old, new)`` patches the difference; it is not called when the call, applied to the
    latest status it was synced with, would change nothing."""

    call_type = POD_STATUS_PATCH

    def __init__(
        self,
        uid: str,
        status: PodStatus,
        condition: Mapping[str, Any] | None,
        nominated: str | None,
        send: StatusSender,
    ) -> None:
        self._uid = uid
        self.status = status
        self.condition = condition
        self.nominated = nominated
        self._send = send
        self._executed = False

    @property
    def uid(self) -> str:
        return self._uid

    async def execute(self) -> None:
        self._executed = True
        synced = sync_status(self.status, self.condition, self.nominated)
        if synced is not None:
            await self._send(self.status, synced)

    def sync(self, status: PodStatus) -> PodStatus:
        # Until it is sent, the call patches the newest status the informer saw.
        if not self._executed:
            self.status = status
        synced = sync_status(status, self.condition, self.nominated)
        return status if synced is None else synced

    def merge(self, old: ApiCall) -> None:
        if not isinstance(old, PodStatusPatchCall):
            raise TypeError(f"call of type {type(old).__name__} is not a PodStatusPatchCall")
        if self.nominated is None and old.nominated is not None:
            self.nominated = old.nominated
        if self.condition is None and old.condition is not None:
            self.condition = old.condition

    def is_noop(self) -> bool:
        if self.nominated is not None and self.status.nominated_node_name != self.nominated:
            return False
        if self.condition is None:
            return True
        return not condition_changed(self.status.scheduled, self.condition)


class PodBindingCall:
    """pod_binding.go PodBindingCall: POST the pod's Binding; never merged, never a no-op."""

    call_type = POD_BINDING

    def __init__(self, uid: str, send: Callable[[], Awaitable[None]]) -> None:
        self._uid = uid
        self._send = send

    @property
    def uid(self) -> str:
        return self._uid

    async def execute(self) -> None:
        await self._send()

    def sync(self, status: PodStatus) -> PodStatus:
        return status

    def merge(self, old: ApiCall) -> None:
        return None

    def is_noop(self) -> bool:
        return False
