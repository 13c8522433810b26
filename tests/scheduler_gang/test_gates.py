"""The workload-aware scheduling feature gates: upstream's defaults at v1.37 (all off),
GangScheduling needing GenericWorkload, TopologyAwareWorkloadScheduling and
WorkloadAwarePreemption honoured both ways (the latter needing GangScheduling)."""

from __future__ import annotations

import argparse

import pytest

from scheduler.app.commands.upstream_flags import FEATURE_GATES, feature_gates
from scheduler.cycle.podgroup_placement import topology_aware_enabled
from scheduler.plugins.gangscheduling.features import (
    gang_scheduling_enabled,
    unsupported_gate_value,
    workload_aware_preemption_enabled,
)


def test_defaults_are_upstreams() -> None:
    assert {
        name: FEATURE_GATES[name]
        for name in (
            "GenericWorkload",
            "GangScheduling",
            "TopologyAwareWorkloadScheduling",
            "WorkloadAwarePreemption",
        )
    } == dict.fromkeys(
        (
            "GenericWorkload",
            "GangScheduling",
            "TopologyAwareWorkloadScheduling",
            "WorkloadAwarePreemption",
        ),
        False,
    )


@pytest.mark.parametrize(
    "flag, enabled",
    [
        ("", False),
        ("GenericWorkload=true", False),
        ("GenericWorkload=true,GangScheduling=true", True),
    ],
)
def test_gang_scheduling_needs_generic_workload(flag: str, enabled: bool) -> None:
    assert gang_scheduling_enabled(feature_gates(flag)) is enabled


@pytest.mark.parametrize(
    "flag, message",
    [
        # The gates' dependency table (kube_features.go), checked as featuregate's Set does.
        (
            "GangScheduling=true",
            "GangScheduling is enabled, but depends on features that are disabled: "
            "[GenericWorkload]",
        ),
        (
            "GenericWorkload=true,WorkloadAwarePreemption=true",
            "WorkloadAwarePreemption is enabled, but depends on features that are disabled: "
            "[GangScheduling]",
        ),
        (
            "TopologyAwareWorkloadScheduling=true",
            "TopologyAwareWorkloadScheduling is enabled, but depends on features that are "
            "disabled: [GenericWorkload]",
        ),
    ],
)
def test_a_gate_without_its_dependencies_is_refused(flag: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        feature_gates(flag)
    assert str(caught.value) == message
    # Handed over without the flag parser (tests, check-config), the checks still hold.
    gates = dict.fromkeys((name for name, _ in (item.split("=") for item in flag.split(","))), True)
    assert gang_scheduling_enabled(gates) is False
    assert workload_aware_preemption_enabled(gates) is False


@pytest.mark.parametrize("value", [True, False])
def test_workload_aware_preemption_is_accepted_both_ways(value: bool) -> None:
    gates = feature_gates(
        f"GenericWorkload=true,GangScheduling=true,WorkloadAwarePreemption={str(value).lower()}"
    )
    assert gates["WorkloadAwarePreemption"] is value
    assert unsupported_gate_value("WorkloadAwarePreemption", value) is None


@pytest.mark.parametrize(
    "flag, enabled",
    [
        ("GenericWorkload=true,GangScheduling=true", False),  # off by default (alpha)
        ("GenericWorkload=true,GangScheduling=true,WorkloadAwarePreemption=true", True),
    ],
)
def test_workload_aware_preemption_needs_gang_scheduling(flag: str, enabled: bool) -> None:
    assert workload_aware_preemption_enabled(feature_gates(flag)) is enabled


def test_an_unknown_gate_is_only_warned_about() -> None:
    # featuregate's unsafeSetFromMap: "unrecognized feature gate", a warning since v1.31.
    assert "NoSuchGate" not in feature_gates("NoSuchGate=true")


@pytest.mark.parametrize("value", [True, False])
def test_topology_aware_workload_scheduling_is_honoured_both_ways(value: bool) -> None:
    gates = feature_gates(
        f"GenericWorkload=true,TopologyAwareWorkloadScheduling={str(value).lower()}"
    )
    assert gates["TopologyAwareWorkloadScheduling"] is value
    assert topology_aware_enabled(gates) is value
    assert topology_aware_enabled({}) is False  # upstream's default at v1.37 (alpha)
