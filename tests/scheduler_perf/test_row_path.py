"""The NodeTable fast path gives the per-node path's answers (feasible nodes in order, the stop
point, rejection statuses, FitError messages, per-plugin scores, the chosen host's score).

The per-node path runs when the snapshot is not a `Snapshot` (a plain SnapshotLister), so each
case runs the same framework over the same NodeInfos both ways.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.api.objects import PodView
from scheduler.api.request_gates import gates_set
from scheduler.cache.cache import Cache
from scheduler.cache.node_info import NodeInfo
from scheduler.cache.node_table import NodeTable
from scheduler.cache.rows import Rows, RowVerdict, verdict_per_node
from scheduler.cache.snapshot import Snapshot
from scheduler.cycle.algorithm import (
    StartIndex,
    find_nodes_that_fit_pod,
    prioritize_nodes,
    schedule_pod,
)
from scheduler.cycle.algorithm_rows import prioritize_rows, row_table_for, select_row
from scheduler.framework.interface import CycleState, SnapshotLister
from scheduler.framework.results import FitError, NodePluginScores, SchedulingError
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.framework.status import Status
from scheduler.plugins.balancedallocation import NodeResourcesBalancedAllocation
from scheduler.plugins.imagelocality import ImageLocality
from scheduler.plugins.nodeaffinity import NodeAffinity
from scheduler.plugins.nodename import NodeName
from scheduler.plugins.nodeports import NodePorts
from scheduler.plugins.noderesources.args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from scheduler.plugins.noderesources.fit import NodeResourcesFit
from scheduler.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.plugins.tainttoleration import TaintToleration
from scheduler.testing import (
    ListSnapshot,
    MakePod,
    RecordingClient,
    StaticNominator,
    expr,
    make_node,
    make_pod,
)

STRATEGIES = {
    LEAST_ALLOCATED: ScoringStrategy(LEAST_ALLOCATED),
    MOST_ALLOCATED: ScoringStrategy(
        MOST_ALLOCATED, (ResourceSpec("cpu", 2), ResourceSpec("memory", 1))
    ),
    REQUESTED_TO_CAPACITY_RATIO: ScoringStrategy(
        REQUESTED_TO_CAPACITY_RATIO,
        (ResourceSpec("cpu", 1), ResourceSpec("memory", 3), ResourceSpec("ephemeral-storage", 1)),
        (UtilizationShapePoint(0, 10), UtilizationShapePoint(40, 2), UtilizationShapePoint(100, 7)),
    ),
}


class Handle:
    """Just enough of the framework handle for ImageLocality (the node count)."""

    def __init__(self, snapshot: SnapshotLister) -> None:
        self._snapshot = snapshot

    def snapshot(self) -> SnapshotLister:
        return self._snapshot


class WithoutRowMethods:
    """`plugin` with its row methods hidden, as an out-of-tree plugin that has only the
    per-node ones: the row pass must then ask it per row (the generic per-node adapter)."""

    def __init__(self, plugin: Any) -> None:
        self._plugin = plugin
        self.name = plugin.name

    def __getattr__(self, attribute: str) -> Any:
        if attribute.endswith("_rows"):
            raise AttributeError(attribute)
        return getattr(self._plugin, attribute)


def default_framework(
    snapshot: SnapshotLister,
    strategy: str = LEAST_ALLOCATED,
    nominator: Any = None,
    *,
    row_methods: bool = True,
) -> Framework:
    """Upstream's default profile, minus the plugins not built yet; `row_methods=False` hides
    every plugin's row methods."""
    fit = NodeResourcesFit(NodeResourcesFitArgs(scoring_strategy=STRATEGIES[strategy]))
    balanced = NodeResourcesBalancedAllocation()
    taints, affinity, ports = TaintToleration(), NodeAffinity(), NodePorts()
    images = ImageLocality(None, Handle(snapshot))  # type: ignore[arg-type]
    unschedulable, node_name = NodeUnschedulable(), NodeName()
    if not row_methods:
        fit, balanced, taints, affinity, ports, images, unschedulable, node_name = (
            WithoutRowMethods(p)
            for p in (fit, balanced, taints, affinity, ports, images, unschedulable, node_name)
        )
    plugins = {
        "preFilter": [(fit, 0), (ports, 0), (affinity, 0)],
        "filter": [
            (unschedulable, 0),
            (node_name, 0),
            (taints, 0),
            (affinity, 0),
            (ports, 0),
            (fit, 0),
        ],
        "preScore": [(taints, 0), (affinity, 0), (fit, 0), (balanced, 0)],
        "score": [(taints, 3), (affinity, 2), (fit, 1), (balanced, 1), (images, 1)],
    }
    deps = HandleDeps(snapshot=lambda: snapshot, client=RecordingClient())
    if nominator is not None:
        deps.nominator = nominator
    return Framework("default-scheduler", plugins, deps)  # type: ignore[arg-type]


