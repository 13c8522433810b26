"""Preemption fakes: DefaultPreemption inside a real Framework (tf.NewFramework as upstream's
default_preemption_test.go uses it), PodDisruptionBudgets, and that test's constants.

The plugin runs with in-tree filter plugins over a real Snapshot, so dry runs exercise the
same PreFilter extensions and filters the scheduler uses. Pods and nodes come from the kit's
builders (`make_pod(..., priority=..., requests=...)`, `make_node(name, capacity=...)`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from scheduler.api.objects import NodeView, PodView
from scheduler.api.times import format_time
from scheduler.cache.snapshot import Snapshot
from scheduler.framework.interface import CycleState, Preemption
from scheduler.framework.registry import PluginEntry, Registry
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.listers.cluster_objects import ClusterObjects, DisruptionBudget
from scheduler.plugins.defaultpreemption.plugin import NAME, DefaultPreemption
from scheduler.plugins.registry import in_tree_registry
from scheduler.testing.builders import make_node
from scheduler.testing.cluster import RecordingClient, StaticNominator, make_snapshot

NEG_PRIORITY, LOW_PRIORITY, MID_PRIORITY, HIGH_PRIORITY, VERY_HIGH_PRIORITY = (
    -100,
    0,
    100,
    1000,
    10000,
)
SMALL_RES = {"cpu": "100m", "memory": "100"}
MEDIUM_RES = {"cpu": "200m", "memory": "200"}
LARGE_RES = {"cpu": "300m", "memory": "300"}
VERY_LARGE_RES = {"cpu": "500m", "memory": "500"}


def epoch(seconds: int) -> str:
    """metav1.Time of `seconds` after the epoch. Upstream's tests use epochTime1..6 a
    nanosecond apart; metav1.Time serializes whole seconds, so ported cases use seconds."""
    return format_time(datetime.fromtimestamp(seconds, UTC))


def topology_node(spec: str, capacity: Mapping[str, str] | None = None) -> NodeView:
    """Upstream's "node-a/zone1" notation: name, then labels hostname, zone, region."""
    values = spec.split("/")
    labels = dict(zip(("hostname", "zone", "region"), values, strict=False))
    return make_node(values[0], capacity=capacity or VERY_LARGE_RES, labels=labels)


def make_pdb(
    name: str,
    *,
    namespace: str = "default",
    match_labels: Mapping[str, str] | None = None,
    disruptions_allowed: int = 0,
    disrupted_pods: Iterable[str] = (),
) -> DisruptionBudget:
    spec: dict[str, Any] = {}
    if match_labels is not None:
        spec["selector"] = {"matchLabels": dict(match_labels)}
    return DisruptionBudget.from_dict(
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"},
            "spec": spec,
            "status": {
                "disruptionsAllowed": disruptions_allowed,
                "disruptedPods": {p: "2024-01-01T00:00:00Z" for p in disrupted_pods},
            },
        }
    )


@dataclass
class Harness:
    framework: Framework
    plugin: DefaultPreemption
    snapshot: Snapshot
    preemptions: list[Preemption] = field(default_factory=list)

    def pre_filtered_state(self, pod: PodView) -> CycleState:
        """A CycleState PreFilter plugins have filled for `pod` (upstream's tests do the same)."""
        state = CycleState()
        _, status, _ = self.framework.run_pre_filter_plugins(state, pod, self.snapshot.list())
        assert status.is_success, status
        return state


def build(
    nodes: Iterable[NodeView],
    pods: Iterable[PodView] = (),
    *,
    plugins: Sequence[str] = ("NodeResourcesFit",),
    extra: Sequence[PluginEntry] = (),
    args: Mapping[str, Any] | None = None,
    pdbs: Iterable[DisruptionBudget] = (),
    nominated: Mapping[str, list[PodView]] | None = None,
    seed: int = 4,
    feature_gates: Mapping[str, bool] | None = None,
) -> Harness:
    """A Framework with `plugins` (in-tree, or from `extra`) at PreFilter / Filter where they
    implement them, and DefaultPreemption at PostFilter."""
    registry: Registry = in_tree_registry()  # DefaultPreemption included
    for entry in extra:
        registry.register(entry)
    snapshot = make_snapshot(nodes, pods)
    objects = ClusterObjects()
    for budget in pdbs:
        objects.disruption_budgets.on_add(budget)
    preemptions: list[Preemption] = []
    deps = HandleDeps(
        snapshot=lambda: snapshot,
        client=RecordingClient(),
        nominator=StaticNominator({k: list(v) for k, v in (nominated or {}).items()}),
        cluster_objects=objects,
        rng=random.Random(seed),
        start_preemption=preemptions.append,
        feature_gates=dict(feature_gates or {}),
    )
    enabled: dict[str, list[tuple[str, int]]] = {"postFilter": [(NAME, 0)]}
    for name in plugins:
        points = registry[name].extension_points
        for point in ("preFilter", "filter"):
            if point in points:
                enabled.setdefault(point, []).append((name, 0))
    framework = Framework.build(
        "default-scheduler", registry, enabled, {NAME: args} if args is not None else {}, deps
    )
    plugin = framework.plugins[NAME]
    assert isinstance(plugin, DefaultPreemption)
    return Harness(framework, plugin, snapshot, preemptions)
