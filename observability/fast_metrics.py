"""Lock-free counter, gauge and histogram families for the scheduler's per-pod hot path.

prometheus_client's ``Counter.inc`` and ``Histogram.observe`` take a mutex per value object and
walk the bucket list in Python (one locked increment for the sum, one for the bucket): roughly
0.3 µs per ``inc`` and 0.7-1 µs per ``observe``. The families here keep plain Python numbers
instead: a counter child is one float, a histogram child a list of per-bucket counts plus a float
sum, and ``observe`` is one C-level ``bisect_left``. Both implement prometheus_client's
custom-collector protocol (``collect()`` / ``describe()``) and register into a
:class:`~prometheus_client.CollectorRegistry`, so ``generate_latest`` renders them.

The exposition is the same as prometheus_client's ``Counter`` / ``Histogram`` fed the same values
(tests/observability/test_fast_metrics.py compares the text): names, HELP, TYPE, label names and
values, ``le`` strings, cumulative bucket counts, ``_count``, ``_sum``, ``_total``, and the
``*_created`` series, which follow prometheus_client's own switch
(``PROMETHEUS_DISABLE_CREATED_SERIES`` / ``disable_created_metrics()``). Bucket semantics are
Prometheus' ``le``: a value equal to an upper bound counts in that bucket, which is what
``bisect_left`` over the sorted upper bounds gives. As in prometheus_client, a NaN observation is
added to ``_sum`` but to no bucket (so not to ``_count``), and a counter refuses a negative
increment.

Threading: children are mutated without locks, so every ``inc`` / ``observe`` / ``labels`` must
come from one thread, the asyncio event loop's. ``collect()`` may run on another thread: it copies
the children and their counts before reading them, so it never fails, although a histogram's sum
can be an observation ahead of or behind its buckets (prometheus_client gives no atomic snapshot
either). Label values must be ``str`` (prometheus_client would ``str()`` them; these do not).
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from typing import Final, TypeVar

from prometheus_client import metrics as _prometheus_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import CollectorRegistry
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

_INF: Final = math.inf

_Child = TypeVar("_Child")


def _created_series_enabled() -> bool:
    """prometheus_client's ``*_created`` switch, read on every collect as its own metrics do."""
    return bool(getattr(_prometheus_metrics, "_use_created", True))


def _check_labelnames(labelnames: Sequence[str], reserved: tuple[str, ...]) -> tuple[str, ...]:
    names = tuple(labelnames)
    for name in names:
        if name in reserved or name.startswith("__"):
            raise ValueError(f"reserved label name: {name!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate label names: {names!r}")
    return names


class Children(dict[tuple[str, ...], _Child]):
    """A family's children by label values (in label-name order); a missing key creates its child.

    The hot path indexes this directly, ``family.children[(a, b)].inc()``: a hit is one C-level
    dict lookup, with no Python frame in between as ``labels(a, b)`` needs.
    """

    __slots__ = ("_factory", "_labelnames", "_name")

    def __init__(
        self, name: str, labelnames: tuple[str, ...], factory: Callable[[], _Child]
    ) -> None:
        super().__init__()
        self._name = name
        self._labelnames = labelnames
        self._factory = factory

    def __missing__(self, values: tuple[str, ...]) -> _Child:
        if type(values) is not tuple or len(values) != len(self._labelnames):
            raise ValueError(
                f"{self._name}: expected values for {self._labelnames}, got {values!r}"
            )
        if not all(type(value) is str for value in values):
            raise TypeError(f"{self._name}: label values must be str, got {values!r}")
        child = self[values] = self._factory()
        return child


class CounterChild:
    """One counter series: a float."""

    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        self.value += amount