# ---- random clusters ------------------------------------------------------------------------

TAINTS = [
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "spot", "value": "", "effect": "PreferNoSchedule"},
    {"key": "maint", "value": "x", "effect": "NoExecute"},
    {"key": "slow", "value": "y", "effect": "PreferNoSchedule"},
]
TOLERATIONS = [
    {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
    {"key": "spot", "operator": "Exists"},
    {"key": "", "operator": "Exists", "effect": "NoExecute"},
]

node_specs = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from(["0", "500m", "1", "2", "4"]),
        "memory": st.sampled_from(["0", "1Gi", "4Gi", "32Gi"]),
        "ephemeral": st.sampled_from([None, "0", "10Gi"]),
        "pods": st.sampled_from(["0", "1", "3", "110"]),
        "unschedulable": st.booleans(),
        "taints": st.lists(st.sampled_from(TAINTS), max_size=2, unique_by=lambda t: t["key"]),
        "zone": st.sampled_from(["a", "b"]),
        "image": st.sampled_from([None, "nginx", "redis"]),
        "pods_on_it": st.lists(
            st.tuples(
                st.sampled_from([None, "0", "100m", "1"]),
                st.sampled_from([None, "0", "200Mi", "2Gi"]),
                st.sampled_from([0, 8080]),
            ),
            max_size=3,
        ),
    }
)

pod_specs = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from([None, "0", "100m", "1", "3"]),
        "memory": st.sampled_from([None, "500Mi", "8Gi"]),
        "ephemeral": st.sampled_from([None, "1Gi"]),
        "tolerations": st.lists(st.sampled_from(TOLERATIONS), max_size=2),
        "zone_selector": st.sampled_from([None, "a"]),
        "preferred_zone": st.sampled_from([None, "b"]),
        "host_port": st.sampled_from([0, 8080]),
        "node_name": st.sampled_from(["", "node-1"]),
        "image": st.sampled_from(["pause", "nginx"]),
    }
)


def requesting_pod(
    name: str,
    cpu: str | None,
    memory: str | None,
    *,
    ephemeral: str | None = None,
    host_port: int = 0,
    image: str = "pause",
    node_name: str = "",
) -> MakePod:
    """A Pending pod (uid = name) with one container requesting what is not None."""
    requests = {
        key: value
        for key, value in (("cpu", cpu), ("memory", memory), ("ephemeral-storage", ephemeral))
        if value is not None
    }
    ports = [{"containerPort": host_port, "hostPort": host_port}] if host_port else []
    pod = MakePod(name, "default").uid(name).container(requests, image=image, ports=ports)
    if node_name:
        pod.node(node_name)
    return pod.phase("Pending")


