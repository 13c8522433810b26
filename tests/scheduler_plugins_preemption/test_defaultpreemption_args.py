"""DefaultPreemptionArgs defaults and validation, ported from upstream's
pkg/scheduler/apis/config/v1/defaults_test.go (DefaultPreemptionArgs cases) and
pkg/scheduler/apis/config/validation/validation_pluginargs_test.go
(TestValidateDefaultPreemptionArgs), plus decoding errors and the plugin's constructor.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.interface import Handle
from scheduler.framework.registry import ArgsError
from scheduler.plugins.defaultpreemption import (
    PLUGIN_ENTRY,
    DefaultPreemption,
    DefaultPreemptionArgs,
    decode_default_preemption_args,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(None, DefaultPreemptionArgs(10, 100), id="empty"),
        pytest.param({}, DefaultPreemptionArgs(10, 100), id="empty map"),
        pytest.param(
            {"minCandidateNodesPercentage": 50},
            DefaultPreemptionArgs(50, 100),
            id="only percentage set",
        ),
        pytest.param(
            {"minCandidateNodesAbsolute": 500},
            DefaultPreemptionArgs(10, 500),
            id="only absolute set",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 1},
            DefaultPreemptionArgs(0, 1),
            id="explicit zero percentage is kept",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 1, "minCandidateNodesAbsolute": 0},
            DefaultPreemptionArgs(1, 0),
            id="explicit zero absolute is kept",
        ),
        pytest.param(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "DefaultPreemptionArgs",
                "minCandidateNodesPercentage": 100,
                "minCandidateNodesAbsolute": 0,
            },
            DefaultPreemptionArgs(100, 0),
            id="typed, upper bound",
        ),
    ],
)
def test_defaults(raw: Any, expected: DefaultPreemptionArgs) -> None:
    assert decode_default_preemption_args(raw) == expected
    assert PLUGIN_ENTRY.decode(raw) == expected


@pytest.mark.parametrize(
    ("raw", "path", "message"),
    [
        pytest.param(
            {"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": 0},
            "minCandidateNodesPercentage",
            "Invalid value: -1: not in valid range [0, 100]",
            id="negative minCandidateNodesPercentage",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 900, "minCandidateNodesAbsolute": 1},
            "minCandidateNodesPercentage",
            "Invalid value: 900: not in valid range [0, 100]",
            id="minCandidateNodesPercentage over 100",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 20, "minCandidateNodesAbsolute": -1},
            "minCandidateNodesAbsolute",
            "Invalid value: -1: not in valid range [0, inf)",
            id="negative minCandidateNodesAbsolute",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "minCandidateNodesPercentage",
            "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
            id="all zero",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": -1},
            "minCandidateNodesPercentage",
            "Invalid value: -1: not in valid range [0, 100]",
            id="both negative (first error)",
        ),
        pytest.param({"minCandidateNodes": 1}, "minCandidateNodes", "unknown field", id="unknown"),
        pytest.param(
            {"kind": "NodeAffinityArgs"},
            "kind",
            'expected "DefaultPreemptionArgs", got "NodeAffinityArgs"',
            id="wrong kind",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": "10"},
            "minCandidateNodesPercentage",
            "expected an integer, got str",
            id="string",
        ),
        pytest.param(
            {"minCandidateNodesAbsolute": True},
            "minCandidateNodesAbsolute",
            "expected an integer, got bool",
            id="bool",
        ),
    ],
)
def test_validation(raw: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ArgsError) as caught:
        decode_default_preemption_args(raw)
    assert (caught.value.path, caught.value.message) == (path, message)


def test_plugin_constructor_validates_args() -> None:
    handle: Handle = None  # type: ignore[assignment]  # never used by the constructor
    with pytest.raises(ArgsError):
        DefaultPreemption(DefaultPreemptionArgs(0, 0), handle)
    assert DefaultPreemption(None, handle).args == DefaultPreemptionArgs()
    # PostFilter, and PodGroupPostFilter (workload-aware preemption) as upstream's plugin.
    assert PLUGIN_ENTRY.extension_points == frozenset({"postFilter", "podGroupPostFilter"})


@pytest.mark.parametrize(
    ("percentage", "absolute", "num_nodes", "expected"),
    [
        pytest.param(10, 100, 10, 10, id="absolute above the node count: all nodes"),
        pytest.param(10, 100, 5000, 500, id="percentage wins"),
        pytest.param(10, 100, 500, 100, id="absolute wins"),
        pytest.param(40, 1, 5, 2, id="40% of 5"),
        pytest.param(40, 2, 5, 2, id="40% of 5, at least 2"),
        pytest.param(0, 1, 50, 1, id="no percentage"),
        pytest.param(100, 0, 7, 7, id="everything"),
        pytest.param(1, 0, 50, 0, id="rounds down"),
    ],
)
def test_calculate_num_candidates(
    percentage: int, absolute: int, num_nodes: int, expected: int
) -> None:
    handle: Handle = None  # type: ignore[assignment]
    plugin = DefaultPreemption(DefaultPreemptionArgs(percentage, absolute), handle)
    assert plugin.calculate_num_candidates(num_nodes) == expected


def test_registers_no_events() -> None:
    handle: Handle = None  # type: ignore[assignment]
    assert DefaultPreemption(None, handle).events_to_register() == ()
