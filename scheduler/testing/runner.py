"""A framework runner: build a real Framework around plugins and run one pod through it.

`build_framework` enables each plugin at every extension point it implements (in-tree plugins
by name, out-of-tree ones as classes or PluginEntry), as upstream's tests do with
frameworkruntime.NewFramework and RegisterPluginAsExtensions; `framework_from_config` builds
a profile from a KubeSchedulerConfiguration as `aiosched run` does. `run_cycle` then runs
PreFilter → Filter → PreScore → Score for a pod over the snapshot's nodes and returns every
status and score, without picking a host (that is the scheduling algorithm's job, not a
plugin's).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scheduler.api.objects import PodView
from scheduler.framework.interface import ApiClient, CycleState, Preemption, SnapshotLister
from scheduler.framework.registry import PluginEntry, Registry, entry_from_object
from scheduler.framework.results import NodePluginScores
from scheduler.framework.runtime import Framework, HandleDeps
from scheduler.framework.status import Status
from scheduler.listers.cluster_objects import ClusterObjects
from scheduler.testing.cluster import ListSnapshot, RecordingClient, StaticNominator

DEFAULT_PROFILE = "default-scheduler"
# Points a test framework never enables by itself: a profile has exactly one of each.
_SINGLE_PLUGIN_POINTS = frozenset({"queueSort", "bind"})

PluginSpec = str | type | PluginEntry


def handle_deps(
    snapshot: SnapshotLister | None = None,
    *,
    client: ApiClient | None = None,
    nominated: Mapping[str, Sequence[PodView]] | None = None,
    cluster_objects: ClusterObjects | None = None,
    seed: int = 0,
    start_preemption: Callable[[Preemption], None] | None = None,
) -> HandleDeps:
    """What a Framework serves its plugins, from fixed values: a RecordingClient unless
    `client`, nominated pods by node, a seeded rng, preemptions recorded by `start_preemption`."""
    snap: SnapshotLister = snapshot if snapshot is not None else ListSnapshot()
    deps = HandleDeps(
        snapshot=lambda: snap,
        client=client if client is not None else RecordingClient(),
        nominator=StaticNominator({k: list(v) for k, v in (nominated or {}).items()}),
        cluster_objects=cluster_objects if cluster_objects is not None else ClusterObjects(),
        rng=random.Random(seed),
    )
    if start_preemption is not None:
        deps.start_preemption = start_preemption
    return deps


def _entry(spec: PluginSpec, registry: Registry) -> PluginEntry:
    if isinstance(spec, str):
        return registry[spec]
    entry = entry_from_object(getattr(spec, "name", ""), spec)
    if entry.name not in registry:
        registry.register(entry)
    return entry


def build_framework(
    plugins: Sequence[PluginSpec],
    deps: HandleDeps | None = None,
    *,
    args: Mapping[str, Any] | None = None,
    weights: Mapping[str, int] | None = None,
    registry: Registry | None = None,
    points: Sequence[str] | None = None,
    profile_name: str = DEFAULT_PROFILE,
) -> Framework:
    """A Framework with `plugins` in order at every extension point each implements (or only
    at `points`), except queueSort and bind unless `points` names them.

    A plugin is an in-tree name ("NodeResourcesFit"), a plugin class or a PluginEntry. `args`
    are raw (decoded through the entry) or decoded args by plugin name; `weights` score
    weights (default 1).
    """
    if registry is None:
        from scheduler.plugins.registry import in_tree_registry

        registry = in_tree_registry()
    enabled: dict[str, list[tuple[str, int]]] = {}
    for spec in plugins:
        entry = _entry(spec, registry)
        for point in sorted(entry.extension_points):
            wanted = point in points if points is not None else point not in _SINGLE_PLUGIN_POINTS
            if wanted:
                enabled.setdefault(point, []).append(
                    (entry.name, (weights or {}).get(entry.name, 1))
                )
    return Framework.build(
        profile_name,
        registry,
        enabled,
        dict(args or {}),
        deps if deps is not None else handle_deps(),
    )


def framework_from_config(
    config: str | Path,
    deps: HandleDeps | None = None,
    *,
    profile: str = DEFAULT_PROFILE,
    plugins: Sequence[type | PluginEntry] = (),
) -> Framework:
    """The Framework of one profile of a KubeSchedulerConfiguration (a path, or YAML text),
    built as `aiosched run` builds profiles: in-tree and entry-point plugins, plus `plugins`
    (classes or entries the config may name without their package being installed)."""
    from profiles.api import load_config, load_config_text
    from scheduler.cycle.profile_set import ProfileSet, full_registry, registry_for_config

    registry = full_registry()
    for spec in plugins:
        _entry(spec, registry)
    specs = registry_for_config(registry)
    if isinstance(config, Path):
        loaded = load_config(config, specs)
    else:
        loaded = load_config_text(config, specs)
    the_deps = deps if deps is not None else handle_deps()
    profiles = ProfileSet.build(loaded, registry, lambda scheduler_name: the_deps)
    return profiles[profile].framework


@dataclass
class CycleResult:
    """What a framework decided about one pod, point by point (see `run_cycle`)."""

    state: CycleState
    pre_filter: Status
    # Each node the filters ran on, with the first rejecting status (or success).
    filter: dict[str, Status] = field(default_factory=dict)
    pre_score: Status | None = None  # None: not reached (no feasible node or no score plugin)
    score: Status | None = None
    # Per feasible node: each plugin's weighted score and the total.
    scores: list[NodePluginScores] = field(default_factory=list)

    @property
    def feasible(self) -> list[str]:
        """The nodes that passed every filter, in snapshot order."""
        return [name for name, status in self.filter.items() if status.is_success]

    @property
    def totals(self) -> dict[str, int]:
        """Total weighted score by node name."""
        return {node.name: node.total_score for node in self.scores}


def run_cycle(
    framework: Framework, pod: PodView, snapshot: SnapshotLister | None = None
) -> CycleResult:
    """Run PreFilter, Filter on each node (the PreFilter result's nodes, when it narrows
    them), then PreScore and Score on the feasible ones, stopping where a point fails.

    Nominated pods are not added to nodes for Filter, and no host is picked: use the
    scheduler's algorithm for those.
    """
    nodes = list((snapshot if snapshot is not None else framework.snapshot()).list())
    state = CycleState()
    narrowed, status, _ = framework.run_pre_filter_plugins(state, pod, nodes)
    result = CycleResult(state, status)
    if not status.is_success:
        return result
    if narrowed is not None and narrowed.node_names is not None:
        nodes = [info for info in nodes if info.node_name in narrowed.node_names]
    for info in nodes:
        result.filter[info.node_name] = framework.run_filter_plugins(state, pod, info)
    feasible = [info for info in nodes if result.filter[info.node_name].is_success]
    if not feasible or not framework.has_score_plugins():
        return result
    result.pre_score = framework.run_pre_score_plugins(state, pod, feasible)
    if not result.pre_score.is_success:
        return result
    result.scores, result.score = framework.run_score_plugins(state, pod, feasible)
    return result