def build_cluster(specs: Sequence[Mapping[str, Any]]) -> Cache:
    cache = Cache()
    for index, spec in enumerate(specs):
        allocatable = {"cpu": spec["cpu"], "memory": spec["memory"], "pods": spec["pods"]}
        if spec["ephemeral"] is not None:
            allocatable["ephemeral-storage"] = spec["ephemeral"]
        image = spec["image"]
        node = make_node(
            f"node-{index}",
            allocatable,
            unschedulable=spec["unschedulable"],
            labels={"zone": spec["zone"]},
            taints=spec["taints"],
            images=None if image is None else {f"{image}:latest": 300 * 1024 * 1024},
        )
        cache.add_node(node)
        for number, (cpu, memory, port) in enumerate(spec["pods_on_it"]):
            on_node = requesting_pod(f"p-{index}-{number}", cpu, memory, host_port=port)
            cache.add_pod(on_node.node(f"node-{index}").obj())
    return cache


def build_pod(spec: Mapping[str, Any]) -> PodView:
    pod = requesting_pod(
        "incoming",
        spec["cpu"],
        spec["memory"],
        ephemeral=spec["ephemeral"],
        host_port=spec["host_port"],
        image=spec["image"],
        node_name=spec["node_name"],
    )
    for toleration in spec["tolerations"]:
        pod.toleration(toleration)
    if spec["zone_selector"] is not None:
        pod.node_selector({"zone": spec["zone_selector"]})
    if spec["preferred_zone"] is not None:
        term = {"matchExpressions": [expr("zone", "In", "b")]}
        pod.affinity(
            {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 5, "preference": term}
                    ]
                }
            }
        )
    return pod.obj()


# ---- both paths -----------------------------------------------------------------------------

Outcome = tuple[Any, ...]


def run_path(
    snapshot: Snapshot,
    lister: SnapshotLister,
    pod: PodView,
    start: int,
    percentage: int | None,
    strategy: str,
    nominator: Any = None,
    *,
    row_methods: bool = True,
) -> Outcome:
    """Feasible names, next start index, statuses, plugins, FitError text and scores."""
    fwk = default_framework(lister, strategy, nominator, row_methods=row_methods)
    state = CycleState()
    index = StartIndex(start % len(snapshot))
    feasible, diagnosis = find_nodes_that_fit_pod(fwk, state, pod, lister, percentage, index)
    statuses = {
        name: (status.code, status.reasons, status.plugin)
        for name, status in diagnosis.node_to_status.statuses.items()
    }
    names = [info.node_name for info in feasible]
    message = str(FitError(pod, len(snapshot), diagnosis)) if not feasible else ""
    scores: list[NodePluginScores] = []
    if len(feasible) > 1:
        if isinstance(lister, Snapshot):
            table = snapshot.node_table()
            rows = np.array([table.row_of[name] for name in names], dtype=np.intp)
            scores = prioritize_rows(fwk, state, pod, table, rows).node_plugin_scores(names)
        else:
            scores = prioritize_nodes(fwk, state, pod, feasible)
    flat = [(s.name, [(p.name, p.score) for p in s.scores], s.total_score) for s in scores]
    plugins = sorted(diagnosis.unschedulable_plugins)
    return names, index.value, statuses, plugins, message, flat


def per_node_lister(snapshot: Snapshot) -> SnapshotLister:
    """The same NodeInfos behind a plain lister: the algorithm then runs per node."""
    return ListSnapshot(list(snapshot.node_info_list))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(node_specs, min_size=1, max_size=30),
    pod=pod_specs,
    start=st.integers(min_value=0, max_value=29),
    percentage=st.sampled_from([None, 10, 50, 100]),
    strategy=st.sampled_from(sorted(STRATEGIES)),
)
def test_row_path_matches_per_node_path(
    nodes: list[dict[str, Any]],
    pod: dict[str, Any],
    start: int,
    percentage: int | None,
    strategy: str,
) -> None:
    snapshot = build_cluster(nodes).update_snapshot(Snapshot())
    incoming = build_pod(pod)
    fwk = default_framework(snapshot, strategy)
    assert row_table_for(fwk, CycleState(), snapshot) is not None
    slow = run_path(snapshot, per_node_lister(snapshot), incoming, start, percentage, strategy)
    fast = run_path(snapshot, snapshot, incoming, start, percentage, strategy)
    assert fast == slow


