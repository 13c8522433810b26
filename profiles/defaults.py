"""Upstream v1 defaults: the default plugin set, mergePlugins, and the scalar defaults.

Ported from pkg/scheduler/apis/config/v1/{default_plugins.go,defaults.go} and component-base's
RecommendedDefaultLeaderElectionConfiguration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from profiles.config import (
    DEFAULT_SCHEDULER_NAME,
    ClientConnection,
    ConfigSpec,
    LeaderElection,
    PluginRef,
    Plugins,
    PluginSet,
    ProfileSpec,
    frozen_mapping,
)
from profiles.spec import PLUGIN_SET_KEYS

DEFAULT_PARALLELISM = 16
DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE = 0  # 0 = adaptive
DEFAULT_POD_INITIAL_BACKOFF_SECONDS = 1
DEFAULT_POD_MAX_BACKOFF_SECONDS = 10

# getDefaultPlugins() (v1.36: DynamicResources is GA and always in, before DefaultPreemption so
# that PostFilter frees an idle claim before evicting a pod, with score weight 2 — upstream's
# pkg/scheduler/apis/config/v1/AGENTS.md lists it so, as does v1.36.3's applyFeatureGates; the
# older default_plugins.go stored for search has no weight, i.e. 1). Order matters: it is the
# order plugins run in at every point they implement.
DEFAULT_MULTI_POINT: tuple[PluginRef, ...] = (
    PluginRef("SchedulingGates"),
    PluginRef("PrioritySort"),
    PluginRef("NodeUnschedulable"),
    PluginRef("NodeName"),
    PluginRef("TaintToleration", 3),
    PluginRef("NodeAffinity", 2),
    PluginRef("NodePorts"),
    PluginRef("NodeResourcesFit", 1),
    PluginRef("VolumeRestrictions"),
    PluginRef("NodeVolumeLimits"),
    PluginRef("VolumeBinding"),
    PluginRef("VolumeZone"),
    PluginRef("PodTopologySpread", 2),
    PluginRef("InterPodAffinity", 2),
    PluginRef("DynamicResources", 2),
    PluginRef("DefaultPreemption"),
    PluginRef("NodeResourcesBalancedAllocation", 1),
    PluginRef("ImageLocality", 1),
    PluginRef("DefaultBinder"),
)
# applyFeatureGates: plugins the default profile gains when their feature gates are on.
# NodeDeclaredFeatures first: upstream's applyFeatureGates appends it to the default MultiPoint
# when the NodeDeclaredFeatures gate is on (pkg/scheduler/apis/config/v1/AGENTS.md: "Adds
# NodeDeclaredFeatures to MultiPoint", before the GangScheduling append); the gate is beta and
# on by default since v1.36 (GA, locked on, in v1.37). Upstream also appends GangScheduling to
# the default MultiPoint when the GangScheduling gate is on (which needs GenericWorkload); the
# v1.35 integration tests of test/integration/scheduler/gang (gang_test.go) run gangs with a
# default configuration and only the gates set. With TopologyAwareWorkloadScheduling on (it
# needs GenericWorkload too) upstream appends TopologyPlacementGenerator (PlacementGenerate) and
# PodGroupPodsCount (PlacementScore, weight 1) after them (pkg/scheduler/apis/config/v1/
# AGENTS.md, applyFeatureGates: "Appends TopologyPlacementGenerator and PodGroupPodsCount
# (weight: 1)").
NODE_DECLARED_FEATURES = "NodeDeclaredFeatures"
GANG_SCHEDULING = "GangScheduling"
GENERIC_WORKLOAD = "GenericWorkload"
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING = "TopologyAwareWorkloadScheduling"
TOPOLOGY_PLACEMENT_GENERATOR = "TopologyPlacementGenerator"
POD_GROUP_PODS_COUNT = "PodGroupPodsCount"
FEATURE_GATED_PLUGINS: tuple[tuple[tuple[str, ...], PluginRef], ...] = (
    ((NODE_DECLARED_FEATURES,), PluginRef(NODE_DECLARED_FEATURES)),
    ((GENERIC_WORKLOAD, GANG_SCHEDULING), PluginRef(GANG_SCHEDULING)),
    ((TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,), PluginRef(TOPOLOGY_PLACEMENT_GENERATOR)),
    ((TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,), PluginRef(POD_GROUP_PODS_COUNT, 1)),
)
# Upstream's defaults of the gates above where a gate is on by default; the others are off.
# scheduler/app/commands/upstream_flags.py's FEATURE_GATES passes every gate explicitly.
GATES_ON_BY_DEFAULT = frozenset({NODE_DECLARED_FEATURES})
DEFAULT_PLUGIN_NAMES = frozenset(
    [p.name for p in DEFAULT_MULTI_POINT] + [p.name for _, p in FEATURE_GATED_PLUGINS]
)


def default_multi_point(feature_gates: Mapping[str, bool] | None = None) -> tuple[PluginRef, ...]:
    """getDefaultPlugins' MultiPoint for these gates (`--feature-gates`; an absent gate has
    upstream's default: NodeDeclaredFeatures on, the workload gates off)."""
    gates = feature_gates or {}
    extra = tuple(
        plugin
        for needs, plugin in FEATURE_GATED_PLUGINS
        if all(gates.get(g, g in GATES_ON_BY_DEFAULT) for g in needs)
    )
    return DEFAULT_MULTI_POINT + extra


