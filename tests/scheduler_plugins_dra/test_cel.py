"""CEL device selectors: facts ported from upstream's
staging/src/k8s.io/dynamic-resource-allocation/cel/compile_test.go (case names are upstream's;
the v1.34 subset: scalar attributes, no list-type attributes), plus the Kubernetes quantity and
semver library functions a selector uses and the cache."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.api.resource import ResourceSliceView
from scheduler.plugins.dynamicresources.cel import (
    CEL_SELECTOR_EXPRESSION_MAX_COST,
    COST_LIMIT_EXCEEDED,
    CelCache,
    CelRuntimeError,
    CompiledSelector,
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
    # the outcome is keyed by what the selector can read, not by slice and device name: a
    # different device under the same slice uid, resourceVersion and name is evaluated
    other = _device(attributes={"model": {"string": "b"}})
    assert cache.device_matches(compiled, "u", "1", DRIVER, other) is False
    failing = cache.get_or_compile('device.attributes["dra.example.com"].nope')
    for _ in range(2):
        with pytest.raises(CelRuntimeError, match="no such key: nope"):
            cache.device_matches(failing, "u", "1", DRIVER, device)


def _slice(uid: str, *devices: dict[str, Any], driver: str = DRIVER) -> ResourceSliceView:
    return ResourceSliceView.from_dict(
        {
            "metadata": {"name": f"slice-{uid}", "uid": uid, "resourceVersion": "1" if uid else ""},
            "spec": {
                "driver": driver,
                "pool": {"name": uid, "generation": 1, "resourceSliceCount": 1},
                "nodeName": f"node-{uid}",
                "devices": list(devices),
            },
        }
    )


def _counting(compiled: CompiledSelector) -> list[None]:
    """Count `compiled`'s evaluations (every evaluation goes through device_matches)."""
    calls: list[None] = []
    evaluate = compiled.device_matches

    def counted(activation: Any, stop: Any = None) -> bool:
        calls.append(None)
        return evaluate(activation, stop)

    compiled.device_matches = counted  # type: ignore[method-assign]
    return calls


def _outcome_in(cache: CelCache, compiled: CompiledSelector, resource_slice: ResourceSliceView,
                index: int) -> bool | str:  # fmt: skip
    try:
        return cache.device_matches(
            compiled,
            resource_slice.uid,
            resource_slice.resource_version,
            resource_slice.driver,
            resource_slice.devices[index],
        )
    except CelRuntimeError as err:
        return str(err)


GPU = {"name": "gpu-0", "attributes": {"model": {"string": "V100M16"}, "index": {"int": 0}},
       "capacity": {"memory": {"value": "16Gi"}}}  # fmt: skip
IS_V100 = f'device.attributes["{DRIVER}"].model == "V100M16"'
NO_SUCH_KEY = f'device.attributes["{DRIVER}"].nope'
HAS_MODEL = f'device.attributes["{DRIVER}"].exists(k, k == "model")'  # evaluated off the loop


@pytest.mark.parametrize(
    ("expression", "outcome"),
    [(IS_V100, True), (NO_SUCH_KEY, "no such key: nope"), (HAS_MODEL, True)],
)
def test_identical_devices_of_many_slices_are_evaluated_once(
    expression: str, outcome: bool | str
) -> None:
    """Twenty nodes' copies of one GPU (different slices, names and indexes aside from the
    attribute read): one evaluation, one outcome, a runtime error's message included."""
    slices = [_slice(f"u{n}", {**GPU, "name": f"gpu-{n}"}) for n in range(20)]
    cache = CelCache()
    compiled = cache.get_or_compile(expression)
    calls = _counting(compiled)
    assert [_outcome_in(cache, compiled, s, 0) for s in slices] == [outcome] * 20
    assert len(calls) == 1
    # the worker is handed one evaluation for them all
    fresh = CelCache()
    assert len(list(fresh.missing(fresh.get_or_compile(expression), slices))) == 1


def test_devices_of_unidentified_slices_are_not_remembered() -> None:
    slices = [_slice("", {**GPU, "name": f"gpu-{n}"}) for n in range(3)]
    cache = CelCache()
    compiled = cache.get_or_compile(IS_V100)
    calls = _counting(compiled)
    assert [_outcome_in(cache, compiled, s, 0) for s in slices] == [True] * 3
    assert len(calls) == 3


# Pairs of devices that differ in one thing a selector reads, and a selector telling them apart.
DIFFERING = {
    "int 1 or string 1": (
        {"model": {"int": 1}}, {"model": {"string": "1"}}, {},
        f'device.attributes["{DRIVER}"].model == 1',
    ),
    "bool true or int 1": (
        {"model": {"bool": True}}, {"model": {"int": 1}}, {},
        f'device.attributes["{DRIVER}"].model == true',
    ),
    "version or string": (
        {"v": {"version": "1.2.3"}}, {"v": {"string": "1.2.3"}}, {},
        f'device.attributes["{DRIVER}"].v.major() == 1',
    ),
    "capacity": (
        {}, {}, {"capacity": ("2Gi", "1Gi")},
        f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("1536Mi"))',
    ),
    "driver": ({}, {}, {"driver": "other.example.com"}, f'device.driver == "{DRIVER}"'),
}  # fmt: skip