POD_LEVEL = st.sampled_from(
    [None, {"cpu": "2"}, {"cpu": "500m", "memory": "1Gi"}, {"memory": "8Gi"}]
)
# (PodLevelResources, InPlacePodLevelResourcesVerticalScaling): the gate combinations upstream
# allows (the second needs the first)
REQUEST_GATES = st.sampled_from([(True, True), (True, False), (False, False)])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(node_specs, min_size=1, max_size=20),
    pod=pod_specs,
    incoming_pod_level=POD_LEVEL,
    existing_pod_level=st.lists(POD_LEVEL, min_size=20, max_size=20),
    start=st.integers(min_value=0, max_value=19),
    percentage=st.sampled_from([None, 50, 100]),
    strategy=st.sampled_from(sorted(STRATEGIES)),
    gates=REQUEST_GATES,
)
def test_row_path_matches_per_node_path_with_pod_level_resources(
    nodes: list[dict[str, Any]],
    pod: dict[str, Any],
    incoming_pod_level: dict[str, str] | None,
    existing_pod_level: list[dict[str, str] | None],
    start: int,
    percentage: int | None,
    strategy: str,
    gates: tuple[bool, bool],
) -> None:
    """Pods with pod-level requests, on the nodes and incoming, under PodLevelResources and
    InPlacePodLevelResourcesVerticalScaling on and off: both paths count them the same, and
    with PodLevelResources off they decide as if no pod had spec.resources."""

    def outcomes(with_pod_level: bool) -> tuple[Outcome, Outcome]:
        cache = build_cluster(nodes)
        for index, pod_level in enumerate(existing_pod_level[: len(nodes)]):
            if pod_level is not None:
                on_node = requesting_pod(f"plr-{index}", "100m", None)
                if with_pod_level:
                    on_node.pod_resources(pod_level)
                cache.add_pod(on_node.node(f"node-{index}").obj())
        snapshot = cache.update_snapshot(Snapshot())
        incoming = build_pod(pod)
        if with_pod_level and incoming_pod_level is not None:
            raw = incoming.raw
            incoming = PodView.from_dict(
                {**raw, "spec": {**raw["spec"], "resources": {"requests": incoming_pod_level}}}
            )
        slow = run_path(snapshot, per_node_lister(snapshot), incoming, start, percentage, strategy)
        fast = run_path(snapshot, snapshot, incoming, start, percentage, strategy)
        return fast, slow

    with gates_set(pod_level_resources=gates[0], pod_level_status=gates[1]):
        fast, slow = outcomes(with_pod_level=True)
        assert fast == slow
        if not gates[0]:
            assert outcomes(with_pod_level=False) == (fast, slow)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.lists(node_specs, min_size=1, max_size=30), pod=pod_specs)
def test_fit_rejects_many_rows_as_one_by_one(
    nodes: list[dict[str, Any]], pod: dict[str, Any]
) -> None:
    """NodeResourcesFit's array answer for a failing cycle's rejected rows (`reject_many`) is
    its per-row `reject`, the same shared statuses in the same order."""
    snapshot = build_cluster(nodes).update_snapshot(Snapshot())
    incoming = build_pod(pod)
    fit = NodeResourcesFit(NodeResourcesFitArgs())
    state = CycleState()
    fit.pre_filter(state, incoming, snapshot.list())
    table = snapshot.node_table()
    rows = np.arange(len(table), dtype=np.intp)
    verdict = fit.filter_rows(state, incoming, table, rows)
    if verdict is None:
        return  # per node: extended resources
    assert verdict.reject_many is not None
    rejected = rows[~verdict.passed]
    many = verdict.reject_many(rejected)
    one_by_one = [verdict.reject(int(row)) for row in rejected]
    assert [id(status) for status in many] == [id(status) for status in one_by_one]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(node_specs, min_size=1, max_size=30),
    pod=pod_specs,
    start=st.integers(min_value=0, max_value=29),
    percentage=st.sampled_from([None, 10, 50, 100]),
    strategy=st.sampled_from(sorted(STRATEGIES)),
)
def test_plugins_without_row_methods_answer_the_same_through_the_adapter(
    nodes: list[dict[str, Any]],
    pod: dict[str, Any],
    start: int,
    percentage: int | None,
    strategy: str,
) -> None:
    """Every plugin with its row methods hidden still runs in the row pass (the framework's
    generic per-node adapter) and gives what the per-node path gives: the same feasible nodes,
    stop point, statuses, messages, attribution and scores; and what the row methods give."""
    snapshot = build_cluster(nodes).update_snapshot(Snapshot())
    incoming = build_pod(pod)
    fwk = default_framework(snapshot, strategy, row_methods=False)
    assert row_table_for(fwk, CycleState(), snapshot) is not None
    assert fwk.per_node_filters(CycleState()) == [p.name for p in fwk.filter_plugins]
    slow = run_path(
        snapshot, per_node_lister(snapshot), incoming, start, percentage, strategy,
        row_methods=False,
    )  # fmt: skip
    adapted = run_path(snapshot, snapshot, incoming, start, percentage, strategy, row_methods=False)
    native = run_path(snapshot, snapshot, incoming, start, percentage, strategy)
    assert adapted == slow
    assert adapted == native


