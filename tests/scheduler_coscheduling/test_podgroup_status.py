"""PodGroup status, as scheduler-plugins' PodGroupReconciler (pkg/controllers/
podgroup_controller.go) writes it: phase Pending → Scheduling once minMember pods exist →
Running / Failed / Finished from the pods' phases, with occupiedBy and the counts; run inside
`aiosched run` by PodGroupStatusController."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.objects import PodView
from scheduler.listers.pod_groups import PodGroupObjects, PodGroupStatusController, desired_status
from scheduler.testing import RecordingClient
from tests.scheduler_coscheduling.kit import member, pod_group


def _pods(*phases: str) -> list[PodView]:
    return [
        member(f"p{i}", "ns", "pg").owner("batch/v1", "Job", "job").phase(phase).obj()
        for i, phase in enumerate(phases)
    ]


CASES = [
    ("new group", "", 2, _pods(), {"phase": "Pending"}),
    ("pending, too few pods", "Pending", 2, _pods("Pending"), None),
    ("pending, enough pods", "Pending", 2, _pods("Pending", "Pending"),
     {"phase": "Scheduling", "occupiedBy": "ns/job"}),
    ("scheduling, one running", "Scheduling", 2, _pods("Running", "Pending"), {"running": 1}),
    ("scheduling, quorum running", "Scheduling", 2, _pods("Running", "Running"),
     {"phase": "Running", "running": 2}),
    ("running, pods gone", "Running", 2, _pods("Running"), {"phase": "Pending", "running": 1}),
    ("one failed", "Running", 2, _pods("Running", "Failed"),
     {"phase": "Failed", "running": 1, "failed": 1}),
    ("all succeeded", "Running", 2, _pods("Succeeded", "Succeeded"),
     {"phase": "Finished", "succeeded": 2}),
    ("finished stays", "Finished", 2, _pods("Running"), None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("phase", "min_member", "pods", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_desired_status(
    phase: str, min_member: int, pods: list[PodView], want: dict[str, Any] | None
) -> None:
    group = pod_group("pg", "ns", min_member, status={"phase": phase} if phase else None)
    assert desired_status(group, pods) == want


async def test_controller_patches_the_status_subresource() -> None:
    objects = PodGroupObjects()
    client = RecordingClient()
    controller = PodGroupStatusController(objects, client)
    objects.add(pod_group("pg", "ns", 1, status={"phase": "Pending"}), *_pods("Pending"))
    await controller.reconcile("ns", "pg")
    assert client.requests[-1][:2] == (
        "PATCH",
        "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups/pg/status",
    )
    assert client.requests[-1][2] == {"status": {"phase": "Scheduling", "occupiedBy": "ns/job"}}
    await controller.reconcile("ns", "missing")  # deleted meanwhile: nothing written
    assert len(client.requests) == 1


async def test_a_count_that_falls_to_zero_is_removed_as_controller_runtime_patches_it() -> None:
    # Every member succeeded: running falls from 2 to 0. Upstream's client.MergeFrom diffs the
    # JSON of old and new, where `running: 0` is omitted (omitempty): the patch sets it null.
    objects = PodGroupObjects()
    client = RecordingClient()
    controller = PodGroupStatusController(objects, client)
    objects.add(
        pod_group("pg", "ns", 2, status={"phase": "Running", "running": 2}),
        *_pods("Succeeded", "Succeeded"),
    )
    await controller.reconcile("ns", "pg")
    assert client.requests[-1][2] == {
        "status": {"phase": "Finished", "running": None, "succeeded": 2}
    }
