"""The PodGroup cycle never places part of a gang: for random gangs and node capacities, after
every cycle each group has either none of its members assumed or at least its minCount
(upstream's all-or-nothing, schedule_one_podgroup.go at v1.37), and what is assumed fits.

The Scheduler is built but never run: its cache, queue and PodGroup cycle are driven directly
(no API server; status patches and bindings are not started before run() opens its task
groups), so each example costs milliseconds.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from profiles.api import load_config_text
from scheduler.api.objects import PodView
from scheduler.client.rest import KubeClient
from scheduler.cycle.profile_set import registry_for_config
from scheduler.cycle.scheduler import Scheduler, SchedulerOptions
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing import MakeNode, MakePod
from tests.scheduler_gang.gang_builders import pod_group
from tests.scheduler_gang.test_podgroup_cycle import GANG_CONFIG, GATES

# (minCount, members' CPU each, extra members beyond minCount)
GROUPS = st.lists(
    st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(0, 2)), min_size=1, max_size=3
)
NODES = st.lists(st.integers(1, 8), min_size=1, max_size=4)


def _member(name: str, group: str, cpu: int) -> PodView:
    raw = MakePod(name, "default").uid(f"uid-{name}").req(cpu=str(cpu)).obj().raw
    return PodView.from_dict(
        {**raw, "spec": {**raw["spec"], "schedulingGroup": {"podGroupName": group}}}
    )


class _NoClient:
    """Stands for the KubeClient of a Scheduler that is never run: nothing calls the API."""

    def with_own_rate_limit(self) -> _NoClient:
        return self


def unstarted_scheduler(**kwargs: Any) -> Scheduler:
    registry = in_tree_registry()
    config = load_config_text(GANG_CONFIG, registry_for_config(registry))
    # Never run: no request is made, so no client is needed.
    return Scheduler(
        cast(KubeClient, _NoClient()),
        config,
        registry,
        SchedulerOptions(seed=1, feature_gates=GATES),
        **kwargs,
    )


async def run_cycles(
    nodes: list[int], groups: list[tuple[int, int, int]], scheduler: Scheduler | None = None
) -> dict[str, int]:
    """Cycles until the queue has no active pod; how many members of each group are assumed."""
    scheduler = scheduler or unstarted_scheduler()
    assert scheduler.podgroups is not None
    for i, cpu in enumerate(nodes):
        scheduler.cache.add_node(
            MakeNode(f"n{i}").capacity({"cpu": str(cpu), "memory": "64Gi", "pods": "110"}).obj()
        )
    workloads = scheduler.cluster_objects.workloads
    members: dict[str, list[PodView]] = {}
    min_counts: dict[str, int] = {}
    for g, (min_count, cpu, extra) in enumerate(groups):
        name = f"g{g}"
        workloads.add(pod_group(name, min_count))
        min_counts[name] = min_count
        members[name] = [_member(f"{name}-{i}", name, cpu) for i in range(min_count + extra)]
    # Every member is known before any is queued (as if the informer's adds had woken the
    # members GangScheduling's PreEnqueue held), so no member waits for its quorum to appear.
    everyone = [pod for pods in members.values() for pod in pods]
    for pod in everyone:
        workloads.states.pod_added(pod)
    for pod in everyone:
        scheduler.queue.add(pod)
    cache = scheduler.cache
    for _ in range(sum(len(p) for p in members.values())):
        pinfo = scheduler.queue.try_pop()
        if pinfo is None:
            break
        group = scheduler.podgroups.group_of(pinfo.pod)
        assert group is not None
        await scheduler.podgroups.schedule_group(pinfo, group, scheduler.profiles)
        for name, pods in members.items():
            assumed = sum(cache.is_assumed_pod(pod) for pod in pods)
            assert assumed == 0 or assumed >= min_counts[name], (name, assumed)
        _assert_fits(scheduler, nodes)
    return {name: sum(cache.is_assumed_pod(p) for p in pods) for name, pods in members.items()}


def _assert_fits(scheduler: Scheduler, nodes: list[int]) -> None:
    dump: Any = scheduler.cache.dump()
    for i, cpu in enumerate(nodes):
        info = dump.nodes.get(f"n{i}")
        assert info is None or info.requested.milli_cpu <= cpu * 1000


@settings(max_examples=60, deadline=None)
@given(nodes=NODES, groups=GROUPS)
def test_a_group_is_assumed_whole_or_not_at_all(
    nodes: list[int], groups: list[tuple[int, int, int]]
) -> None:
    asyncio.run(run_cycles(nodes, groups))


def test_the_property_s_driver_places_what_fits_and_nothing_of_what_does_not() -> None:
    # 8 CPUs: a gang of 2 x 3 CPUs fits; then a gang of 3 x 1 CPU needs 3 of the 2 left.
    assert asyncio.run(run_cycles([8], [(2, 3, 0), (3, 1, 0)])) == {"g0": 2, "g1": 0}
    # A gang of 2 with a third member: the third does not fit, the quorum does.
    assert asyncio.run(run_cycles([4, 4], [(2, 4, 1)])) == {"g0": 2}
