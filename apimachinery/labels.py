"""Label selectors: one requirement model, parsed from an object or from the string grammar.

- `LabelSelector.from_dict` reads a metav1.LabelSelector ({matchLabels, matchExpressions}) as
  `LabelSelectorAsSelector` does (k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go): a missing
  (None) selector matches nothing, an empty one matches everything, and an invalid one raises
  `MalformedObject` naming the field path in short messages. The scheduler reads pod affinity
  terms, topology spread constraints and claims with it; its node selectors (scheduler.api
  .selectors) are built from the same requirements (`new_requirement`, `expression`).
- `LabelSelector.lenient` reads the same object as written, never rejecting what validation
  would (unknown operators are ignored, keys and values compared as they are): kubesim's
  controllers, volume matching and PDBs read selectors of stored objects with it, as its one
  loose matcher always did.
- `LabelSelector.parse` reads the ?labelSelector= grammar as k8s.io/apimachinery/pkg/labels/
  selector.go's lexer and parser do, raising `SelectorError` with upstream's exact texts
  (validation messages from apimachinery.validation). kubesim filters list and watch with it.

Both produce the same `Requirement`s, matched as upstream's Requirement.Matches: the grammar's
"=" and "==" are In with one value, "!=" is NotIn, "gt" / "lt" compare integers read by
strconv.ParseInt (a label value that is not one matches neither).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apimachinery.errors import MalformedObject
from apimachinery.validation import (
    LABEL_VALUE_MAX_LENGTH,
    QualifiedNameViolation,
    is_qualified_name,
    is_valid_label_value,
    qualified_name_violations,
)

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"

LABEL_SELECTOR_OPERATORS = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST})
NODE_SELECTOR_OPERATORS = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT})

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# strconv.ParseInt(s, 10, 64): optional sign, ASCII digits only (Python's int() is laxer).
_DECIMAL_INT = re.compile(r"[+-]?[0-9]+\Z")


class SelectorError(ValueError):
    """A ?labelSelector= that does not parse; str() is upstream's message."""


class InvalidRequirement(Exception):
    """A semantic error in one requirement (as opposed to a JSON type error)."""


