"""`--feature-gates` as kube-scheduler v1.37 reads it: the gate table of its binary (stage,
default, lock), component-base featuregate's messages (feature_gate_test.go's TestFeatureGateSet
cases), AllAlpha / AllBeta, dependencies, kubernetes_feature_enabled, and aiosched's refusals.
"""

from __future__ import annotations

import argparse
import logging

import pytest

from observability.metrics import SchedulerMetrics
from scheduler.app.commands.run_flags import add_arguments
from scheduler.app.feature_gate_table import ALPHA, BETA, GA, GATES
from scheduler.app.feature_gates import (
    DEFAULTS,
    HONOURED_SCHEDULER_GATES,
    NOT_HONOURED,
    FeatureGateError,
    feature_gates,
    feature_info,
    refusal,
)
from scheduler.listers.workload_objects import WORKLOAD_GATE_DEFAULTS
from scheduler.plugins.dynamicresources.features import DRA_GATE_DEFAULTS
from scheduler.plugins.nodedeclaredfeatures import GATE_DEFAULTS as NDF_GATE_DEFAULTS
from scheduler.server.zpages import ZPAGES_GATE_DEFAULTS

# (gate, stage, default, locked) at v1.37: the scheduler's feature table of v1.37 and, for the
# others, pkg/features/kube_features.go, component-base and client-go at v1.36.2.
TABLE = [
    ("AllAlpha", ALPHA, False, False),
    ("AllBeta", BETA, False, False),
    ("CompositePodGroup", ALPHA, False, False),
    ("DRAAdminAccess", GA, True, True),
    ("DRAConsumableCapacity", BETA, True, False),
    ("DRADeviceBindingConditions", BETA, True, False),
    ("DRADeviceTaintRules", GA, True, False),
    ("DRADeviceTaints", GA, True, False),
    ("DRAExtendedResource", GA, True, True),
    ("DRAFractionalCapacityRange", BETA, False, False),
    ("DRAPrioritizedList", GA, True, True),
    ("DRAWorkloadResourceClaims", BETA, False, False),
    ("DynamicResourceAllocation", GA, True, True),
    ("GangScheduling", ALPHA, False, False),
    ("GenericWorkload", BETA, False, False),
    ("InPlacePodVerticalScalingSchedulerPreemption", ALPHA, False, False),
    ("InterPodAffinityHostnameFastPath", ALPHA, False, False),
    ("MatchLabelKeysInPodTopologySpread", BETA, True, False),
    ("NodeDeclaredFeatures", GA, True, True),
    ("NominatedNodeNameForExpectation", BETA, True, False),
    ("OpportunisticBatching", BETA, True, False),
    ("PodGroupPreemptionPolicy", ALPHA, False, False),
    ("SchedulerAsyncAPICalls", BETA, False, False),
    ("SchedulerAsyncPreemption", BETA, True, False),
    ("SchedulerPopFromBackoffQ", BETA, True, False),
    ("SchedulerPreQueueingHints", ALPHA, False, False),
    ("SchedulerQueueingHints", GA, True, True),
    ("StorageCapacityScoring", BETA, True, False),
    ("TaintTolerationComparisonOperators", ALPHA, False, False),
    ("TopologyAwareWorkloadScheduling", ALPHA, False, False),
    ("VolumeLimitScaling", BETA, True, False),
    ("WorkloadAwarePreemption", ALPHA, False, False),
    # component-base, client-go, zpages, the API server's
    ("ComponentFlagz", BETA, True, False),
    ("ComponentStatusz", BETA, True, False),
    ("ContextualLogging", BETA, True, False),
    ("LoggingAlphaOptions", ALPHA, False, False),
    ("LoggingBetaOptions", BETA, True, False),
    ("NativeHistograms", ALPHA, False, False),
    ("WatchListClient", BETA, True, False),
    ("InOrderInformers", GA, True, True),
    ("CoordinatedLeaderElection", BETA, False, False),
]


@pytest.mark.parametrize(("name", "stage", "default", "locked"), TABLE)
def test_gate_table(name: str, stage: str, default: bool, locked: bool) -> None:
    assert GATES[name] == (stage, default, locked)


def test_every_gate_of_the_binary_is_accepted() -> None:
    # kube_features.go alone registers over two hundred; OpenShift's own are not upstream's.
    assert len(GATES) > 240
    assert "RouteExternalCertificate" not in GATES
    # Every gate given at upstream's default, but those aiosched refuses at it.
    given = ",".join(
        f"{name}={'true' if default else 'false'}"
        for name, (_, default, _) in GATES.items()
        if DEFAULTS[name] == default
    )
    assert feature_gates(given) == DEFAULTS


def test_a_v137_manifest_with_unrelated_gates_starts() -> None:
    gates = feature_gates(
        "InPlacePodVerticalScaling=true,ContextualLogging=false,WatchListClient=false,"
        "KubeletPSI=true,UserNamespacesSupport=true,OpportunisticBatching=false"
    )
    assert gates["OpportunisticBatching"] is False
    assert gates["ContextualLogging"] is False


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        # feature_gate_test.go TestFeatureGateSet / TestFeatureGateFlag
        ("testAlpha", "missing bool value for testAlpha"),
        (
            "OpportunisticBatching=maybe",
            "invalid value of OpportunisticBatching=maybe, err: strconv.ParseBool: parsing "
            '"maybe": invalid syntax',
        ),
        (
            "DRAExtendedResource=false",
            "cannot set feature gate DRAExtendedResource to false, feature is locked to true",
        ),
        (
            "DynamicResourceAllocation=false,DRAAdminAccess=false",
            "[cannot set feature gate DynamicResourceAllocation to false, feature is locked to "
            "true, cannot set feature gate DRAAdminAccess to false, feature is locked to true]",
        ),
        (
            "GangScheduling=true",
            "GangScheduling is enabled, but depends on features that are disabled: "
            "[GenericWorkload]",
        ),
        (
            "GenericWorkload=true,CompositePodGroup=true",
            "CompositePodGroup is enabled, but depends on features that are disabled: "
            "[TopologyAwareWorkloadScheduling]",
        ),
    ],
)
def test_upstream_messages(flag: str, message: str) -> None:
    with pytest.raises(FeatureGateError) as caught:
        feature_gates(flag)
    assert str(caught.value) == message


