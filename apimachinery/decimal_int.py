"""Canonical decimal integers, as the Lt / Gt toleration operators read taint values.

Upstream: k8s.io/apimachinery/pkg/api/validate/content/decimal_int.go (IsDecimalInteger, with its
message), strconv.ParseInt(value, 10, 64)'s int64 range and its error text, and k8s.io/api
core/v1/toleration.go's compareNumericValues (TaintTolerationComparisonOperators, alpha in v1.36
and v1.37). Here, below both sides, because the scheduler compares values in its filters and
kubesim in its validation and its NoExecute taint eviction, as kube-scheduler, kube-apiserver
and kube-controller-manager share those packages.
"""

from __future__ import annotations

from apimachinery.validation import EMPTY_ERROR

DECIMAL_INTEGER_ERROR = "must be a valid decimal integer in canonical form"
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def is_decimal_integer(value: str) -> list[str]:
    """IsDecimalInteger: "0", or an optional "-" then a digit 1-9 and more digits (no "+", no
    leading zero, no space, no "-0"); the errors upstream returns, empty when canonical."""
    if not value:
        return [EMPTY_ERROR]
    digits = value[1:] if value[0] == "-" else value
    if digits == "0" and value == "0":
        return []
    if not digits or not "1" <= digits[0] <= "9" or not all("0" <= c <= "9" for c in digits):
        return [DECIMAL_INTEGER_ERROR]
    return []


def parse_int64_error(value: str) -> str | None:
    """strconv.ParseInt(value, 10, 64)'s error text, or None when it parses."""
    body = value[1:] if value[:1] in ("+", "-") else value
    if not body or not all("0" <= c <= "9" for c in body):
        return f'strconv.ParseInt: parsing "{value}": invalid syntax'
    if not INT64_MIN <= int(value) <= INT64_MAX:
        return f'strconv.ParseInt: parsing "{value}": value out of range'
    return None


def decimal_int64(value: str) -> int | None:
    """`value` as an int64 when it is canonical and in range (IsDecimalInteger, then
    ParseInt), else None."""
    if is_decimal_integer(value):
        return None
    number = int(value)
    return number if INT64_MIN <= number <= INT64_MAX else None


def compare_numeric_values(toleration_value: str, taint_value: str, operator: str) -> bool:
    """compareNumericValues: `Lt` tolerates a taint whose value is below the toleration's, `Gt`
    one above; a value on either side that is not a canonical int64 tolerates nothing
    (upstream logs it; the API server refuses such a toleration value)."""
    threshold = decimal_int64(toleration_value)
    if threshold is None:
        return False
    actual = decimal_int64(taint_value)
    if actual is None:
        return False
    if operator == "Lt":
        return actual < threshold
    if operator == "Gt":
        return actual > threshold
    return False
