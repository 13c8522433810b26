"""One parser behind both readings: where kubesim's and the scheduler's parsers used to differ on
input no real object carries, both now follow upstream's ParseQuantity."""

from __future__ import annotations

from fractions import Fraction

import pytest

from apimachinery.quantity import (
    NUMERIC_ERROR,
    QuantityFormat,
    parse,
    parse_nanos,
    parse_quantity,
    parse_quantity_with_format,
)


@pytest.mark.parametrize("text", ["-.e-10", ".e-10", "e-10", "-e-10"])
def test_an_empty_number_on_the_slow_path_is_err_numeric_for_both(text: str) -> None:
    # upstream hands "-." / "" to inf.Dec.SetString, which refuses it
    for reading in (parse_nanos, parse_quantity):
        with pytest.raises(ValueError) as err:
            reading(text)
        assert str(err.value) == NUMERIC_ERROR


def test_int32_minimum_exponent_is_a_suffix_for_both() -> None:
    # strconv.ParseInt(s, 10, 32) accepts -2147483648
    assert parse_nanos("1e-2147483648") == 1
    assert parse_quantity("1e-2147483648") == Fraction(1, 10**9)


def test_json_numbers_are_read_from_their_spelling() -> None:
    # Quantity.UnmarshalJSON parses an unquoted number's bytes: an int below the held bound stays
    # exact, as the same digits in a string do.
    assert parse_quantity(10**40 + 1) == parse_quantity(str(10**40 + 1)) == 10**40 + 1
    assert parse_quantity_with_format(1e20) == (Fraction(10**20), QuantityFormat.DECIMAL_EXPONENT)
    with pytest.raises(ValueError):
        parse_quantity(True)


def test_parse_reports_upstreams_fast_path() -> None:
    assert parse("12E").int64_fast_path
    assert not parse("1.5Gi").int64_fast_path
    assert parse("1.5Gi").format is QuantityFormat.BINARY_SI
