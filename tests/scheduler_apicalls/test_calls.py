"""PodStatusPatchCall with upstream's cases.

Upstream: pkg/scheduler/framework/api_calls/pod_status_patch_test.go. ``nominated`` None is
NominatingInfo's ModeNoop, a string ModeOverride.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.apicalls.calls import PodStatus, PodStatusPatchCall

UNSCHEDULED = {"type": "PodScheduled", "status": "False"}
SCHEDULED = {"type": "PodScheduled", "status": "True"}
POD_WITH_NODE = PodStatus(UNSCHEDULED, "node-a")

sent: list[tuple[PodStatus, PodStatus]] = []


async def record(old: PodStatus, new: PodStatus) -> None:
    sent.append((old, new))


def call(status: PodStatus, condition: Any, nominated: str | None) -> PodStatusPatchCall:
    return PodStatusPatchCall("uid", status, condition, nominated, record)


@pytest.mark.parametrize(
    ("condition", "nominated", "noop"),
    [
        pytest.param(UNSCHEDULED, "node-a", True, id="No-op when condition and node name match"),
        pytest.param(SCHEDULED, "node-a", False, id="Not no-op when condition is different"),
        pytest.param(
            UNSCHEDULED, "node-b", False, id="Not no-op when nominated node name is different"
        ),
        pytest.param(None, "node-a", True, id="No-op when condition is nil and node name matches"),
        pytest.param(
            None, "node-b", False, id="Not no-op when condition is nil but node name differs"
        ),
    ],
)
def test_is_noop(condition: Any, nominated: str | None, noop: bool) -> None:
    assert call(POD_WITH_NODE, condition, nominated).is_noop() is noop


@pytest.mark.parametrize(
    ("old", "new", "condition", "nominated"),
    [
        pytest.param(
            (UNSCHEDULED, "node-a"),
            (None, None),
            UNSCHEDULED,
            "node-a",
            id="Merges nominating info and condition from the old call",
        ),
        pytest.param(
            (None, None),
            (UNSCHEDULED, "node-b"),
            UNSCHEDULED,
            "node-b",
            id="Doesn't overwrite nominating info and condition of a new call",
        ),
    ],
)
def test_merge(old: Any, new: Any, condition: Any, nominated: str) -> None:
    new_call = call(PodStatus(), *new)
    new_call.merge(call(PodStatus(), *old))
    assert (new_call.condition, new_call.nominated) == (condition, nominated)


@pytest.mark.parametrize(
    ("executed", "kept"),
    [
        pytest.param(False, "node-b", id="Syncs the status before execution and updates the pod"),
        pytest.param(True, "node-a", id="Doesn't sync internal status during or after execution"),
    ],
)
async def test_sync(executed: bool, kept: str) -> None:
    patch = call(POD_WITH_NODE, None, "node-c")
    if executed:
        await patch.execute()
    synced = patch.sync(PodStatus(UNSCHEDULED, "node-b"))
    assert patch.status.nominated_node_name == kept
    assert synced.nominated_node_name == "node-c"


async def test_execute_patches_only_what_changes() -> None:
    """TestPodStatusPatchCall_Execute: a patch is sent; a no-op one is not."""
    sent.clear()
    status = PodStatus(None, "node-a")
    await call(status, UNSCHEDULED, None).execute()
    assert sent == [(status, PodStatus(UNSCHEDULED, "node-a"))]
    sent.clear()
    await call(status, None, "node-a").execute()
    assert sent == []


def test_transition_time_kept_while_status_unchanged() -> None:
    """podutil.UpdatePodCondition: a new reason keeps lastTransitionTime of the same status."""
    old = {**UNSCHEDULED, "reason": "Unschedulable", "lastTransitionTime": "t0"}
    new = {**UNSCHEDULED, "reason": "SchedulerError", "lastTransitionTime": "t1"}
    synced = call(PodStatus(old), new, None).sync(PodStatus(old))
    assert synced.scheduled == {**new, "lastTransitionTime": "t0"}