class ListingNominator(StaticNominator):
    """A nominator that can say which nodes have nominated pods (as the queue's can)."""

    def has_nominated_pods(self) -> bool:
        return any(self.pods_by_node.values())

    def nominated_node_names(self) -> list[str]:
        return [name for name, pods in self.pods_by_node.items() if pods]


nominated_specs = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=29),  # node index
        st.sampled_from(["100m", "1", "3"]),  # cpu
        st.sampled_from([-1, 0, 1]),  # priority relative to the incoming pod
        st.sampled_from([0, 8080]),  # host port
    ),
    max_size=6,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(node_specs, min_size=1, max_size=30),
    pod=pod_specs,
    nominated=nominated_specs,
    start=st.integers(min_value=0, max_value=29),
    percentage=st.sampled_from([None, 10, 50, 100]),
)
def test_row_path_with_nominated_pods_matches_per_node_path(
    nodes: list[dict[str, Any]],
    pod: dict[str, Any],
    nominated: list[tuple[int, str, int, int]],
    start: int,
    percentage: int | None,
) -> None:
    """Nodes with pods nominated to them are filtered one by one inside the row path, with
    and without those pods: the same feasible nodes, statuses and stop point as per node."""
    snapshot = build_cluster(nodes).update_snapshot(Snapshot())
    incoming = build_pod(pod)
    by_node: dict[str, list[PodView]] = {}
    for number, (index, cpu, relative, host_port) in enumerate(nominated):
        name = f"node-{index % len(nodes)}"
        view = dataclasses.replace(
            build_pod(pod_spec(cpu=cpu, host_port=host_port)),
            uid=f"nominated-{number}",
            priority=incoming.priority + relative,
        )
        by_node.setdefault(name, []).append(view)
    nominator = ListingNominator(by_node)
    fwk = default_framework(snapshot, LEAST_ALLOCATED, nominator)
    assert row_table_for(fwk, CycleState(), snapshot) is not None
    slow = run_path(
        snapshot, per_node_lister(snapshot), incoming, start, percentage, LEAST_ALLOCATED, nominator
    )
    fast = run_path(snapshot, snapshot, incoming, start, percentage, LEAST_ALLOCATED, nominator)
    assert fast == slow
    adapted = run_path(
        snapshot, snapshot, incoming, start, percentage, LEAST_ALLOCATED, nominator,
        row_methods=False,
    )  # fmt: skip
    assert adapted == slow


def node_spec(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "cpu": "4",
        "memory": "4Gi",
        "ephemeral": None,
        "pods": "110",
        "unschedulable": False,
        "taints": [],
        "zone": "a",
        "image": None,
        "pods_on_it": [],
    }
    return {**base, **changes}


def pod_spec(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "cpu": "1",
        "memory": "500Mi",
        "ephemeral": None,
        "tolerations": [],
        "zone_selector": None,
        "preferred_zone": None,
        "host_port": 0,
        "node_name": "",
        "image": "pause",
    }
    return {**base, **changes}


