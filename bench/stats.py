"""Throughput and latency statistics, computed as upstream scheduler_perf computes them.

Upstream reference: test/integration/scheduler_perf/util.go (throughputCollector.run/collect):
one throughput sample per second of wall time, the first sample skipped, intervals in which no pod
was scheduled merged into the next one, percentiles taken by nearest rank on the sorted samples.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

PERCENTILES = (50, 90, 99)


def nearest_rank(sorted_values: Sequence[float], percent: float) -> float:
    """The value at rank ceil(n * p / 100), as upstream's `values[ceil(n*p/100)-1]`."""
    if not sorted_values:
        raise ValueError("no values")
    rank = math.ceil(len(sorted_values) * percent / 100)
    return sorted_values[max(rank, 1) - 1]


@dataclass(frozen=True, slots=True)
class ThroughputSummary:
    """Pods per second over the per-second samples."""

    average: float
    p50: float
    p90: float
    p99: float

    def to_json(self) -> dict[str, float]:
        return {"average": self.average, "p50": self.p50, "p90": self.p90, "p99": self.p99}


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Seconds from pod creation to the pod being seen bound."""

    p50: float
    p90: float
    p99: float

    def to_json(self) -> dict[str, float]:
        return {"p50": self.p50, "p90": self.p90, "p99": self.p99}


def summarize_throughput(samples: Iterable[float]) -> ThroughputSummary | None:
    ordered = sorted(samples)
    if not ordered:
        return None
    return ThroughputSummary(
        average=sum(ordered) / len(ordered),
        p50=nearest_rank(ordered, 50),
        p90=nearest_rank(ordered, 90),
        p99=nearest_rank(ordered, 99),
    )


def summarize_latencies(latencies: Iterable[float]) -> LatencySummary | None:
    ordered = sorted(latencies)
    if not ordered:
        return None
    return LatencySummary(*(nearest_rank(ordered, p) for p in PERCENTILES))


class ThroughputSampler:
    """Turns (time, pods scheduled so far) observations, one per tick, into pods/s samples.

    Mirrors upstream's collector: nothing is sampled until the first pod is scheduled; that first
    tick only sets the baseline (it is an outlier, creation and sampling start independently); a
    tick that saw no new pod is skipped and the next sample is repeated once per skipped interval,
    so percentiles stay weighted by time.
    """

    def __init__(self) -> None:
        self._samples: list[float] = []
        self._started = False
        self._last_count = 0
        self._last_time = 0.0
        self._skipped = 0

    @property
    def samples(self) -> list[float]:
        return list(self._samples)

    def observe(self, now: float, scheduled: int) -> None:
        if scheduled == 0:
            return
        if not self._started:
            self._started = True
            self._last_count, self._last_time = scheduled, now
            return
        new = scheduled - self._last_count
        if new == 0:
            self._skipped += 1
            return
        duration = now - self._last_time
        if duration <= 0:
            return
        throughput = new / duration
        self._samples.extend([throughput] * (self._skipped + 1))
        self._last_count, self._last_time, self._skipped = scheduled, now, 0


# ---- Prometheus histograms (the scheduler's /metrics) ----------------------------------------

_SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)"
)
_LE = re.compile(r'(?:^|,)\s*le="(?P<le>[^"]*)"')

Buckets = dict[float, float]  # upper bound -> cumulative count, summed over other labels


def parse_histogram(text: str, name: str) -> Buckets:
    """Cumulative bucket counts of histogram `name` in Prometheus text format, all series summed."""
    buckets: Buckets = {}
    wanted = f"{name}_bucket"
    for line in text.splitlines():
        if not line.startswith(wanted):
            continue
        match = _SAMPLE.match(line)
        if match is None or match["name"] != wanted:
            continue
        le = _LE.search(match["labels"] or "")
        if le is None:
            continue
        bound = math.inf if le["le"] in ("+Inf", "Inf") else float(le["le"])
        buckets[bound] = buckets.get(bound, 0.0) + float(match["value"])
    return buckets


def subtract_buckets(after: Mapping[float, float], before: Mapping[float, float]) -> Buckets:
    """Observations made between two scrapes."""
    return {bound: count - before.get(bound, 0.0) for bound, count in after.items()}


def histogram_quantile(quantile: float, buckets: Mapping[float, float]) -> float | None:
    """Linear interpolation within the bucket holding the quantile, as PromQL's function does.

    Returns None without observations; a quantile in the +Inf bucket answers the highest finite
    bound (what PromQL does too).
    """
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return None
    total = buckets[bounds[-1]]
    rank = quantile * total
    lower_bound, lower_count = 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if math.isinf(bound):
                return lower_bound
            if count == lower_count:
                return bound
            fraction = (rank - lower_count) / (count - lower_count)
            return lower_bound + (bound - lower_bound) * fraction
        lower_bound, lower_count = bound, count
    return lower_bound


def histogram_summary(buckets: Mapping[float, float]) -> LatencySummary | None:
    values = [histogram_quantile(p / 100, buckets) for p in PERCENTILES]
    if any(v is None for v in values):
        return None
    p50, p90, p99 = (float(v) for v in values if v is not None)
    return LatencySummary(p50, p90, p99)
