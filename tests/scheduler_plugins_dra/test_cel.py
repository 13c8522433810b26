"""CEL device selectors: facts ported from upstream's
staging/src/k8s.io/dynamic-resource-allocation/cel/compile_test.go (case names are upstream's;
the v1.34 subset: scalar attributes, no list-type attributes), plus the Kubernetes quantity and
semver library functions a selector uses and the cache."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.api.resource import ResourceSliceView
from scheduler.plugins.dynamicresources.cel import (
    CEL_SELECTOR_EXPRESSION_MAX_COST,
    COST_LIMIT_EXCEEDED,
    CelCache,
    CelRuntimeError,
    compile_selector,
    device_activation,
)

DRIVER = "dra.example.com"


def _device(attributes: dict[str, Any] | None = None, capacity: dict[str, str] | None = None):
    raw: dict[str, Any] = {"name": "d"}
    if attributes:
        raw["attributes"] = attributes
    if capacity:
        raw["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    view = ResourceSliceView.from_dict(
        {
            "metadata": {"name": "s", "uid": "u", "resourceVersion": "1"},
            "spec": {
                "driver": DRIVER,
                "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "nodeName": "n",
                "devices": [raw],
            },
        }
    )
    return view.devices[0]


def evaluate(expression: str, driver: str = DRIVER, **device: Any) -> bool:
    compiled = compile_selector(expression)
    assert compiled.error is None, compiled.error
    return compiled.device_matches(device_activation(driver, _device(**device)))


ALL_ATTRIBUTES = {
    "bool": {"bool": True},
    "int": {"int": 1},
    "string": {"string": "fish"},
    "version": {"version": "1.0.0"},
}

MATCHES = [
    ("true", "true", {}, True),
    ("false", "false", {}, False),
    ("domain-check-negative", '"no-such-domain" in device.attributes', {}, False),
    (
        "domain-check-positive",
        '"dra.example.com" in device.attributes',
        {"attributes": {"dra.example.com/something": {"bool": True}}},
        True,
    ),
    (
        "driver-name-qualifier",
        'device.attributes["dra.example.com"].name',
        {"attributes": {"name": {"bool": True}}},
        True,
    ),
    (
        "driver-name-qualifier-map-lookup",
        'device.attributes["dra.example.com"]["name"]',
        {"attributes": {"name": {"bool": True}}},
        True,
    ),
    (
        "bind",
        'cel.bind(dra, device.attributes["dra.example.com"], dra.name)',
        {"attributes": {"name": {"bool": True}}},
        True,
    ),
    (
        "qualified-attribute-name",
        'device.attributes["other.example.com"].name',
        {"attributes": {"other.example.com/name": {"bool": True}}},
        True,
    ),
    (
        "int",
        'device.attributes["dra.example.com"].name > 0',
        {"attributes": {"name": {"int": 1}}},
        True,
    ),
    (
        "string",
        'device.attributes["dra.example.com"].name == "fish"',
        {"attributes": {"name": {"string": "fish"}}},
        True,
    ),
    (
        "version",
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
        {"attributes": {"name": {"version": "1.0.0"}}},
        True,
    ),
    (
        "version_v",
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) '
        '&& isSemver("v1.0.0", true)',
        {"attributes": {"name": {"version": "1.0.0"}}},
        True,
    ),
    (
        "quantity",
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        {"capacity": {"name": "1Mi"}},
        True,
    ),
    (
        "check-positive",
        '"name" in device.capacity["dra.example.com"] && '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        {"capacity": {"name": "1Mi"}},
        True,
    ),
    (
        "check-negative",
        '!("name" in device.capacity["dra.example.com"]) || '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        {},
        True,
    ),
    (
        "all",
        """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
