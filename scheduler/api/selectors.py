"""Node selectors with upstream's matching rules, built from apimachinery's label requirements.

`NodeSelector` is v1.NodeSelector as k8s.io/component-helpers/scheduling/corev1/nodeaffinity
interprets it: terms are ORed, a term's requirements ANDed, an empty term matches nothing, and
a term that fails to parse (unknown operator, Gt with a non-integer, ...) never matches while
the other terms still may (upstream's LazyErrorNodeSelector, whose error RequiredNodeAffinity
ignores). `parse_errors` lists what failed, for plugins that report it (NodeAffinity PreScore).
Wrong JSON types (a string where a list belongs) raise `MalformedObject`.

Label selectors (metav1.LabelSelector) are apimachinery.labels.LabelSelector.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apimachinery.errors import MalformedObject
from apimachinery.labels import (
    IN,
    NODE_SELECTOR_OPERATORS,
    NOT_IN,
    InvalidRequirement,
    Requirement,
    expression,
    new_requirement,
    optional_list,
)

# The one field a node selector term may match on (upstream's nodeFields).
NODE_NAME_FIELD = "metadata.name"


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
            where = f"{path}: " if path else ""
            raise MalformedObject(f"{where}expected an object, got {type(obj).__name__}")
        terms_path = f"{path}.nodeSelectorTerms" if path else "nodeSelectorTerms"
        raw_terms = optional_list(obj.get("nodeSelectorTerms"), terms_path)
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
    label_exprs = optional_list(obj.get("matchExpressions"), f"{path}.matchExpressions")
    field_exprs = optional_list(obj.get("matchFields"), f"{path}.matchFields")
    if not label_exprs and not field_exprs:
        return None
    errors: list[str] = []
    labels: list[Requirement] = []
    for index, expr in enumerate(label_exprs):
        expr_path = f"{path}.matchExpressions[{index}]"
        key, operator, values = expression(expr, expr_path)
        try:
            labels.append(new_requirement(key, operator, values, NODE_SELECTOR_OPERATORS))
        except InvalidRequirement as err:
            errors.append(f"{expr_path}: {err}")
    fields: list[FieldRequirement] = []
    for index, expr in enumerate(field_exprs):
        expr_path = f"{path}.matchFields[{index}]"
        key, operator, values = expression(expr, expr_path)
        if operator not in (IN, NOT_IN):
            errors.append(f"{expr_path}.operator: Unsupported value: {operator!r}")
        elif len(values) != 1:
            errors.append(f"{expr_path}.values: Required value: must have one element")
        else:
            fields.append(FieldRequirement(key, operator, values[0]))
    return NodeSelectorTerm(tuple(labels), tuple(fields), "; ".join(errors) if errors else None)
