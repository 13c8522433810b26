"""DefaultBinder (Bind): POST a v1 Binding to the pod's binding subresource.

Upstream: pkg/scheduler/framework/plugins/defaultbinder/default_binder.go. A 409 Conflict
means the pod is already bound (another scheduler or an earlier attempt whose answer was lost):
it comes back as an Error whose message contains BIND_CONFLICT_MARKER, so the binding cycle can
tell it apart (`is_bind_conflict`) and reconcile instead of retrying blindly. With
SchedulerAsyncAPICalls on, the binding is a PodBindingCall of the handle's API dispatcher
(pkg/scheduler/framework/api_calls/pod_binding.go).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from scheduler.api.objects import PodView
from scheduler.apicalls.calls import CallSkipped, PodBindingCall, is_unexpected_error
from scheduler.apicalls.dispatcher import ApiDispatcher
from scheduler.framework.interface import CycleState, Handle
from scheduler.framework.status import Status

BIND_CONFLICT_MARKER = "409 Conflict"


class BindingFailed(Exception):
    """The binding the dispatcher sent was refused (its Status is kept by the caller)."""


def binding_body(pod: PodView, node_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }


def is_bind_conflict(status: Status) -> bool:
    return not status.is_success and BIND_CONFLICT_MARKER in status.message


def _api_message(body: Any) -> str:
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        return str(body["message"])
    return str(body) if body else ""


class DefaultBinder:
    name = "DefaultBinder"

    def __init__(self, args: Any, handle: Handle) -> None:
        self._handle = handle

    async def bind(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        dispatcher: ApiDispatcher | None = getattr(self._handle, "api_dispatcher", None)
        if dispatcher is None:
            return await self._post_binding(pod, node_name)
        return await self._bind_through(dispatcher, pod, node_name)

    async def _bind_through(
        self, dispatcher: ApiDispatcher, pod: PodView, node_name: str
    ) -> Status:
        """SchedulerAsyncAPICalls: the binding goes through the dispatcher, replacing a status
        patch still pending for the pod, and the binding cycle waits for its outcome
        (upstream's APICacher().BindPod then WaitOnFinish)."""
        failed: list[Status] = []

        async def send() -> None:
            status = await self._post_binding(pod, node_name)
            if not status.is_success:
                failed.append(status)
                raise BindingFailed(status.message)

        on_finish: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        try:
            dispatcher.add(PodBindingCall(pod.uid, send), on_finish)
        except CallSkipped:
            return Status.OK  # WaitOnFinish: a skipped call is no error
        error = await on_finish
        if not is_unexpected_error(error):
            return Status.OK
        return failed[0] if failed else Status.error(f"binding {pod.key} to {node_name}: {error}")

    async def _post_binding(self, pod: PodView, node_name: str) -> Status:
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding"
        try:
            code, body = await self._handle.client.request(
                "POST", path, body=binding_body(pod, node_name)
            )
        except Exception as exc:  # transport failure: the caller retries the pod with backoff
            return Status.error(f"binding {pod.key} to {node_name}: {exc}")
        if code in (200, 201):
            return Status.OK
        message = _api_message(body)
        if code == 409:
            return Status.error(
                f"binding {pod.key} to {node_name}: {BIND_CONFLICT_MARKER}: {message}"
            )
        return Status.error(f"binding {pod.key} to {node_name}: HTTP {code}: {message}")
