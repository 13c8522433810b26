"""apimachinery.labels: the ?labelSelector= grammar kubesim filters list and watch with, and
metav1.LabelSelector objects matched the same way.

Cases ported from k8s.io/apimachinery/pkg/labels/selector_test.go (TestSelectorParse,
TestSelectorMatches, TestLexer) as facts.
"""

import pytest

from apimachinery.labels import LabelSelector, SelectorError

parse_label_selector = LabelSelector.parse


@pytest.mark.parametrize(
    "text",
    [
        "",
        "x=a,y=b,z=c",
        "x!=a,y=b",
        "x=",
        "x= ",
        "x=,z= ",
        "x= ,z= ",
        "!x",
        "x>1",
        "x>1,z<5",
        "x in (a)",
        "x in (a,b)",
        "x notin (a,b)",
        "x in (,a)",
        "x in (a,)",
        "x in ()",
        "x",
        "x,y",
        "a.b/c-d",
        "x in (in)",
        "x==a",
    ],
)
def test_parse_valid(text: str) -> None:
    parse_label_selector(text)


@pytest.mark.parametrize(
    "text",
    [
        "x=a||y=b",
        "x==a==b",
        "!x=a",
        "x<a",
        "x in",
        "x in (a",
        "x in a",
        "x,",
        "=a",
        ",",
        "x=a b",
        "x in (a b)",
        "a_/b=c",
    ],
)
def test_parse_invalid(text: str) -> None:
    with pytest.raises(SelectorError):
        parse_label_selector(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x=a,", "found '', expected: identifier after ','"),
        ("x y", "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt"),
        ("x=a b", "found 'b', expected: ',' or 'end of string'"),
        (")", "found ')', expected: !, identifier, or 'end of string'"),
        ("x in a", "unable to parse requirement: found 'a' expected: '('"),
        (
            "Bad_/x=1",
            'unable to parse requirement: <nil>: Invalid value: "Bad_/x": prefix part a '
            "lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'example.com', regex "
            "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9]"
            ")?)*')",
        ),
        (
            "x=a$",
            'unable to parse requirement: values[0][x]: Invalid value: "a$": a valid label must '
            "be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
            "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
    ],
)
def test_parse_error_messages(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as err:
        parse_label_selector(text)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("text", "labels", "matches"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x", {"x": "z"}, True),
        ("!x", {"y": "z"}, True),
        ("x>1", {"x": "2"}, True),
        ("x<1", {"x": "0"}, True),
        ("x=z", {}, False),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("x", {"y": "z"}, False),
        ("!x", {"x": "z"}, False),
        ("x>1", {"x": "0"}, False),
        ("x<1", {"x": "2"}, False),
        ("x>1", {"x": "a"}, False),
        ("x in (a,b)", {"x": "b"}, True),
        ("x in (a,b)", {"x": "c"}, False),
        ("x in (a,b)", {}, False),
        ("x notin (a,b)", {"x": "c"}, True),
        ("x notin (a,b)", {}, True),
        ("x notin (a,b)", {"x": "a"}, False),
        ("x=", {"x": ""}, True),
    ],
)
def test_label_matches(text: str, labels: dict[str, str], matches: bool) -> None:
    assert parse_label_selector(text).matches(labels) is matches


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ({"matchLabels": {"app": "a"}}, {"app": "a", "x": "y"}, True),
        ({"matchLabels": {"app": "a"}}, {"app": "b"}, False),
        (
            {"matchExpressions": [{"key": "t", "operator": "In", "values": ["1", "2"]}]},
            {"t": "2"},
            True,
        ),
        ({"matchExpressions": [{"key": "t", "operator": "DoesNotExist"}]}, {"t": "2"}, False),
        ({}, {"anything": "x"}, True),
    ],
)
def test_label_selector_from_dict(
    selector: dict[str, object], labels: dict[str, str], matches: bool
) -> None:
    assert LabelSelector.from_dict(selector).matches(labels) is matches
