"""Throughput and latency statistics, computed as upstream scheduler_perf computes them.

Upstream reference: test/integration/scheduler_perf/util.go (throughputCollector.run/collect):
one throughput sample per second of wall time, the first sample skipped, intervals in which no pod
was scheduled merged into the next one, percentiles taken by nearest rank on the sorted samples.

Ours (issue 22): the measured pods split into segments (10,000 pods each in long runs) with the
scheduler's CPU per pod, throughput and RSS in each, and a `flat` verdict: the cost per pod must
not grow as the cluster fills up. Only the pods bound while measured pods were still being
created are judged: the pods bound after the last create (the backlog the scheduler drains once
the load stops) are a segment of their own, reported but not compared, since a drain runs at a
different rate and its CPU per pod includes no create traffic.
"""

from __future__ import annotations

import itertools
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


#: Why a run's throughput has no percentiles: it bound its pods in under two sampling ticks.
TOO_SHORT_FOR_SAMPLES = "overall rate: the run was too short for per-second samples"


@dataclass(frozen=True, slots=True)
class ThroughputSummary:
    """Pods per second over the per-second samples (p50/p90/p99 None: a run too short for
    them, whose average is the overall rate, pods bound over seconds measured)."""

    average: float
    p50: float | None
    p90: float | None
    p99: float | None

    @classmethod
    def overall(cls, pods: int, seconds: float) -> ThroughputSummary:
        return cls(average=pods / seconds, p50=None, p90=None, p99=None)

    @property
    def sampled(self) -> bool:
        return self.p50 is not None

    def to_json(self) -> dict[str, float | str | None]:
        document: dict[str, float | str | None] = {
            "average": self.average,
            "p50": self.p50,
            "p90": self.p90,
            "p99": self.p99,
        }
        if not self.sampled:
            document["source"] = TOO_SHORT_FOR_SAMPLES
        return document


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


QUANTILE_POINTS = 101  # every percent, 0 to 100: a latency CDF in the JSON (bench/plot.py)


def quantiles(sorted_values: Sequence[float], points: int = QUANTILE_POINTS) -> list[float]:
    """The values at 0, 100/(points-1), ..., 100 percent by nearest rank (the 0th: the least);
    empty for no values."""
    if not sorted_values or points < 2:
        return []
    return [nearest_rank(sorted_values, i * 100 / (points - 1)) for i in range(points)]


class ThroughputSampler:
    """Turns (time, pods scheduled so far) observations, one per tick, into pods/s samples.

    Mirrors upstream's collector: nothing is sampled until the first pod is scheduled; that first
    tick only sets the baseline (it is an outlier, creation and sampling start independently); a
    tick that saw no new pod is skipped and the next sample is repeated once per skipped interval,
    so percentiles stay weighted by time.
    """

    def __init__(self) -> None:
        self._samples: list[float] = []
        # pods scheduled when each sample was taken (which segment it belongs to)
        self._scheduled_at: list[int] = []
        self._started = False
        self._last_count = 0
        self._last_time = 0.0
        self._skipped = 0

    @property
    def samples(self) -> list[float]:
        return list(self._samples)

    @property
    def scheduled_at(self) -> list[int]:
        """For each sample, how many pods were scheduled when it was taken."""
        return list(self._scheduled_at)

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
        self._scheduled_at.extend([scheduled] * (self._skipped + 1))
        self._last_count, self._last_time, self._skipped = scheduled, now, 0


# ---- Flatness: the cost per pod as the cluster fills up (issue 22) ------------------------------

SEGMENT_PODS = 10_000  # the segment of long runs: CPU per pod at 10k vs 100k pods
FLAT_TOLERANCE = 0.20  # the "within 20 %"


