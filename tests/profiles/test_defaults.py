"""Defaults and merge semantics. Merge cases are upstream's TestMergePlugins
(pkg/scheduler/apis/config/v1/default_plugins_test.go), ported as facts."""

from __future__ import annotations

from pathlib import Path

import pytest
from profiles_testkit import in_tree_registry

from profiles import load_config, load_config_text
from profiles.config import PluginRef, PluginSet
from profiles.defaults import DEFAULT_MULTI_POINT, merge_plugin_set

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def refs(*items: str | tuple[str, int]) -> tuple[PluginRef, ...]:
    return tuple(PluginRef(i) if isinstance(i, str) else PluginRef(*i) for i in items)


def pset(
    enabled: tuple[str | tuple[str, int], ...] = (), disabled: tuple[str, ...] = ()
) -> PluginSet:
    return PluginSet(refs(*enabled), refs(*disabled))


@pytest.mark.parametrize(
    ("default", "custom", "expected"),
    [
        pytest.param(
            pset(("D1", "D2")), pset(("Custom",)), pset(("D1", "D2", "Custom")),
            id="AppendCustomPlugin",
        ),
        pytest.param(
            pset(("D1", "D2")), pset(("Custom", "D2"), ("D2",)),
            pset(("D1", "Custom", "D2"), ("D2",)), id="InsertAfterDefaultPlugins2",
        ),
        pytest.param(
            pset(("D1", "D2")), pset(("Custom", "D1", "D2"), ("*",)),
            pset(("Custom", "D1", "D2"), ("*",)), id="InsertBeforeAllPlugins",
        ),
        pytest.param(
            pset(("D1", "D2")), pset(("D2", "D1"), ("*",)), pset(("D2", "D1"), ("*",)),
            id="ReorderDefaultPlugins",
        ),
        pytest.param(
            pset(("P1", "P2", "P3")), pset((("P1", 2), ("P3", 3))),
            pset((("P1", 2), "P2", ("P3", 3))), id="CustomPluginOverrideDefaultPlugin",
        ),
        pytest.param(
            pset(("P1", "P2", "P3")), pset((("P2", 2), ("P1", 1))),
            pset((("P1", 1), ("P2", 2), "P3")), id="OrderPreserveAfterOverride",
        ),
        pytest.param(
            pset(("P1", "P2", "P3")), pset(("P1", ("P2", 2), "P3", ("P2", 4))),
            pset(("P1", ("P2", 4), "P3", ("P2", 2))), id="RepeatedCustomPlugin",
        ),
        pytest.param(
            pset(("D1", "D2")), pset(("Custom", "Custom2"), ("D2",)),
            pset(("D1", "Custom", "Custom2"), ("D2",)), id="Append disabled Multipoint plugins",
        ),
        pytest.param(
            pset(("D",)), pset((("D", 5),)), pset((("D", 5),)),
            id="override default MultiPoint plugins with custom value",
        ),
        pytest.param(
            pset(("D",), ("D2",)), pset(("Custom",)), pset(("D", "Custom"), ("D2",)),
            id="disabled MultiPoint plugin in default set",
        ),
        pytest.param(
            pset(("D",)), pset((), ("D",)), pset((), ("D",)),
            id="multipoint with only disabled gets merged",
        ),
    ],
)  # fmt: skip
def test_merge_plugin_set(default: PluginSet, custom: PluginSet, expected: PluginSet) -> None:
    assert merge_plugin_set(default, custom) == expected


def test_default_plugin_list_matches_upstream() -> None:
    # default_plugins.go getDefaultPlugins (v1.31+: in-tree cloud volume limits removed; v1.34+:
    # DynamicResources, GA, before DefaultPreemption; weight 2 as v1.36).
    assert [(p.name, p.weight) for p in DEFAULT_MULTI_POINT] == [
        ("SchedulingGates", None), ("PrioritySort", None), ("NodeUnschedulable", None),
        ("NodeName", None), ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", None),
        ("NodeResourcesFit", 1), ("VolumeRestrictions", None), ("NodeVolumeLimits", None),
        ("VolumeBinding", None), ("VolumeZone", None), ("PodTopologySpread", 2),
        ("InterPodAffinity", 2), ("DynamicResources", 2), ("DefaultPreemption", None),
        ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1), ("DefaultBinder", None),
    ]  # fmt: skip


