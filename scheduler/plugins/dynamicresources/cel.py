"""CEL device selectors as upstream's k8s.io/dynamic-resource-allocation/cel (compile.go,
cache.go) evaluates them, on the cel-python library (`celpy`).

Why a module of its own: the allocator evaluates every selector of every class and request
against every candidate device on every node for every pod, so compiling (an LRU of compiled
programs keyed by expression, upstream's cel.Cache) and evaluating (a cache of outcomes keyed by
expression and what the environment exposes of the device: its driver, attributes with their
types, capacities and, with DRAConsumableCapacity, allowMultipleAllocations; exact because an
outcome is a function of those alone, and cheap because a cluster's thousands of devices are
copies of a few kinds, so each selector is evaluated once per kind) are worth keeping apart
from the search itself.

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

import functools
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import celpy
import celpy.celtypes as ct
import lark
from celpy.evaluation import CELEvalError, Evaluator

from apimachinery.cel_check import (
    CEL_SELECTOR_EXPRESSION_MAX_COST as CEL_SELECTOR_EXPRESSION_MAX_COST,
)
from apimachinery.cel_check import (
    LIBRARY_FUNCTION_NAMES,
    _cel_bind_parts,
    _ident_name,
    _Tree,
    cel_environment,
    check_selector,
)
from apimachinery.cel_check import (
    MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE as MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE,
)
from apimachinery.quantity import parse_quantity
from scheduler.api.resource import AttributeValue, DeviceView, ResourceSliceView
from scheduler.plugins.dynamicresources.cel_library import LIBRARY_FUNCTIONS, Quantity, Semver

assert set(LIBRARY_FUNCTIONS) == LIBRARY_FUNCTION_NAMES  # what is declared is implemented
# cel.Cache's default size in the scheduler plugin (dynamicresources.go: cel.NewCache(10)).
DEFAULT_CACHE_SIZE = 10
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"
# cel-go's common.StringTraversalCostFactor: cost per byte (or element) of what is built.
TRAVERSAL_COST_FACTOR = 0.1
# aiosched's bounds on the scheduler's event loop (celpy walks a tree: about 30 us a cost unit,
# a thousand times cel-go's speed). A selector whose static estimate is over INLINE_MAX_COST
# (a macro over a list or a device's attributes) is evaluated on a worker thread
# (selector_worker.py), never in a scheduling cycle; the plain comparisons selectors are
# made of (`device.driver == "x"`: 3 units, attribute and capacity comparisons: 5 to 20) stay
# inline. An expression longer than INLINE_COMPILE_LENGTH is compiled there too: parsing costs
# about 0.1 ms a character.
INLINE_MAX_COST = 100
INLINE_COMPILE_LENGTH = 256
# The worker's evaluations give the interpreter lock up every this many cost units, so the
# event loop's thread never waits long for it.
YIELD_EVERY_UNITS = 64


class CelRuntimeError(Exception):
    """A selector failed while evaluating against one device (upstream's runtime error)."""


# --- cel.bind ----------------------------------------------------------------------------


# cel.bind(v, init, body) is cel-go's ext.Bindings macro; celpy lacks it, so its call node is
# replaced by the equivalent `[init].map(v, body)[0]` (init evaluated once, body sees v).
@functools.cache
def _bind_template() -> _Tree:
    return cel_environment().compile("[__init__].map(__var__, __body__)[0]")


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
    var_expr = cel_environment().compile(variable)
    expanded = _replace_idents(
        _bind_template(), {"__init__": init, "__var__": var_expr, "__body__": body}
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


class EvaluationCancelled(Exception):
    """The worker evaluating a selector off the event loop was stopped."""


class _Budget:
    """What one evaluation may still spend; `stop` is set for evaluations on the worker
    thread, which give up the interpreter lock every YIELD_EVERY_UNITS units and end when
    the worker is stopped."""

    __slots__ = ("countdown", "remaining", "stop")

    def __init__(self, limit: int, stop: threading.Event | None) -> None:
        self.remaining = limit
        self.stop = stop
        self.countdown = YIELD_EVERY_UNITS


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

    def __init__(self, ast: _Tree, activation: Any, budget: _Budget) -> None:
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
        budget = self.budget
        budget.remaining -= units
        if budget.remaining < 0:
            raise _CostExceeded
        if budget.stop is not None:
            budget.countdown -= units
            if budget.countdown <= 0:
                budget.countdown = YIELD_EVERY_UNITS
                if budget.stop.is_set():
                    raise EvaluationCancelled
                time.sleep(0)  # lets the event loop's thread take the lock


def _builds_a_value(tree: _Tree) -> bool:
    """A concatenation (`a + b`), or a function or method call (whose result may be new)."""
    if tree.data == "addition":
        first = tree.children[0] if tree.children else None
        return isinstance(first, lark.Tree) and first.data == "addition_add"
    return tree.data in ("member_dot_arg", "ident_arg")


class _CountingRunner(celpy.InterpretedRunner):
    cost_limit: int = CEL_SELECTOR_EXPRESSION_MAX_COST

    def evaluate(self, context: Any, stop: threading.Event | None = None) -> Any:
        budget = _Budget(self.cost_limit, stop)
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

    @property
    def off_loop(self) -> bool:
        """Whether the scheduler evaluates this selector on its worker thread."""
        return self.error is None and self.max_cost > INLINE_MAX_COST

    def device_matches(
        self, activation: Mapping[str, Any], stop: threading.Event | None = None
    ) -> bool:
        """Evaluate against one device's activation; CelRuntimeError on failure. With `stop`
        (the worker thread), the evaluation yields the interpreter lock as it goes and raises
        EvaluationCancelled once `stop` is set."""
        if self.program is None:
            raise CelRuntimeError(self.error or "not compiled")
        try:
            result = self.program.evaluate(activation, stop)
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
    program = _CountingRunner(cel_environment(), _expand_bind(ast), LIBRARY_FUNCTIONS)
    program.cost_limit = cost_limit
    return CompiledSelector(
        expression, None, int(checked.max_cost), program, not checked.uses_device
    )


# (expression, CelCache.device_key): one selector's outcome on every device the CEL environment
# sees alike; (expression,) for an expression that never reads `device`.
ResultKey = tuple[Hashable, ...]


@dataclass(frozen=True, slots=True)
class SelectorWork:
    """One evaluation the worker thread owes: `compiled` against `device` of a slice of
    `driver`, its outcome to be stored under `key`."""

    compiled: CompiledSelector
    key: ResultKey
    driver: str
    device: DeviceView


class CelCache:
    """Compiled selectors by expression, least recently used dropped first (cel.Cache), and
    each selector's outcome keyed by the expression and the device's content as the CEL
    environment exposes it (`result_key`): exact, because the activation is built from that
    content alone (device_activation; upstream's compile.go DeviceMatches exposes nothing
    else), and no runtime error's message names the device or its slice (the allocator adds
    the device's name when it reports one). Identical devices of different slices share one
    evaluation. Outcomes are only kept for devices of identified slices (uid and
    resourceVersion set). Shared across scheduling cycles by the plugin.

    Outcomes of the selectors evaluated off the event loop (`CompiledSelector.off_loop`) are
    kept apart: they are only dropped (all at once, past `max_results`) when the worker
    stores new ones, between cycles, so what PreFilter found cached is still there in Filter."""

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
        self._results: dict[ResultKey, bool | str] = {}
        self._off_loop_results: dict[ResultKey, bool | str] = {}
        self._activations: dict[ResultKey, dict[str, Any]] = {}

    def get_or_compile(self, expression: str) -> CompiledSelector:
        compiled = self.compiled(expression)
        if compiled is None:
            compiled = compile_selector(expression, consumable_capacity=self.consumable_capacity)
            self.put_compiled(compiled)
        return compiled

    def compiled(self, expression: str) -> CompiledSelector | None:
        """The expression's compiled selector if cached (then the most recently used)."""
        compiled = self._compiled.get(expression)
        if compiled is not None:
            self._compiled.move_to_end(expression)
        return compiled

    def put_compiled(self, compiled: CompiledSelector) -> None:
        self._compiled[compiled.expression] = compiled
        self._compiled.move_to_end(compiled.expression)
        if len(self._compiled) > self.max_size:
            self._compiled.popitem(last=False)

    def result_key(self, compiled: CompiledSelector, driver: str, device: DeviceView) -> ResultKey:
        """The key of `compiled`'s outcome on `device` of a slice of `driver`."""
        if compiled.device_independent:
            return (compiled.expression,)
        return (compiled.expression, self.device_key(driver, device))

    def device_key(self, driver: str, device: DeviceView) -> tuple[Hashable, ...]:
        """Everything the `device` variable exposes (device_activation), as a key."""
        if self.consumable_capacity:
            return (driver, device.cel_content, device.allow_multiple_allocations)
        return (driver, device.cel_content)

    def missing(
        self, compiled: CompiledSelector, slices: Sequence[ResourceSliceView]
    ) -> Iterator[SelectorWork]:
        """The evaluations of an off-loop selector not cached yet for the devices of
        `slices`: one per distinct key (so one for an expression that never reads `device`)."""
        results = self._off_loop_results
        seen: set[ResultKey] = set()
        for resource_slice in slices:
            driver = resource_slice.driver
            for device in resource_slice.devices:
                key = self.result_key(compiled, driver, device)
                if key not in results and key not in seen:
                    seen.add(key)
                    yield SelectorWork(compiled, key, driver, device)
                if compiled.device_independent:
                    return

    def record(self, outcomes: Sequence[tuple[ResultKey, bool | str]]) -> None:
        """Store what the worker thread evaluated (on the event loop's thread)."""
        if len(self._off_loop_results) + len(outcomes) > self.max_results:
            self._off_loop_results.clear()
        self._off_loop_results.update(outcomes)

    def evaluate(self, work: SelectorWork, stop: threading.Event | None = None) -> bool | str:
        """One evaluation as the worker thread runs it: the outcome, or the runtime error's
        message (EvaluationCancelled once `stop` is set)."""
        activation = device_activation(
            work.driver, work.device, consumable_capacity=self.consumable_capacity
        )
        try:
            return work.compiled.device_matches(activation, stop)
        except CelRuntimeError as err:
            return str(err)

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
        if not compiled.device_independent and (not slice_uid or not slice_version):
            return compiled.device_matches(
                device_activation(driver, device, consumable_capacity=self.consumable_capacity)
            )
        key = self.result_key(compiled, driver, device)
        results = self._off_loop_results if compiled.off_loop else self._results
        outcome = results.get(key)
        if outcome is None:
            try:
                outcome = compiled.device_matches(self._activation(driver, device))
            except CelRuntimeError as err:
                outcome = str(err)
            if len(results) >= self.max_results:
                if results is self._off_loop_results:  # kept until the worker stores more
                    return _outcome(outcome)
                results.clear()
            results[key] = outcome
        return _outcome(outcome)

    def _activation(self, driver: str, device: DeviceView) -> dict[str, Any]:
        key = self.device_key(driver, device)
        activation = self._activations.get(key)
        if activation is None:
            activation = device_activation(
                driver, device, consumable_capacity=self.consumable_capacity
            )
            if len(self._activations) >= self.max_results:
                self._activations.clear()
            self._activations[key] = activation
        return activation


def _outcome(outcome: bool | str) -> bool:
    if isinstance(outcome, str):
        raise CelRuntimeError(outcome)
    return outcome
