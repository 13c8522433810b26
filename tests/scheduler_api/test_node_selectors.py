"""Node selectors (label selectors: tests/apimachinery). Cases follow upstream's
component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity_test.go (TestNodeSelectorMatch,
TestPreferredSchedulingTermsScore)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.errors import MalformedObject
from scheduler.api.selectors import NodeSelector


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def term(*exprs: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"matchExpressions": list(exprs)}
    if fields is not None:
        result["matchFields"] = fields
    return result


NODE_LABELS = {"foo": "bar", "num": "5", "big": "9223372036854775807", "word": "five"}


@pytest.mark.parametrize(
    ("terms", "expected"),
    [
        ([], False),  # no terms: nothing matches
        ([{}], False),  # an empty term matches nothing
        ([{"matchExpressions": [], "matchFields": []}], False),
        ([term(expr("foo", "In", "bar"))], True),
        ([term(expr("foo", "In", "baz"))], False),
        ([term(expr("foo", "NotIn", "baz"))], True),
        ([term(expr("missing", "NotIn", "baz"))], True),
        ([term(expr("foo", "Exists"))], True),
        ([term(expr("foo", "DoesNotExist"))], False),
        # terms are ORed
        ([term(expr("foo", "In", "baz")), term(expr("num", "Exists"))], True),
        # requirements in a term are ANDed
        ([term(expr("foo", "In", "bar"), expr("num", "In", "6"))], False),
        ([term(expr("num", "Gt", "4"))], True),
        ([term(expr("num", "Gt", "5"))], False),
        ([term(expr("num", "Lt", "6"))], True),
        ([term(expr("num", "Lt", "5"))], False),
        # "-1" is an integer but not a valid label value: NewRequirement refuses it.
        ([term(expr("num", "Gt", "-1"))], False),
        ([term(expr("big", "Gt", "9223372036854775806"))], True),
        ([term(expr("word", "Gt", "1"))], False),  # non-integer label: no match
        ([term(expr("missing", "Gt", "1"))], False),
        ([term(expr("missing", "Lt", "1"))], False),
        # Parse errors make the term match nothing; other terms still count.
        ([term(expr("num", "Gt", "five"))], False),
        ([term(expr("num", "Gt", "1", "2"))], False),
        ([term(expr("num", "Lt"))], False),
        ([term(expr("foo", "Bogus", "bar"))], False),
        ([term(expr("foo", "In"))], False),
        ([term(expr("foo", "Bogus", "bar")), term(expr("foo", "In", "bar"))], True),
        # matchFields: metadata.name only, In / NotIn with one value.
        ([term(fields=[expr("metadata.name", "In", "node-a")])], True),
        ([term(fields=[expr("metadata.name", "In", "node-b")])], False),
        ([term(fields=[expr("metadata.name", "NotIn", "node-b")])], True),
        ([term(fields=[expr("metadata.name", "NotIn", "node-a")])], False),
        ([term(fields=[expr("metadata.name", "In", "node-a", "node-b")])], False),
        ([term(fields=[expr("metadata.name", "Exists")])], False),
        ([term(fields=[expr("metadata.uid", "In", "node-a")])], False),
        (
            [term(expr("foo", "In", "bar"), fields=[expr("metadata.name", "In", "node-a")])],
            True,
        ),
        (
            [term(expr("foo", "In", "baz"), fields=[expr("metadata.name", "In", "node-a")])],
            False,
        ),
    ],
)
def test_node_selector_matches(terms: list[dict[str, Any]], expected: bool) -> None:
    selector = NodeSelector.from_dict({"nodeSelectorTerms": terms})
    assert selector.matches(NODE_LABELS, "node-a") is expected


def test_node_selector_reports_parse_errors() -> None:
    selector = NodeSelector.from_dict(
        {"nodeSelectorTerms": [term(expr("num", "Gt", "x")), term(expr("a", "In", "b"))]},
        "spec.affinity",
    )
    (error,) = selector.parse_errors
    assert error.startswith("spec.affinity.nodeSelectorTerms[0].matchExpressions[0]")
    assert "must be an integer" in error


@pytest.mark.parametrize(
    "bad",
    [
        {"nodeSelectorTerms": "x"},
        {"nodeSelectorTerms": ["x"]},
        {"nodeSelectorTerms": [{"matchExpressions": [{"key": 1, "operator": "In"}]}]},
        {"nodeSelectorTerms": [{"matchExpressions": [expr("a", "In", 1)]}]},  # type: ignore[arg-type]
    ],
)
def test_node_selector_wrong_types_raise(bad: dict[str, Any]) -> None:
    with pytest.raises(MalformedObject, match="nodeSelectorTerms"):
        NodeSelector.from_dict(bad)


def test_none_node_selector_matches_nothing() -> None:
    assert not NodeSelector.from_dict(None).matches({}, "n")