@pytest.mark.parametrize(
    ("nodes", "pod"),
    [
        # Balanced allocation reads actual requests, Fit's score the non-zero defaults.
        ([node_spec(pods_on_it=[(None, None, 0)]), node_spec()], pod_spec()),
        # Over-committed node: fractions capped at 1, LeastAllocated scores 0.
        ([node_spec(cpu="500m", pods_on_it=[("1", "2Gi", 0)]), node_spec()], pod_spec(cpu="0")),
        # Too many pods, insufficient cpu and memory on one node: all three reasons, in order.
        ([node_spec(cpu="1", memory="1Gi", pods="1", pods_on_it=[("1", "1Gi", 0)])], pod_spec()),
        # Taints: NoSchedule rejects, PreferNoSchedule lowers the score, tolerations help.
        (
            [
                node_spec(taints=[TAINTS[0]]),
                node_spec(taints=[TAINTS[1], TAINTS[3]]),
                node_spec(),
            ],
            pod_spec(tolerations=[TOLERATIONS[1]]),
        ),
        # Selector, preferred affinity, node name, host ports, images.
        (
            [
                node_spec(zone="b", image="nginx", pods_on_it=[("0", "0", 8080)]),
                node_spec(zone="a", image="nginx"),
                node_spec(zone="b", unschedulable=True),
                node_spec(zone="b"),
            ],
            pod_spec(preferred_zone="b", host_port=8080, image="nginx"),
        ),
        (
            [node_spec(zone="b"), node_spec(zone="a")],
            pod_spec(zone_selector="a", node_name="node-1"),
        ),
        ([node_spec(ephemeral="10Gi"), node_spec(ephemeral="0")], pod_spec(ephemeral="1Gi")),
    ],
)
@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_row_path_matches_per_node_path_on_chosen_cases(
    nodes: list[dict[str, Any]], pod: dict[str, Any], strategy: str
) -> None:
    snapshot = build_cluster(nodes).update_snapshot(Snapshot())
    incoming = build_pod(pod)
    for start in range(len(nodes)):
        slow = run_path(snapshot, per_node_lister(snapshot), incoming, start, None, strategy)
        fast = run_path(snapshot, snapshot, incoming, start, None, strategy)
        assert fast == slow


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.lists(node_specs, min_size=2, max_size=20),
    pod=pod_specs,
    seed=st.integers(min_value=0, max_value=2**16),
)
async def test_schedule_pod_picks_a_best_node_either_way(
    nodes: list[dict[str, Any]], pod: dict[str, Any], seed: int
) -> None:
    snapshot = build_cluster(nodes).update_snapshot(Snapshot())
    incoming = build_pod(pod)
    picks: list[tuple[str, int, int] | str] = []
    best: set[str] = set()
    for lister in (per_node_lister(snapshot), snapshot):
        fwk = default_framework(lister)
        try:
            result = await schedule_pod(
                fwk,
                CycleState(),
                incoming,
                lister,
                percentage_of_nodes_to_score=None,
                next_start_index=StartIndex(),
                rng=random.Random(seed),
            )
        except FitError as error:
            picks.append(str(error))
            continue
        picks.append(("", result.evaluated_nodes, result.feasible_nodes))
        if not best:
            feasible, _ = find_nodes_that_fit_pod(
                fwk, CycleState(), incoming, lister, None, StartIndex()
            )
            state = CycleState()
            if len(feasible) == 1:
                best = {feasible[0].node_name}
            else:
                scores = prioritize_nodes(fwk, state, incoming, feasible)
                top = max(s.total_score for s in scores)
                best = {s.name for s in scores if s.total_score == top}
        assert result.suggested_host in best
    assert picks[0] == picks[1]


# ---- the table follows the cache ----------------------------------------------------------


def table_columns(snapshot: Snapshot) -> dict[str, Any]:
    table = snapshot.node_table()
    columns = {name: getattr(table, name).tolist() for name in COLUMNS}
    columns["names"] = list(table.names)
    columns["images"] = dict(table.image_node_counts)
    return columns


