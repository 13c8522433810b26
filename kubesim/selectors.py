"""Label and field selectors as the API server parses them for list and watch.

Label selectors follow k8s.io/apimachinery/pkg/labels/selector.go (lexer, parser, error texts);
field selectors follow pkg/fields plus the per-kind field label conversion funcs the API server
registers (pkg/apis/core/v1/conversion.go and friends).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesim.names import is_qualified_name, is_valid_label_value


class SelectorError(ValueError):
    """A selector that does not parse; str() is upstream's message."""


class Op(enum.Enum):
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: Op
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op is Op.EXISTS:
            return present
        if self.op is Op.DOES_NOT_EXIST:
            return not present
        if self.op in (Op.EQUALS, Op.DOUBLE_EQUALS, Op.IN):
            return present and labels[self.key] in self.values
        if self.op in (Op.NOT_EQUALS, Op.NOT_IN):
            return not present or labels[self.key] not in self.values
        # gt / lt: both sides must be integers, as upstream.
        if not present:
            return False
        try:
            have, want = int(labels[self.key]), int(self.values[0])
        except ValueError:
            return False
        return have > want if self.op is Op.GREATER_THAN else have < want


@dataclass(frozen=True, slots=True)
class LabelSelector:
    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


# --- lexer -------------------------------------------------------------------------------------


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


# --- parser ------------------------------------------------------------------------------------

_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"
_TOKEN_TO_OP = {
    _Tok.IN: Op.IN,
    _Tok.EQUALS: Op.EQUALS,
    _Tok.DOUBLE_EQUALS: Op.DOUBLE_EQUALS,
    _Tok.GREATER_THAN: Op.GREATER_THAN,
    _Tok.LESS_THAN: Op.LESS_THAN,
    _Tok.NOT_IN: Op.NOT_IN,
    _Tok.NOT_EQUALS: Op.NOT_EQUALS,
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
        op: Op | None = None
        if tok is _Tok.DOES_NOT_EXIST:
            op = Op.DOES_NOT_EXIST
            tok, lit = self._next(values=True)
        if tok is not _Tok.IDENTIFIER:
            raise SelectorError(f"found '{lit}', expected: identifier")
        key = lit
        key_errors = is_qualified_name(key)
        if key_errors:
            raise SelectorError(_field_invalid("<nil>", key, "; ".join(key_errors)))
        if op is None and self._peek(values=True)[0] in (_Tok.EOS, _Tok.COMMA):
            op = Op.EXISTS
        if op is not None:
            return Requirement(key, op, ())
        op_tok, op_lit = self._next(values=False)
        if op_tok not in _TOKEN_TO_OP:
            raise SelectorError(f"found '{op_lit}', expected: {_BINARY_OPERATORS}")
        op = _TOKEN_TO_OP[op_tok]
        values = self._set_values() if op in (Op.IN, Op.NOT_IN) else self._exact_value()
        return _new_requirement(key, op, sorted(values))

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


def _new_requirement(key: str, op: Op, values: list[str]) -> Requirement:
    """Upstream's NewRequirement checks (the key was already checked by the parser)."""
    errors: list[str] = []
    if op in (Op.GREATER_THAN, Op.LESS_THAN):
        for i, value in enumerate(values):
            try:
                int(value, 10)
            except ValueError:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                errors.append(_field_invalid(f"values[{i}]", value, detail))
    for i, value in enumerate(values):
        value_errors = is_valid_label_value(value)
        if value_errors:
            errors.append(_field_invalid(f"values[{i}][{key}]", value, "; ".join(value_errors)))
    if len(errors) == 1:
        raise SelectorError(errors[0])
    if errors:
        raise SelectorError("[" + ", ".join(errors) + "]")
    return Requirement(key, op, tuple(values))


def parse_label_selector(text: str) -> LabelSelector:
    """Parse the ?labelSelector= grammar; an empty string selects everything."""
    return LabelSelector(tuple(_Parser(text).parse()))


def label_selector_from_object(selector: Mapping[str, Any] | None) -> LabelSelector:
    """A metav1.LabelSelector ({matchLabels, matchExpressions}) as a LabelSelector."""
    if not selector:
        return LabelSelector(())
    requirements: list[Requirement] = [
        Requirement(k, Op.EQUALS, (str(v),)) for k, v in (selector.get("matchLabels") or {}).items()
    ]
    ops = {"In": Op.IN, "NotIn": Op.NOT_IN, "Exists": Op.EXISTS, "DoesNotExist": Op.DOES_NOT_EXIST}
    for expr in selector.get("matchExpressions") or []:
        operator = expr.get("operator")
        if operator not in ops:
            raise SelectorError(f'"{operator}" is not a valid label selector operator')
        requirements.append(
            Requirement(str(expr.get("key", "")), ops[operator], tuple(expr.get("values") or ()))
        )
    return LabelSelector(tuple(requirements))


# --- field selectors ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    value: str
    negate: bool


@dataclass(frozen=True, slots=True)
class FieldSelector:
    requirements: tuple[FieldRequirement, ...]
    kind: str

    def matches(self, obj: Mapping[str, Any]) -> bool:
        fields = _FIELDS_BY_KIND.get(self.kind, {})
        for req in self.requirements:
            getter = fields.get(req.field) or _COMMON_FIELDS[req.field]
            if (getter(obj) == req.value) == req.negate:
                return False
        return True

    @property
    def empty(self) -> bool:
        return not self.requirements


def _path(*keys: str, default: str = "") -> Callable[[Mapping[str, Any]], str]:
    def get(obj: Mapping[str, Any]) -> str:
        cur: Any = obj
        for key in keys:
            cur = cur.get(key) if isinstance(cur, Mapping) else None
        if cur is None:
            return default
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return get


def _event_source(obj: Mapping[str, Any]) -> str:
    # Upstream's EventToSelectableFields: source is source.component, else reportingController.
    component = _path("source", "component")(obj)
    return component or _path("reportingComponent")(obj)


_COMMON_FIELDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "metadata.name": _path("metadata", "name"),
    "metadata.namespace": _path("metadata", "namespace"),
}

