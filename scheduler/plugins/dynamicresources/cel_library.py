"""The Kubernetes CEL libraries a DRA device selector calls, as values and functions for
cel-python: quantities (k8s.io/apiserver/pkg/cel/library/quantity.go) and semantic versions
(library/semverlib.go), and the string extensions of cel-go's ext.Strings that Kubernetes' base
environment has. Split from cel.py, which compiles and evaluates the selectors."""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction
from functools import total_ordering
from typing import Any

import celpy.celtypes as ct
from celpy.evaluation import CELEvalError

from apimachinery.quantity import FORMAT_ERROR, parse_quantity
from scheduler.api.resource import SemVer

# --- Kubernetes CEL library values -------------------------------------------------------


@total_ordering
class Quantity:
    """A `kubernetes.Quantity` value (k8s.io/apiserver/pkg/cel/library/quantity.go), exact."""

    __slots__ = ("value",)

    def __init__(self, value: Fraction) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            raise TypeError("no such overload")
        return self.value == other.value

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            raise TypeError("no such overload")
        return self.value < other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.value})"


@total_ordering
class Semver:
    """A `kubernetes.Semver` value (library/semverlib.go), ordered by semver precedence."""

    __slots__ = ("version",)

    def __init__(self, version: SemVer) -> None:
        self.version = version

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            raise TypeError("no such overload")
        return self.version.sort_key() == other.version.sort_key()

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            raise TypeError("no such overload")
        return self.version.sort_key() < other.version.sort_key()

    def __hash__(self) -> int:
        return hash(self.version.sort_key())

    def __repr__(self) -> str:
        return f"Semver({self.version.text})"


_SEMVER_STRICT = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


def _normalize_semver(text: str) -> str:
    """semverlib's normalization: drop a leading "v", fill missing minor/patch with 0, drop
    leading zeros of the numeric core."""
    text = text.removeprefix("v")
    core, sep, rest = text, "", ""
    for i, ch in enumerate(text):
        if ch in "-+":
            core, sep, rest = text[:i], ch, text[i + 1 :]
            break
    parts = core.split(".")
    if len(parts) > 3:
        return text
    parts = [p.lstrip("0") or "0" if p.isdigit() else p for p in parts]
    while len(parts) < 3:
        parts.append("0")
    return ".".join(parts) + (sep + rest if sep else "")


def _parse_semver(text: str, normalize: bool = False) -> SemVer:
    if normalize:
        text = _normalize_semver(text)
    if not _SEMVER_STRICT.match(text):
        raise ValueError(f"could not parse {text!r} as semver")
    return SemVer.parse(text)


def _quantity(text: Any) -> Any:
    if not isinstance(text, str):
        raise TypeError("no such overload")
    try:
        return Quantity(parse_quantity(str(text)))
    except ValueError:
        return CELEvalError(FORMAT_ERROR)


def _is_quantity(text: Any) -> ct.BoolType:
    if not isinstance(text, str):
        raise TypeError("no such overload")
    try:
        parse_quantity(str(text))
    except ValueError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def _semver(text: Any, normalize: Any = False) -> Any:
    if not isinstance(text, str) or not isinstance(normalize, bool | ct.BoolType):
        raise TypeError("no such overload")
    try:
        return Semver(_parse_semver(str(text), bool(normalize)))
    except ValueError as err:
        return CELEvalError(str(err))


def _is_semver(text: Any, normalize: Any = False) -> ct.BoolType:
    if not isinstance(text, str) or not isinstance(normalize, bool | ct.BoolType):
        raise TypeError("no such overload")
    try:
        _parse_semver(str(text), bool(normalize))
    except ValueError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def _same_kind(a: Any, b: Any) -> None:
    if not (
        (isinstance(a, Quantity) and isinstance(b, Quantity))
        or (isinstance(a, Semver) and isinstance(b, Semver))
    ):
        raise TypeError("no such overload")


def _is_greater_than(a: Any, b: Any) -> ct.BoolType:
    _same_kind(a, b)
    return ct.BoolType(a > b)


def _is_less_than(a: Any, b: Any) -> ct.BoolType:
    _same_kind(a, b)
    return ct.BoolType(a < b)


