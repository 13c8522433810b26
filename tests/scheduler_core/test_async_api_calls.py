"""SchedulerAsyncAPICalls on: bindings, PodScheduled=False and a preemptor's nominatedNodeName
reach the API server through the dispatcher (scheduler/apicalls/), with upstream's metrics.

Upstream: pkg/scheduler/schedule_one.go, framework/plugins/defaultbinder, the scheduling queue's
PatchPodStatus and preemption/executor.go when the gate is on.
"""

from __future__ import annotations

from pathlib import Path

from harness import running_scheduler
from prometheus_client import generate_latest

GATES = {"SchedulerAsyncAPICalls": True}


def _metric_lines(text: str, name: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(name)]


async def test_calls_go_through_the_dispatcher(tmp_path: Path) -> None:
    async with running_scheduler(tmp_path, feature_gates=GATES) as h:
        assert h.scheduler.api_dispatcher is not None
        await h.api.create_node("a", cpu="1")
        await h.wait_nodes_cached(1)
        await h.api.create_pod("low", cpu="800m")
        assert await h.wait_bound("low") == "a"
        await h.api.create_pod("big", cpu="2")

        async def unschedulable() -> bool:
            pod = await h.api.get_pod("big")
            conditions = pod.get("status", {}).get("conditions") or []
            return any(
                c["type"] == "PodScheduled"
                and c["status"] == "False"
                and c["reason"] == "Unschedulable"
                and "Insufficient cpu" in c["message"]
                for c in conditions
            )

        await h.wait_for(unschedulable, what="big's PodScheduled=False")
        # A preemptor: the victim goes, the preemptor is nominated, then bound.
        await h.api.create_priority_class("high", 1000)
        await h.api.create_pod("high", cpu="800m", extra_spec={"priorityClassName": "high"})
        assert await h.wait_bound("high") == "a"
        status, _ = await h.api.request("GET", "/api/v1/namespaces/default/pods/low")
        assert status == 404

        def metrics() -> str:
            return generate_latest(h.scheduler.metrics.registry).decode()

        def sent(text: str) -> dict[str, float]:
            return {
                line.split("{", 1)[1].split("}", 1)[0]: float(line.rsplit(" ", 1)[1])
                for line in _metric_lines(text, "scheduler_async_api_call_execution_total{")
            }

        await h.wait_for(
            lambda: sent(metrics()).get('call_type="pod_binding",result="success"') == 2,
            what="two bindings counted",
        )
        counts = sent(metrics())
        assert counts.get('call_type="pod_status_patch",result="success"', 0) >= 2
        text = metrics()
        assert _metric_lines(text, "scheduler_async_api_call_execution_duration_seconds_count")
        assert "# TYPE scheduler_pending_async_api_calls gauge" in text


async def test_gate_off_registers_no_dispatcher_metrics(tmp_path: Path) -> None:
    async with running_scheduler(tmp_path) as h:
        assert h.scheduler.api_dispatcher is None
        text = generate_latest(h.scheduler.metrics.registry).decode()
        assert "scheduler_async_api_call" not in text
        assert "scheduler_pending_async_api_calls" not in text