class GaugeChild:
    """One gauge series: a float that goes up and down."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount

    def dec(self, amount: float = 1.0) -> None:
        self.value -= amount

    def set(self, value: float) -> None:
        self.value = float(value)


class HistogramChild:
    """One histogram series: non-cumulative counts per bucket and the sum of observations."""

    __slots__ = ("_counts", "_upper_bounds", "created", "sum")

    def __init__(self, upper_bounds: list[float]) -> None:
        self._upper_bounds = upper_bounds  # sorted, last is +Inf; shared with the family
        self._counts = [0] * len(upper_bounds)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, value: float) -> None:
        self.sum += value
        if value == value:  # NaN falls in no bucket, as in prometheus_client
            # The first bound >= value: Prometheus buckets are "le" (value <= bound).
            self._counts[bisect_left(self._upper_bounds, value)] += 1

    def counts(self) -> list[int]:
        """A copy of the non-cumulative per-bucket counts."""
        return self._counts[:]


class FastCounter:
    """A counter family (``*_total``); see the module docstring for semantics and threading."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self._describe = CounterMetricFamily(name, documentation, labels=labelnames)
        self.name = self._describe.name  # without "_total", like prometheus_client
        self.documentation = documentation
        self.labelnames = _check_labelnames(labelnames, ())
        self.children = Children(self.name, self.labelnames, CounterChild)
        if not self.labelnames:  # the only series, exposed from the start like prometheus_client's
            self.labels()
        if registry is not None:
            registry.register(self)

    def labels(self, *values: str) -> CounterChild:
        """The child for these label values (in ``labelnames`` order), created on first use."""
        return self.children[values]

    def inc(self, amount: float = 1.0) -> None:
        """Increment an unlabelled counter (labelled ones go through :meth:`labels`)."""
        self.labels().inc(amount)

    def describe(self) -> Iterable[CounterMetricFamily]:
        return [self._describe]

    def collect(self) -> Iterable[CounterMetricFamily]:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        created = _created_series_enabled()
        for values, child in list(self.children.items()):
            family.add_metric(values, child.value, child.created if created else None)
        return [family]


class FastGauge:
    """A gauge family whose ``inc`` / ``dec`` are plain float arithmetic (for per-pod queue
    bookkeeping); see the module docstring for threading. No ``*_created`` series, as
    prometheus_client's ``Gauge`` has none."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self._describe = GaugeMetricFamily(name, documentation, labels=labelnames)
        self.name = name
        self.documentation = documentation
        self.labelnames = _check_labelnames(labelnames, ())
        self.children = Children(self.name, self.labelnames, GaugeChild)
        if not self.labelnames:  # the only series, exposed from the start like prometheus_client's
            self.labels()
        if registry is not None:
            registry.register(self)

    def labels(self, *values: str) -> GaugeChild:
        """The child for these label values (in ``labelnames`` order), created on first use."""
        return self.children[values]

    def describe(self) -> Iterable[GaugeMetricFamily]:
        return [self._describe]

    def collect(self) -> Iterable[GaugeMetricFamily]:
        family = GaugeMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, child in list(self.children.items()):
            family.add_metric(values, child.value)
        return [family]


class FastHistogram:
    """A histogram family; see the module docstring for semantics and threading.

    ``buckets`` are the finite upper bounds in ascending order, as for prometheus_client's
    ``Histogram`` (a trailing +Inf is added when missing).
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        buckets: Sequence[float],
        registry: CollectorRegistry | None = None,
    ) -> None:
        self._describe = HistogramMetricFamily(name, documentation, labels=labelnames)
        self.name = name
        self.documentation = documentation
        self.labelnames = _check_labelnames(labelnames, ("le",))
        upper = [float(b) for b in buckets]
        if upper != sorted(upper):
            raise ValueError("Buckets not in sorted order")
        if upper and upper[-1] != _INF:
            upper.append(_INF)
        if len(upper) < 2:
            raise ValueError("Must have at least two buckets")
        self.upper_bounds: tuple[float, ...] = tuple(upper)
        self._upper_list = upper
        # The ``le`` strings prometheus_client's Histogram renders (e.g. "1e-05", "+Inf").
        self._le: tuple[str, ...] = tuple(
            floatToGoString(b)  # type: ignore[no-untyped-call]
            for b in upper
        )
        self.children = Children(self.name, self.labelnames, self._new_child)
        if not self.labelnames:  # the only series, exposed from the start like prometheus_client's
            self.labels()
        if registry is not None:
            registry.register(self)

    def _new_child(self) -> HistogramChild:
        return HistogramChild(self._upper_list)

    def labels(self, *values: str) -> HistogramChild:
        """The child for these label values (in ``labelnames`` order), created on first use."""
        return self.children[values]

    def observe(self, value: float) -> None:
        """Observe into an unlabelled histogram (labelled ones go through :meth:`labels`)."""
        self.labels().observe(value)

    def describe(self) -> Iterable[HistogramMetricFamily]:
        return [self._describe]

    def collect(self) -> Iterable[HistogramMetricFamily]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        created = _created_series_enabled()
        created_name = self.name + "_created"
        le = self._le
        for values, child in list(self.children.items()):
            total = child.sum
            cumulative = 0.0
            buckets: list[tuple[str, float]] = []
            for bound, count in zip(le, child.counts(), strict=True):
                cumulative += count
                buckets.append((bound, cumulative))
            family.add_metric(values, buckets, total)
            if created:
                labels = dict(zip(self.labelnames, values, strict=True))
                family.samples.append(Sample(created_name, labels, child.created))
        return [family]
