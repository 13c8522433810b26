"""YAML from outside, with bounded cost: a size cap and go-yaml's limit on alias expansion.

A YAML alias refers to a node defined earlier, so a few hundred bytes of nested aliases stand
for billions of values ("billion laughs"). PyYAML builds such a document as shared Python
objects, cheaply, but whatever walks it afterwards (a decoder, an error message quoting a
value, a JSON answer) walks the expansion. Kubernetes decodes YAML with go-yaml, which counts
the nodes it decodes and refuses "document contains excessive aliasing" when too many of them
come from alias expansion (go.yaml.in/yaml/v3/decode.go, allowedAliasRatio); check_aliasing
counts the same way on the composed node graph, before anything is constructed, and stops as
soon as the ratio is exceeded, so the check itself costs at most a few hundred thousand steps.
"""

from __future__ import annotations

import reprlib
from typing import Any

import yaml

#: go-yaml's alias_ratio_range_low and _high: up to 400,000 decoded nodes 99% may come from
#: aliases, from 4,000,000 only 10%, scaled linearly in between.
ALIAS_RATIO_RANGE_LOW = 400_000
ALIAS_RATIO_RANGE_HIGH = 4_000_000
EXCESSIVE_ALIASING = "document contains excessive aliasing"


class DocumentTooLarge(yaml.YAMLError):
    """The text is larger than the caller allows."""


class ExcessiveAliasing(yaml.YAMLError):
    """Too much of the document would come from expanding aliases."""

    def __init__(self) -> None:
        super().__init__(EXCESSIVE_ALIASING)
        self.problem = EXCESSIVE_ALIASING


def allowed_alias_ratio(decoded: int) -> float:
    """go-yaml's allowedAliasRatio."""
    if decoded <= ALIAS_RATIO_RANGE_LOW:
        return 0.99
    if decoded >= ALIAS_RATIO_RANGE_HIGH:
        return 0.10
    span = ALIAS_RATIO_RANGE_HIGH - ALIAS_RATIO_RANGE_LOW
    return 0.99 - 0.89 * ((decoded - ALIAS_RATIO_RANGE_LOW) / span)


def check_aliasing(root: yaml.Node | None) -> None:
    """Raise ExcessiveAliasing when decoding `root` would, as go-yaml's decoder does: every node
    visited counts once per time the expansion reaches it; those reached through an alias (a
    node already visited: PyYAML's composer makes an alias the very node its anchor named)
    count as aliased, and so does everything beneath them."""
    if root is None:
        return
    decoded = aliased = 0
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, through_alias = stack.pop()
        if id(node) in seen:
            through_alias = True
        else:
            seen.add(id(node))
        decoded += 1
        if through_alias:
            aliased += 1
            if (
                aliased > 100
                and decoded > 1000
                and aliased / decoded > allowed_alias_ratio(decoded)
            ):
                raise ExcessiveAliasing
        if isinstance(node, yaml.SequenceNode):
            stack.extend((item, through_alias) for item in reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            for key, value in reversed(node.value):
                stack.append((value, through_alias))
                stack.append((key, through_alias))


def load(
    text: str | bytes, loader: type[yaml.SafeLoader] = yaml.SafeLoader, *, max_bytes: int
) -> Any:
    """One YAML (or JSON) document, refused when longer than `max_bytes` or when it aliases
    excessively (raises yaml.YAMLError, DocumentTooLarge and ExcessiveAliasing included)."""
    size = len(text.encode() if isinstance(text, str) else text)
    if size > max_bytes:
        raise DocumentTooLarge(f"the document is {size} bytes, more than the {max_bytes} allowed")
    parser = loader(text)
    try:
        node = parser.get_single_node()
        check_aliasing(node)
        return None if node is None else parser.construct_document(node)
    finally:
        parser.dispose()


_EXCERPT = reprlib.Repr()
_EXCERPT.maxlevel = 3
_EXCERPT.maxlist = _EXCERPT.maxtuple = _EXCERPT.maxdict = 4
_EXCERPT.maxstring = _EXCERPT.maxother = 80
_EXCERPT.maxlong = 40


def excerpt(value: Any) -> str:
    """repr(value), cut short: an error message quotes at most a few hundred characters of
    what it was given, however large or deeply nested (shared lists are cut, not expanded)."""
    return _EXCERPT.repr(value)
