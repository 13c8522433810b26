"""LabelSelector.lenient: how kubesim reads selectors of stored objects (controllers, volume
matching, PDBs). The cases are those of the loose matcher it replaced (kubesim.meta
match_label_selector), so what kubesim's controllers select did not change; on a valid
selector it agrees with `from_dict` (upstream's LabelSelectorAsSelector)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apimachinery.errors import MalformedObject
from apimachinery.labels import LabelSelector

WEB = {"app": "web", "tier": "front"}

# (selector, labels, matches)
CASES: list[tuple[Any, dict[str, str], bool]] = [
    # missing and empty selectors
    (None, WEB, False),
    (None, {}, False),
    ({}, WEB, True),
    ({}, {}, True),
    ({"matchLabels": None, "matchExpressions": None}, WEB, True),
    ({"matchLabels": {}, "matchExpressions": []}, WEB, True),
    # valid selectors
    ({"matchLabels": {"app": "web"}}, WEB, True),
    ({"matchLabels": {"app": "db"}}, WEB, False),
    ({"matchLabels": {"app": "web", "tier": "back"}}, WEB, False),
    ({"matchLabels": {"zone": "a"}}, WEB, False),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]}, WEB, True),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}, WEB, False),
    ({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, WEB, False),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]}, WEB, True),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, WEB, False),
    ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, WEB, True),
    ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, WEB, True),
    ({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, WEB, False),
    ({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, WEB, True),
    ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, WEB, False),
    (
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}],
        },
        WEB,
        False,
    ),
    # what validation would reject, read as written
    ({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}, WEB, True),
    ({"matchExpressions": [{"key": "app", "operator": "Bogus"}]}, WEB, True),
    ({"matchExpressions": [{"key": "app"}]}, WEB, True),
    ({"matchExpressions": [{"key": "app", "operator": ["In"], "values": ["db"]}]}, WEB, True),
    ({"matchExpressions": [{"key": "app", "operator": "In"}]}, WEB, False),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": []}]}, WEB, False),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn"}]}, WEB, True),
    ({"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]}, WEB, True),
    ({"matchExpressions": [{"key": "a b", "operator": "Exists"}]}, {"a b": "x"}, True),
    ({"matchLabels": {"a b": "not a value!"}}, {"a b": "not a value!"}, True),
    ({"matchLabels": {"app": 1}}, {"app": "1"}, False),
    ({"matchLabels": {"app": ["web"]}}, WEB, False),
    ({"matchLabels": {"zone": None}}, WEB, True),
    ({"matchLabels": {"app": None}}, WEB, False),
    ({"matchExpressions": [{"operator": "Exists"}]}, WEB, False),
    ({"matchExpressions": [{"key": 1, "operator": "Exists"}]}, {"1": "x"}, False),
    ({"matchExpressions": [{"key": 1, "operator": "DoesNotExist"}]}, {"1": "x"}, True),
    ({"matchExpressions": [{"operator": "DoesNotExist"}]}, WEB, True),
    ({"matchExpressions": [{"operator": "NotIn", "values": ["web"]}]}, WEB, True),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": [1, "web"]}]}, WEB, True),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": [["web"]]}]}, WEB, False),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": [{}]}]}, WEB, True),
    # falsy containers read as empty
    ({"matchLabels": [], "matchExpressions": ""}, WEB, True),
]


@pytest.mark.parametrize(("selector", "labels", "matches"), CASES)
def test_lenient_matches_as_written(selector: Any, labels: dict[str, str], matches: bool) -> None:
    assert LabelSelector.lenient(selector).matches(labels) is matches


@pytest.mark.parametrize(
    "selector",
    [
        "app=web",
        ["app"],
        {"matchLabels": ["app", "web"]},
        {"matchExpressions": {"key": "app"}},
        {"matchExpressions": ["app"]},
        {"matchExpressions": [{"key": ["app"], "operator": "Exists"}]},
        {"matchExpressions": [{"key": "app", "operator": "In", "values": "web"}]},
    ],
)
def test_lenient_rejects_wrong_json_types(selector: Any) -> None:
    with pytest.raises(MalformedObject):
        LabelSelector.lenient(selector)


KEYS = st.sampled_from(["app", "tier", "example.com/zone"])
VALUES = st.sampled_from(["web", "db", "a"])
EXPRESSIONS = st.one_of(
    st.fixed_dictionaries(
        {
            "key": KEYS,
            "operator": st.sampled_from(["In", "NotIn"]),
            "values": st.lists(VALUES, min_size=1, max_size=2),
        }
    ),
    st.fixed_dictionaries({"key": KEYS, "operator": st.sampled_from(["Exists", "DoesNotExist"])}),
)
SELECTORS = st.fixed_dictionaries(
    {},
    optional={
        "matchLabels": st.dictionaries(KEYS, VALUES, max_size=2),
        "matchExpressions": st.lists(EXPRESSIONS, max_size=3),
    },
)


@given(selector=SELECTORS, labels=st.dictionaries(KEYS, VALUES, max_size=3))
def test_lenient_agrees_with_from_dict_on_valid_selectors(
    selector: dict[str, Any], labels: dict[str, str]
) -> None:
    strict = LabelSelector.from_dict(selector)
    assert LabelSelector.lenient(selector).matches(labels) == strict.matches(labels)
