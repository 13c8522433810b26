"""Deeply nested documents are refused with one error naming the file, never a RecursionError."""

from __future__ import annotations

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


def test_alias_bomb_is_walked_by_its_size_not_its_expansion() -> None:
    """Nine levels of ten aliases expand to 10**9 strings; the depth check must not walk them."""
    levels = ["a0: &a0 [" + ", ".join(["x"] * 10) + "]"]
    for i in range(1, 9):
        levels.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    with pytest.raises(ConfigInvalidError) as error:
        parse_text(HEADER + "\n".join(levels) + "\n", "cfg.yaml")
    assert "a8: unknown field" in str(error.value)
