"""apimachinery.quantity as the API server (kubesim) reads it: parse_quantity's exact values of
every upstream form, and canonical printing.

Cases ported from k8s.io/apimachinery/pkg/api/resource/quantity_test.go (TestQuantityParse,
TestQuantityCanonicalize...) as facts.
"""

from fractions import Fraction

import pytest

from apimachinery.quantity import (
    FORMAT_ERROR,
    SUFFIX_ERROR,
    canonical_quantity,
    parse_quantity,
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", Fraction(0)),
        ("100m", Fraction(1, 10)),
        ("0.5", Fraction(1, 2)),
        (".5", Fraction(1, 2)),
        ("5.", Fraction(5)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("1e-3", Fraction(1, 1000)),
        ("500M", Fraction(500_000_000)),
        ("2Gi", Fraction(2 * 2**30)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("+1", Fraction(1)),
        ("-1", Fraction(-1)),
        ("1Ki", Fraction(1024)),
        ("1k", Fraction(1000)),
        ("1n", Fraction(1, 10**9)),
        ("1u", Fraction(1, 10**6)),
        ("7Ei", Fraction(7 * 2**60)),
        ("0.1n", Fraction(1, 10**9)),  # rounded up to the nano unit
        (3, Fraction(3)),
        (0.25, Fraction(1, 4)),
    ],
)
def test_parse(text: str | int | float, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", FORMAT_ERROR),
        ("1.5.5", FORMAT_ERROR),
        ("abc", FORMAT_ERROR),
        ("1Kib", FORMAT_ERROR),
        ("1 Gi", FORMAT_ERROR),
        ("1kk", SUFFIX_ERROR),
        ("1K", SUFFIX_ERROR),
        ("1e", SUFFIX_ERROR),
        ("1Gi1", SUFFIX_ERROR),
    ],
)
def test_parse_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_quantity(text)
    assert str(err.value) == message


def test_rejects_bool() -> None:
    with pytest.raises(ValueError):
        parse_quantity(True)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("1.5Gi", "1536Mi"),
        ("0.5", "500m"),
        ("2000", "2k"),
        ("1500", "1500"),
        ("1000m", "1"),
        ("1e3", "1e3"),
        ("100M", "100M"),
        ("1Gi", "1Gi"),
        ("1024", "1024"),
        ("512Ki", "512Ki"),
        ("1.5", "1500m"),
        ("0.5Ki", "512"),
        ("-1", "-1"),
        ("-100m", "-100m"),
        ("0", "0"),
        ("32Gi", "32Gi"),
        (4, "4"),
    ],
)
def test_canonical(text: str | int, canonical: str) -> None:
    assert canonical_quantity(text) == canonical
