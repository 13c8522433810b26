"""A preemptor is retried on the node its preemption nominated, even before the API server has
its nomination: upstream patches status.nominatedNodeName within the failed cycle
(schedule_one.go handleSchedulingFailure → updatePod), so the pod it retries carries it and
findNodesThatFitPod tries that node first. aiosched sends the patch later, from the pod's status
sender; the requeued pod must carry the nomination all the same.

Found by `python -m bench.decisions` against kube-scheduler v1.36.2: once the victim was gone,
a node the victim's anti-affinity had kept out scored higher, and aiosched bound the preemptor
there when its retry came before the watch brought the patched pod.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import running_scheduler

from scheduler.cycle.scheduling_cycle import FailureHandler

ZONE = {"topology.kubernetes.io/zone": "z"}


async def test_the_preemptor_goes_to_its_nominated_node_before_the_patch_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held: list[dict[str, Any]] = []

    async def hold_patch(self: FailureHandler, pod: Any, patch: dict[str, Any]) -> None:
        held.append(patch)  # never reaches the API server: the watch cannot bring it

    monkeypatch.setattr(FailureHandler, "_patch_unscheduled_status", hold_patch)
    async with running_scheduler(tmp_path) as h:
        await h.api.create_node("a", cpu="4", labels=ZONE)
        await h.api.create_node("b", cpu="16", labels=ZONE)  # more room: scores higher
        await h.wait_nodes_cached(2)
        await h.api.create_priority_class("vip", 1000)
        on_a = {"nodeSelector": {"kubernetes.io/hostname": "a"}}
        await h.api.create_pod("low", cpu="1", extra_spec=on_a)
        assert await h.wait_bound("low") == "a"
        status, _ = await h.api.request(
            "PATCH",
            "/api/v1/namespaces/default/pods/low",
            {"metadata": {"labels": {"app": "x"}}},
            "application/merge-patch+json",
        )
        assert status == 200
        # kept out of the whole zone by low's label: only preempting low on a helps
        away_from_x = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "x"}},
                        "topologyKey": "topology.kubernetes.io/zone",
                    }
                ]
            }
        }
        await h.api.create_pod(
            "vip", cpu="1", extra_spec={"priorityClassName": "vip", "affinity": away_from_x}
        )
        assert await h.wait_bound("vip", timeout=20) == "a"
        assert any(patch.get("nominatedNodeName") == "a" for patch in held), held
