"""The what-if engine: answers in explain's format, and leaves the scheduler as it found it.

The Scheduler here is built but not run: nodes and pods go straight into its cache and queue, so
each case is a few milliseconds and fully determined (no informers, no binding)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from observability.http import BadRequest
from profiles.api import load_config_text
from scheduler.api.objects import NodeView, PodView
from scheduler.cycle.profile_set import registry_for_config
from scheduler.cycle.scheduler import Scheduler, SchedulerOptions
from scheduler.cycle.what_if import NEEDS_PREEMPTION_NOTE, WhatIf
from scheduler.plugins.registry import in_tree_registry

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: packer
  plugins:
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"""
#: A candidate whose default-scheduler packs (MostAllocated) as "packer" does.
CANDIDATE = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"""


class NoClient:
    """What-if never talks to the API server: once armed (after the Scheduler is built, which
    sets up its event writers with it), any use fails the test."""

    armed = False

    def __getattr__(self, name: str) -> Any:
        if self.armed:
            raise AssertionError(f"what-if used the client ({name})")
        return lambda *args, **kwargs: self


def node(name: str, cpu: str, taints: list[dict[str, str]] | None = None) -> NodeView:
    resources = {"cpu": cpu, "memory": "32Gi", "pods": "110"}
    return NodeView.from_dict(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"taints": taints or []},
            "status": {"capacity": resources, "allocatable": resources},
        }
    )


def manifest(name: str, cpu: str, **spec: Any) -> dict[str, Any]:
    container = {
        "name": "c",
        "image": "registry.k8s.io/pause:3.9",
        "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container], **spec},
    }


def bound_pod(name: str, cpu: str, node_name: str) -> PodView:
    pod = manifest(name, cpu, nodeName=node_name)
    pod["metadata"] |= {"namespace": "default", "uid": f"uid-{name}"}
    return PodView.from_dict(pod)


def pending_pod(name: str, cpu: str) -> PodView:
    pod = manifest(name, cpu)
    pod["metadata"] |= {"namespace": "default", "uid": f"uid-{name}"}
    return PodView.from_dict(pod)


def scheduler_with(nodes: list[NodeView], config: str = CONFIG) -> Scheduler:
    registry = in_tree_registry()
    resolved = load_config_text(config, registry_for_config(registry))
    client = NoClient()
    scheduler = Scheduler(client, resolved, registry, SchedulerOptions(seed=1))  # type: ignore[arg-type]
    client.armed = True
    for each in nodes:
        scheduler.cache.add_node(each)
    return scheduler


@pytest.fixture
def scheduler() -> Scheduler:
    sched = scheduler_with(
        [
            node("small", "1"),
            node("medium", "4"),
            node("large", "8"),
            node(
                "gpu", "16", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
            ),
        ]
    )
    sched.cache.add_pod(bound_pod("busy", "3", "medium"))
    return sched


def state_of(scheduler: Scheduler) -> dict[str, Any]:
    """What what-if must not change: the cache, the scheduler's snapshot, queue, nominations,
    the start index and the random source."""
    dump = scheduler.cache.dump()
    return {
        "nodes": {name: repr(info) for name, info in dump.nodes.items()},
        "assumed": dump.assumed_pods,
        "snapshot_generation": scheduler.snapshot.generation,
        "snapshot_nodes": len(scheduler.snapshot.node_info_list),
        "queue": scheduler.queue.counts(),
        "pending": sorted(p.uid for p in scheduler.queue.pending_pods()[0]),
        "nominated": scheduler.queue.nominated_node_names(),
        "start_index": scheduler.start_index.value,
        "rng": scheduler.rng.getstate(),
        "profiles": scheduler.profiles,
    }


def test_answers_with_the_chosen_node_verdicts_and_scores(scheduler: Scheduler) -> None:
    answer = WhatIf(scheduler, scheduler.registry).answer(manifest("web", "2"))
    # small lacks cpu, gpu is tainted; medium has 1 cpu left after "busy"'s 3.
    assert answer["result"] == "schedulable"
    assert answer["node"] == "large"
    assert answer["profile"] == "default-scheduler"
    assert (answer["evaluatedNodes"], answer["feasibleNodes"], answer["rejectedNodes"]) == (4, 1, 3)
    assert {(g["plugin"], g["reason"], tuple(g["nodes"])) for g in answer["filterVerdicts"]} == {
        ("NodeResourcesFit", "Insufficient cpu", ("medium", "small")),
        ("TaintToleration", "node(s) had untolerated taint(s)", ("gpu",)),
    }
    assert answer["pod"]["namespace"] == "default"
    assert answer["whatIf"]["configuration"] == "live"
    assert answer["whatIf"]["needsPreemption"] is False
    # Same keys as an explain answer, plus the what-if section.
    assert set(answer) == {
        "pod", "profile", "attempt", "timestamp", "result", "message", "node", "evaluatedNodes",
        "feasibleNodes", "rejectedNodes", "filterVerdicts", "topNodes", "whatIf",
    }  # fmt: skip


def test_scores_are_per_plugin_and_sum_to_the_total(scheduler: Scheduler) -> None:
    answer = WhatIf(scheduler, scheduler.registry).answer(manifest("tiny", "100m"))
    top = answer["topNodes"]
    assert {t["node"] for t in top} == {"small", "medium", "large"}
    assert all(sum(t["plugins"].values()) == t["total"] for t in top)
    assert "NodeResourcesFit" in top[0]["plugins"]
    assert answer["node"] in {t["node"] for t in top if t["total"] == top[0]["total"]}


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        # LeastAllocated (default-scheduler) spreads to the emptiest node, MostAllocated packs.
        ({}, "large"),
        ({"scheduler_name": "packer"}, "medium"),
        ({"config_text": CANDIDATE}, "medium"),
    ],
)
def test_profile_from_scheduler_name_or_candidate_config(
    scheduler: Scheduler, how: dict[str, Any], expected: str
) -> None:
    answer = WhatIf(scheduler, scheduler.registry).answer(manifest("tiny", "500m"), **how)
    assert answer["node"] == expected
    if "config_text" in how:
        assert answer["whatIf"]["configuration"] == "candidate"


def test_pod_scheduler_name_picks_the_profile(scheduler: Scheduler) -> None:
    answer = WhatIf(scheduler, scheduler.registry).answer(
        manifest("tiny", "500m", schedulerName="packer")
    )
    assert (answer["profile"], answer["node"]) == ("packer", "medium")


def test_no_fit_says_preemption_would_be_needed(scheduler: Scheduler) -> None:
    answer = WhatIf(scheduler, scheduler.registry).answer(manifest("huge", "32"))
    assert answer["result"] == "unschedulable"
    assert answer["node"] is None
    assert answer["message"] == (
        # Reasons sorted as strings, as upstream's FitError.Error().
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu."
    )
    assert answer["whatIf"]["needsPreemption"] is True
    assert answer["whatIf"]["note"] == NEEDS_PREEMPTION_NOTE
    assert answer["rejectedNodes"] == 4


@pytest.mark.parametrize(
    ("pod", "how", "status", "fragment"),
    [
        ("not a mapping", {}, 400, "must be a Pod"),
        ({"kind": "Service", "metadata": {"name": "x"}}, {}, 400, "expected kind Pod"),
        ({"kind": "Pod", "spec": {"containers": [{}]}}, {}, 400, "no metadata.name"),
        ({"kind": "Pod", "metadata": {"name": "x"}}, {}, 400, "no spec.containers"),
        (manifest("x", "1", nodeName="small"), {}, 400, "already has spec.nodeName"),
        (manifest("x", "lots"), {}, 400, "invalid pod"),
        (manifest("x", "1"), {"scheduler_name": "nobody"}, 404, "no profile for schedulerName"),
        (manifest("x", "1"), {"config_text": "kind: [unclosed"}, 400, "invalid configuration"),
        (
            manifest("x", "1"),
            {"config_text": CANDIDATE.replace("MostAllocated", "Bogus")},
            400,
            "invalid configuration",
        ),
    ],
)
def test_bad_input_is_a_clear_client_error(
    scheduler: Scheduler, pod: Any, how: dict[str, Any], status: int, fragment: str
) -> None:
    before = state_of(scheduler)
    with pytest.raises(BadRequest) as raised:
        WhatIf(scheduler, scheduler.registry).answer(pod, **how)
    assert raised.value.status == status
    assert fragment in str(raised.value)
    assert state_of(scheduler) == before


def test_nominated_pods_count_but_are_not_changed(scheduler: Scheduler) -> None:
    # A pending pod nominated to "large" holds 6 of its 8 cpus, as in a real cycle.
    nominated = pending_pod("preemptor", "6")
    scheduler.queue.add(nominated)
    scheduler.queue.add_nominated_pod(nominated, "large")
    before = state_of(scheduler)
    answer = WhatIf(scheduler, scheduler.registry).answer(manifest("web", "3"))
    assert answer["result"] == "unschedulable"
    assert state_of(scheduler) == before


def test_private_snapshot_follows_the_cache(scheduler: Scheduler) -> None:
    what_if = WhatIf(scheduler, scheduler.registry)
    assert what_if.answer(manifest("web", "10"))["node"] is None
    scheduler.cache.add_node(node("xl", "32"))
    answer = what_if.answer(manifest("web", "10"))
    assert (answer["node"], answer["whatIf"]["snapshotNodes"]) == ("xl", 5)


def test_a_reload_is_seen_by_the_next_what_if(scheduler: Scheduler) -> None:
    what_if = WhatIf(scheduler, scheduler.registry)
    assert what_if.answer(manifest("tiny", "500m"))["node"] == "large"
    config = load_config_text(CANDIDATE, registry_for_config(scheduler.registry))
    scheduler._apply_profiles(scheduler.build_profiles(config))  # as a reload, between cycles
    assert what_if.answer(manifest("tiny", "500m"))["node"] == "medium"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cpus=st.lists(st.sampled_from(["1", "2", "4", "8"]), min_size=1, max_size=12),
    pending=st.integers(min_value=0, max_value=5),
    request=st.sampled_from(["100m", "1", "3", "6", "64"]),
    profile=st.sampled_from([None, "packer"]),
)
def test_what_if_changes_nothing_the_scheduler_owns(
    cpus: list[str], pending: int, request: str, profile: str | None
) -> None:
    scheduler = scheduler_with([node(f"n{i}", cpu) for i, cpu in enumerate(cpus)])
    scheduler.cache.update_snapshot(scheduler.snapshot)  # as the last cycle left it
    scheduler.cache.add_node(node("late", "2"))  # after it: the loop's snapshot is behind
    for i in range(pending):
        scheduler.queue.add(pending_pod(f"p{i}", "1"))
    pod = manifest("probe", request)
    sent = copy.deepcopy(pod)
    before = state_of(scheduler)
    what_if = WhatIf(scheduler, scheduler.registry)
    first = what_if.answer(pod, scheduler_name=profile)
    second = what_if.answer(pod, scheduler_name=profile)
    assert state_of(scheduler) == before
    assert pod == sent  # the caller's manifest is not modified either
    assert first["result"] == second["result"]
    assert first["result"] in {"schedulable", "unschedulable"}
    assert first["whatIf"]["snapshotNodes"] == len(cpus) + 1  # what-if saw the late node


def test_extenders_are_not_asked_and_the_answer_says_so(scheduler: Scheduler) -> None:
    # Nothing listens on port 1: asking the extender would turn the answer into an error.
    with_extender = CANDIDATE + "extenders:\n- {urlPrefix: 'http://127.0.0.1:1/', filterVerb: f}\n"
    answer = WhatIf(scheduler, scheduler.registry).answer(
        manifest("tiny", "500m"), config_text=with_extender
    )
    assert (answer["result"], answer["node"]) == ("schedulable", "medium")
    assert answer["whatIf"]["note"] == "the 1 configured extender(s) were not asked"