@pytest.mark.parametrize("source", [None, HEADER, HEADER + "profiles: []\n"])
def test_global_defaults(source: str | None) -> None:
    registry = in_tree_registry()
    cfg = load_config(None, registry) if source is None else load_config_text(source, registry)
    assert cfg.parallelism == 16
    assert cfg.percentage_of_nodes_to_score == 0
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 10)
    le = cfg.leader_election
    assert (le.leader_elect, le.lease_duration, le.renew_deadline, le.retry_period) == (
        True, 15.0, 10.0, 2.0,
    )  # fmt: skip
    assert (le.resource_lock, le.resource_name, le.resource_namespace) == (
        "leases", "kube-scheduler", "kube-system",
    )  # fmt: skip
    cc = cfg.client_connection
    # Upstream defaults contentType to protobuf; aiosched's client speaks JSON (profiles/fields.py).
    assert (cc.qps, cc.burst, cc.content_type) == (50.0, 100, "application/json")
    assert cfg.enable_profiling and cfg.enable_contention_profiling
    assert not cfg.delay_cache_until_active
    assert cfg.scheduler_names == ("default-scheduler",)


def test_default_profile_with_full_registry() -> None:
    p = load_config(None, in_tree_registry()).profiles[0]
    # Upstream's resolved default profile (what kube-scheduler logs with -v=2).
    assert p.names_at("preEnqueue") == ("SchedulingGates", "DynamicResources")
    assert p.names_at("queueSort") == ("PrioritySort",)
    # NodeDeclaredFeatures: appended by applyFeatureGates, its gate on by default since v1.36.
    assert p.names_at("preFilter") == (
        "NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
        "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity",
        "DynamicResources", "NodeDeclaredFeatures",
    )  # fmt: skip
    assert p.names_at("filter") == (
        "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
        "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
        "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources",
        "NodeDeclaredFeatures",
    )  # fmt: skip
    assert p.names_at("postFilter") == ("DynamicResources", "DefaultPreemption")
    assert [tuple(w) for w in p.at("score")] == [
        ("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1),
        ("VolumeBinding", 1), ("PodTopologySpread", 2), ("InterPodAffinity", 2),
        ("DynamicResources", 2), ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1),
    ]  # fmt: skip
    assert p.names_at("reserve") == ("VolumeBinding", "DynamicResources")
    assert p.names_at("preBind") == ("VolumeBinding", "DynamicResources")
    assert p.names_at("bind") == ("DefaultBinder",)
    assert p.notes == ()
    assert set(p.args) == {
        "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity", "DynamicResources",
        "DefaultPreemption",
    }  # fmt: skip


def test_unimplemented_defaults_are_dropped_with_a_note() -> None:
    p = load_config(None, in_tree_registry("VolumeBinding", "ImageLocality")).profiles[0]
    assert "VolumeBinding" not in p.plugin_names()
    assert "ImageLocality" not in p.plugin_names()
    assert p.notes == (
        "default plugin VolumeBinding is not implemented yet; left out",
        "default plugin ImageLocality is not implemented yet; left out",
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("leaderElection: {leaseDuration: 0s, resourceLock: ''}\n", (15.0, "leases")),
        ("leaderElection: {leaseDuration: 1m30s, renewDeadline: 20s}\n", (90.0, "leases")),
    ],
)
def test_leader_election_zero_values_take_defaults(body: str, expected: tuple[float, str]) -> None:
    le = load_config_text(HEADER + body, in_tree_registry()).leader_election
    assert (le.lease_duration, le.resource_lock) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("clientConnection: {qps: 0, burst: 0}\n", (50.0, 100)),
        ("clientConnection: {qps: 12.5, burst: 7}\n", (12.5, 7)),
    ],
)
def test_client_connection_defaults(body: str, expected: tuple[float, int]) -> None:
    cc = load_config_text(HEADER + body, in_tree_registry()).client_connection
    assert (cc.qps, cc.burst) == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("", (True, True)),
        ("enableProfiling: false\n", (False, False)),
        ("enableContentionProfiling: false\n", (True, False)),
    ],
)
def test_profiling_defaults(body: str, expected: tuple[bool, bool]) -> None:
    cfg = load_config_text(HEADER + body, in_tree_registry())
    assert (cfg.enable_profiling, cfg.enable_contention_profiling) == expected


