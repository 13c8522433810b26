"""The typed field reads the views are built with: `is_mapping` answers as isinstance(value,
Mapping) does, its shortcuts (dict, read-only view, None) included."""

from __future__ import annotations

from collections import OrderedDict, UserDict
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.api.fields import is_mapping

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)


@pytest.mark.parametrize(
    "value",
    [
        None, {}, {"a": 1}, MappingProxyType({"a": 1}), OrderedDict(a=1), UserDict(a=1),
        [], (), "spec", b"spec", 0, 1.5, True, {1, 2}, frozenset(),
    ],
)  # fmt: skip
def test_is_mapping_is_isinstance_mapping(value: Any) -> None:
    assert is_mapping(value) is isinstance(value, Mapping)


@given(JSON_VALUES)
def test_is_mapping_on_decoded_json(value: Any) -> None:
    assert is_mapping(value) is isinstance(value, Mapping)
