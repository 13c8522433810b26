"""DRA CEL selectors cannot exhaust the scheduler's memory (test_kubesim_limits.py shows
kubesim refusing at admission an expression estimated over the cost limit): evaluation charges
what an expression builds by its size (cel-go's StringTraversalCostFactor), so doubling a
string 23 times ends in "actual cost limit exceeded" with a few megabytes, not hundreds.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest

from scheduler.plugins.dynamicresources.cel import (
    COST_LIMIT_EXCEEDED,
    CelRuntimeError,
    compile_selector,
)


def doubling(times: int) -> str:
    """cel.bind doubling a 28-byte string `times` times: 28 * 2**times bytes."""
    inner = f"size(s{times}) > 0"
    for i in range(times, 0, -1):
        inner = f"cel.bind(s{i}, s{i - 1} + s{i - 1}, {inner})"
    return f"cel.bind(s0, '{'a' * 28}', {inner})"


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
