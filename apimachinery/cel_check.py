"""Static checks of a DRA device selector, as upstream's compiler makes them
(k8s.io/dynamic-resource-allocation/cel/compile.go): undeclared references, the static result
type, and a worst-case cost estimate from the AST (CompilationResult.MaxCost).

Here, below both, because two callers make the same checks: the scheduler's DRA plugin
(scheduler/plugins/dynamicresources/cel.py, which also evaluates) and kubesim's admission of
ResourceClaims and DeviceClasses (kubesim/validation_dra.py), which refuses an expression whose
estimated cost exceeds the limit as the API server does (pkg/apis/resource/validation:
"too complex, exceeds cost limit")."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, TypeAlias, cast

import celpy
import lark
from celpy.celparser import CELParseError

# resourceapi.CELSelectorExpressionMaxCost: the cost limit of one selector.
CEL_SELECTOR_EXPRESSION_MAX_COST = 1_000_000
#: The Kubernetes library functions a selector may call (the scheduler's cel_library.py
#: implements them, under these names).
LIBRARY_FUNCTION_NAMES = frozenset({
    "quantity", "isQuantity", "semver", "isSemver", "isGreaterThan", "isLessThan",
    "compareTo", "add", "sub", "asInteger", "isInteger", "asApproximateFloat", "sign",
    "major", "minor", "patch", "lowerAscii", "upperAscii", "trim", "split", "indexOf",
    "replace", "find",
})  # fmt: skip
# resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice: bounds each map of a device.
MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE = 32

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
_KNOWN_FUNCTIONS = _BASE_FUNCTIONS | LIBRARY_FUNCTION_NAMES
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


@functools.cache
def cel_environment() -> celpy.Environment:
    """The one CEL environment, built on first use: building its parser costs about 0.1 s,
    which every process importing the DRA plugin (the scheduler, each filter worker,
    check-config) would otherwise pay at start-up, with or without a selector to compile."""
    return celpy.Environment()


@dataclasses.dataclass(frozen=True)
class CheckedSelector:
    """What the static checks make of one expression: `error` (upstream's compile error text)
    or the parse tree, its worst-case cost and whether it reads `device`."""

    error: str | None
    tree: Any = None
    max_cost: float = math.inf
    uses_device: bool = True


def check_selector(expression: str, *, consumable_capacity: bool = False) -> CheckedSelector:
    """Parse and check one selector expression (the compile step of CompileCELExpression)."""
    try:
        ast = cel_environment().compile(expression)
    except CELParseError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else "syntax error"
        line = getattr(err, "line", None) or 1
        column = getattr(err, "column", None) or 1
        return CheckedSelector(
            f"compilation failed: ERROR: <input>:{line}:{column}: Syntax error: {first}"
        )
    checker = _Checker(consumable_capacity)
    try:
        kind, max_cost = checker.check(ast, frozenset())
    except _CompileError as err:
        return CheckedSelector(f"compilation failed: {err}")
    except RecursionError:
        return CheckedSelector("compilation failed: expression nested too deeply")
    if kind not in ("bool", "dyn"):
        return CheckedSelector(f"must evaluate to bool or the unknown type, not {kind}")
    return CheckedSelector(None, ast, max_cost, checker.uses_device)
