"""The points after a node is chosen: Reserve / Unreserve and Permit in the scheduling cycle,
PreBindPreFlight, WaitOnPermit, PreBind, Bind and PostBind in the binding cycle (upstream's
RunReservePlugins*, RunPermitPlugins, RunPreBindPreFlights, WillWaitOnPermit, WaitOnPermit,
RunPreBindPlugins, RunBindPlugins, RunPostBindPlugins)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from scheduler.framework.interface import CycleState, Plugin, PostBindPlugin, ReservePlugin
from scheduler.framework.runtime.core import (
    MAX_PERMIT_TIMEOUT,
    FrameworkCore,
    _error,
)
from scheduler.framework.status import Code, Status
from scheduler.framework.waiting_pods import WaitingPod

if TYPE_CHECKING:
    from scheduler.api.objects import PodView


# How a plugin's status ends a point's loop: None goes on to the next plugin, a Status is the
# point's answer. Each point follows its upstream Run*Plugins.
Verdict = Callable[[str, Status], "Status | None"]


def _first_failure(point: str) -> Verdict:
    """Reserve and PreBind: the first failure ends the loop, a rejection as it is (attributed),
    anything else as an Error in upstream's words."""

    def verdict(plugin: str, status: Status) -> Status | None:
        if status.is_success:
            return None
        if status.is_rejected:
            return status.with_plugin(plugin)
        return _error(f'running {point} plugin "{plugin}": {status.message}')

    return verdict


def _first_not_skipped(plugin: str, status: Status) -> Status | None:
    """Bind: the first plugin that does not Skip decides."""
    if status.is_skip:
        return None
    if status.is_success:
        return status
    if status.is_rejected:
        return status.with_plugin(plugin)
    return _error(f'running Bind plugin "{plugin}": {status.message}', plugin)


def _never_stops(plugin: str, status: Status) -> Status | None:
    """Unreserve and PostBind: every plugin runs, nothing is returned."""
    return None


_RESERVE = _first_failure("Reserve")
_PRE_BIND = _first_failure("PreBind")


