"""bench.suggest: "did you mean" for an unknown workload, instead of every name on one line."""

from __future__ import annotations

import pytest

from bench.suggest import close_matches, unknown_workload_message
from bench.workloads import WORKLOADS, UnknownWorkload, resolve


@pytest.mark.parametrize(
    ("typed", "suggested"),
    [
        ("SchedulingBasik/500Nodes", ["SchedulingBasic/500Nodes"]),
        ("schedulingbasic/500nodes", ["SchedulingBasic/500Nodes"]),  # only the case differs
        ("SchedulingBasic", ["SchedulingBasic/"]),  # the test: every size of it
        ("TopologySpreadin/", ["TopologySpreading/"]),
    ],
)
def test_close_names_are_suggested(typed: str, suggested: list[str]) -> None:
    assert close_matches(typed, WORKLOADS)[: len(suggested)] == suggested


def test_a_wrong_size_suggests_the_tests_sizes() -> None:
    matches = close_matches("SchedulingBasic/7Nodes", WORKLOADS)
    assert "SchedulingBasic/5Nodes" in matches
    assert all(m.startswith("SchedulingBasic/") for m in matches)
    assert 1 <= len(matches) <= 4


def test_message_is_kubectls_shape_without_the_whole_list() -> None:
    message = unknown_workload_message("TopologySpreadin/5000Nodes_5000Pods", WORKLOADS)
    assert message == (
        "unknown workload 'TopologySpreadin/5000Nodes_5000Pods'\n"
        "\n"
        "Did you mean this?\n"
        "\tTopologySpreading/5000Nodes_5000Pods\n"
        "\n"
        f"Run 'aiosched bench --list' for the {len(WORKLOADS)} workloads."
    )


def test_nothing_close_gets_only_the_pointer_to_the_list() -> None:
    message = unknown_workload_message("Nonsense", WORKLOADS)
    assert message == (
        f"unknown workload 'Nonsense'\nRun 'aiosched bench --list' for the {len(WORKLOADS)} "
        "workloads."
    )


def test_resolve_raises_the_suggestion() -> None:
    with pytest.raises(UnknownWorkload) as raised:
        resolve(["SchedulingBasic/Smoke", "SchedulingBasic/Smok"])
    text = str(raised.value)
    assert "Did you mean this?\n\tSchedulingBasic/Smoke\n" in text
    assert "SchedulingPodAffinity" not in text  # not every name
