"""Property: merging pending status patches changes nothing a user sees.

However a pod's PodScheduled=False and nominatedNodeName updates arrive (each keeping or
overriding the nomination, with or without a condition), the status the dispatcher leaves
once it has sent what it kept equals the status sending every update in turn would leave
(pod_status_patch.go Merge and IsNoOp against syncStatus applied one by one).
"""

from __future__ import annotations

import asyncio
import contextlib

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.apicalls.calls import (
    RELEVANCES,
    CallSkipped,
    PodStatus,
    PodStatusPatchCall,
    sync_status,
)
from scheduler.apicalls.dispatcher import ApiDispatcher

conditions = st.none() | st.builds(
    lambda reason, message: {
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
        "lastProbeTime": None,
        "lastTransitionTime": "t",
    },
    st.sampled_from(["Unschedulable", "SchedulerError"]),
    st.sampled_from(["0/3 nodes are available", "boom"]),
)
nominations = st.none() | st.sampled_from(["", "node-a", "node-b"])
updates = st.lists(st.tuples(conditions, nominations), max_size=6)
initial = st.builds(PodStatus, conditions, st.sampled_from(["", "node-a"]))


@settings(max_examples=150, deadline=None)
@given(initial, updates)
def test_dispatched_status_equals_sequential_updates(start: PodStatus, changes: list) -> None:
    expected = start
    for condition, nominated in changes:
        expected = sync_status(expected, condition, nominated) or expected

    async def dispatch() -> PodStatus:
        server = [start]

        async def send(old: PodStatus, new: PodStatus) -> None:
            server[0] = new

        dispatcher = ApiDispatcher(RELEVANCES, 1)
        for condition, nominated in changes:
            with contextlib.suppress(CallSkipped):
                dispatcher.add(PodStatusPatchCall("uid", start, condition, nominated, send))
        dispatcher.close()
        async with anyio.create_task_group() as group:
            group.start_soon(dispatcher.run)
        return server[0]

    assert asyncio.run(dispatch()) == expected
