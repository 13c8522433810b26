"""Which events may lift a gated pod's gate (upstream's GatingPluginEvents, issue 22): the
events the gating PreEnqueue plugin registered in the profiles, and any event when the gate has
no plugin's name."""

from __future__ import annotations

from scheduler.framework.events import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    EventResource,
)
from tests.scheduler_core.test_what_if import scheduler_with

GATES_LIFTED = ClusterEvent(
    EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
)


def test_scheduling_gates_is_lifted_only_by_the_pods_own_update() -> None:
    scheduler = scheduler_with([])
    assert scheduler._gate_may_lift("SchedulingGates", GATES_LIFTED)
    for event in (ASSIGNED_POD_DELETE, NODE_ADD, UNSCHEDULABLE_TIMEOUT):
        assert not scheduler._gate_may_lift("SchedulingGates", event)


def test_a_gate_without_a_known_plugin() -> None:
    scheduler = scheduler_with([])
    assert scheduler._gate_may_lift("", ASSIGNED_POD_DELETE)  # no plugin named: any event
    assert not scheduler._gate_may_lift("NoSuchPlugin", ASSIGNED_POD_DELETE)  # none registered