def segment_size(measured_pods: int) -> int:
    """10,000 pods per segment when that makes two or more; else a fifth of the measured pods."""
    if measured_pods >= 2 * SEGMENT_PODS:
        return SEGMENT_PODS
    return max(1, math.ceil(measured_pods / 5))


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The scheduler as seen at one tick of the measurement."""

    seconds: float  # since the first measured pod was created
    scheduled: int  # measured pods seen bound
    cpu_seconds: float | None  # the scheduler's CPU time so far (None: not readable)
    rss_bytes: int | None = None  # its resident set now


@dataclass(frozen=True, slots=True)
class Segment:
    """Measured pods (first_pod, last_pod] and what scheduling them cost."""

    first_pod: int
    last_pod: int
    seconds: float
    cpu_per_pod_ms: float | None
    throughput: ThroughputSummary | None  # of the per-second samples taken in the segment
    rss_bytes: int | None  # the scheduler's resident set at the segment's end
    drain: bool = False  # bound after the last measured pod was created (not judged)

    def to_json(self) -> dict[str, object]:
        return {
            "pods": [self.first_pod, self.last_pod],
            "drain": self.drain,
            "seconds": round(self.seconds, 3),
            "cpu_per_pod_ms": None
            if self.cpu_per_pod_ms is None
            else round(self.cpu_per_pod_ms, 4),
            "pods_per_second": self.throughput.to_json() if self.throughput else None,
            "rss_bytes": self.rss_bytes,
        }


@dataclass(frozen=True, slots=True)
class Flatness:
    """The segments and the verdict: flat when the last segment's CPU per pod is within 20 % of
    the first's and the p50 of the per-second samples within 20 % of their average, both over
    the pods bound while measured pods were being created (the drain segment, if any, is
    left out). None when it cannot be told (fewer than two such segments, no CPU readings, no
    samples)."""

    segments: tuple[Segment, ...]  # the judged ones, then the drain segment if there is one
    cpu_ratio: float | None  # last judged segment's CPU per pod / the first's
    p50_ratio: float | None  # p50 of the judged per-second samples / their average
    flat: bool | None
    bound_while_creating: int | None = None  # None: not known, every pod is judged

    @property
    def undecided_reason(self) -> str:
        """Why `flat` is None ("" when it is not): what the verdict lacked."""
        if self.flat is not None:
            return ""
        if len(self.judged) < 2:
            return "fewer than two segments of pods bound while measured pods were created"
        if self.cpu_ratio is None:
            return "no CPU readings of the scheduler"
        return "no per-second throughput samples (measuring took under a second)"

    @property
    def judged(self) -> tuple[Segment, ...]:
        return tuple(segment for segment in self.segments if not segment.drain)

    @property
    def drain(self) -> Segment | None:
        return next((segment for segment in self.segments if segment.drain), None)

    def to_json(self) -> dict[str, object]:
        return {
            "bound_while_creating": self.bound_while_creating,
            "segments": [segment.to_json() for segment in self.segments],
            "cpu_per_pod_last_over_first": _round(self.cpu_ratio),
            "throughput_p50_over_average": _round(self.p50_ratio),
            "tolerance": FLAT_TOLERANCE,
            "flat": self.flat,
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _at(checkpoints: Sequence[Checkpoint], pods: int) -> tuple[float, float | None, int | None]:
    """(seconds, CPU seconds, RSS) when `pods` measured pods were bound: interpolated linearly
    between the ticks around that count; RSS is the first reading at or after it."""
    for before, after in itertools.pairwise(checkpoints):
        if after.scheduled < pods:
            continue
        span = after.scheduled - before.scheduled
        fraction = 1.0 if span <= 0 else (pods - before.scheduled) / span
        seconds = before.seconds + (after.seconds - before.seconds) * fraction
        cpu = None
        if before.cpu_seconds is not None and after.cpu_seconds is not None:
            cpu = before.cpu_seconds + (after.cpu_seconds - before.cpu_seconds) * fraction
        return seconds, cpu, after.rss_bytes
    last = checkpoints[-1]
    return last.seconds, last.cpu_seconds, last.rss_bytes


def segment_bounds(pods: int, segment_pods: int) -> list[int]:
    """0, segment_pods, 2 * segment_pods, ..., pods; a last piece shorter than half a segment
    joins the one before it (a few pods make a noisy CPU per pod)."""
    if pods <= 0:
        return [0]
    bounds = [*range(0, pods, segment_pods), pods]
    if len(bounds) > 2 and pods - bounds[-2] < segment_pods / 2:
        del bounds[-2]
    return bounds


def flatness(
    checkpoints: Sequence[Checkpoint],
    samples: Sequence[float],
    scheduled_at: Sequence[int],
    segment_pods: int,
    bound_while_creating: int | None = None,
) -> Flatness:
    """Split the measured pods into segments of `segment_pods` and judge whether the cost per
    pod stayed flat. `checkpoints` start with the one taken when measuring began (0 pods) and
    are in time order; `samples` are the per-second throughput samples and `scheduled_at` the
    pods bound when each was taken. `bound_while_creating`: the pods bound when the last
    measured pod was created; those bound later are one drain segment, not judged (None: all
    are judged)."""
    ordered = sorted(checkpoints, key=lambda c: (c.seconds, c.scheduled))
    total = ordered[-1].scheduled if ordered else 0
    creating = total
    if bound_while_creating is not None:
        creating = min(max(bound_while_creating, 0), total)
    paired = list(zip(samples, scheduled_at, strict=True))

    def segment(low: int, high: int, drain: bool) -> Segment:
        start_s, start_cpu, _ = _at(ordered, low) if low else _first(ordered)
        end_s, end_cpu, rss = _at(ordered, high)
        cpu = None
        if start_cpu is not None and end_cpu is not None:
            cpu = (end_cpu - start_cpu) / (high - low) * 1000
        in_segment = [sample for sample, at in paired if low < at <= high]
        return Segment(
            low, high, end_s - start_s, cpu, summarize_throughput(in_segment), rss, drain
        )

    judged = [
        segment(low, high, False)
        for low, high in itertools.pairwise(segment_bounds(creating, segment_pods))
    ]
    segments = list(judged)
    if creating < total:
        segments.append(segment(creating, total, True))
    cpu_ratio = None
    if len(judged) >= 2:
        first, last = judged[0].cpu_per_pod_ms, judged[-1].cpu_per_pod_ms
        if first and last is not None:
            cpu_ratio = last / first
    overall = summarize_throughput([sample for sample, at in paired if at <= creating])
    p50_ratio = None
    if overall and overall.p50 is not None and overall.average > 0:
        p50_ratio = overall.p50 / overall.average
    flat = None
    if cpu_ratio is not None and p50_ratio is not None:
        flat = abs(cpu_ratio - 1) <= FLAT_TOLERANCE and abs(p50_ratio - 1) <= FLAT_TOLERANCE
    return Flatness(tuple(segments), cpu_ratio, p50_ratio, flat, bound_while_creating)


def _first(checkpoints: Sequence[Checkpoint]) -> tuple[float, float | None, int | None]:
    first = checkpoints[0]
    return first.seconds, first.cpu_seconds, first.rss_bytes


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
