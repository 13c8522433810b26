"""DRA CEL selectors cannot exhaust the scheduler: kubesim refuses at admission an expression
whose estimated cost exceeds resourceapi.CELSelectorExpressionMaxCost ("too complex, exceeds
cost limit", as the API server), and evaluation charges what an expression builds by its size
(cel-go's StringTraversalCostFactor), so doubling a string 23 times ends in "actual cost limit
exceeded" with a few megabytes, not hundreds.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Api
from processes import Process, start_cluster, stopping

from scheduler.plugins.dynamicresources.cel import (
    COST_LIMIT_EXCEEDED,
    CelRuntimeError,
    compile_selector,
)

TWENTY = "[" + ", ".join(str(i) for i in range(20)) + "]"


def nested_all(levels: int) -> str:
    expression = "true"
    for level in range(levels):
        expression = f"{TWENTY}.all(x{level}, {expression})"
    return expression


def doubling(times: int) -> str:
    """cel.bind doubling a 28-byte string `times` times: 28 * 2**times bytes."""
    inner = f"size(s{times}) > 0"
    for i in range(times, 0, -1):
        inner = f"cel.bind(s{i}, s{i - 1} + s{i - 1}, {inner})"
    return f"cel.bind(s0, '{'a' * 28}', {inner})"


@pytest.fixture(scope="module")
def kubesim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Process, Api]]:
    workdir: Path = tmp_path_factory.mktemp("cel")
    cluster = start_cluster(workdir)
    with stopping(cluster):
        yield cluster, Api(workdir / "kubeconfig")


def claim(name: str, expression: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.kubesim.io",
            "selectors": [{"cel": {"expression": expression}}],
        }}]}},
    }


@pytest.mark.e2e
def test_kubesim_refuses_a_selector_estimated_over_the_cost_limit(
    kubesim: tuple[Process, Api],
) -> None:
    _, api = kubesim
    path = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
    status, answer = api.call("POST", path, claim("five", nested_all(5)))
    assert status == 422, answer
    assert answer["details"]["causes"] == [{
        "reason": "FieldValueForbidden",
        "message": "Forbidden: too complex, exceeds cost limit",
        "field": "spec.devices.requests[0].exactly.selectors[0].cel.expression",
    }]
    assert api.call("GET", f"{path}/five")[0] == 404  # nothing stored
    status, answer = api.call("POST", path, claim("three", nested_all(3)))
    assert status == 201, answer  # estimated 17,261: under the limit, as upstream


def test_string_doubling_runs_out_of_budget_not_of_memory() -> None:
    compiled = compile_selector(doubling(23))
    assert compiled.error is None
    tracemalloc.start()
    began = time.monotonic()
    try:
        with pytest.raises(CelRuntimeError) as error:
            compiled.device_matches({"device": {}})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(error.value) == COST_LIMIT_EXCEEDED
    assert peak < 32 * 2**20, peak  # unbounded, the string alone would be 235 MB
    assert time.monotonic() - began < 5


def test_a_few_doublings_still_evaluate() -> None:
    assert compile_selector(doubling(8)).device_matches({"device": {}}) is True
