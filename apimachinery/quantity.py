"""Kubernetes resource quantities ("100m", "0.5", "1e3", "500M", "2Gi", "1.5Gi", ...), exactly.

Follows k8s.io/apimachinery/pkg/api/resource/quantity.go (ParseQuantity, parseQuantityString,
the suffixer, MilliValue / Value, String):
- the number is read exactly (integers, no float), the suffix is a decimal SI suffix
  (n u m "" k M G T P E), a binary one (Ki Mi Gi Ti Pi Ei) or a decimal exponent (e3, E-2);
- the value is rounded up (away from zero) to a whole nano unit, as upstream rounds to
  inf.Dec scale 9 with RoundUp; BinarySI values are capped at maxAllowed (2**63-1);
- upstream holds a decimal value of any size in an inf.Dec ("1e999999999" is a few bytes there,
  10**999999999 would not be here): values are exact below 10**41 and read as maxAllowed from
  there on. No node or request can tell 10**41 from more. The text's lengths bound the value
  before any int is built, so neither a megabyte of digits nor an exponent of 2147483647 costs
  more than its length.

One parser, two readings of its result:
- the scheduler reads quantities as upstream's scheduler does, through MilliValue / Value of an
  int64-backed Quantity: `parse_nanos` gives an int of nano units, capped at maxAllowed unless
  upstream's int64 fast path holds the value unrounded and uncapped ("12E"); `milli_value` and
  `value` round up (away from zero) like ScaledValue. Sums and maxima of nano units are exact
  before the final rounding, as upstream adds Quantities, not their MilliValues. Only a string
  is a quantity here.
- kubesim stores and validates quantities as the API server does: `parse_quantity` gives the
  held value as an exact Fraction (JSON numbers are quantities too, read from their text as
  Quantity.UnmarshalJSON does), `format_quantity` / `canonical_quantity` print it as
  Quantity.String() does, keeping the format the suffix implied.
Both raise ValueError with upstream's messages (ErrFormatWrong, ErrSuffix, ErrNumeric).
"""

from __future__ import annotations

import enum
import functools
import math
from fractions import Fraction
from typing import NamedTuple

# Upstream's error texts (ErrFormatWrong, ErrSuffix, ErrNumeric).
FORMAT_ERROR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
SUFFIX_ERROR = "unable to parse quantity's suffix"
NUMERIC_ERROR = "unable to parse numeric part of quantity"

NANO = 10**9
MAX_ALLOWED = 2**63 - 1  # upstream's maxAllowed
_MAX_NANOS = MAX_ALLOWED * NANO
_MAX_INT32 = 2**31 - 1
_MAX_INT64_FACTORS = 18
# Decimal values of 10**_HELD_ORDER or more are held as maxAllowed (see the module docstring).
_HELD_ORDER = 41
# The scheduler's reading caps even upstream's fast-path values from 10**40 on.
_SCHEDULER_FAST_PATH_BOUND = 10**40 * NANO
# Decimals kept exactly below the unit; see _keep_decimals.
_KEPT_DECIMALS = 80


class QuantityFormat(enum.Enum):
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
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


class ParsedQuantity(NamedTuple):
    """A parsed quantity: the value held, in nano units, and how upstream parsed it."""

    nanos: int  # rounded up to a whole nano unit, bounded as the module docstring says
    format: QuantityFormat
    int64_fast_path: bool  # upstream's ParseQuantity kept it in an int64Amount, unrounded


def _split(text: str) -> tuple[bool, str, str, str]:
    """(positive, integer digits, fraction digits, suffix) as upstream's parseQuantityString."""
    end = len(text)
    pos = 0
    positive = True
    if text[0] == "-":
        positive = False
        pos = 1
    elif text[0] == "+":
        pos = 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    whole = text[start:pos]
    fraction = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        fraction = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise ValueError(FORMAT_ERROR)
    return positive, whole, fraction, text[suffix_start:]


