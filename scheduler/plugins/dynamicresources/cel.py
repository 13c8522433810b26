"""CEL device selectors as upstream's k8s.io/dynamic-resource-allocation/cel (compile.go,
cache.go) evaluates them, on the cel-python library (`celpy`).

Why a module of its own: the allocator evaluates every selector of every class and request
against every candidate device on every node for every pod, so compiling (an LRU of compiled
programs keyed by expression, upstream's cel.Cache) and evaluating (a cache of per-device results
keyed by expression and the slice's uid + resourceVersion, exact because a device's attributes
only change with its slice) are worth keeping apart from the search itself.

The environment is upstream's:
- one variable, `device`, with `driver` (string), `attributes` and `capacity` (maps of domain →
  map of name → value; names without a domain belong to the driver; looking up a domain the
  device does not have gives an empty map, a missing name inside a domain is the runtime error
  "no such key: <name>"), and `allowMultipleAllocations` (bool) with DRAConsumableCapacity;
- the Kubernetes CEL libraries a selector uses: quantities (`quantity`, `isQuantity`, `sign`,
  `isGreaterThan`, `isLessThan`, `compareTo`, `add`, `sub`, `asInteger`, `isInteger`,
  `asApproximateFloat`) and semantic versions (`semver`, `isSemver`, `major`, `minor`, `patch`,
  `isGreaterThan`, `isLessThan`, `compareTo`), plus `cel.bind` (cel-go's ext.Bindings) and the
  string extensions upstream's base environment has (`lowerAscii`, `upperAscii`, `split`, ...);
- the result must be a bool: an expression whose type is known statically not to be bool does
  not compile ("must evaluate to bool or the unknown type, not int"), a dynamic result that is
  not a bool is a runtime error;
- references to names and functions the environment does not declare do not compile
  ("undeclared reference to 'x' (in container '')").

Cost: upstream runs every program with cel-go's runtime cost limit
resourceapi.CELSelectorExpressionMaxCost (1,000,000), and aborts with "operation cancelled:
actual cost limit exceeded". cel-python has no cost tracking, so evaluation here counts cost
units as it walks the tree: one per identifier, field or index selection, function or method
call, operator, and comprehension step (macros re-walk their body per element, so nested
comprehensions multiply, as they do in cel-go's accounting), and aborts with upstream's error
past the same limit. `CompiledSelector.max_cost` is a static worst-case estimate from the AST in
the same units (comprehensions over device maps are bounded by
ResourceSliceMaxAttributesAndCapacitiesPerDevice, over literal lists by their length), which
upstream reports as CompilationResult.MaxCost.
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import total_ordering
from typing import Any, TypeAlias, cast

import celpy
import celpy.celtypes as ct
import lark
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError, Evaluator

from apimachinery.quantity import FORMAT_ERROR, parse_quantity
from scheduler.api.resource import AttributeValue, DeviceView, SemVer

# resourceapi.CELSelectorExpressionMaxCost: the runtime cost limit of one selector.
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000
# resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice: bounds each map of a device.
MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE = 32
# cel.Cache's default size in the scheduler plugin (dynamicresources.go: cel.NewCache(10)).
DEFAULT_CACHE_SIZE = 10
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"


class CelRuntimeError(Exception):
    """A selector failed while evaluating against one device (upstream's runtime error)."""


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

# Names celpy itself provides (functions and type conversions) that upstream's environment
# declares too.
_BASE_FUNCTIONS = frozenset(
    {
        "size", "contains", "startsWith", "endsWith", "matches", "type",
        "bool", "bytes", "double", "int", "uint", "string", "duration", "timestamp", "dyn",
        "has", "all", "exists", "exists_one", "map", "filter",
    }
)  # fmt: skip
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_KNOWN_FUNCTIONS = _BASE_FUNCTIONS | frozenset(LIBRARY_FUNCTIONS)
_TYPE_NAMES = frozenset({"bool", "bytes", "double", "int", "uint", "string", "list", "map"})


_Tree: TypeAlias = "lark.Tree[Any]"

# --- static checks ------------------------------------------------------------------------


class _CompileError(Exception):
    pass


def _position(node: _Tree | lark.Token) -> str:
    token = node
    while isinstance(token, lark.Tree):
        token = next((c for c in token.children if isinstance(c, lark.Tree | lark.Token)), None)  # type: ignore[assignment]
        if token is None:
            return "1:1"
    line = getattr(token, "line", 1) or 1
    column = getattr(token, "column", 1) or 1
    return f"{line}:{column}"


def _undeclared(name: str, node: _Tree | lark.Token) -> _CompileError:
    return _CompileError(
        f"ERROR: <input>:{_position(node)}: undeclared reference to '{name}' (in container '')"
    )


def _exprs(exprlist: Any) -> list[_Tree]:
    if isinstance(exprlist, lark.Tree) and exprlist.data == "exprlist":
        return [c for c in exprlist.children if isinstance(c, lark.Tree)]
    return []


def _ident_name(expr: _Tree) -> str | None:
    """The name when `expr` is just an identifier (a macro's or cel.bind's variable)."""
    node: Any = expr
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        child = node.children[0]
        if node.data == "ident" and isinstance(child, lark.Token):
            return str(child)
        node = child
    return None


def _cel_bind_parts(tree: _Tree) -> tuple[str, _Tree, _Tree] | None:
    """(variable, init, body) when `tree` is a member_dot_arg `cel.bind(v, init, body)`."""
    if tree.data != "member_dot_arg" or len(tree.children) < 3:
        return None
    target, method, args = tree.children[0], tree.children[1], tree.children[2]
    if str(method) != "bind" or not isinstance(target, lark.Tree):
        return None
    if _ident_name(target) != "cel":
        return None
    exprs = _exprs(args)
    if len(exprs) != 3:
        raise _CompileError(f"ERROR: <input>:{_position(tree)}: cel.bind() requires 3 arguments")
    name = _ident_name(exprs[0])
    if name is None:
        raise _CompileError(
            f"ERROR: <input>:{_position(tree)}: "
            "cel.bind() variable name must be a simple identifier"
        )
    return name, exprs[1], exprs[2]


# Static result types: "bool", "int", "uint", "double", "string", "bytes", "null_type",
# "list", "map", the two library types, "device" and "dyn" (unknown).
_METHOD_TYPES = {
    "all": "bool", "exists": "bool", "exists_one": "bool", "map": "list", "filter": "list",
    "startsWith": "bool", "endsWith": "bool", "contains": "bool", "matches": "bool",
    "isGreaterThan": "bool", "isLessThan": "bool", "isInteger": "bool",
    "compareTo": "int", "sign": "int", "asInteger": "int", "major": "int", "minor": "int",
    "patch": "int", "size": "int", "indexOf": "int", "asApproximateFloat": "double",
    "add": "kubernetes.Quantity", "sub": "kubernetes.Quantity",
    "lowerAscii": "string", "upperAscii": "string", "trim": "string", "replace": "string",
    "find": "string", "split": "list",
}  # fmt: skip
_FUNCTION_TYPES = {
    "quantity": "kubernetes.Quantity", "semver": "kubernetes.Semver",
    "isQuantity": "bool", "isSemver": "bool", "has": "bool", "size": "int", "int": "int",
    "uint": "uint", "double": "double", "string": "string", "bool": "bool", "bytes": "bytes",
    "matches": "bool", "dyn": "dyn", "type": "type",
}  # fmt: skip


class _Checker:
    """Walks celpy's parse tree: undeclared references, static result type, worst-case cost."""

    def __init__(self, consumable_capacity: bool) -> None:
        self.uses_device = False
        self.device_fields = {"driver": "string", "attributes": "map", "capacity": "map"}
        if consumable_capacity:
            self.device_fields["allowMultipleAllocations"] = "bool"

    def check(self, tree: _Tree, scope: frozenset[str]) -> tuple[str, int]:
        """(static type, worst-case cost) of `tree`."""
        data = tree.data
        children = tree.children
        if data == "ident":
            name = str(children[0])
            if name == "device" and "device" not in scope:
                self.uses_device = True
                return "device", 1
            if name in scope:
                return "dyn", 1
            if name in _TYPE_NAMES:
                return "type", 0
            raise _undeclared(name, tree)
        if data == "literal":
            return _literal_type(str(children[0])), 0
        if data == "ident_arg":
            return self._function(tree, scope)
        if data == "member_dot":
            target, name = children[0], str(children[1])
            assert isinstance(target, lark.Tree)
            if _ident_name(target) == "cel":
                raise _undeclared(f"cel.{name}", tree)
            kind, cost = self.check(target, scope)
            if kind == "device":
                if name not in self.device_fields:
                    raise _CompileError(
                        f"ERROR: <input>:{_position(tree)}: undefined field '{name}'"
                    )
                return self.device_fields[name], cost + 1
            return "dyn", cost + 1
        if data == "member_dot_arg":
            return self._method(tree, scope)
        if data == "member_index":
            total = 1
            for child in children:
                if isinstance(child, lark.Tree):
                    total += self.check(child, scope)[1]
            return "dyn", total
        if data in ("list_lit", "map_lit"):
            total = 0
            for child in children:
                if isinstance(child, lark.Tree):
                    total += self.check(child, scope)[1]
            return ("list" if data == "list_lit" else "map"), total
        if data == "member_object":
            raise _CompileError(
                f"ERROR: <input>:{_position(tree)}: message construction is not supported"
            )
        kinds: list[str] = []
        total = 0
        ops: list[str] = []
        for child in children:
            if isinstance(child, lark.Tree):
                if child.data.startswith(("relation_", "addition_", "multiplication_", "unary_")):
                    ops.append(child.data)
                    if child.children:
                        kind, cost = self.check(child, scope)
                        kinds.append(kind)
                        total += cost
                    continue
                kind, cost = self.check(child, scope)
                kinds.append(kind)
                total += cost
        if data == "expr" and len(kinds) == 3:  # c ? a : b
            return (kinds[1] if kinds[1] == kinds[2] else "dyn"), total + 1
        if data in ("conditionalor", "conditionaland") and len(kinds) > 1:
            return "bool", total + 1
        if ops:
            if data == "relation" or any(op == "unary_not" for op in ops):
                return "bool", total + 1
            numeric = [k for k in kinds if k != "dyn"]
            if data == "unary" and ops == ["unary_neg"]:
                return (kinds[-1] if kinds else "dyn"), total + 1
            if numeric and len(numeric) == len(kinds) and len(set(numeric)) == 1:
                return numeric[0], total + 1
            return "dyn", total + 1
        return (kinds[0] if len(kinds) == 1 else "dyn"), total

    def _function(self, tree: _Tree, scope: frozenset[str]) -> tuple[str, int]:
        name = str(tree.children[0])
        args = _exprs(tree.children[1]) if len(tree.children) > 1 else []
        if name not in _KNOWN_FUNCTIONS or name in _MACROS:
            raise _undeclared(name, tree)
        total = 1
        for arg in args:
            total += self.check(arg, scope)[1]
        if name == "has":
            return "bool", total
        if name == "dyn":
            return "dyn", total
        return _FUNCTION_TYPES.get(name, "dyn"), total

    def _method(self, tree: _Tree, scope: frozenset[str]) -> tuple[str, int]:
        target = tree.children[0]
        name = str(tree.children[1])
        args = _exprs(tree.children[2]) if len(tree.children) > 2 else []
        assert isinstance(target, lark.Tree)
        bind = _cel_bind_parts(tree)
        if bind is not None:
            variable, init, body = bind
            init_cost = self.check(init, scope)[1]
            kind, body_cost = self.check(body, scope | {variable})
            return kind, init_cost + body_cost + 1
        if name in _MACROS:
            _, target_cost = self.check(target, scope)
            if len(args) != 2 or _ident_name(args[0]) is None:
                raise _CompileError(
                    f"ERROR: <input>:{_position(tree)}: {name}() requires a variable and an "
                    "expression"
                )
            variable = cast(str, _ident_name(args[0]))
            _, body_cost = self.check(args[1], scope | {variable})
            if target.data == "member" and _is_list_literal(target):
                elements = _list_literal_size(target)
            else:
                elements = MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE
            return _METHOD_TYPES[name], target_cost + 1 + elements * (body_cost + 2)
        if name not in _KNOWN_FUNCTIONS:
            raise _undeclared(name, tree)
        _, total = self.check(target, scope)
        total += 1
        for arg in args:
            total += self.check(arg, scope)[1]
        return _METHOD_TYPES.get(name, "dyn"), total


def _literal_type(text: str) -> str:
    if text in ("true", "false"):
        return "bool"
    if text == "null":
        return "null_type"
    if text[:1] in ("'", '"') or text[:2].lower() in ("r'", 'r"'):
        return "string"
    if text[:1] in ("b", "B"):
        return "bytes"
    if text.endswith(("u", "U")):
        return "uint"
    if any(c in text for c in ".eE") and not text.lower().startswith(("0x", "-0x")):
        return "double"
    return "int"


def _is_list_literal(tree: _Tree) -> bool:
    node: Any = tree
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        if node.data == "list_lit":
            return True
        node = node.children[0]
    return isinstance(node, lark.Tree) and node.data == "list_lit"


def _list_literal_size(tree: _Tree) -> int:
    node: Any = tree
    while isinstance(node, lark.Tree) and node.data != "list_lit":
        node = node.children[0]
    if not isinstance(node, lark.Tree) or not node.children:
        return 0
    return len(_exprs(node.children[0]))


# --- cel.bind ----------------------------------------------------------------------------

_ENV = celpy.Environment()
# cel.bind(v, init, body) is cel-go's ext.Bindings macro; celpy lacks it, so its call node is
# replaced by the equivalent `[init].map(v, body)[0]` (init evaluated once, body sees v).
_BIND_TEMPLATE = _ENV.compile("[__init__].map(__var__, __body__)[0]")


def _replace_idents(tree: _Tree, replacements: Mapping[str, _Tree]) -> _Tree:
    children: list[Any] = []
    for child in tree.children:
        if isinstance(child, lark.Tree):
            if child.data == "expr" and _ident_name(child) in replacements:
                children.append(replacements[cast(str, _ident_name(child))])
            else:
                children.append(_replace_idents(child, replacements))
        else:
            children.append(child)
    return lark.Tree(tree.data, children, getattr(tree, "_meta", None))


def _expand_bind(tree: _Tree) -> _Tree:
    children = [_expand_bind(c) if isinstance(c, lark.Tree) else c for c in tree.children]
    tree = lark.Tree(tree.data, children, getattr(tree, "_meta", None))
    bind = _cel_bind_parts(tree) if tree.data == "member_dot_arg" else None
    if bind is None:
        return tree
    variable, init, body = bind
    var_expr = _ENV.compile(variable)
    expanded = _replace_idents(
        _BIND_TEMPLATE, {"__init__": init, "__var__": var_expr, "__body__": body}
    )
    # The template is an `expr`; the node replaced is a `member_dot_arg` inside a `member`:
    # wrap it as a parenthesized primary so the surrounding grammar stays well-formed.
    return lark.Tree(
        "member_index",
        _unwrap_member_index(expanded).children,
    )


def _unwrap_member_index(tree: _Tree) -> _Tree:
    node: Any = tree
    while isinstance(node, lark.Tree) and node.data != "member_index":
        node = node.children[0]
    assert isinstance(node, lark.Tree)
    return node


# --- evaluation ---------------------------------------------------------------------------


class _CostExceeded(Exception):
    pass


class _CountingEvaluator(Evaluator):
    """celpy's tree-walking evaluator, charging one cost unit per node that does work."""

    _COSTED = frozenset(
        {
            "ident", "ident_arg", "member_dot", "member_dot_arg", "member_index",
            "relation_lt", "relation_le", "relation_gt", "relation_ge", "relation_eq",
            "relation_ne", "relation_in", "addition_add", "addition_sub", "multiplication_mul",
            "multiplication_div", "multiplication_mod", "unary_not", "unary_neg",
            "conditionalor", "conditionaland",
        }
    )  # fmt: skip

    def __init__(self, ast: _Tree, activation: Any, budget: list[int]) -> None:
        super().__init__(ast, activation)
        self.budget = budget

    def sub_evaluator(self, ast: _Tree) -> Evaluator:
        return _CountingEvaluator(ast, self.activation, self.budget)

    # lark's Interpreter reaches every child through _visit_tree (visit is the root only)
    def _visit_tree(self, tree: _Tree) -> Any:
        if tree.data in self._COSTED:
            self.budget[0] -= 1
            if self.budget[0] < 0:
                raise _CostExceeded
        return super()._visit_tree(tree)


class _CountingRunner(celpy.InterpretedRunner):
    cost_limit: int = CEL_SELECTOR_EXPRESSION_MAX_COST

    def evaluate(self, context: Any) -> Any:
        budget = [self.cost_limit]
        evaluator = _CountingEvaluator(self.ast, self.new_activation(), budget)
        return evaluator.evaluate(context)


class _DomainMap(ct.MapType):
    """device.attributes / device.capacity: an unknown domain reads as an empty map
    (upstream's newStringInterfaceMapWithDefault); `in` still says whether it exists."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return _EMPTY


_EMPTY = ct.MapType({})


def _attribute_value(value: AttributeValue) -> Any:
    if isinstance(value, bool):
        return ct.BoolType(value)
    if isinstance(value, int):
        return ct.IntType(value)
    if isinstance(value, str):
        return ct.StringType(value)
    return Semver(value)


def device_activation(
    driver: str, device: DeviceView, *, consumable_capacity: bool = False
) -> dict[str, Any]:
    """The `device` variable for one device of a slice of `driver` (cel.Device)."""
    attributes: dict[Any, dict[Any, Any]] = {}
    for name, value in device.attributes.items():
        domain, _, ident = name.partition("/") if "/" in name else (driver, "", name)
        attributes.setdefault(ct.StringType(domain), {})[ct.StringType(ident)] = _attribute_value(
            value
        )
    capacity: dict[Any, dict[Any, Any]] = {}
    for name, text in device.capacity_text.items():
        domain, _, ident = name.partition("/") if "/" in name else (driver, "", name)
        capacity.setdefault(ct.StringType(domain), {})[ct.StringType(ident)] = Quantity(
            parse_quantity(text)
        )
    fields: dict[Any, Any] = {
        ct.StringType("driver"): ct.StringType(driver),
        ct.StringType("attributes"): _DomainMap({k: ct.MapType(v) for k, v in attributes.items()}),
        ct.StringType("capacity"): _DomainMap({k: ct.MapType(v) for k, v in capacity.items()}),
    }
    if consumable_capacity:
        fields[ct.StringType("allowMultipleAllocations")] = ct.BoolType(
            device.allow_multiple_allocations
        )
    return {"device": ct.MapType(fields)}


_NOT_ITERABLE = re.compile(r"'(\w+)' object is not iterable")
_CEL_GO_TYPES = {
    "IntType": "types.Int",
    "UintType": "types.Uint",
    "DoubleType": "types.Double",
    "BoolType": "types.Bool",
    "StringType": "types.String",
    "Semver": "cel.Semver",
    "Quantity": "cel.Quantity",
}
_NO_SUCH_MEMBER = re.compile(r"no such member in mapping: '(.*)'")


def _runtime_message(err: CELEvalError) -> str:
    """celpy's error as cel-go words it, where the two differ."""
    message = str(err.args[0]) if err.args else str(err)
    match = _NO_SUCH_MEMBER.match(message)
    if match:
        return f"no such key: {match.group(1)}"
    if message == "no such key" and len(err.args) > 2 and err.args[2]:
        return f"no such key: {err.args[2][0]}"
    if message.startswith("undeclared reference to"):
        return message.split(" (in activation", 1)[0]
    return message


@dataclass
class CompiledSelector:
    """One compiled expression (upstream's cel.CompilationResult). `error` is upstream's
    compile error text, None when the expression compiled."""

    expression: str
    error: str | None
    max_cost: int = math.inf  # type: ignore[assignment]
    program: Any = field(default=None, repr=False)
    # the expression never reads `device`: one outcome for every device
    device_independent: bool = False

    def device_matches(self, activation: Mapping[str, Any]) -> bool:
        """Evaluate against one device's activation; CelRuntimeError on failure."""
        if self.program is None:
            raise CelRuntimeError(self.error or "not compiled")
        try:
            result = self.program.evaluate(activation)
        except _CostExceeded:
            raise CelRuntimeError(COST_LIMIT_EXCEEDED) from None
        except CELEvalError as err:
            raise CelRuntimeError(_runtime_message(err)) from None
        except RecursionError:
            raise CelRuntimeError(COST_LIMIT_EXCEEDED) from None
        except TypeError as err:
            # celpy lets a comprehension over a non-iterable escape as a Python TypeError
            match = _NOT_ITERABLE.search(str(err))
            if match is None:
                raise CelRuntimeError(f"no such overload: {err}") from None
            kind = _CEL_GO_TYPES.get(match.group(1), match.group(1))
            raise CelRuntimeError(f"got '{kind}', expected iterable type") from None
        if isinstance(result, CELEvalError):
            raise CelRuntimeError(_runtime_message(result))
        if not isinstance(result, ct.BoolType):
            kind = _value_type_name(result)
            raise CelRuntimeError(f"CEL result of type {kind} could not be converted to bool")
        return bool(result)


def _value_type_name(value: Any) -> str:
    for kind, name in (
        (ct.IntType, "int"),
        (ct.UintType, "uint"),
        (ct.DoubleType, "double"),
        (ct.StringType, "string"),
        (ct.BytesType, "bytes"),
        (ct.ListType, "list"),
        (ct.MapType, "map"),
        (Quantity, "kubernetes.Quantity"),
        (Semver, "kubernetes.Semver"),
    ):
        if isinstance(value, kind):
            return name
    return "null_type" if value is None else type(value).__name__


def compile_selector(
    expression: str,
    *,
    consumable_capacity: bool = False,
    cost_limit: int = CEL_SELECTOR_EXPRESSION_MAX_COST,
) -> CompiledSelector:
    """Compile one selector expression (compiler.CompileCELExpression)."""
    try:
        ast = _ENV.compile(expression)
    except CELParseError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else "syntax error"
        line = getattr(err, "line", None) or 1
        column = getattr(err, "column", None) or 1
        return CompiledSelector(
            expression,
            f"compilation failed: ERROR: <input>:{line}:{column}: Syntax error: {first}",
        )
    checker = _Checker(consumable_capacity)
    try:
        kind, max_cost = checker.check(ast, frozenset())
    except _CompileError as err:
        return CompiledSelector(expression, f"compilation failed: {err}")
    except RecursionError:
        return CompiledSelector(expression, "compilation failed: expression nested too deeply")
    if kind not in ("bool", "dyn"):
        return CompiledSelector(
            expression, f"must evaluate to bool or the unknown type, not {kind}"
        )
    program = _CountingRunner(_ENV, _expand_bind(ast), LIBRARY_FUNCTIONS)
    program.cost_limit = cost_limit
    return CompiledSelector(expression, None, max_cost, program, not checker.uses_device)


class CelCache:
    """Compiled selectors by expression, least recently used dropped first (cel.Cache), and
    each selector's result per device, keyed by (expression, slice uid, slice
    resourceVersion, device name): exact, because a device only changes with its slice's
    resourceVersion. Shared across scheduling cycles by the plugin."""

    def __init__(
        self,
        max_size: int = DEFAULT_CACHE_SIZE,
        *,
        max_results: int = 1 << 16,
        consumable_capacity: bool = False,
    ) -> None:
        self.max_size = max_size
        self.max_results = max_results
        self.consumable_capacity = consumable_capacity
        self._compiled: OrderedDict[str, CompiledSelector] = OrderedDict()
        # value: True/False, or the runtime error's message
        self._results: dict[tuple[str, str, str, str], bool | str] = {}
        self._activations: dict[tuple[str, str, str], dict[str, Any]] = {}

    def get_or_compile(self, expression: str) -> CompiledSelector:
        compiled = self._compiled.get(expression)
        if compiled is not None:
            self._compiled.move_to_end(expression)
            return compiled
        compiled = compile_selector(expression, consumable_capacity=self.consumable_capacity)
        self._compiled[expression] = compiled
        if len(self._compiled) > self.max_size:
            self._compiled.popitem(last=False)
        return compiled

    def device_matches(
        self,
        compiled: CompiledSelector,
        slice_uid: str,
        slice_version: str,
        driver: str,
        device: DeviceView,
    ) -> bool:
        """Evaluate `compiled` for one device of a slice, remembering the outcome when the
        slice is identified (uid and resourceVersion set). CelRuntimeError on failure."""
        if compiled.device_independent:
            slice_uid, slice_version, device_name = "", "", ""
        elif not slice_uid or not slice_version:
            return compiled.device_matches(
                device_activation(driver, device, consumable_capacity=self.consumable_capacity)
            )
        else:
            device_name = device.name
        key = (compiled.expression, slice_uid, slice_version, device_name)
        outcome = self._results.get(key)
        if outcome is None:
            try:
                outcome = compiled.device_matches(
                    self._activation(slice_uid, slice_version, driver, device)
                )
            except CelRuntimeError as err:
                outcome = str(err)
            if len(self._results) >= self.max_results:
                self._results.clear()
            self._results[key] = outcome
        if isinstance(outcome, str):
            raise CelRuntimeError(outcome)
        return outcome

    def _activation(
        self, slice_uid: str, slice_version: str, driver: str, device: DeviceView
    ) -> dict[str, Any]:
        key = (slice_uid, slice_version, device.name)
        activation = self._activations.get(key)
        if activation is None:
            activation = device_activation(
                driver, device, consumable_capacity=self.consumable_capacity
            )
            if len(self._activations) >= self.max_results:
                self._activations.clear()
            self._activations[key] = activation
        return activation
