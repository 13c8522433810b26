"""VolumeBinding args and registry entry.

Ported from upstream's pkg/scheduler/apis/config/validation/validation_pluginargs_test.go
(TestValidateVolumeBindingArgs, field paths and error types; upstream's test ignores the
detail text, the messages asserted here are those of validation_pluginargs.go) and
pkg/scheduler/apis/config/v1/defaults_test.go (VolumeBindingArgs defaults).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.registry import ArgsError
from scheduler.plugins.volumebinding import (
    PLUGIN_ENTRY,
    VolumeBinding,
    VolumeBindingArgs,
    decode_volume_binding_args,
)
from scheduler.plugins.volumebinding.args import (
    DEFAULT_SHAPE,
    UtilizationShapePoint,
    validate_volume_binding_args,
)


def _shape(*points: tuple[int, int]) -> list[dict[str, int]]:
    return [{"utilization": u, "score": s} for u, s in points]


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        # defaults.go: bindTimeoutSeconds 600 when unset; no shape with the gate off
        (None, VolumeBindingArgs(600, None)),
        ({}, VolumeBindingArgs(600, None)),
        ({"bindTimeoutSeconds": None}, VolumeBindingArgs(600, None)),
        # "zero is a valid config", "positive value is valid config"
        ({"bindTimeoutSeconds": 0}, VolumeBindingArgs(0, None)),
        ({"bindTimeoutSeconds": 10}, VolumeBindingArgs(10, None)),
        # "[StorageCapacityScoring=off] shape should be nil when the feature is off"
        ({"bindTimeoutSeconds": 10, "shape": None}, VolumeBindingArgs(10, None)),
        (
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "VolumeBindingArgs",
                "bindTimeoutSeconds": 300,
            },
            VolumeBindingArgs(300, None),
        ),
    ],
)
def test_decode_args(raw: Any, want: VolumeBindingArgs) -> None:
    assert decode_volume_binding_args(raw, storage_capacity_scoring=False) == want
    # Under aiosched's default gates (StorageCapacityScoring on since v1.37) the shape is
    # defaulted (SetDefaults_VolumeBindingArgs), as the registry's decoder does.
    with_default = VolumeBindingArgs(want.bind_timeout_seconds, DEFAULT_SHAPE)
    assert decode_volume_binding_args(raw) == with_default
    assert PLUGIN_ENTRY.decode(raw) == with_default


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        # "negative value is invalid config"
        (
            {"bindTimeoutSeconds": -10},
            "bindTimeoutSeconds",
            "Invalid value: -10: invalid BindTimeoutSeconds, should not be a negative value",
        ),
        # "[StorageCapacityScoring=off] error if the shape is not nil when the feature is off"
        (
            {"bindTimeoutSeconds": 10, "shape": _shape((1, 1), (3, 3))},
            "shape",
            "Invalid value: []config.UtilizationShapePoint{config.UtilizationShapePoint"
            "{Utilization:1, Score:1}, config.UtilizationShapePoint{Utilization:3, Score:3}}: "
            "unexpected field `shape`, remove it or turn on the feature gate "
            "StorageCapacityScoring",
        ),
        # An empty (non-nil) shape is a shape too.
        (
            {"shape": []},
            "shape",
            "Invalid value: []config.UtilizationShapePoint{}: unexpected field `shape`, "
            "remove it or turn on the feature gate StorageCapacityScoring",
        ),
        # Decoding problems name the field.
        ({"bindTimeoutSeconds": "10"}, "bindTimeoutSeconds", "expected an integer, got str"),
        ({"bindTimeoutSeconds": True}, "bindTimeoutSeconds", "expected an integer, got bool"),
        ({"shape": {"utilization": 1}}, "shape", "expected a list, got dict"),
        ({"shape": [1]}, "shape[0]", "expected an object, got int"),
        ({"shape": [{"utilization": "1"}]}, "shape[0].utilization", "expected an integer, got str"),
        ({"shape": [{"util": 1}]}, "shape[0].util", "unknown field"),
        ({"timeout": 1}, "timeout", "unknown field"),
        ({"kind": "Other"}, "kind", 'expected "VolumeBindingArgs", got "Other"'),
    ],
)
def test_invalid_args(raw: Any, path: str, message: str) -> None:
    with pytest.raises(ArgsError) as info:
        decode_volume_binding_args(raw, storage_capacity_scoring=False)
    assert (info.value.path, info.value.message) == (path, message)


def test_storage_capacity_scoring_defaults_the_shape() -> None:
    # defaults.go with StorageCapacityScoring on: [{0, 10}, {100, 0}].
    args = decode_volume_binding_args({}, storage_capacity_scoring=True)
    assert args == VolumeBindingArgs(600, DEFAULT_SHAPE)
    assert (UtilizationShapePoint(0, 10), UtilizationShapePoint(100, 0)) == DEFAULT_SHAPE
    shape = _shape((0, 0), (50, 3), (100, 5))
    assert decode_volume_binding_args({"shape": shape}, storage_capacity_scoring=True).shape == (
        UtilizationShapePoint(0, 0),
        UtilizationShapePoint(50, 3),
        UtilizationShapePoint(100, 5),
    )


@pytest.mark.parametrize(
    ("shape", "path", "message"),
    [
        # "[StorageCapacityScoring=on] shape points must be sorted in increasing order"
        (
            _shape((3, 3), (1, 1)),
            "shape[1].utilization",
            "Invalid value: 1: values must be sorted in increasing order",
        ),
        # duplicated utilization values are not increasing either
        (
            _shape((10, 3), (10, 3)),
            "shape[1].utilization",
            "Invalid value: 10: values must be sorted in increasing order",
        ),
        # "[StorageCapacityScoring=on] shape point: invalid utilization and score": upstream
        # reports shape[0].utilization, shape[1].score, shape[2].score, shape[3].utilization;
        # the first one raises here.
        (
            _shape((-1, 1), (10, -1), (20, 11), (101, 1)),
            "shape[0].utilization",
            "Invalid value: -1: not in valid range [0, 100]",
        ),
        (
            _shape((10, -1), (20, 1)),
            "shape[0].score",
            "Invalid value: -1: not in valid range [0, 10]",
        ),
        (
            _shape(
                (20, 11),
            ),
            "shape[0].score",
            "Invalid value: 11: not in valid range [0, 10]",
        ),
        (
            _shape(
                (101, 1),
            ),
            "shape[0].utilization",
            "Invalid value: 101: not in valid range [0, 100]",
        ),
    ],
)
def test_invalid_shape_with_storage_capacity_scoring(
    shape: list[dict[str, int]], path: str, message: str
) -> None:
    with pytest.raises(ArgsError) as info:
        decode_volume_binding_args(
            {"bindTimeoutSeconds": 10, "shape": shape}, storage_capacity_scoring=True
        )
    assert (info.value.path, info.value.message) == (path, message)


def test_an_empty_shape_is_defaulted_with_the_gate_on() -> None:
    # SetDefaults_VolumeBindingArgs defaults a shape of length 0, so a configuration's empty
    # list never reaches validation; validation alone refuses it:
    # "[StorageCapacityScoring=on] shape should not be empty".
    assert decode_volume_binding_args({"shape": []}).shape == DEFAULT_SHAPE
    with pytest.raises(ArgsError) as info:
        validate_volume_binding_args(VolumeBindingArgs(10, ()), storage_capacity_scoring=True)
    assert (info.value.path, info.value.message) == (
        "shape",
        "Required value: at least one point must be specified",
    )


def test_validate_checks_timeout_first() -> None:
    args = VolumeBindingArgs(-1, (UtilizationShapePoint(5, 1),))
    with pytest.raises(ArgsError) as info:
        validate_volume_binding_args(args, storage_capacity_scoring=True)
    assert info.value.path == "bindTimeoutSeconds"


def test_registry_entry() -> None:
    assert PLUGIN_ENTRY is PLUGIN_ENTRY
    assert PLUGIN_ENTRY.name == "VolumeBinding"
    assert PLUGIN_ENTRY.cls is VolumeBinding
    # PreScore / Score: storage-capacity scoring (skipped with its gate off).
    assert PLUGIN_ENTRY.extension_points == frozenset(
        {"preFilter", "filter", "preScore", "score", "reserve", "preBind"}
    )