def _interpret_suffix(suffix: str) -> tuple[int, int, QuantityFormat]:
    """(base, exponent, format) of a suffix: "Ki" is (2, 10), "k" and "e3" are (10, 3)."""
    decimal = _DECIMAL_SUFFIXES.get(suffix)
    if decimal is not None:
        return 10, decimal, QuantityFormat.DECIMAL_SI
    binary = _BINARY_SUFFIXES.get(suffix)
    if binary is not None:
        return 2, binary, QuantityFormat.BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        exponent = suffix[1:]
        digits = exponent[1:] if exponent[0] in "+-" else exponent
        # strconv.ParseInt(..., 10, 32) (leading zeros allowed): upstream refuses what does not
        # fit an int32; the length check keeps a megabyte of digits from becoming an int.
        if digits and all(c in _DIGITS for c in digits) and len(digits.lstrip("0")) <= 10:
            parsed = int(exponent)
            if -_MAX_INT32 - 1 <= parsed <= _MAX_INT32:
                return 10, parsed, QuantityFormat.DECIMAL_EXPONENT
    raise ValueError(SUFFIX_ERROR)


def _is_fast_path(base: int, exponent: int, whole: str, fraction: str) -> bool:
    """Whether upstream's ParseQuantity takes its int64 fast path (no rounding, no cap)."""
    num = whole.lstrip("0") or "0"
    if base == 10:
        return len(num) + len(fraction) <= _MAX_INT64_FACTORS and exponent - len(fraction) >= -9
    if fraction:
        return False
    precision = 15 - len(num) - (exponent * 3) // 10 - 1
    return precision >= 0 and (int(num) << exponent) <= MAX_ALLOWED