_POD_FIELDS = {
    **{
        name: _path(*name.split("."))
        for name in (
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        )
    },
    # Upstream formats booleans with strconv.FormatBool, so an absent field reads "false".
    "spec.hostNetwork": _path("spec", "hostNetwork", default="false"),
}

_EVENT_FIELDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    **{
        f"involvedObject.{f}": _path("involvedObject", f)
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    },
    "reason": _path("reason"),
    "reportingComponent": _path("reportingComponent"),
    "source": _event_source,
    "type": _path("type"),
}

_FIELDS_BY_KIND: dict[str, dict[str, Callable[[Mapping[str, Any]], str]]] = {
    "Pod": _POD_FIELDS,
    "Node": {"spec.unschedulable": _path("spec", "unschedulable", default="false")},
    "Event": _EVENT_FIELDS,
    "Namespace": {"status.phase": _path("status", "phase")},
    "ReplicaSet": {"status.replicas": _path("status", "replicas")},
    "ReplicationController": {"status.replicas": _path("status", "replicas")},
    "PersistentVolumeClaim": {},
}


def _unescape_field_value(raw: str) -> str:
    """Upstream's UnescapeValue: '\\,', '\\=' and '\\\\' escape the separators."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\":
            if i + 1 >= len(raw) or raw[i + 1] not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence in {raw!r}")
            out.append(raw[i + 1])
            i += 2
            continue
        if ch in ",=":
            raise SelectorError(f"invalid field selector: unescaped {ch!r} in {raw!r}")
        out.append(ch)
        i += 1
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not escaped by a backslash."""
    terms, current, i = [], [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            current.append(text[i : i + 2])
            i += 2
            continue
        if text[i] == ",":
            terms.append("".join(current))
            current = []
        else:
            current.append(text[i])
        i += 1
    terms.append("".join(current))
    return terms


def _split_term(term: str) -> tuple[str, str, str]:
    """Upstream's splitTerm: the leftmost operator wins, "!=" and "==" before "="."""
    for i in range(len(term)):
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return term, "", ""


def parse_field_selector(
    text: str, kind: str, label_map: Mapping[str, str] | None = None
) -> FieldSelector:
    """Parse ?fieldSelector= (=, ==, !=; comma-separated ANDs) and check fields for `kind`.

    label_map renames the labels of another API version first (upstream's field label
    conversion); a label it lacks is not supported."""
    requirements: list[FieldRequirement] = []
    if text.strip():
        for term in _split_terms(text):
            field, op, raw = _split_term(term)
            if not op:
                raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
            if label_map is not None:
                if field not in label_map:
                    raise SelectorError(f"field label not supported: {field}")
                field = label_map[field]
            requirements.append(FieldRequirement(field, _unescape_field_value(raw), op == "!="))
    supported = _FIELDS_BY_KIND.get(kind, {})
    for req in requirements:
        if req.field not in _COMMON_FIELDS and req.field not in supported:
            raise SelectorError(f'field label not supported: {req.field}')
    return FieldSelector(tuple(requirements), kind)
