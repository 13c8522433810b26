"""Consumable capacity's fields as kubesim validates them (upstream's
pkg/apis/resource/validation/validation.go: validateMultiAllocatableDeviceCapacity,
validateRequestPolicy*, validateDeviceConstraint, validateUID; paths and messages as upstream
writes them)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim.validation import validate

SLICE: dict[str, Any] = {
    "metadata": {"name": "slice"},
    "spec": {"driver": "driver.example.com", "nodeName": "worker",
             "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 1},
             "devices": [{"name": "gpu-0"}]},
}  # fmt: skip
DEV = "spec.devices[0].capacity[memory].requestPolicy"


def errors(kind: str, obj: dict[str, Any]) -> list[str]:
    return [cause.error() for cause in validate(kind, obj, None)]


def slice_with(policy: dict[str, Any] | None, *, shared: bool = True, value: str = "80Gi"):
    obj = copy.deepcopy(SLICE)
    capacity: dict[str, Any] = {"value": value}
    if policy is not None:
        capacity["requestPolicy"] = policy
    device = obj["spec"]["devices"][0]
    device["capacity"] = {"memory": capacity}
    if shared:
        device["allowMultipleAllocations"] = True
    return obj


CASES = [
    ("no-policy", slice_with(None), []),
    ("range", slice_with({"default": "8Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}), []),
    ("valid-values", slice_with({"default": "10Gi", "validValues": ["10Gi", "20Gi", "40Gi"]}), []),
    ("policy-on-exclusive-device", slice_with({"default": "1Gi"}, shared=False),
     [f"{DEV}: Forbidden: allowMultipleAllocations must be true"]),
    ("both-policies",
     slice_with({"default": "1Gi", "validValues": ["1Gi"], "validRange": {"min": "1Gi"}}),
     [f'{DEV}: Forbidden: exactly one policy can be specified, cannot specify "validValues" and '
      '"validRange" at the same time']),
    ("values-without-default", slice_with({"validValues": ["1Gi"]}),
     [f"{DEV}.default: Required value: required when validValues is defined"]),
    ("range-without-default", slice_with({"validRange": {"min": "1Gi"}}),
     [f"{DEV}.default: Required value: required when validRange is defined"]),
    ("range-without-min", slice_with({"default": "1Gi", "validRange": {"max": "2Gi"}}),
     [f"{DEV}.validRange.min: Required value: required when validRange is defined"]),
    ("values-unsorted-and-too-large",
     slice_with({"default": "1Gi", "validValues": ["2Gi", "1Gi", "100Gi"]}),
     [f'{DEV}.validValues[1]: Invalid value: "1Gi": values must be sorted in ascending order',
      f'{DEV}.validValues[2]: Invalid value: "100Gi": option is larger than capacity value: '
      "80Gi"]),
    ("default-not-a-valid-value", slice_with({"default": "3Gi", "validValues": ["1Gi", "2Gi"]}),
     [f'{DEV}.validValues: Invalid value: "3Gi": default value is not valid according to the '
      "requestPolicy"]),
    ("range-bounds",
     slice_with({"default": "1Gi", "validRange": {"min": "2Gi", "max": "100Gi"}}),
     [f'{DEV}.validRange.min: Invalid value: "1Gi": default is less than min: 2Gi',
      f'{DEV}.validRange.max: Invalid value: "100Gi": max is larger than capacity value: 80Gi']),
    ("range-step",
     slice_with({"default": "3", "validRange": {"min": "2", "step": "2", "max": "4"}}, value="4"),
     [f'{DEV}.validRange.step: Invalid value: "3": value is not a multiple of a given step (2) '
      "from (2)"]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "obj", "want"), CASES, ids=[c[0] for c in CASES])
def test_capacity_request_policy(name: str, obj: dict[str, Any], want: list[str]) -> None:
    assert errors("ResourceSlice", obj) == want


def _claim(constraint: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "claim", "namespace": "default"},
        "spec": {"devices": {
            "requests": [{"name": "req-0", "exactly": {
                "deviceClassName": "class", "allocationMode": "ExactCount", "count": 1,
                "capacity": {"requests": {"memory": "10Gi"}}}}],
            "constraints": [constraint]}},
    }  # fmt: skip


def test_distinct_attribute_constraint() -> None:
    assert errors("ResourceClaim", _claim({"distinctAttribute": "driver.example.com/numa"})) == []
    assert errors("ResourceClaim", _claim({"requests": ["req-0"]})) == [
        'spec.devices.constraints[0]: Required value: exactly one of "matchAttribute" or '
        '"distinctAttribute" is required, but multiple fields are set'
    ]


def test_share_id_in_allocation_results() -> None:
    claim = _claim({"distinctAttribute": "driver.example.com/numa"})
    old = copy.deepcopy(claim)
    result = {"request": "req-0", "driver": "driver.example.com", "pool": "pool",
              "device": "gpu-0", "shareID": "AAAAAAAA-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
              "consumedCapacity": {"memory": "10Gi"}}  # fmt: skip
    claim["status"] = {"allocation": {"devices": {"results": [result]}}}
    got = [cause.error() for cause in validate("ResourceClaim", claim, old)]
    assert got == [
        "status.allocation.devices.results[0].shareID: Invalid value: "
        '"AAAAAAAA-aaaa-aaaa-aaaa-aaaaaaaaaaaa": uid must be in RFC 4122 normalized form, '
        "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters"
    ]
    result["shareID"] = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
    assert [cause.error() for cause in validate("ResourceClaim", claim, old)] == []


def test_the_simulated_driver_publishes_valid_shareable_gpus() -> None:
    from kubesim.dra import DraOptions, resource_slice

    node = {"metadata": {"name": "node-0", "uid": "u"}}
    published = resource_slice(node, "a100", DraOptions(devices=2, sharing=True))
    assert errors("ResourceSlice", published) == []
    devices = published["spec"]["devices"]
    assert [d["allowMultipleAllocations"] for d in devices] == [True, True]
    assert devices[0]["capacity"]["compute"]["value"] == "1000"
    exclusive = resource_slice(node, "a100", DraOptions(devices=1))
    assert "allowMultipleAllocations" not in exclusive["spec"]["devices"][0]


def test_the_simulated_driver_publishes_valid_devices_with_binding_conditions() -> None:
    from kubesim.dra import BINDING_CONDITION, DraOptions, resource_slice

    node = {"metadata": {"name": "node-0", "uid": "u"}}
    published = resource_slice(node, "a100", DraOptions(devices=1, binding_delay=1.0))
    assert errors("ResourceSlice", published) == []
    assert published["spec"]["devices"][0]["bindingConditions"] == [BINDING_CONDITION]


def test_device_taint_rules() -> None:
    rule: dict[str, Any] = {
        "metadata": {"name": "drain-gpu-0"},
        "spec": {"deviceSelector": {"driver": "gpu.kubesim.io", "pool": "node-0",
                                    "device": "gpu-0"},
                 "taint": {"key": "example.com/maintenance", "effect": "NoSchedule"}},
    }  # fmt: skip
    assert errors("DeviceTaintRule", rule) == []
    rule["spec"]["taint"] = {"key": "example.com/maintenance", "effect": "Sometimes"}
    assert errors("DeviceTaintRule", rule) == [
        'spec.taint.effect: Unsupported value: "Sometimes": supported values: "NoSchedule", '
        '"NoExecute", "None"'
    ]