""",
        {"attributes": ALL_ATTRIBUTES, "capacity": {"quantity": "1Mi"}},
        True,
    ),
    (
        "check_attribute_domains",
        'device.attributes.exists_one(x, x == "dra.example.com")',
        {"attributes": {"services": {"string": "some_example_value"}}},
        True,
    ),
    (
        "check_attribute_ids",
        'device.attributes["dra.example.com"].exists_one(x, x == "services")',
        {"attributes": {"services": {"string": "some_example_value"}}},
        True,
    ),
    (
        "split_attribute",
        'device.attributes["dra.example.com"].services.split("example").size() >= 2',
        {"attributes": {"services": {"string": "some_example_value"}}},
        True,
    ),
    (
        "regexp_attribute",
        'device.attributes["dra.example.com"].services.matches("[^a]?sym")',
        {"attributes": {"services": {"string": "asymetric"}}},
        True,
    ),
    (
        "check_capacity_domains",
        'device.capacity.exists_one(x, x == "dra.example.com")',
        {"capacity": {"memory": "1Mi"}},
        True,
    ),
]


@pytest.mark.parametrize(
    ("expression", "device", "expected"),
    [case[1:] for case in MATCHES],
    ids=[case[0] for case in MATCHES],
)
def test_matches(expression: str, device: dict[str, Any], expected: bool) -> None:
    assert evaluate(expression, **device) is expected


def test_driver_names() -> None:
    # "empty-driver-name" / "real-driver-name"
    assert evaluate('device.driver == ""', driver="") is True
    assert evaluate('device.driver == "dra.example.com"') is True


COMPILE_ERRORS = [
    ("syntax-error", "?!", "Syntax error"),
    ("type-error", "1", "must evaluate to bool or the unknown type, not int"),
    ("string-result", '"x"', "must evaluate to bool or the unknown type, not string"),
    ("undeclared-variable", "x == 1", "undeclared reference to 'x' (in container '')"),
    ("undeclared-function", "foo(1)", "undeclared reference to 'foo' (in container '')"),
    ("undefined-device-field", "device.foo", "undefined field 'foo'"),
    (
        "allow_multiple_allocations_disabled",
        "device.allowMultipleAllocations == false",
        "undefined field 'allowMultipleAllocations'",
    ),
]


@pytest.mark.parametrize(
    ("expression", "message"),
    [case[1:] for case in COMPILE_ERRORS],
    ids=[case[0] for case in COMPILE_ERRORS],
)
def test_compile_errors(expression: str, message: str) -> None:
    compiled = compile_selector(expression)
    assert compiled.error is not None
    assert message in compiled.error


RUNTIME_ERRORS = [
    (
        "runtime-error-lookup-identifier",
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        {},
        "no such key: noSuchAttr",
    ),
    (
        "runtime-error-lookup-map",
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        {},
        "no such key: noSuchAttr",
    ),
    (
        "macro-exists-on-int",
        'device.attributes["dra.example.com"].name.exists(x, x > 0)',
        {"attributes": {"name": {"int": 1}}},
        "got 'types.Int', expected iterable type",
    ),
    (
        "non-bool-result",
        'device.attributes["dra.example.com"].name',
        {"attributes": {"name": {"string": "fish"}}},
        "CEL result of type string could not be converted to bool",
    ),
]


@pytest.mark.parametrize(
    ("expression", "device", "message"),
    [case[1:] for case in RUNTIME_ERRORS],
    ids=[case[0] for case in RUNTIME_ERRORS],
)
def test_runtime_errors(expression: str, device: dict[str, Any], message: str) -> None:
    with pytest.raises(CelRuntimeError) as err:
        evaluate(expression, **device)
    assert message in str(err.value)


def test_allow_multiple_allocations_with_consumable_capacity() -> None:
    compiled = compile_selector(
        "device.allowMultipleAllocations == false", consumable_capacity=True
    )
    assert compiled.error is None
    activation = device_activation(DRIVER, _device(), consumable_capacity=True)
    assert compiled.device_matches(activation) is True


EXPENSIVE = (
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, "
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))"
)


def test_expensive_is_bounded_by_the_cost_limit() -> None:
    """Upstream's "expensive": the worst-case estimate exceeds the limit and evaluation stops
    with "actual cost limit exceeded". The same accounting with a lower limit, so the test
    does not walk a million nodes in pure Python."""
    compiled = compile_selector(EXPENSIVE)
    assert compiled.error is None
    assert compiled.max_cost > CEL_SELECTOR_EXPRESSION_MAX_COST
    assert compiled.device_independent
    limited = compile_selector(EXPENSIVE, cost_limit=10_000)
    with pytest.raises(CelRuntimeError) as err:
        limited.device_matches(device_activation(DRIVER, _device()))
    assert str(err.value) == COST_LIMIT_EXCEEDED
    assert "actual cost limit exceeded" in COST_LIMIT_EXCEEDED
    # a cheap expression stays under the same limit
    cheap = compile_selector("[1, 2, 3].all(x, x > 0)", cost_limit=10_000)
    assert cheap.device_matches(device_activation(DRIVER, _device())) is True


LIBRARY = [
    'quantity("1Gi").compareTo(quantity("1024Mi")) == 0',
    'quantity("1Gi") == quantity("1024Mi")',
    'quantity("500m").isLessThan(quantity("1"))',
    'quantity("1Gi").add(1).sub(quantity("1")).asInteger() == 1073741824',
    'quantity("1.5").isInteger() == false',
    'quantity("2").isInteger()',
    'quantity("1.5").asApproximateFloat() == 1.5',
    'quantity("-3").sign() == -1 && quantity("0").sign() == 0',
    'isQuantity("1Gi") && !isQuantity("one")',
    'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2',
    'semver("1.2.3").patch() == 3',
    'semver("1.2.3").isLessThan(semver("1.10.0"))',
    'semver("1.0.0-alpha").isLessThan(semver("1.0.0"))',
    'semver("1.2.3").compareTo(semver("1.2.3")) == 0',
    'isSemver("1.2.3") && !isSemver("1.2") && isSemver("1.2", true)',
    'semver("v01.02", true) == semver("1.2.0")',
    '"FiSh".lowerAscii() == "fish"',
]


@pytest.mark.parametrize("expression", LIBRARY)
def test_library_functions(expression: str) -> None:
    assert evaluate(expression) is True


def test_library_errors() -> None:
    with pytest.raises(CelRuntimeError) as err:
        evaluate('quantity("1.5").asInteger() == 1')
    assert "cannot convert value to integer" in str(err.value)
    with pytest.raises(CelRuntimeError) as bad:
        evaluate('quantity("x") == quantity("1")')
    assert "quantities must match the regular expression" in str(bad.value)


def test_cache_compiles_once_and_remembers_results() -> None:
    cache = CelCache(max_size=2)
    first = cache.get_or_compile("true")
    assert cache.get_or_compile("true") is first
    cache.get_or_compile("false")
    cache.get_or_compile("1 == 1")  # evicts "true", the least recently used
    assert cache.get_or_compile("true") is not first
    device = _device(attributes={"model": {"string": "a"}})
    compiled = cache.get_or_compile('device.attributes["dra.example.com"].model == "a"')
    assert cache.device_matches(compiled, "u", "1", DRIVER, device) is True
    # the outcome is keyed by slice uid + resourceVersion + device name: a different device
    # under the same key is not re-evaluated
    other = _device(attributes={"model": {"string": "b"}})
    assert cache.device_matches(compiled, "u", "1", DRIVER, other) is True
    assert cache.device_matches(compiled, "u", "2", DRIVER, other) is False
    failing = cache.get_or_compile('device.attributes["dra.example.com"].nope')
    for _ in range(2):
        with pytest.raises(CelRuntimeError, match="no such key: nope"):
            cache.device_matches(failing, "u", "1", DRIVER, device)
