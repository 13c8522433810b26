"""scheduler_perf's createPodGroups op, and what a gang workload measures beyond pods/s
(issue 25).

Upstream: test/integration/scheduler_perf/podgroup/gangscheduling/performance-config.yaml and
its templates/podgroup.yaml. The PodGroups are created before the scheduler starts, so its
informer lists them all before the first member arrives (upstream's op waits for the
scheduler's informer cache to hold them).

Ours: upstream reports pods/s only. A gang is placed when its last member is bound, so the bench
also reports the groups fully placed per second and each group's time to full placement: from
its first member's create request to its last member seen bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from bench import workloads as wl
from bench.kubeapi import KubeApi, bulk
from bench.stats import LatencySummary, summarize_latencies


def pod_groups_path(namespace: str) -> str:
    return f"/apis/{wl.SCHEDULING_V1BETA1}/namespaces/{namespace}/podgroups"


async def create_pod_groups(api: KubeApi, workload: wl.Workload, concurrency: int) -> None:
    """createPodGroups: gang-0 ... gang-(n-1) in the measured pods' namespace."""
    gang = workload.gang
    assert gang is not None
    path = pod_groups_path(workload.measure_namespace)

    async def create(index: int) -> None:
        await api.create(path, orjson.dumps(wl.pod_group_manifest(workload, index)))

    await bulk(gang.pod_groups, concurrency, create)


@dataclass(frozen=True, slots=True)
class GangPlacement:
    """How the measured gangs were placed."""

    groups: int  # the workload's PodGroups
    placed: int  # groups whose every member was seen bound
    # placed groups per second, from the first member's creation to the last group placed
    groups_per_second: float | None
    # per placed group: first member's create request -> last member seen bound
    time_to_placement: LatencySummary | None

    def to_json(self) -> dict[str, Any]:
        return {
            "groups": self.groups,
            "placed": self.placed,
            "groups_per_second": (
                None if self.groups_per_second is None else round(self.groups_per_second, 3)
            ),
            "time_to_placement_seconds": (
                self.time_to_placement.to_json() if self.time_to_placement else None
            ),
        }


def measure_gangs(
    workload: wl.Workload,
    created_at: Mapping[str, float],
    bound_at: Mapping[str, float],
    first_created: float,
) -> GangPlacement:
    """The placement of each group whose members were all created and seen bound."""
    gang = workload.gang
    assert gang is not None
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    incomplete: set[str] = set()
    for index in range(workload.measure_pods):
        group = wl.gang_member_group(workload, index)
        name = wl.gang_pod_name(index)
        created, bound = created_at.get(name), bound_at.get(name)
        if created is None or bound is None:
            incomplete.add(group)
            continue
        first[group] = min(first.get(group, created), created)
        last[group] = max(last.get(group, bound), bound)
    placed = {group: last[group] for group in last if group not in incomplete}
    seconds = max(placed.values(), default=first_created) - first_created
    return GangPlacement(
        groups=gang.pod_groups,
        placed=len(placed),
        groups_per_second=len(placed) / seconds if placed and seconds > 0 else None,
        time_to_placement=summarize_latencies(
            max(0.0, at - first[group]) for group, at in placed.items()
        ),
    )
