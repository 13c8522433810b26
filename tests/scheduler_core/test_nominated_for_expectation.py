"""NominatedNodeNameForExpectation (beta, on by default since v1.35): at the start of the binding
cycle the PreBind plugins say whether they will do work (PreBindPreFlight); when one will, or a
Permit plugin holds the pod, the chosen node is written into status.nominatedNodeName before the
pod waits. Ported from upstream's pkg/scheduler/schedule_one_test.go (TestSchedulerScheduleOne:
its cases about the nominated node name for expectation and PreBindPreFlight), against a real
API server: the nomination is read from it while PreBind (or Permit) holds the pod.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from harness import Harness, running_scheduler

from scheduler.api.objects import PodView
from scheduler.framework.interface import CycleState
from scheduler.framework.registry import PluginEntry
from scheduler.framework.status import Code, Status
from scheduler.plugins.registry import in_tree_registry

GATE = "NominatedNodeNameForExpectation"

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    preBind:
      enabled:
      - name: FakePreBind
    permit:
      enabled:
      - name: FakePermit
"""


class FakePreBind:
    """Answers PreBindPreFlight and PreBind as the case says; PreBind records the pod's
    status.nominatedNodeName as the API server has it then."""

    name = "FakePreBind"
    pre_flight = Status.OK
    pre_bind_status = Status.OK
    seen_at_pre_bind: list[str] = []

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    def pre_bind_pre_flight(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        return self.pre_flight

    async def pre_bind(self, state: CycleState, pod: PodView, node_name: str) -> Status:
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"
        _, body = await self.handle.client.request("GET", path)
        self.seen_at_pre_bind.append(body.get("status", {}).get("nominatedNodeName", ""))
        return self.pre_bind_status


class FakePermit:
    """Holds the pod at Permit when the case says so (Wait), else lets it through."""

    name = "FakePermit"
    wait = False

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def permit(self, state: CycleState, pod: PodView, node_name: str) -> tuple[Status, float]:
        return (Status.wait(plugin=self.name), 30.0) if self.wait else (Status.OK, 0.0)


def registry(pre_flight: Status, pre_bind: Status, wait: bool) -> Any:
    pre_bind_plugin = type(
        "FakePreBind",
        (FakePreBind,),
        {"pre_flight": pre_flight, "pre_bind_status": pre_bind, "seen_at_pre_bind": []},
    )
    permit_plugin = type("FakePermit", (FakePermit,), {"wait": wait})
    plugins = in_tree_registry()
    plugins.register(PluginEntry("FakePreBind", pre_bind_plugin))
    plugins.register(PluginEntry("FakePermit", permit_plugin))
    return plugins, pre_bind_plugin


async def _failed_message(h: Harness) -> str:
    async def failed() -> list[dict[str, Any]]:
        events = await h.api.events_for("p")
        return [e for e in events if e["reason"] == "FailedScheduling"]

    (event, *_) = await h.wait_for(failed, what="FailedScheduling")
    return str(event["note"])


PRE_FLIGHT_ERROR = Status(Code.ERROR, "on PreBindPreFlight")


@pytest.mark.parametrize(
    ("pre_flight", "pre_bind", "enabled", "nominated_at_pre_bind", "error"),
    [
        # "prebind is called and nominated node name is set, if preflight returns success"
        (Status.OK, Status.OK, True, "node1", None),
        # the same with the gate off: no nomination, PreBind runs all the same
        (Status.OK, Status.OK, False, "", None),
        # "prebind isn't called and nominated node name isn't set, if preflight returns skip"
        # (PreBind would fail if called)
        (Status.skip(), Status(Code.ERROR, "rejected on prebind"), True, None, None),
        # "prebindpreflight failed with status code error"
        (
            PRE_FLIGHT_ERROR,
            Status.OK,
            True,
            None,
            'running PreBindPreFlight "FakePreBind": on PreBindPreFlight',
        ),
        # "prebindpreflight failed with status code unschedulable"
        (
            Status.unschedulable("rejected on prebindpreflight"),
            Status.OK,
            True,
            None,
            'PreBindPreFlight FakePreBind returned "Unschedulable", which is unsupported. It is '
            "supposed to return Success, Skip, or Error status",
        ),
        # "prebind failed with status code error": nominated first
        (
            Status.OK,
            Status(Code.ERROR, "on PreBind"),
            True,
            "node1",
            'running PreBind plugin "FakePreBind": on PreBind',
        ),
    ],
)
async def test_pre_bind_pre_flight_and_the_nomination(
    tmp_path: Path,
    pre_flight: Status,
    pre_bind: Status,
    enabled: bool,
    nominated_at_pre_bind: str | None,
    error: str | None,
) -> None:
    plugins, pre_bind_plugin = registry(pre_flight, pre_bind, wait=False)
    async with running_scheduler(tmp_path, CONFIG, plugins, feature_gates={GATE: enabled}) as h:
        await h.api.create_node("node1")
        await h.wait_nodes_cached(1)
        await h.api.create_pod("p")
        if error is None:
            assert await h.wait_bound("p") == "node1"
        else:
            assert error in await _failed_message(h)
            assert (await h.api.get_pod("p"))["spec"].get("nodeName") is None
        seen = pre_bind_plugin.seen_at_pre_bind
        if nominated_at_pre_bind is None:
            assert seen == []  # PreBind not called
        else:
            assert seen[0] == nominated_at_pre_bind


@pytest.mark.parametrize(
    ("enabled", "nominated"),
    [
        # "nominated node name is set, permit plugin is working in wait on permit phase"
        (True, "node1"),
        # "nominated node name is not set, permit plugin is working, but the feature gate
        # NominatedNodeNameForExpectation is disabled"
        (False, ""),
    ],
)
async def test_a_pod_waiting_on_permit_is_nominated(
    tmp_path: Path, enabled: bool, nominated: str
) -> None:
    # PreBindPreFlight skips: only the wait on Permit makes the nomination worth writing.
    plugins, _ = registry(Status.skip(), Status.OK, wait=True)
    async with running_scheduler(tmp_path, CONFIG, plugins, feature_gates={GATE: enabled}) as h:
        await h.api.create_node("node1")
        await h.wait_nodes_cached(1)
        pod = await h.api.create_pod("p")
        fwk = h.scheduler.profiles["default-scheduler"].framework
        waiting = await h.wait_for(
            lambda: fwk.get_waiting_pod(pod["metadata"]["uid"]), what="pod waiting at Permit"
        )
        if nominated:
            await h.wait_for(
                lambda: _nominated(h),
                what="the nomination written while the pod waits",
            )
        else:
            await asyncio.sleep(0.3)  # a nomination would be written before the wait
        assert (await h.api.get_pod("p")).get("status", {}).get("nominatedNodeName", "") == (
            nominated
        )
        waiting.allow("FakePermit")
        assert await h.wait_bound("p") == "node1"


async def _nominated(h: Harness) -> bool:
    pod = await h.api.get_pod("p")
    return bool(pod.get("status", {}).get("nominatedNodeName"))
