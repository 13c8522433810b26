"""The replay's fast paths decide as the plain ones: on random small GPU clusters and openb-like
traces, every pod lands on the same node with the same devices (and the same capacity taken
from them), and every pod that fails gets the same message, whether DynamicResources answers
Filter from its memo of earlier cycles (dynamicresources/memo.py), the GPU policies and
NodeRank score rows at once and preemption's dry run takes its shortcuts, or every node is
filtered, solved, scored and dry-run one by one through the framework's per-node adapter."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apimachinery.eventloop import run_event_loop
from profiles.api import load_config_text
from scheduler.cycle.profile_set import full_registry, registry_for_config
from scheduler.cycle.scheduling_cycle import FailureHandler
from scheduler.lab import openb
from scheduler.lab.engine import Replay
from scheduler.plugins.defaultpreemption.plugin import DefaultPreemption
from scheduler.plugins.dynamicresources.memo import AllocationMemo
from scheduler.plugins.dynamicresources.plugin import DynamicResources
from scheduler.plugins.gpushare import plugins as gpushare
from scheduler.plugins.noderesources.fit import NodeResourcesFit

POLICIES = ("RandomFit", "DotProduct", "GpuClustering", "GpuPacking", "BestFit", "FGD")
MODELS = ("A100", "V100M16", "T4")


def _config(policy: str | None) -> Any:
    plugins = ""
    if policy:
        plugins = f"""
  percentageOfNodesToScore: 100
  plugins:
    score:
      disabled: [{{name: "*"}}]
      enabled: [{{name: {policy}, weight: 1000}}, {{name: NodeRank, weight: 1}}]"""
    text = f"""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: lab{plugins}
"""
    return load_config_text(text, registry_for_config())


nodes = st.lists(
    st.builds(
        openb.OpenbNode,
        name=st.just(""),
        cpu_milli=st.sampled_from([8000, 32000, 96000]),
        memory_mib=st.just(262144),
        gpus=st.integers(0, 4),
        model=st.sampled_from(MODELS),
    ),
    min_size=1,
    max_size=6,
)


@st.composite
def tasks(draw: st.DrawFn) -> openb.OpenbTask:
    num_gpu = draw(st.sampled_from([0, 1, 1, 1, 2, 4]))
    milli = 0
    if num_gpu == 1:
        milli = draw(st.sampled_from([200, 250, 500, 700, 1000]))
    elif num_gpu:
        milli = 1000
    spec = draw(st.sampled_from(["", "", "A100", "V100M16|T4"])) if num_gpu else ""
    return openb.OpenbTask(
        "", draw(st.sampled_from([1000, 4000, 16000])), 1024, num_gpu, milli, spec
    )


def _replay(
    cluster: list[openb.OpenbNode],
    workload: list[openb.OpenbTask],
    policy: str | None,
    shareable: bool,
) -> tuple[dict[str, str], list[str], dict[str, Any], dict[str, str]]:
    trace = openb.openb_trace("t", cluster, workload, shareable=shareable)
    replay = Replay(_config(policy), full_registry(), 7, retry=False)
    # each failed pod's message, as the scheduler reports it (FitError with preemption's)
    messages: dict[str, str] = {}
    report = FailureHandler.fail_unschedulable

    def recording(
        handler: FailureHandler, profile: Any, pinfo: Any, fit: Any, *args: Any, **kw: Any
    ) -> None:
        report(handler, profile, pinfo, fit, *args, **kw)
        messages[pinfo.pod.key] = fit.message()

    with mock.patch.object(FailureHandler, "fail_unschedulable", recording):
        result = run_event_loop(replay.run(trace))
    resources = replay.scheduler.cluster_objects.resources
    devices: dict[str, Any] = {}
    for claim in resources.claims.list():
        view = resources.claim(claim.namespace, claim.name)
        if view is not None and view.allocation is not None:
            devices[claim.key] = sorted(
                (d.driver, d.pool, d.device, sorted(d.consumed_capacity.items()))
                for d in view.allocation.devices
            )
    return result.placements, sorted(result.failed), devices, messages


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cluster=nodes,
    workload=st.lists(tasks(), min_size=1, max_size=24),
    policy=st.sampled_from((None, *POLICIES)),
    shareable=st.booleans(),
)
def test_memo_and_row_scores_place_as_the_plain_path(
    cluster: list[openb.OpenbNode],
    workload: list[openb.OpenbTask],
    policy: str | None,
    shareable: bool,
) -> None:
    cluster = [
        openb.OpenbNode(f"node-{i}", n.cpu_milli, n.memory_mib, n.gpus, n.model)
        for i, n in enumerate(cluster)
    ]
    workload = [
        openb.OpenbTask(f"task-{i}", t.cpu_milli, t.memory_mib, t.num_gpu, t.gpu_milli, t.gpu_spec)
        for i, t in enumerate(workload)
    ]
    fast = _replay(cluster, workload, policy, shareable)
    with ExitStack() as plain:
        # every node filtered through `filter` and solved by the allocator, every node scored
        # through `score`: the framework's per-node adapter
        plain.enter_context(mock.patch.object(AllocationMemo, "lookup", return_value=None))
        plain.enter_context(mock.patch.object(DynamicResources, "filter_rows", return_value=None))
        plain.enter_context(mock.patch.object(NodeResourcesFit, "filter_rows", return_value=None))
        for owner in (gpushare._GpuPolicy, gpushare.RandomFit, gpushare.NodeRank):
            plain.enter_context(mock.patch.object(owner, "score_rows", return_value=None))
        for shortcut in ("dry_run_shortcut", "nodes_without_victims"):
            plain.enter_context(mock.patch.object(DefaultPreemption, shortcut, return_value=None))
        slow = _replay(cluster, workload, policy, shareable)
    assert fast == slow
