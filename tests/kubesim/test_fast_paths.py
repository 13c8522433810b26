"""kubesim's fast paths agree with the slower computations they replace: timestamps and uids
with the standard library's, the JSON depth bound with orjson's own nesting limit."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime

import orjson
from hypothesis import given
from hypothesis import strategies as st

from kubesim import json_limits, meta


@given(st.floats(min_value=-1e10, max_value=1e10, allow_nan=False))
def test_rfc3339_matches_datetime(timestamp: float) -> None:
    expected = datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert meta.rfc3339(timestamp) == expected


@given(st.lists(st.floats(min_value=1.6e9, max_value=1.6e9 + 5, allow_nan=False), max_size=20))
def test_rfc3339_cache_follows_any_order(timestamps: list[float]) -> None:
    # the cache holds one second: going back and forth between seconds must never reuse it
    for timestamp in timestamps:
        expected = datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert meta.rfc3339(timestamp) == expected


@given(st.integers(min_value=0, max_value=2**32))
def test_new_uid_is_uuid4_of_the_same_bits(seed: int) -> None:
    fast, reference = random.Random(seed), random.Random(seed)
    for _ in range(5):
        uid = meta.new_uid(fast)
        assert uid == str(uuid.UUID(int=reference.getrandbits(128), version=4))
        assert uuid.UUID(uid).version == 4


def _nested(depth: int, leaf: object, brackets: str) -> object:
    value = leaf
    for level in range(depth):
        value = [value] if brackets[level % len(brackets)] == "[" else {"k[{": value}
    return value


def _reference_within(value: object, depth: int) -> bool:
    """The bound as orjson enforces it: wrapped in lists up to its 254 levels."""
    wrapped = value
    for _ in range(254 - depth):
        wrapped = [wrapped]
    try:
        orjson.dumps(wrapped)
    except (TypeError, orjson.JSONEncodeError):
        return False
    return True


@given(
    st.integers(min_value=0, max_value=300),
    st.sampled_from(["[", "{", "[{", "{{["]),
    st.sampled_from([0, "x", "[[[[{{{{", None, {"a": "]]]"}, b"not json"]),
    st.integers(min_value=1, max_value=253),
)
def test_serializes_within_matches_orjsons_bound(
    levels: int, brackets: str, leaf: object, depth: int
) -> None:
    value = _nested(levels, leaf, brackets)
    assert json_limits.serializes_within(value, depth) == _reference_within(value, depth)
