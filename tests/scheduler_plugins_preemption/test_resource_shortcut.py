"""The dry run's shortcuts (a node without a pod of lower priority; resource_shortcut.py) decide
exactly what the full dry run decides: the same candidates with the same victims and PDB
violations, and the same status for every node rejected, whatever the pods, priorities,
nominated pods, PDBs, host ports and affinity."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.objects import PodView
from scheduler.cache.node_info import NodeInfo
from scheduler.framework.interface import NodeToStatus
from scheduler.framework.status import Code, Status
from scheduler.plugins.defaultpreemption import plugin as plugin_module
from scheduler.testing import expr, make_node, make_pod, pod_affinity, term
from scheduler.testing.preemption import build, epoch, make_pdb

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
ANTI_AFFINITY_APP_HOSTNAME = pod_affinity(anti_required=[term("hostname", expr("app", "Exists"))])


def with_host_port(pod: PodView, port: int | None) -> PodView:
    if port is None:
        return pod
    raw: dict[str, Any] = pod.raw
    raw["spec"]["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port}]
    return PodView.from_dict(raw)


Cluster = tuple[list[Any], list[PodView], dict[str, list[PodView]], PodView, int]


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    node_count = draw(st.integers(1, 4))
    nodes = [
        make_node(
            f"n{i}",
            capacity={
                "cpu": draw(st.sampled_from(["1", "2", "4"])),
                "memory": draw(st.sampled_from(["1Gi", "4Gi"])),
                "pods": draw(st.sampled_from(["2", "3", "110"])),
            },
            labels={"hostname": f"n{i}"},
        )
        for i in range(node_count)
    ]
    pods: list[PodView] = []
    for i, node in enumerate(nodes):
        for j in range(draw(st.integers(0, 3))):
            pod = make_pod(
                f"p{i}-{j}",
                uid=f"p{i}-{j}",
                node_name=node.name,
                priority=draw(PRIORITIES),
                requests={"cpu": draw(CPU), "memory": draw(MEMORY)},
                labels={"app": draw(st.sampled_from(["a", "b"]))},
                start_time=epoch(draw(st.integers(0, 3))),
            )
            pods.append(with_host_port(pod, draw(st.sampled_from([None, 80, 81]))))
    nominated: dict[str, list[PodView]] = {}
    for i, node in enumerate(nodes):
        if draw(st.booleans()):
            nominated[node.name] = [
                make_pod(
                    f"nominated-{i}",
                    uid=f"nominated-{i}",
                    priority=draw(PRIORITIES),
                    requests={"cpu": draw(CPU), "memory": draw(MEMORY)},
                    nominated_node_name=node.name,
                )
            ]
    preemptor = make_pod(
        "preemptor",
        uid="preemptor",
        priority=draw(PRIORITIES),
        requests={"cpu": draw(CPU), "memory": draw(MEMORY)},
        # anti-affinity to app=b pods: InterPodAffinity then filters after NodeResourcesFit
        affinity=draw(st.sampled_from([None, None, None, ANTI_AFFINITY_APP_HOSTNAME])),
    )
    preemptor = with_host_port(preemptor, draw(st.sampled_from([None, None, None, 80])))
    return nodes, pods, nominated, preemptor, draw(st.integers(0, 1))


def dry_run(
    cluster: Cluster, shortcut: bool
) -> tuple[list[tuple[str, list[str], int]], dict[str, tuple[Code, tuple[str, ...]]], list[str]]:
    nodes, pods, nominated, preemptor, disruptions_allowed = cluster
    # one PDB over app=a pods: some victims violate it, which orders the reprieves
    pdb = make_pdb("pdb", match_labels={"app": "a"}, disruptions_allowed=disruptions_allowed)
    harness = build(nodes, pods, plugins=DEFAULT_FILTERS, nominated=nominated, pdbs=[pdb])
    if not shortcut:
        harness.plugin.dry_run_shortcut = lambda state, pod: None  # type: ignore[method-assign]
        harness.plugin.nodes_without_victims = lambda pod, nodes: None  # type: ignore[method-assign]
    state = harness.pre_filtered_state(preemptor)
    potential: list[NodeInfo] = list(harness.snapshot.list())
    candidates, statuses, errors = harness.plugin.evaluator.dry_run_preemption(
        state,
        preemptor,
        potential,
        harness.framework.cluster_objects.disruption_budgets_for,
        0,
        len(potential),
    )
    return (
        [
            (c.name, [p.name for p in c.victims.pods], c.victims.num_pdb_violations)
            for c in candidates
        ],
        {name: (s.code, s.reasons) for name, s in statuses.statuses.items()},
        errors,
    )


@settings(max_examples=400, deadline=None)
@given(clusters())
def test_shortcut_decides_as_the_full_dry_run(cluster: Cluster) -> None:
    assert dry_run(cluster, shortcut=True) == dry_run(cluster, shortcut=False)


@settings(max_examples=100, deadline=None)
@given(clusters())
def test_shortcut_without_a_node_table_decides_as_the_full_dry_run(cluster: Cluster) -> None:
    """Without the snapshot's NodeTable (a plain lister), each node's pods say whether it has
    a possible victim."""
    with mock.patch.object(plugin_module, "node_table_for", return_value=None):
        shortcut = dry_run(cluster, shortcut=True)
    assert shortcut == dry_run(cluster, shortcut=False)


def test_lowest_priorities_follow_the_nodes_generations() -> None:
    """The per-row lowest priorities are read again for the rows whose node changed."""
    nodes = [make_node(f"n{i}", capacity={"cpu": "4"}) for i in range(3)]
    pods = [make_pod("p0", uid="p0", node_name="n0", priority=5, requests={"cpu": "1"})]
    harness = build(nodes, pods, plugins=DEFAULT_FILTERS)
    lowest = plugin_module.LowestPriorities()
    table = harness.snapshot.node_table()
    assert lowest.of(table).tolist() == [5, plugin_module.NO_POD, plugin_module.NO_POD]
    info = harness.snapshot.get("n1")
    assert info is not None
    info.add_pod(make_pod("p1", uid="p1", node_name="n1", priority=-3, requests={"cpu": "1"}))
    table.refresh(["n1"])
    assert lowest.of(table).tolist() == [5, -3, plugin_module.NO_POD]


def test_shortcut_rejects_without_copying_when_nothing_can_help() -> None:
    """Upstream's Unschedulable shape: a pod larger than any node; every node is rejected with
    NodeResourcesFit's reasons, UnschedulableAndUnresolvable since the request exceeds the
    node's allocatable, and the FitError is the full dry run's."""
    nodes = [
        make_node(f"n{i}", capacity={"cpu": "4", "memory": "8Gi", "pods": "110"}) for i in range(3)
    ]
    pods = [
        make_pod(f"p{i}", uid=f"p{i}", node_name=f"n{i}", priority=0, requests={"cpu": "1"})
        for i in range(3)
    ]
    harness = build(nodes, pods, plugins=DEFAULT_FILTERS)
    preemptor = make_pod("big", uid="big", priority=100, requests={"cpu": "9"})
    state = harness.pre_filtered_state(preemptor)
    shortcut = harness.plugin.dry_run_shortcut(state, preemptor)
    assert shortcut is not None
    outcome = shortcut(harness.snapshot.list()[0], no_budgets)
    assert outcome is not None
    victims, _, status = outcome
    assert victims == []
    assert (status.code, status.reasons, status.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ("Insufficient cpu",),
        "NodeResourcesFit",
    )
    filtered = NodeToStatus(absent=Status.unschedulable("Insufficient cpu"))
    _, result = harness.plugin.post_filter(state, preemptor, filtered)
    assert result.message == "preemption: 0/3 nodes are available: 3 Insufficient cpu."
    # As Filter itself rejects these nodes, preemption does not try them at all.
    filtered = NodeToStatus(absent=Status.unresolvable("Insufficient cpu"))
    _, result = harness.plugin.post_filter(state, preemptor, filtered)
    assert result.message == (
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_shortcut_reprieves_by_resources_for_a_plain_pod() -> None:
    """Upstream's PreemptionAsync shape: low-priority pods fill a node; a high-priority pod
    needs three of them gone, the least important ones."""
    nodes = [make_node("n0", capacity={"cpu": "4", "memory": "8Gi", "pods": "110"})]
    pods = [
        make_pod(
            f"low{i}",
            uid=f"low{i}",
            node_name="n0",
            priority=i,
            requests={"cpu": "900m"},
            start_time=epoch(i),
        )
        for i in range(4)
    ]
    harness = build(nodes, pods, plugins=DEFAULT_FILTERS)
    preemptor = make_pod("high", uid="high", priority=100, requests={"cpu": "3"})
    state = harness.pre_filtered_state(preemptor)
    shortcut = harness.plugin.dry_run_shortcut(state, preemptor)
    assert shortcut is not None
    outcome = shortcut(harness.snapshot.list()[0], no_budgets)
    assert outcome is not None
    victims, violations, status = outcome
    assert ([p.name for p in victims], violations, status.is_success) == (
        ["low2", "low1", "low0"],
        0,
        True,
    )


def no_budgets(pod: PodView) -> list[Any]:
    return []


def shortcut_outcome(plugins: tuple[str, ...], pod: PodView) -> str:
    """ "none" (no shortcut), "full" (the node goes the full dry run) or "decided"."""
    nodes = [make_node("n0", capacity={"cpu": "4"}, labels={"hostname": "n0"})]
    pods = [
        make_pod(
            "low", uid="low", node_name="n0", priority=0, requests={"cpu": "1"}, labels={"app": "a"}
        )
    ]
    harness = build(nodes, pods, plugins=plugins)
    shortcut = harness.plugin.dry_run_shortcut(harness.pre_filtered_state(pod), pod)
    if shortcut is None:
        return "none"
    return "full" if shortcut(harness.snapshot.list()[0], no_budgets) is None else "decided"


PLAIN = make_pod("plain", uid="plain", priority=100, requests={"cpu": "3500m"})
BIG = make_pod("big", uid="big", priority=100, requests={"cpu": "9"})
AFFINE = make_pod(
    "affine",
    uid="affine",
    priority=100,
    requests={"cpu": "3500m"},
    affinity=pod_affinity(anti_required=[term("hostname", expr("app", "Exists"))]),
)
LOW = make_pod("low-preemptor", uid="low-preemptor", priority=0, requests={"cpu": "9"})
AFFINE_BIG = make_pod(
    "affine-big",
    uid="affine-big",
    priority=100,
    requests={"cpu": "9"},
    affinity=pod_affinity(anti_required=[term("hostname", expr("app", "Exists"))]),
)


@pytest.mark.parametrize(
    ("plugins", "pod", "expected"),
    [
        pytest.param(DEFAULT_FILTERS, PLAIN, "decided", id="plain pod: resources only"),
        pytest.param(
            DEFAULT_FILTERS, with_host_port(BIG, 80), "none", id="host port: NodePorts first"
        ),
        pytest.param(DEFAULT_FILTERS, AFFINE_BIG, "decided", id="affinity, cannot fit: rejected"),
        pytest.param(
            DEFAULT_FILTERS, AFFINE, "full", id="affinity, fits: InterPodAffinity decides"
        ),
        pytest.param(("InterPodAffinity", "NodeResourcesFit"), BIG, "decided", id="skipped first"),
        pytest.param(
            ("InterPodAffinity", "NodeResourcesFit"), AFFINE_BIG, "none", id="affinity first"
        ),
        pytest.param(("NodeUnschedulable",), BIG, "none", id="no NodeResourcesFit"),
    ],
)
def test_when_the_shortcut_applies(plugins: tuple[str, ...], pod: PodView, expected: str) -> None:
    assert shortcut_outcome(plugins, pod) == expected


@pytest.mark.parametrize(
    ("plugins", "pod"),
    [
        pytest.param(DEFAULT_FILTERS, LOW, id="nothing to preempt"),
        pytest.param(DEFAULT_FILTERS, with_host_port(LOW, 80), id="nothing to preempt, host port"),
        pytest.param(("NodeUnschedulable",), LOW, id="nothing to preempt, no Fit"),
    ],
)
def test_a_node_without_a_lower_priority_pod_is_decided_whatever_the_filters(
    plugins: tuple[str, ...], pod: PodView
) -> None:
    """No pod of lower priority on the node: no victim, before any filter runs."""
    nodes = [make_node("n0", capacity={"cpu": "4"}, labels={"hostname": "n0"})]
    pods = [
        make_pod(
            "low", uid="low", node_name="n0", priority=0, requests={"cpu": "1"}, labels={"app": "a"}
        )
    ]
    harness = build(nodes, pods, plugins=plugins)
    found = harness.plugin.nodes_without_victims(pod, harness.snapshot.list())
    assert found is not None
    assert found[0] == [True]
    assert (found[1].code, found[1].reasons) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ("No preemption victims found for incoming pod",),
    )


def test_nodes_without_victims_reads_a_copied_node_by_its_own_pods() -> None:
    """A NodeInfo that is not the table's (its generation moved) is read by its own pods."""
    nodes = [make_node(f"n{i}", capacity={"cpu": "4"}) for i in range(2)]
    pods = [make_pod("p0", uid="p0", node_name="n0", priority=5, requests={"cpu": "1"})]
    harness = build(nodes, pods, plugins=DEFAULT_FILTERS)
    preemptor = make_pod("pre", uid="pre", priority=5, requests={"cpu": "1"})
    first, second = harness.snapshot.list()
    copied = second.snapshot()
    copied.add_pod(make_pod("low", uid="low", node_name="n1", priority=1, requests={"cpu": "1"}))
    found = harness.plugin.nodes_without_victims(preemptor, [first, copied])
    assert found is not None
    assert found[0] == [True, False]
    assert (found[1].code, found[1].reasons) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ("No preemption victims found for incoming pod",),
    )
    assert harness.plugin.nodes_without_victims(preemptor, [first, second]) == (
        [True, True],
        found[1],
    )
