"""The views' replacer gives what dataclasses.replace gives, and refuses what it cannot do."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.api.fast_replace import replacer
from scheduler.api.pod import PodView
from scheduler.testing.builders import make_pod

FIELDS = [f.name for f in dataclasses.fields(PodView)]
replace_view = replacer(PodView)


@given(st.dictionaries(st.sampled_from(FIELDS), st.one_of(st.text(max_size=3), st.integers())))
def test_the_replacer_gives_what_dataclasses_replace_gives(changes: dict[str, Any]) -> None:
    old = make_pod("p", requests={"cpu": "1"}, labels={"app": "x"})
    expected = dataclasses.replace(old, **changes)
    got = replace_view(old, changes)
    assert type(got) is PodView
    for name in FIELDS:
        assert getattr(got, name) is getattr(expected, name), name
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.name = "other"  # type: ignore[misc]


def test_an_unknown_field_is_refused_as_dataclasses_replace_refuses_it() -> None:
    with pytest.raises(TypeError, match="no field"):
        replace_view(make_pod("p"), {"nodeName": "n1"})


def test_classes_whose_init_does_more_than_set_fields_are_refused() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Derived:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    for cls in (Derived, NoSlots):
        with pytest.raises(TypeError):
            replacer(cls)
