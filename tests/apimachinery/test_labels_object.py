"""apimachinery.labels: metav1.LabelSelector objects as the scheduler reads them. Cases follow
upstream's apimachinery labels/selector_test.go (TestRequirementMatches, meta/v1
TestLabelSelectorAsSelector)."""

from __future__ import annotations

from typing import Any

import pytest

from apimachinery.errors import MalformedObject
from apimachinery.labels import LabelSelector, parse_int64


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