def _compare_to(a: Any, b: Any) -> ct.IntType:
    _same_kind(a, b)
    return ct.IntType(0 if a == b else (1 if a > b else -1))


def _quantity_operand(b: Any) -> Fraction:
    if isinstance(b, Quantity):
        return b.value
    if isinstance(b, int) and not isinstance(b, bool):
        return Fraction(int(b))
    raise TypeError("no such overload")


def _add(a: Any, b: Any) -> Quantity:
    if not isinstance(a, Quantity):
        raise TypeError("no such overload")
    return Quantity(a.value + _quantity_operand(b))


def _sub(a: Any, b: Any) -> Quantity:
    if not isinstance(a, Quantity):
        raise TypeError("no such overload")
    return Quantity(a.value - _quantity_operand(b))


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _as_integer(a: Any) -> Any:
    if not isinstance(a, Quantity):
        raise TypeError("no such overload")
    if a.value.denominator != 1 or not _INT64_MIN <= a.value <= _INT64_MAX:
        return CELEvalError("cannot convert value to integer")
    return ct.IntType(int(a.value))


def _is_integer(a: Any) -> ct.BoolType:
    if not isinstance(a, Quantity):
        raise TypeError("no such overload")
    return ct.BoolType(a.value.denominator == 1 and _INT64_MIN <= a.value <= _INT64_MAX)


def _as_approximate_float(a: Any) -> ct.DoubleType:
    if not isinstance(a, Quantity):
        raise TypeError("no such overload")
    return ct.DoubleType(float(a.value))


def _sign(a: Any) -> ct.IntType:
    if not isinstance(a, Quantity):
        raise TypeError("no such overload")
    return ct.IntType((a.value > 0) - (a.value < 0))


def _version_part(index: int) -> Callable[[Any], ct.IntType]:
    def part(a: Any) -> ct.IntType:
        if not isinstance(a, Semver):
            raise TypeError("no such overload")
        v = a.version
        return ct.IntType((v.major, v.minor, v.patch)[index])

    return part


def _str_method(fn: Callable[..., Any]) -> Callable[..., Any]:
    def method(s: Any, *args: Any) -> Any:
        if not isinstance(s, str):
            raise TypeError("no such overload")
        return fn(str(s), *args)

    return method


def _split(s: str, sep: Any, limit: Any = -1) -> ct.ListType:
    n = int(limit)
    if n == 0:
        return ct.ListType([])
    parts = s.split(str(sep)) if n < 0 else s.split(str(sep), n - 1)
    return ct.ListType([ct.StringType(p) for p in parts])


def _index_of(s: str, sub: Any, start: Any = 0) -> ct.IntType:
    return ct.IntType(s.find(str(sub), int(start)))


def _find(s: str, pattern: Any) -> ct.StringType:
    match = re.search(str(pattern), s)
    return ct.StringType(match.group(0) if match else "")


def _includes(container: Any, item: Any) -> ct.BoolType:
    """A scalar attribute "includes" itself only (list attributes are not in v1 yet)."""
    return ct.BoolType(bool(container == item))


# The functions a selector may call (celpy's base functions are added by celpy itself).
LIBRARY_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": _semver,
    "isSemver": _is_semver,
    "isGreaterThan": _is_greater_than,
    "isLessThan": _is_less_than,
    "compareTo": _compare_to,
    "add": _add,
    "sub": _sub,
    "asInteger": _as_integer,
    "isInteger": _is_integer,
    "asApproximateFloat": _as_approximate_float,
    "sign": _sign,
    "major": _version_part(0),
    "minor": _version_part(1),
    "patch": _version_part(2),
    # cel-go ext.Strings, part of Kubernetes' base environment
    "lowerAscii": _str_method(lambda s: ct.StringType(s.lower())),
    "upperAscii": _str_method(lambda s: ct.StringType(s.upper())),
    "trim": _str_method(lambda s: ct.StringType(s.strip())),
    "split": _str_method(_split),
    "indexOf": _str_method(_index_of),
    "replace": _str_method(lambda s, a, b: ct.StringType(s.replace(str(a), str(b)))),
    "find": _str_method(_find),
}
