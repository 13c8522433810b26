"""apimachinery.parse_nanos (the scheduler's reading) on hostile input, consistent with
parse_quantity (the API server's): the same bounded value (maxAllowed or one nano unit) for
the same text, and no int of a megabyte of digits."""

from __future__ import annotations

from fractions import Fraction

import pytest

from apimachinery.quantity import SUFFIX_ERROR, parse_nanos, parse_quantity

MAX_NANOS = (2**63 - 1) * 10**9

HOSTILE = [
    "1e999999999",
    "-1e999999999",
    "1e-999999999",
    "0e999999999",
    "1e3000000",
    "16Ei",
    "1" * 5000,
    "0." + "0" * 5000 + "1",
    "1" + "0" * 100_000 + "e-100000",
    "1." + "1" * 1_000_000,
    "1e00000000000000000003",
    "0." + "9" * 200 + "Ki",
]


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("1e999999999", MAX_NANOS),
        ("1e-999999999", 1),
        ("0e999999999", 0),
        ("1" * 5000, MAX_NANOS),
        ("0." + "0" * 5000 + "1", 1),
        ("1" + "0" * 100_000 + "e-100000", 10**9),
        ("1." + "1" * 1_000_000, 1_111_111_112),
        ("1e00000000000000000003", 1000 * 10**9),
    ],
)
def test_bounded_values(text: str, nanos: int) -> None:
    assert parse_nanos(text) == nanos


@pytest.mark.parametrize("text", HOSTILE)
def test_agrees_with_kubesim_where_both_bound(text: str) -> None:
    """kubesim keeps exact decimals up to 10**40 where the scheduler caps at maxAllowed; below
    maxAllowed the two agree exactly."""
    expected = parse_quantity(text)
    expected = max(min(expected, Fraction(MAX_NANOS, 10**9)), Fraction(-MAX_NANOS, 10**9))
    assert Fraction(parse_nanos(text), 10**9) == expected


def test_a_megabyte_exponent_is_refused() -> None:
    with pytest.raises(ValueError) as err:
        parse_nanos("1e" + "9" * 1_000_000)
    assert str(err.value) == SUFFIX_ERROR