def _parse_text(text: str) -> ParsedQuantity:
    if not text:
        raise ValueError(FORMAT_ERROR)
    positive, whole, fraction, suffix = _split(text)
    base, exponent, fmt = _interpret_suffix(suffix)
    fast = _is_fast_path(base, exponent, whole, fraction)
    digits = (whole + fraction).lstrip("0")
    if not digits:
        # Upstream's slow path hands the digits to inf.Dec, which refuses an empty number ("-.").
        if not fast and not whole and not fraction:
            raise ValueError(NUMERIC_ERROR)
        return ParsedQuantity(0, fmt, fast)  # zero whatever the exponent
    # value = significant * 10**scale * 2**bits, bounded from the text's lengths alone.
    significant = digits.rstrip("0")
    scale = (exponent if base == 10 else 0) - len(fraction) + len(digits) - len(significant)
    bits = exponent if base == 2 else 0  # at most 60 (Ei)
    order = len(significant) + scale  # the value / 2**bits lies in [10**(order-1), 10**order)
    if order > _HELD_ORDER:
        nanos = _MAX_NANOS
    elif order + 19 <= -9:  # below 10**-9 even times 2**60: rounds up to one nano unit
        nanos = 1
    else:
        significant, scale = _keep_decimals(significant, scale)
        numerator = int(significant) * NANO << bits
        denominator = 1
        if scale >= 0:
            numerator *= 10**scale
        else:
            denominator = 10**-scale
        nanos = -(-numerator // denominator)  # rounded up (away from zero: still unsigned)
        if fmt is QuantityFormat.BINARY_SI:
            nanos = min(nanos, _MAX_NANOS)  # upstream caps BinarySI at maxAllowed
    return ParsedQuantity(nanos if positive else -nanos, fmt, fast)


def _keep_decimals(significant: str, scale: int) -> tuple[str, int]:
    """Drop digits below 10**-_KEPT_DECIMALS, standing in one unit just below for them.

    `significant` ends in a non-zero digit, so a dropped tail is never zero. Every multiple of
    1n / 2**60 has at most 69 decimals, so no rounding boundary lies between the exact value and
    the stand-in: rounding up to a nano unit gives the same result, from at most ~120 digits.
    """
    keep = len(significant) + scale + _KEPT_DECIMALS
    if len(significant) <= keep:
        return significant, scale
    return significant[:keep] + "1", -_KEPT_DECIMALS - 1


# Every pod parses the same few quantities ("100m", "500Mi") many times over: results are
# immutable, so they are cached. Only short spellings are: 8192 entries of a 3 MiB quantity
# each would be 24 GiB. Errors are not cached and are raised every time.
_CACHED_LENGTH = 64
_parse_cached = functools.lru_cache(maxsize=8192)(_parse_text)


def parse(text: str) -> ParsedQuantity:
    """Parse a quantity string; ValueError with upstream's message if it is malformed."""
    return _parse_cached(text) if len(text) <= _CACHED_LENGTH else _parse_text(text)


# --- the scheduler's reading: int nano units, MilliValue / Value -------------------------------


def parse_nanos(text: str) -> int:
    """The quantity `text` in nano units (exact; rounded up to a whole nano unit), capped at
    maxAllowed unless upstream's int64 fast path holds it (and it is below 10**40).

    Raises ValueError with upstream's message for a malformed quantity.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected a quantity string, got {type(text).__name__}")
    nanos, _, fast = parse(text)
    if fast and -_SCHEDULER_FAST_PATH_BOUND < nanos < _SCHEDULER_FAST_PATH_BOUND:
        return nanos
    return max(-_MAX_NANOS, min(nanos, _MAX_NANOS))


def _ceil_div_away_from_zero(nanos: int, unit: int) -> int:
    if nanos >= 0:
        return -(-nanos // unit)
    return -((-nanos + unit - 1) // unit)


def nanos_to_milli(nanos: int) -> int:
    return _ceil_div_away_from_zero(nanos, 10**6)


def nanos_to_value(nanos: int) -> int:
    return _ceil_div_away_from_zero(nanos, NANO)


def milli_value(quantity: str | int) -> int:
    """Upstream's Quantity.MilliValue: thousandths, rounded up. Accepts text or nano units."""
    nanos = quantity if isinstance(quantity, int) else parse_nanos(quantity)
    return nanos_to_milli(nanos)


def value(quantity: str | int) -> int:
    """Upstream's Quantity.Value: whole units, rounded up. Accepts text or nano units."""
    nanos = quantity if isinstance(quantity, int) else parse_nanos(quantity)
    return nanos_to_value(nanos)


# --- the API server's reading: exact Fractions, canonical printing -----------------------------


def _quantity_text(value: object) -> str:
    """The text of a JSON quantity: a string, or a number read from its spelling (upstream's
    Quantity.UnmarshalJSON parses an unquoted number's bytes); a bool is malformed."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    raise ValueError(FORMAT_ERROR)


def parse_quantity_with_format(value: str | int | float) -> tuple[Fraction, QuantityFormat]:
    """The exact value of a quantity and the format its suffix implies (kept when re-printed)."""
    nanos, fmt, _ = parse(_quantity_text(value))
    return Fraction(nanos, NANO), fmt


def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a Kubernetes quantity; ValueError with upstream's message if malformed."""
    return parse_quantity_with_format(value)[0]


def _round_up_to_nano(value: Fraction) -> Fraction:
    """Upstream keeps at most nano precision, rounding away from zero."""
    scaled = value * NANO
    if scaled.denominator == 1:
        return value
    magnitude = math.ceil(abs(scaled))
    return Fraction(magnitude if value > 0 else -magnitude, NANO)


def _decimal_mantissa_exponent(value: Fraction) -> tuple[int, int]:
    """value == mantissa * 10**exponent, exponent a multiple of 3 (upstream AsCanonicalBytes)."""
    exponent = -9
    mantissa = int(value * NANO)
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
    text = _quantity_text(value)
    if len(text) > _CACHED_LENGTH:
        return _parse_canonical_text(text)
    return _parse_canonical_cached(text)


def _parse_canonical_text(text: str) -> tuple[Fraction, str, QuantityFormat]:
    nanos, fmt, _ = parse(text)
    parsed = Fraction(nanos, NANO)
    return parsed, format_quantity(parsed, fmt), fmt


_parse_canonical_cached = functools.lru_cache(maxsize=4096)(_parse_canonical_text)