def test_an_unknown_gate_is_only_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        gates = feature_gates("NoSuchGate=true,OpportunisticBatching=false")
    assert "unrecognized feature gate: NoSuchGate" in caplog.messages
    assert "NoSuchGate" not in gates
    assert gates["OpportunisticBatching"] is False


def test_empty_items_and_spaces_are_ignored() -> None:
    assert feature_gates(" OpportunisticBatching = false ,,")["OpportunisticBatching"] is False


def test_all_alpha_sets_every_alpha_gate_not_given() -> None:
    gates = feature_gates("AllAlpha=false,InterPodAffinityHostnameFastPath=true")
    assert gates["InterPodAffinityHostnameFastPath"] is True
    assert gates["LoggingAlphaOptions"] is False
    # Turning every alpha gate on turns on gates whose beta dependency stays off.
    with pytest.raises(FeatureGateError, match="GangScheduling is enabled, but depends on"):
        feature_gates("AllAlpha=true")


def test_all_beta_off_is_accepted_every_beta_gate_being_honoured_off() -> None:
    values = feature_gates("AllBeta=false")
    assert values["PodLevelResources"] is False
    assert values["InPlacePodLevelResourcesVerticalScaling"] is False
    assert not any(values[name] for name, (stage, _, _) in GATES.items() if stage == BETA)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("PodLevelResources=false,InPlacePodLevelResourcesVerticalScaling=false", None),
        ("InPlacePodLevelResourcesVerticalScaling=false", None),
        (
            # kube_features.go: the resize of pod-level resources needs them
            "PodLevelResources=false",
            "InPlacePodLevelResourcesVerticalScaling is enabled, but depends on features that "
            "are disabled: [PodLevelResources]",
        ),
    ],
)
def test_pod_level_resources_gates_off(text: str, error: str | None) -> None:
    """Both gates are honoured at both values now; upstream's dependency check still applies."""
    if error is None:
        values = feature_gates(text)
        for item in text.split(","):
            name, _, value = item.partition("=")
            assert values[name] is (value == "true")
            assert refusal(name, False) is None
    else:
        with pytest.raises(FeatureGateError) as caught:
            feature_gates(text)
        assert str(caught.value) == error


@pytest.mark.parametrize("name", sorted(NOT_HONOURED))
def test_refused_values_name_what_is_missing(name: str) -> None:
    entry = NOT_HONOURED[name]
    message = refusal(name, entry.value)
    assert message is not None
    assert entry.missing in message
    # aiosched starts with the value it honours.
    assert DEFAULTS[name] is (not entry.value)
    assert refusal(name, not entry.value) is None
    # Given on the command line, it stops the start (by upstream's dependency check first
    # where a gate on by default needs it, e.g. PodLevelResources).
    value = "true" if entry.value else "false"
    with pytest.raises(FeatureGateError, match=f"{name}"):
        feature_gates(f"GenericWorkload=true,TopologyAwareWorkloadScheduling=true,{name}={value}")


def test_no_gate_on_by_default_upstream_is_refused_on_unless_listed() -> None:
    """The gates aiosched starts at another value than upstream are exactly those it refuses
    at upstream's default (docs/feature-gates.md lists them)."""
    differing = {name for name, (_, default, _) in GATES.items() if DEFAULTS[name] != default}
    assert differing == {name for name in differing if refusal(name, GATES[name][1])}


def test_component_defaults_agree_with_the_table() -> None:
    """Each module that reads a gate starts from the table's value (or refuses it)."""
    modules = (DRA_GATE_DEFAULTS, WORKLOAD_GATE_DEFAULTS, ZPAGES_GATE_DEFAULTS, NDF_GATE_DEFAULTS)
    for defaults in modules:
        for name, value in defaults.items():
            assert DEFAULTS[name] == value, name


def test_feature_enabled_metric() -> None:
    metrics = SchedulerMetrics()
    metrics.set_feature_info(feature_info(feature_gates("OpportunisticBatching=false")))
    text = metrics.exposition().decode()
    assert 'kubernetes_feature_enabled{name="OpportunisticBatching",stage="BETA"} 0.0' in text
    assert 'kubernetes_feature_enabled{name="DRAExtendedResource",stage=""} ' in text
    assert 'kubernetes_feature_enabled{name="AllAlpha",stage="ALPHA"} 0.0' in text
    assert 'kubernetes_feature_enabled{name="SchedulerQueueingHints",stage=""} 1.0' in text
    assert text.count("kubernetes_feature_enabled{") == len(GATES)


def test_help_lists_what_is_honoured_and_refused() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    help_text = " ".join(parser.format_help().split())
    for name in sorted(HONOURED_SCHEDULER_GATES):
        if GATES[name][2]:
            continue  # locked: one value only, upstream's
        assert name in help_text, name
    assert "CoordinatedLeaderElection=true (beta, upstream default false)" in help_text
    assert "SchedulerAsyncAPICalls=true" not in help_text  # honoured at both values
