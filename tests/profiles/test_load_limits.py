"""Deeply nested documents are refused with one error naming the file, never a RecursionError."""

from __future__ import annotations

from pathlib import Path

import pytest

from profiles.errors import ConfigInvalidError
from profiles.load import MAX_NESTING_DEPTH, parse_text

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def nested_args(depth: int) -> str:
    """A profile whose plugin args nest ``depth`` levels below the document (flow style)."""
    # The document, profiles, the profile, pluginConfig and the entry are 5 levels.
    inner = "{a: " * (depth - 5) + "1" + "}" * (depth - 5)
    return HEADER + f"profiles: [{{pluginConfig: [{{name: X, args: {inner}}}]}}]\n"


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 5000 + "]" * 5000,  # deeper than PyYAML can recurse
        HEADER + "x: " + "{a: " * 900 + "1" + "}" * 900,  # PyYAML copes; the decoder would not
        nested_args(MAX_NESTING_DEPTH + 1),
    ],
    ids=["5000-lists", "900-mappings", "limit+1"],
)
def test_too_deep_is_one_error(text: str) -> None:
    with pytest.raises(ConfigInvalidError) as error:
        parse_text(text, "cfg.yaml")
    assert str(error.value) == "cfg.yaml: nested more than 100 levels deep"


def test_at_the_limit_is_decoded() -> None:
    spec = parse_text(nested_args(MAX_NESTING_DEPTH), "cfg.yaml")
    assert spec.profiles[0].plugin_config[0].name == "X"


def test_alias_bomb_is_refused_as_go_yaml_refuses_it() -> None:
    """Nine levels of ten aliases expand to 10**9 strings: refused after a few thousand steps
    with go-yaml's message, never walked (tests/security checks the same on a live scheduler)."""
    levels = ["a0: &a0 [" + ", ".join(["x"] * 10) + "]"]
    for i in range(1, 9):
        levels.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    with pytest.raises(ConfigInvalidError) as error:
        parse_text(HEADER + "\n".join(levels) + "\n", "cfg.yaml")
    assert str(error.value) == (
        "cfg.yaml: not valid YAML/JSON: document contains excessive aliasing"
    )


def test_a_few_aliases_are_decoded() -> None:
    """Aliases as people use them (one args block shared by two profiles) still load."""
    text = HEADER + (
        "profiles:\n"
        "- schedulerName: a\n"
        "  pluginConfig: &shared [{name: NodeResourcesFit, args: {scoringStrategy: "
        "{type: MostAllocated}}}]\n"
        "- schedulerName: b\n"
        "  pluginConfig: *shared\n"
    )
    spec = parse_text(text, "cfg.yaml")
    assert [p.plugin_config[0].name for p in spec.profiles] == ["NodeResourcesFit"] * 2


def test_a_value_is_quoted_by_an_excerpt() -> None:
    """An error quotes at most a bounded excerpt of the value it refuses."""
    with pytest.raises(ConfigInvalidError) as error:
        parse_text(HEADER + "parallelism: [" + ", ".join(["12345678"] * 50_000) + "]\n")
    assert len(str(error.value)) < 300
    assert "expected an integer, got list [12345678, 12345678, 12345678, 12345678, ...]" in str(
        error.value
    )


def test_a_file_over_the_size_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    from profiles.api import load_config
    from profiles.load import MAX_CONFIG_BYTES

    big = tmp_path / "big.yaml"
    big.write_text(HEADER + "#" * (MAX_CONFIG_BYTES + 10) + "\n")
    with pytest.raises(ConfigInvalidError) as error:
        load_config(big, {})
    assert str(error.value) == (
        f"{big}: the file is {big.stat().st_size} bytes, more than the 1048576 allowed"
    )