COLUMNS = (
    "alloc_cpu",
    "alloc_memory",
    "alloc_ephemeral",
    "alloc_pods",
    "req_cpu",
    "req_memory",
    "req_ephemeral",
    "nonzero_cpu",
    "nonzero_memory",
    "pod_count",
    "unschedulable",
    "no_schedule_taints",
    "prefer_no_schedule_taints",
    "used_ports",
    "inexact",
)


ACTIONS = ["assume", "forget", "remove_node", "readd_node"]


@settings(max_examples=40, deadline=None)
@given(
    nodes=st.lists(node_specs, min_size=1, max_size=12),
    steps=st.lists(
        st.tuples(
            st.sampled_from(["assume", "forget", "remove_node", "readd_node"]), st.integers(0, 11)
        ),
        max_size=15,
    ),
)
def test_incremental_table_equals_a_rebuilt_one(
    nodes: list[dict[str, Any]], steps: list[tuple[str, int]]
) -> None:
    cache = build_cluster(nodes)
    snapshot = cache.update_snapshot(Snapshot())
    snapshot.node_table()
    assumed: list[PodView] = []
    for number, (action, target) in enumerate(steps):
        name = f"node-{target % len(nodes)}"
        info = cache.get_node_info(name)
        if action == "assume" and info is not None and info.node is not None:
            pod = requesting_pod(
                f"a-{number}", "100m", "1Gi", host_port=9000 + number, node_name=name
            ).obj()
            cache.assume_pod(pod)
            assumed.append(pod)
        elif action == "forget" and assumed:
            cache.forget_pod(assumed.pop())
        elif action == "remove_node" and info is not None and info.node is not None:
            cache.remove_node(name)
        elif action == "readd_node":
            spec = nodes[target % len(nodes)]
            cache.add_node(make_node(name, {"cpu": spec["cpu"], "pods": "7"}, taints=TAINTS[:1]))
        cache.update_snapshot(snapshot)
        incremental = table_columns(snapshot)
        snapshot.invalidate_table()
        assert incremental == table_columns(snapshot)


# ---- when the per-node path runs instead --------------------------------------------------


def small_snapshot() -> Snapshot:
    return build_cluster([node_spec()] * 3).update_snapshot(Snapshot())


class PerNodeOnly:
    """An out-of-tree Filter plugin without a row path."""

    name = "PerNodeOnly"

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        return Status.OK


def test_row_path_applies_to_the_default_plugins() -> None:
    snapshot = small_snapshot()
    assert row_table_for(default_framework(snapshot), CycleState(), snapshot) is not None


def test_nominated_pods_send_the_cycle_per_node() -> None:
    snapshot = small_snapshot()
    nominator = StaticNominator({"node-0": [make_pod(priority=10)]})
    nominator.has_nominated_pods = lambda: True  # type: ignore[attr-defined]
    fwk = default_framework(snapshot, nominator=nominator)
    assert row_table_for(fwk, CycleState(), snapshot) is None


def test_a_nominator_that_cannot_tell_sends_the_cycle_per_node() -> None:
    snapshot = small_snapshot()
    fwk = default_framework(snapshot, nominator=StaticNominator())
    assert row_table_for(fwk, CycleState(), snapshot) is None


def test_a_filter_without_row_path_runs_in_the_row_pass() -> None:
    snapshot = small_snapshot()
    fwk = Framework(
        "p",
        {"filter": [(PerNodeOnly(), 0)]},  # type: ignore[dict-item]
        HandleDeps(snapshot=lambda: snapshot, client=RecordingClient()),
    )
    assert fwk.per_node_filters(CycleState()) == ["PerNodeOnly"]
    assert row_table_for(fwk, CycleState(), snapshot) is not None
    assert default_framework(snapshot).per_node_filters(CycleState()) == []


def test_huge_values_send_the_cycle_per_node() -> None:
    cache = Cache()
    cache.add_node(make_node("big", {"cpu": "4", "memory": "100Pi", "pods": "10"}))
    snapshot = cache.update_snapshot(Snapshot())
    assert row_table_for(default_framework(snapshot), CycleState(), snapshot) is None