@pytest.mark.parametrize("case", DIFFERING.values(), ids=DIFFERING.keys())
def test_devices_differing_in_what_a_selector_reads_do_not_share_an_outcome(
    case: tuple[dict[str, Any], dict[str, Any], dict[str, Any], str],
) -> None:
    first_attributes, second_attributes, other, expression = case
    capacity = other.get("capacity", ("1Gi", "1Gi"))
    first = _slice("a", {"name": "d", "attributes": first_attributes,
                         "capacity": {"memory": {"value": capacity[0]}}})  # fmt: skip
    second = _slice(
        "b",
        {"name": "d", "attributes": second_attributes,
         "capacity": {"memory": {"value": capacity[1]}}},
        driver=other.get("driver", DRIVER),
    )  # fmt: skip
    cache = CelCache()
    compiled = cache.get_or_compile(expression)
    outcomes = [_outcome_in(cache, compiled, s, 0) for s in (first, second)]
    assert outcomes[0] is True
    assert outcomes[1] != outcomes[0]
    assert outcomes[1] == _outcome_in(CelCache(), compile_selector(expression), second, 0)
    # and the other way round
    cache = CelCache()
    compiled = cache.get_or_compile(expression)
    assert [_outcome_in(cache, compiled, s, 0) for s in (second, first)] == outcomes[::-1]


_DRIVERS = (DRIVER, "other.example.com")
_ATTRIBUTE_VALUES = st.one_of(
    st.builds(lambda v: {"int": v}, st.integers(-1, 2)),
    st.builds(lambda v: {"bool": v}, st.booleans()),
    st.builds(lambda v: {"string": v}, st.sampled_from(["1", "a", "1.0.0"])),
    st.builds(lambda v: {"version": v}, st.sampled_from(["1.0.0", "1.0.0-rc.1", "2.1.0"])),
)
_DEVICES = st.fixed_dictionaries(
    {
        "attributes": st.dictionaries(
            st.sampled_from(["model", "index", "other.example.com/model"]), _ATTRIBUTE_VALUES
        ),
        "capacity": st.dictionaries(
            st.sampled_from(["memory", "cores"]),
            st.builds(lambda v: {"value": v}, st.sampled_from(["1", "2", "1Gi", "1024Mi", "500m"])),
        ),
        "allowMultipleAllocations": st.booleans(),
    }
)
_OWN = f'device.attributes["{DRIVER}"]'
PROPERTY_SELECTORS = [
    f'device.driver == "{DRIVER}"',
    f"{_OWN}.model == 1",
    f"{_OWN}.model",  # a bool attribute, or "could not be converted to bool"
    f"{_OWN}.index > 0",  # "no such key" when absent, an overload error on a string
    f"{_OWN}.model.major() >= 1",
    'device.attributes["other.example.com"].model.isLessThan(semver("1.0.0"))',
    f'device.capacity["{DRIVER}"].memory.isGreaterThan(quantity("1Gi"))',
    f'device.capacity["{DRIVER}"].cores.compareTo(quantity("1")) == 0',
    f"{_OWN}.exists(k, {_OWN}[k] == 1)",  # off the loop
]
_FRESH: dict[tuple[str, bool], CompiledSelector] = {}


def _fresh_outcome(expression: str, consumable: bool, driver: str, device: Any) -> bool | str:
    compiled = _FRESH.get((expression, consumable))
    if compiled is None:
        compiled = _FRESH[expression, consumable] = compile_selector(
            expression, consumable_capacity=consumable
        )
    try:
        return compiled.device_matches(
            device_activation(driver, device, consumable_capacity=consumable)
        )
    except CelRuntimeError as err:
        return str(err)


@given(
    devices=st.lists(st.tuples(st.sampled_from(_DRIVERS), _DEVICES), min_size=1, max_size=6),
    consumable=st.booleans(),
    data=st.data(),
)
@settings(max_examples=40, deadline=None)
def test_the_content_keyed_cache_agrees_with_evaluating_afresh(
    devices: list[tuple[str, dict[str, Any]]], consumable: bool, data: st.DataObject
) -> None:
    """Whatever devices share a key, each gets the outcome (match, non-match or runtime
    error message) a fresh, uncached evaluation gives it, inline or through the worker's
    missing/evaluate/record."""
    slices = [
        _slice(f"u{n}", {**device, "name": "d"}, driver=driver)
        for n, (driver, device) in enumerate(devices)
    ]
    selectors = [*PROPERTY_SELECTORS]
    if consumable:
        selectors.append("device.allowMultipleAllocations")
    selectors = data.draw(st.lists(st.sampled_from(selectors), min_size=1, max_size=4, unique=True))
    cache = CelCache(consumable_capacity=consumable)
    for expression in selectors:
        compiled = cache.get_or_compile(expression)
        assert compiled.error is None, compiled.error
        if compiled.off_loop:
            work = list(cache.missing(compiled, slices))
            cache.record([(item.key, cache.evaluate(item)) for item in work])
            assert not list(cache.missing(compiled, slices))
        for resource_slice in slices:
            expected = _fresh_outcome(
                expression, consumable, resource_slice.driver, resource_slice.devices[0]
            )
            assert _outcome_in(cache, compiled, resource_slice, 0) == expected, expression
