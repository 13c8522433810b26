"""Label selectors and node selectors with upstream's matching rules.

- `LabelSelector` is metav1.LabelSelector as `LabelSelectorAsSelector` interprets it
  (k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go): a missing (None) selector matches nothing,
  an empty one (no matchLabels, no matchExpressions) matches everything. An invalid selector
  raises `MalformedObject` (upstream returns an error).
- `NodeSelector` is v1.NodeSelector as k8s.io/component-helpers/scheduling/corev1/nodeaffinity
  interprets it: terms are ORed, a term's requirements ANDed, an empty term matches nothing, and
  a term that fails to parse (unknown operator, Gt with a non-integer, ...) never matches while
  the other terms still may (upstream's LazyErrorNodeSelector, whose error RequiredNodeAffinity
  ignores). `parse_errors` lists what failed, for plugins that report it (NodeAffinity PreScore).
  Wrong JSON types (a string where a list belongs) raise `MalformedObject`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler.api.errors import MalformedObject

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"

LABEL_SELECTOR_OPERATORS = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST})
NODE_SELECTOR_OPERATORS = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT})

# The one field a node selector term may match on (upstream's nodeFields).
NODE_NAME_FIELD = "metadata.name"

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# strconv.ParseInt(s, 10, 64): optional sign, ASCII digits only (Python's int() is laxer).
_DECIMAL_INT = re.compile(r"[+-]?[0-9]+\Z")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_DNS1123_SUBDOMAIN = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z"
)


def parse_int64(text: str) -> int | None:
    """The integer strconv.ParseInt(text, 10, 64) would return, or None where it fails."""
    if not _DECIMAL_INT.match(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def label_key_error(key: str) -> str | None:
    """Why `key` is not a valid label key (upstream's IsQualifiedName), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        return f"prefix part of {key!r} must be a DNS-1123 subdomain"
    if not name:
        return f"name part of {key!r} must be non-empty"
    if len(name) > 63:
        return f"name part of {key!r} must be no more than 63 characters"
    if not _QUALIFIED_NAME.match(name):
        return (
            f"name part of {key!r} must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None


def label_value_error(value: str) -> str | None:
    """Why `value` is not a valid label value (upstream's IsValidLabelValue), or None."""
    if len(value) > 63:
        return f"label value {value!r} must be no more than 63 characters"
    if value and not _QUALIFIED_NAME.match(value):
        return (
            f"label value {value!r} must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None


class _ParseError(Exception):
    """A semantic error in a requirement (as opposed to a JSON type error)."""


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
class FieldRequirement:
    """A matchFields requirement: In / NotIn with exactly one value (upstream's field selector)."""

    key: str
    operator: str  # In | NotIn
    value: str

    def matches(self, node_name: str) -> bool:
        # The only field a node offers is metadata.name; other keys read as "" (fields.Set.Get).
        actual = node_name if self.key == NODE_NAME_FIELD else ""
        return (actual == self.value) if self.operator == IN else (actual != self.value)


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed metav1.LabelSelector. `LabelSelector.from_dict(None)` matches nothing."""

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
        """Parse a LabelSelector; `path` prefixes field paths in error messages."""
        if obj is None:
            return cls.nothing()
        if not isinstance(obj, Mapping):
            raise MalformedObject(f"{_at(path)}expected an object, got {type(obj).__name__}")
        match_labels = _mapping(obj.get("matchLabels"), _join(path, "matchLabels"))
        expressions = _list(obj.get("matchExpressions"), _join(path, "matchExpressions"))
        requirements: list[Requirement] = []
        for key, value in match_labels.items():
            field_path = _join(path, f"matchLabels.{key}")
            if not isinstance(value, str):
                raise MalformedObject(f"{field_path}: expected a string")
            try:
                requirements.append(_requirement(key, IN, [value], LABEL_SELECTOR_OPERATORS))
            except _ParseError as err:
                raise MalformedObject(f"{field_path}: {err}") from None
        for index, expr in enumerate(expressions):
            expr_path = f"{_join(path, 'matchExpressions')}[{index}]"
            key, operator, values = _expression(expr, expr_path)
            try:
                requirements.append(_requirement(key, operator, values, LABEL_SELECTOR_OPERATORS))
            except _ParseError as err:
                raise MalformedObject(f"{expr_path}: {err}") from None
        # Sorted by key as upstream's internalSelector is, so equal selectors compare equal.
        requirements.sort(key=lambda r: (r.key, r.operator))
        return cls(tuple(requirements))

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


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """One non-empty term; a term with a parse error never matches."""

    label_requirements: tuple[Requirement, ...] = ()
    field_requirements: tuple[FieldRequirement, ...] = ()
    parse_error: str | None = None

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if self.parse_error is not None:
            return False
        for requirement in self.label_requirements:
            if not requirement.matches(labels):
                return False
        for field_requirement in self.field_requirements:
            if not field_requirement.matches(node_name):
                return False
        return True


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """A parsed v1.NodeSelector. Empty terms are dropped at parse time (they match nothing)."""

    terms: tuple[NodeSelectorTerm, ...] = ()

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any] | None, path: str = "") -> NodeSelector:
        """Parse {"nodeSelectorTerms": [...]}; None gives a selector that matches nothing."""
        if obj is None:
            return cls()
        if not isinstance(obj, Mapping):
            raise MalformedObject(f"{_at(path)}expected an object, got {type(obj).__name__}")
        terms_path = _join(path, "nodeSelectorTerms")
        raw_terms = _list(obj.get("nodeSelectorTerms"), terms_path)
        terms = [
            term
            for index, raw in enumerate(raw_terms)
            if (term := parse_node_selector_term(raw, f"{terms_path}[{index}]")) is not None
        ]
        return cls(tuple(terms))

    @property
    def parse_errors(self) -> tuple[str, ...]:
        return tuple(t.parse_error for t in self.terms if t.parse_error is not None)

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        for term in self.terms:  # noqa: SIM110 (hot path, see LabelSelector.matches)
            if term.matches(labels, node_name):
                return True
        return False


def parse_node_selector_term(obj: Any, path: str) -> NodeSelectorTerm | None:
    """Parse one v1.NodeSelectorTerm; None for an empty term (which selects nothing)."""
    if obj is None:
        return None
    if not isinstance(obj, Mapping):
        raise MalformedObject(f"{path}: expected an object, got {type(obj).__name__}")
    label_exprs = _list(obj.get("matchExpressions"), f"{path}.matchExpressions")
    field_exprs = _list(obj.get("matchFields"), f"{path}.matchFields")
    if not label_exprs and not field_exprs:
        return None
    errors: list[str] = []
    labels: list[Requirement] = []
    for index, expr in enumerate(label_exprs):
        expr_path = f"{path}.matchExpressions[{index}]"
        key, operator, values = _expression(expr, expr_path)
        try:
            labels.append(_requirement(key, operator, values, NODE_SELECTOR_OPERATORS))
        except _ParseError as err:
            errors.append(f"{expr_path}: {err}")
    fields: list[FieldRequirement] = []
    for index, expr in enumerate(field_exprs):
        expr_path = f"{path}.matchFields[{index}]"
        key, operator, values = _expression(expr, expr_path)
        if operator not in (IN, NOT_IN):
            errors.append(f"{expr_path}.operator: Unsupported value: {operator!r}")
        elif len(values) != 1:
            errors.append(f"{expr_path}.values: Required value: must have one element")
        else:
            fields.append(FieldRequirement(key, operator, values[0]))
    return NodeSelectorTerm(tuple(labels), tuple(fields), "; ".join(errors) if errors else None)


def _requirement(
    key: str, operator: str, values: Sequence[str], allowed: frozenset[str]
) -> Requirement:
    """Upstream's labels.NewRequirement validation for the operators `allowed`."""
    if operator not in allowed:
        raise _ParseError(f"{operator!r} is not a valid label selector operator")
    if (error := label_key_error(key)) is not None:
        raise _ParseError(f"key: Invalid value: {error}")
    if operator in (IN, NOT_IN) and not values:
        raise _ParseError(
            "values: Required value: for 'in', 'notin' operators, values set can't be empty"
        )
    if operator in (EXISTS, DOES_NOT_EXIST) and values:
        raise _ParseError(
            "values: Forbidden: values set must be empty for exists and does not exist"
        )
    bound = 0
    if operator in (GT, LT):
        if len(values) != 1:
            raise _ParseError(
                "values: Required value: for 'Gt', 'Lt' operators, exactly one value is required"
            )
        parsed = parse_int64(values[0])
        if parsed is None:
            raise _ParseError(
                f"values[0]: Invalid value: {values[0]!r}: for 'Gt', 'Lt' operators, "
                "the value must be an integer"
            )
        bound = parsed
    for value in values:
        if (error := label_value_error(value)) is not None:
            raise _ParseError(f"values: Invalid value: {error}")
    return Requirement(key, operator, frozenset(values), bound)


def _expression(expr: Any, path: str) -> tuple[str, str, list[str]]:
    if not isinstance(expr, Mapping):
        raise MalformedObject(f"{path}: expected an object, got {type(expr).__name__}")
    key = expr.get("key", "")
    operator = expr.get("operator", "")
    if not isinstance(key, str):
        raise MalformedObject(f"{path}.key: expected a string")
    if not isinstance(operator, str):
        raise MalformedObject(f"{path}.operator: expected a string")
    values = _list(expr.get("values"), f"{path}.values")
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise MalformedObject(f"{path}.values[{index}]: expected a string")
    return key, operator, values


def _list(value: Any, path: str) -> list[Any]:
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


def _join(path: str, child: str) -> str:
    return f"{path}.{child}" if path else child


def _at(path: str) -> str:
    return f"{path}: " if path else ""
