"""SchedulerAsyncPreemption=false (the gate is beta, on by default since v1.33), against a real
API server: a preemption's API calls (victims marked and deleted, lower nominations cleared)
run within the scheduling cycle, before the preemptor is requeued (upstream's
prepareCandidate), not after it (prepareCandidateAsync, the default, which the preemption tests
elsewhere exercise). The victim goes and the preemptor binds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness import running_scheduler


async def test_preemption_calls_run_in_the_cycle_with_the_gate_off(tmp_path: Path) -> None:
    gates = {"SchedulerAsyncPreemption": False}
    async with running_scheduler(tmp_path, feature_gates=gates) as h:
        scheduler = h.scheduler
        calls = scheduler.scheduling._preemption_calls
        in_cycle: list[bool] = []
        run = calls.run

        async def recording_run(preemption: Any, profile: str) -> None:
            in_cycle.append(scheduler._in_cycle)  # the loop's "a cycle is running" flag
            await run(preemption, profile)

        calls.run = recording_run  # type: ignore[method-assign]
        await h.api.create_node("n", cpu="4", memory="8Gi")
        await h.wait_nodes_cached(1)
        await h.api.create_pod("low", cpu="3")
        assert await h.wait_bound("low") == "n"
        await h.api.create_priority_class("vip", 1000)
        await h.api.create_pod("vip", cpu="3", extra_spec={"priorityClassName": "vip"})
        assert await h.wait_bound("vip", timeout=20) == "n"
        assert in_cycle == [True]