class Binding(FrameworkCore):
    """Reserve, Permit, PreBind, Bind and PostBind."""

    def _run_each(
        self,
        point: str,
        state: CycleState,
        plugins: Iterable[Plugin],
        call: Callable[[Any], Status],
        verdict: Verdict,
        otherwise: Status = Status.OK,
    ) -> Status:
        """`call(plugin)` for each plugin in order, timed as `point` when the attempt is
        sampled, until `verdict` ends the loop; `otherwise` when none did. The point is timed
        as a whole."""
        start = self._now()
        returned = otherwise
        try:
            for plugin in plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                status = call(plugin)
                if state.record_plugin_metrics:
                    self._plugin_done(point, plugin.name, status, plugin_start, state)
                answer = verdict(plugin.name, status)
                if answer is not None:
                    returned = answer
                    return returned
            return returned
        finally:
            self._point_done(point, returned, start, state)

    async def _await_each(
        self,
        point: str,
        state: CycleState,
        plugins: Iterable[Plugin],
        call: Callable[[Any], Awaitable[Status]],
        verdict: Verdict,
        otherwise: Status = Status.OK,
    ) -> Status:
        """`_run_each` for points whose plugins are coroutines (the binding cycle)."""
        start = self._now()
        returned = otherwise
        try:
            for plugin in plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                status = await call(plugin)
                if state.record_plugin_metrics:
                    self._plugin_done(point, plugin.name, status, plugin_start, state)
                answer = verdict(plugin.name, status)
                if answer is not None:
                    returned = answer
                    return returned
            return returned
        finally:
            self._point_done(point, returned, start, state)

    # ---- Reserve / Permit ---------------------------------------------------------------

    def run_reserve_plugins_reserve(
        self, state: CycleState, pod: PodView, node_name: str
    ) -> Status:
        return self._run_each(
            "Reserve",
            state,
            self.reserve_plugins,
            lambda plugin: plugin.reserve(state, pod, node_name),
            _RESERVE,
        )

    def run_reserve_plugins_unreserve(
        self, state: CycleState, pod: PodView, node_name: str
    ) -> None:
        """Unreserve in the reverse order of Reserve."""

        def unreserve(plugin: ReservePlugin) -> Status:
            plugin.unreserve(state, pod, node_name)
            return Status.OK

        self._run_each("Unreserve", state, reversed(self.reserve_plugins), unreserve, _never_stops)

    def run_permit_plugins(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        """Success, a rejection (attributed), an Error, or Wait: the pod is then parked in
        `waiting_pods` with one timer per waiting plugin (call inside the event loop)."""
        start = self._now()
        returned = Status.OK
        try:
            waits: dict[str, float] = {}
            for plugin in self.permit_plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                status, timeout = plugin.permit(state, pod, node_name)
                if state.record_plugin_metrics:
                    self._plugin_done("Permit", plugin.name, status, plugin_start, state)
                if status.is_success:
                    continue
                if status.is_rejected:
                    returned = status.with_plugin(plugin.name)
                    return returned
                if status.is_wait:
                    waits[plugin.name] = min(timeout, MAX_PERMIT_TIMEOUT)
                    continue
                returned = _error(
                    f'running Permit plugin "{plugin.name}": {status.message}', plugin.name
                )
                return returned
            if waits:
                self.waiting_pods.add(WaitingPod(pod, waits))
                returned = Status.wait(
                    f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"'
                )
            return returned
        finally:
            self._point_done("Permit", returned, start, state)

    async def wait_on_permit(self, pod: PodView) -> Status:
        """Block while the pod waits on Permit; Success, the rejection, or an Error."""
        waiting_pod = self.waiting_pods.get(pod.uid)
        if waiting_pod is None:
            return Status.OK
        start = self._now()
        try:
            status = await waiting_pod.wait()
        finally:
            self.waiting_pods.remove(pod.uid)
        # upstream's WaitOnPermit: the code the wait ended with (Success, Unschedulable...)
        self.observer.on_permit_wait(status.code_name, self._now() - start)
        if status.is_success or status.is_rejected:
            return status
        return _error(f"waiting on permit for pod: {status.message}", status.plugin)

    def will_wait_on_permit(self, pod: PodView) -> bool:
        """Whether WaitOnPermit will hold the pod (a Permit plugin answered Wait)."""
        return self.waiting_pods.get(pod.uid) is not None

    # ---- binding cycle ------------------------------------------------------------------

    def run_pre_bind_pre_flights(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        """Upstream's RunPreBindPreFlights: Success when a PreBind plugin will do work for the
        pod, Skip when none will (those answering Skip are skipped at PreBind), an Error on a
        plugin's error or on any other code. A plugin without `pre_bind_pre_flight` (written
        before the method existed) is taken to do work."""
        start = self._now()
        returned = Status.skip()
        skipped: set[str] = set()
        try:
            for plugin in self.pre_bind_plugins:
                plugin_start = self._now() if state.record_plugin_metrics else 0.0
                pre_flight = getattr(plugin, "pre_bind_pre_flight", None)
                status = Status.OK if pre_flight is None else pre_flight(state, pod, node_name)
                if state.record_plugin_metrics:
                    self._plugin_done("PreBindPreFlight", plugin.name, status, plugin_start, state)
                if status.code is Code.ERROR:
                    returned = _error(f'running PreBindPreFlight "{plugin.name}": {status.message}')
                    return returned
                if status.is_success:
                    returned = Status.OK
                elif status.is_skip:
                    skipped.add(plugin.name)
                else:
                    returned = _error(
                        f'PreBindPreFlight {plugin.name} returned "{status.code_name}", which is '
                        "unsupported. It is supposed to return Success, Skip, or Error status"
                    )
                    return returned
            state.skip_pre_bind_plugins = skipped
            return returned
        finally:
            self._point_done("PreBindPreFlight", returned, start, state)

    async def run_pre_bind_plugins(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        skipped = state.skip_pre_bind_plugins
        return await self._await_each(
            "PreBind",
            state,
            [p for p in self.pre_bind_plugins if p.name not in skipped]
            if skipped
            else (self.pre_bind_plugins),
            lambda plugin: plugin.pre_bind(state, pod, node_name),
            _PRE_BIND,
        )

    async def run_bind_plugins(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        """The first bind plugin that does not Skip decides; Skip when all skip (the caller
        treats that as an error, as upstream's bind does)."""
        return await self._await_each(
            "Bind",
            state,
            self.bind_plugins,
            lambda plugin: plugin.bind(state, pod, node_name),
            _first_not_skipped,
            otherwise=Status.skip(),
        )

    async def run_post_bind_plugins(self, state: CycleState, pod: PodView, node_name: str) -> None:
        async def post_bind(plugin: PostBindPlugin) -> Status:
            await plugin.post_bind(state, pod, node_name)
            return Status.OK

        await self._await_each("PostBind", state, self.post_bind_plugins, post_bind, _never_stops)
