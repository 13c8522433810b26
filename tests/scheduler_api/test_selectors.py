"""Label and node selectors. Cases follow upstream's
component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity_test.go (TestNodeSelectorMatch,
TestPreferredSchedulingTermsScore) and apimachinery labels/selector_test.go (TestRequirementMatches,
meta/v1 TestLabelSelectorAsSelector)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.errors import MalformedObject
from scheduler.api.selectors import LabelSelector, NodeSelector, parse_int64


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


LABELS = {"foo": "bar", "num": "5", "empty": "", "hostname": "node-a"}


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        (None, LABELS, False),  # nil selector matches nothing
        ({}, LABELS, True),  # empty selector matches everything
        ({}, {}, True),
        ({"matchLabels": {"foo": "bar"}}, LABELS, True),
        ({"matchLabels": {"foo": "baz"}}, LABELS, False),
        ({"matchLabels": {"missing": ""}}, LABELS, False),
        ({"matchLabels": {"empty": ""}}, LABELS, True),
        ({"matchExpressions": [expr("foo", "In", "bar", "baz")]}, LABELS, True),
        ({"matchExpressions": [expr("foo", "In", "baz")]}, LABELS, False),
        ({"matchExpressions": [expr("missing", "In", "x")]}, LABELS, False),
        ({"matchExpressions": [expr("foo", "NotIn", "baz")]}, LABELS, True),
        ({"matchExpressions": [expr("foo", "NotIn", "bar")]}, LABELS, False),
        ({"matchExpressions": [expr("missing", "NotIn", "x")]}, LABELS, True),
        ({"matchExpressions": [expr("foo", "Exists")]}, LABELS, True),
        ({"matchExpressions": [expr("missing", "Exists")]}, LABELS, False),
        ({"matchExpressions": [expr("foo", "DoesNotExist")]}, LABELS, False),
        ({"matchExpressions": [expr("missing", "DoesNotExist")]}, LABELS, True),
        (
            {"matchLabels": {"foo": "bar"}, "matchExpressions": [expr("num", "In", "6")]},
            LABELS,
            False,
        ),
        (
            {"matchLabels": {"foo": "bar"}, "matchExpressions": [expr("num", "In", "5")]},
            LABELS,
            True,
        ),
    ],
)
def test_label_selector_matches(
    selector: dict[str, Any] | None, labels: dict[str, str], expected: bool
) -> None:
    assert LabelSelector.from_dict(selector).matches(labels) is expected


@pytest.mark.parametrize(
    ("selector", "fragment"),
    [
        ({"matchExpressions": [expr("foo", "Gt", "1")]}, "not a valid label selector operator"),
        ({"matchExpressions": [expr("foo", "Bogus", "1")]}, "not a valid label selector operator"),
        ({"matchExpressions": [expr("foo", "In")]}, "values set can't be empty"),
        ({"matchExpressions": [expr("foo", "Exists", "x")]}, "values set must be empty"),
        ({"matchExpressions": [expr("-bad-", "Exists")]}, "key: Invalid value"),
        ({"matchLabels": {"foo": "not valid!"}}, "matchLabels.foo"),
        ({"matchLabels": {"foo": 1}}, "matchLabels.foo: expected a string"),
        ({"matchExpressions": "foo"}, "matchExpressions: expected a list"),
    ],
)
def test_label_selector_invalid(selector: dict[str, Any], fragment: str) -> None:
    with pytest.raises(MalformedObject, match=fragment):
        LabelSelector.from_dict(selector, "spec.selector")


def test_label_selector_error_names_path() -> None:
    with pytest.raises(MalformedObject, match=r"^spec\.selector\.matchExpressions\[0\]: "):
        LabelSelector.from_dict({"matchExpressions": [expr("a", "In")]}, "spec.selector")


def test_label_selector_constructors() -> None:
    assert LabelSelector.everything().is_everything()
    assert not LabelSelector.nothing().matches({})
    assert LabelSelector.from_dict({"matchLabels": {"a": "b"}}) == LabelSelector.from_dict(
        {"matchExpressions": [expr("a", "In", "b")]}
    )


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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5", 5),
        ("+5", 5),
        ("-5", -5),
        ("9223372036854775807", 2**63 - 1),
        ("9223372036854775808", None),
        ("1_000", None),
        (" 1", None),
        ("1.0", None),
        ("", None),
    ],
)
def test_parse_int64_follows_strconv(text: str, expected: int | None) -> None:
    assert parse_int64(text) == expected
