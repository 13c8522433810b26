"""DynamicResourcesArgs (upstream's ValidateDynamicResourcesArgs and defaults), `check-config`
accepting and rejecting them, and the DRA feature gates of `--feature-gates` (upstream's
defaults at v1.36; values aiosched cannot honour refused with a clear message)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from scheduler.app.cli import main
from scheduler.app.commands.upstream_flags import FEATURE_GATES, feature_gates
from scheduler.framework.registry import ArgsError
from scheduler.plugins.dynamicresources.args import (
    DynamicResourcesArgs,
    decode_dynamic_resources_args,
)
from scheduler.plugins.dynamicresources.features import DRA_GATES, Features

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def test_defaults() -> None:
    args = decode_dynamic_resources_args(None)
    assert (args.filter_timeout, args.binding_timeout) == (10.0, None)
    assert args.to_config() == {"filterTimeout": "10s"}
    # With DRASchedulerFilterTimeout off there is no filterTimeout at all.
    off = decode_dynamic_resources_args(None, features=Features(filter_timeout=False))
    assert off.filter_timeout is None and off.to_config() == {}


@pytest.mark.parametrize(
    ("raw", "features", "message"),
    [
        ({"filterTimeout": "-1s"}, Features(),
         'filterTimeout: Invalid value: "-1s": must be zero or positive'),
        ({"filterTimeout": "5s"}, Features(filter_timeout=False),
         "filterTimeout: Forbidden: DRASchedulingFilterTimeout feature gate is disabled"),
        ({"bindingTimeout": "30s"}, Features(),
         "bindingTimeout: Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus "
         "feature gate is disabled"),
        ({"bindingTimeout": "500ms"}, Features(device_binding_conditions=True),
         'bindingTimeout: Invalid value: "500ms": must be at least 1 second'),
        ({"filterTimeout": "soon"}, Features(), "filterTimeout: time: invalid duration 'soon'"),
        ({"bogus": 1}, Features(), "bogus: unknown field"),
    ],
)  # fmt: skip
def test_validation_messages(raw: dict[str, object], features: Features, message: str) -> None:
    with pytest.raises(ArgsError) as err:
        decode_dynamic_resources_args(raw, features=features)
    assert str(err.value) == message


def test_valid_values() -> None:
    args = decode_dynamic_resources_args({"filterTimeout": "0s"})
    assert args.filter_timeout == 0.0
    on = Features(device_binding_conditions=True)
    args = decode_dynamic_resources_args({"bindingTimeout": "1m"}, features=on)
    assert args.binding_timeout == 60.0
    assert args.to_config() == {"filterTimeout": "10s", "bindingTimeout": "1m"}


def test_plugin_holds_args_to_the_running_gates() -> None:
    from scheduler.testing import build_framework, handle_deps

    deps = handle_deps()
    deps.feature_gates = {"DRASchedulerFilterTimeout": False}
    given = DynamicResourcesArgs(5.0, None, "5s", "", True)
    with pytest.raises(ArgsError, match="DRASchedulingFilterTimeout feature gate is disabled"):
        build_framework(["DynamicResources"], deps, args={"DynamicResources": given})
    # A default (not written) filterTimeout is no error with the gate off: it is not used.
    framework = build_framework(
        ["DynamicResources"], deps, args={"DynamicResources": DynamicResourcesArgs()}
    )
    assert framework.plugins["DynamicResources"].filter_timeout == 0.0


def _check_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: object
) -> tuple[int, str, str]:
    file = tmp_path / "dra.yaml"
    file.write_text(
        HEADER
        + yaml.safe_dump(
            {"profiles": [{"schedulerName": "a",
                           "pluginConfig": [{"name": "DynamicResources", "args": args}]}]}
        )
    )  # fmt: skip
    code = main(["check-config", str(file)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_check_config_prints_dynamic_resources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _check_config(tmp_path, capsys, {"filterTimeout": "30s"})
    assert (code, err) == (0, "")
    profile = yaml.safe_load(out)["profiles"][0]
    assert profile["pluginConfig"]["DynamicResources"] == {"filterTimeout": "30s"}


def test_check_config_rejects_bad_args(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _check_config(tmp_path, capsys, {"filterTimeout": "-2s"})
    assert (code, out) == (1, "")
    assert (
        'profiles[0].pluginConfig[0].args.filterTimeout: Invalid value: "-2s": must be zero or '
        "positive"
    ) in err


def test_feature_gate_defaults() -> None:
    # Only the DRA gates (the workload-aware ones: tests/scheduler_gang/test_gates.py).
    dra = {name: value for name, value in FEATURE_GATES.items() if name in DRA_GATES}
    assert dra == {
        "DynamicResourceAllocation": True,
        "DRAAdminAccess": True,
        "DRAPrioritizedList": True,
        "DRASchedulerFilterTimeout": True,
        "DRAResourceClaimDeviceStatus": True,
        "DRADeviceTaints": True,
        "DRADeviceTaintRules": True,  # GA in v1.37
        "DRAPartitionableDevices": True,
        "DRAConsumableCapacity": True,
        "DRAExtendedResource": True,
        "DRADeviceBindingConditions": True,
    }  # fmt: skip


def test_feature_gates_honoured_values_are_accepted() -> None:
    gates = feature_gates("DRADeviceTaints=false")
    assert gates["DRADeviceTaints"] is False
    features = Features.from_gates(gates).allocator_features()
    assert features.prioritized_list is True and features.device_taints is False
    assert features.partitionable_devices is True
    assert features.consumable_capacity is True
    for value in (True, False):
        gates = feature_gates(f"DRAConsumableCapacity={str(value).lower()}")
        assert Features.from_gates(gates).allocator_features().consumable_capacity is value
        gates = feature_gates(f"DRADeviceTaintRules={str(value).lower()}")
        assert Features.from_gates(gates).device_taint_rules is value
        gates = feature_gates(f"DRADeviceBindingConditions={str(value).lower()}")
        assert Features.from_gates(gates).binding_conditions is value


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("DynamicResourceAllocation=false",
         "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true"),
        ("DRAAdminAccess=false",
         "cannot set feature gate DRAAdminAccess to false, feature is locked to true"),
        # GA and locked in v1.37.
        ("DRAExtendedResource=false",
         "cannot set feature gate DRAExtendedResource to false, feature is locked to true"),
        ("DRAPrioritizedList=false",
         "cannot set feature gate DRAPrioritizedList to false, feature is locked to true"),
    ],
)  # fmt: skip
def test_feature_gates_refused(flag: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as err:
        feature_gates(flag)
    assert message in str(err.value)
