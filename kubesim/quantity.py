"""Kubernetes resource quantities ("100m", "1.5Gi", "1e3"): parsing and canonical formatting.

A port of the grammar in k8s.io/apimachinery/pkg/api/resource/quantity.go, written for kubesim
(which imports nothing of the scheduler). Values are exact `Fraction`s, rounded up to the nano
unit as upstream rounds them, so comparisons (limits >= requests) are exact.
"""

from __future__ import annotations

import enum
import functools
import math
import re
from fractions import Fraction

# Upstream's error texts (ErrFormatWrong, ErrSuffix).
FORMAT_ERROR = (
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
SUFFIX_ERROR = "unable to parse quantity's suffix"


class QuantityFormat(enum.Enum):
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15,
                     "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {v: k for k, v in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT = {v: k for k, v in _BINARY_SUFFIXES.items()}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_NANO = Fraction(1, 10**9)
_EXPONENT_RE = re.compile(r"[eE][+-]?[0-9]+")


def _split(text: str) -> tuple[str, str]:
    """Split into (signed number, suffix) as upstream's parseQuantityString scans them."""
    pos, end = 0, len(text)
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos].isdigit() and text[pos].isascii():
        pos += 1
    if pos < end and text[pos] == ".":
        pos += 1
        while pos < end and text[pos].isdigit() and text[pos].isascii():
            pos += 1
    number, suffix_start = text[:pos], pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos].isdigit() and text[pos].isascii():
        pos += 1
    if pos < end:
        raise ValueError(FORMAT_ERROR)
    return number, text[suffix_start:]


def _interpret_suffix(suffix: str) -> tuple[Fraction, QuantityFormat]:
    if suffix in _DECIMAL_SUFFIXES:
        return Fraction(10) ** _DECIMAL_SUFFIXES[suffix], QuantityFormat.DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return Fraction(2) ** _BINARY_SUFFIXES[suffix], QuantityFormat.BINARY_SI
    if _EXPONENT_RE.fullmatch(suffix):
        return Fraction(10) ** int(suffix[1:]), QuantityFormat.DECIMAL_EXPONENT
    raise ValueError(SUFFIX_ERROR)


def _number_value(number: str) -> Fraction:
    unsigned = number.lstrip("+-")
    whole, _, frac = unsigned.partition(".")
    value = Fraction(int(whole or "0")) + (Fraction(int(frac), 10 ** len(frac)) if frac else 0)
    return -value if number.startswith("-") else value


def _round_up_to_nano(value: Fraction) -> Fraction:
    """Upstream keeps at most nano precision, rounding away from zero."""
    scaled = value / _NANO
    if scaled.denominator == 1:
        return value
    magnitude = math.ceil(abs(scaled))
    return Fraction(magnitude if value > 0 else -magnitude) * _NANO


# Every pod create parses and prints the same few quantities ("100m", "500Mi") many times over
# (defaulting, validation, QoS): results are immutable, so they are cached. typed=True keeps
# True (refused) apart from 1 (accepted); errors are not cached and are raised every time.
_CACHE_SIZE = 4096


def _cacheable(value: object) -> str | int | float:
    """Only a str, int or float is a quantity (and hashable); anything else is malformed."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(FORMAT_ERROR)
    return value


def parse_quantity_with_format(value: str | int | float) -> tuple[Fraction, QuantityFormat]:
    """Parse a quantity, also returning the format its suffix implies (kept when re-printed)."""
    return _parse(_cacheable(value))


@functools.lru_cache(maxsize=_CACHE_SIZE, typed=True)
def _parse(value: str | int | float) -> tuple[Fraction, QuantityFormat]:
    if isinstance(value, int):
        return Fraction(value), QuantityFormat.DECIMAL_SI
    text = repr(value) if isinstance(value, float) else value
    if not isinstance(text, str) or not text:
        raise ValueError(FORMAT_ERROR)
    number, suffix = _split(text)
    multiplier, fmt = _interpret_suffix(suffix)
    return _round_up_to_nano(_number_value(number) * multiplier), fmt


def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a Kubernetes quantity; ValueError with upstream's message if malformed."""
    return parse_quantity_with_format(value)[0]


def _decimal_mantissa_exponent(value: Fraction) -> tuple[int, int]:
    """value == mantissa * 10**exponent, exponent a multiple of 3 (upstream AsCanonicalBytes)."""
    exponent = -9
    mantissa = int(value / _NANO)
    while mantissa != 0 and mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3
    return mantissa * 10**shift, exponent - shift


def format_quantity(value: Fraction, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> str:
    """The canonical string upstream's Quantity.String() prints ("1536Mi", "500m", "2k")."""
    value = _round_up_to_nano(value)
    if value == 0:
        return "0"
    if fmt is QuantityFormat.BINARY_SI and (abs(value) < 1024 or value.denominator != 1):
        fmt = QuantityFormat.DECIMAL_SI
    if fmt is QuantityFormat.BINARY_SI:
        mantissa, exponent = int(value), 0
        while mantissa % 1024 == 0 and exponent < 60:
            mantissa //= 1024
            exponent += 10
        return f"{mantissa}{_BINARY_BY_EXPONENT.get(exponent, '')}"
    mantissa, exponent = _decimal_mantissa_exponent(value)
    if fmt is QuantityFormat.DECIMAL_EXPONENT:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    if exponent in _DECIMAL_BY_EXPONENT:
        return f"{mantissa}{_DECIMAL_BY_EXPONENT[exponent]}"
    return f"{mantissa}e{exponent}"


def canonical_quantity(value: str | int | float) -> str:
    """Parse then print canonically, as the API server echoes a quantity back."""
    return parse_canonical(value)[1]


def parse_canonical(value: str | int | float) -> tuple[Fraction, str, QuantityFormat]:
    """(value, canonical string, format) of a quantity, cached by its spelling."""
    return _parse_canonical(_cacheable(value))


@functools.lru_cache(maxsize=_CACHE_SIZE, typed=True)
def _parse_canonical(value: str | int | float) -> tuple[Fraction, str, QuantityFormat]:
    parsed, fmt = _parse(value)
    return parsed, format_quantity(parsed, fmt), fmt