@pytest.mark.parametrize("ties", [2, 3, 5])
def test_select_row_is_uniform_among_the_best(ties: int) -> None:
    total = np.array([50] * ties + [10, 49], dtype=np.int64)
    rng = random.Random(3)
    picks = Counter(select_row(total, rng) for _ in range(3000))
    assert set(picks) == set(range(ties))
    assert min(picks.values()) > 3000 / ties * 0.8


class FailsOnNode1:
    """A Filter plugin with a row path whose per-node check errs on node-1."""

    name = "FailsOnNode1"

    def filter(self, state: CycleState, pod: PodView, node_info: NodeInfo) -> Status:
        if node_info.node_name == "node-1":
            return Status.error("boom")
        return Status.OK

    def filter_rows(
        self, state: CycleState, pod: PodView, table: NodeTable, rows: Rows
    ) -> RowVerdict:
        return verdict_per_node(self.filter, state, pod, table, rows)


def test_plugin_error_is_reported_as_per_node() -> None:
    snapshot = small_snapshot()
    messages = []
    for lister in (per_node_lister(snapshot), snapshot):
        fwk = Framework(
            "p",
            {"filter": [(FailsOnNode1(), 0)]},  # type: ignore[dict-item]
            HandleDeps(snapshot=lambda lister=lister: lister, client=RecordingClient()),
        )
        assert (row_table_for(fwk, CycleState(), lister) is not None) == (lister is snapshot)
        index = StartIndex()
        with pytest.raises(SchedulingError) as error:
            find_nodes_that_fit_pod(fwk, CycleState(), make_pod(), lister, None, index)
        messages.append((str(error.value), index.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize(
    ("nodes", "pod", "nominated", "feasible"),
    [
        pytest.param(
            [node_spec(cpu="2"), node_spec(cpu="2")],
            pod_spec(cpu="1"),
            {"node-0": [("1500m", 0)]},
            ["node-1"],
            id="fits alone, not beside an equal-priority nominated pod",
        ),
        pytest.param(
            [node_spec(cpu="2"), node_spec(cpu="2")],
            pod_spec(cpu="1"),
            {"node-0": [("1500m", -1)]},
            ["node-0", "node-1"],
            id="a lower-priority nominated pod does not count",
        ),
        pytest.param(
            [node_spec(cpu="2", taints=[TAINTS[0]]), node_spec(cpu="2", pods="1")],
            pod_spec(cpu="1"),
            {"node-0": [("1500m", 1)], "node-1": [("100m", 1)]},
            [],
            id="a taint keeps its verdict; the nominated pod fills the pod count",
        ),
    ],
)
def test_nominated_pods_count_where_only_resources_decide(
    nodes: list[dict[str, Any]],
    pod: dict[str, Any],
    nominated: dict[str, list[tuple[str, int]]],
    feasible: list[str],
) -> None:
    """Without filters that pods on the node could change but NodeResourcesFit, the row path
    adds nominated pods' requests to the node's instead of filtering a copy per node; the
    outcome (feasible nodes, each rejected node's status) is the per-node path's."""
    snapshot = build_cluster(nodes).update_snapshot(Snapshot())
    incoming = build_pod(pod)
    by_node = {
        name: [
            dataclasses.replace(
                build_pod(pod_spec(cpu=cpu)),
                uid=f"nominated-{name}-{i}",
                priority=incoming.priority + relative,
            )
            for i, (cpu, relative) in enumerate(pods)
        ]
        for name, pods in nominated.items()
    }
    nominator = ListingNominator(by_node)
    slow = run_path(
        snapshot, per_node_lister(snapshot), incoming, 0, None, LEAST_ALLOCATED, nominator
    )
    fast = run_path(snapshot, snapshot, incoming, 0, None, LEAST_ALLOCATED, nominator)
    assert fast == slow
    assert sorted(fast[0]) == feasible
