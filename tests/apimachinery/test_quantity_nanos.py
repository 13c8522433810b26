"""apimachinery.quantity as the scheduler reads it (parse_nanos, milli_value, value); cases
ported from apimachinery's pkg/api/resource/quantity_test.go (TestQuantityParse, its invalid
list, TestQuantityRoundUp) as facts about values."""

from __future__ import annotations

from fractions import Fraction

import pytest

from apimachinery.quantity import (
    FORMAT_ERROR,
    NUMERIC_ERROR,
    SUFFIX_ERROR,
    milli_value,
    parse_nanos,
    value,
)

MAX = 2**63 - 1
Ki, Mi, Gi, Ti = 2**10, 2**20, 2**30, 2**40


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("0n", 0),
        ("0m", 0),
        ("0Ki", 0),
        ("0Ti", 0),
        ("1", 1),
        ("1Ki", Ki),
        ("8Ki", 8 * Ki),
        ("7Mi", 7 * Mi),
        ("6Gi", 6 * Gi),
        ("5Ti", 5 * Ti),
        ("4Pi", 4 * 2**50),
        ("3Ei", 3 * 2**60),
        ("100Ti", 100 * Ti),
        ("5n", Fraction(5, 10**9)),
        ("4u", Fraction(4, 10**6)),
        ("3m", Fraction(3, 1000)),
        ("8k", 8000),
        ("50k", 50000),
        ("7M", 7 * 10**6),
        ("6G", 6 * 10**9),
        ("5T", 5 * 10**12),
        ("2P", 2 * 10**15),
        ("1E", 10**18),
        ("1E-3", Fraction(1, 1000)),
        ("1e3", 1000),
        ("1E6", 10**6),
        ("1e9", 10**9),
        ("1E18", 10**18),
        ("100.035k", 100035),
        ("0.001", Fraction(1, 1000)),
        ("0.0005k", Fraction(1, 2)),
        ("0.5", Fraction(1, 2)),
        ("0.00050k", Fraction(1, 2)),
        ("0.5e-1", Fraction(5, 100)),
        ("0.5e-2", Fraction(5, 1000)),
        ("10.035M", 10035000),
        ("1.2e3", 1200),
        ("1.3E+6", 1300000),
        ("1.40e9", 1400000000),
        ("1.7E18", 17 * 10**17),
        ("9.01", Fraction(901, 100)),
        ("7.123456M", 7123456),
        ("6.987654321G", 6987654321),
        ("2.5P", 25 * 10**14),
        ("1.01E", 101 * 10**16),
        # Things that saturate / round up to a whole nano unit.
        ("3.001n", Fraction(4, 10**9)),
        ("1.1E-9", Fraction(2, 10**9)),
        ("0.0000000001", Fraction(1, 10**9)),
        ("0.0000000005", Fraction(1, 10**9)),
        ("0.5e-9", Fraction(1, 10**9)),
        ("0.9n", Fraction(1, 10**9)),
        ("0.00000012345", Fraction(124, 10**9)),
        ("9Ei", MAX),
        ("9223372036854775807Ki", MAX),
        ("12E", 12 * 10**18),  # upstream's int64 fast path does not cap this one
        ("100.035Ki", Fraction(10243584, 100)),
        ("0.5Mi", Mi // 2),
        ("0.05Gi", Fraction(536870912, 10)),
        ("0.025Ti", Fraction(274877906944, 10)),
        ("0.000000000001Ki", Fraction(2, 10**9)),
        (".001", Fraction(1, 1000)),
        (".0001k", Fraction(1, 10)),
        ("1.", 1),
        ("1.G", 10**9),
        # Forms the brief names.
        ("100m", Fraction(1, 10)),
        ("500M", 5 * 10**8),
        ("2Gi", 2 * Gi),
        ("1.5Gi", 3 * Gi // 2),
        ("+1", 1),
        ("1E3", 1000),
        ("-9.01", Fraction(-901, 100)),
    ],
)
def test_parse_exact(text: str, expected: Fraction | int) -> None:
    assert Fraction(parse_nanos(text), 10**9) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", FORMAT_ERROR),
        ("1.1.M", FORMAT_ERROR),
        ("1+1.0M", FORMAT_ERROR),
        ("0.1mi", SUFFIX_ERROR),
        ("0.1am", FORMAT_ERROR),
        ("aoeu", FORMAT_ERROR),
        (".5i", SUFFIX_ERROR),
        ("1i", SUFFIX_ERROR),
        ("-3.01i", SUFFIX_ERROR),
        ("-3.01e-", SUFFIX_ERROR),
        ("1e4294967297", SUFFIX_ERROR),
        ("1E2147483648", SUFFIX_ERROR),
        (" 1", FORMAT_ERROR),
        ("1 ", FORMAT_ERROR),
        ("-.e-10", NUMERIC_ERROR),
    ],
)
def test_malformed(text: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_nanos(text)
    assert str(err.value) == message


def test_non_string_is_refused() -> None:
    with pytest.raises(ValueError):
        parse_nanos(1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "milli", "whole"),
    [
        ("100m", 100, 1),
        ("0.5", 500, 1),
        ("1", 1000, 1),
        ("1.5Gi", 1.5 * Gi * 1000, 3 * Gi // 2),
        ("1n", 1, 1),  # rounded up, as MilliValue / Value do
        ("1001u", 2, 1),
        ("9.01", 9010, 10),
        ("-9.01", -9010, -10),  # away from zero (TestQuantityRoundUp)
        ("0", 0, 0),
    ],
)
def test_milli_value_and_value_round_up(text: str, milli: float, whole: int) -> None:
    assert milli_value(text) == milli
    assert value(text) == whole


def test_huge_exponents_do_not_hang() -> None:
    assert value("1e2147483647") == MAX
    assert parse_nanos("1e-2147483647") == 1
