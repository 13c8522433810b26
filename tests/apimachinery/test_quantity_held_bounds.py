"""apimachinery.parse_quantity (the API server's reading) on hostile input: huge or tiny
exponents, megabytes of digits.

Upstream (apimachinery pkg/api/resource/quantity.go ParseQuantity) refuses an exponent that does
not fit an int32 (ErrSuffix), reads a zero mantissa as 0 whatever the exponent, rounds a non-zero
value up to one nano unit and caps BinarySI values at maxAllowed (2**63-1). Values beyond 10**40
are capped at maxAllowed here too (see apimachinery.quantity._HELD_ORDER). These are values, not
timings: before the bounds these inputs took seconds to hours.
"""

from fractions import Fraction

import pytest

from apimachinery.quantity import SUFFIX_ERROR, canonical_quantity, parse_quantity

MAX = 2**63 - 1
NANO = Fraction(1, 10**9)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1e999999999", MAX),
        ("-1e999999999", -MAX),
        ("1e2147483647", MAX),
        ("1e3000000", MAX),
        ("1e-999999999", NANO),
        ("-1e-999999999", -NANO),
        ("1e-2147483648", NANO),  # int32's minimum is still an exponent
        ("0e999999999", 0),
        ("0.000e2147483647", 0),
        ("16Ei", MAX),  # BinarySI is capped upstream
        ("12E", 12 * 10**18),  # a decimal value below the bound stays exact
        ("1e40", 10**40),
        ("1e41", MAX),
        ("1" * 5000, MAX),
        ("0." + "0" * 5000 + "1", NANO),
        ("1" + "0" * 100_000 + "e-100000", 1),
        ("1." + "1" * 1_000_000, Fraction(1_111_111_112, 10**9)),  # rounded up to nano
        ("1e00000000000000000003", 1000),  # leading zeros: strconv.ParseInt reads 3
        ("0." + "0" * 70 + "1Ei", NANO),  # 2**60 * 1e-71 is far below 1n
        ("0." + "9" * 200 + "Ki", 1024),  # the dropped tail still rounds up to exactly 1024
        (10**50, MAX),
    ],
)
def test_bounded_values(text: str | int, value: Fraction | int) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["1e2147483648", "1e-2147483649", "1e" + "9" * 100_000])
def test_exponents_beyond_int32_are_refused(text: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_quantity(text)
    assert str(err.value) == SUFFIX_ERROR


@pytest.mark.parametrize(
    ("text", "canonical"),
    [("1e999999999", "9223372036854775807"), ("1e-999999999", "1e-9"), ("0e999999999", "0")],
)
def test_bounded_values_print_canonically(text: str, canonical: str) -> None:
    assert canonical_quantity(text) == canonical
