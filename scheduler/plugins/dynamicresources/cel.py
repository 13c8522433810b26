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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import celpy
import celpy.celtypes as ct
import lark
from celpy.evaluation import CELEvalError, Evaluator

from apimachinery.cel_check import (
    CEL_SELECTOR_EXPRESSION_MAX_COST as CEL_SELECTOR_EXPRESSION_MAX_COST,
)
from apimachinery.cel_check import ENVIRONMENT as _ENV
from apimachinery.cel_check import (
    LIBRARY_FUNCTION_NAMES,
    _cel_bind_parts,
    _ident_name,
    _Tree,
    check_selector,
)
from apimachinery.cel_check import (
    MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE as MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE,
)
from apimachinery.quantity import parse_quantity
from scheduler.api.resource import AttributeValue, DeviceView
from scheduler.plugins.dynamicresources.cel_library import LIBRARY_FUNCTIONS, Quantity, Semver

assert set(LIBRARY_FUNCTIONS) == LIBRARY_FUNCTION_NAMES  # what is declared is implemented
# cel.Cache's default size in the scheduler plugin (dynamicresources.go: cel.NewCache(10)).
DEFAULT_CACHE_SIZE = 10
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"
# cel-go's common.StringTraversalCostFactor: cost per byte (or element) of what is built.
TRAVERSAL_COST_FACTOR = 0.1


class CelRuntimeError(Exception):
    """A selector failed while evaluating against one device (upstream's runtime error)."""


# --- cel.bind ----------------------------------------------------------------------------

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
            self._charge(1)
        result = super()._visit_tree(tree)
        if isinstance(result, str | bytes | list) and _builds_a_value(tree):
            # cel-go charges what it builds by its size (interpreter/runtime_cost.go:
            # concatenation and string functions at common.StringTraversalCostFactor per
            # byte or element), so an expression doubling a string runs out of budget long
            # before it runs out of memory
            self._charge(math.ceil(len(result) * TRAVERSAL_COST_FACTOR))
        return result

    def _charge(self, units: int) -> None:
        self.budget[0] -= units
        if self.budget[0] < 0:
            raise _CostExceeded


def _builds_a_value(tree: _Tree) -> bool:
    """A concatenation (`a + b`), or a function or method call (whose result may be new)."""
    if tree.data == "addition":
        first = tree.children[0] if tree.children else None
        return isinstance(first, lark.Tree) and first.data == "addition_add"
    return tree.data in ("member_dot_arg", "ident_arg")


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
    checked = check_selector(expression, consumable_capacity=consumable_capacity)
    if checked.error is not None:
        return CompiledSelector(expression, checked.error)
    ast = checked.tree
    program = _CountingRunner(_ENV, _expand_bind(ast), LIBRARY_FUNCTIONS)
    program.cost_limit = cost_limit
    return CompiledSelector(
        expression, None, int(checked.max_cost), program, not checked.uses_device
    )


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
