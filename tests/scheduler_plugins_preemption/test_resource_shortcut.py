"""The dry run's resource shortcut (resource_shortcut.py) decides exactly what the full dry run
decides: the same candidates with the same victims, and the same status for every node it
rejects, whatever the pods, priorities, nominated pods and host ports."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.objects import PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.framework.interface import NodeToStatus
from scheduler.framework.status import Code, Status
from scheduler.plugins.defaultpreemption.testing import build, make_node, make_pod

# The default profile's Filter plugins, in its order.
DEFAULT_FILTERS = (
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
)
PRIORITIES = st.sampled_from([-10, 0, 5, 10, 100])
CPU = st.sampled_from(["0", "100m", "500m", "1", "2"])
MEMORY = st.sampled_from(["0", "100Mi", "1Gi", "3Gi"])


def with_host_port(pod: PodView, port: int | None) -> PodView:
    if port is None:
        return pod
    raw: dict[str, Any] = pod.raw
    raw["spec"]["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port}]
    return PodView.from_dict(raw)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Any], list[PodView], dict[str, list[PodView]], PodView]:
    node_count = draw(st.integers(1, 4))
    nodes = [
        make_node(
            f"n{i}",
            {
                "cpu": draw(st.sampled_from(["1", "2", "4"])),
                "memory": draw(st.sampled_from(["1Gi", "4Gi"])),
                "pods": draw(st.sampled_from(["2", "3", "110"])),
            },
        )
        for i in range(node_count)
    ]
    pods: list[PodView] = []
    for i, node in enumerate(nodes):
        for j in range(draw(st.integers(0, 3))):
            pod = make_pod(
                f"p{i}-{j}",
                node=node.name,
                priority=draw(PRIORITIES),
                req={"cpu": draw(CPU), "memory": draw(MEMORY)},
                labels={"app": draw(st.sampled_from(["a", "b"]))},
            )
            pods.append(with_host_port(pod, draw(st.sampled_from([None, 80, 81]))))
    nominated: dict[str, list[PodView]] = {}
    for i, node in enumerate(nodes):
        if draw(st.booleans()):
            nominated[node.name] = [
                make_pod(
                    f"nominated-{i}",
                    priority=draw(PRIORITIES),
                    req={"cpu": draw(CPU), "memory": draw(MEMORY)},
                    nominated_node=node.name,
                )
            ]
    preemptor = make_pod(
        "preemptor",
        priority=draw(PRIORITIES),
        req={"cpu": draw(CPU), "memory": draw(MEMORY)},
    )
    preemptor = with_host_port(preemptor, draw(st.sampled_from([None, 80])))
    return nodes, pods, nominated, preemptor


def dry_run(
    cluster: tuple[list[Any], list[PodView], dict[str, list[PodView]], PodView], shortcut: bool
) -> tuple[list[tuple[str, list[str], int]], dict[str, tuple[Code, tuple[str, ...]]], list[str]]:
    nodes, pods, nominated, preemptor = cluster
    harness = build(nodes, pods, plugins=DEFAULT_FILTERS, nominated=nominated)
    if not shortcut:
        harness.plugin.is_eligible_pod = lambda node_info, victim, preemptor: True
    state = harness.pre_filtered_state(preemptor)
    potential: list[NodeInfo] = list(harness.snapshot.list())
    candidates, statuses, errors = harness.plugin.evaluator.dry_run_preemption(
        state, preemptor, potential, lambda pod: [], 0, len(potential)
    )
    return (
        [
            (c.name, [p.name for p in c.victims.pods], c.victims.num_pdb_violations)
            for c in candidates
        ],
        {name: (s.code, s.reasons) for name, s in statuses.statuses.items()},
        errors,
    )


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_shortcut_decides_as_the_full_dry_run(
    cluster: tuple[list[Any], list[PodView], dict[str, list[PodView]], PodView],
) -> None:
    assert dry_run(cluster, shortcut=True) == dry_run(cluster, shortcut=False)


def test_shortcut_rejects_without_copying_when_nothing_can_help() -> None:
    """Upstream's Unschedulable shape: a pod larger than any node; every node is rejected with
    NodeResourcesFit's reasons, and the FitError is the full dry run's."""
    nodes = [make_node(f"n{i}", {"cpu": "4", "memory": "8Gi", "pods": "110"}) for i in range(3)]
    pods = [make_pod(f"p{i}", node=f"n{i}", priority=0, req={"cpu": "1"}) for i in range(3)]
    harness = build(nodes, pods, plugins=DEFAULT_FILTERS)
    preemptor = make_pod("big", priority=100, req={"cpu": "9"})
    state = harness.pre_filtered_state(preemptor)
    rejection = harness.plugin.dry_run_rejection(state, preemptor)
    assert rejection is not None
    status = rejection(harness.snapshot.list()[0])
    assert status is not None
    assert (status.code, status.reasons, status.plugin) == (
        Code.UNSCHEDULABLE,
        ("Insufficient cpu",),
        "NodeResourcesFit",
    )
    filtered = NodeToStatus(absent=Status.unschedulable("Insufficient cpu"))
    _, result = harness.plugin.post_filter(state, preemptor, filtered)
    assert result.message == "preemption: 0/3 nodes are available: 3 Insufficient cpu."


def test_no_shortcut_when_a_pod_dependent_filter_runs_first() -> None:
    """A filter before NodeResourcesFit that removing pods could satisfy (NodePorts for a pod
    with a host port, InterPodAffinity for a pod with affinity) must run in the full dry run."""
    nodes = [make_node("n0", {"cpu": "4"})]
    harness = build(nodes, plugins=DEFAULT_FILTERS)
    plain = make_pod("plain", priority=100, req={"cpu": "9"})
    ported = with_host_port(plain, 80)
    assert harness.plugin.dry_run_rejection(harness.pre_filtered_state(plain), plain) is not None
    assert harness.plugin.dry_run_rejection(harness.pre_filtered_state(ported), ported) is None
    # InterPodAffinity first: skipped for a pod without affinity, consulted for one with it
    reordered = build(nodes, plugins=("InterPodAffinity", "NodeResourcesFit"))
    affine = make_pod("affine", priority=100, req={"cpu": "9"}, anti_affinity_exists=("a", "h"))
    state = reordered.pre_filtered_state(plain)
    assert reordered.plugin.dry_run_rejection(state, plain) is not None
    state = reordered.pre_filtered_state(affine)
    assert reordered.plugin.dry_run_rejection(state, affine) is None
