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
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
SUFFIX_ERROR = "unable to parse quantity's suffix"


class QuantityFormat(enum.Enum):
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_DECIMAL_SUFFIXES = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {v: k for k, v in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT = {v: k for k, v in _BINARY_SUFFIXES.items()}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_NANO = Fraction(1, 10**9)
_EXPONENT_RE = re.compile(r"[eE][+-]?[0-9]+")
_MIN_EXPONENT, _MAX_EXPONENT = -(2**31), 2**31 - 1
_MAX_ALLOWED = Fraction(2**63 - 1)  # upstream's maxAllowed
# Upstream holds a decimal quantity of any size in an inf.Dec ("1e999999999" is a few bytes
# there, 10**999999999 would not be here). kubesim keeps values exact up to 10**_MAX_ORDER, as
# the scheduler's parser does, and caps larger ones at maxAllowed: no node or request can tell
# 10**40 from more, and the scheduler reads both as maxAllowed anyway.
_MAX_ORDER = 40
_KEPT_DECIMALS = 80  # decimals read exactly; see _magnitude


# upstream's parseQuantityString as one expression: number, suffix letters, signed digits
_QUANTITY_RE = re.compile(r"([+-]?[0-9]*(?:\.[0-9]*)?)([eEinumkKMGTP]*[+-]?[0-9]*)")


def _split(text: str) -> tuple[str, str]:
    """Split into (signed number, suffix) as upstream's parseQuantityString scans them."""
    match = _QUANTITY_RE.fullmatch(text)
    if match is None:
        raise ValueError(FORMAT_ERROR)
    return match.group(1), match.group(2)


def _interpret_suffix(suffix: str) -> tuple[int, int, QuantityFormat]:
    """(base, exponent, format) of a suffix: "Ki" is (2, 10), "k" and "e3" are (10, 3)."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], QuantityFormat.DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], QuantityFormat.BINARY_SI
    if _EXPONENT_RE.fullmatch(suffix):
        # strconv.ParseInt(..., 10, 32): an exponent beyond int32 is a bad suffix upstream
        digits = suffix[1:].lstrip("+-").lstrip("0")
        if len(digits) <= 10 and _MIN_EXPONENT <= int(suffix[1:]) <= _MAX_EXPONENT:
            return 10, int(suffix[1:]), QuantityFormat.DECIMAL_EXPONENT
    raise ValueError(SUFFIX_ERROR)


def _magnitude(number: str, base: int, exponent: int, fmt: QuantityFormat) -> Fraction:
    """|number| * base**exponent rounded up to a nano unit, bounded as described at _MAX_ORDER.

    The value is read from the lengths of the digit strings first: neither a megabyte of digits
    nor 10**2147483647 is ever computed.
    """
    whole, _, frac = number.lstrip("+-").partition(".")
    digits = (whole + frac).lstrip("0")
    if not digits:
        return Fraction(0)  # zero stays zero whatever the exponent (upstream's mantissa is 0)
    significant = digits.rstrip("0")
    scale = (exponent if base == 10 else 0) - len(frac) + len(digits) - len(significant)
    bits = exponent if base == 2 else 0  # at most 60 (Ei)
    order = len(significant) + scale  # the value / 2**bits lies in [10**(order-1), 10**order)
    if order - 1 > _MAX_ORDER:
        return _MAX_ALLOWED
    if order + 19 <= -9:  # below 10**-9 even times 2**60: rounds up to one nano unit
        return _NANO
    keep = order + _KEPT_DECIMALS
    if len(significant) > keep:
        # Digits below 10**-80 only decide the rounding up; one unit just below stands for them.
        # Every multiple of 1n / 2**60 has at most 69 decimals, so the result is unchanged.
        significant, scale = significant[:keep] + "1", -_KEPT_DECIMALS - 1
    value = Fraction(int(significant) << bits) * Fraction(10) ** scale
    value = _round_up_to_nano(value)
    if fmt is QuantityFormat.BINARY_SI:
        value = min(value, _MAX_ALLOWED)  # upstream caps BinarySI at maxAllowed
    return value


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


# Only short spellings are cached: 4096 entries of a 3 MiB quantity each would be 12 GiB.
_CACHED_LENGTH = 64


def parse_quantity_with_format(value: str | int | float) -> tuple[Fraction, QuantityFormat]:
    """Parse a quantity, also returning the format its suffix implies (kept when re-printed)."""
    value = _cacheable(value)
    if isinstance(value, str) and len(value) > _CACHED_LENGTH:
        return _parse.__wrapped__(value)
    return _parse(value)


@functools.lru_cache(maxsize=_CACHE_SIZE, typed=True)
def _parse(value: str | int | float) -> tuple[Fraction, QuantityFormat]:
    if isinstance(value, int):
        magnitude = Fraction(abs(value))
        if magnitude > 10**_MAX_ORDER:
            magnitude = _MAX_ALLOWED
        return (magnitude if value >= 0 else -magnitude), QuantityFormat.DECIMAL_SI
    text = repr(value) if isinstance(value, float) else value
    if not isinstance(text, str) or not text:
        raise ValueError(FORMAT_ERROR)
    number, suffix = _split(text)
    base, exponent, fmt = _interpret_suffix(suffix)
    magnitude = _magnitude(number, base, exponent, fmt)
    return (-magnitude if number.startswith("-") else magnitude), fmt


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
    """(value, canonical string, format) of a quantity, cached by its (short) spelling."""
    value = _cacheable(value)
    if isinstance(value, str) and len(value) > _CACHED_LENGTH:
        return _parse_canonical.__wrapped__(value)
    return _parse_canonical(value)


@functools.lru_cache(maxsize=_CACHE_SIZE, typed=True)
def _parse_canonical(value: str | int | float) -> tuple[Fraction, str, QuantityFormat]:
    parsed, fmt = _parse(value)
    return parsed, format_quantity(parsed, fmt), fmt