def test_profile_percentage_falls_back_to_global() -> None:
    cfg = load_config_text(
        HEADER
        + "percentageOfNodesToScore: 30\nprofiles:\n- schedulerName: a\n"
        + "- schedulerName: b\n  percentageOfNodesToScore: 70\n",
        in_tree_registry(),
    )
    assert [p.percentage_of_nodes_to_score for p in cfg.profiles] == [30, 70]


GANG_GATES = {"GenericWorkload": True, "GangScheduling": True}


@pytest.mark.parametrize(
    ("gates", "body", "expected"),
    [
        # applyFeatureGates: the gate on appends GangScheduling to the default MultiPoint.
        (GANG_GATES, "", 1),
        ({}, "", 0),
        # GangScheduling needs GenericWorkload (the gates' dependency): without it, no plugin.
        ({"GangScheduling": True}, "", 0),
        # Enabled by the user as well: replaced in place, once.
        (GANG_GATES, "  plugins:\n    multiPoint:\n      enabled: [{name: GangScheduling}]\n", 1),
        # Disabled by the user: gone, as any default plugin.
        (GANG_GATES, "  plugins:\n    multiPoint:\n      disabled: [{name: GangScheduling}]\n", 0),
    ],
)
def test_gang_scheduling_is_a_default_plugin_when_its_gate_is_on(
    gates: dict[str, bool], body: str, expected: int
) -> None:
    from scheduler.cycle.profile_set import registry_for_config

    text = HEADER + "profiles:\n- schedulerName: default-scheduler\n" + body
    cfg = load_config_text(text, registry_for_config(), feature_gates=gates)
    names = cfg.profiles[0].plugin_names()
    assert names.count("GangScheduling") == expected
    assert cfg.profiles[0].names_at("preEnqueue").count("GangScheduling") == expected
    if expected:  # appended after upstream's default list
        assert cfg.profiles[0].names_at("preEnqueue")[-1] == "GangScheduling"


def test_check_config_shows_gang_scheduling_with_the_gates(tmp_path: Path) -> None:
    import io

    from profiles.render import check_config_main
    from scheduler.cycle.profile_set import registry_for_config

    path = tmp_path / "c.yaml"
    path.write_text(HEADER)
    out = io.StringIO()
    assert check_config_main(path, registry_for_config(), out=out, feature_gates=GANG_GATES) == 0
    assert "GangScheduling" in out.getvalue()
    out = io.StringIO()
    assert check_config_main(path, registry_for_config(), out=out) == 0
    assert "GangScheduling" not in out.getvalue()


@pytest.mark.parametrize(
    ("gates", "expected"),
    [
        # applyFeatureGates: the gate (beta, on by default since v1.36) appends the plugin.
        ({}, 1),
        ({"NodeDeclaredFeatures": True}, 1),
        ({"NodeDeclaredFeatures": False}, 0),
    ],
)
def test_node_declared_features_is_a_default_plugin_when_its_gate_is_on(
    gates: dict[str, bool], expected: int
) -> None:
    from scheduler.cycle.profile_set import registry_for_config

    cfg = load_config_text(HEADER, registry_for_config(), feature_gates=gates)
    profile = cfg.profiles[0]
    assert profile.plugin_names().count("NodeDeclaredFeatures") == expected
    assert profile.names_at("filter").count("NodeDeclaredFeatures") == expected
    assert profile.notes == ()


def test_default_multi_point_order_with_every_gate() -> None:
    from profiles.defaults import default_multi_point

    gates = {**GANG_GATES, "NodeDeclaredFeatures": True}
    names = [p.name for p in default_multi_point(gates)]
    # Upstream's applyFeatureGates: NodeDeclaredFeatures appended before GangScheduling.
    assert names == [p.name for p in DEFAULT_MULTI_POINT] + [
        "NodeDeclaredFeatures", "GangScheduling",
    ]  # fmt: skip