def parse_int64(text: str) -> int | None:
    """The integer strconv.ParseInt(text, 10, 64) would return, or None where it fails."""
    if not _DECIMAL_INT.match(text) or len(text.lstrip("+-").lstrip("0")) > 19:
        return None  # not a number, or more digits than any int64 (and than int() will read)
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def label_key_error(key: str) -> str | None:
    """Why `key` is not a valid label key (upstream's IsQualifiedName), in a short sentence for
    the scheduler's MalformedObject messages, or None."""
    violations = qualified_name_violations(key)
    if not violations:
        return None
    violation = violations[0]
    if violation is QualifiedNameViolation.NAME_EMPTY:
        return f"name part of {key!r} must be non-empty"
    if violation is QualifiedNameViolation.NAME_TOO_LONG:
        return f"name part of {key!r} must be no more than 63 characters"
    if violation is QualifiedNameViolation.NAME_INVALID:
        return (
            f"name part of {key!r} must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    # more than one '/' reads as a prefix that is no subdomain
    return f"prefix part of {key!r} must be a DNS-1123 subdomain"


def label_value_error(value: str) -> str | None:
    """Why `value` is not a valid label value (upstream's IsValidLabelValue), in a short
    sentence, or None."""
    if not is_valid_label_value(value):
        return None
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        return f"label value {value!r} must be no more than 63 characters"
    return (
        f"label value {value!r} must consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character"
    )


@dataclass(frozen=True, slots=True)
class Requirement:
    """One label requirement (upstream's labels.Requirement)."""

    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: frozenset[str] = frozenset()
    bound: int = 0  # the integer operand of Gt / Lt

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == IN:
            value = labels.get(self.key)
            return value is not None and value in self.values
        if op == NOT_IN:
            value = labels.get(self.key)
            return value is None or value not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        value = labels.get(self.key)
        if value is None:
            return False
        number = parse_int64(value)
        if number is None:
            return False
        return number > self.bound if op == GT else number < self.bound


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed label selector. `LabelSelector.from_dict(None)` matches nothing."""

    requirements: tuple[Requirement, ...] = ()
    matches_nothing: bool = False

    @classmethod
    def everything(cls) -> LabelSelector:
        return cls()

    @classmethod
    def nothing(cls) -> LabelSelector:
        return cls(matches_nothing=True)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any] | None, path: str = "") -> LabelSelector:
        """Parse a metav1.LabelSelector; `path` prefixes field paths in error messages."""
        if obj is None:
            return cls.nothing()
        if not isinstance(obj, Mapping):
            raise MalformedObject(f"{_at(path)}expected an object, got {type(obj).__name__}")
        match_labels = _mapping(obj.get("matchLabels"), _join(path, "matchLabels"))
        expressions = optional_list(obj.get("matchExpressions"), _join(path, "matchExpressions"))
        requirements: list[Requirement] = []
        for key, value in match_labels.items():
            field_path = _join(path, f"matchLabels.{key}")
            if not isinstance(value, str):
                raise MalformedObject(f"{field_path}: expected a string")
            try:
                requirements.append(new_requirement(key, IN, [value], LABEL_SELECTOR_OPERATORS))
            except InvalidRequirement as err:
                raise MalformedObject(f"{field_path}: {err}") from None
        for index, expr in enumerate(expressions):
            expr_path = f"{_join(path, 'matchExpressions')}[{index}]"
            key, operator, values = expression(expr, expr_path)
            try:
                requirements.append(
                    new_requirement(key, operator, values, LABEL_SELECTOR_OPERATORS)
                )
            except InvalidRequirement as err:
                raise MalformedObject(f"{expr_path}: {err}") from None
        return cls(_sorted(requirements))

    @classmethod
    def lenient(cls, obj: Any) -> LabelSelector:
        """A metav1.LabelSelector read as written, for objects nobody validated (kubesim's
        controllers and volume matching read stored objects, and the API accepts some kinds
        unchecked): where `from_dict` would reject a selector, this one still matches.

        None matches nothing, {} everything; matchLabels and In / NotIn / Exists /
        DoesNotExist expressions mean what they mean in a valid selector. Past that: keys and
        values are taken as written (an invalid key or value is compared like any other),
        values of Exists / DoesNotExist are ignored, In with no values matches nothing and
        NotIn with none everything, an expression with an unknown operator (Gt, Lt, "") is
        ignored, a non-string matchLabels value never equals a label and a null one asks for
        the label to be absent. Only containers of the wrong JSON type (the selector,
        matchLabels or an expression not an object, matchExpressions or values not a list, an
        expression's key a list or an object) raise MalformedObject.
        """
        if obj is None:
            return cls.nothing()
        if not isinstance(obj, Mapping):
            raise MalformedObject(f"expected an object, got {type(obj).__name__}")
        requirements: list[Requirement] = []
        for key, value in _mapping(obj.get("matchLabels") or None, "matchLabels").items():
            if value is None:
                requirements.append(Requirement(key, DOES_NOT_EXIST))
            else:
                requirements.append(Requirement(key, IN, _comparable([value])))
        expressions = optional_list(obj.get("matchExpressions") or None, "matchExpressions")
        for index, expr in enumerate(expressions):
            path = f"matchExpressions[{index}]"
            if not isinstance(expr, Mapping):
                raise MalformedObject(f"{path}: expected an object, got {type(expr).__name__}")
            expr_key, operator = expr.get("key"), expr.get("operator")
            if isinstance(expr_key, (list, dict)):
                raise MalformedObject(f"{path}.key: expected a string")
            values = _comparable(optional_list(expr.get("values") or None, f"{path}.values"))
            if isinstance(operator, str) and operator in LABEL_SELECTOR_OPERATORS:
                # a missing (None) or non-string key is a label no object has
                requirements.append(Requirement(_as_is(expr_key), operator, values))
        return cls(tuple(requirements))

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse the ?labelSelector= grammar; an empty string selects everything."""
        return cls(_sorted(_Parser(text).parse()))

    def is_everything(self) -> bool:
        return not self.matches_nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.matches_nothing:
            return False
        # A plain loop: this runs per node per pod, and all(<genexpr>) is measurably slower.
        for requirement in self.requirements:  # noqa: SIM110
            if not requirement.matches(labels):
                return False
        return True


def _sorted(requirements: list[Requirement]) -> tuple[Requirement, ...]:
    # Sorted by key as upstream's internalSelector is, so equal selectors compare equal.
    requirements.sort(key=lambda r: (r.key, r.operator))
    return tuple(requirements)


def new_requirement(
    key: str, operator: str, values: Sequence[str], allowed: frozenset[str]
) -> Requirement:
    """Upstream's labels.NewRequirement validation for the operators `allowed`, in short
    messages; raises InvalidRequirement."""
    if operator not in allowed:
        raise InvalidRequirement(f"{operator!r} is not a valid label selector operator")
    if (error := label_key_error(key)) is not None:
        raise InvalidRequirement(f"key: Invalid value: {error}")
    if operator in (IN, NOT_IN) and not values:
        raise InvalidRequirement(
            "values: Required value: for 'in', 'notin' operators, values set can't be empty"
        )
    if operator in (EXISTS, DOES_NOT_EXIST) and values:
        raise InvalidRequirement(
            "values: Forbidden: values set must be empty for exists and does not exist"
        )
    bound = 0
    if operator in (GT, LT):
        if len(values) != 1:
            raise InvalidRequirement(
                "values: Required value: for 'Gt', 'Lt' operators, exactly one value is required"
            )
        parsed = parse_int64(values[0])
        if parsed is None:
            raise InvalidRequirement(
                f"values[0]: Invalid value: {values[0]!r}: for 'Gt', 'Lt' operators, "
                "the value must be an integer"
            )
        bound = parsed
    for value in values:
        if (error := label_value_error(value)) is not None:
            raise InvalidRequirement(f"values: Invalid value: {error}")
    return Requirement(key, operator, frozenset(values), bound)


def expression(expr: Any, path: str) -> tuple[str, str, list[str]]:
    """(key, operator, values) of one {key, operator, values} expression, JSON types checked."""
    if not isinstance(expr, Mapping):
        raise MalformedObject(f"{path}: expected an object, got {type(expr).__name__}")
    key = expr.get("key", "")
    operator = expr.get("operator", "")
    if not isinstance(key, str):
        raise MalformedObject(f"{path}.key: expected a string")
    if not isinstance(operator, str):
        raise MalformedObject(f"{path}.operator: expected a string")
    values = optional_list(expr.get("values"), f"{path}.values")
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise MalformedObject(f"{path}.values[{index}]: expected a string")
    return key, operator, values


def optional_list(value: Any, path: str) -> list[Any]:
    """A JSON list that may be missing (None reads as empty)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedObject(f"{path}: expected a list, got {type(value).__name__}")
    return value


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MalformedObject(f"{path}: expected an object, got {type(value).__name__}")
    return value


def _as_is(value: Any) -> Any:
    """A key of an unvalidated selector kept as written (None: the expression named none; a
    number: no label has it)."""
    return value


def _comparable(values: Sequence[Any]) -> frozenset[str]:
    """The values of an unvalidated selector as written, less lists and objects: a label
    equals none of those, nor any other non-string value kept here."""
    kept: frozenset[Any] = frozenset(v for v in values if not isinstance(v, (list, dict)))
    return kept


def _join(path: str, child: str) -> str:
    return f"{path}.{child}" if path else child


def _at(path: str) -> str:
    return f"{path}: " if path else ""


# --- the ?labelSelector= grammar (pkg/labels/selector.go) --------------------------------------


class _Tok(enum.Enum):
    ERROR = enum.auto()
    EOS = enum.auto()
    CLOSED_PAR = enum.auto()
    COMMA = enum.auto()
    DOES_NOT_EXIST = enum.auto()
    DOUBLE_EQUALS = enum.auto()
    EQUALS = enum.auto()
    GREATER_THAN = enum.auto()
    IDENTIFIER = enum.auto()
    IN = enum.auto()
    LESS_THAN = enum.auto()
    NOT_EQUALS = enum.auto()
    NOT_IN = enum.auto()
    OPEN_PAR = enum.auto()


_STRING_TO_TOKEN = {
    ")": _Tok.CLOSED_PAR,
    ",": _Tok.COMMA,
    "!": _Tok.DOES_NOT_EXIST,
    "==": _Tok.DOUBLE_EQUALS,
    "=": _Tok.EQUALS,
    ">": _Tok.GREATER_THAN,
    "in": _Tok.IN,
    "<": _Tok.LESS_THAN,
    "!=": _Tok.NOT_EQUALS,
    "notin": _Tok.NOT_IN,
    "(": _Tok.OPEN_PAR,
}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")


def _lex(text: str) -> list[tuple[_Tok, str]]:
    items: list[tuple[_Tok, str]] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= end:
            items.append((_Tok.EOS, ""))
            return items
        if text[pos] in _SPECIAL:
            # Longest run of special symbols that is still a token ("!=" not "!" then "=").
            buffer, last = "", None
            while pos < end and text[pos] in _SPECIAL:
                candidate = buffer + text[pos]
                if candidate in _STRING_TO_TOKEN:
                    buffer, last = candidate, (_STRING_TO_TOKEN[candidate], candidate)
                    pos += 1
                elif last is not None:
                    break
                else:
                    buffer = candidate
                    pos += 1
            if last is None:
                items.append((_Tok.ERROR, f"error expected: keyword found '{buffer}'"))
            else:
                items.append(last)
            continue
        start = pos
        while pos < end and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
            pos += 1
        word = text[start:pos]
        items.append((_STRING_TO_TOKEN.get(word, _Tok.IDENTIFIER), word))


_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"
# The grammar's operators as the requirement operators they match like (Requirement.Matches).
_TOKEN_TO_OPERATOR = {
    _Tok.IN: IN,
    _Tok.EQUALS: IN,
    _Tok.DOUBLE_EQUALS: IN,
    _Tok.GREATER_THAN: GT,
    _Tok.LESS_THAN: LT,
    _Tok.NOT_IN: NOT_IN,
    _Tok.NOT_EQUALS: NOT_IN,
}


def _field_invalid(path: str, value: str, detail: str) -> str:
    return f'{path}: Invalid value: "{_go_quote(value)}": {detail}'


def _go_quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


class _Parser:
    def __init__(self, text: str) -> None:
        self._items = _lex(text)
        self._pos = 0

    def _peek(self, values: bool) -> tuple[_Tok, str]:
        tok, lit = self._items[self._pos]
        if values and tok in (_Tok.IN, _Tok.NOT_IN):
            tok = _Tok.IDENTIFIER  # "in"/"notin" are plain values where a value is expected
        return tok, lit

    def _next(self, values: bool) -> tuple[_Tok, str]:
        item = self._peek(values)
        self._pos += 1
        return item

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self._peek(values=True)
            if tok in (_Tok.IDENTIFIER, _Tok.DOES_NOT_EXIST):
                try:
                    requirements.append(self._requirement())
                except SelectorError as err:
                    raise SelectorError(f"unable to parse requirement: {err}") from None
                tok, lit = self._next(values=True)
                if tok is _Tok.EOS:
                    return requirements
                if tok is _Tok.COMMA:
                    tok2, lit2 = self._peek(values=True)
                    if tok2 not in (_Tok.IDENTIFIER, _Tok.DOES_NOT_EXIST):
                        raise SelectorError(f"found '{lit2}', expected: identifier after ','")
                    continue
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            if tok is _Tok.EOS:
                return requirements
            raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def _requirement(self) -> Requirement:
        tok, lit = self._next(values=True)
        does_not_exist = tok is _Tok.DOES_NOT_EXIST
        if does_not_exist:
            tok, lit = self._next(values=True)
        if tok is not _Tok.IDENTIFIER:
            raise SelectorError(f"found '{lit}', expected: identifier")
        key = lit
        key_errors = is_qualified_name(key)
        if key_errors:
            raise SelectorError(_field_invalid("<nil>", key, "; ".join(key_errors)))
        if does_not_exist:
            return Requirement(key, DOES_NOT_EXIST)
        if self._peek(values=True)[0] in (_Tok.EOS, _Tok.COMMA):
            return Requirement(key, EXISTS)
        op_tok, op_lit = self._next(values=False)
        operator = _TOKEN_TO_OPERATOR.get(op_tok)
        if operator is None:
            raise SelectorError(f"found '{op_lit}', expected: {_BINARY_OPERATORS}")
        values = self._set_values() if op_tok in (_Tok.IN, _Tok.NOT_IN) else self._exact_value()
        return _checked_requirement(key, operator, sorted(values))

    def _set_values(self) -> set[str]:
        tok, lit = self._next(values=True)
        if tok is not _Tok.OPEN_PAR:
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self._peek(values=True)
        if tok in (_Tok.IDENTIFIER, _Tok.COMMA):
            values = self._identifier_list()
            if self._next(values=True)[0] is not _Tok.CLOSED_PAR:
                raise SelectorError(f"found '{lit}', expected: ')'")
            return values
        if tok is _Tok.CLOSED_PAR:
            self._next(values=True)
            return {""}
        raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")

    def _identifier_list(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self._next(values=True)
            if tok is _Tok.IDENTIFIER:
                values.add(lit)
                tok2, lit2 = self._peek(values=True)
                if tok2 is _Tok.COMMA:
                    continue
                if tok2 is _Tok.CLOSED_PAR:
                    return values
                raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            if tok is _Tok.COMMA:
                if not values:
                    values.add("")  # "(,"
                tok2, _ = self._peek(values=True)
                if tok2 is _Tok.CLOSED_PAR:
                    values.add("")  # ",)"
                    return values
                if tok2 is _Tok.COMMA:
                    self._next(values=True)
                    values.add("")  # ",,"
                continue
            raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        tok, _ = self._peek(values=True)
        if tok in (_Tok.EOS, _Tok.COMMA):
            return {""}
        tok, lit = self._next(values=True)
        if tok is _Tok.IDENTIFIER:
            return {lit}
        raise SelectorError(f"found '{lit}', expected: identifier")


def _checked_requirement(key: str, operator: str, values: list[str]) -> Requirement:
    """Upstream's NewRequirement checks with its messages (the parser checked the key)."""
    errors: list[str] = []
    bound = 0
    if operator in (GT, LT):
        for i, value in enumerate(values):
            parsed = parse_int64(value)
            if parsed is None:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                errors.append(_field_invalid(f"values[{i}]", value, detail))
            else:
                bound = parsed
    for i, value in enumerate(values):
        value_errors = is_valid_label_value(value)
        if value_errors:
            errors.append(_field_invalid(f"values[{i}][{key}]", value, "; ".join(value_errors)))
    if len(errors) == 1:
        raise SelectorError(errors[0])
    if errors:
        raise SelectorError("[" + ", ".join(errors) + "]")
    return Requirement(key, operator, frozenset(values), bound)
