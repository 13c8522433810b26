"""FastCounter / FastHistogram render exactly what prometheus_client's Counter / Histogram render.

Every case feeds the same values to a fast family and to prometheus_client's own metric, each in
its own registry, and compares the text exposition line by line. Only the values of the
``*_created`` samples (wall-clock creation times) are masked before comparing.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    enable_created_metrics,
)
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import DuplicateTimeseries

from observability.fast_metrics import FastCounter, FastHistogram
from observability.metrics import exponential_buckets

INF = math.inf
NAN = math.nan

PLUGIN_BUCKETS = exponential_buckets(0.00001, 1.5, 20)  # awkward floats: 1.5 ** i
POINT_BUCKETS = exponential_buckets(0.0001, 2, 12)
ATTEMPTS_BUCKETS = exponential_buckets(1, 2, 5)

Observations = Sequence[tuple[tuple[str, ...], float]]

_CREATED_VALUE = re.compile(r"^(\w+_created(?:\{.*\})?) \S+$", re.MULTILINE)


def masked(text: bytes) -> str:
    """The exposition with the ``*_created`` sample values (timestamps) replaced by ``T``."""
    return _CREATED_VALUE.sub(r"\1 T", text.decode())


def histogram_expositions(
    labelnames: Sequence[str], buckets: Sequence[float], observations: Observations
) -> tuple[str, str]:
    fast_registry, reference_registry = CollectorRegistry(), CollectorRegistry()
    fast = FastHistogram("h_seconds", "Help.", labelnames, buckets=buckets, registry=fast_registry)
    reference = Histogram(
        "h_seconds", "Help.", labelnames, buckets=buckets, registry=reference_registry
    )
    for labels, value in observations:
        fast.labels(*labels).observe(value)
        (reference.labels(*labels) if labels else reference).observe(value)
    return masked(generate_latest(fast_registry)), masked(generate_latest(reference_registry))


def counter_expositions(labelnames: Sequence[str], increments: Observations) -> tuple[str, str]:
    fast_registry, reference_registry = CollectorRegistry(), CollectorRegistry()
    fast = FastCounter("c_total", "Help.", labelnames, registry=fast_registry)
    reference = Counter("c_total", "Help.", labelnames, registry=reference_registry)
    for labels, amount in increments:
        fast.labels(*labels).inc(amount)
        (reference.labels(*labels) if labels else reference).inc(amount)
    return masked(generate_latest(fast_registry)), masked(generate_latest(reference_registry))


HISTOGRAM_CASES: list[tuple[str, tuple[str, ...], Sequence[float], Observations]] = [
    ("unlabelled, never observed", (), POINT_BUCKETS, []),
    ("labelled, never observed", ("result",), POINT_BUCKETS, []),
    ("zero", (), POINT_BUCKETS, [((), 0.0)]),
    ("negative", (), POINT_BUCKETS, [((), -0.5), ((), -INF)]),
    ("exactly on every bound", (), POINT_BUCKETS, [((), b) for b in POINT_BUCKETS]),
    ("exactly on every 1.5**i bound", (), PLUGIN_BUCKETS, [((), b) for b in PLUGIN_BUCKETS]),
    (
        "just either side of a bound",
        (),
        POINT_BUCKETS,
        [((), math.nextafter(0.0008, 0)), ((), 0.0008), ((), math.nextafter(0.0008, 1))],
    ),
    (
        "+Inf bucket",
        (),
        POINT_BUCKETS,
        [((), POINT_BUCKETS[-1] * 2), ((), 1e300), ((), INF)],
    ),
    ("NaN: in _sum, in no bucket", (), POINT_BUCKETS, [((), 0.001), ((), NAN)]),
    ("ints (attempt counts)", (), ATTEMPTS_BUCKETS, [((), 1), ((), 2), ((), 3), ((), 17)]),
    (
        "several label sets, interleaved",
        ("extension_point", "status", "profile"),
        POINT_BUCKETS,
        [
            (("Filter", "Success", "default-scheduler"), 0.0002),
            (("Score", "Success", "default-scheduler"), 0.0031),
            (("Filter", "Success", "default-scheduler"), 0.0002),
            (("Filter", "Unschedulable", "other"), 0.4),
            (("Score", "Success", "default-scheduler"), 0.0),
            (("Filter", "Success", "default-scheduler"), 1e-9),
        ],
    ),
    (
        "label values that need escaping",
        ("plugin",),
        PLUGIN_BUCKETS,
        [(('a"b\\c\nd',), 0.001), (("é",), 0.002)],
    ),
    (
        "many observations (float sum order)",
        ("plugin", "extension_point", "status"),
        PLUGIN_BUCKETS,
        [((f"P{i % 3}", "Filter", "Success"), (i % 97) * 1.37e-5) for i in range(2000)],
    ),
    ("explicit +Inf bound", (), (0.1, 1.0, INF), [((), 0.1), ((), 5.0)]),
]


@pytest.mark.parametrize(
    ("labelnames", "buckets", "observations"),
    [case[1:] for case in HISTOGRAM_CASES],
    ids=[case[0] for case in HISTOGRAM_CASES],
)
def test_histogram_exposition_matches_prometheus_client(
    labelnames: tuple[str, ...], buckets: Sequence[float], observations: Observations
) -> None:
    fast, reference = histogram_expositions(labelnames, buckets, observations)
    assert fast.splitlines() == reference.splitlines()


COUNTER_CASES: list[tuple[str, tuple[str, ...], Observations]] = [
    ("unlabelled, never incremented", (), []),
    ("labelled, never incremented", ("result",), []),
    ("unlabelled", (), [((), 1), ((), 1)]),
    ("zero and fractional amounts", (), [((), 0), ((), 0.5), ((), 1e-17), ((), 3)]),
    ("huge", (), [((), 2.0**53), ((), 1)]),
    (
        "several label sets, interleaved",
        ("plugin", "extension_point", "profile"),
        [
            (("NodeResourcesFit", "Filter", "default-scheduler"), 1),
            (("TaintToleration", "Filter", "default-scheduler"), 1),
            (("NodeResourcesFit", "PreFilter", "other"), 1),
            (("NodeResourcesFit", "Filter", "default-scheduler"), 1),
        ],
    ),
    ("many", ("queue", "event"), [((f"q{i % 4}", "PodAdd"), 1) for i in range(1000)]),
]


@pytest.mark.parametrize(
    ("labelnames", "increments"),
    [case[1:] for case in COUNTER_CASES],
    ids=[case[0] for case in COUNTER_CASES],
)
def test_counter_exposition_matches_prometheus_client(
    labelnames: tuple[str, ...], increments: Observations
) -> None:
    fast, reference = counter_expositions(labelnames, increments)
    assert fast.splitlines() == reference.splitlines()


@given(
    st.lists(
        st.tuples(
            st.sampled_from([("a",), ("b",), ("c",)]),
            st.one_of(
                st.sampled_from(PLUGIN_BUCKETS),  # exactly on a bound
                st.floats(allow_nan=True, allow_infinity=True),
                st.floats(min_value=0, max_value=0.05),
            ),
        ),
        max_size=40,
    )
)
@settings(max_examples=200, deadline=None)
def test_histogram_matches_prometheus_client_for_any_values(observations: Observations) -> None:
    fast, reference = histogram_expositions(("plugin",), PLUGIN_BUCKETS, observations)
    assert fast == reference


@pytest.fixture
def created_series_disabled() -> Iterator[None]:
    disable_created_metrics()
    try:
        yield
    finally:
        enable_created_metrics()


@pytest.mark.usefixtures("created_series_disabled")
def test_created_series_follow_prometheus_clients_switch() -> None:
    observations = [(("x",), 0.001)]
    fast, reference = histogram_expositions(("l",), POINT_BUCKETS, observations)
    assert fast == reference
    assert "_created" not in fast
    fast, reference = counter_expositions(("l",), [(("x",), 1)])
    assert fast == reference
    assert "_created" not in fast


def test_created_is_when_the_child_appeared() -> None:
    registry = CollectorRegistry()
    histogram = FastHistogram("h", "Help.", ("l",), buckets=(1.0,), registry=registry)
    counter = FastCounter("c_total", "Help.", ("l",), registry=registry)
    before = time.time()
    histogram.labels("x").observe(0.5)
    counter.labels("x").inc()
    after = time.time()
    for name in ("h_created", "c_created"):
        created = registry.get_sample_value(name, {"l": "x"})
        assert created is not None
        assert before <= created <= after


@pytest.mark.parametrize(
    ("value", "bucket"),
    [(0.0, "0.1"), (0.1, "0.1"), (math.nextafter(0.1, 1), "1.0"), (1.0, "1.0"), (1.5, "+Inf")],
)
def test_a_value_on_a_bound_counts_in_that_bucket(value: float, bucket: str) -> None:
    """Buckets are ``le``: a value first counts in the bucket of the first bound >= it."""
    registry = CollectorRegistry()
    FastHistogram("h", "Help.", buckets=(0.1, 1.0), registry=registry).labels().observe(value)
    counts = {
        le: registry.get_sample_value("h_bucket", {"le": le}) for le in ("0.1", "1.0", "+Inf")
    }
    assert next(le for le, count in counts.items() if count == 1) == bucket


def test_negative_counter_increment_is_refused_like_prometheus_client() -> None:
    counter = FastCounter("c_total", "Help.")
    with pytest.raises(ValueError):
        counter.inc(-1)
    with pytest.raises(ValueError):
        Counter("c_total", "Help.", registry=None).inc(-1)
    assert counter.labels().value == 0


@pytest.mark.parametrize(
    ("key", "error"),
    [
        ((), ValueError),
        (("a", "b"), ValueError),
        ("a", ValueError),  # not a tuple
        ((1,), TypeError),  # prometheus_client would str() it; a second "1" series could follow
    ],
)
def test_bad_label_values_are_refused(key: object, error: type[Exception]) -> None:
    histogram = FastHistogram("h", "Help.", ("l",), buckets=(1.0,))
    counter = FastCounter("c", "Help.", ("l",))
    for children in (histogram.children, counter.children):
        with pytest.raises(error):
            children[key]  # type: ignore[index]
        assert not children


def test_labels_and_children_are_the_same_series() -> None:
    counter = FastCounter("c", "Help.", ("a", "b"))
    counter.children[("x", "y")].inc()
    counter.labels("x", "y").inc()
    assert list(counter.children) == [("x", "y")]
    assert counter.labels("x", "y").value == 2


@pytest.mark.parametrize(
    ("labelnames", "buckets"),
    [(("le",), (1.0,)), (("__x",), (1.0,)), (("a", "a"), (1.0,)), ((), (2.0, 1.0)), ((), ())],
)
def test_invalid_histograms_are_refused(labelnames: tuple[str, ...], buckets: tuple[float]) -> None:
    with pytest.raises(ValueError):
        FastHistogram("h", "Help.", labelnames, buckets=buckets)


@pytest.mark.parametrize(
    "make",
    [
        lambda r: FastCounter("x_total", "Help.", registry=r),
        lambda r: FastHistogram("x", "Help.", buckets=(1.0,), registry=r),
    ],
)
def test_clashing_names_are_refused_by_the_registry(
    make: Callable[[CollectorRegistry], object],
) -> None:
    registry = CollectorRegistry()
    Counter("x", "Help.", registry=registry)
    with pytest.raises(DuplicateTimeseries):
        make(registry)
