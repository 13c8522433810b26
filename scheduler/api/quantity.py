"""Kubernetes resource quantities ("100m", "0.5", "1e3", "500M", "2Gi", "1.5Gi", ...), exactly.

Follows k8s.io/apimachinery/pkg/api/resource/quantity.go (ParseQuantity, parseQuantityString,
the suffixer, MilliValue / Value):
- the number is read exactly (integers, no float), the suffix is a decimal SI suffix
  (n u m "" k M G T P E), a binary one (Ki Mi Gi Ti Pi Ei) or a decimal exponent (e3, E-2);
- the value is rounded up (away from zero) to a whole nano unit, as upstream rounds to
  inf.Dec scale 9 with RoundUp, and its magnitude is capped at 2**63-1;
- `milli_value` / `value` round up (away from zero) like upstream's ScaledValue.

A parsed quantity is represented as an int of nano units, which makes sums and maxima of
quantities exact before the final rounding (as upstream adds Quantities, not their MilliValues).
"""

from __future__ import annotations

from functools import lru_cache

FORMAT_ERROR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
SUFFIX_ERROR = "unable to parse quantity's suffix"
NUMERIC_ERROR = "unable to parse numeric part of quantity"

NANO = 10**9
_MAX_MAGNITUDE = 2**63 - 1  # upstream's maxAllowed
_MAX_INT32 = 2**31 - 1
_MAX_INT64_FACTORS = 18
# Beyond 10**±_MAX_ORDER a value is capped (or rounded up to 1n) without exact arithmetic.
_MAX_ORDER = 40
# Decimals kept exactly below the unit; see _keep_decimals.
_KEPT_DECIMALS = 80

_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
# suffix → (base, exponent)
_SUFFIXES: dict[str, tuple[int, int]] = {
    "n": (10, -9),
    "u": (10, -6),
    "m": (10, -3),
    "": (10, 0),
    "k": (10, 3),
    "M": (10, 6),
    "G": (10, 9),
    "T": (10, 12),
    "P": (10, 15),
    "E": (10, 18),
    "Ki": (2, 10),
    "Mi": (2, 20),
    "Gi": (2, 30),
    "Ti": (2, 40),
    "Pi": (2, 50),
    "Ei": (2, 60),
}


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


def _interpret_suffix(suffix: str) -> tuple[int, int]:
    known = _SUFFIXES.get(suffix)
    if known is not None:
        return known
    if len(suffix) > 1 and suffix[0] in "eE":
        exponent = suffix[1:]
        digits = exponent[1:] if exponent[0] in "+-" else exponent
        # strconv.ParseInt (leading zeros allowed), then upstream refuses what does not fit a
        # (negatable) int32; the length check keeps a megabyte of digits from becoming an int.
        if digits and all(c in _DIGITS for c in digits) and len(digits.lstrip("0")) <= 10:
            parsed = int(exponent)
            if -_MAX_INT32 <= parsed <= _MAX_INT32:
                return 10, parsed
    raise ValueError(SUFFIX_ERROR)


def _is_fast_path(base: int, exponent: int, whole: str, fraction: str) -> bool:
    """Whether upstream's ParseQuantity takes its int64 fast path (no rounding, no cap)."""
    num = whole.lstrip("0") or "0"
    if base == 10:
        return len(num) + len(fraction) <= _MAX_INT64_FACTORS and exponent - len(fraction) >= -9
    if fraction:
        return False
    precision = 15 - len(num) - (exponent * 3) // 10 - 1
    return precision >= 0 and (int(num) << exponent) <= _MAX_MAGNITUDE


@lru_cache(maxsize=8192)
def _parse_nanos(text: str) -> int:
    if not text:
        raise ValueError(FORMAT_ERROR)
    positive, whole, fraction, suffix = _split(text)
    base, exponent = _interpret_suffix(suffix)
    fast = _is_fast_path(base, exponent, whole, fraction)
    digits = (whole + fraction).lstrip("0")
    if not digits:
        # Upstream's slow path hands the digits to inf.Dec, which refuses an empty number ("-.").
        if not fast and not whole and not fraction:
            raise ValueError(NUMERIC_ERROR)
        return 0
    # value = digits * 10**scale * 2**bits, read from the text's lengths alone: a 3 MB string of
    # digits or an exponent of 2147483647 must not become an int (or a power) before it is bounded.
    significant = digits.rstrip("0")
    scale = (exponent if base == 10 else 0) - len(fraction) + len(digits) - len(significant)
    bits = exponent if base == 2 else 0
    order = len(significant) + scale + bits * 3 // 10
    if order > _MAX_ORDER:
        nanos = _MAX_MAGNITUDE * NANO
    elif order < -_MAX_ORDER:
        nanos = 1
    else:
        significant, scale = _keep_decimals(significant, scale)
        # value in nano units, rounded up (away from zero)
        numerator = int(significant) * NANO << bits
        denominator = 1
        if scale >= 0:
            numerator *= 10**scale
        else:
            denominator = 10**-scale
        nanos = -(-numerator // denominator)
        if not fast:
            nanos = min(nanos, _MAX_MAGNITUDE * NANO)
    return nanos if positive else -nanos


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


def parse_nanos(text: str) -> int:
    """The quantity `text` in nano units (exact; rounded up to a whole nano unit).

    Raises ValueError with upstream's message for a malformed quantity.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected a quantity string, got {type(text).__name__}")
    return _parse_nanos(text)


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