def default_plugins(feature_gates: Mapping[str, bool] | None = None) -> Plugins:
    enabled = default_multi_point(feature_gates)
    return Plugins(frozen_mapping({"multiPoint": PluginSet(enabled=enabled)}))


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """mergePluginSet: defaults minus disabled ("*" = all), with user entries replacing the
    default of the same name in place; other user entries appended in their order."""
    disabled = (*custom.disabled, *default.disabled)
    disabled_names = {p.name for p in disabled}
    # Last occurrence wins the in-place replacement, earlier duplicates get appended (upstream
    # keeps them so framework construction reports "already registered").
    last_index = {p.name: i for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled_names:
        for plugin in default.enabled:
            if plugin.name in disabled_names:
                continue
            i = last_index.get(plugin.name)
            if i is not None:
                plugin = custom.enabled[i]
                replaced.add(i)
            enabled.append(plugin)
    enabled.extend(p for i, p in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled=tuple(enabled), disabled=tuple(disabled))


def merge_plugins(default: Plugins, custom: Plugins | None) -> Plugins:
    if custom is None:
        return default
    merged = {key: merge_plugin_set(default[key], custom[key]) for key in PLUGIN_SET_KEYS}
    return Plugins(frozen_mapping({k: v for k, v in merged.items() if v.enabled or v.disabled}))


def default_profiles(
    profiles: tuple[ProfileSpec, ...], feature_gates: Mapping[str, bool] | None = None
) -> tuple[ProfileSpec, ...]:
    """No profile -> one empty; a single unnamed profile -> default-scheduler; plugins merged."""
    if not profiles:
        profiles = (ProfileSpec(),)
    if len(profiles) == 1 and profiles[0].scheduler_name is None:
        profiles = (replace(profiles[0], scheduler_name=DEFAULT_SCHEDULER_NAME),)
    return tuple(
        replace(p, plugins=merge_plugins(default_plugins(feature_gates), p.plugins))
        for p in profiles
    )


def default_leader_election(spec: ConfigSpec) -> LeaderElection:
    le = spec.leader_election
    base = LeaderElection()
    return LeaderElection(
        leader_elect=base.leader_elect if le.leader_elect is None else le.leader_elect,
        lease_duration=le.lease_duration or base.lease_duration,
        renew_deadline=le.renew_deadline or base.renew_deadline,
        retry_period=le.retry_period or base.retry_period,
        resource_lock=le.resource_lock or base.resource_lock,
        resource_name=le.resource_name or base.resource_name,
        resource_namespace=le.resource_namespace or base.resource_namespace,
    )


def default_client_connection(spec: ConfigSpec) -> ClientConnection:
    cc = spec.client_connection
    base = ClientConnection()
    return replace(
        cc,
        content_type=cc.content_type or base.content_type,
        qps=cc.qps or base.qps,
        burst=cc.burst or base.burst,
    )


def apply_defaults(spec: ConfigSpec, feature_gates: Mapping[str, bool] | None = None) -> ConfigSpec:
    """SetDefaults_KubeSchedulerConfiguration for the fields that stay in ConfigSpec;
    `feature_gates` (`--feature-gates`) decide the feature-gated default plugins."""
    enable_profiling = True if spec.enable_profiling is None else spec.enable_profiling
    contention = spec.enable_contention_profiling
    if contention is None and enable_profiling:
        contention = True
    return replace(
        spec,
        parallelism=DEFAULT_PARALLELISM if spec.parallelism is None else spec.parallelism,
        percentage_of_nodes_to_score=(
            DEFAULT_PERCENTAGE_OF_NODES_TO_SCORE
            if spec.percentage_of_nodes_to_score is None
            else spec.percentage_of_nodes_to_score
        ),
        pod_initial_backoff_seconds=(
            DEFAULT_POD_INITIAL_BACKOFF_SECONDS
            if spec.pod_initial_backoff_seconds is None
            else spec.pod_initial_backoff_seconds
        ),
        pod_max_backoff_seconds=(
            DEFAULT_POD_MAX_BACKOFF_SECONDS
            if spec.pod_max_backoff_seconds is None
            else spec.pod_max_backoff_seconds
        ),
        profiles=default_profiles(spec.profiles, feature_gates),
        enable_profiling=enable_profiling,
        enable_contention_profiling=bool(contention),
    )
